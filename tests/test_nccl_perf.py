#!/usr/bin/python3
"""`ringsim model --like nccl`: NCCL's tuner's pick per all-reduce, timed
by ringsim; without --params a virtual nccl-tests all_reduce_perf (its
columns, read as scripts read them), --json's keys, the forced choices,
every refusal, the "not in NCCL" marks of ringsim's own algorithms, and
docs/validation.md held to scripts/validation --check.

    test_nccl_perf.py RINGSIM EXAMPLES ROOT [NcclPerf.test_name ...]
"""
import json
import os
import subprocess
import sys
import unittest

import helpers

RINGSIM = EXAMPLES = ROOT = None

NET = "latency=5us,bandwidth=25GB/s"


def model(*args):
    return helpers.run("model", *args)


class NcclPerf(unittest.TestCase):
    # nccl-1: --algo all's table names, under it, the algorithms NCCL does
    # not run (ringsim's rd, rhd, linear and gloo's ring); the ring and
    # the tree are NCCL's. --json says it per algorithm (in_nccl).
    def test_algo_all_marks_not_in_nccl(self):
        mlp = os.path.join(EXAMPLES, "model.json")
        rc, out, err = model("-p", mlp, "-w", 4, "--net", NET, "--algo", "all")
        self.assertEqual(rc, 0, err)
        line = [l for l in out.splitlines() if l.strip().startswith("not in NCCL:")]
        self.assertEqual(len(line), 1, out)
        named = line[0].split(":", 1)[1].split("(")[0].replace(",", " ").split()
        self.assertEqual(named, ["rd", "rhd", "linear", "gloo-ring"])
        rc, out, err = model("-p", mlp, "-w", 4, "--net", NET, "--algo", "all",
                             "--json")
        self.assertEqual(rc, 0, err)
        marks = {a["algo"]: a["in_nccl"] for a in json.loads(out)["algos"]}
        self.assertEqual(marks, {"ring": True, "rd": False, "rhd": False,
                                 "linear": False, "tree": True,
                                 "gloo-ring": False})
        self.assertIsNone(json.loads(out)["nccl"])  # (a flat --net: no NCCL)
        # on nodes NCCL's model knows, what NCCL would do is said under the
        # table: --like nccl --params's pick and time, the buckets in turn
        resnet = os.path.join(EXAMPLES, "resnet18.json")
        topo = ["-p", resnet, "--topo", "dgx-h100,nodes=2"]
        rc, out, err = model(*topo, "--algo", "all", "--json")
        self.assertEqual(rc, 0, err)
        would = json.loads(out)["nccl"]
        rc, out, err = model(*topo, "--like", "nccl", "--json")
        self.assertEqual(rc, 0, err)
        like = json.loads(out)
        self.assertEqual(would["sim_ns"], round(like["time_us"] * 1000), (would, like["time_us"]))
        big = max(like["buckets"], key=lambda b: b["bytes"])
        self.assertEqual((would["algo"], would["proto"], would["channels"]),
                         (big["algo"], big["proto"], big["channels"]))
        rc, out, err = model(*topo, "--algo", "all")
        self.assertEqual(rc, 0, err)
        self.assertIn(f"  nccl       NCCL would run it as {would['algo']}/{would['proto']} "
                      f"on {would['channels']} channels", out)

    # nccl-2: forcing one of ringsim's own algorithms says it is not in
    # NCCL, in ringsim model's report and in a run's; NCCL's ring is not
    # marked.
    def test_forced_algorithm_marked(self):
        mlp = os.path.join(EXAMPLES, "model.json")
        for algo in ("rd", "rhd", "linear", "ring", "tree"):
            with self.subTest(algo=algo):
                rc, out, err = model("-p", mlp, "-w", 4, "--net", NET,
                                     "--algo", algo)
                self.assertEqual(rc, 0, err)
                mark = f"{algo} is not in NCCL"
                self.assertEqual(mark in out, algo not in ("ring", "tree"), out)
                rc, out, err = model("-p", mlp, "-w", 4, "--net", NET,
                                     "--algo", algo, "--json")
                self.assertEqual(json.loads(out)["in_nccl"],
                                 algo in ("ring", "tree"))
                rc, out, err = helpers.run("-p", mlp, "-w", 4, "--algo", algo,
                                           "--no-trace")
                self.assertEqual(rc, 0, err)
                self.assertEqual(mark in out, algo not in ("ring", "tree"), out)

    # nccl-3: the virtual all_reduce_perf: -b 8 -e 128M -f 2 is 25 sizes,
    # each a row of nccl-tests' 13 fields (size, count = size / 4 for
    # float, type, redop, root -1, then time algbw busbw #wrong twice: one
    # prediction, #wrong N/A) and the pick (NCCL's estimate, algo, proto,
    # channels); algbw = size / time, busbw = algbw 2(W-1)/W; the footer's
    # average is the busbw's mean. The header says what time is.
    def test_sweep_columns(self):
        rc, out, err = model("--like", "nccl", "--topo", "dgx-h100,nodes=4",
                             "-b", 8, "-e", "128M", "-f", 2)
        self.assertEqual(rc, 0, err)
        rows = [l.split() for l in out.splitlines() if l.strip() and not l.startswith("#")]
        self.assertEqual(len(rows), 25)
        self.assertEqual([int(r[0]) for r in rows], [8 << k for k in range(25)])
        heads = [l for l in out.splitlines() if l.split()[1:2] == ["size"]]
        self.assertEqual(heads[0].split()[1:],
                         ["size", "count", "type", "redop", "root", "time", "algbw",
                          "busbw", "#wrong", "time", "algbw", "busbw", "#wrong",
                          "nccl", "algo", "proto", "channels"])
        self.assertIn("ringsim's prediction", out)
        self.assertIn("NCCL's own estimate", out)
        busbws = []
        for r in rows:
            self.assertEqual(len(r), 17, r)
            size = int(r[0])
            self.assertEqual(int(r[1]), size // 4)
            self.assertEqual(r[2:5], ["float", "sum", "-1"])
            self.assertEqual(r[5:9], r[9:13])
            self.assertEqual(r[8], "N/A")
            t, algbw, bus = float(r[5]), float(r[6]), float(r[7])
            self.assertAlmostEqual(algbw, size / t / 1e3, delta=0.006 + 0.01 * algbw)
            self.assertAlmostEqual(bus, size / t / 1e3 * 2 * 31 / 32,
                                   delta=0.006 + 0.01 * bus)
            self.assertIn(r[14].lower(), ["tree", "ring", "nvls", "nvlstree"])
            self.assertIn(r[15], ["LL", "LL128", "Simple"])
            self.assertGreaterEqual(int(r[16]), 1)
            busbws.append(bus)
        avg = [l for l in out.splitlines() if "Avg bus bandwidth" in l][0]
        self.assertAlmostEqual(float(avg.split()[-1]), sum(busbws) / len(busbws),
                               delta=0.01)
        self.assertTrue(out.rstrip().endswith("# Collective test concluded: all_reduce_perf"))

    # nccl-4: --json: schema, topology, and per size bytes, count,
    # time_us, algbw_gbs, busbw_gbs, algo, proto, channels, nccl_time_us
    # and the runner-up (algo, proto, channels, time_us, nccl_time_us),
    # whose NCCL estimate is no better than the pick's (the tuner's
    # argmin); the text's rows are the same picks.
    def test_json_keys(self):
        args = ["--like", "nccl", "--topo", "dgx-h100,nodes=2", "-b", 8, "-e", "1G", "-f", 8]
        rc, out, err = model(*args, "--json")
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["schema"], "ringsim.model.sweep/1")
        self.assertEqual({k: doc["topology"][k] for k in ("nodes", "gpus", "ranks")},
                         {"nodes": 2, "gpus": 8, "ranks": 16})
        self.assertEqual(doc["topology"]["spec"], "dgx-h100,nodes=2")
        self.assertEqual((doc["type"], doc["redop"]), ("float", "sum"))
        keys = {"bytes", "count", "time_us", "algbw_gbs", "busbw_gbs", "algo",
                "proto", "channels", "nccl_time_us", "runner_up"}
        self.assertEqual([s["bytes"] for s in doc["sizes"]], [8 << 3 * k for k in range(10)])
        for s in doc["sizes"]:
            self.assertEqual(set(s), keys)
            self.assertEqual(s["count"], s["bytes"] // 4)
            self.assertAlmostEqual(s["algbw_gbs"], s["bytes"] / s["time_us"] / 1e3, places=6)
            self.assertAlmostEqual(s["busbw_gbs"], s["algbw_gbs"] * 2 * 15 / 16, places=6)
            r = s["runner_up"]
            self.assertEqual(set(r), {"algo", "proto", "channels", "time_us", "nccl_time_us"})
            self.assertNotEqual((r["algo"], r["proto"]), (s["algo"], s["proto"]))
            self.assertGreaterEqual(r["nccl_time_us"], s["nccl_time_us"])
        rc, out, err = model(*args)
        rows = [l.split() for l in out.splitlines() if l.strip() and not l.startswith("#")]
        self.assertEqual([(r[14], r[15], int(r[16])) for r in rows],
                         [(s["algo"], s["proto"], s["channels"]) for s in doc["sizes"]])

    # nccl-5: --algo, --proto and --channels force the pick as NCCL_ALGO,
    # NCCL_PROTO and NCCL_MIN/MAX_NCHANNELS do; -d and -o set the type
    # and redop columns (count = size / the type's size), -i a linear
    # sweep.
    def test_forced_choices(self):
        def sizes(*args):
            rc, out, err = model("--like", "nccl", *args, "--json")
            self.assertEqual(rc, 0, (args, err))
            return json.loads(out)
        cases = [(["--topo", "dgx-h100", "--algo", "ring"], "algo", "ring"),
                 (["--topo", "dgx-h100,nodes=2", "--algo", "tree"], "algo", "tree"),
                 (["--topo", "dgx-h100", "--algo", "nvls"], "algo", "nvls"),
                 (["--topo", "dgx-h100,nodes=2", "--algo", "nvlstree"], "algo", "nvlstree"),
                 (["--topo", "dgx-h100,nodes=2", "--proto", "LL128"], "proto", "LL128"),
                 (["--topo", "dgx-h100", "--algo", "ring", "--proto", "LL"], "proto", "LL"),
                 (["--topo", "dgx-h100", "--algo", "ring", "--channels", 5], "channels", 5),
                 (["--topo", "dgx-h100,nodes=4", "--algo", "ring", "--channels", 64],
                  "channels", 64)]
        for args, key, want in cases:
            with self.subTest(args=args):
                doc = sizes(*args, "-b", 8, "-e", "1G", "-f", 32)
                self.assertEqual(doc["forced"][key].lower() if key != "channels"
                                 else doc["forced"][key],
                                 want.lower() if key != "channels" else want)
                if key == "channels":
                    # NCCL's max, and its count for large buffers (small
                    # ones run on fewer: enqueue.cc's thread thresholds)
                    self.assertLessEqual(max(s[key] for s in doc["sizes"]), want)
                    self.assertEqual(doc["sizes"][-1][key], want)
                else:
                    self.assertEqual({s[key].lower() for s in doc["sizes"]}, {want.lower()})
        doc = sizes("--topo", "dgx-h100", "-b", 8, "-e", 64, "-d", "double", "-o", "max")
        self.assertEqual((doc["type"], doc["redop"]), ("double", "max"))
        self.assertEqual([s["count"] for s in doc["sizes"]], [1, 2, 4, 8])
        doc = sizes("--topo", "dgx-h100", "-b", "1K", "-e", "4K", "-i", "1K")
        self.assertEqual([s["bytes"] for s in doc["sizes"]], [1024, 2048, 3072, 4096])
        # not forced, the picks differ along the sweep (Ring/LL small, NVLS large)
        doc = sizes("--topo", "dgx-h100", "-b", 8, "-e", "1G", "-f", 32)
        self.assertEqual((doc["sizes"][0]["algo"].lower(), doc["sizes"][0]["proto"]),
                         ("ring", "LL"))
        self.assertEqual(doc["sizes"][-1]["algo"].lower(), "nvls")

    # nccl-6: every refusal: one line on stderr naming the value and why,
    # exit 2, nothing on stdout, before anything runs.
    def test_refusals(self):
        mlp = os.path.join(EXAMPLES, "model.json")
        cases = [
            (["--like", "nccl", "--net", NET], "give --topo"),
            (["--like", "nccl"], "give --topo"),
            # (--proto without --like nccl is the network model's protocol,
            # test_proto_cli.py; auto is the tuner's, and it needs a model)
            (["--proto", "auto", "--net", NET, "-p", mlp, "-w", 2], "--proto auto"),
            (["--proto", "LL", "-p", mlp, "-w", 2], "--proto LL"),
            (["--like", "nccl", "--topo", "pcie", "--algo", "nvls"], "--algo nvls"),
            (["--like", "nccl", "--topo", "dgx-a100", "--algo", "nvls"], "--algo nvls"),
            (["--like", "nccl", "--topo", "dgx-h100,nodes=2", "--algo", "nvls"],
             "--algo nvls"),
            (["--like", "nccl", "--topo", "dgx-h100", "--algo", "nvlstree"],
             "--algo nvlstree"),
            (["--like", "nccl", "--topo", "dgx-h100", "--channels", 0], "--channels '0'"),
            (["--like", "nccl", "--topo", "dgx-h100", "--channels", 65], "--channels '65'"),
            (["--like", "nccl", "--topo", "dgx-h100", "-b", 16, "-e", 8], "--minbytes 16"),
            (["--like", "foo", "--topo", "dgx-h100"], "--like 'foo'"),
            (["--like", "nccl", "--topo", "dgx-h100", "--proto", "LL129"], "--proto 'LL129'"),
            (["--like", "nccl", "--topo", "dgx-h100", "--algo", "all"], "--algo all"),
            (["--topo", "dgx-h100,nodes=2", "-p", mlp, "--algo", "nvls"], "NVLSTree"),
            (["--topo", "dgx-h100", "-p", mlp, "--algo", "NVLS"],
             "--algo NVLS is NCCL_ALGO's spelling"),
            (["--topo", "dgx-a100", "-p", mlp, "--algo", "nvls"], "does not reduce"),
            (["--topo", "dgx-h100", "-p", mlp, "--algo", "nvls", "--proto", "LL"],
             "only Simple's bytes"),
            (["--topo", "dgx-h100", "-p", mlp, "-b", 8], "--minbytes"),
            (["--like", "nccl", "--topo", "dgx-h100", "-p", mlp, "-e", "1M"], "--maxbytes"),
        ]
        for algo in ("gloo-ring", "rd", "rhd", "linear", "hier", "hier:rd"):
            cases.append((["--like", "nccl", "--topo", "dgx-h100,nodes=2", "--algo", algo],
                          f"--algo {algo} is not one of NCCL's"))
        for args, message in cases:
            with self.subTest(args=args):
                rc, out, err = model(*args)
                self.assertEqual(rc, 2, (args, out, err))
                self.assertEqual(out, "")
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn(message, err)

    # nccl-7: --like nccl with --params: each bucket's pick and
    # ringsim's time for it, the runner-up's; the total is the buckets'
    # times one after another.
    def test_params_buckets(self):
        gpt2 = os.path.join(EXAMPLES, "gpt2_small.json")
        rc, out, err = model("--like", "nccl", "--topo", "dgx-h100,nodes=2", "-p", gpt2,
                             "--json")
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["schema"], "ringsim.model.nccl/1")
        self.assertGreater(len(doc["buckets"]), 1)
        self.assertEqual(sum(b["bytes"] for b in doc["buckets"]), doc["bytes"])
        self.assertAlmostEqual(doc["time_us"], sum(b["time_us"] for b in doc["buckets"]),
                               delta=1e-3 * len(doc["buckets"]))
        for b in doc["buckets"]:
            self.assertIn(b["algo"].lower(), ["tree", "ring", "nvlstree"])
            self.assertIn("runner_up", b)
        rc, out, err = model("--like", "nccl", "--topo", "dgx-h100,nodes=2", "-p", gpt2)
        self.assertEqual(rc, 0, err)
        self.assertIn("runner-up", out)
        lines = [l.split() for l in out.splitlines() if l.split()[:1] and l.split()[0].isdigit()]
        self.assertEqual([(int(l[1]), l[2], l[3]) for l in lines],
                         [(b["bytes"], b["algo"], b["proto"]) for b in doc["buckets"]])

    # nccl-8: docs/validation.md is what scripts/validation writes, and
    # every row is within its tolerance or listed as a known miss.
    def test_validation_check(self):
        p = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "validation"),
                            "--ringsim", RINGSIM, "--check"],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES", "ROOT")


if __name__ == "__main__":
    main()
