#!/usr/bin/env python3
"""Trace tests: run ringsim, then query its SQLite trace and check the
ring's invariants from the rows alone.

    test_trace.py RINGSIM EXAMPLES_DIR [Trace.test_name ...]
"""
import hashlib
import json
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

import helpers

RINGSIM = None
EXAMPLES = None


run = helpers.run


def run_env(env, *args, cwd=None):
    return helpers.run(*args, cwd=cwd, env=env)


# The run table as ringsim created it before its --slots column was renamed
# queue_slots (src/io/trace_schema.c at that time): a trace an older ringsim
# began has it.
OLD_RUN_TABLE = """CREATE TABLE IF NOT EXISTS run (
  run_id INTEGER PRIMARY KEY,
  started_at TEXT NOT NULL,
  version TEXT NOT NULL,
  model TEXT NOT NULL,
  workers INTEGER NOT NULL,
  algo TEXT NOT NULL,
  collective TEXT NOT NULL,
  dtype TEXT NOT NULL,
  op TEXT NOT NULL,
  elems INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  buckets INTEGER NOT NULL,
  segment_bytes INTEGER NOT NULL,
  segs_per_chunk INTEGER NOT NULL,
  segment_elems INTEGER NOT NULL,
  channel_slots INTEGER NOT NULL,
  timeout_s REAL NOT NULL,
  net_model TEXT,
  status TEXT NOT NULL,
  error TEXT,
  transfers INTEGER,
  wall_ns INTEGER,
  ref_ns INTEGER,
  sim_ns INTEGER,
  algbw_gbs REAL,
  busbw_gbs REAL,
  identical INTEGER,
  max_abs_err REAL,
  bound REAL,
  config_json TEXT,
  procs INTEGER,
  clock_offsets_json TEXT,
  trace_stream_json TEXT,
  host TEXT,
  pid INTEGER,
  pid_start INTEGER
)"""


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class TraceCase(unittest.TestCase):
    """A temporary directory with a trace t.db, and small models in it."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.db = os.path.join(self.dir, "t.db")

    def tearDown(self):
        self.tmp.cleanup()

    def model(self, elems):
        path = os.path.join(self.dir, f"m{elems}.json")
        with open(path, "w") as f:
            json.dump({"name": f"m{elems}", "params": [
                {"name": "a", "shape": [elems - 1]}, {"name": "b", "shape": [1]}]}, f)
        return path

    def traced_run(self, workers, elems, *extra):
        rc, out, err = run("-w", workers, "-p", self.model(elems), "--trace", self.db,
                           "--json", *extra)
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        self.assertEqual(report["trace"], self.db)
        return report["run_id"]


class Trace(TraceCase):
    def check_invariants(self, con, run_id):
        """Everything the ring promises, read back from the trace."""
        W, elems, segs, transfers, status = con.execute(
            "SELECT workers, elems, segs_per_chunk, transfers, status FROM run "
            "WHERE run_id = ?", (run_id,)).fetchone()
        self.assertEqual(status, "ok")
        rows = con.execute(
            "SELECT phase, step, src, dst, chunk, segment, elem_offset, elems, bytes, seq, "
            "send_begin_ns, send_end_ns, recv_begin_ns, recv_end_ns, wait_ns, "
            "contrib_first, contrib_count FROM transfer WHERE run_id = ? "
            "ORDER BY src, seq", (run_id,)).fetchall()
        per_worker = 2 * (W - 1) * segs if W > 1 else 0
        self.assertEqual(len(rows), W * per_worker)
        self.assertEqual(len(rows), transfers)
        S = elems * 4
        theory = 2 * (W - 1) / W * S
        for r in range(W):
            mine = [row for row in rows if row[2] == r]
            self.assertEqual(len(mine), per_worker, f"worker {r}")
            # every row goes from r to r+1, numbered 0, 1, 2, ... per link
            self.assertTrue(all(row[3] == (r + 1) % W for row in mine))
            self.assertEqual([row[9] for row in mine], list(range(per_worker)))
            # bytes sent: 2(W-1)/W x S within one element per chunk
            sent = sum(row[8] for row in mine)
            self.assertLessEqual(abs(sent - theory), 2 * (W - 1) * 4, f"worker {r}")
            # steps are ordered: reduce-scatter 0..W-2, then all-gather 0..W-2
            order = [(row[0] != "reduce_scatter", row[1]) for row in mine]
            self.assertEqual(order, sorted(order))
            # the schedule: in step s worker r sends chunk r-s (RS), r+1-s (AG)
            for row in mine:
                want = (r - row[1]) % W if row[0] == "reduce_scatter" else (r + 1 - row[1]) % W
                self.assertEqual(row[4], want)
            # the received rows of worker r, in receive order, are ordered too
            got = con.execute(
                "SELECT phase = 'all_gather', step FROM transfer WHERE run_id = ? AND dst = ? "
                "ORDER BY recv_begin_ns, seq", (run_id, r)).fetchall()
            self.assertEqual(got, sorted(got))
        for row in rows:
            send_begin, send_end, recv_begin, recv_end, wait = row[10:15]
            self.assertLessEqual(send_begin, send_end)
            self.assertLessEqual(recv_begin, recv_end)
            self.assertLessEqual(send_begin, recv_end)  # received after sent
            self.assertGreaterEqual(wait, 0)
            self.assertEqual(row[8], row[7] * 4)

        # Replay the ring from the trace: which workers' contributions each
        # worker's copy of each chunk holds. Every payload's recorded
        # contributors must be exactly what its sender held.
        holds = [[{w} for _ in range(W)] for w in range(W)]
        for phase in ("reduce_scatter", "all_gather"):
            for step in range(W - 1):
                arrivals = [row for row in rows if row[0] == phase and row[1] == step
                            and row[5] == 0]
                sent = {row[2]: {(row[15] + k) % W for k in range(row[16])} for row in arrivals}
                for row in arrivals:
                    src, dst, chunk = row[2], row[3], row[4]
                    self.assertEqual(sent[src], holds[src][chunk],
                                     f"{phase} step {step}: {src}->{dst} chunk {chunk}")
                for row in arrivals:
                    src, dst, chunk = row[2], row[3], row[4]
                    if phase == "reduce_scatter":
                        holds[dst][chunk] = holds[dst][chunk] | sent[src]
                    else:
                        holds[dst][chunk] = set(sent[src])
            if phase == "reduce_scatter":
                # after reduce-scatter worker r owns all of chunk (r+1) mod W
                for r in range(W):
                    self.assertEqual(holds[r][(r + 1) % W], set(range(W)), f"worker {r}")
        for r in range(W):
            for c in range(W):
                self.assertEqual(holds[r][c], set(range(W)))

    # trace-1: the invariants, for W dividing the count, W not dividing it,
    # W greater than it, and several segments per chunk.
    def test_invariants(self):
        cases = [(2, 10), (3, 1001), (4, 1000), (7, 1001), (16, 10), (5, 3), (8, 4096)]
        ids = []
        for workers, elems in cases:
            ids.append(self.traced_run(workers, elems, "--segment-bytes", 64))
        self.assertEqual(ids, list(range(1, len(cases) + 1)))
        con = sqlite3.connect(self.db)
        for run_id, (workers, elems) in zip(ids, cases):
            with self.subTest(workers=workers, elems=elems):
                self.check_invariants(con, run_id)
        con.close()

    # trace-2: the run, param, worker and result tables hold what the
    # report says; the database is versioned and in WAL mode.
    def test_tables(self):
        rc, out, err = run("-w", 3, "-p", os.path.join(EXAMPLES, "mlp.json"), "--trace",
                           self.db, "--json", "--init", "exact", "--seed", 4)
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute("PRAGMA user_version").fetchone()[0], 1)
        self.assertEqual(con.execute("PRAGMA journal_mode").fetchone()[0], "wal")
        run_row = con.execute("SELECT model, workers, algo, op, elems, bytes, status, error, "
                              "transfers, wall_ns, identical, config_json FROM run").fetchone()
        self.assertEqual(run_row[:9], ("mlp-3-4-2", 3, "ring", "avg", 26, 104, "ok", None,
                                       report["transfers"]))
        self.assertEqual(run_row[9], report["wall_ns"])
        self.assertEqual(run_row[10], 1)
        config = json.loads(run_row[11])
        self.assertEqual((config["init"], config["seed"], config["workers"]), ("exact", 4, 3))
        params = con.execute("SELECT name, shape, elem_offset, elems FROM param ORDER BY idx").fetchall()
        self.assertEqual(params, [("fc1.weight", "[4, 3]", 0, 12), ("fc1.bias", "[4]", 12, 4),
                                  ("fc2.weight", "[2, 4]", 16, 8), ("fc2.bias", "[2]", 24, 2)])
        workers = con.execute("SELECT worker, state, bytes_sent, transfers_sent FROM worker "
                              "ORDER BY worker").fetchall()
        self.assertEqual([w[2] for w in workers], report["bytes_sent"])
        self.assertTrue(all(w[1] == "done" for w in workers))
        sent = con.execute("SELECT src, sum(bytes), count(*) FROM transfer GROUP BY src "
                           "ORDER BY src").fetchall()
        self.assertEqual([(s[1], s[2]) for s in sent], [(w[2], w[3]) for w in workers])
        results = con.execute("SELECT param, differing, identical FROM result ORDER BY param_idx").fetchall()
        self.assertEqual(results, [(p[0], 0, 1) for p in params])
        con.close()

    # trace-3: runs accumulate in one file; the summary names the file and
    # the run; the default file is ringsim-trace.db in the working directory;
    # --no-trace writes nothing.
    def test_default_file_and_many_runs(self):
        two = os.path.join(EXAMPLES, "two_workers.json")
        for n in (1, 2, 3):
            rc, out, err = run("-p", two, cwd=self.dir)
            self.assertEqual(rc, 0, err)
            self.assertIn(f"trace      ringsim-trace.db, run {n}\n", out)
        con = sqlite3.connect(os.path.join(self.dir, "ringsim-trace.db"))
        self.assertEqual(con.execute("SELECT count(*), count(DISTINCT run_id) FROM transfer").fetchone(), (12, 3))
        con.close()
        other = os.path.join(self.dir, "quiet")
        os.mkdir(other)
        rc, out, err = run("-p", two, "--no-trace", cwd=other)
        self.assertEqual(rc, 0, err)
        self.assertNotIn("trace ", out)
        self.assertEqual(os.listdir(other), [])

    # trace-4: files that are not ringsim traces are refused (exit 2, one
    # line) and left byte for byte as they were; so is a good trace when the
    # input is bad.
    def test_foreign_files_untouched(self):
        two = os.path.join(EXAMPLES, "two_workers.json")
        other_db = os.path.join(self.dir, "other.db")
        con = sqlite3.connect(other_db)
        con.execute("CREATE TABLE t (x)")
        con.execute("INSERT INTO t VALUES (42)")
        con.commit()
        con.close()
        text = os.path.join(self.dir, "notes.txt")
        with open(text, "w") as f:
            f.write("not a database at all\n" * 100)
        for path, message in ((other_db, "a SQLite database but not a ringsim trace"),
                              (text, "not a SQLite database")):
            before = digest(path)
            rc, out, err = run("-p", two, "--trace", path)
            self.assertEqual(rc, 2, err)
            self.assertIn(message, err)
            self.assertEqual(err.count("\n"), 1)
            self.assertEqual(out, "")
            self.assertEqual(digest(path), before, path)
            self.assertFalse(os.path.exists(path + "-wal"))
        # a trace of another schema version is refused too
        self.traced_run(2, 4)
        con = sqlite3.connect(self.db)
        con.execute("PRAGMA user_version = 99")
        con.commit()
        con.close()
        before = digest(self.db)
        rc, _, err = run("-p", two, "--trace", self.db)
        self.assertEqual(rc, 2)
        self.assertIn("schema version 99", err)
        self.assertEqual(digest(self.db), before)
        # bad input leaves a good trace's runs as they were
        good = os.path.join(self.dir, "good.db")
        rc, _, err = run("-p", two, "--trace", good)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(good)
        before = con.execute("SELECT * FROM transfer").fetchall()
        con.close()
        bad_cases = [["-p", two, "-w", 3], ["-p", self.model(5), "--grads", "nope{r}.st"]]
        for args in bad_cases:
            rc, _, err = run(*args, "--trace", good)
            self.assertEqual(rc, 2, err)
        con = sqlite3.connect(good)
        self.assertEqual(con.execute("SELECT count(*) FROM run").fetchone()[0], 1)
        self.assertEqual(con.execute("SELECT * FROM transfer").fetchall(), before)
        con.close()
        # an unwritable place is refused before the run
        rc, _, err = run("-p", two, "--trace", "/nonexistent/t.db")
        self.assertEqual(rc, 2)
        self.assertIn("trace /nonexistent/t.db: cannot open", err)

    # trace-5: W = 1 records the run and its one idle worker, no transfers.
    def test_one_worker(self):
        run_id = self.traced_run(1, 10)
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute("SELECT count(*) FROM transfer").fetchone()[0], 0)
        self.assertEqual(con.execute("SELECT worker, state, phase FROM worker").fetchall(),
                         [(0, "done", None)])
        self.assertEqual(con.execute("SELECT status FROM run WHERE run_id = ?", (run_id,)).fetchone()[0], "ok")
        con.close()

    # trace-7: DDP buckets: ResNet-18's 62 params in 3 buckets, last params
    # first; each bucket all-reduced in turn, its rows tagged with it.
    def test_buckets(self):
        rc, out, err = run("-w", 2, "-p", os.path.join(EXAMPLES, "resnet18.json"), "--trace",
                           self.db, "--json", "--init", "exact")
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        self.assertEqual([b["params"][0] for b in report["buckets"]],
                         ["fc.bias", "layer4.1.bn2.bias", "layer4.0.bn1.bias"])
        self.assertEqual(sum(b["elems"] for b in report["buckets"]), 11689512)
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute("SELECT buckets FROM run").fetchone()[0], 3)
        params = dict(con.execute("SELECT name, bucket FROM param").fetchall())
        self.assertEqual((params["fc.weight"], params["layer4.0.conv2.weight"], params["conv1.weight"]),
                         (0, 1, 2))
        rows = con.execute("SELECT bucket, min(elem_offset), max(elem_offset + elems), count(*) "
                           "FROM transfer GROUP BY bucket ORDER BY bucket").fetchall()
        for (bucket, lo, hi, n), b in zip(rows, report["buckets"]):
            self.assertEqual((lo, hi), (b["elem_offset"], b["elem_offset"] + b["elems"]))
        self.assertEqual(sum(r[3] for r in rows), report["transfers"])
        # all of bucket 0 moves before bucket 1 starts, on each link
        order = con.execute("SELECT bucket FROM transfer WHERE src = 0 ORDER BY seq").fetchall()
        self.assertEqual([b for b, in order], sorted(b for b, in order))
        con.close()

    # trace-6: the example queries in docs/trace-schema.md run and answer.
    def test_documented_queries(self):
        self.traced_run(4, 1000, "--segment-bytes", 256)
        self.traced_run(3, 1000)
        # runs 3 and 4: a training step's, for the step_interval query
        p = subprocess.run([RINGSIM, "step", "-p", os.path.join(EXAMPLES, "step_three.json"),
                            "-w", "2", "--net", "latency=1us,bandwidth=1GB/s", "--trace",
                            self.db], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = os.path.join(os.path.dirname(EXAMPLES), "docs", "trace-schema.md")
        with open(doc) as f:
            text = f.read()
        queries = [block.split("```", 1)[0].strip()
                   for block in text.split("```sql")[1:]]
        self.assertGreaterEqual(len(queries), 6)
        con = sqlite3.connect(self.db)
        for q in queries:
            with self.subTest(query=q[:60]):
                run = "3" if "step_interval" in q else "1"
                rows = con.execute(q.replace(":run", run).replace(":a", "1").replace(":b", "2")
                                   .replace(":elem", "500")).fetchall()
                self.assertGreater(len(rows), 0, q)
        con.close()

    # trace-9: the run's --slots column is queue_slots (the FIFO on an edge
    # is a queue; "channel" is NCCL's). A trace an older ringsim began has
    # channel_slots instead (its run table below, as trace_schema.c created
    # it): it opens, takes new runs with both columns filled, keeps its
    # runs and their rows, gets queue_slots filled for them (and for a run
    # an older ringsim appends later, at the next open), and the tools read
    # its old and new runs.
    def test_trace_from_before_queue_slots(self):
        rid = self.traced_run(3, 100, "--slots", 3)
        con = sqlite3.connect(self.db)
        run_columns = [c for c, in con.execute("SELECT name FROM pragma_table_info('run')")]
        self.assertIn("queue_slots", run_columns)
        self.assertNotIn("channel_slots", run_columns)
        self.assertEqual(con.execute("SELECT queue_slots FROM run WHERE run_id = ?",
                                     (rid,)).fetchone(), (3,))
        con.close()
        old = os.path.join(self.dir, "old.db")
        con = sqlite3.connect(old)
        con.execute("ATTACH ? AS t", (self.db,))
        con.execute(OLD_RUN_TABLE)
        for (name, sql) in con.execute("SELECT name, sql FROM t.sqlite_schema WHERE "
                                       "type = 'table' AND name != 'run'").fetchall():
            con.execute(sql)
            con.execute(f"INSERT INTO {name} SELECT * FROM t.{name}")
        # the old run table's columns in the new one's order (queue_slots
        # where channel_slots was)
        con.execute("INSERT INTO run SELECT * FROM t.run")
        con.commit()
        con.execute("DETACH t")
        con.execute("PRAGMA application_id = %d" % 0x5253696d)
        con.execute("PRAGMA user_version = 1")
        con.execute("PRAGMA journal_mode = WAL")
        before = con.execute("SELECT count(*), sum(bytes) FROM transfer").fetchone()
        con.close()
        self.assertGreater(before[0], 0)

        def runs():
            with sqlite3.connect(old) as c:
                return c.execute(
                    "SELECT run_id, channel_slots, queue_slots, status, (SELECT count(*) FROM "
                    "transfer t WHERE t.run_id = r.run_id) FROM run r ORDER BY run_id").fetchall()
        rc, out, err = run("-w", 3, "-p", self.model(100), "--trace", old, "--slots", 5)
        self.assertEqual(rc, 0, err)
        self.assertIn(f"trace      {old}, run 2\n", out)
        self.assertEqual(runs(), [(1, 3, 3, "ok", before[0]), (2, 5, 5, "ok", before[0])])
        with sqlite3.connect(old) as c:
            self.assertEqual(c.execute("SELECT count(*), sum(bytes) FROM transfer WHERE "
                                       "run_id = 1").fetchone(), before)
            # an older ringsim appends a run: channel_slots alone
            c.execute("INSERT INTO run (started_at, version, model, workers, algo, collective, "
                      "dtype, op, elems, bytes, buckets, segment_bytes, segs_per_chunk, "
                      "segment_elems, channel_slots, timeout_s, status) SELECT started_at, "
                      "version, model, workers, algo, collective, dtype, op, elems, bytes, "
                      "buckets, segment_bytes, segs_per_chunk, segment_elems, 7, timeout_s, "
                      "'ok' FROM run WHERE run_id = 1")
        rc, out, err = run("-w", 3, "-p", self.model(100), "--trace", old)
        self.assertEqual(rc, 0, err)
        self.assertEqual([r[:4] for r in runs()], [(1, 3, 3, "ok"), (2, 5, 5, "ok"),
                                                   (3, 7, 7, "ok"), (4, 8, 8, "ok")])
        # the tools read the old run and the new ones
        tool = os.path.join(os.path.dirname(EXAMPLES), "tools", "ringsim_plot.py")
        for run_id in (1, 2, 4):
            with self.subTest(run=run_id):
                out_json = os.path.join(self.dir, f"run{run_id}.json")
                p = subprocess.run([sys.executable, tool, "export", old, "--run", str(run_id),
                                    "-o", out_json], capture_output=True, text=True,
                                   timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(out_json) as f:
                    events = json.load(f)["traceEvents"]
                self.assertEqual(sum(e["ph"] == "X" and e["name"].startswith("send c")
                                     for e in events), before[0])

    # trace-8: docs/trace-schema.md says what the columns hold: a column it
    # calls NULL is NULL in a run with every feature on; every op the
    # command takes is listed for run.op; config_json has the documented
    # keys, `average` among them.
    def test_schema_doc_matches_the_trace(self):
        doc = os.path.join(os.path.dirname(EXAMPLES), "docs", "trace-schema.md")
        with open(doc) as f:
            text = f.read()
        model = self.model(100)
        for op in ("sum", "avg", "min", "max", "prod"):
            extra = ["--average", "pre"] if op == "avg" else []
            rc, out, err = run("-w", 3, "-p", model, "--trace", self.db, "--op", op, *extra,
                               "--net", "latency=1us,bandwidth=1GB/s", "--checksum", "--order-report")
            self.assertEqual(rc, 0, err)
        rc, out, err = run("-w", 3, "-p", model, "--trace", self.db)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(self.db)
        rows = {}
        for line in text.splitlines():
            if line.startswith("| ") and not line.startswith("| column"):
                cols, meaning = line[2:].split(" | ", 1)
                for col in cols.split(", "):
                    rows.setdefault(col.strip(), []).append(meaning)
        for table in ("run", "transfer"):
            for (col,) in con.execute(f"SELECT name FROM pragma_table_info('{table}')"):
                with self.subTest(table=table, column=col):
                    self.assertIn(col, rows)
                    if any("NULL (reserved" in m for m in rows[col]):
                        filled = con.execute(f"SELECT count(*) FROM {table} WHERE {col} IS NOT NULL"
                                             ).fetchone()[0]
                        self.assertEqual(filled, 0, f"{table}.{col} is documented as reserved")
        op_doc = [m for m in rows["op"] if "`" in m][0]
        for (op,) in con.execute("SELECT op FROM run"):
            self.assertIn(f"`{op}`", op_doc)
        configs = [json.loads(c) for (c,) in con.execute("SELECT config_json FROM run ORDER BY run_id")]
        self.assertEqual([c["average"] for c in configs], [None, "pre", None, None, None, "post"])
        config_doc = rows["config_json"][0]
        for key in configs[0]:
            self.assertIn(f"`{key}`", config_doc)
        con.close()


def transfer_counts(db):
    """{run_id: (status, transfers, transfer rows)} of every run in db."""
    con = sqlite3.connect(db)
    try:
        return {run_id: (status, transfers, rows) for run_id, status, transfers, rows in con.execute(
            "SELECT run_id, status, transfers, (SELECT count(*) FROM transfer t "
            "WHERE t.run_id = r.run_id) FROM run r ORDER BY run_id")}
    finally:
        con.close()


class Writers(TraceCase):
    """The trace writer at the edges: concurrent writers, a full disk, names
    that are not files, damaged and read-only traces."""

    def start(self, *args, env=None, **kw):
        return subprocess.Popen([RINGSIM, *map(str, args)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env, **kw)

    # nanosleep and clock_nanosleep: the system calls the trace's busy
    # handler sleeps in (src/io/trace_lock.c's sleep_ms), by machine
    NANOSLEEP = {"x86_64": {35, 230}, "aarch64": {101, 115}}

    def waiting_for_the_lock(self, p):
        """Whether ringsim process p waits for the trace's lock (readysignal):
        it has the trace open and its main thread sleeps in the busy
        handler (/proc/PID/syscall's number, or where the kernel has no such
        file, /proc/PID/wchan). The trace is opened before anything else
        of the run, and nothing sleeps between that and its wait."""
        proc = f"/proc/{p.pid}"
        try:
            if not any(os.path.realpath(os.path.join(proc, "fd", fd)) ==
                       os.path.realpath(self.db) for fd in os.listdir(f"{proc}/fd")):
                return False
            numbers = self.NANOSLEEP.get(os.uname().machine)
            if numbers and os.path.exists(f"{proc}/syscall"):
                with open(f"{proc}/syscall") as f:
                    call = f.read().split()[0]
                return call.isdigit() and int(call) in numbers
            with open(f"{proc}/wchan") as f:
                return "nanosleep" in f.read()
        except OSError:  # it has ended (the caller sees why)
            return False

    def until_waiting(self, procs, timeout=60):
        """Until each of procs has been seen waiting for the trace's lock;
        gives the time (time.monotonic()) the last one was first seen so."""
        deadline = time.monotonic() + timeout
        waiting = set()
        while len(waiting) < len(procs):
            for p in procs:
                if p not in waiting and self.waiting_for_the_lock(p):
                    waiting.add(p)
                if p.poll() is not None:
                    self.fail(f"a writer ended (exit {p.returncode}) instead of "
                              f"waiting for the lock: {p.stderr.read()}")
            self.assertLess(time.monotonic(), deadline,
                            f"{len(procs) - len(waiting)} of {len(procs)} writers "
                            "never waited for the lock")
            time.sleep(0.01)
        return time.monotonic()

    def writers(self, count, *args, env=None):
        """Start count ringsim processes at once; return [(rc, out, err)]."""
        procs = [self.start(*args, env=env) for _ in range(count)]
        results = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            results.append((p.returncode, out, err))
        return results

    def assert_all_kept(self, results, before):
        """Every writer exited 0 and its run is in the trace, ok, with all its
        transfer rows; the runs there before are as they were."""
        for rc, out, err in results:
            self.assertEqual(rc, 0, err)
            self.assertEqual(err, "")
        runs = transfer_counts(self.db)
        ids = sorted(json.loads(out)["run_id"] for _, out, _ in results)
        self.assertEqual(sorted(set(ids)), ids)
        self.assertEqual(sorted(runs), sorted(before) + ids)
        for run_id, (status, transfers, rows) in runs.items():
            self.assertEqual(status, "ok", run_id)
            self.assertEqual(rows, transfers, run_id)
        for run_id, counts in before.items():
            self.assertEqual(runs[run_id], counts)

    # writers-1: eight processes started at once on a new trace: one creates
    # the schema, the others find it made; all exit 0 and keep every row.
    def test_concurrent_new_trace(self):
        for trial in range(3):
            with self.subTest(trial=trial):
                for suffix in ("", "-wal", "-shm"):
                    if os.path.exists(self.db + suffix):
                        os.unlink(self.db + suffix)
                results = self.writers(8, "-w", 4, "-p", self.model(4000),
                                       "--segment-bytes", 256, "--trace", self.db, "--json")
                self.assert_all_kept(results, {})

    # writers-2: eight processes at once on an existing trace while another
    # writer holds the lock: they queue, then all write; nothing is lost.
    # The wait is the property: the lock is held until every writer has
    # waited for it 10.5 s, longer than the 10 s SQLite wait the writer
    # once had (readysignal: from when each is seen waiting, not from their
    # start, which a busy machine delays by seconds).
    def test_concurrent_existing_trace(self):
        self.traced_run(4, 1000)
        before = transfer_counts(self.db)
        con = sqlite3.connect(self.db, isolation_level=None, timeout=60)
        con.execute("BEGIN IMMEDIATE")
        model = self.model(100000)
        procs = [self.start("-w", 4, "-p", model, "--segment-bytes", 1024,
                            "--trace", self.db, "--json") for _ in range(8)]
        try:
            all_waiting = self.until_waiting(procs)
            time.sleep(max(0.0, all_waiting + 10.5 - time.monotonic()))
            for p in procs:
                self.assertIsNone(p.poll(), "a writer gave up waiting")
        finally:
            con.execute("COMMIT")
        con.close()
        results = []
        for p in procs:
            out, err = p.communicate(timeout=600)
            results.append((p.returncode, out, err))
        self.assert_all_kept(results, before)
        self.assertEqual(len(transfer_counts(self.db)), 9)

    # writers-3: a trace whose lock is not had within RINGSIM_TRACE_WAIT is
    # a failed run (exit 3, not 2: the input was good), the JSON says so, and
    # the trace keeps its earlier runs.
    def test_lock_held_at_open_is_a_failed_run(self):
        """A trace another process holds in exclusive locking mode cannot
        even be read: past the wait that is a run not had, exit 3, with
        the wait in the message, as a lock not had at the run's start is
        (it was exit 2, 'cannot read: database is locked', as if the trace
        were bad input); run and bench alike, and the trace's runs are
        whole once the lock is let go."""
        self.traced_run(2, 10)
        before = transfer_counts(self.db)
        con = sqlite3.connect(self.db, isolation_level=None, timeout=60)
        con.execute("PRAGMA locking_mode=EXCLUSIVE")
        con.execute("BEGIN EXCLUSIVE")
        try:
            for args in (["-w", 2, "-p", self.model(10)],
                         ["bench", "-w", 2, "-b", 8, "-e", 8, "-n", 1]):
                with self.subTest(args=args):
                    rc, out, err = run_env({"RINGSIM_TRACE_WAIT": "0.5"}, *args,
                                           "--trace", self.db)
                    self.assertEqual((rc, out), (3, ""), err)
                    self.assertEqual(err, f"ringsim: trace {self.db}: cannot read: database "
                                          "is locked (waited 0.5 s for other writers)\n")
        finally:
            con.execute("COMMIT")
            con.close()
        self.assertEqual(transfer_counts(self.db), before)

    def test_lock_timeout_is_a_failed_run(self):
        self.traced_run(2, 10)
        before = transfer_counts(self.db)
        con = sqlite3.connect(self.db, isolation_level=None, timeout=60)
        con.execute("BEGIN IMMEDIATE")
        try:
            rc, out, err = run_env({"RINGSIM_TRACE_WAIT": "1"}, "-w", 2, "-p", self.model(10),
                                   "--trace", self.db, "--json")
        finally:
            con.execute("COMMIT")
            con.close()
        self.assertEqual(rc, 3, err)
        self.assertEqual(err, f"ringsim: trace {self.db}: cannot begin a transaction: database "
                              "is locked (waited 1 s for other writers)\n")
        report = json.loads(out)
        self.assertEqual(report["status"], "failed")
        self.assertEqual(report["error"], err[len("ringsim: "):-1])
        self.assertEqual(report["trace_error"], report["error"])
        self.assertIsNone(report["run_id"])
        self.assertEqual(transfer_counts(self.db), before)
        # a signal while it waits: exit 130, and the message does not claim
        # the whole wait went by
        con = sqlite3.connect(self.db, isolation_level=None, timeout=60)
        con.execute("BEGIN IMMEDIATE")
        try:
            p = subprocess.Popen([RINGSIM, "-w", "2", "-p", self.model(10), "--trace", self.db],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env=dict(os.environ, RINGSIM_TRACE_WAIT="60"))
            self.until_waiting([p])  # readysignal: in the wait, not before
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=30)
        finally:
            con.execute("COMMIT")
            con.close()
        self.assertEqual(p.returncode, 130, err)
        self.assertIn(f"ringsim: trace {self.db}: cannot begin a transaction: database is "
                      "locked (a signal stopped the wait for other writers)\n", err)
        self.assertNotIn("waited", err)
        self.assertEqual(transfer_counts(self.db), before)

    # writers-4: a trace write that fails (here: a file size limit, as a full
    # disk) fails the run: exit 3, the report and the JSON say failed, and
    # the run's row says failed with the error, not running.
    def test_failed_write_fails_the_run(self):
        self.traced_run(2, 10)
        before = transfer_counts(self.db)

        def limit():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

        for as_json in (True, False):
            with self.subTest(json=as_json):
                args = [RINGSIM, "-w", 4, "-p", self.model(1000000), "--segment-bytes", 256,
                        "--trace", self.db] + (["--json"] if as_json else [])
                p = subprocess.run(list(map(str, args)), capture_output=True, text=True,
                                   timeout=600, preexec_fn=limit)
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertEqual(p.stderr.count("\n"), 1, p.stderr)
                self.assertIn(f"ringsim: trace {self.db}: cannot ", p.stderr)
                self.assertIn("is marked failed in the trace, without its rows", p.stderr)
                message = p.stderr[len("ringsim: "):-1]
                if as_json:
                    report = json.loads(p.stdout)
                    self.assertEqual(report["status"], "failed")
                    self.assertEqual(report["error"], message)
                    self.assertEqual(report["trace_error"], message)
                    run_id = report["run_id"]
                else:
                    self.assertIn(f"  status     FAILED: {message}\n", p.stdout)
                    self.assertNotIn("status     ok", p.stdout)
                    run_id = max(transfer_counts(self.db))
                    self.assertIn(f"trace      {self.db}, run {run_id}: its rows were NOT "
                                  "written\n", p.stdout)
                con = sqlite3.connect(self.db)
                status, error = con.execute("SELECT status, error FROM run WHERE run_id = ?",
                                            (run_id,)).fetchone()
                con.close()
                self.assertEqual(status, "failed")
                self.assertTrue(message.startswith(error), (message, error))
                self.assertEqual(transfer_counts(self.db)[run_id][2], 0)
        runs = transfer_counts(self.db)
        for run_id, counts in before.items():
            self.assertEqual(runs[run_id], counts)

    # writers-5: names that are not files ("" and ":memory:" keep nothing;
    # "file:" is a URI to this SQLite; a FIFO) are refused before the run,
    # and nothing is created.
    def test_names_that_are_not_files(self):
        two = os.path.join(EXAMPLES, "two_workers.json")
        for name, message in (("", "not a file name"), (":memory:", "not a file name"),
                              ("file:t.db", "SQLite would read this as a URI"),
                              ("file:t.db?mode=memory", "SQLite would read this as a URI")):
            with self.subTest(name=name):
                rc, out, err = run("-p", two, "--trace", name, cwd=self.dir)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "")
                self.assertEqual(err, f"ringsim: trace '{name}': {message}" +
                                 err.split(message, 1)[1])
                self.assertEqual(err.count("\n"), 1)
                self.assertEqual(os.listdir(self.dir), [])
        # a FIFO (or a device such as /dev/null) would keep nothing, and
        # SQLite would create its journal beside it
        fifo = os.path.join(self.dir, "fifo")
        os.mkfifo(fifo)
        rc, out, err = run("-p", two, "--trace", fifo, cwd=self.dir)
        self.assertEqual(rc, 2, err)
        self.assertEqual(err, f"ringsim: trace {fifo}: cannot open: not a regular file\n")
        self.assertEqual(os.listdir(self.dir), ["fifo"])

    # writers-6: a trace with a damaged last page (random bytes, or zeros) is
    # refused before anything is written: exit 2, byte for byte unchanged,
    # no -wal or -shm left. Both a one-page-per-table trace and one whose
    # transfer table spans many pages.
    def test_damaged_trace_untouched(self):
        two = os.path.join(EXAMPLES, "two_workers.json")
        small = os.path.join(self.dir, "small.db")
        large = os.path.join(self.dir, "large.db")
        for i in range(3):
            self.assertEqual(run("-w", 4, "-p", self.model(100), "--trace", small)[0], 0)
        self.assertEqual(run("-w", 4, "-p", self.model(40000), "--segment-bytes", 64,
                             "--trace", large)[0], 0)
        for source in (small, large):
            for fill in ("random", "zeros"):
                with self.subTest(trace=os.path.basename(source), fill=fill):
                    with open(source, "rb") as f:
                        data = bytearray(f.read())
                    page = 16384
                    data[-page:] = (random.Random(13).randbytes(page) if fill == "random"
                                    else bytes(page))
                    with open(self.db, "wb") as f:
                        f.write(data)
                    before = digest(self.db)
                    rc, out, err = run("-p", two, "--trace", self.db)
                    self.assertEqual(rc, 2, err)
                    self.assertEqual(out, "")
                    self.assertIn(f"ringsim: trace {self.db}: damaged (", err)
                    self.assertTrue(err.endswith("); refusing to touch it\n"), err)
                    self.assertEqual(err.count("\n"), 1)
                    self.assertEqual(digest(self.db), before)
                    self.assertFalse(os.path.exists(self.db + "-wal"))
                    self.assertFalse(os.path.exists(self.db + "-shm"))
        # a file that says it is a trace (application_id, user_version) but
        # lacks one of its tables: refused before the columns and tables
        # a trace from an older ringsim gets are added
        with sqlite3.connect(small) as con:
            app_id, version = (con.execute(f"PRAGMA {p}").fetchone()[0]
                               for p in ("application_id", "user_version"))
        for missing in ("param", "transfer", "result"):
            with self.subTest(missing=missing):
                os.remove(self.db)
                con = sqlite3.connect(self.db)
                con.execute(f"PRAGMA application_id = {app_id}")
                con.execute(f"PRAGMA user_version = {version}")
                for table in ("run", "param", "transfer", "worker", "result"):
                    if table != missing:
                        con.execute(f"CREATE TABLE {table} (x)")
                con.commit()
                con.close()
                before = digest(self.db)
                rc, out, err = run("-p", two, "--trace", self.db)
                self.assertEqual(rc, 2, err)
                self.assertEqual(err, f"ringsim: trace {self.db}: damaged (no {missing} "
                                      "table); refusing to touch it\n")
                self.assertEqual(digest(self.db), before)

    # writers-7: a read-only trace in a writable directory, and a trace in a
    # read-only directory, are refused with no file left behind; once the
    # trace is writable again, the next run appends to it. (As root, whom
    # modes do not stop, ringsim runs as the user nobody.)
    def test_read_only_trace(self):
        prefix = []
        if os.geteuid() == 0:
            if not shutil.which("setpriv"):
                self.skipTest("root without setpriv: cannot run as another user")
            prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        os.chmod(self.dir, 0o777)
        # What the other user runs and reads, copied where it can: the
        # checkout may live in a directory only its owner can enter (a
        # fresh clone in `mktemp -d`, mode 700). (ringsim links
        # libringsim statically: the binary alone runs.)
        bin_dir = os.path.join(self.dir, "bin")
        os.mkdir(bin_dir)
        os.chmod(bin_dir, 0o755)
        ringsim = shutil.copy(RINGSIM, os.path.join(bin_dir, "ringsim"))
        two = shutil.copy(os.path.join(EXAMPLES, "two_workers.json"), bin_dir)
        os.chmod(ringsim, 0o755)
        os.chmod(two, 0o644)

        def as_user(*args):
            p = subprocess.run(prefix + [ringsim, *map(str, args)], capture_output=True,
                               text=True, timeout=600)
            return p.returncode, p.stdout, p.stderr

        rc, _, err = as_user("-p", two, "--trace", self.db)
        self.assertEqual(rc, 0, err)
        if prefix:
            os.chown(self.db, 65534, 65534)
        os.chmod(self.db, 0o444)
        before = digest(self.db)
        rc, out, err = as_user("-p", two, "--trace", self.db)
        self.assertEqual(rc, 2, err)
        self.assertEqual(err, f"ringsim: trace {self.db}: cannot open: the file is not "
                              "writable (Permission denied); refusing to touch it\n")
        self.assertEqual(sorted(os.listdir(self.dir)), ["bin", "t.db"])
        self.assertEqual(digest(self.db), before)
        os.chmod(self.db, 0o644)
        rc, out, err = as_user("-p", two, "--trace", self.db)
        self.assertEqual(rc, 0, err)
        self.assertIn(f"trace      {self.db}, run 2\n", out)
        # a new trace in a directory the user cannot write
        ro = os.path.join(self.dir, "ro")
        os.mkdir(ro, 0o555)
        rc, out, err = as_user("-p", two, "--trace", os.path.join(ro, "t.db"))
        self.assertEqual(rc, 2, err)
        self.assertEqual(err, f"ringsim: trace {ro}/t.db: cannot open: its directory {ro} is "
                              "not writable (Permission denied), and SQLite keeps -wal and "
                              "-shm files there\n")
        self.assertEqual(os.listdir(ro), [])


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
