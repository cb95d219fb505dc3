#!/usr/bin/python3
"""`ringsim step` on the command line: a timeline worked out by hand, the
threads' run against the schedule alone, the sweep's best against each cap
run on its own, and what is refused (exit 2, one line on stderr naming the
input, before anything runs).

    test_step_cli.py RINGSIM EXAMPLES_DIR [StepCli.test_name ...]
"""
import json
import os
import subprocess
import tempfile
import unittest

import helpers

RINGSIM = EXAMPLES = None
NET = "latency=1us,bandwidth=1GB/s"  # one byte per ns
MIB = 262144  # f32 elements in 1 MiB


def run(*args):
    return helpers.run("step", *args)


def three_mib(backward_us=2000, extra=None):
    """Three params of 1 MiB, registered p0, p1, p2, each backward_us long
    (p2's gradient first), p0's forward 5 us: with DDP's first bucket of
    1 MiB and a cap of 1 MiB, a bucket each."""
    params = [{"name": f"p{i}", "shape": [MIB], "backward_us": backward_us}
              for i in range(3)]
    params[0]["forward_us"] = 5
    if extra:
        params[1].update(extra)
    return {"name": "three-mib", "params": params}


class StepCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def model(self, doc, name="m.json"):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def step_json(self, *args):
        rc, out, err = run(*args, "--json")
        self.assertEqual(rc, 0, err)
        return json.loads(out)

    # step-1: W = 2, the ring, one 1 MiB segment per chunk: a bucket's
    # all-reduce is 2 (1,000 + 524,288) = 1,050,576 ns once both start.
    # Gradients 2 ms apart from the 5 us forward: every all-reduce ends
    # before the next gradient, so only the last is exposed. The first step
    # is one bucket of 3 MiB, chunks of 1.5 MiB in two segments of 786,432
    # bytes, streamed (each leaves as the link frees: the link is the
    # busier): 4 x 786,432 + 1,000 ns after the last gradient, all exposed.
    def test_by_hand(self):
        m = self.model(three_mib())
        for threads in ([], ["--no-threads"]):
            with self.subTest(threads=threads or "threads"):
                doc = self.step_json("-p", m, "-w", 2, "--net", NET, "--bucket-mb", 1,
                                     "--segment-bytes", "1M", "--iterations", 3,
                                     *threads)
                self.assertEqual(doc["threads"], not threads)
                row = doc["rows"][0]
                later = row["later"]
                self.assertEqual([(b["ready_ns"], b["start_ns"], b["end_ns"], b["exposed_ns"])
                                  for b in later["buckets"]],
                                 [(2005000, 2005000, 3055576, 0),
                                  (4005000, 4005000, 5055576, 0),
                                  (6005000, 6005000, 7055576, 1050576)])
                self.assertEqual((later["step_ns"], later["exposed_ns"], later["comm_ns"]),
                                 (7055576, 1050576, 3 * 1050576))
                first = row["first"]
                self.assertEqual(len(first["buckets"]), 1)
                # (2 steps of 2 segments streamed: the link busy throughout,
                # 4 segments and one latency)
                self.assertEqual(first["step_ns"], 6005000 + 4 * 786432 + 1000)
                self.assertEqual(first["exposed_ns"], 4 * 786432 + 1000)
                self.assertEqual(row["total_ns"], first["step_ns"] + 2 * later["step_ns"])

    # step-2: the text report says the same, and names the critical path.
    def test_text(self):
        m = self.model(three_mib())
        rc, out, err = run("-p", m, "-w", 2, "--net", NET, "--bucket-mb", 1,
                           "--segment-bytes", "1M")
        self.assertEqual(rc, 0, err)
        self.assertIn("the all-reduces ran on threads and were checked", out)
        self.assertIn("step 2     7055.576 us: compute 6005.000 us, communication "
                      "3151.728 us, 2101.152 us hidden (66.7%), 1050.576 us exposed", out)
        self.assertIn("critical   bucket 2's all-reduce ends 1050.576 us after the last "
                      "gradient (6005.000 us): 1050.576 us exposed", out)

    # step-3: the sweep's best is the fastest of its caps, each run alone,
    # and every row is what that cap gives alone; per algorithm with --algo
    # all.
    def test_sweep_best_is_the_minimum(self):
        r18 = os.path.join(EXAMPLES, "resnet18.json")
        args = ["-p", r18, "-w", 8, "--net", "latency=5us,bandwidth=25GB/s",
                "--compute", "flops=10T,rows=512"]
        doc = self.step_json(*args, "--bucket-mb", "sweep", "--algo", "all")
        self.assertFalse(doc["threads"])
        algos = sorted({r["algo"] for r in doc["rows"]})
        self.assertEqual(len(algos), 6)
        for algo in algos:
            rows = [r for r in doc["rows"] if r["algo"] == algo]
            self.assertEqual([r["cap_bytes"] >> 20 for r in rows], [1, 2, 5, 10, 25, 50, 100, 250])
            alone = {}
            for r in rows:
                one = self.step_json(*args, "--algo", algo, "--bucket-mb", r["cap_bytes"] >> 20,
                                     "--no-threads")["rows"][0]
                self.assertEqual(one["later"], r["later"], (algo, r["cap_bytes"]))
                alone[r["cap_bytes"]] = one["later"]["step_ns"]
            best = [r["cap_bytes"] for r in rows if r["best"]]
            fastest = min(alone.values())
            self.assertEqual(len(best), 1)
            self.assertEqual(alone[best[0]], fastest)
            self.assertEqual(best[0], min(c for c, t in alone.items() if t == fastest))
            self.assertEqual([r["cap_bytes"] for r in rows if r["ddp_default"]], [25 << 20])

    # step-4: a straggler's compute makes every bucket wait for it: the
    # step grows by its extra compute at least, and what is exposed after
    # its last gradient is what it was.
    def test_straggler(self):
        m = self.model(three_mib())
        base = ["-p", m, "-w", 2, "--net", NET, "--bucket-mb", 1, "--segment-bytes", "1M"]
        fast = self.step_json(*base)["rows"][0]["later"]
        slow = self.step_json(*base, "--straggler", "worker=1,compute=1.5")["rows"][0]["later"]
        self.assertEqual(slow["forward_ns"] + slow["backward_ns"], 1.5 * 6005000)
        self.assertEqual(slow["exposed_ns"], fast["exposed_ns"])
        self.assertEqual(slow["step_ns"], 1.5 * 6005000 + fast["exposed_ns"])
        self.assertEqual([b["ready_ns"] for b in slow["buckets"]],
                         [1.5 * b["ready_ns"] for b in fast["buckets"]])
        # the report's network line says a straggler shaped the times, as
        # the run's report does
        rc, out, err = run(*base, "--straggler", "worker=1,us=500")
        self.assertEqual(rc, 0, err)
        self.assertIn("  network    latency 1.000 us, bandwidth 1.000 GB/s per link, 0 slower "
                      "links, 1 straggler\n", out)

    # step-6: --trace appends the threads' runs (step 1's, then the later
    # steps') with their transfers, and each worker's intervals, as the
    # report's lanes have them; what the trace held stays. --trace without
    # the threads' runs is refused, and writes nothing.
    def test_trace(self):
        import sqlite3
        m = self.model(three_mib())
        db = os.path.join(self.tmp.name, "t.db")
        args = ["-p", m, "-w", 2, "--net", NET, "--bucket-mb", 1, "--segment-bytes", "1M"]
        p = subprocess.run([RINGSIM, "-p", m, "-w", "2", "--trace", db], capture_output=True,
                           text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        doc = self.step_json(*args, "--iterations", 3, "--trace", db)
        con = sqlite3.connect(db)
        try:
            self.assertEqual([r[0] for r in con.execute("SELECT run_id FROM run ORDER BY run_id")],
                             [1, 2, 3])
            self.assertEqual(con.execute("SELECT count(*) FROM step_interval WHERE run_id = 1")
                             .fetchone()[0], 0)
            for run_id, timeline, iters in ((2, doc["rows"][0]["first"], 1),
                                            (3, doc["rows"][0]["later"], 2)):
                want = []
                for it in range(iters):
                    for w, lane in enumerate(timeline["workers"]):
                        want += [(it, w, "forward", None, 0, lane["forward_ns"]),
                                 (it, w, "backward", None, lane["forward_ns"],
                                  lane["last_grad_ns"])]
                        want += [(it, w, "allreduce", b, s, e)
                                 for b, (s, e) in enumerate(lane["allreduce"])]
                got = con.execute("SELECT iter, worker, kind, bucket, start_ns, end_ns FROM "
                                  "step_interval WHERE run_id = ? ORDER BY rowid",
                                  (run_id,)).fetchall()
                self.assertEqual(got, want)
                # the run's transfers end with its last all-reduce
                last = con.execute("SELECT max(sim_recv_ns) FROM transfer WHERE run_id = ?",
                                   (run_id,)).fetchone()[0]
                self.assertLessEqual(last, timeline["step_ns"])
                self.assertEqual(con.execute("SELECT count(DISTINCT iter) FROM transfer WHERE "
                                             "run_id = ?", (run_id,)).fetchone()[0], iters)
        finally:
            con.close()
        fresh = os.path.join(self.tmp.name, "none.db")
        rc, out, err = run(*args, "--no-threads", "--trace", fresh)
        self.assertEqual(rc, 2, err)
        self.assertIn("--trace records the threads' runs", err)
        self.assertFalse(os.path.exists(fresh))

    # step-7: one worker: nothing to all-reduce, the step its compute (on
    # threads too); and the analytic compute exact where the FLOPs are (2 x
    # 999 FLOPs at 1 GFLOP/s: 1,998 ns, not rounded up to 1,999).
    def test_one_worker_and_exact_compute(self):
        m = self.model(three_mib())
        for threads in ([], ["--no-threads"]):
            later = self.step_json("-p", m, "-w", 1, "--net", NET, *threads)["rows"][0]["later"]
            self.assertEqual(later["step_ns"], 6005000)
            self.assertEqual(later["exposed_ns"], 0)
        m = self.model({"params": [{"name": "g", "shape": [999]}]}, "g999.json")
        later = self.step_json("-p", m, "-w", 2, "--net", NET, "--compute",
                               "flops=1G,rows=1")["rows"][0]["later"]
        self.assertEqual((later["forward_ns"], later["backward_ns"]), (1998, 3996))

    # step-6: --hook powersgd:rank=R puts the hook's three all-reduces in
    # place of each bucket's, back to back: the elements of each are the
    # run's (ringsim --hook powersgd, the same buckets: one for step 1, the
    # rebuilt ones after), each bucket's communication is the three
    # all-reduces' simulated times summed (the run's sim_ns, to the ns),
    # and the compute is the same as without the hook (the matmuls are not
    # charged). An MLP of 128-512-512-10: DDP's first bucket (1 MiB) holds
    # the last two layers, the second the first layer
    def test_powersgd(self):
        m = self.model({"name": "mlp", "params": [
            {"name": n, "shape": s} for n, s in (
                ("fc1.weight", [512, 128]), ("fc1.bias", [512]),
                ("fc2.weight", [512, 512]), ("fc2.bias", [512]),
                ("fc3.weight", [10, 512]), ("fc3.bias", [10]))]})
        W, R = 4, 4
        args = ["-p", m, "-w", W, "--net", NET, "--compute", "flops=1T,rows=64"]
        step = self.step_json(*args, "--hook", f"powersgd:rank={R}")
        plain = self.step_json(*args)
        self.assertFalse(step["threads"])
        self.assertEqual(step["hook"], f"powersgd:rank={R}")
        row, base = step["rows"][0], plain["rows"][0]
        self.assertGreater(len(row["later"]["buckets"]), 1)
        for which, cap in (("first", "0"), ("later", "25")):
            with self.subTest(step=which):
                p = subprocess.run(
                    [RINGSIM, "-p", m, "-w", str(W), "--net", NET, "--bucket-mb", cap,
                     "--hook", f"powersgd:rank={R}", "--no-trace", "--json"],
                    capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                ran = json.loads(p.stdout)
                t = row[which]
                self.assertEqual([b["allreduce_elems"] for b in t["buckets"]],
                                 [[a["elems"] for a in b["allreduces"]]
                                  for b in ran["buckets"]])
                self.assertEqual(t["comm_ns"], ran["sim_ns"])
                self.assertLess(t["comm_ns"], base[which]["comm_ns"])
                self.assertEqual((t["forward_ns"], t["backward_ns"]),
                                 (base[which]["forward_ns"], base[which]["backward_ns"]))
                self.assertEqual(t["step_ns"], max(
                    t["forward_ns"] + t["backward_ns"], t["buckets"][-1]["end_ns"]))
        self.assertEqual(row["total_ns"], row["first"]["step_ns"] + row["later"]["step_ns"])
        # refused, one line, exit 2: the state's keys, a trace, an f64 model
        f64 = self.model({"params": [{"name": "w", "shape": [64, 64], "dtype": "f64",
                                                      "backward_us": 1}]}, "f64.json")
        for extra, named in (
                (["--hook", "powersgd:rank=4,start=2,feedback=on"], "give "
                 "powersgd:rank=R alone"),
                (["--hook", "powersgd:rank=4", "--trace", os.path.join(self.tmp.name, "t.db")],
                 "--hook powersgd's step is the schedule alone"),
                (["--hook", "powersgd:rank=4", "-p", f64], "the model is f64")):
            with self.subTest(refused=extra):
                rc, out, err = run(*(args[2:] if "-p" in extra else args), *extra)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "")
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn(named, err)

    # step-5: what is refused, each with exit 2 and one line naming it,
    # and nothing on stdout.
    def test_bad_input(self):
        good = self.model(three_mib())
        no_bwd = self.model({"params": [{"name": "w", "shape": [4], "backward_us": 1},
                                        {"name": "b", "shape": [4]}]}, "nobwd.json")
        neg = self.model(three_mib(extra={"backward_us": -3}), "neg.json")
        text = self.model(three_mib(extra={"backward_us": "fast"}), "text.json")
        cases = [
            (["-p", good, "-w", 2, "--net", NET, "--compute", "flops=312,rows=8"],
             "--compute 'flops=312,rows=8'"),
            (["-p", good, "-w", 2, "--net", NET, "--compute", "flops=312T"],
             "give both flops= and rows="),
            (["-p", no_bwd, "-w", 2, "--net", NET], 'param "b" has no backward_us'),
            (["-p", neg, "-w", 2, "--net", NET], 'params[1].backward_us (param "p1")'),
            (["-p", text, "-w", 2, "--net", NET], 'params[1].backward_us (param "p1")'),
            (["-p", good, "-w", 2, "--net", NET, "--iterations", 0], "--iterations '0'"),
            (["-p", good, "-w", 2], "--net latency=...,bandwidth=... is required"),
            (["-p", good, "-w", 2, "--net", NET, "--bucket-mb", "1,,5"], "--bucket-mb '1,,5'"),
            (["-p", good, "-w", 2, "--net", NET, "--algo", "auto"], "--algo auto"),
            (["-p", good, "-w", 2, "--net", NET, "--algo", "hier"], "needs nodes"),
            (["-p", good, "-w", 2, "--net", NET, "--straggler", "worker=2,compute=2"],
             "worker 2 does not exist"),
            (["-p", good, "-w", 2, "--net", NET, "--straggler", "worker=0,compute=nan"],
             "--straggler 'worker=0,compute=nan'"),
            (["-p", good, "-w", 3, "--topo", "pcie,nodes=2"], "16"),
            (["-p", good, "-w", 2, "--net", NET, "--straggler", "worker=4294967297,compute=2"],
             "--straggler 'worker=4294967297,compute=2'"),
            (["-p", good, "-w", 2, "--net", "latency=5e9s,bandwidth=1GB/s", "--no-threads"],
             "passes 2^63 ns"),
            (["-p", good, "-w", 2, "--net", NET, "--iterations", 1000000, "--compute",
              "flops=1e-12G,rows=1", "--no-threads"], "passes 2^63 ns"),
        ]
        for args, named in cases:
            with self.subTest(args=args[2:]):
                rc, out, err = run(*args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "")
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn(named, err)
                self.assertIn("ringsim step --help", err) if "param" not in named else None
        # sweep and a list of caps are step's alone; so is a slower compute
        for argv, named in ((["--workers", 2, "--bucket-mb", "sweep"], "--bucket-mb 'sweep'"),
                            (["model", "-w", 2, "--net", NET, "--bucket-mb", "1,5"],
                             "--bucket-mb '1,5'"),
                            (["--workers", 2, "--straggler", "worker=1,compute=1.3"],
                             "compute=) is ringsim step's")):
            p = subprocess.run([RINGSIM, *map(str, argv), "-p", good, "--no-trace"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(named, p.stderr)

    # step-9: the shipped compute profiles (scripts/compute-profiles) are
    # the script's output, their layers' FLOPs worked by hand at 100
    # TFLOP/s (1e5 FLOPs a ns), and ringsim step takes them as they are
    def test_compute_profiles(self):
        script = os.path.join(os.path.dirname(EXAMPLES), "scripts", "compute-profiles")
        p = subprocess.run([script, "--check"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        docs = {}
        for name in ("resnet18", "gpt2_small"):
            with open(os.path.join(EXAMPLES, f"{name}_profile.json")) as f:
                doc = json.load(f)
            with open(os.path.join(EXAMPLES, f"{name}.json")) as f:
                plain = json.load(f)
            self.assertEqual([(q["name"], q["shape"]) for q in doc["params"]],
                             [(q["name"], q["shape"]) for q in plain["params"]])
            docs[name] = {q["name"]: q for q in doc["params"]}
        r18, gpt = docs["resnet18"], docs["gpt2_small"]
        # conv1: 2 x 3 x 64 x 7 x 7 x 112 x 112 x 32 images; layer4's
        # 3x3 512->512 at 7 x 7; fc 2 x 512 x 1000 x 32 on its bias, the
        # layer's first gradient; a BatchNorm costs nothing
        for name, flops in (("conv1.weight", 2 * 3 * 64 * 49 * 112 * 112 * 32),
                            ("layer4.1.conv2.weight", 2 * 512 * 512 * 9 * 49 * 32),
                            ("fc.bias", 2 * 512 * 1000 * 32), ("layer4.1.bn2.bias", 0)):
            fwd_ns = -(-flops // 100000)
            self.assertEqual(round(r18[name]["forward_us"] * 1000), fwd_ns, name)
            self.assertEqual(round(r18[name]["backward_us"] * 1000), 2 * fwd_ns, name)
        self.assertEqual(r18["fc.weight"]["backward_us"], 0)
        # GPT-2, 8 x 1024 tokens: c_attn's product plus attention's two
        # (2 x 1024 x 1024 x 768 each a sequence); the tied head's forward
        # on wte, its backward the wait before the first gradient (ln_f's)
        tokens = 8 * 1024
        c_attn = 2 * 768 * 2304 * tokens + 2 * 2 * 1024 * 1024 * 768 * 8
        self.assertEqual(round(gpt["h.5.attn.c_attn.bias"]["forward_us"] * 1000),
                         -(-c_attn // 100000))
        head = 2 * 768 * 50257 * tokens
        self.assertEqual(round(gpt["wte.weight"]["forward_us"] * 1000), -(-head // 100000))
        self.assertEqual(round(gpt["ln_f.bias"]["backward_us"] * 1000), -(-2 * head // 100000))
        self.assertEqual(gpt["wte.weight"]["backward_us"], 0)
        fwd = sum(q["forward_us"] for q in r18.values())
        bwd = sum(q["backward_us"] for q in r18.values())  # 2 x each layer's, rounded up
        rc, out, err = run("-p", os.path.join(EXAMPLES, "resnet18_profile.json"), "-w", 2,
                           "--net", NET, "--no-threads")
        self.assertEqual(rc, 0, err)
        self.assertIn(f"forward {fwd:.3f} us, backward {bwd:.3f} us (model.json's)", out)
        # another batch: the compute scales with it, the params stay
        p = subprocess.run([script, "--model", "resnet18", "--batch", "64"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        b64 = {q["name"]: q for q in json.loads(p.stdout)["params"]}
        self.assertEqual(b64["layer4.1.conv2.weight"]["forward_us"],
                         2 * r18["layer4.1.conv2.weight"]["forward_us"])
        p = subprocess.run([script, "--model", "resnet18", "--batch", "0"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertEqual(p.stderr, "compute-profiles: argument --batch: '0': a whole "
                                   "number from 1 to 1048576 (scripts/compute-profiles --help)\n")


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
