#!/usr/bin/python3
"""--algo auto end to end: the report's and the trace's per-bucket choice,
every transfer of an auto run against the chosen algorithm's own run, an
old trace getting the bucket_algo table, bench --algo auto's rows, and
`ringsim model --algo all`'s crossovers.

    test_auto.py RINGSIM EXAMPLES [Auto.test_name ...]
"""
import json
import os
import re
import sqlite3
import subprocess
import tempfile
import unittest

import helpers

RINGSIM = None
EXAMPLES = None
# rs_algorithm_t's order: ties go left; auto never chooses gloo-ring
ALGOS = ["ring", "rd", "rhd", "linear", "tree", "gloo-ring"]
NET = ["--net", "latency=50us,bandwidth=1GB/s", "--reduce-rate", "2GB/s"]
# Buckets, DDP's way (last params first; the first bucket closes at 1 MiB,
# then every param is a bucket of its own under --bucket-mb 0.000001):
# 1 MiB, 7 elements, 400001 elements.
MODEL = {"name": "three", "params": [{"name": "big", "shape": [400001]},
                                     {"name": "small", "shape": [7]},
                                     {"name": "first", "shape": [262144]}]}
BUCKETS = ["--bucket-mb", "0.000001"]
# The same three buckets at a tenth of the bytes (listed, as model.json's
# "buckets"), on a network of a tenth of the bandwidth: the same
# bandwidth terms, so the choices still differ by bucket, for a tenth of
# the work a sanitized run pays for every byte it adds and traces.
SMALL = (dict(MODEL, params=[{"name": "big", "shape": [40001]}, {"name": "small", "shape": [7]},
                             {"name": "first", "shape": [26214]}],
              buckets=[["first"], ["small"], ["big"]]),
         ["--net", "latency=50us,bandwidth=100MB/s", "--reduce-rate", "200MB/s"])


