#!/usr/bin/python3
"""--transport mpi (docs/mpi.md): the workers spread over MPI processes.

    test_mpi_transport.py RINGSIM MPIRUN [MpiTransport.test_name ...]

Each case runs ringsim under mpirun (a second or so each) and the same
options in one process, and compares: the averaged output bit for bit,
the trace (every transfer of every process, written once by rank 0, with
each side's rank), the exit status and what is said. The cases cover
every algorithm, P = 2, 3, 4 and uneven blocks, sum and avg, f32 and f64,
without the full cross product.
"""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
import unittest

import helpers

RINGSIM = None
MPIRUN = None

# (algo, processes, workers, op, dtype): every algorithm, every P, W in
# {2, 5, 8, 16}, blocks even (W=8, P=2/4) and uneven (W=5, 16 over 3).
CASES = {
    2: [("ring", 2, 2, "sum", "f32"), ("linear", 2, 5, "avg", "f64"),
        ("rd", 2, 8, "avg", "f64")],
    3: [("ring", 3, 16, "avg", "f64"), ("rhd", 3, 8, "avg", "f32"),
        ("tree", 3, 5, "avg", "f64"), ("linear", 3, 8, "sum", "f32")],
    4: [("rd", 4, 5, "sum", "f32"), ("tree", 4, 16, "sum", "f32"),
        ("rhd", 4, 16, "sum", "f64"), ("ring", 4, 5, "avg", "f32")],
}


def run_job(cmd, timeout, env=None):
    """subprocess.run for mpirun: past the timeout, its whole process
    group is killed (killing mpirun alone would leave its ranks behind),
    and the test fails saying so."""
    job = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, env=env, start_new_session=True)
    try:
        out, err = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(job.pid, signal.SIGKILL)
        out, err = job.communicate()
        raise AssertionError(f"still running after {timeout} s: {cmd}\n"
                             f"{err}")
    return subprocess.CompletedProcess(cmd, job.returncode, out, err)


