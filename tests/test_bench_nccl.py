#!/usr/bin/python3
"""`ringsim bench` as nccl-tests' all_reduce_perf: its flags, its table
read as scripts read it (fields by position, the header line, the last
field of `# Avg bus bandwidth`), its footer, -J's JSON, and the refusals
of its flags that mean nothing here.

    test_bench_nccl.py RINGSIM [BenchNccl.test_name ...]
"""
import json
import os
import sqlite3
import tempfile
import unittest

import helpers

RINGSIM = None

# nccl-tests' column names and widths (writeResultHeader, v2.19.6)
NAMES = ["size", "count", "type", "redop", "root",
         "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"]
HEADER = ("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
          % tuple(NAMES))
FAST = ["-n", 2, "--warmup", 0]


def bench(*args, cwd=None):
    return helpers.run("bench", *args, cwd=cwd)


def table(out):
    """The rows as a script for all_reduce_perf reads them: every line not
    starting with '#', split on whitespace."""
    return [line.split() for line in out.splitlines()
            if line.strip() and not line.startswith("#")]


def avg_busbw(out):
    """The last field of '# Avg bus bandwidth', as scripts take it."""
    line = [l for l in out.splitlines() if "Avg bus bandwidth" in l][0]
    return float(line.split()[-1])


def printed(text):
    """Half the last place of a number as the table printed it, and a
    little more: how far the exact value may lie from it."""
    mantissa, _, exponent = text.partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals) * (1 + 1e-9)