def ringsim(*args, cwd=None):
    p = subprocess.run([RINGSIM, *map(str, args)], capture_output=True, text=True,
                       timeout=600, cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def argmin(pred):
    """The eligible algorithm of least prediction, the first on a tie."""
    best = None
    for a in ALGOS:
        if pred.get(a) is not None and (best is None or pred[a] < pred[best]):
            best = a
    return best


class Auto(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.model = os.path.join(self.tmp.name, "three.json")
        with open(self.model, "w") as f:
            json.dump(MODEL, f)
        self.db = os.path.join(self.tmp.name, "t.db")

    def tearDown(self):
        self.tmp.cleanup()

    def run_json(self, W, algo, *extra, small=False):
        if small:
            model = os.path.join(self.tmp.name, "small.json")
            with open(model, "w") as f:
                json.dump(SMALL[0], f)
            layout = SMALL[1]
        else:
            model, layout = self.model, [*NET, *BUCKETS]
        rc, out, err = ringsim("-p", model, "-w", W, "--algo", algo, *layout,
                               "--init", "exact", "--trace", self.db, "--json", *extra)
        self.assertEqual(rc, 0, err)
        return json.loads(out)

    # auto-py-1: at W = 2, 3, 4, 5, 8 the buckets choose different
    # algorithms, each the argmin of the predictions the report prints; the
    # result is exact; the trace's bucket_algo rows say the same; and every
    # transfer of each bucket is one the chosen algorithm makes in its own
    # run of the same model (same phase, step, sender, receiver, region and
    # contributors).
    def test_trace_per_bucket(self):
        for W in (2, 3, 4, 5, 8):
            with self.subTest(W=W):
                rep = self.run_json(W, "auto", small=True)
                self.assertEqual(rep["algo"], "auto")
                self.assertTrue(rep["identical"] and rep["exact"])
                self.assertEqual(rep["auto"]["model"], "net")
                self.assertEqual(rep["auto"]["latency_ns"], 50000)
                chosen = [b["algo"] for b in rep["auto"]["buckets"]]
                self.assertEqual(len(chosen), 3)
                self.assertGreater(len(set(chosen)), 1, chosen)
                for b, bucket in enumerate(rep["auto"]["buckets"]):
                    self.assertEqual(bucket["algo"], argmin(bucket["predicted_ns"]), bucket)
                    self.assertEqual(rep["buckets"][b]["algo"], bucket["algo"])
                rid = rep["run_id"]
                con = sqlite3.connect(self.db)
                self.assertEqual(con.execute("SELECT algo FROM run WHERE run_id = ?",
                                             (rid,)).fetchone()[0], "auto")
                rows = con.execute("SELECT bucket, elems, algo, predicted_json FROM bucket_algo "
                                   "WHERE run_id = ? ORDER BY bucket", (rid,)).fetchall()
                self.assertEqual([r[2] for r in rows], chosen)
                self.assertEqual([r[1] for r in rows], [b["elems"] for b in rep["buckets"]])
                for r, bucket in zip(rows, rep["auto"]["buckets"]):
                    self.assertEqual(json.loads(r[3]), bucket["predicted_ns"])
                cols = ("phase, step, src, dst, chunk, segment, elem_offset, elems, "
                        "contrib_first, contrib_count")
                for algo in set(chosen):
                    own = self.run_json(W, algo, small=True)["run_id"]
                    own_rows = con.execute("SELECT algo FROM bucket_algo WHERE run_id = ?",
                                           (own,)).fetchall()
                    self.assertEqual({r[0] for r in own_rows}, {algo})
                    for b in (b for b, a in enumerate(chosen) if a == algo):
                        q = f"SELECT {cols} FROM transfer WHERE run_id = ? AND bucket = ? AND iter = 0"
                        mine = sorted(con.execute(q, (rid, b)).fetchall())
                        theirs = sorted(con.execute(q, (own, b)).fetchall())
                        self.assertTrue(mine, f"W={W} bucket {b}: no transfers")
                        self.assertEqual(mine, theirs, f"W={W} bucket {b} ({algo})")

                con.close()

    # auto-py-2: the text report names the model auto chose by, one line per
    # bucket size with every algorithm's prediction, and the chosen one has
    # the least printed prediction.
    def test_report_text(self):
        rc, out, err = ringsim("-p", self.model, "-w", 4, "--algo", "auto", *NET, *BUCKETS,
                               "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertIn("auto       by --net's network: latency 50.000 us, bandwidth 1.000 GB/s, "
                      "reduce 2.000 GB/s", out)
        lines = out.splitlines()
        head = next(i for i, l in enumerate(lines) if "predicted us, chosen" in l)
        self.assertEqual(lines[head].split()[2:8], ALGOS)
        rows = []
        for l in lines[head + 1:]:
            m = re.match(r"\s+(\S+ \S+)\s+((?:\S+\s+){6})(\w+) \((\d+) buckets?\)$", l)
            if not m:
                break
            values = [None if v == "-" else float(v) for v in m.group(2).split()]
            rows.append((m.group(1), values, m.group(3), int(m.group(4))))
        self.assertEqual(len(rows), 3, out)
        for size, values, chosen, count in rows:
            self.assertEqual(count, 1)
            self.assertIsNone(values[ALGOS.index("gloo-ring")], (size, values))  # never eligible
            least = min(v for v in values if v is not None)
            self.assertEqual(values[ALGOS.index(chosen)], least, (size, values, chosen))
        self.assertGreater(len({r[2] for r in rows}), 1)
        self.assertRegex(out, r"buckets run: \w+ \d+, \w+ \d+")
        # auto without --net measures this machine
        rc, out, err = ringsim("-p", self.model, "-w", 3, "--algo", "auto", *BUCKETS, "--no-trace",
                               "--init", "exact")
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"auto       by this machine, measured: latency \d+\.\d+ us")

    # auto-py-3: what auto cannot do is refused with one line and exit 2.
    def test_refusals(self):
        for args, what in ((["--explain"], "--explain"),
                           (["--inject", "crash:worker=1,step=0"], "inject")):
            rc, out, err = ringsim("-p", self.model, "-w", 4, "--algo", "auto", "--no-trace", *args)
            self.assertEqual(rc, 2, err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn(what, err)
            self.assertIn("auto", err)
        rc, out, err = ringsim("model", "-p", self.model, "--net", "latency=1us,bandwidth=1GB/s",
                               "--algo", "auto")
        self.assertEqual(rc, 2, err)
        self.assertIn("--algo all", err)

    # auto-py-4: a trace written before bucket_algo existed gets the table
    # when ringsim opens it, and keeps its runs.
    def test_old_trace_gets_table(self):
        rc, out, err = ringsim("-p", self.model, "-w", 2, "--trace", self.db)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(self.db)
        con.execute("DROP TABLE bucket_algo")  # as an older ringsim wrote it
        con.commit()
        con.close()
        rep = self.run_json(4, "auto")
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute("SELECT count(*) FROM run").fetchone()[0], 2)
        rows = con.execute("SELECT run_id, algo FROM bucket_algo ORDER BY bucket").fetchall()
        self.assertEqual(rows, [(rep["run_id"], b["algo"]) for b in rep["auto"]["buckets"]])
        con.close()

    # auto-py-5: bench --algo auto names, per size, the algorithm it ran, one
    # of the five, exact; the text rows end in "auto: NAME".
    def test_bench_auto(self):
        rc, out, err = ringsim("bench", "--algo", "auto", "-w", 3, "-b", 8, "-e", "32K", "-f", 8,
                               "-n", 2, "--warmup", 1, "--json")
        self.assertEqual(rc, 0, err)
        rows = [json.loads(l) for l in out.splitlines()]
        self.assertEqual([r["size"] for r in rows], [8, 64, 512, 4096, 32768])
        for r in rows:
            self.assertEqual(r["algo"], "auto")
            self.assertIn(r["chosen"], ALGOS)
            self.assertEqual(r["wrong"], 0)
        rc, out, err = ringsim("bench", "--algo", "auto", "-w", 4, "-b", 8, "-e", 64, "-f", 8,
                               "-n", 2, "--warmup", 1)
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"# auto, W=4: this machine measured: latency \d+\.\d+ us")
        data = [l for l in out.splitlines() if l and not l.startswith("#")]
        self.assertEqual(len(data), 2)
        for l in data:
            self.assertRegex(l, r"  auto: (ring|rd|rhd|linear|tree)$")

    # auto-py-6: model --algo all's crossovers: at each, the printed
    # predictions one element below make `from` the best and at it `to`;
    # they follow one another from the best at the smallest size, within
    # the range; the text prints the same.
    def test_model_crossovers(self):
        for W, net, params in ((4096, "latency=5us,bandwidth=25GB/s", "gpt2_small.json"),
                               (4, "latency=20us,bandwidth=1GB/s", "resnet18.json")):
            args = ["model", "-p", os.path.join(EXAMPLES, params), "-w", W, "--net", net,
                    "--algo", "all", "--bucket-mb", 0]
            rc, out, err = ringsim(*args, "--json")
            self.assertEqual(rc, 0, err)
            c = json.loads(out)["crossovers"]
            self.assertEqual(c["min_bytes"], 8)
            self.assertGreater(len(c["changes"]), 1)
            prev, last = c["best_at_min"], c["min_bytes"]
            for x in c["changes"]:
                self.assertNotEqual(x["from"], x["to"])
                self.assertEqual(x["from"], prev)
                self.assertGreater(x["bytes"], last)
                self.assertLessEqual(x["bytes"], c["max_bytes"])
                self.assertEqual(argmin(x["predicted_ns_one_element_below"]), x["from"], x)
                self.assertEqual(argmin(x["predicted_ns_at"]), x["to"], x)
                prev, last = x["to"], x["bytes"]
            rc, text, err = ringsim(*args)
            self.assertEqual(rc, 0, err)
            for x in c["changes"]:
                self.assertRegex(text, rf"from\s+{x['bytes']} B  {x['to']}\s")


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
