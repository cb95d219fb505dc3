#!/usr/bin/python3
"""Fault injection end to end: each fault is detected, reported with the
watchdog's view of every worker, recorded in the trace, and exits 3; a stall
shorter than the timeout completes, and the trace shows the delay spreading.

    test_faults.py RINGSIM EXAMPLES_DIR [Faults.test_name ...]
"""
import json
import os
import sqlite3
import struct
import subprocess
import tempfile
import time
import unittest

import helpers

RINGSIM = EXAMPLES = None


def mlp_with_timeout(*args):
    """ringsim on examples/mlp.json, untraced, with a 0.5 s watchdog."""
    return subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "mlp.json"),
                           "--no-trace", "--timeout", "0.5", *args],
                          capture_output=True, text=True, timeout=120)


class Faults(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "t.db")
        self.model = os.path.join(EXAMPLES, "model.json")

    def tearDown(self):
        self.tmp.cleanup()

    def run_ringsim(self, *args, timeout="0.5"):
        """A short timeout makes a fault quick to detect; a run that must
        succeed gets a long one, so a loaded machine (a sanitizer build, tests
        in parallel) cannot turn a slow hand-off into a failure."""
        p = subprocess.run([RINGSIM, "-p", self.model, "-w", "4", "--trace", self.db,
                            "--timeout", timeout, *args], capture_output=True, text=True,
                           timeout=120)
        return p.returncode, p.stdout, p.stderr

    def query(self, sql, *params):
        con = sqlite3.connect(self.db)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def assert_failed_run(self, spec, message, culprit_state, timeout="0.5"):
        rc, out, err = self.run_ringsim("--inject", spec, timeout=timeout)
        self.assertEqual(rc, 3, err)
        lines = err.splitlines()
        self.assertTrue(lines[0].startswith("ringsim: "), err)
        self.assertIn(message, lines[0])
        self.assertEqual(lines[1], "ringsim: watchdog: where each worker stopped:")
        self.assertEqual(len(lines), 2 + 4, err)
        self.assertIn(culprit_state, err)
        self.assertIn("FAILED", out)
        (status, error), = self.query("SELECT status, error FROM run")
        self.assertEqual(status, "failed")
        self.assertEqual(error, lines[0][len("ringsim: "):])
        states = dict(self.query("SELECT worker, state FROM worker"))
        self.assertEqual(len(states), 4)
        self.assertIn(culprit_state, states.values())
        # every transfer up to the fault is kept, numbered without gaps
        # except where the fault itself made one
        return states

    # fault-1: a crashed worker makes its successor time out.
    def test_crash(self):
        states = self.assert_failed_run("crash:worker=2,step=3", "timed out after 0.5 s", "crashed")
        self.assertEqual(states[2], "crashed")
        # Which neighbours notice depends on the schedule (usually the
        # successor, 3, alone): at least one times out, and the abort stops
        # the others unless their own deadline passed at the same moment.
        others = [state for w, state in states.items() if w != 2]
        self.assertIn("timed_out", others)
        self.assertTrue(set(others) <= {"timed_out", "aborted"}, states)
        rows, = self.query("SELECT count(*) FROM transfer")
        sent, = self.query("SELECT sum(transfers_sent) FROM worker")
        self.assertEqual(rows, sent)
        self.assertEqual(self.query("SELECT count(*) FROM transfer WHERE src = 2 AND "
                                    "phase = 'all_gather'"), [(0,)])

    # fault-2: one flipped bit is caught by the checksum, not summed.
    def test_corrupt(self):
        states = self.assert_failed_run("corrupt:worker=0,step=2",
                                        "received a damaged segment of chunk 2 from worker 0 in "
                                        "reduce_scatter step 2 (checksum mismatch)",
                                        "damaged_message", timeout="30")
        self.assertEqual(states[1], "damaged_message")
        (n,), = self.query("SELECT count(*) FROM transfer WHERE checksum IS NULL")
        self.assertEqual(n, 0)
        # the damaged segment is in the trace, never received
        self.assertEqual(self.query("SELECT count(*) FROM transfer WHERE src = 0 AND step = 2 "
                                    "AND phase = 'reduce_scatter' AND segment = 0 AND "
                                    "recv_end_ns IS NULL"), [(1,)])

    # fault-3: a lost segment is caught by the sequence numbers.
    def test_drop(self):
        states = self.assert_failed_run("drop:worker=1,step=4", "a message was lost", "bad_message",
                                        timeout="30")
        self.assertEqual(states[2], "bad_message")

    # fault-4: a segment delivered twice is caught by the sequence numbers;
    # the trace holds both copies.
    def test_dup(self):
        self.assert_failed_run("dup:worker=3,step=1", "a message was delivered twice", "bad_message",
                               timeout="30")
        dups = self.query("SELECT src, seq, count(*) FROM transfer GROUP BY src, seq HAVING count(*) > 1")
        self.assertEqual(len(dups), 1)
        self.assertEqual(dups[0][0], 3)
        # docs/trace-schema.md: the copy is a row of its own with the same
        # (src, dst, seq), never received, so that key is not UNIQUE here
        rows = self.query("SELECT recv_end_ns IS NULL FROM transfer WHERE src = ? AND seq = ? "
                          "ORDER BY rowid", dups[0][0], dups[0][1])
        self.assertEqual(rows, [(0,), (1,)])

    # fault-5: a stall longer than the timeout fails the run, naming the
    # stalled worker as the culprit and what it was doing (sleeping, not
    # sending); the run ends at the timeout, not when the stall would.
    def test_long_stall_times_out(self):
        began = time.monotonic()
        states = self.assert_failed_run("stall:worker=1,step=2,ms=600000", "timed out after 0.5 s",
                                        "stalled")
        self.assertLess(time.monotonic() - began, 60, "the stall held the run")
        self.assertEqual(states[1], "stalled")
        rc, out, err = self.run_ringsim("--inject", "stall:worker=1,step=2,ms=600000")
        self.assertTrue(err.startswith("ringsim: worker 1 stalled (injected, 600000 ms) at the start "
                                       "of reduce_scatter step 2; worker "), err)
        line1, = [l for l in err.splitlines() if l.startswith("  worker 1 ")]
        self.assertIn("stalled", line1)
        self.assertIn("sleeping in an injected stall of 600000 ms", line1)
        self.assertNotIn("waiting to send", line1)

    # fault-13: faults in the other algorithms are caught as in the ring:
    # a crash in recursive doubling's exchange is named by the watchdog; a
    # bit flip in Rabenseifner's halving, or in gloo's ring, by the checksum; a message lost on
    # the way to linear's root, with no later message on that link to show
    # it, is named as lost, not called a deadlock; and a step the algorithm
    # does not have is refused, naming its steps.
    def test_other_algorithms(self):
        def run(*args, model=self.model):
            return subprocess.run([RINGSIM, "-p", model, "--no-trace", "--timeout", "0.5",
                                   *args], capture_output=True, text=True, timeout=120)
        p = run("-w", "5", "--algo", "rd", "--inject", "crash:worker=1,step=1")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertTrue(p.stderr.startswith(
            "ringsim: worker 1 crashed (injected) at the start of exchange step 0; worker "),
            p.stderr)
        p = run("-w", "5", "--algo", "rhd", "--inject", "corrupt:worker=2,step=3")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertRegex(p.stderr, r"^ringsim: worker \d received a damaged segment of chunk 0 "
                                   r"from worker 2 in reduce_scatter step 1 \(checksum mismatch\)")
        # gloo's ring runs the other way: worker 2 sends chunk 2+1+1 to worker 1
        p = run("-w", "5", "--algo", "gloo-ring", "--inject", "corrupt:worker=2,step=1")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertTrue(p.stderr.startswith(
            "ringsim: worker 1 received a damaged segment of chunk 4 from worker 2 in "
            "reduce_scatter step 1 (checksum mismatch)"), p.stderr)
        # (a small model: each worker's data is one message)
        p = run("-w", "5", "--algo", "linear", "--inject", "drop:worker=3,step=1",
                model=os.path.join(EXAMPLES, "mlp.json"))
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertTrue(p.stderr.startswith(
            "ringsim: a message from worker 3 to worker 0 was lost on the wire (worker 3 sent 1, "
            "worker 0 received 0) and no later one came to show it; worker "), p.stderr)
        self.assertNotIn("deadlock", p.stderr)
        p = run("-w", "5", "--algo", "rd", "--inject", "crash:worker=1,step=4")
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr, "ringsim: inject: step 4 does not exist (rd at W=5 has steps "
                                   "0..3)\n")

    # fault-14: an NVLink switch (nvls, nvlstree: node n's is participant
    # W + n) is named as one, "switch n (participant W+n)", never as a
    # worker beyond the W there are: in the fault it found, in the chain
    # of waits from a crashed GPU, and in the watchdog's lines; on one
    # node and on two.
    def test_switch_named_as_switch(self):
        run = mlp_with_timeout
        p = run("--topo", "dgx-h100", "--algo", "nvls", "--inject", "corrupt:worker=2")
        self.assertEqual(p.returncode, 3, p.stderr)
        lines = p.stderr.splitlines()
        self.assertEqual(lines[0], "ringsim: switch 0 (participant 8) received a damaged "
                                   "segment of chunk 3 from worker 2 in reduce_scatter step 0 "
                                   "(checksum mismatch)")
        self.assertEqual(lines[1], "ringsim: watchdog: where each worker stopped:")
        # (each GPU waits on the switch; what it waits to do, on the clock)
        self.assertRegex(lines[2], r"^  worker 0    aborted         reduce_scatter step 0, "
                                   r"waiting to (receive chunk \d+ from|send chunk \d+ to) "
                                   r"switch 0 \(participant 8\)$")
        self.assertNotIn("worker 8", p.stderr)
        # a crashed GPU stops its switch: whoever's timer fires first (a GPU
        # waiting on the switch, or the switch on worker 2) names it
        p = run("--topo", "dgx-h100", "--algo", "nvls", "--inject", "crash:worker=2,step=0")
        self.assertEqual(p.returncode, 3, p.stderr)
        first = p.stderr.splitlines()[0]
        self.assertTrue(first.startswith("ringsim: worker 2 crashed (injected) at the start of "
                                         "reduce_scatter step 0; "), first)
        self.assertRegex(first, r"; (worker \d noticed: it timed out .* from switch 0 "
                                r"\(participant 8\), which waited on worker 2|switch 0 "
                                r"\(participant 8\) noticed: it timed out .* from worker 2)$")
        self.assertNotIn("worker 8", p.stderr)
        # two nodes: node 1's switch is W + 1 = 17
        p = run("--topo", "dgx-h100,nodes=2", "--algo", "nvlstree", "--inject",
                "corrupt:worker=10")
        self.assertEqual(p.returncode, 3, p.stderr)
        self.assertEqual(p.stderr.splitlines()[0],
                         "ringsim: switch 1 (participant 17) received a damaged segment of "
                         "chunk 3 from worker 10 in reduce_scatter step 0 (checksum mismatch)")
        self.assertRegex(p.stderr, r"\n  worker 8    aborted         reduce_scatter step 0, "
                                   r"waiting to (receive chunk \d+ from|send chunk \d+ to) "
                                   r"switch 1 \(participant 17\)\n")
        self.assertNotRegex(p.stderr, r"worker (16|17)\b")

    # fault-15: the watchdog lists each NVLink switch (a participant a GPU
    # waits on) after the GPUs, named as one, with its own state: the
    # switch that found a damaged segment, and on a hang the switch that
    # waited on the crashed GPU; on one node and on two.
    def test_watchdog_lists_switches(self):
        run = mlp_with_timeout
        p = run("--topo", "dgx-h100", "--algo", "nvls", "--inject", "corrupt:worker=2")
        self.assertEqual(p.returncode, 3, p.stderr)
        lines = p.stderr.splitlines()
        self.assertEqual(lines[1], "ringsim: watchdog: where each worker stopped:")
        self.assertEqual(len(lines), 2 + 8 + 1, p.stderr)
        self.assertTrue(all(l.startswith("  worker ") for l in lines[2:10]), p.stderr)
        self.assertEqual(lines[10], "  switch 0 (participant 8) damaged_message reduce_scatter "
                                    "step 0, while receiving chunk 3 from worker 2")
        # a hang: the switch waited on the crashed GPU (timed out, or
        # aborted by a GPU whose timer fired first)
        p = run("--topo", "dgx-h100", "--algo", "nvls", "--inject", "crash:worker=2,step=0")
        self.assertEqual(p.returncode, 3, p.stderr)
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 2 + 8 + 1, p.stderr)
        self.assertRegex(lines[10], r"^  switch 0 \(participant 8\) (timed_out|aborted) +"
                                    r"reduce_scatter step 0, waiting to receive chunk \d+ "
                                    r"from worker \d$")
        # two nodes: switches 16 and 17, after the 16 GPUs
        p = run("--topo", "dgx-h100,nodes=2", "--algo", "nvlstree", "--inject",
                "corrupt:worker=10")
        self.assertEqual(p.returncode, 3, p.stderr)
        lines = p.stderr.splitlines()
        self.assertEqual(len(lines), 2 + 16 + 2, p.stderr)
        self.assertTrue(lines[18].startswith("  switch 0 (participant 16) "), p.stderr)
        self.assertEqual(lines[19], "  switch 1 (participant 17) damaged_message reduce_scatter "
                                    "step 0, while receiving chunk 3 from worker 10")

    # fault-10: the culprit is named every time, whichever neighbour's
    # timer fires first: the first line names the crashed (or stalled)
    # worker, then who noticed; the worker that noticed timed out.
    def test_culprit_named_every_time(self):
        cases = [("4", "crash:worker=2,step=3",
                  "worker 2 crashed (injected) at the start of all_gather step 0; worker "),
                 ("8", "crash:worker=5,step=1",
                  "worker 5 crashed (injected) at the start of reduce_scatter step 1; worker "),
                 ("4", "stall:worker=1,step=2,ms=5000",
                  "worker 1 stalled (injected, 5000 ms) at the start of reduce_scatter step 2; "
                  "worker ")]
        # a stall as long as the timeout: the run completes, or it fails
        # naming the stall (which may have just ended), never a deadlock
        for attempt in range(8):
            p = subprocess.run([RINGSIM, "-p", self.model, "-w", "2", "--no-trace",
                                "--timeout", "0.3", "--inject", "stall:worker=1,step=1,ms=300"],
                               capture_output=True, text=True, timeout=120)
            self.assertIn(p.returncode, (0, 3), p.stderr)
            if p.returncode == 3:
                self.assertTrue(p.stderr.startswith(
                    "ringsim: worker 1 stalled (injected, 300 ms) at the start of all_gather "
                    "step 0; worker 0 noticed: it timed out after 0.3 s"), p.stderr)
        for workers, spec, culprit in cases:
            # 1 s: long enough that only the fault makes anyone wait that
            # long, even under a sanitizer on a busy machine. The six
            # attempts run at once: each is its own process, and most of
            # its second is a wait, so they cost one second, not six.
            procs = [subprocess.Popen([RINGSIM, "-p", self.model, "-w", workers, "--no-trace",
                                       "--timeout", "1", "--json", "--inject", spec],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                     for _ in range(6)]
            done = []
            try:
                for proc in procs:
                    stdout, stderr = proc.communicate(timeout=120)
                    done.append((proc.returncode, stdout, stderr))
            finally:
                for proc in procs:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
            for attempt, (returncode, stdout, stderr) in enumerate(done):
                self.assertEqual(returncode, 3, stderr)
                first = stderr.splitlines()[0]
                self.assertTrue(first.startswith("ringsim: " + culprit), f"{spec} #{attempt}: {first}")
                noticer = int(first[len("ringsim: " + culprit):].split()[0])
                watchdog = json.loads(stdout)["watchdog"]
                self.assertEqual(watchdog[noticer]["state"], "timed_out", first)
                self.assertIn(f"worker {noticer} noticed: it timed out after 1 s", first)

    # fault-12: a failed run is not reported as if it were checked: the
    # text counts what each worker really sent and prints no bandwidth; the
    # JSON's check fields are null, as the trace's are.
    def test_every_worker_crashed_is_a_failed_run(self):
        """When every worker crashes, nobody is left to time out: the run
        still failed (exit 3, status failed), named for the crashes, with
        the watchdog's table; it is not a completed run whose check failed
        (it was: exit 1, status check_failed, no culprit). Every algorithm,
        a crash in the first step and in a later one."""
        phases = {"ring": "reduce_scatter", "gloo-ring": "reduce_scatter",
                  "rd": "exchange", "rhd": "reduce_scatter",
                  "linear": "reduce", "tree": "reduce"}
        for algo, phase in phases.items():
            for step in (0, 1):
                if os.path.exists(self.db):
                    os.unlink(self.db)
                crashes = [a for w in range(4)
                           for a in ("--inject", f"crash:worker={w},step={step}")]
                with self.subTest(algo=algo, step=step):
                    rc, out, err = self.run_ringsim("--algo", algo, *crashes)
                    self.assertEqual(rc, 3, err)
                    lines = err.splitlines()
                    where = ", ".join(f"worker {w} at the start of {phase} step {step}"
                                      for w in range(4))
                    if algo == "tree" and step == 1:  # the tree's reduce is 1 step at W=4
                        where = where.replace(f"reduce step {step}", "broadcast step 0")
                    self.assertEqual(lines[0], f"ringsim: every worker crashed (injected): "
                                     f"{where}; none was left to time out waiting on another")
                    self.assertEqual(lines[1], "ringsim: watchdog: where each worker stopped:")
                    self.assertEqual(sum("(injected crash)" in l for l in lines[2:]), 4, err)
                    self.assertIn("  check      not checked: the run failed\n", out)
                    (status, error), = self.query("SELECT status, error FROM run")
                    self.assertEqual((status, error), ("failed", lines[0][len("ringsim: "):]))
        rc, out, err = self.run_ringsim("--json", *crashes)
        self.assertEqual(rc, 3, err)
        report = json.loads(out)
        self.assertEqual((report["status"], report["checked"]), ("failed", False))
        self.assertTrue(report["error"].startswith("every worker crashed (injected): "))

    def test_failed_run_not_reported_as_checked(self):
        rc, out, err = self.run_ringsim("--inject", "crash:worker=2,step=3")
        self.assertEqual(rc, 3, err)
        sent = [n for _, n in self.query("SELECT worker, transfers_sent FROM worker ORDER BY worker")]
        self.assertLess(sum(sent), 24)
        self.assertIn(f"  transfers  {sum(sent)} sent of 24 planned (per worker: "
                      f"{', '.join(map(str, sent))})\n", out)
        self.assertNotIn("GB/s", out)
        self.assertIn("  check      not checked: the run failed\n", out)
        os.unlink(self.db)
        rc, out, err = self.run_ringsim("--json", "--order-report", "--inject", "crash:worker=2,step=3")
        self.assertEqual(rc, 3, err)
        report = json.loads(out)
        sent = [n for _, n in self.query("SELECT worker, transfers_sent FROM worker ORDER BY worker")]
        self.assertEqual(report["transfers_sent"], sent)
        self.assertEqual(report["transfers"], sum(sent))
        self.assertEqual(report["transfers_planned"], 24)
        self.assertIs(report["checked"], False)
        for key in ("identical", "max_abs_err", "bound", "worst_ratio", "algbw_gbs", "busbw_gbs"):
            self.assertIsNone(report[key], key)
        for check in report["param_checks"]:
            for key in ("max_abs_err", "max_rel_err", "bound", "differing", "wrong",
                        "order_differing", "order_max_ulps"):
                self.assertIsNone(check[key], (check["name"], key))
        row, = self.query("SELECT identical, max_abs_err, algbw_gbs, busbw_gbs FROM run")
        self.assertEqual(row, (None, None, None, None))
        # a failed --net run has no simulated time either
        os.unlink(self.db)
        rc, out, err = self.run_ringsim("--json", "--net", "latency=5us,bandwidth=25GB/s",
                                        "--inject", "crash:worker=2,step=3")
        self.assertEqual(rc, 3, err)
        report = json.loads(out)
        self.assertIsNone(report["sim_ns"])
        self.assertIsNone(report["predicted_ns"])
        self.assertEqual(self.query("SELECT sim_ns, algbw_gbs FROM run"), [(None, None)])
        # and a run that completes is checked, with numbers
        rc, out, err = self.run_ringsim("--json", timeout="30")
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        self.assertIs(report["checked"], True)
        self.assertIs(report["identical"], True)
        self.assertEqual(report["transfers"], report["transfers_planned"])
        self.assertEqual(report["param_checks"][0]["wrong"], 0)

    # fault-11: a message lost or repeated at the very last step is caught
    # at once by the end-of-stream check, not by a timeout (or not at all).
    def test_last_step_drop_and_dup(self):
        for spec, message in (("dup:worker=3,step=5",
                               "worker 0 received message 5 from worker 3 again after its last "
                               "step (all_gather step 2): a message was delivered twice"),
                              ("drop:worker=3,step=5",
                               "worker 0 expected message 5 from worker 3 in all_gather step 2, "
                               "but worker 3 finished having sent 6: a message was lost")):
            began = time.monotonic()
            states = self.assert_failed_run(spec, message, "bad_message", timeout="60")
            self.assertLess(time.monotonic() - began, 30, f"{spec}: waited for the timeout")
            self.assertEqual(states[0], "bad_message")
            os.unlink(self.db)

    # fault-6: a stall shorter than the timeout completes correctly, and the
    # delay spreads around the ring: every other worker ends up waiting.
    def test_short_stall_completes_and_spreads(self):
        p = subprocess.run([RINGSIM, "-p", self.model, "-w", "4", "--trace", self.db, "--json",
                            "--inject", "stall:worker=1,step=2,ms=300"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        report = json.loads(p.stdout)
        self.assertIs(report["identical"], True)
        self.assertEqual(report["status"], "ok")
        self.assertGreaterEqual(report["wall_ns"], 300e6)
        waits = dict(self.query("SELECT worker, wait_ns FROM worker"))
        for w in (0, 2, 3):
            self.assertGreater(waits[w], 200e6, f"worker {w} waited only {waits[w]} ns")
        # the successor waited for the straggler's own segment of that step
        (wait,), = self.query("SELECT wait_ns FROM transfer WHERE src = 1 AND dst = 2 AND "
                              "phase = 'reduce_scatter' AND step = 2 AND segment = 0")
        self.assertGreater(wait, 200e6)

    # fault-7: --checksum alone runs clean and records checksums; --json on a
    # failed run carries the watchdog's list.
    def test_checksum_and_json_watchdog(self):
        rc, _, err = self.run_ringsim("--checksum", timeout="30")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.query("SELECT count(*) FROM transfer WHERE checksum IS NULL"), [(0,)])
        rc, out, err = self.run_ringsim("--json", "--inject", "crash:worker=0,step=0")
        self.assertEqual(rc, 3, err)
        report = json.loads(out)
        self.assertEqual(report["status"], "failed")
        self.assertEqual([w["state"] for w in report["watchdog"]][0], "crashed")
        self.assertEqual(len(report["watchdog"]), 4)

    # fault-9: in NCCL's slice order a fault fires once, in the first slice:
    # worker 2, crashing at step 3, sends slice 0's three reduce-scatter
    # segments and nothing more; its successor times out. A corrupted
    # segment in slice 0 is caught as in the step order.
    def test_slice_order(self):
        rc, out, err = self.run_ringsim("--loop", "slices", "--segment-bytes", "16K",
                                        "--inject", "crash:worker=2,step=3")
        self.assertEqual(rc, 3, err)
        self.assertIn("timed out after 0.5 s", err.splitlines()[0])
        self.assertEqual(dict(self.query("SELECT worker, state FROM worker"))[2], "crashed")
        self.assertEqual(self.query("SELECT phase, step, segment FROM transfer WHERE src = 2 "
                                    "ORDER BY seq"),
                         [("reduce_scatter", 0, 0), ("reduce_scatter", 1, 0),
                          ("reduce_scatter", 2, 0)])
        rc, out, err = self.run_ringsim("--loop", "slices", "--segment-bytes", "16K",
                                        "--inject", "corrupt:worker=0,step=2", timeout="30")
        self.assertEqual(rc, 3, err)
        self.assertIn("received a damaged segment of chunk 2 from worker 0 in reduce_scatter "
                      "step 2", err.splitlines()[0])

    # fault-8: bad fault specs are usage errors.
    def test_bad_specs(self):
        for spec, message in (("boom:worker=1", "--inject 'boom:worker=1'"),
                              ("stall:worker=1", "needs ms"),
                              ("crash:worker=x", "--inject 'crash:worker=x'"),
                              ("crash:worker=9", "inject: worker 9 does not exist (workers 0..3)"),
                              ("drop:step=6", "inject: step 6 does not exist"),
                              # each key once, a number alone
                              ("crash:worker=1,worker=2", "--inject 'crash:worker=1,worker=2'"),
                              ("stall:worker=1,ms=5,ms=6", "--inject 'stall:worker=1,ms=5,ms=6'"),
                              ("crash:worker= 1", "--inject 'crash:worker= 1'"),
                              # numbers in plain decimal, pairs joined by
                              # single commas (all four were accepted)
                              ("crash:worker=1,step=2,", "--inject 'crash:worker=1,step=2,'"),
                              ("crash:worker=1,,step=2", "--inject 'crash:worker=1,,step=2'"),
                              ("crash:worker=1,step=+2", "--inject 'crash:worker=1,step=+2'"),
                              ("crash:worker=01", "--inject 'crash:worker=01'"),
                              ("crash:", "--inject 'crash:'")):
            rc, out, err = self.run_ringsim("--inject", spec)
            self.assertEqual(rc, 2, spec)
            self.assertIn(message, err)
            self.assertEqual(err.count("\n"), 1, err)
        if os.path.exists(self.db):  # opened before the config was refused
            self.assertEqual(self.query("SELECT count(*) FROM run"), [(0,)], "no run recorded")

    def test_flipped_bits_listed(self):
        """Workers that end with other bits than worker 0 (RINGSIM_TEST_FLIP
        flips a bit of a result before the check, as silent memory
        corruption would): the check fails (exit 1) and lists, per worker,
        how many elements differ, and the first 10 by element then worker,
        each with its param, both values, one bit apart; a bad spec is
        refused with exit 2."""
        # fc1.weight has 200704 elements; 200705 is fc1.bias[1]
        flips = [(3, 200705), (1, 7)] + [(2, e) for e in range(100, 112)]
        spec = ",".join(f"{w}:{e}" for w, e in flips)
        env = dict(os.environ, RINGSIM_TEST_FLIP=spec)
        p = subprocess.run([RINGSIM, "-p", self.model, "-w", "4", "--no-trace",
                            "--json"], capture_output=True, text=True,
                           timeout=120, env=env)
        self.assertEqual(p.returncode, 1, p.stderr)
        report = json.loads(p.stdout)
        self.assertFalse(report["identical"])
        got = report["mismatches"]
        counts = {}
        for w, _ in flips:
            counts[w] = counts.get(w, 0) + 1
        self.assertEqual(got["workers"],
                         [{"worker": w, "elements": counts[w]}
                          for w in sorted(counts)])
        first = sorted(flips, key=lambda f: (f[1], f[0]))[:10]
        self.assertEqual([(m["worker"], m["elem"]) for m in got["first"]],
                         first)
        for m in got["first"]:
            name, index = (("fc1.bias", m["elem"] - 200704)
                           if m["elem"] >= 200704
                           else ("fc1.weight", m["elem"]))
            self.assertEqual((m["param"], m["index"]), (name, index), m)
            a = struct.unpack("<I", struct.pack("<f", m["value"]))[0]
            b = struct.unpack("<I", struct.pack("<f", m["worker0_value"]))[0]
            self.assertEqual(a ^ b, 1, m)
        text = subprocess.run([RINGSIM, "-p", self.model, "-w", "4",
                               "--no-trace"], capture_output=True, text=True,
                              timeout=120, env=env)
        self.assertEqual(text.returncode, 1, text.stderr)
        self.assertIn("  differ     from worker 0's bits: worker 1 (1 element), "
                      "worker 2 (12 elements), worker 3 (1 element)\n",
                      text.stdout)
        self.assertIn("fc1.weight[7] (element 7): worker 1 holds ", text.stdout)
        for bad in ("4:1", "1:999999999", "1-2", "1:2,"):
            with self.subTest(bad=bad):
                p = subprocess.run([RINGSIM, "-p", self.model, "-w", "4",
                                    "--no-trace"], capture_output=True,
                                   text=True, timeout=120,
                                   env=dict(os.environ, RINGSIM_TEST_FLIP=bad))
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
                self.assertIn(f"RINGSIM_TEST_FLIP '{bad}': expected", p.stderr)


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