class BenchNccl(unittest.TestCase):
    # nccl-1: nccl-tests' own quick example (sizes cut short): -g 8 is W,
    # and a row has nccl-tests' 13 fields in its order: size count type
    # redop root, then time algbw busbw #wrong out-of-place and in-place;
    # the header line names them so, and the footer closes as nccl-tests'.
    def test_quick_example_columns(self):
        rc, out, err = bench("-b", 8, "-e", "128", "-f", 2, "-g", 8, *FAST)
        self.assertEqual(rc, 0, err)
        self.assertIn("on 8 worker threads", out)
        header = [l for l in out.splitlines() if l.split()[:3] == ["#", "size", "count"]]
        self.assertEqual(len(header), 1, out)
        self.assertTrue(header[0].startswith(HEADER), header[0])
        self.assertEqual(header[0].split()[1:14], NAMES)
        self.assertIn("out-of-place                       in-place", out)
        rows = table(out)
        self.assertEqual([int(f[0]) for f in rows], [8, 16, 32, 64, 128])
        W = 8
        for f in rows:
            self.assertEqual(int(f[1]), int(f[0]) // 4)
            self.assertEqual((f[2], f[3], f[4]), ("float", "sum", "-1"))
            for t, alg, bus, wrong in (f[5:9], f[9:13]):
                self.assertGreater(float(t), 0)
                self.assertAlmostEqual(float(alg), int(f[0]) / (float(t) * 1e3), delta=0.006)
                self.assertAlmostEqual(float(bus), int(f[0]) / (float(t) * 1e3) * 2 * (W - 1) / W, delta=0.006)
                self.assertEqual(wrong, "0")
            # ringsim's own figures after: ref, time/ref
            self.assertGreater(float(f[13]), 0)
        # the row is nccl-tests' fixed-width text
        line = [l for l in out.splitlines() if l and not l.startswith("#")][0]
        self.assertTrue(line.startswith("%12d  %12d  %8s  %6s  %6s  " % (8, 2, "float", "sum", "-1")), line)
        lines = out.splitlines()
        self.assertEqual(lines[-4], "# Out of bounds values : 0 OK")
        self.assertTrue(lines[-3].startswith("# Avg bus bandwidth    : "), lines[-3])
        self.assertEqual(lines[-2:], ["#", "# Collective test concluded: all_reduce_perf"])
        # the average is over both blocks of every row, as nccl-tests'
        busbw = [float(f[7]) for f in rows] + [float(f[11]) for f in rows]
        self.assertAlmostEqual(avg_busbw(out), sum(busbw) / len(busbw), delta=0.006)

    # nccl-2: the script idiom that crashed ('could not convert string to
    # float') or read busbw 0: float(fields[7]) is the out-of-place busbw and
    # fields[8] its #wrong, with --algo all's extra name after field 12.
    def test_script_idioms(self):
        rc, out, err = bench("-b", "4K", "-e", "16K", "-f", 4, "-g", 2, "--algo", "all", *FAST)
        self.assertEqual(rc, 0, err)
        rows = table(out)
        self.assertGreater(len(rows), 2)
        for fields in rows:
            busbw_oop, busbw_ip = float(fields[7]), float(fields[11])
            algbw_oop = float(fields[6])
            self.assertAlmostEqual(busbw_oop, algbw_oop, delta=0.006)  # W=2: 2(W-1)/W = 1
            self.assertGreaterEqual(busbw_ip, 0)
            self.assertEqual((fields[8], fields[12]), ("0", "0"))
            self.assertIn(fields[15], ("ring", "rd", "rhd", "linear", "tree", "gloo-ring"))

    # nccl-3: the blocks are two runs of the in-place all-reduce: the trace
    # holds two runs per size.
    def test_two_runs_per_size(self):
        with tempfile.TemporaryDirectory() as d:
            db = os.path.join(d, "t.db")
            rc, out, err = bench("-g", 2, "-b", 64, "-e", 128, *FAST, "--trace", db)
            self.assertEqual(rc, 0, err)
            con = sqlite3.connect(db)
            runs = con.execute("SELECT bytes FROM run ORDER BY run_id").fetchall()
            con.close()
            self.assertEqual(runs, [(64,), (64,), (128,), (128,)])
        rc, out, _ = bench("--help")
        self.assertEqual(rc, 0)
        self.assertIn("the out-of-place block is a first run of it", out)

    # nccl-4: -c 0 reports no #wrong (N/A in both blocks, 0 OK), -o each
    # op by nccl-tests' name, -a 0..3 (one time here), -T seconds, -t 1;
    # -f 1 steps by -i's bytes (1M unless given), as nccl-tests does.
    def test_flags(self):
        for extra, sizes in (([], ["1048576", "2097152", "3145728"]),
                             (["-i", "512K"], ["1048576", "1572864", "2097152",
                                               "2621440", "3145728"])):
            rc, out, err = bench("-g", 2, "-b", "1M", "-e", "3M", "-f", 1, *extra, *FAST)
            self.assertEqual(rc, 0, err)
            self.assertEqual([f[0] for f in table(out)], sizes)
        rc, out, err = bench("-g", 3, "-b", 64, "-e", 64, *FAST, "-c", 0)
        self.assertEqual(rc, 0, err)
        f = table(out)[0]
        self.assertEqual((f[8], f[12]), ("N/A", "N/A"))
        self.assertIn("# Out of bounds values : 0 OK", out)
        for op in ("sum", "prod", "min", "max", "avg"):
            rc, out, err = bench("-g", 3, "-b", 64, "-e", 64, *FAST, "-o", op)
            self.assertEqual(rc, 0, err)
            f = table(out)[0]
            self.assertEqual((f[3], f[8], f[12]), (op, "0", "0"))
        for a in range(4):
            rc, out, err = bench("-g", 2, "-b", 64, "-e", 64, *FAST, "-a", a, "-T", 5, "-t", 1)
            self.assertEqual(rc, 0, err)
            self.assertEqual(len(table(out)), 1)
        rc, out, err = bench("-g", 2, "-b", 64, "-e", 64, *FAST, "-d", "double", "--json")
        self.assertEqual(rc, 0, err)
        row = json.loads(out)
        self.assertEqual((row["type"], row["count"], row["root"]), ("double", 8, -1))
        self.assertEqual(set(row["out_of_place"]),
                         {"time_us", "min_time_us", "algbw_gbs", "busbw_gbs", "wrong", "warmup", "iters"})

    # nccl-5: -J FILE.json writes nccl-tests' JSON: its keys, its rows
    # agreeing with the table; an unwritable place is refused before the
    # sweep, exit 2, and nothing is left behind.
    def test_json_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            rc, out, err = bench("-g", 4, "-b", 64, "-e", 256, "-f", 4, *FAST, "-J", path)
            self.assertEqual(rc, 0, err)
            self.assertEqual(os.listdir(d), ["r.json"])
            with open(path) as fp:
                doc = json.load(fp)
            for key in ("version", "start_time", "args", "env", "nccl_version", "config",
                        "results", "out_of_bounds", "average_bus_bandwidth", "errors", "end_time"):
                self.assertIn(key, doc)
            self.assertEqual(doc["version"], 3)
            self.assertIn("-J", doc["args"])
            c = doc["config"]
            self.assertEqual((c["nthreads"], c["ngpus"], c["minimum_bytes"], c["maximum_bytes"],
                              c["step_factor"], c["warmup_iters"], c["iterations"], c["validation"]),
                             (1, 4, 64, 256, 4, 0, 2, 1))
            self.assertEqual(len(c["devices"]), 4)
            rows = table(out)
            self.assertEqual(len(doc["results"]), len(rows))
            for r, f in zip(doc["results"], rows):
                self.assertEqual((r["size"], r["count"], r["type"], r["redop"], r["root"]),
                                 (int(f[0]), int(f[1]), "float", "sum", "    -1"))
                for key, at in (("out_of_place", 5), ("in_place", 9)):
                    b = r[key]
                    self.assertEqual(set(b), {"time", "alg_bw", "bus_bw", "nwrong"})
                    # the table rounds to what its column holds (two
                    # decimals, fewer for a wide value: 10055.0)
                    self.assertAlmostEqual(b["time"], float(f[at]), delta=printed(f[at]))
                    self.assertAlmostEqual(b["bus_bw"], float(f[at + 2]),
                                           delta=printed(f[at + 2]))
                    self.assertEqual(b["nwrong"], 0)
                self.assertEqual(r["actual_iterations"], 2)
            self.assertEqual(doc["out_of_bounds"], {"count": 0, "okay": "true"})
            self.assertAlmostEqual(doc["average_bus_bandwidth"]["bandwidth"], avg_busbw(out),
                                   delta=1e-5 + 1e-5 * avg_busbw(out))
            # -c 0: nwrong null, validation 0
            rc, out, err = bench("-g", 2, "-b", 64, "-e", 64, *FAST, "-c", 0, "-J", path)
            self.assertEqual(rc, 0, err)
            with open(path) as fp:
                doc = json.load(fp)
            self.assertEqual(doc["config"]["validation"], 0)
            self.assertIsNone(doc["results"][0]["in_place"]["nwrong"])
            for args, message in (
                    (["-J", os.path.join(d, "no", "r.json")], "--output_file '"),
                    (["-J", os.path.join(d, "r.txt")], "nccl-tests writes JSON only to a name ending .json"),
                    (["-w", "2,3", "-J", path], "give one -w (or -g)")):
                rc, out, err = bench("-b", 64, "-e", 64, *FAST, *args)
                self.assertEqual(rc, 2, err)
                self.assertIn(message, err)
                self.assertEqual(err.count("\n"), 1, err)
                self.assertEqual(out, "")
            self.assertEqual(sorted(os.listdir(d)), ["r.json"])

    # nccl-6: flags with no meaning here, -g with -w, -t above 1 and
    # nccl-tests' --warmup_iters: one line naming the flag and what to
    # do, exit 2, before anything runs.
    def test_refusals(self):
        cases = [(["-g", 4, "-w", 4], "--ngpus (-g) and --workers (-w) both give W"),
                 (["-t", 2, "-g", 4], "--nthreads 2: one process drives every worker here"),
                 (["--warmup_iters", 5], "--warmup_iters (nccl-tests' -w) is --warmup here"),
                 (["-c", 2], "--check '2': expected an integer in 0..1"),
                 (["-a", 4], "--average '4': expected an integer in 0..3"),
                 (["-o", "mulsum"], "--op 'mulsum': expected"),
                 (["-p", 1], "-p (nccl-tests' --parallel_init)"),
                 (["-r", 0], "-r (nccl-tests' --root) names a root: an all-reduce has none"),
                 (["--agg_iters", 2], "--agg_iters (nccl-tests' -m)")]
        for letter in "mNpzyGCSRxDMuIK":
            cases.append((["-" + letter, 1], "-%s (nccl-tests' --" % letter))
        for args, message in cases:
            rc, out, err = bench(*args)
            self.assertEqual(rc, 2, (args, err))
            self.assertIn("bench: " + message, err)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertEqual(out, "")
        # -o and -T are bench's alone: a run does not take them
        rc, out, err = helpers.run("-p", "x.json", "-o", "sum")
        self.assertEqual(rc, 2)
        self.assertIn("unknown option '-o'", err)


def main():
    helpers.main(globals(), "RINGSIM")


if __name__ == "__main__":
    main()
