#!/usr/bin/python3
"""`ringsim bench`: nccl-tests' columns, the sweep, #wrong, JSON Lines,
tracing, and usage errors.

    test_bench.py RINGSIM [Bench.test_name ...]
"""
import json
import os
import sqlite3
import subprocess
import tempfile
import unittest

import helpers

RINGSIM = None


def bench(*args, cwd=None):
    p = subprocess.run([RINGSIM, "bench", *map(str, args)], capture_output=True, text=True,
                       timeout=600, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


class Bench(unittest.TestCase):
    # bench-1: the text table: a header per W, one row per size from -b to -e
    # by -f, nccl-tests' columns, busbw = algbw x 2(W-1)/W, no #wrong.
    def test_table(self):
        rc, out, err = bench("-w", "2,3", "-b", 8, "-e", "8K", "-f", 4, "-n", 3,
                             "--warmup", 1)
        self.assertEqual(rc, 0, err)
        self.assertIn("#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong", out)
        rows = [l.split() for l in out.splitlines() if l and not l.startswith("#")]
        sizes = [8, 32, 128, 512, 2048, 8192]
        self.assertEqual([int(r[0]) for r in rows], sizes * 2)
        self.assertEqual(out.count("# ringsim bench: ring all-reduce on 2 worker threads"), 1)
        self.assertEqual(out.count("# ringsim bench: ring all-reduce on 3 worker threads"), 1)
        self.assertEqual(out.count("copying queues, NCCL's slice loop"), 2)  # the defaults
        for i, r in enumerate(rows):
            W = 2 if i < len(sizes) else 3
            self.assertEqual(len(r), 15, r)
            size, count, typ, op, _, _, _, _, _, t, algbw, busbw, wrong, ref, ratio = r
            self.assertEqual(int(count), int(size) // 4)
            self.assertEqual((typ, op, wrong), ("float", "sum", "0"))
            self.assertGreater(float(t), 0)
            self.assertAlmostEqual(float(algbw), int(size) / (float(t) * 1e3), delta=0.006)
            self.assertAlmostEqual(float(busbw), int(size) / (float(t) * 1e3) * 2 * (W - 1) / W, delta=0.006)
            if float(ref) >= 1:  # enough printed digits to recompute the ratio
                self.assertAlmostEqual(float(ratio), float(t) / float(ref), delta=0.01 * float(ratio) + 0.01)
        # nccl-tests' closing lines: the #wrong total, then busbw averaged
        # over every row
        self.assertEqual(out.splitlines()[-4], "# Out of bounds values : 0 OK")
        last = out.splitlines()[-3]
        self.assertTrue(last.startswith("# Avg bus bandwidth    : "), last)
        mean = sum(float(r[7]) + float(r[11]) for r in rows) / (2 * len(rows))
        self.assertAlmostEqual(float(last.split(":")[1]), mean, delta=0.005 + 1e-3 * mean)

    # bench-2: --json prints one object per size; -i steps by bytes; --op avg,
    # --direct and --loop steps work, still exact.
    def test_json_lines(self):
        rc, out, err = bench("--workers", 4, "-b", 4096, "-e", 16384, "-i", 4096, "-n", 2,
                             "--warmup", 0, "--json", "--op", "avg", "--direct", "--loop", "steps")
        self.assertEqual(rc, 0, err)
        rows = [json.loads(l) for l in out.splitlines()]
        self.assertEqual([r["size"] for r in rows], [4096, 8192, 12288, 16384])
        for r in rows:
            self.assertEqual((r["workers"], r["type"], r["redop"], r["wrong"]), (4, "float", "avg", 0))
            for key in ("time_us", "min_time_us", "algbw_gbs", "busbw_gbs", "ref_us", "time_over_ref"):
                self.assertIn(key, r)
            self.assertLessEqual(r["min_time_us"], r["time_us"] + 1e-9)
        # ref is the direct mean timed on one thread before the run, even
        # for one timed iteration (the run's own check would make it after)
        rc, out, err = bench("--workers", 4, "-b", "1M", "-e", "1M", "-n", 1, "--warmup", 0, "--json")
        self.assertEqual(rc, 0, err)
        self.assertGreater(json.loads(out)["ref_us"], 0, out)

    # bench-2c: --algo all runs every algorithm at every size, each exact
    # (#wrong 0), and marks exactly the fastest of each size; --algo NAME
    # runs one; an unknown name and --loop slices with all are usage errors.
    def test_algorithms(self):
        rc, out, err = bench("--workers", 5, "-b", 64, "-e", 4096, "-f", 64, "-n", 2,
                             "--warmup", 0, "--json", "--algo", "all")
        self.assertEqual(rc, 0, err)
        rows = [json.loads(l) for l in out.splitlines()]
        algos = ["ring", "rd", "rhd", "linear", "tree", "gloo-ring"]
        self.assertEqual([(r["size"], r["algo"]) for r in rows],
                         [(size, a) for size in (64, 4096) for a in algos])
        for size in (64, 4096):
            these = [r for r in rows if r["size"] == size]
            self.assertEqual(sum(r["fastest"] for r in these), 1)
            best = min(these, key=lambda r: r["time_us"])
            self.assertTrue(best["fastest"])
            self.assertEqual([r["wrong"] for r in these], [0] * 6)
        rc, out, err = bench("--workers", 3, "-b", 64, "-e", 64, "-n", 2, "--warmup", 0,
                             "--algo", "rhd")
        self.assertEqual(rc, 0, err)
        self.assertIn("# ringsim bench: rhd all-reduce on 3 worker threads", out)
        rc, out, err = bench("--algo", "ringg")
        self.assertEqual(rc, 2)
        self.assertIn("expected ring, rd, rhd, linear, tree, gloo-ring, hier, hier:rd, hier:rhd, nvls, nvlstree, auto or all", err)
        rc, out, err = bench("--algo", "all", "--loop", "slices")
        self.assertEqual(rc, 2)
        self.assertIn("--loop slices is the ring's", err)

    # bench-2b: -d takes nccl-tests' type names: double moves 8-byte
    # elements (count = size / 8) and half 2-byte ones, still exact.
    def test_datatypes(self):
        for name, size in (("double", 8), ("half", 2), ("bfloat16", 2), ("float", 4)):
            rc, out, err = bench("--workers", 3, "-b", 4096, "-e", 65536, "-f", 16, "-n", 2,
                                 "--warmup", 0, "--json", "-d", name)
            self.assertEqual(rc, 0, err)
            rows = [json.loads(l) for l in out.splitlines()]
            self.assertEqual([(r["size"], r["count"]) for r in rows],
                             [(4096, 4096 // size), (65536, 65536 // size)])
            for r in rows:
                self.assertEqual((r["type"], r["wrong"]), (name, 0))

    # bench-3: --trace records every size's run (tracing is off by default).
    def test_trace(self):
        with tempfile.TemporaryDirectory() as d:
            db = os.path.join(d, "b.db")
            rc, _, err = bench("--workers", 2, "-b", 64, "-e", 256, "-n", 2, "--warmup", 1,
                               "--trace", db)
            self.assertEqual(rc, 0, err)
            con = sqlite3.connect(db)
            runs = con.execute("SELECT bytes, status FROM run ORDER BY run_id").fetchall()
            self.assertEqual(runs, [(64, "ok"), (64, "ok"), (128, "ok"), (128, "ok"), (256, "ok"), (256, "ok")])
            # 3 iterations of 2 transfers per worker
            self.assertEqual(con.execute("SELECT count(*), max(iter) FROM transfer WHERE run_id = 1").fetchone(),
                             (2 * 2 * 3, 2))
            con.close()
            quiet = os.path.join(d, "quiet")
            os.mkdir(quiet)
            rc, _, err = bench("--workers", 2, "-b", 64, "-e", 64, "-n", 1, cwd=quiet)
            self.assertEqual(rc, 0, err)
            self.assertEqual(os.listdir(quiet), [], "bench writes no trace unless asked")

    # bench-4: usage errors are one line and exit 2, and name the option by
    # its long name however it was given (short, long, abbreviated, with =),
    # as every mode does (test_cli's cli-28): one mistake, one message.
    def test_usage_errors(self):
        sizes = "(K, M, G suffixes)"  # as every mode says it: one message
        for args, message in ((["--workers", 0], "bench: --workers '0': expected W or a list"),
                              (["-w", "4,x"], "bench: --workers '4,x': expected W or a list"),
                              (["-b", "1M", "-e", "1K"], "bench: --maxbytes is smaller than --minbytes"),
                              (["-b", 2], f"bench: --minbytes '2': expected a size from 4 to 1024G {sizes}"),
                              (["--minbytes", "x"], "bench: --minbytes 'x': expected a size"),
                              (["-e", "1Q"], "bench: --maxbytes '1Q': expected a size"),
                              (["--maxbytes=3"], "bench: --maxbytes '3': expected a size"),
                              (["-i", "x"], f"bench: --stepbytes 'x': expected a size from 0 to 1024G {sizes}"),
                              (["--stepbytes", "-1"], "bench: --stepbytes '-1': expected a size"),
                              (["-f", 0], "bench: --stepfactor '0': expected an integer in 1..1024"),
                              (["--stepfactor", 1025], "bench: --stepfactor '1025': expected an integer in 1..1024"),
                              (["-n", 0], "bench: --iters '0': expected an integer in 1..1000000"),
                              (["-n0"], "bench: --iters '0': expected an integer in 1..1000000"),
                              (["--iters=0"], "bench: --iters '0': expected an integer in 1..1000000"),
                              (["--warmup", -1], "bench: --warmup '-1': expected an integer in 0..1000000"),
                              (["--warm", -1], "bench: --warmup '-1': expected an integer in 0..1000000"),
                              (["--bogus"], "bench: unknown option '--bogus'"),
                              (["--params", "m.json"], "bench: --params does not apply to a sweep"),
                              (["--op", "median"], "bench: --op 'median': expected sum, avg, min"),
                              (["-d", "int8"], "bench: --datatype 'int8': expected float, double"),
                              (["--datatype", "int8"], "bench: --datatype 'int8': expected float, double"),
                              (["--segment-bytes", 2], f"bench: --segment-bytes '2': expected a size from 4 to 1G {sizes}"),
                              (["--slots", 0], "bench: --slots '0': expected an integer in 1..1024"),
                              (["--timeout", 0], "bench: --timeout '0': expected seconds in (0, 1e6]"),
                              (["--loop", "ring"], "bench: --loop 'ring': expected steps or slices")):
            rc, out, err = bench(*args)
            self.assertEqual(rc, 2, args)
            self.assertIn(message, err)
            self.assertEqual(err.count("\n"), 1, err)
        rc, out, err = bench("--workers", "2\x1b[31m")
        self.assertEqual(rc, 2)
        self.assertNotIn("\x1b", err)
        rc, out, _ = bench("--help")
        self.assertEqual(rc, 0)
        self.assertIn("--stepfactor", out)

    # bench-5: without -n a time budget cuts the iterations of a size whose
    # iterations are slow (W=512 and 1024: 0.2 to 1 s each, so 5 + 20 would
    # take 5 to 25 s): the warm-up stops after 1 s, the timed iterations fit in
    # 2 s; the table says so in a # line, JSON gives the counts, and stderr
    # shows the progress of a size that runs longer than a second. An
    # explicit -n and --warmup are honoured.
    def test_time_budget_and_progress(self):
        rc, out, err = bench("-w", 512, "-b", 8, "-e", 8)
        self.assertEqual(rc, 0, err)
        self.assertIn("# time budget per size: 1 s of warm-up, 2 s of timed iterations", out)
        cut = [l for l in out.splitlines() if l.startswith("# 8 B: ")]
        self.assertEqual(len(cut), 1, out)
        self.assertTrue(cut[0].endswith("timed iterations (the time budget)"), cut)
        self.assertRegex(err, r"ringsim: bench: W=512, 8 B: \d+ of \d+ (warm-up|timed) "
                              r"iterations done, \d+ s so far\n")
        rc, out, err = bench("-w", 512, "-b", 8, "-e", 8, "--json", "-n", 2, "--warmup", 1)
        self.assertEqual(rc, 0, err)
        row = json.loads(out)
        self.assertEqual((row["warmup"], row["iters"]), (1, 2))
        # fast sizes are not cut, and say nothing on stderr
        rc, out, err = bench("-w", 2, "-b", 8, "-e", 64)
        self.assertEqual(rc, 0, err)
        self.assertEqual(err, "")
        self.assertNotIn("(the time budget)", out)

    # The warm-up's cut too: W=1024 (about 0.7 s an iteration on a quiet
    # machine: four take well over the 1 s budget; at W=512 five could fit
    # in it). Optimized build only: the same cut as above, at twice the
    # threads (a TSan run of it took 45 s).
    def test_time_budget_cuts_the_warmup(self):
        rc, out, err = bench("-w", 1024, "-b", 8, "-e", 8, "--json")
        self.assertEqual(rc, 0, err)
        row = json.loads(out)
        self.assertGreaterEqual(row["warmup"], 1)
        self.assertLess(row["warmup"], 5, row)
        self.assertGreaterEqual(row["iters"], 1)
        self.assertLess(row["iters"], 20, row)


def main():
    helpers.main(globals(), "RINGSIM")


if __name__ == "__main__":
    main()
