#!/usr/bin/python3
"""The teaching features end to end: --explain against hand-reviewed golden
narrations, the simulated network (--net) in the report and the trace, and
`ringsim model`.

    test_teaching.py RINGSIM EXAMPLES_DIR GOLDEN_DIR [Teaching.test_name ...]
"""
import json
import os
import sqlite3
import tempfile
import unittest

import helpers

RINGSIM = EXAMPLES = GOLDEN = None
NET = "latency=5us,bandwidth=10GB/s"


run = helpers.run


class Teaching(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.db = os.path.join(self.tmp.name, "t.db")

    def tearDown(self):
        self.tmp.cleanup()

    def narration(self, *args):
        rc, out, err = run(*args, "--explain", "--no-trace")
        self.assertEqual(rc, 0, err)
        return out[:out.index("\nringsim ")] + "\n"

    # teach-1: --explain narrates W=2, 3 and 4 of the ring, W=3 and 4 of
    # every other algorithm and W=6 of rd and rhd (two workers folded in)
    # exactly as the reviewed golden files say, then runs the all-reduce
    # (the answer follows).
    def test_explain_golden(self):
        three = ["-p", os.path.join(GOLDEN, "three.json"), "-w", 3]
        four = ["-p", os.path.join(GOLDEN, "four.json"), "-w", 4, "--op", "sum"]
        cases = [("explain_w2.txt", ["-p", os.path.join(EXAMPLES, "two_workers.json")]),
                 ("explain_w3.txt", three), ("explain_w4.txt", four)]
        for algo in ("rd", "rhd", "linear", "tree"):
            cases += [(f"explain_{algo}_w3.txt", three + ["--algo", algo, "--init", "exact"]),
                      (f"explain_{algo}_w4.txt", four + ["--algo", algo, "--init", "exact"])]
        for algo in ("rd", "rhd"):
            cases.append((f"explain_{algo}_w6.txt", ["-p", os.path.join(GOLDEN, "four.json"),
                                                     "-w", 6, "--algo", algo, "--init", "exact"]))
        for golden, args in cases:
            with self.subTest(golden=golden):
                with open(os.path.join(GOLDEN, golden)) as f:
                    want = f.read()
                self.assertEqual(self.narration(*args), want)
        rc, out, _ = run("-p", os.path.join(EXAMPLES, "two_workers.json"), "--explain", "--no-trace")
        self.assertIn("  w: [2, 3]\n", out)
        rc, out, err = run("-p", os.path.join(EXAMPLES, "mlp.json"), "-w", 9, "--explain", "--no-trace")
        self.assertEqual(rc, 2)
        self.assertEqual(err, "ringsim: --explain narrates 1 to 8 workers, not 9\n")
        for algo in ("rd", "tree"):
            rc, out, err = run("-p", os.path.join(EXAMPLES, "mlp.json"), "-w", 9, "--algo", algo,
                               "--explain", "--trace", self.db)
            self.assertEqual((rc, out), (2, ""), algo)
            self.assertIn("--explain narrates 1 to 8 workers, not 9", err)
            self.assertFalse(os.path.exists(self.db), "refused before anything runs")

    @staticmethod
    def narrated_values(text, workers):
        """Each worker's values in the narration's last table, flat."""
        rows = text[text.rindex("  values\n") + len("  values\n"):].splitlines()[:workers]
        values = []
        for w, row in enumerate(rows):
            prefix = f"  worker {w}  "
            assert row.startswith(prefix), row
            cells = [c for c in row[len(prefix):].strip().split("  ") if c.strip()]
            values.append([float(v) for c in cells if c.strip() != "-"
                           for v in c.strip().split(", ")])
        return values

    # teach-10: the two-worker example narrates right for every algorithm:
    # w=[1,2] and [3,4] start the table, every worker ends holding [2, 3]
    # with every region complete, and the run's answer follows.
    def test_explain_two_workers_every_algorithm(self):
        two = os.path.join(EXAMPLES, "two_workers.json")
        for algo in ("ring", "rd", "rhd", "linear", "tree", "gloo-ring"):
            with self.subTest(algo=algo):
                text = self.narration("-p", two, "--algo", algo)
                start = text[text.index("\nstart\n"):]
                self.assertEqual(self.narrated_values(start[:start.index("\n\n", 1)], 2),
                                 [[1, 2], [3, 4]])
                self.assertEqual(self.narrated_values(text, 2), [[2, 3], [2, 3]])
                table = text[text.rindex("\n\n", 0, text.rindex("  values\n")):]
                for w in (0, 1):
                    row = [l for l in table.splitlines() if l.startswith(f"  worker {w}  ")][0]
                    self.assertEqual(row.split()[2:], ["all"] * len(row.split()[2:]), table)
                self.assertIn("divides by 2: the mean", text)
                self.assertIn("averaged over all 2 workers", text)
                rc, out, err = run("-p", two, "--algo", algo, "--explain", "--no-trace")
                self.assertEqual(rc, 0, err)
                self.assertIn("  w: [2, 3]\n", out)

    # teach-11: the values --explain narrates at the end are the run's
    # result, bit for bit, for every algorithm, W = 2..8 (W not a power of
    # two folds workers in), every op, f32, f64 and f16, avg divided last
    # or first (gloo-ring: or multiplied by 1/W first, pre-mul): the
    # narration replays the run's own arithmetic.
    def test_explain_values_are_the_result(self):
        import struct
        cases = 0
        for dtype in ("f32", "f64", "f16"):
            model = os.path.join(self.tmp.name, f"{dtype}.json")
            with open(model, "w") as f:
                json.dump({"params": [{"name": "a", "shape": [3], "dtype": dtype},
                                      {"name": "b", "shape": [4], "dtype": dtype}]}, f)
            as_dtype = (lambda v: v) if dtype == "f64" else \
                (lambda v: struct.unpack("f", struct.pack("f", v))[0])
            for algo in ("ring", "rd", "rhd", "linear", "tree", "gloo-ring"):
                for workers in range(2, 9):
                    # gloo-ring: also avg as DDP's reducer does it (pre-mul)
                    for op in (["--op", "avg"], ["--op", "avg", "--average", "pre"],
                               ["--op", "prod"], ["--op", "max"]) + \
                            ((["--op", "avg", "--average", "pre-mul"],) if algo == "gloo-ring"
                             else ()):
                        args = ("-p", model, "-w", workers, "--algo", algo, *op,
                                "--seed", workers, "--no-trace")
                        rc, out, err = run(*args, "--explain")
                        self.assertEqual(rc, 0, err)
                        rc, report, err = run(*args, "--json")  # the same inputs
                        self.assertEqual(rc, 0, err)
                        result = json.loads(report)["result"]
                        want = [as_dtype(v) for v in result["a"] + result["b"]]
                        got = self.narrated_values(out[:out.index("\nringsim ")], workers)
                        for w in range(workers):
                            self.assertEqual([as_dtype(v) for v in got[w]], want,
                                             (dtype, algo, workers, op, w))
                        cases += 1
        self.assertEqual(cases, 3 * 5 * 7 * 4 + 3 * 7 * 5)

    # teach-2: with --net the report shows simulated, predicted and measured
    # time side by side; --json has sim_ns and predicted_ns, equal for a
    # uniform ring; the trace holds the simulated times.
    def test_net_report_and_trace(self):
        model = os.path.join(self.tmp.name, "u.json")
        with open(model, "w") as f:
            json.dump({"params": [{"name": "g", "shape": [4 * 2 * 1000]}]}, f)
        rc, out, err = run("-p", model, "-w", 4, "--net", NET, "--reduce-rate", "20GB/s",
                           "--segment-bytes", 4000, "--trace", self.db)
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"simulated  [0-9.]+ us   predicted .* = [0-9.]+ us   measured wall")
        rc, out, err = run("-p", model, "-w", 4, "--net", NET, "--reduce-rate", "20GB/s",
                           "--segment-bytes", 4000, "--trace", self.db, "--json")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        # 2 segments of 4000 B a chunk, streamed (docs/algorithms.md,
        # "Pipelined links"): the second leaves 400 ns (4000 B at 10 B/ns)
        # after the first, then its path: 6 hops of 5 us + 400 ns, and in
        # the 3 of reduce-scatter its reduction, 200 ns (at 20 B/ns)
        self.assertEqual(r["sim_ns"], 400 + 6 * (5000 + 400) + 3 * 200)
        self.assertEqual(r["predicted_ns"], r["sim_ns"])
        con = sqlite3.connect(self.db)
        self.assertEqual(con.execute("SELECT count(*) FROM transfer WHERE sim_recv_ns IS NULL").fetchone()[0], 0)
        self.assertEqual(con.execute("SELECT sim_ns FROM run WHERE run_id = 2").fetchone()[0], r["sim_ns"])
        self.assertIn('"latency_ns": 5000', con.execute("SELECT net_model FROM run WHERE run_id = 2").fetchone()[0])
        # the simulated timeline is the same, bit for bit, in both runs
        times = [con.execute("SELECT src, seq, sim_send_ns, sim_recv_ns FROM transfer WHERE run_id = ? "
                             "ORDER BY src, seq", (i,)).fetchall() for i in (1, 2)]
        self.assertEqual(times[0], times[1])
        # the last all-gather copy is received at the end (copies cost no time)
        self.assertEqual(max(t[3] for t in times[0]), r["sim_ns"])
        con.close()

    # teach-3: a slow link or a straggler slows every worker: each one
    # finishes later than in the uniform ring.
    def test_slow_link_slows_everyone(self):
        model = os.path.join(EXAMPLES, "model.json")
        finish = {}
        for name, extra in (("uniform", []), ("link", ["--link", "1-2:bandwidth=1GB/s"]),
                            ("straggler", ["--straggler", "worker=3,us=100"])):
            rc, out, err = run("-p", model, "-w", 4, "--net", NET, "--trace", self.db, *extra)
            self.assertEqual(rc, 0, err)
            con = sqlite3.connect(self.db)
            finish[name] = dict(con.execute(
                "SELECT dst, max(sim_recv_ns) FROM transfer WHERE run_id = (SELECT max(run_id) FROM run) "
                "GROUP BY dst").fetchall())
            con.close()
        for name in ("link", "straggler"):
            for w in range(4):
                self.assertGreater(finish[name][w], finish["uniform"][w], f"{name}: worker {w}")

    # teach-4: `ringsim model` gives the threaded run's simulated time without
    # threads, for the same ring, and takes rings far bigger than the machine.
    def test_model_every_algorithm(self):
        # teach-9: for every algorithm, `ringsim model --algo X` plays the
        # same clocks as the threaded run with --net, to the nanosecond
        # (stragglers, a slow link, a reduce rate and several segments in
        # several buckets included); --algo all lists them all and marks
        # the fastest.
        model = os.path.join(EXAMPLES, "mlp.json")
        extra = ["--net", NET, "--link", "2-3:bandwidth=2GB/s", "--straggler", "worker=1,us=30",
                 "--reduce-rate", "40GB/s", "--segment-bytes", "1K", "--bucket-mb", 0.01]
        sims = {}
        for algo in ("ring", "rd", "rhd", "linear", "tree", "gloo-ring"):
            for workers in (4, 5, 6, 8):
                with self.subTest(algo=algo, workers=workers):
                    rc, out, err = run("-p", model, "-w", workers, "--algo", algo, *extra,
                                       "--json", "--no-trace")
                    self.assertEqual(rc, 0, err)
                    threaded = json.loads(out)["sim_ns"]
                    rc, out, err = run("model", "-p", model, "-w", workers, "--algo", algo,
                                       *extra, "--json")
                    self.assertEqual(rc, 0, err)
                    got = json.loads(out)
                    self.assertEqual((got["algo"], got["sim_ns"]), (algo, threaded))
                    sims[algo, workers] = threaded
        rc, out, err = run("model", "-p", model, "-w", 8, "--algo", "all", *extra, "--json")
        self.assertEqual(rc, 0, err)
        table = json.loads(out)
        self.assertEqual([(a["algo"], a["sim_ns"]) for a in table["algos"]],
                         [(a, sims[a, 8])
                          for a in ("ring", "rd", "rhd", "linear", "tree", "gloo-ring")])
        self.assertEqual(table["fastest"], min(table["algos"], key=lambda a: a["sim_ns"])["algo"])
        # on a uniform network with W a power of two, the ring's, recursive
        # doubling's and Rabenseifner's cost formulas are their simulated
        # times, to the nanosecond, segments and buckets included
        for workers in (2, 4, 8, 16):
            rc, out, err = run("model", "-p", model, "-w", workers, "--algo", "all", "--net", NET,
                               "--reduce-rate", "40GB/s", "--segment-bytes", "64",
                               "--bucket-mb", 0.0001, "--json")
            self.assertEqual(rc, 0, err)
            for a in json.loads(out)["algos"]:
                if a["algo"] in ("ring", "rd", "rhd"):
                    self.assertEqual(a["predicted_ns"], a["sim_ns"], (workers, a))
        # fewer elements than workers: the ring's formula still pays for a
        # segment of one element (it charged none, predicting 126 us for a
        # 4 s schedule), so auto does not pick by a wrong number
        tiny = os.path.join(self.tmp.name, "tiny.json")
        with open(tiny, "w") as f:
            json.dump({"params": [{"name": "g", "shape": [10]}]}, f)
        slow = ["--net", "latency=1us,bandwidth=1Kbps"]
        rc, out, err = run("model", "-p", tiny, "-w", 64, "--algo", "all", *slow, "--json")
        self.assertEqual(rc, 0, err)
        table = {a["algo"]: a for a in json.loads(out)["algos"]}
        self.assertEqual(table["ring"]["predicted_ns"], table["ring"]["sim_ns"])
        fastest = min(table.values(), key=lambda a: a["sim_ns"])["algo"]
        rc, out, err = run("-p", tiny, "-w", 64, "--algo", "auto", *slow, "--no-trace", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["auto"]["buckets"][0]["algo"], fastest)
        rc, out, err = run("-p", model, "--algo", "all", "--no-trace")
        self.assertEqual(rc, 2)
        self.assertIn("--algo 'all': expected ring, rd, rhd, linear, tree, gloo-ring, hier, hier:rd, hier:rhd, nvls, nvlstree or auto", err)

    def test_model_all_marks_ties(self):
        """`ringsim model --algo all` marks every algorithm whose simulated
        time equals the best's as "tie: fastest", and only the best as
        "fastest" when it is alone; --json lists the tied ones in
        fastest_tied. (At W=3 on a flat network the two rings tie to the
        nanosecond; at W=4 rhd ties the ring, both behind gloo's ring.)"""
        model = os.path.join(EXAMPLES, "model.json")
        for workers in (4, 3, 5):
            with self.subTest(workers=workers):
                rc, out, err = run("model", "-p", model, "-w", workers, "--algo", "all",
                                   "--net", "latency=5us,bandwidth=25GB/s", "--json")
                self.assertEqual(rc, 0, err)
                table = json.loads(out)
                best = min(a["sim_ns"] for a in table["algos"])
                tied = [a["algo"] for a in table["algos"] if a["sim_ns"] == best]
                self.assertEqual(table["fastest_tied"], tied)
                self.assertEqual(table["fastest"], tied[0])
                rc, out, err = run("model", "-p", model, "-w", workers, "--algo", "all",
                                   "--net", "latency=5us,bandwidth=25GB/s")
                self.assertEqual(rc, 0, err)
                marks = {}
                for line in out.splitlines():
                    words = line.split()
                    if words and words[0] in [a["algo"] for a in table["algos"]]:
                        marks[words[0]] = line.split("  ")[-1].strip() if len(words) > 4 else ""
                want = {a["algo"]: ("" if a["sim_ns"] != best else
                                    "tie: fastest" if len(tied) > 1 else "fastest")
                        for a in table["algos"]}
                self.assertEqual(marks, want)
                # (at W=3 gloo's ring ties the ring; at 4 and 5 gloo's layout,
                # more segments a chunk, streams ahead of the ring's one)
                self.assertEqual(tied, {4: ["gloo-ring"], 3: ["ring", "gloo-ring"],
                                        5: ["gloo-ring"]}[workers])

    def test_model_command(self):
        model = os.path.join(EXAMPLES, "model.json")
        extra = ["--net", NET, "--link", "2-3:bandwidth=2GB/s", "--straggler", "worker=1,us=30",
                 "--reduce-rate", "40GB/s", "--segment-bytes", "64K"]
        rc, out, err = run("-p", model, "-w", 5, *extra, "--json", "--no-trace")
        self.assertEqual(rc, 0, err)
        threaded = json.loads(out)["sim_ns"]
        rc, out, err = run("model", "-p", model, "-w", 5, *extra, "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["sim_ns"], threaded)
        rc, out, err = run("model", "-p", os.path.join(EXAMPLES, "gpt2_small.json"), "-w", 4096,
                           "--net", NET)
        self.assertEqual(rc, 0, err)
        self.assertIn("on 4096 workers", out)
        self.assertRegex(out, r"simulated  [0-9.]+ us")
        rc, out, err = run("model", "-p", model, "-w", 4)
        self.assertEqual(rc, 2)
        self.assertIn("model: --net latency=...,bandwidth=... is required", err)
        for args, message in ((["--net", "latency=5us"], "give both latency= and bandwidth="),
                              (["--net", NET, "--link", "1-3:bandwidth=1GB/s"], "not a ring link"),
                              (["--link", "1-2:bandwidth=1GB/s"], "need --net"),
                              (["--net", NET, "--straggler", "worker=9,us=1"], "worker 9 does not exist")):
            rc, out, err = run("-p", model, "-w", 4, "--no-trace", *args)
            self.assertEqual(rc, 2, args)
            self.assertIn(message, err)

    # teach-5: `ringsim model` is discoverable: the main help lists it, it
    # has its own help, and its usage errors point there.
    def test_model_help(self):
        rc, out, err = run("--help")
        self.assertEqual(rc, 0, err)
        self.assertIn("ringsim model --params MODEL.json --workers N --net SPEC", out)
        self.assertIn("model --help", out)
        rc, out, err = run("model", "--help")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("usage: ringsim model "), out[:80])
        for option in ("--net", "--reduce-rate", "--link", "--straggler", "--segment-bytes",
                       "--bucket-mb", "--json"):
            self.assertIn(option, out)
        self.assertNotIn("--inject", out)
        model = os.path.join(EXAMPLES, "model.json")
        for args, message in (([], "model: --net latency=...,bandwidth=... is required"),
                              (["-w", 0, "--net", NET], "model: --workers '0': expected an integer"),
                              (["--net", NET, "--inject", "crash"], "model: --inject does not apply"),
                              (["--net", NET, "--print"], "model: --print does not apply")):
            rc, out, err = run("model", "-p", model, *args)
            self.assertEqual((rc, out), (2, ""), args)
            self.assertEqual(err.count("\n"), 1, err)
            self.assertIn(message, err)
            self.assertTrue(err.endswith("(see ringsim model --help)\n"), err)

    # teach-6: one notation for the cost formula everywhere: beta and gamma
    # are rates (b/beta), as docs/ring-walkthrough.md defines them, in the threaded
    # run's report, in `ringsim model` and in the docs.
    def test_cost_formula_notation(self):
        formula = "alpha + k b/beta + (2W-3) max(alpha + b/beta, k b/beta) + reductions"
        model = os.path.join(EXAMPLES, "model.json")
        rc, out, err = run("-p", model, "-w", 4, "--net", NET, "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertIn(f"predicted {formula} = ", out)
        rc, out, err = run("model", "-p", model, "-w", 4, "--net", NET)
        self.assertEqual(rc, 0, err)
        self.assertIn(f"   {formula}\n", out)
        docs = os.path.join(os.path.dirname(EXAMPLES), "docs")
        with open(os.path.join(docs, "ring-walkthrough.md")) as f:
            text = f.read()
        self.assertIn(f"T = {formula}", text)
        self.assertIn("beta the bandwidth", text)
        for name in sorted(os.listdir(docs)) + ["../README.md"]:
            if name.endswith(".md"):
                with open(os.path.join(docs, name)) as f:
                    text = f.read()
                for wrong in ("beta b", "gamma b", "beta the time per byte"):
                    self.assertFalse(wrong in text, f"docs/{name} says {wrong!r}")

    # teach-8: `ringsim model --json` gives counts as JSON integers: bytes is
    # elements x the dtype's size, as in the threaded run's --json.
    def test_model_json_integers(self):
        half = os.path.join(self.tmp.name, "h.json")
        with open(half, "w") as f:
            json.dump({"params": [{"name": "g", "shape": [1000, 3], "dtype": "f16"}]}, f)
        for model, size in ((os.path.join(EXAMPLES, "model.json"), 4), (half, 2)):
            rc, out, err = run("model", "-p", model, "-w", 3, "--net", NET, "--json")
            self.assertEqual(rc, 0, err)
            r = json.loads(out)
            for key in ("workers", "elems", "bytes", "buckets", "segs_per_chunk", "sim_ns",
                        "predicted_ns"):
                self.assertIs(type(r[key]), int, f"{key}: {r[key]!r}")
            self.assertEqual(r["bytes"], r["elems"] * size)
            rc, out, err = run("-p", model, "-w", 3, "--net", NET, "--json", "--no-trace")
            self.assertEqual(rc, 0, err)
            self.assertEqual(json.loads(out)["bytes"], r["bytes"])

    # teach-7: the narration's verbs follow the op: max, min and prod never
    # say they sum, and the table's header and the last line say what they do.
    def test_explain_verbs_follow_the_op(self):
        two = os.path.join(EXAMPLES, "two_workers.json")
        cases = {"max": ("is the maximum of", "keeps the larger of it and its own",
                         "as the maximum over all 2 workers"),
                 "min": ("is the minimum of", "keeps the smaller of it and its own",
                         "as the minimum over all 2 workers"),
                 "prod": ("is the product of", "multiplies its own by it",
                          "as the product over all 2 workers")}
        for op, (cell, fold, result) in cases.items():
            with self.subTest(op=op):
                text = self.narration("-p", two, "--op", op)
                self.assertIn(f"that worker's copy of that chunk {cell}.\n", text)
                self.assertIn(f"which {fold} -> all\n", text)
                self.assertIn(f"Every worker now holds every chunk {result}:", text)
                for word in ("sum", "adds", "divides"):
                    self.assertNotIn(word, text)
        text = self.narration("-p", two, "--op", "sum")
        self.assertIn("every chunk summed over all 2 workers", text)
        self.assertNotIn("divides", text)


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES", "GOLDEN")


if __name__ == "__main__":
    main()