def kill_group(job):
    """A Popen'd mpirun (start_new_session) and whatever it left."""
    try:
        os.killpg(job.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    job.wait()


def owner(workers, procs, r):
    """The process hosting worker r: contiguous blocks (docs/mpi.md)."""
    return ((r + 1) * procs - 1) // workers


class MpiTransport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        # mpirun's session directory in this test's own TMPDIR: two
        # mpiruns starting at once (ctest -j) race to create
        # /tmp/ompi.HOST.UID, and the loser's orte_init fails ("File
        # exists")
        self.tmpdir_was = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = self.tmp.name

    def tearDown(self):
        if self.tmpdir_was is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = self.tmpdir_was
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def model(self, dtype):
        path = self.path(f"model-{dtype}.json")
        with open(path, "w") as f:
            json.dump({"name": f"tiny-{dtype}", "params": [
                {"name": "w", "shape": [37, 5], "dtype": dtype},
                {"name": "b", "shape": [11], "dtype": dtype}]}, f)
        return path

    def mpirun(self, procs, args, timeout=60, env=None):
        sub = args[:1] if args[:1] == ["bench"] else []
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np",
               str(procs), RINGSIM] + sub + ["--transport", "mpi"] + \
            args[len(sub):]
        return run_job(cmd, timeout, env=dict(os.environ, **(env or {})))

    def mpmd(self, per_rank, timeout=30):
        """One process per entry of per_rank, each with its own command
        line (an MPMD launch: a wrapper that adds options per host, or a
        stale copy on one host); "--transport mpi" is the caller's to
        give. Returns the result and the seconds it took."""
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe"]
        for i, args in enumerate(per_rank):
            cmd += ([":"] if i else []) + ["-np", "1", RINGSIM] + args
        begin = time.monotonic()
        run = run_job(cmd, timeout)
        return run, time.monotonic() - begin

    def said(self, run):
        """ringsim's lines on stderr (mpirun adds its own)."""
        return [line for line in run.stderr.splitlines()
                if line.startswith("ringsim:")]

    def ringsim(self, args):
        return subprocess.run([RINGSIM] + args, capture_output=True,
                              text=True, timeout=60)

    def check_cases(self, procs):
        for algo, p, w, op, dtype in CASES[procs]:
            with self.subTest(algo=algo, procs=p, workers=w, op=op,
                              dtype=dtype):
                tag = f"{algo}-{p}-{w}-{op}-{dtype}"
                common = ["--params", self.model(dtype), "--workers", str(w),
                          "--algo", algo, "--op", op, "--seed", "7",
                          "--segment-bytes", "64", "--json"]
                one = self.ringsim(common + ["--no-trace", "--out",
                                             self.path(f"{tag}.one")])
                self.assertEqual(one.returncode, 0, one.stderr)
                trace = self.path(f"{tag}.db")
                run = self.mpirun(p, common + ["--trace", trace, "--out",
                                               self.path(f"{tag}.mpi")])
                self.assertEqual(run.returncode, 0, run.stderr)
                with open(self.path(f"{tag}.one"), "rb") as f:
                    expected = f.read()
                with open(self.path(f"{tag}.mpi"), "rb") as f:
                    got = f.read()
                self.assertEqual(expected, got,
                                 f"{tag}: --out differs from one process")
                # one report (rank 0's), the same numbers as one process's
                report = json.loads(run.stdout)
                alone = json.loads(one.stdout)
                self.assertEqual(report["transfers"], alone["transfers"])
                self.assertEqual((report["transport"], report["processes"]),
                                 ("mpi", p))
                self.assertEqual((alone["transport"], alone["processes"]),
                                 ("shm", 1))
                self.assertTrue(report["checked"] and report["identical"],
                                report)
                db = sqlite3.connect(trace)
                runs = db.execute("SELECT run_id, procs, status, transfers "
                                  "FROM run").fetchall()
                self.assertEqual(len(runs), 1, runs)
                run_id, procs_row, status, transfers = runs[0]
                self.assertEqual((procs_row, status, transfers),
                                 (p, "ok", report["transfers"]))
                rows = db.execute(
                    "SELECT src, dst, src_rank, dst_rank, src_host, "
                    "dst_host FROM transfer WHERE run_id = ?",
                    (run_id,)).fetchall()
                self.assertEqual(len(rows), report["transfers"])
                wrong = [r for r in rows
                         if (r[2], r[3]) != (owner(w, p, r[0]),
                                             owner(w, p, r[1]))
                         or not r[4] or not r[5]]
                self.assertEqual(wrong, [], "ranks or hosts wrong")
                crossing = sum(1 for r in rows if r[2] != r[3])
                self.assertGreater(crossing, 0, "no transfer crossed "
                                   "processes")
                offsets = json.loads(db.execute(
                    "SELECT clock_offsets_json FROM run").fetchone()[0])
                self.assertEqual([o["rank"] for o in offsets],
                                 list(range(p)))
                self.assertEqual(sum(o["workers"] for o in offsets), w)
                db.close()

    def test_bits_two_processes(self):
        self.check_cases(2)

    def test_bits_three_processes(self):
        self.check_cases(3)

    def test_bits_four_processes(self):
        self.check_cases(4)

    # (CASES' columns, and the channel and simulated times of a transfer)
    CHANNEL_KEY = ("iter, bucket, phase, step, src, dst, chunk, segment, "
                   "elem_offset, elems, bytes, seq, checksum, contrib_first, "
                   "contrib_count, channel, sim_send_ns, sim_recv_ns, share, "
                   "wire_bytes")

    def test_channels_as_one_process(self):
        """The ring on 2 and 4 of NCCL's channels (--channels) over MPI:
        each channel's edge its own MPI tag, so two channels between the
        same two workers (every ring is the identity on --net) do not mix.
        The same bits as one process, the same simulated time as one
        process and as `ringsim model` to the ns, and rank 0's trace holds
        every channel's transfers, each row as one process's (its channel
        and simulated times too). A bucket of 1 MiB and a smaller one: on
        the nodes the channels leave through other NICs; 3 and 4
        processes, so channels cross processes. (Before: refused.)"""
        model = self.path("channels.json")
        with open(model, "w") as f:
            json.dump({"name": "channels", "params": [
                {"name": "w", "shape": [512, 512], "dtype": "f32"},
                {"name": "b", "shape": [3000], "dtype": "f32"}]}, f)
        net = ["--net", "latency=5us,bandwidth=25GB/s"]
        # (channels, options of the run and the model, of the run alone)
        cases = ((2, ["-w", "8", *net], ["--op", "avg"]),
                 (4, ["-w", "5", *net, "--segment-bytes", "64K"], []),
                 (2, ["--topo", "dgx-h100,nodes=2"], ["--checksum"]),
                 (4, ["--topo", "dgx-h100,nodes=2", "--bucket-mb", "0.5"], []))
        for channels, where, run_only in cases:
            for procs in (3, 4):
                with self.subTest(channels=channels, where=where, procs=procs):
                    tag = f"{channels}-{procs}-{len(where)}"
                    common = ["-p", model, *where, "--channels", str(channels),
                              "--json"]
                    one_db = self.path(f"{tag}-one.db")
                    one = self.ringsim(common + run_only + ["--seed", "3",
                                                            "--trace", one_db,
                                                 "--out", self.path(f"{tag}.one")])
                    self.assertEqual(one.returncode, 0, one.stderr)
                    trace = self.path(f"{tag}-mpi.db")
                    run = self.mpirun(procs, common + run_only + ["--seed", "3",
                                                                  "--trace",
                                                       trace, "--out",
                                                       self.path(f"{tag}.mpi")])
                    self.assertEqual(run.returncode, 0, run.stderr)
                    with open(self.path(f"{tag}.one"), "rb") as f:
                        expected = f.read()
                    with open(self.path(f"{tag}.mpi"), "rb") as f:
                        self.assertEqual(f.read(), expected,
                                         "--out differs from one process")
                    report, alone = json.loads(run.stdout), json.loads(one.stdout)
                    self.assertTrue(report["checked"] and report["identical"])
                    self.assertEqual((report["transport"], report["processes"]),
                                     ("mpi", procs))
                    for key in ("sim_ns", "transfers", "channels"):
                        self.assertEqual(report[key], alone[key], key)
                    modeled = subprocess.run(
                        [RINGSIM, "model", *common], capture_output=True,
                        text=True, timeout=60)
                    self.assertEqual(modeled.returncode, 0, modeled.stderr)
                    self.assertEqual(report["sim_ns"],
                                     json.loads(modeled.stdout)["sim_ns"])
                    rows = []
                    for db_path in (one_db, trace):
                        db = sqlite3.connect(db_path)
                        rows.append(sorted(db.execute(
                            f"SELECT {self.CHANNEL_KEY} FROM transfer")))
                        db.close()
                    self.assertEqual(len(rows[1]), report["transfers"])
                    self.assertEqual(sorted({r[15] for r in rows[1]}),
                                     list(range(channels)))
                    self.assertEqual(rows[1], rows[0],
                                     "the trace differs from one process's")
                    db = sqlite3.connect(trace)
                    crossing = db.execute(
                        "SELECT count(DISTINCT channel) FROM transfer WHERE "
                        "src_rank != dst_rank").fetchone()[0]
                    db.close()
                    self.assertEqual(crossing, channels,
                                     "a channel never crossed processes")

    def test_crash_and_stall_end_every_process(self):
        """A worker of process 1 crashes, or stalls past the timeout (for
        10 minutes: only the timeout ends the job within mpirun's bound):
        every process exits 3, rank 0 says where each worker stopped once,
        and the trace holds the run. (How soon after the timeout: a
        benchmark, bench/stop_latency.py.)"""
        timeout = 2
        for fault in ("crash:worker=3,step=1",
                      "stall:worker=3,step=1,ms=600000"):
            with self.subTest(fault=fault):
                trace = self.path("fail.db")
                run = self.mpirun(3, ["--params", self.model("f32"),
                                      "--workers", "7", "--timeout",
                                      str(timeout), "--inject", fault,
                                      "--trace", trace], timeout=120)
                self.assertEqual(run.returncode, 3, run.stderr)
                self.assertEqual(run.stderr.count("watchdog"), 1,
                                 run.stderr)
                self.assertIn("worker 3", run.stderr)
                self.assertEqual(run.stdout.count("status     FAILED"), 1,
                                 run.stdout)
                db = sqlite3.connect(trace)
                status, error = db.execute(
                    "SELECT status, error FROM run ORDER BY run_id DESC "
                    "LIMIT 1").fetchone()
                self.assertEqual(status, "failed")
                self.assertIn("worker 3", error)
                states = db.execute(
                    "SELECT count(*) FROM worker WHERE run_id = (SELECT "
                    "max(run_id) FROM run)").fetchone()[0]
                self.assertEqual(states, 7)
                db.close()

    def test_wire_faults_across_processes(self):
        """A message from worker 1 (process 0) to worker 2 (process 1)
        damaged, lost or repeated, at the last step too: caught by the
        receiver in the other process, every process exits 3, and rank 0
        says what happened, once."""
        model = self.model("f32")
        for fault, says in (
                ("corrupt:worker=1,step=1", "checksum mismatch"),
                ("drop:worker=1,step=5", "a message was lost"),
                ("dup:worker=1,step=5", "delivered twice")):
            with self.subTest(fault=fault):
                run = self.mpirun(2, ["--params", model, "--workers", "4",
                                      "--no-trace", "--timeout", "5",
                                      "--inject", fault])
                self.assertEqual(run.returncode, 3, run.stderr)
                said = [line for line in run.stderr.splitlines()
                        if line.startswith("ringsim: worker 2 ")]
                self.assertEqual(len(said), 1, run.stderr)
                self.assertIn(says, said[0])
                self.assertIn(says, run.stdout)

    def test_bad_input_said_once(self):
        model = self.model("f32")
        # worker 0's grads exist (rank 0 reads them), worker 1's do not:
        # rank 1's message is the one said, by rank 0
        made = self.ringsim(["--params", model, "--no-trace", "--out",
                             self.path("g0.safetensors")])
        self.assertEqual(made.returncode, 0, made.stderr)
        for args, says in (
                (["--params", model, "--workers", "2"],
                 "cannot be spread over 3 MPI processes"),
                (["--params", model, "--bogus"], "unknown option '--bogus'"),
                (["--params", self.path("missing.json")], "missing.json"),
                (["--params", model, "--workers", "3", "--grads",
                  self.path("g{r}.safetensors")], "g1.safetensors")):
            with self.subTest(args=args):
                run = self.mpirun(3, args + ["--no-trace"])
                self.assertEqual(run.returncode, 2, run.stderr)
                said = [line for line in run.stderr.splitlines()
                        if line.startswith("ringsim:")]
                self.assertEqual(len(said), 1, run.stderr)
                self.assertIn(says, said[0])
        # the trace stream's test knob (docs/mpi.md), refused before the
        # run
        for value in ("0", "12x"):
            with self.subTest(batch=value):
                run = self.mpirun(2, ["--params", model, "--no-trace"],
                                  env={"RINGSIM_MPI_TRACE_BATCH": value})
                says = f"RINGSIM_MPI_TRACE_BATCH '{value}': expected"
                self.assertEqual(run.returncode, 2, run.stderr)
                said = [line for line in run.stderr.splitlines()
                        if line.startswith("ringsim:")]
                self.assertEqual(len(said), 1, run.stderr)
                self.assertIn(says, said[0])

    def test_grads_files_and_inline(self):
        """Inputs that are not generated: each process reads its own
        workers' --grads files (or inline grads), the reference is the
        processes' sums reduced over MPI; the same bits and the same check
        as one process."""
        model = self.model("f32")
        for r in range(5):
            made = self.ringsim(["--params", model, "--seed", str(r),
                                 "--no-trace", "--out",
                                 self.path(f"g{r}.safetensors")])
            self.assertEqual(made.returncode, 0, made.stderr)
        inline = self.path("inline.json")
        with open(inline, "w") as f:
            json.dump({"name": "inline", "params": [
                {"name": "w", "shape": [23], "dtype": "f64"}],
                "grads": [{"w": [(i * k % 7) / 3 - 1 for i in range(23)]}
                          for k in range(1, 7)]}, f)
        grads = ["--params", model, "--workers", "5", "--grads",
                 self.path("g{r}.safetensors")]
        for args, procs in ((grads + ["--op", "avg"], 3),
                            (grads + ["--op", "prod"], 2),
                            (["--params", inline, "--op", "sum"], 4)):
            with self.subTest(args=args, procs=procs):
                args = args + ["--no-trace", "--json"]
                one = self.ringsim(args + ["--out", self.path("one.st")])
                self.assertEqual(one.returncode, 0, one.stderr)
                run = self.mpirun(procs, args + ["--out", self.path("mpi.st")])
                self.assertEqual(run.returncode, 0, run.stderr)
                with open(self.path("one.st"), "rb") as f:
                    expected = f.read()
                with open(self.path("mpi.st"), "rb") as f:
                    self.assertEqual(f.read(), expected)
                a, b = json.loads(one.stdout), json.loads(run.stdout)
                for key in ("checked", "identical", "max_abs_err", "bound"):
                    self.assertEqual(a[key], b[key], key)

    def test_bench_beside_mpi_allreduce(self):
        """bench over MPI: one row per size, from rank 0 alone, with
        MPI_Allreduce's time on the same buffers beside ringsim's."""
        run = self.mpirun(2, ["bench", "-w", "4", "-b", "8", "-e", "2K",
                              "-f", "16", "-n", "2", "--warmup", "1",
                              "--json"])
        self.assertEqual(run.returncode, 0, run.stderr)
        rows = [json.loads(line) for line in run.stdout.splitlines()]
        self.assertEqual([r["size"] for r in rows], [8, 128, 2048])
        for r in rows:
            self.assertEqual((r["procs"], r["workers"], r["wrong"]),
                             (2, 4, 0), r)
            self.assertGreater(r["mpi_allreduce_us"], 0, r)
            self.assertGreater(r["time_us"], 0, r)
            # nothing was timed for ref over MPI: null, not 0
            self.assertEqual((r["ref_us"], r["time_over_ref"]), (None, None))
        text = self.mpirun(2, ["bench", "-w", "4", "-b", "8", "-e", "8",
                               "-n", "2", "--warmup", "1"])
        self.assertEqual(text.returncode, 0, text.stderr)
        row = [line.split() for line in text.stdout.splitlines()
               if line.strip() and not line.startswith("#")]
        self.assertEqual(len(row), 1, text.stdout)
        # size count type redop root, 2 x (time algbw busbw #wrong), ref
        # time/ref mpi
        self.assertEqual(row[0][13:15], ["-", "-"], text.stdout)

    # (iter .. contrib_count: every column of a transfer but its times and
    # ranks, which a one-process run has otherwise)
    KEY = ("iter, bucket, phase, step, src, dst, chunk, segment, "
           "elem_offset, elems, bytes, seq, checksum, contrib_first, "
           "contrib_count")

    def stream_model(self):
        """4 workers, segments of 16 floats: 1584 transfers, 792
        received in each of 2 processes, 49.5 batches of 16 each."""
        path = self.path("stream.json")
        with open(path, "w") as f:
            json.dump({"name": "stream", "params": [
                {"name": "w", "shape": [4096], "dtype": "f32"},
                {"name": "b", "shape": [100], "dtype": "f32"}]}, f)
        return path

    def test_trace_streamed_during_run(self):
        """Records reach rank 0 in batches of RINGSIM_MPI_TRACE_BATCH while
        the workers run: the trace holds every transfer exactly once, the
        same rows (and each receiver's in the same order) as one process
        writes, and each process held at most (its workers + 1) batches
        of records, far fewer than it recorded."""
        batch = 16
        common = ["--params", self.stream_model(), "--workers", "4",
                  "--segment-bytes", "64", "--checksum", "--json"]
        one_db, mpi_db = self.path("one.db"), self.path("mpi.db")
        one = self.ringsim(common + ["--trace", one_db])
        self.assertEqual(one.returncode, 0, one.stderr)
        run = self.mpirun(2, common + ["--trace", mpi_db],
                          env={"RINGSIM_MPI_TRACE_BATCH": str(batch)})
        self.assertEqual(run.returncode, 0, run.stderr)
        transfers = json.loads(run.stdout)["transfers"]
        self.assertEqual(transfers, json.loads(one.stdout)["transfers"])
        rows = {}
        for name, path in (("one", one_db), ("mpi", mpi_db)):
            db = sqlite3.connect(path)
            rows[name] = db.execute(
                f"SELECT {self.KEY} FROM transfer ORDER BY rowid").fetchall()
            if name == "mpi":
                stream = json.loads(db.execute(
                    "SELECT trace_stream_json FROM run").fetchone()[0])
            db.close()
        self.assertEqual(len(rows["mpi"]), transfers)
        self.assertEqual(len(set(rows["mpi"])), transfers, "a row twice")
        self.assertEqual(sorted(rows["mpi"]), sorted(rows["one"]))
        for dst in range(4):  # each receiver's records in receive order
            self.assertEqual([r for r in rows["mpi"] if r[5] == dst],
                             [r for r in rows["one"] if r[5] == dst], dst)
        self.assertEqual(stream["batch_records"], batch)
        procs = stream["procs"]
        self.assertEqual(sum(p["records"] for p in procs), transfers)
        for p in procs:
            self.assertEqual(p["records_bound"], (2 + 1) * batch, p)
            self.assertLessEqual(p["records_held_max"], p["records_bound"],
                                 p)
            self.assertGreater(p["records"], 10 * p["records_bound"], p)
            self.assertGreaterEqual(p["batches"], p["records"] / batch, p)
        # rank 1's batches went while its workers ran, and rank 0 wrote
        # some of them before its own workers stopped
        self.assertGreater(procs[1]["batches_during_run"], 0, procs)
        self.assertGreater(stream["received_during_run"], 0, stream)

    def test_trace_stream_keeps_failed_runs_records(self):
        """A worker of process 1 crashes: every process exits 3, and every
        record process 1 sent (many batches) is in rank 0's trace, once."""
        batch, timeout = 8, 2
        trace = self.path("crash.db")
        run = self.mpirun(2, ["--params", self.stream_model(), "--workers",
                              "4", "--segment-bytes", "64", "--timeout",
                              str(timeout), "--inject",
                              "crash:worker=3,step=4", "--trace", trace],
                          env={"RINGSIM_MPI_TRACE_BATCH": str(batch)},
                          timeout=120)
        self.assertEqual(run.returncode, 3, run.stderr)
        db = sqlite3.connect(trace)
        status, stream = db.execute(
            "SELECT status, trace_stream_json FROM run").fetchone()
        self.assertEqual(status, "failed")
        sent = json.loads(stream)["procs"][1]
        rows = db.execute(f"SELECT {self.KEY} FROM transfer WHERE "
                          "dst_rank = 1").fetchall()
        db.close()
        self.assertGreater(sent["records"], 10 * batch, sent)
        self.assertEqual(len(rows), sent["records"])
        self.assertEqual(len(set(rows)), len(rows), "a row twice")

    def test_mismatches_listed_across_processes(self):
        """Workers on different processes that end with other bits
        (RINGSIM_TEST_FLIP: worker 1 of process 0 in the second hash block,
        worker 4, process 1's first, whose block hash then differs, and
        eleven elements of worker 6): exit 1, and rank 0 lists the same
        counts and the same first elements, with the same values, as one
        process does."""
        path = self.path("two-blocks.json")
        with open(path, "w") as f:  # 70100 elements: two hash blocks
            json.dump({"name": "two-blocks", "params": [
                {"name": "w", "shape": [70000], "dtype": "f32"},
                {"name": "b", "shape": [100], "dtype": "f32"}]}, f)
        flips = [(1, 66000), (4, 100), (6, 70050)] + \
            [(6, e) for e in range(5, 15)]
        env = {"RINGSIM_TEST_FLIP": ",".join(f"{w}:{e}" for w, e in flips)}
        args = ["--params", path, "--workers", "8", "--no-trace", "--json"]
        one = subprocess.run([RINGSIM] + args, capture_output=True,
                             text=True, timeout=60,
                             env=dict(os.environ, **env))
        self.assertEqual(one.returncode, 1, one.stderr)
        run = self.mpirun(2, args, env=env)
        self.assertEqual(run.returncode, 1, run.stderr)
        alone, report = json.loads(one.stdout), json.loads(run.stdout)
        self.assertFalse(report["identical"])
        self.assertEqual(report["mismatches"], alone["mismatches"])
        listed = report["mismatches"]
        self.assertEqual(listed["workers"], [
            {"worker": 1, "elements": 1}, {"worker": 4, "elements": 1},
            {"worker": 6, "elements": 11}])
        self.assertEqual([(m["worker"], m["elem"]) for m in listed["first"]],
                         sorted(flips, key=lambda f: (f[1], f[0]))[:10])
        text = self.mpirun(2, args[:-1], env=env)
        self.assertEqual(text.returncode, 1, text.stderr)
        self.assertEqual(text.stdout.splitlines()[1],
                         "  transport  mpi, 2 processes")
        self.assertEqual(text.stdout.count("  differ     from worker 0's "
                                           "bits: worker 1 (1 element), "
                                           "worker 4 (1 element), worker 6 "
                                           "(11 elements)\n"), 1, text.stdout)

    def test_old_trace_gets_mpi_columns(self):
        """A trace written before the MPI columns gets them on open (NULL
        in the old runs), as an older one gets bucket_algo."""
        trace = self.path("old.db")
        model = self.model("f32")
        first = self.ringsim(["--params", model, "--trace", trace])
        self.assertEqual(first.returncode, 0, first.stderr)
        db = sqlite3.connect(trace)
        for table, column in (("run", "procs"), ("run", "clock_offsets_json"),
                              ("transfer", "src_rank"),
                              ("transfer", "dst_rank"),
                              ("transfer", "src_host"),
                              ("transfer", "dst_host")):
            db.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        db.commit()
        db.close()
        run = self.mpirun(2, ["--params", model, "--workers", "4",
                              "--trace", trace])
        self.assertEqual(run.returncode, 0, run.stderr)
        db = sqlite3.connect(trace)
        self.assertEqual(db.execute("SELECT run_id, procs FROM run ORDER BY "
                                    "run_id").fetchall(), [(1, None), (2, 2)])
        self.assertEqual(db.execute(
            "SELECT count(*) FROM transfer WHERE run_id = 1 AND "
            "src_rank IS NOT NULL").fetchone()[0], 0)
        self.assertEqual(db.execute(
            "SELECT count(DISTINCT src_rank) FROM transfer WHERE "
            "run_id = 2").fetchone()[0], 2)
        db.close()

    def refused_by_rank_0(self, argvs, says):
        """The job of one argv per rank is refused: exit 2, and rank 0 says
        one line holding says. Returns the run."""
        run, _ = self.mpmd(argvs)
        self.assertEqual(run.returncode, 2, run.stderr)
        said = self.said(run)
        self.assertEqual(len(said), 1, run.stderr)
        self.assertIn(says, said[0])
        return run

    def test_ranks_that_disagree_are_refused(self):
        """Processes given other options, or another model (a stale copy on
        one host), or another trace batch: before anything runs every
        process exits 2, and rank 0 says once what differs, naming the
        rank. (Before: a deadlock blamed on a worker, a damaged segment,
        a heap overflow in rank 0.)"""
        model = self.model("f32")
        stale = self.path("stale.json")
        with open(stale, "w") as f:
            json.dump({"name": "tiny-f32", "params": [
                {"name": "w", "shape": [37, 6], "dtype": "f32"},
                {"name": "b", "shape": [11], "dtype": "f32"}]}, f)
        made = self.ringsim(["-p", model, "-w", "1", "--no-trace", "--out",
                             self.path("g0.st")])
        self.assertEqual(made.returncode, 0, made.stderr)
        for r in range(1, 4):
            shutil.copy(self.path("g0.st"), self.path(f"g{r}.st"))
        grads = ["--grads", self.path("g{r}.st")]
        common = ["--transport", "mpi", "--no-trace", "--timeout", "2"]
        for per_rank, says in (
                ([["-p", model, "--workers", "4"],
                  ["-p", model, "--workers", "6"]],
                 "rank 1's --workers (6) differs from rank 0's (4)"),
                ([["-p", model], ["-p", model, "--inject",
                                  "corrupt:worker=1,step=1"]],
                 "rank 1's --inject (corrupt:worker=1,step=1) differs from "
                 "rank 0's (none)"),
                ([["-p", model], ["-p", model], ["-p", stale]],
                 "rank 2's model (tiny-f32, 2 params, 233 elements, f32, "
                 "digest "),
                ([["-p", model] + grads, ["-p", model]],
                 "rank 1's grads (generated: init 0, seed 0) differs from "
                 "rank 0's (given: --grads files or inline)")):
            with self.subTest(says=says):
                run = self.refused_by_rank_0([common + a for a in per_rank], says)
                self.assertEqual(run.stdout, "")

    def test_ranks_that_disagree_name_the_option(self):
        """Ranks given another --topo, --straggler, --link, --reduce-rate,
        --bucket-mb or --channels: rank 0 names the option as typed (they
        were all "--net", and --bucket-mb "--bucket-bytes", no option of
        ringsim's; --channels was refused over MPI)."""
        model = self.model("f32")
        net = ["--net", "latency=1us,bandwidth=1GB/s"]
        common = ["--transport", "mpi", "--no-trace", "--timeout", "2", "-p",
                  model, "-w", "4"]
        for per_rank, says in (
                ([["--topo", "pcie,gpus=4"], ["--topo", "pcie,gpus=2,nodes=2"]],
                 "rank 1's --topo ("),
                ([net, net + ["--straggler", "worker=1,us=5"]],
                 "rank 1's --straggler ("),
                ([net, net + ["--link", "1-2:bandwidth=2GB/s"]],
                 "rank 1's --link ("),
                ([net, net + ["--reduce-rate", "10GB/s"]],
                 "rank 1's --reduce-rate ("),
                ([net, ["--net", "latency=2us,bandwidth=1GB/s"]],
                 "rank 1's --net ("),
                ([["--bucket-mb", "1"], ["--bucket-mb", "2"]],
                 "rank 1's --bucket-mb (2 MiB"),
                ([["--channels", "2"], ["--channels", "4"]],
                 "rank 1's --channels (4) differs from rank 0's (2)")):
            with self.subTest(says=says):
                self.refused_by_rank_0([common + a for a in per_rank], says)

    def test_usage_error_on_one_rank_ends_every_rank(self):
        """A usage error, --help (or -V), or no --transport mpi, on one
        process only: every process ends at once with exit 2, and one
        line says why (before: rank 0 waited for ever for the others)."""
        model = self.model("f32")
        mpi = ["--transport", "mpi", "-p", model, "--no-trace"]
        for per_rank, says in (
                ([mpi, mpi + ["--bogus"]], "unknown option '--bogus'"),
                ([mpi + ["--bogus"], mpi], "unknown option '--bogus'"),
                ([mpi, ["--transport", "mpi", "--help"]],
                 "rank 1 ended before the run (exit 0: was it given --help "
                 "or -V?)"),
                ([mpi, mpi[2:]],
                 "rank 1's --transport (shm) differs from rank 0's (mpi)"),
                ([mpi[2:], mpi],
                 "rank 1's --transport (mpi) differs from rank 0's (shm)")):
            with self.subTest(per_rank=per_rank):
                run, took = self.mpmd(per_rank)
                self.assertEqual(run.returncode, 2, run.stderr)
                said = self.said(run)
                self.assertEqual(len(said), 1, run.stderr)
                self.assertIn(says, said[0])
                self.assertLess(took, 15, run.stderr)

    def test_stopped_rank_ends_the_job(self):
        """A process that stops answering (SIGSTOP) in the run: the job
        ends, exit 3, rank 0 names the rank, and the trace holds the failed
        run saying so (before: the job never ended)."""
        timeout = 2
        trace = self.path("stopped.db")
        # worker 3 (rank 1) sleeps in a stall, so that rank 1 is stopped
        # inside the run
        cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", "2",
               RINGSIM, "--transport", "mpi", "-p", self.model("f32"),
               "--workers", "4", "--timeout", str(timeout), "--inject",
               "stall:worker=3,step=1,ms=1500", "--trace", trace]
        job = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
        stopped = None
        try:
            self.wait_for_run(trace)
            stopped = self.rank_pid(1)
            os.kill(stopped, signal.SIGSTOP)
            out, err = job.communicate(timeout=120)  # a hang's bound
        finally:
            if stopped:
                for sig in (signal.SIGKILL, signal.SIGCONT):
                    try:
                        os.kill(stopped, sig)
                    except ProcessLookupError:
                        pass
            kill_group(job)
        self.assertEqual(job.returncode, 3, err)
        said = [line for line in err.splitlines()
                if line.startswith("ringsim: rank 1 ")]
        self.assertEqual(len(said), 1, err)
        self.assertIn("rank 1 (workers 2 to 3, on ", said[0])
        self.assertIn("did not answer within", said[0])
        db = sqlite3.connect(trace)
        status, error = db.execute("SELECT status, error FROM run").fetchone()
        db.close()
        self.assertEqual(status, "failed")
        self.assertIn("rank 1 (workers 2 to 3", error)

    def test_culprit_is_the_crashed_worker_across_processes(self):
        """Worker 1 is process 0's last worker; its successor, worker 2, is
        process 1's first. Its crash or stall at a step >= 1 names worker
        1 (before: 'a message from worker 1 to worker 2 was lost on the
        wire', from rank 0's count of the edge's sends against its own
        copy's receipts, which were process 1's)."""
        model = self.model("f32")
        for fault, says in (
                ("crash:worker=1,step=1", "worker 1 crashed (injected) at "
                 "the start of reduce_scatter step 1"),
                ("stall:worker=1,step=2,ms=3000", "worker 1 stalled "
                 "(injected, 3000 ms) at the start of reduce_scatter step "
                 "2")):
            with self.subTest(fault=fault):
                run = self.mpirun(2, ["--params", model, "--workers", "4",
                                      "--algo", "ring", "--no-trace",
                                      "--timeout", "0.5", "--inject", fault])
                self.assertEqual(run.returncode, 3, run.stderr)
                said = self.said(run)
                self.assertTrue(said[0].startswith("ringsim: " + says),
                                run.stderr)
                self.assertNotIn("lost on the wire", run.stderr)

    def test_signal_to_any_rank_marks_the_run_interrupted(self):
        """SIGTERM to rank 1 or rank 0 in the run, or SIGINT to mpirun
        (Ctrl-C: it sends every rank SIGTERM): the run's row is marked
        interrupted, one line says so, and the ranks exit 143 (before: the
        row stayed 'running' and nothing was said). mpirun signals both
        ranks: whichever takes its signal first is the one named, so either
        line is true there."""
        own, from_1 = ("ringsim: interrupted by SIGTERM",
                       "ringsim: interrupted by SIGTERM (rank 1)")
        for target, may_say in ((1, {from_1}), (0, {own}),
                                ("mpirun", {own, from_1})):
            with self.subTest(target=target):
                trace = self.path(f"signal-{target}.db")
                cmd = [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np",
                       "2", RINGSIM, "--transport", "mpi", "-p",
                       self.model("f32"), "--workers", "4", "--timeout", "5",
                       "--inject", "stall:worker=3,step=1,ms=2000",
                       "--trace", trace]
                job = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True,
                                       start_new_session=True)
                try:
                    self.wait_for_run(trace)
                    os.kill(job.pid if target == "mpirun" else
                            self.rank_pid(target),
                            signal.SIGINT if target == "mpirun" else
                            signal.SIGTERM)
                    out, err = job.communicate(timeout=20)
                finally:
                    kill_group(job)
                if target != "mpirun":  # (mpirun's own status is its own)
                    self.assertEqual(job.returncode, 143, err)
                said = [line for line in err.splitlines()
                        if line.startswith("ringsim: interrupted")]
                self.assertEqual(len(said), 1, err)
                self.assertIn(said[0], may_say, err)
                db = sqlite3.connect(trace)
                status, error = db.execute(
                    "SELECT status, error FROM run").fetchone()
                db.close()
                self.assertEqual((status, error), ("interrupted", said[0][9:]))

    def wait_for_run(self, trace):
        """Until rank 0 has set up the run in the trace, and a little more:
        every rank is then in the run (a stall there keeps it going)."""
        begin = time.monotonic()
        while time.monotonic() - begin < 20:
            time.sleep(0.05)
            try:
                db = sqlite3.connect(trace)
                runs = db.execute("SELECT count(*) FROM run").fetchone()[0]
                db.close()
            except sqlite3.Error:
                continue
            if runs:
                time.sleep(0.3)
                return
        self.fail("the run never began")

    def rank_pid(self, rank):
        """The pid of this test's ringsim process of the given rank."""
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmdline = f.read().split(b"\0")
                with open(f"/proc/{pid}/environ", "rb") as f:
                    environ = f.read().split(b"\0")
            except OSError:
                continue
            if cmdline[0] == RINGSIM.encode() and self.tmp.name.encode() in \
                    b" ".join(cmdline) and \
                    f"OMPI_COMM_WORLD_RANK={rank}".encode() in environ:
                return int(pid)
        self.fail(f"no ringsim process of rank {rank}")


def main():
    helpers.main(globals(), "RINGSIM", "MPIRUN")


if __name__ == "__main__":
    main()
