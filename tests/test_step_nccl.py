#!/usr/bin/python3
"""`ringsim step --like nccl`: the training step with each bucket's
all-reduce as NCCL would run it. A timeline worked out by hand from the
library's own numbers (`ringsim model --like nccl -b S -e S --json`, the
all-reduce of one buffer of S bytes), the forced choices against `ringsim
model --like nccl`'s, the --json keys, and what is refused (exit 2, one
line on stderr naming the input, nothing on stdout, before anything runs).

    test_step_nccl.py RINGSIM EXAMPLES_DIR [StepNccl.test_name ...]
"""
import json
import os
import tempfile
import unittest

import helpers

RINGSIM = EXAMPLES = None
TOPO = "dgx-h100,nodes=2"  # 16 GPUs, 8 NICs a node
MIB = 262144  # f32 elements in 1 MiB


def run(*args):
    return helpers.run(*args)


def two_buckets():
    """p0 of 4 MiB and p1 of 1 MiB, registered in that order: backward
    makes p1's gradient first, 100 us after the 5 us forward, and p0's 10
    us after that. DDP's first bucket (1 MiB) holds p1, the next p0."""
    return {"name": "two", "params": [
        {"name": "p0", "shape": [4 * MIB], "forward_us": 5, "backward_us": 10},
        {"name": "p1", "shape": [MIB], "backward_us": 100}]}


