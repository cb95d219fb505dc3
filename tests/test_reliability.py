#!/usr/bin/python3
"""Reliability end to end: outputs that would overwrite an input or the
trace are refused before anything runs; a failure after the run started is
exit 3; SIGINT and SIGTERM stop a run cleanly (no temporary file left, the
trace says "interrupted", exit 130 and 143); every mode (model, bench,
diff, a run) stops within a second or two of SIGINT, SIGTERM or SIGHUP
(exit 130, 143, 129); a row a killed process left running is marked
abandoned by the next run.

    test_reliability.py RINGSIM EXAMPLES_DIR [Reliability.test_name ...]
"""
import hashlib
import json
import os
import re
import resource
import signal
import socket
import sqlite3
import subprocess
import tempfile
import time
import unittest

import helpers

RINGSIM = EXAMPLES = None


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Reliability(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.model = os.path.join(EXAMPLES, "mlp.json")

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def ringsim(self, *args, **kw):
        # errors="replace": a damaged file's bytes may reach a message
        p = subprocess.run([RINGSIM, *map(str, args)], capture_output=True, text=True,
                           errors="replace", timeout=300, cwd=self.dir, **kw)
        return p.returncode, p.stdout, p.stderr

    def runs(self, db):
        con = sqlite3.connect(db)
        try:
            return con.execute("SELECT run_id, status, error FROM run ORDER BY run_id").fetchall()
        finally:
            con.close()

    def assert_refused(self, args, message, keep):
        """Exit 2, one line naming the problem, and every file in keep
        byte for byte as it was."""
        before = {p: digest(p) for p in keep}
        listing = sorted(os.listdir(self.dir))
        rc, out, err = self.ringsim(*args)
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn(message, err)
        for p, d in before.items():
            self.assertEqual(digest(p), d, f"{p} changed")
        self.assertEqual(sorted(os.listdir(self.dir)), listing, "a file appeared")

    # reliability-1: --out naming the trace (or its -wal/-shm), the model or
    # a grads input, by any path to the same file, is refused before the
    # run: a trace with earlier runs keeps them.
    def test_out_collisions(self):
        db = self.path("same.db")
        for _ in range(2):
            rc, _, err = self.ringsim("-w", "4", "-p", self.model, "--trace", db)
            self.assertEqual(rc, 0, err)
        os.symlink(db, self.path("link.db"))
        for out in (db, "same.db", "./same.db", self.path("link.db")):
            self.assert_refused(["-w", "4", "-p", self.model, "--trace", "same.db", "--out", out],
                                "is the trace (--trace 'same.db'): refusing to overwrite it", [db])
        # the write-ahead log and index, whether or not they exist now
        for side, what in (("-wal", "write-ahead log"), ("-shm", "shared-memory index")):
            self.assert_refused(["-w", "4", "-p", self.model, "--trace", "same.db", "--out",
                                 "./same.db" + side], f"is the trace's {what}", [db])
        # SQLite keeps the -wal beside the file a linked trace resolves to
        self.assert_refused(["-w", "4", "-p", self.model, "--trace", "link.db", "--out",
                             "same.db-wal"], "is the trace's write-ahead log", [db])
        self.assertEqual([s for _, s, _ in self.runs(db)], ["ok", "ok"])
        model = self.path("m.json")
        with open(self.model) as src, open(model, "w") as dst:
            dst.write(src.read())
        self.assert_refused(["-w", "4", "-p", model, "--no-trace", "--out", "./m.json"],
                            "is the model file (--params", [model])
        # a grads input: worker 1's file under the pattern
        rc, _, err = self.ringsim("-w", "2", "-p", model, "--no-trace", "--out", "g0.st")
        self.assertEqual(rc, 0, err)
        with open(self.path("g0.st"), "rb") as src, open(self.path("g1.st"), "wb") as dst:
            dst.write(src.read())
        os.link(self.path("g1.st"), self.path("alias.st"))  # another name, same inode
        self.assert_refused(["-w", "2", "-p", model, "--no-trace", "--grads", "g{r}.st",
                             "--out", self.path("alias.st")],
                            "is worker 1's grads file 'g1.st' (--grads 'g{r}.st')",
                            [self.path("g0.st"), self.path("g1.st")])
        # two different files are fine
        rc, _, err = self.ringsim("-w", "2", "-p", model, "--no-trace", "--grads", "g{r}.st",
                                  "--out", "avg.st")
        self.assertEqual(rc, 0, err)

    # reliability-2: an --out that cannot be written is refused before the
    # run: nothing is recorded in the trace.
    def test_out_checked_before_run(self):
        os.mkdir(self.path("adir"))
        db = self.path("t.db")
        self.assert_refused(["-w", "4", "-p", self.model, "--trace", db, "--out", "adir"],
                            "--out 'adir': is a directory", [])
        self.assert_refused(["-w", "4", "-p", self.model, "--trace", db, "--out", "/dev/null"],
                            "--out '/dev/null': not a regular file", [])
        self.assert_refused(["-w", "4", "-p", self.model, "--trace", db, "--out",
                             "nodir/out.st"], "--out 'nodir/out.st': cannot create a file there",
                            [])
        for out, message in (("", "--out '': an empty file name"),
                             ("new.st/", "--out 'new.st/': names a directory, not a file")):
            self.assert_refused(["-w", "4", "-p", self.model, "--trace", db, "--out", out],
                                message, [])
        self.assertFalse(os.path.exists(db))

    # reliability-3: a failure after the run started is exit 3, with the
    # reason: here the output cannot be written (the file size limit
    # stands in for a full disk), and nothing is left behind.
    def test_out_failure_after_run_is_exit_3(self):
        def limit(ignore_sigxfsz, size=65536):
            def preexec():
                if ignore_sigxfsz:
                    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
            return preexec

        model = os.path.join(EXAMPLES, "model.json")  # 795 KiB of output
        db = self.path("t.db")
        # SIGXFSZ left at its default (as `ulimit -f` leaves it): not killed
        for ignore in (True, False):
            rc, out, err = self.ringsim("-w", "4", "-p", model, "--no-trace", "--out", "big.st",
                                        "--json", preexec_fn=limit(ignore))
            self.assertEqual(rc, 3, err)
            self.assertIn("big.st: cannot write: File too large", err)
            self.assertEqual(json.loads(out)["status"], "failed")
            self.assertEqual(os.listdir(self.dir), [])
        # the report, --json and the trace agree: the run failed (a limit
        # the trace's few pages fit under, the output does not)
        rc, out, err = self.ringsim("-w", "4", "-p", model, "--trace", db)
        self.assertEqual(rc, 0, err)
        rc, out, err = self.ringsim("-w", "4", "-p", model, "--trace", db, "--out", "big.st",
                                    "--json", preexec_fn=limit(False, 400 * 1024))
        self.assertEqual(rc, 3, err)
        report = json.loads(out)
        self.assertEqual((report["status"], report["error"]),
                         ("failed", "big.st: cannot write: File too large"))
        self.assertEqual(self.runs(db), [(1, "ok", None),
                                         (2, "failed", "big.st: cannot write: File too large")])
        self.assertFalse(os.path.exists(self.path("big.st")))

    def interrupt(self, signo, extra, wait_for):
        """Start ringsim, send signo once the run has begun (wait_for: a
        file or an immediate start), return (rc, seconds after the signal,
        stderr)."""
        with open(self.path("err.txt"), "w") as err:
            p = subprocess.Popen([RINGSIM, *extra], cwd=self.dir, stdout=subprocess.DEVNULL,
                                 stderr=err)
            deadline = time.monotonic() + 60
            while not wait_for() and time.monotonic() < deadline and p.poll() is None:
                time.sleep(0.05)
            self.assertIsNone(p.poll(), "ringsim ended before the signal")
            p.send_signal(signo)
            sent = time.monotonic()
            rc = p.wait(timeout=120)
            took = time.monotonic() - sent
        with open(self.path("err.txt")) as f:
            return rc, took, f.read()

    # reliability-4: SIGINT during a run (a worker in a ten-minute stall)
    # stops every worker at once: exit 130, the trace records the run as
    # interrupted, no output or temporary file is left. SIGTERM: 143.
    def test_signals(self):
        db = self.path("t.db")
        rc, _, err = self.ringsim("-w", "4", "-p", self.model, "--trace", db)
        self.assertEqual(rc, 0, err)

        def running():  # the run row is written just before the ring starts
            try:
                return len(self.runs(db)) == 2
            except sqlite3.Error:
                return False

        for signo, code, name in ((signal.SIGINT, 130, "SIGINT"), (signal.SIGTERM, 143, "SIGTERM")):
            rc, took, err = self.interrupt(
                signo, ["-w", "4", "-p", self.model, "--trace", db, "--out", "out.st",
                        "--timeout", "1000", "--inject", "stall:worker=1,step=2,ms=600000"],
                running)
            self.assertEqual(rc, code, err)
            self.assertLess(took, 60, "the stall held the run")
            self.assertIn(f"ringsim: interrupted by {name}\n", err)
            # the watchdog says where each worker was (stalled, unless the
            # signal came before worker 1 reached its stall)
            self.assertIn("ringsim: watchdog: where each worker stopped:", err)
            runs = self.runs(db)
            self.assertEqual(runs[0][1], "ok")
            self.assertEqual(runs[-1][1:], ("interrupted", f"interrupted by {name}"))
            left = set(os.listdir(self.dir)) - {"err.txt", "t.db", "t.db-wal", "t.db-shm"}
            self.assertEqual(left, set(), "an output or temporary file was left")
            os.unlink(db)
            for side in ("-wal", "-shm"):
                if os.path.exists(db + side):
                    os.unlink(db + side)
            rc, _, err = self.ringsim("-w", "4", "-p", self.model, "--trace", db)
            self.assertEqual(rc, 0, err)
        # while waiting for another writer's lock on the trace: at once
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            began = time.monotonic()
            rc, took, err = self.interrupt(
                signal.SIGINT, ["-w", "4", "-p", self.model, "--trace", db],
                lambda: time.monotonic() - began > 1)
            self.assertEqual(rc, 130, err)
            self.assertLess(took, 20, "the lock wait held the interrupt")
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        # before the run exists (generating a big model's grads): exit 130,
        # nothing in the trace for it
        gpt2 = os.path.join(EXAMPLES, "gpt2_small.json")
        rc, took, err = self.interrupt(signal.SIGINT, ["-w", "4", "-p", gpt2, "--trace", db,
                                                       "--out", "out.st"],
                                       lambda: os.path.exists(db + "-wal"))
        self.assertEqual(rc, 130, err)
        self.assertIn("interrupted by SIGINT", err)
        self.assertFalse(os.path.exists(self.path("out.st")))
        self.assertEqual([s for _, s, _ in self.runs(db)], ["ok"])


class Outputs(Reliability):
    """Round four: every name --out will write (each {s} step's with
    --hook powersgd over --iterations K) is checked before the run against
    every input, by identity, and against directories."""

    def copy_model(self, name):
        dst = self.path(name)
        with open(self.model) as src, open(dst, "w") as out:
            out.write(src.read())
        return dst

    # reliability-4.1: step 2's output would be the model file, the trace
    # (its earlier runs lost), or a directory: refused before step 1 runs,
    # nothing written
    def test_out_expansions_are_checked(self):
        model = self.copy_model("m2.json")
        psgd = ["-w", 2, "-p", model, "--hook", "powersgd:rank=1", "--iterations", 3]
        self.assert_refused([*psgd, "--no-trace", "--out", "m{s}.json"],
                            "--out 'm{s}.json' (step 2's 'm2.json') is the model file", [model])
        db = self.path("t2.db")
        rc, _, err = self.ringsim("-w", 2, "-p", model, "--trace", db)
        self.assertEqual(rc, 0, err)
        self.assert_refused([*psgd, "--trace", db, "--out", "t{s}.db"],
                            "(step 2's 't2.db') is the trace (--trace", [db])
        self.assertEqual([s for _, s, _ in self.runs(db)], ["ok"])
        os.mkdir(self.path("o2.st"))
        self.assert_refused([*psgd, "--no-trace", "--out", "o{s}.st"],
                            "--out 'o{s}.st' (step 2's 'o2.st'): is a directory", [])
        # the same pattern without a clash writes every step's file
        rc, _, err = self.ringsim(*psgd, "--no-trace", "--out", "r{s}.st")
        self.assertEqual(rc, 0, err)
        for s in (1, 2, 3):
            self.assertTrue(os.path.isfile(self.path(f"r{s}.st")), s)

    # reliability-4.1b: a trace given as a link whose target does not
    # exist yet (SQLite creates the target): --out naming that target, or
    # its -wal, is the trace (the link could not be resolved, and the
    # output replaced the run's new trace)
    def test_out_is_a_dangling_links_target(self):
        os.mkdir(self.path("sub"))
        os.symlink("sub/real.db", self.path("dang.db"))
        for out in ("sub/real.db", "sub/real.db-wal", "./sub/../sub/real.db"):
            with self.subTest(out=out):
                self.assert_refused(["-w", 2, "-p", self.model, "--trace", "dang.db",
                                     "--out", out], "is the trace", [])
        self.assertEqual(os.listdir(self.path("sub")), [])

    # reliability-4.2: the Q input (q=FILE, each step's {s}) and each
    # step's grads files are inputs too
    def test_out_is_not_a_q_or_step_grads_file(self):
        model = self.copy_model("m.json")
        with open(self.path("q.st"), "wb") as f:
            f.write(b"not read: refused before")
        self.assert_refused(["-w", 2, "-p", model, "--no-trace", "--hook",
                             "powersgd:rank=1,q=q.st", "--out", "q.st"],
                            "--out 'q.st' is the Q file 'q.st' (--hook ...,q=q.st)",
                            [self.path("q.st")])
        rc, _, err = self.ringsim("-w", 2, "-p", model, "--no-trace", "--out", "g2_0.st")
        self.assertEqual(rc, 0, err)
        for name in ("g1_0.st", "g1_1.st", "g2_1.st", "g3_0.st", "g3_1.st"):
            with open(self.path("g2_0.st"), "rb") as src, open(self.path(name), "wb") as dst:
                dst.write(src.read())
        keep = [self.path(f"g{s}_{w}.st") for s in (1, 2, 3) for w in (0, 1)]
        self.assert_refused(["-w", 2, "-p", model, "--no-trace", "--grads", "g{s}_{r}.st",
                             "--hook", "powersgd:rank=1", "--iterations", 3,
                             "--out", "g{s}_0.st"],
                            "--out 'g{s}_0.st' (step 1's 'g1_0.st') is step 1's worker 0's "
                            "grads file 'g1_0.st'", keep)


def cpu_seconds(pid):
    """The CPU time process pid has used (user and system), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # after the command's name
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Signals(Reliability):
    """Every mode stops within a second or two of one signal, exit 128 +
    the signal, and says so; SIGHUP is handled as SIGTERM; a row a killed
    process left running is marked abandoned by the next run."""

    def signal_run(self, signo, args, ready, limit=10):
        """Start ringsim with args, send signo once ready(process) is true,
        return (rc, seconds from the signal to the end, stdout, stderr).
        Fails if it ends before the signal or lives on limit s after it."""
        with open(self.path("out.txt"), "w") as out, open(self.path("err.txt"), "w") as err:
            p = subprocess.Popen([RINGSIM, *map(str, args)], cwd=self.dir, stdout=out,
                                 stderr=err)
            try:
                deadline = time.monotonic() + 60
                while p.poll() is None and not ready(p) and time.monotonic() < deadline:
                    time.sleep(0.02)
                self.assertIsNone(p.poll(), "ringsim ended before the signal")
                p.send_signal(signo)
                sent = time.monotonic()
                try:
                    rc = p.wait(timeout=limit)
                except subprocess.TimeoutExpired:
                    self.fail(f"still running {limit} s after {signal.Signals(signo).name}")
                took = time.monotonic() - sent
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        with open(self.path("out.txt")) as o, open(self.path("err.txt")) as e:
            return rc, took, o.read(), e.read()

    def rows(self, db):
        """The run rows (run_id, status, error, host, pid), or [] if the
        trace is not there yet."""
        try:
            con = sqlite3.connect(db, timeout=5)
            try:
                return con.execute("SELECT run_id, status, error, host, pid FROM run "
                                   "ORDER BY run_id").fetchall()
            finally:
                con.close()
        except sqlite3.Error:
            return []

    def running(self, db, count):
        """ready(): the trace holds count rows, the last one running."""
        def ready(p):
            rows = self.rows(db)
            return len(rows) == count and rows[-1][1] == "running"
        return ready

    # reliability-6: `ringsim model`'s schedule simulation (GPT-2 small on
    # 4096 workers in 4-byte segments) stops within a second of SIGINT
    # (130), --algo all's of SIGTERM (143) and gloo-ring's of SIGHUP (129):
    # nothing on stdout, the signal named on stderr. Each command is work
    # that cannot end before its signal by construction, not by the
    # machine being slow: the ring and gloo's ring (whose short last
    # chunks never let its steps repeat, docs/topology.md) take over 20 s
    # of CPU here, 60 times the 0.3 s the signal waits for (rhd, which
    # once stood for SIGHUP, got fast enough to end first).
    def test_model_loop_stops_at_a_signal(self):
        gpt2 = os.path.join(EXAMPLES, "gpt2_small.json")
        for signo, code, name, extra in ((signal.SIGINT, 130, "SIGINT", []),
                                         (signal.SIGTERM, 143, "SIGTERM", ["--algo", "all"]),
                                         (signal.SIGHUP, 129, "SIGHUP",
                                          ["--algo", "gloo-ring"])):
            with self.subTest(signal=name):
                rc, took, out, err = self.signal_run(
                    signo, ["model", "-p", gpt2, "-w", 4096, "--segment-bytes", 4,
                            "--net", "latency=5us,bandwidth=25GB/s", *extra],
                    lambda p: cpu_seconds(p.pid) >= 0.3)
                self.assertEqual(rc, code, err)
                self.assertLess(took, 1.5)
                self.assertEqual(out, "")
                self.assertEqual(err, f"ringsim: interrupted by {name}\n")

    # reliability-7: one SIGINT to `ringsim bench` (a size of 20000 timed
    # iterations: twenty seconds) stops it within a second or two: exit
    # 130, the signal named, and its trace row interrupted, not left
    # running.
    def test_bench_stops_at_a_signal_and_marks_its_row(self):
        db = self.path("b.db")
        rc, took, out, err = self.signal_run(
            signal.SIGINT, ["bench", "-w", 4, "-b", "1M", "-e", "1M", "--warmup", 0,
                            "-n", 20000, "--trace", db], self.running(db, 1))
        self.assertEqual(rc, 130, err)
        self.assertLess(took, 2)
        self.assertIn("ringsim: bench: W=4, 1048576 bytes: interrupted by SIGINT\n", err)
        self.assertNotIn("Avg bus bandwidth", out)  # the sweep did not go on
        self.assertEqual([r[1:3] for r in self.rows(db)], [("interrupted", "interrupted by SIGINT")])

    # reliability-8: `ringsim diff` stops within a second or two of SIGTERM,
    # wherever it is (a side's fill, run or copy, or the comparison): exit
    # 143, no report, the signal named.
    def test_diff_stops_at_a_signal(self):
        model = self.path("big.json")
        with open(model, "w") as f:
            json.dump({"name": "big", "params": [{"name": "w", "shape": [16 << 20]}]}, f)
        for cpu in (0.1, 0.5, 0.9):  # of the 1.5 s of CPU it takes
            with self.subTest(after_cpu_seconds=cpu):
                rc, took, out, err = self.signal_run(
                    signal.SIGTERM, ["diff", "-p", model, "-w", 4, "--algo", "ring,rd"],
                    lambda p: cpu_seconds(p.pid) >= cpu)
                self.assertEqual(rc, 143, err)
                self.assertLess(took, 2)
                self.assertEqual(out, "")
                self.assertRegex(err, r"^ringsim: (A: --algo ring: |B: --algo rd: )?"
                                      r"interrupted by SIGTERM\n$")

    # reliability-9: SIGHUP (the terminal closed) stops a plain run as
    # SIGTERM does: a worker in a ten-minute stall, exit 129 within a second
    # or two, the watchdog, and the trace row interrupted by SIGHUP.
    def test_sighup_stops_a_run_as_sigterm_does(self):
        db = self.path("t.db")
        rc, took, out, err = self.signal_run(
            signal.SIGHUP, ["-w", 4, "-p", self.model, "--trace", db, "--out", "out.st",
                            "--timeout", 1000, "--inject", "stall:worker=1,step=2,ms=600000"],
            self.running(db, 1))
        self.assertEqual(rc, 129, err)
        self.assertLess(took, 2)
        self.assertIn("ringsim: interrupted by SIGHUP\n", err)
        self.assertIn("ringsim: watchdog: where each worker stopped:", err)
        self.assertEqual([r[1:3] for r in self.rows(db)], [("interrupted", "interrupted by SIGHUP")])
        self.assertFalse(os.path.exists(self.path("out.st")))

    # reliability-10: a row left running by a process that was killed
    # outright (SIGKILL: nothing could write its outcome) is marked
    # abandoned by the next run on that trace; a row whose process still
    # runs is not, nor one from another host, nor one whose host is not
    # known (an older trace's); a recycled pid (another process's start
    # time) counts as gone. A trace from before the host and pid columns
    # opens, and gets them.
    def test_killed_runs_row_becomes_abandoned(self):
        db = self.path("t.db")
        stall = ["-w", 4, "-p", self.model, "--trace", db, "--timeout", 1000,
                 "--inject", "stall:worker=1,step=2,ms=600000"]
        rc, _, err = self.ringsim("-w", 4, "-p", self.model, "--trace", db)
        self.assertEqual(rc, 0, err)
        victim = subprocess.Popen([RINGSIM, *map(str, stall)], cwd=self.dir,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 60
            while not self.running(db, 2)(victim) and time.monotonic() < deadline:
                time.sleep(0.02)
            row = self.rows(db)[-1]
            self.assertEqual((row[1], row[4]), ("running", victim.pid))
            # while it lives, another run leaves its row alone
            rc, _, err = self.ringsim("-w", 4, "-p", self.model, "--trace", db)
            self.assertEqual(rc, 0, err)
            self.assertEqual(self.rows(db)[1][1], "running")
        finally:
            victim.kill()
            victim.wait()
        con = sqlite3.connect(db)
        host = con.execute("SELECT host FROM run WHERE run_id = 1").fetchone()[0]
        me = os.getpid()
        with open(f"/proc/{me}/stat") as f:
            my_start = int(f.read().rsplit(")", 1)[1].split()[19])
        # rows another run might have left: this process's pid with its own
        # start time (alive), with another start time (the pid used again:
        # gone), another host's, and an older ringsim's (no host)
        for pid, start, where in ((me, my_start, host), (me, my_start + 1, host),
                                  (victim.pid, None, "elsewhere"), (victim.pid, None, None)):
            con.execute("INSERT INTO run (started_at, version, model, workers, algo, collective, "
                        "dtype, op, elems, bytes, buckets, segment_bytes, segs_per_chunk, "
                        "segment_elems, queue_slots, timeout_s, status, host, pid, pid_start) "
                        "SELECT started_at, version, model, workers, algo, collective, dtype, op, "
                        "elems, bytes, buckets, segment_bytes, segs_per_chunk, segment_elems, "
                        "queue_slots, timeout_s, 'running', ?, ?, ? FROM run WHERE run_id = 1",
                        (where, pid, start))
        con.commit()
        con.close()
        rc, _, err = self.ringsim("-w", 4, "-p", self.model, "--trace", db)
        self.assertEqual(rc, 0, err)
        rows = self.rows(db)
        self.assertEqual([r[1] for r in rows],
                         ["ok", "abandoned", "ok", "running", "abandoned", "running", "running",
                          "ok"])
        self.assertEqual(rows[1][2], f"abandoned: its process (pid {victim.pid} on {host}) ended "
                                     "before the run did; a later run found it gone")
        self.assertEqual(host, socket.gethostname())  # each row names its process
        self.assertEqual(rows[-1][3], host)
        self.assertIsInstance(rows[-1][4], int)
        # an older trace, without the columns: it opens, gets them, and its
        # running row (no host to ask) stays running
        old = self.path("old.db")
        con = sqlite3.connect(old)
        con.execute("ATTACH ? AS t", (db,))
        schema = con.execute("SELECT sql FROM t.sqlite_schema WHERE type = 'table'").fetchall()
        for (sql,) in schema:
            con.execute(sql)
        con.execute("ALTER TABLE run DROP COLUMN host")
        con.execute("ALTER TABLE run DROP COLUMN pid")
        con.execute("ALTER TABLE run DROP COLUMN pid_start")
        con.execute("INSERT INTO run SELECT run_id, started_at, version, model, workers, algo, "
                    "collective, dtype, op, elems, bytes, buckets, segment_bytes, "
                    "segs_per_chunk, segment_elems, queue_slots, timeout_s, net_model, "
                    "'running', error, transfers, wall_ns, ref_ns, sim_ns, algbw_gbs, busbw_gbs, "
                    "identical, max_abs_err, bound, config_json, procs, clock_offsets_json, "
                    "trace_stream_json FROM t.run WHERE run_id = 1")
        con.commit()
        con.execute("DETACH t")
        con.execute("PRAGMA application_id = %d" % 0x5253696d)
        con.execute("PRAGMA user_version = 1")
        con.close()
        rc, _, err = self.ringsim("-w", 4, "-p", self.model, "--trace", old)
        self.assertEqual(rc, 0, err)
        self.assertEqual([(r[1], r[3]) for r in self.rows(old)],
                         [("running", None), ("ok", host)])


def write_safetensors(path, tensors):
    """A float32 safetensors file: tensors {name: (shape, [values])}."""
    import struct
    header, data = {}, b""
    for name, (shape, values) in tensors.items():
        blob = struct.pack(f"<{len(values)}f", *values)
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    text = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


class Refusals(Reliability):
    """Round four: what one mode refuses, every mode refuses, before
    anything runs."""

    # reliability-4.6: ringsim step refuses the rank a run refuses (it
    # once timed a "powersgd" step that compressed nothing)
    def test_step_refuses_a_rank_above_every_matrix(self):
        model = os.path.join(EXAMPLES, "model.json")
        message = "powersgd:rank=1000000 is above min(n, m) of every param's matrix"
        for mode in (["-w", 4, "--no-trace"],
                     ["step", "-w", 4, "--net", "latency=1us,bandwidth=10GB/s",
                      "--compute", "flops=10T,rows=512"]):
            with self.subTest(mode=mode[0]):
                self.assert_refused([*mode, "-p", model, "--hook", "powersgd:rank=1000000"],
                                    message, [])

    # reliability-4.8: ringsim model --algo hier (and its kin) on a flat
    # --net is refused as a run, step and diff refuse it (it printed the
    # ring's time under hier's name)
    def test_model_refuses_hier_without_nodes(self):
        for algo in ("hier", "hier:rd", "hier:rhd"):
            with self.subTest(algo=algo):
                self.assert_refused(["model", "-p", self.model, "-w", 8, "--net",
                                     "latency=1us,bandwidth=10GB/s", "--algo", algo],
                                    f"model: --algo {algo} is hierarchical and needs nodes", [])
        rc, _, err = self.ringsim("model", "-p", self.model, "--topo", "dgx-h100,nodes=2",
                                  "--algo", "hier")
        self.assertEqual(rc, 0, err)

    # reliability-4.9: --algo all's table keeps its columns for every
    # name: gloo-ring (9 letters) once pushed its row one column right
    def test_algo_all_columns_align(self):
        for net in (["-w", 8, "--net", "latency=1us,bandwidth=10GB/s"],
                    ["--topo", "dgx-h100,nodes=2"]):
            with self.subTest(net=net[-1]):
                rc, out, err = self.ringsim("model", "-p", self.model, *net, "--algo", "all")
                self.assertEqual(rc, 0, err)
                lines = out.splitlines()
                head = next(i for i, l in enumerate(lines) if l.lstrip().startswith("algo "))
                ends = [m.end() for m in re.finditer(r"\S+(?: us| GB/s)", lines[head])]
                rows = []
                for line in lines[head + 1:]:
                    if not line.strip():
                        break
                    rows.append(line)
                    self.assertEqual([m.end() for m in re.finditer(r"[\d.]+", line)][:3], ends,
                                     f"{line!r} under {lines[head]!r}")
                self.assertIn("gloo-ring", " ".join(rows))

    # reliability-4.11: a trace that cannot be made (a disk that fills:
    # a 16 KiB file size limit stands in) is exit 2 and leaves nothing: no
    # 16 KiB empty trace, no -wal or -shm; an empty file given as the
    # trace stays empty
    def test_trace_that_cannot_be_made_leaves_nothing(self):
        def small_disk():
            resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))
        two = os.path.join(EXAMPLES, "two_workers.json")
        open(self.path("empty.db"), "w").close()
        for name in ("new.db", "empty.db"):
            with self.subTest(trace=name):
                p = subprocess.run([RINGSIM, "-p", two, "--trace", name], cwd=self.dir,
                                   capture_output=True, text=True, timeout=60,
                                   preexec_fn=small_disk)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
                self.assertIn(f"trace {name}: ", p.stderr)
                self.assertEqual(sorted(os.listdir(self.dir)), ["empty.db"])
                self.assertEqual(os.path.getsize(self.path("empty.db")), 0)

    # reliability-4.13: a name of 5,000 bytes (--out, --params, --trace)
    # is quoted by its end, so the one line still says what is wrong (it
    # was cut off inside the name)
    def test_long_names_leave_room_for_the_reason(self):
        long = "y" * 5000
        for args, reason in ((["-p", self.model, "--no-trace", "--out", long], "path too long"),
                             (["-p", long, "--no-trace"], "cannot open: File name too long"),
                             (["-p", self.model, "--trace", long],
                              "cannot open: File name too long")):
            with self.subTest(option=args[2]):
                rc, out, err = self.ringsim("-w", 2, *args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn("..." + "y" * 40, err)
                self.assertIn(reason, err)
                self.assertLess(len(err), 300)

    # reliability-4.7: a Q file holding NaN or inf is refused as
    # non-finite gradients are (Gram-Schmidt once zeroed its column and
    # the run said PASS; torch carries the NaN into every result)
    def test_non_finite_q_is_refused(self):
        model = os.path.join(EXAMPLES, "model.json")
        for bad, word in ((float("nan"), "nan"), (float("-inf"), "-inf")):
            with self.subTest(value=word):
                q = self.path("q.st")
                fc1 = [0.5] * 784
                fc1[17] = bad
                write_safetensors(q, {"fc1.weight": ([784, 1], fc1),
                                      "fc2.weight": ([256, 1], [0.25] * 256)})
                rc, out, err = self.ringsim("-w", 2, "-p", model, "--no-trace", "--hook",
                                            "powersgd:rank=1,q=q.st")
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn(f'the initial Q of "fc1.weight" holds {word} at element 17: '
                              "Qs must be finite", err)
        write_safetensors(q, {"fc1.weight": ([784, 1], [0.5] * 784),
                              "fc2.weight": ([256, 1], [0.25] * 256)})
        rc, _, err = self.ringsim("-w", 2, "-p", model, "--no-trace", "--hook",
                                  "powersgd:rank=1,q=q.st")
        self.assertEqual(rc, 0, err)


class Jobs(Signals):
    """Round four: a job of several runs (ringsim step's threads,
    PowerSGD's all-reduces) is refused whole before anything runs, and a
    failure after some of its runs were traced leaves none of them ok."""

    STEP = ["step", "--net", "latency=1us,bandwidth=10GB/s", "-w", 4,
            "--compute", "flops=10T,rows=512"]

    def statuses(self, db):
        return [(s, e) for _, s, e in self.runs(db)]

    # reliability-4.3: ringsim step --trace over a million steps needs 125
    # GiB of trace records: refused, exit 2, before step 1 runs, nothing
    # added to the trace (it once appended step 1's run, ok, then failed)
    def test_step_trace_memory_checked_before_it_runs(self):
        model = os.path.join(EXAMPLES, "model.json")
        db = self.path("s.db")
        rc, _, err = self.ringsim(*self.STEP, "-p", model, "--trace", db)
        self.assertEqual(rc, 0, err)
        self.assert_refused([*self.STEP, "-p", model, "--trace", db, "--iterations", 1000000,
                             "--segment-bytes", "4K"],
                            "step: the threads' run of the later steps: the run needs about",
                            [db])
        self.assertEqual(self.statuses(db), [("ok", None), ("ok", None)])

    # reliability-4.4: a report that cannot be written (/dev/full) is exit
    # 3, and the step's and PowerSGD's traced runs are marked failed, as a
    # plain run's row is
    def test_lost_report_fails_the_jobs_rows(self):
        model = os.path.join(EXAMPLES, "model.json")
        for name, args in (("step", [*self.STEP, "-p", model, "--iterations", 3]),
                           ("powersgd", ["-w", 4, "-p", model, "--hook", "powersgd:rank=1",
                                         "--iterations", 2])):
            with self.subTest(job=name):
                db = self.path(f"{name}.db")
                with open("/dev/full", "w") as full:
                    p = subprocess.run([RINGSIM, *map(str, args), "--trace", db], cwd=self.dir,
                                       stdout=full, stderr=subprocess.PIPE, text=True,
                                       timeout=300)
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertIn("was not delivered: stdout: No space left on device", p.stderr)
                rows = self.statuses(db)
                self.assertGreaterEqual(len(rows), 2, rows)
                for status, error in rows:
                    self.assertEqual(status, "failed", rows)
                    self.assertIn("not delivered", error)

    # reliability-4.12: ringsim step's long simulations (ResNet-18 on 8192
    # workers in 1 MiB buckets: seconds) draw a progress line on a
    # terminal, and nothing on a pipe; SIGINT stops both (130). Both run
    # at once, and are signalled once the terminal shows the line: no
    # wait on the clock
    def test_step_progress_on_a_terminal_only(self):
        import pty
        args = [RINGSIM, "step", "--net", "latency=5us,bandwidth=25GB/s", "-w", 8192,
                "--compute", "flops=10T,rows=512", "-p",
                os.path.join(EXAMPLES, "resnet18.json"), "--bucket-mb", 1]
        args = [str(a) for a in args]
        leader, follower = pty.openpty()
        on_tty = subprocess.Popen(args, cwd=self.dir, stdout=subprocess.DEVNULL,
                                  stderr=follower)
        os.close(follower)
        on_pipe = subprocess.Popen(args, cwd=self.dir, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.PIPE)
        seen = b""
        try:
            deadline = time.monotonic() + 120
            while b"simulating the schedules: " not in seen and time.monotonic() < deadline:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                seen += chunk
            self.assertIn(b"\rringsim: step: simulating the schedules: ", seen)
            self.assertIsNone(on_pipe.poll(), "the piped step ended first")
            for p in (on_tty, on_pipe):
                p.send_signal(signal.SIGINT)
            self.assertEqual(on_tty.wait(timeout=30), 130)
            _, err = on_pipe.communicate(timeout=30)
            self.assertEqual(on_pipe.returncode, 130)
            self.assertEqual(err, b"ringsim: interrupted by SIGINT\n")
        finally:
            for p in (on_tty, on_pipe):
                if p.poll() is None:
                    p.kill()
                    p.wait()
            os.close(leader)

    # reliability-4.5: a signal between PowerSGD's all-reduces (its trace
    # holds some, the job goes on) is exit 130, and no row of the job is
    # left ok
    def test_signal_between_powersgd_runs(self):
        model = os.path.join(EXAMPLES, "model.json")
        db = self.path("p.db")
        rc, took, out, err = self.signal_run(
            signal.SIGINT, ["-w", 4, "-p", model, "--hook", "powersgd:rank=1",
                            "--iterations", 100000, "--trace", db],
            lambda p: len(self.rows(db)) >= 4)
        self.assertEqual(rc, 130, err)
        rows = self.rows(db)
        self.assertGreaterEqual(len(rows), 4)
        self.assertEqual({r[1] for r in rows}, {"interrupted"}, rows)


class PowerSgdTrace(Reliability):
    """Round four: PowerSGD's trace holds every step's all-reduces, and
    tells the steps apart."""

    # reliability-4.10: with start=2 the vanilla steps' all-reduces are
    # traced too (they were not), and every run names its step (in its
    # name and its config's powersgd_step: every compressed step's runs
    # once carried the same name)
    def test_every_step_traced_and_named(self):
        model = os.path.join(EXAMPLES, "model.json")
        db = self.path("p.db")
        rc, _, err = self.ringsim("-w", 2, "-p", model, "--hook", "powersgd:rank=1,start=2",
                                  "--iterations", 4, "--trace", db)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(db)
        try:
            rows = con.execute("SELECT model, status, json_extract(config_json, "
                               "'$.powersgd_step') FROM run ORDER BY run_id").fetchall()
        finally:
            con.close()
        name = "mlp-784-256-10"
        want = [(name, "ok", 1), (name, "ok", 2)]
        for step in (3, 4):
            want += [(f"{name}: powersgd step {step} bucket 0 {part}", "ok", step)
                     for part in ("uncompressed", "P", "Q")]
        self.assertEqual(rows, want)


class Damage(Reliability):
    # reliability-5: a trace that is truncated, or damaged anywhere SQLite's
    # integrity check sees it (a trace this small is checked whole), is
    # refused untouched: exit 2, the file byte for byte as it was.
    def test_damaged_traces_untouched(self):
        import random
        import shutil
        base = self.path("base.db")
        for _ in range(3):
            rc, _, err = self.ringsim("-w", "4", "-p", self.model, "--trace", base)
            self.assertEqual(rc, 0, err)
        size = os.path.getsize(base)
        victim = self.path("t.db")
        shutil.copy(base, victim)
        os.truncate(victim, size - 100)
        self.assert_refused(["-w", "4", "-p", self.model, "--trace", victim], "damaged", [victim])
        rng = random.Random(7)
        damaged = 0
        for _ in range(200):
            shutil.copy(base, victim)
            pos = rng.randrange(100, size)
            with open(victim, "r+b") as f:
                f.seek(pos)
                byte = f.read(1)[0]
                f.seek(pos)
                f.write(bytes([byte ^ rng.choice((0x01, 0x10, 0x80, 0xff))]))
            con = sqlite3.connect(f"file:{victim}?mode=ro", uri=True)
            con.text_factory = bytes  # the damage may be in a text
            try:
                sound = con.execute("PRAGMA integrity_check").fetchone()[0] == b"ok"
            except (sqlite3.DatabaseError, UnicodeDecodeError):
                sound = False
            finally:
                con.close()
            if sound:
                continue
            damaged += 1
            before = digest(victim)
            rc, _, err = self.ringsim("-w", "4", "-p", self.model, "--trace", victim)
            self.assertEqual(rc, 2, f"byte {pos}: {err}")
            self.assertEqual(digest(victim), before, f"byte {pos}: the trace changed")
        self.assertGreater(damaged, 0, "no flip damaged the trace: the test tested nothing")


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
