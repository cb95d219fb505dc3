#!/usr/bin/python3
"""Reliability end to end: outputs that would overwrite an input or the
trace are refused before anything runs; a failure after the run started is
exit 3; SIGINT and SIGTERM stop a run cleanly (no temporary file left, the
trace says "interrupted", exit 130 and 143).

    test_reliability.py RINGSIM EXAMPLES_DIR [Reliability.test_name ...]
"""
import hashlib
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

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
                            "is worker 1's grads file (--grads 'g{r}.st')",
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
    global RINGSIM, EXAMPLES
    if len(sys.argv) < 3:
        sys.exit("usage: test_reliability.py RINGSIM EXAMPLES_DIR [Reliability.test_name ...]")
    RINGSIM, EXAMPLES = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[3:]])


if __name__ == "__main__":
    main()