class StepNccl(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.two = self.model(two_buckets())

    def tearDown(self):
        self.tmp.cleanup()

    def model(self, doc, name="m.json"):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def json_of(self, *args):
        rc, out, err = run(*args, "--json")
        self.assertEqual(rc, 0, err)
        return json.loads(out)

    def step(self, *args):
        return self.json_of("step", "--like", "nccl", "--topo", TOPO, "-p", self.two, *args)

    def sweep(self, size, *force):
        """One buffer of size bytes, as ringsim model --like nccl picks and
        times it: (its pick's keys, its time in ns)."""
        doc = self.json_of("model", "--like", "nccl", "--topo", TOPO, "-b", size, "-e", size,
                           *force)
        (row,) = doc["sizes"]
        self.assertEqual(row["bytes"], size)
        return row, round(row["time_us"] * 1000)

    def assert_pick(self, bucket, row, ns):
        """A bucket's "nccl" object is the sweep's row for its bytes."""
        got = bucket["nccl"]
        self.assertEqual((got["algo"], got["proto"], got["channels"], got["time_ns"]),
                         (row["algo"], row["proto"], row["channels"], ns))
        runner = row["runner_up"]
        if runner is None:
            self.assertIsNone(got["runner_up"])
        else:
            r = got["runner_up"]
            self.assertEqual((r["algo"], r["proto"], r["channels"], r["time_ns"]),
                             (runner["algo"], runner["proto"], runner["channels"],
                              round(runner["time_us"] * 1000)))
        self.assertEqual(bucket["end_ns"] - bucket["start_ns"], ns)

    # nccl-1: by hand. Bucket 0 (p1, 1 MiB) is ready at 105 us and takes
    # d1, the time ringsim predicts for NCCL's pick for 1 MiB; bucket 1
    # (p0, 4 MiB) is ready at 115 us but waits for bucket 0's end (NCCL
    # runs a communicator's collectives one after another), then takes d4.
    # The last gradient is at 115 us: bucket 0 exposes 105 + d1 - 115,
    # bucket 1 all of d4. Step 1 is one bucket of 5 MiB from 115 us. With
    # worker 3 computing twice as long (its forward 10 us, its gradients
    # at 210 and 230 us) every bucket starts at worker 3's ready time: a
    # collective ends only once every rank has joined.
    def test_by_hand(self):
        pick1, d1 = self.sweep(1 << 20)
        pick4, d4 = self.sweep(4 << 20)
        pick5, d5 = self.sweep(5 << 20)
        self.assertNotEqual((pick1["algo"], pick1["proto"]), (pick4["algo"], pick4["proto"]),
                            "the case wants two different picks")
        for straggler, scale in (([], 1), (["--straggler", "worker=3,compute=2"], 2)):
            with self.subTest(straggler=straggler):
                doc = self.step(*straggler)
                self.assertFalse(doc["threads"])
                (row,) = doc["rows"]
                self.assertEqual(row["algo"], "nccl")
                later = row["later"]
                r0, r1 = 105000 * scale, 115000 * scale
                e0 = r0 + d1
                e1 = max(r1, e0) + d4
                self.assertEqual([(b["bytes"], b["ready_ns"], b["start_ns"], b["end_ns"],
                                   b["exposed_ns"]) for b in later["buckets"]],
                                 [(1 << 20, r0, r0, e0, max(0, e0 - r1)),
                                  (4 << 20, r1, max(r1, e0), e1, e1 - max(r1, e0))])
                self.assertEqual((later["step_ns"], later["exposed_ns"], later["comm_ns"],
                                  later["hidden_ns"]),
                                 (e1, e1 - r1, d1 + d4, d1 + d4 - (e1 - r1)))
                self.assert_pick(later["buckets"][0], pick1, d1)
                self.assert_pick(later["buckets"][1], pick4, d4)
                # every worker's lane is the bucket's span
                for lane in later["workers"]:
                    self.assertEqual(lane["allreduce"], [[r0, e0], [max(r1, e0), e1]])
                first = row["first"]
                (one,) = first["buckets"]
                self.assertEqual((one["bytes"], one["start_ns"], one["end_ns"], first["step_ns"],
                                  first["exposed_ns"]), (5 << 20, r1, r1 + d5, r1 + d5, d5))
                self.assert_pick(one, pick5, d5)
                self.assertEqual(row["total_ns"], first["step_ns"] + later["step_ns"])
        # the text report says the same, to the ns
        rc, out, err = run("step", "--like", "nccl", "--topo", TOPO, "-p", self.two)
        self.assertEqual(rc, 0, err)
        self.assertIn("ringsim step: NCCL's all-reduce of \"two\" on 16 workers, 2 steps (the "
                      "schedule alone: no threads, no data; the threaded run has no NCCL "
                      "algorithms yet)\n", out)
        self.assertIn("  topology   --topo dgx-h100,nodes=2: 2 nodes x 8 GPUs, 8 NICs a node;", out)
        us = lambda ns: f"{ns // 1000}.{ns % 1000:03d}"
        e0 = 105000 + d1
        e1 = e0 + d4
        self.assertIn(f"  step 2     {us(e1)} us: compute 115.000 us, communication "
                      f"{us(d1 + d4)} us, ", out)
        runner = pick1["runner_up"]
        self.assertIn(f"         0       1      1048576      105.000 {us(105000):>12} {us(e0):>12} "
                      f"{us(e0 - 115000):>12}  {pick1['algo']:<8}  {pick1['proto']:<6} "
                      f"{pick1['channels']:>8}  {runner['algo'] + '/' + runner['proto']:<16} "
                      f"{us(round(runner['time_us'] * 1000)):>12}\n", out)
        self.assertIn(f"  critical   bucket 1's all-reduce ends {us(e1 - 115000)} us after the "
                      "last gradient (115.000 us)", out)

    # nccl-2: --algo, --proto and --channels force the pick as they force
    # ringsim model --like nccl's, bucket by bucket (its --params rows).
    def test_forced(self):
        for force in (["--algo", "ring"], ["--algo", "tree", "--proto", "LL"],
                      ["--algo", "nvlstree"], ["--proto", "LL128", "--channels", "4"],
                      ["--algo", "ring", "--proto", "Simple", "--channels", "2"]):
            with self.subTest(force=force):
                doc = self.step(*force)
                got = doc["rows"][0]["later"]["buckets"]
                model = self.json_of("model", "--like", "nccl", "--topo", TOPO, "-p", self.two,
                                     *force)
                self.assertEqual(len(got), len(model["buckets"]))
                for b, m in zip(got, model["buckets"]):
                    self.assertEqual(b["bytes"], m["bytes"])
                    n = b["nccl"]
                    self.assertEqual((n["algo"], n["proto"], n["channels"], n["time_ns"]),
                                     (m["algo"], m["proto"], m["channels"],
                                      round(m["time_us"] * 1000)))
                    self.assertEqual(b["end_ns"] - b["start_ns"], n["time_ns"])
                if "--algo" in force:
                    algo = force[force.index("--algo") + 1]
                    self.assertEqual({b["nccl"]["algo"].lower() for b in got}, {algo})
                if "--channels" in force:
                    self.assertEqual({b["nccl"]["channels"] for b in got}, {int(force[-1])})
                forced = doc["nccl"]["forced"]
                self.assertEqual(forced["channels"], int(force[-1]) if "--channels" in force
                                 else None)

    # nccl-3: a compressing hook moves half the bytes: NCCL's pick and its
    # time are those of the bytes the bucket moves.
    def test_hook_moves_its_bytes(self):
        pick, d = self.sweep(2 << 20)
        doc = self.step("--hook", "fp16", "--bucket-mb", 0)
        (one,) = doc["rows"][0]["later"]["buckets"]
        self.assertEqual((one["bytes"], one["nccl"]["bytes"]), (5 << 20, 5 << 19))
        pick, d = self.sweep(5 << 19)
        self.assert_pick(one, pick, d)

    # nccl-4: the JSON's keys: the document's "nccl" (the machine as NCCL
    # sees it, what was forced), each bucket's pick and runner-up, the
    # rows named "nccl"; a list of caps is a row each, each what the cap
    # gives alone.
    def test_json_keys(self):
        doc = self.step("--bucket-mb", "1,25")
        self.assertEqual(doc["schema"], "ringsim.step/1")
        self.assertEqual(set(doc), {"schema", "model", "workers", "iterations", "threads", "hook",
                                    "rows", "nccl"})
        self.assertEqual(set(doc["nccl"]), {"topology", "slots", "forced"})
        self.assertEqual(doc["nccl"]["forced"], {"algo": None, "proto": None, "channels": None})
        self.assertEqual(doc["nccl"]["slots"], 8)
        topo = doc["nccl"]["topology"]
        self.assertEqual((topo["spec"], topo["nodes"], topo["gpus"], topo["ranks"], topo["cc"]),
                         (TOPO, 2, 8, 16, 90))
        self.assertEqual([r["algo"] for r in doc["rows"]], ["nccl", "nccl"])
        for row in doc["rows"]:
            for b in row["first"]["buckets"] + row["later"]["buckets"]:
                self.assertEqual(set(b["nccl"]), {"bytes", "algo", "proto", "channels",
                                                  "time_ns", "nccl_time_us", "runner_up"})
                self.assertEqual(set(b["nccl"]["runner_up"]),
                                 {"algo", "proto", "channels", "time_ns", "nccl_time_us"})
            alone = self.step("--bucket-mb", row["cap_bytes"] >> 20)["rows"][0]
            self.assertEqual(alone["later"], row["later"])
        # without --like nccl: no such key
        plain = self.json_of("step", "--topo", TOPO, "-p", self.two, "--no-threads")
        self.assertNotIn("nccl", plain)
        self.assertNotIn("nccl", plain["rows"][0]["later"]["buckets"][0])

    # nccl-5: what is refused, each with exit 2, one line naming it, and
    # nothing on stdout.
    def test_bad_input(self):
        like = ["--like", "nccl", "--topo", TOPO]
        cases = [
            (["--like", "nccl", "-w", 4, "--net", "latency=1us,bandwidth=1GB/s"],
             "give --topo (dgx-h100,nodes=N, ...), not a flat --net"),
            (["--like", "nccl", "--topo", "pcie,nodes=2"],
             "--like nccl: --topo pcie,nodes=2: --topo: NCCL's model needs the GPUs' compute "
             "capability"),
            (like + ["--hook", "powersgd:rank=2"],
             "--hook powersgd with --like nccl is not supported yet"),
            (like + ["--algo", "rd"], "--algo rd is not one of NCCL's algorithms"),
            (like + ["--algo", "gloo-ring"], "--algo gloo-ring is not one of NCCL's algorithms"),
            (like + ["--algo", "hier"], "--algo hier is not one of NCCL's algorithms"),
            (like + ["--algo", "all"], "--algo all with --like nccl"),
            (like + ["--trace", os.path.join(self.tmp.name, "t.db")],
             "the threaded run has no NCCL algorithms yet"),
            (like + ["--algo", "nvls"], "--algo nvls runs within one node"),
            (["--like", "nccl", "--topo", "dgx-h100", "--algo", "nvlstree"],
             "on one node give --algo nvls"),
            (["--like", "nccl", "--topo", "dgx-a100", "--algo", "nvls"],
             "the GPUs meet at a switch that does not reduce"),
            (["--like", "nccl", "--topo", "dgx-h100", "--algo", "nvls", "--proto", "LL"],
             "--like nccl --algo nvls --proto LL: NCCL_ALGO=NVLS NCCL_PROTO=LL leave NCCL "
             "nothing"),
            (like + ["--segment-bytes", "1M"], "--segment-bytes does not apply to --like nccl"),
            (like + ["--reduce-rate", "1GB/s"], "--reduce-rate does not apply to --like nccl"),
            (like + ["--straggler", "worker=1,us=3"], "give worker=R,compute=F"),
            (like + ["--channels", 0], "--channels '0'"),
            (like + ["--channels", 65], "--channels '65'"),
            (like + ["--proto", "LL64"], "--proto 'LL64'"),
            (like + ["-w", 8], "2 nodes of 8 GPUs are 16 workers, and --workers is 8"),
            (["--like", "ddp-gloo", "--topo", TOPO], "--like 'ddp-gloo': expected nccl"),
            # NCCL's own: without --like nccl
            (["--topo", TOPO, "--proto", "LL"], "--proto forces NCCL's protocol"),
            # (--channels C alone runs the ring or the tree on C channels:
            # test_channels_cli.py; with another algorithm it is refused)
            (["--topo", TOPO, "--algo", "hier", "--channels", 4],
             "--channels 4: NCCL's channels are rings or trees"),
            (["--topo", TOPO, "--algo", "NVLSTree"],
             "--algo NVLSTree is NCCL_ALGO's spelling, which --like nccl takes; "
             "ringsim's own schedule is --algo nvlstree"),
        ]
        for args, named in cases:
            with self.subTest(args=args):
                rc, out, err = run("step", "-p", self.two, *args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "")
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn(named, err)
                self.assertTrue(err.startswith("ringsim: step: "), err)
        # refused before the trace is opened: nothing written
        self.assertFalse(os.path.exists(os.path.join(self.tmp.name, "t.db")))


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
