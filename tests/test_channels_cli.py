#!/usr/bin/python3
"""--channels on the command line: the ring and the tree on NCCL's
channels (docs/algorithms.md, "Channels"): the threaded run and `ringsim
model` agree to the ns, one channel is the ring (the tree) as it was,
byte for byte, the trace says which channel carried each transfer (and a
trace from before gets the column), and what is refused.

    test_channels_cli.py RINGSIM EXAMPLES [ChannelsCli.test_name ...]
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import unittest

import helpers

RINGSIM = EXAMPLES = None

NET = ["--net", "latency=5us,bandwidth=25GB/s"]
TOPO = ["--topo", "dgx-h100,nodes=2"]


def masked(text):
    """The command's output without what the machine's speed changes."""
    text = re.sub(r'"(wall_ns|fill_ns|check_ns|algbw_gbs|busbw_gbs|measured_[a-z_]+)": '
                  r'[0-9.e+-]+', r'"\1": X', text)
    return re.sub(r"[0-9]+\.[0-9]+ (s|us|GB/s)", "X", text)


class ChannelsCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.big = os.path.join(EXAMPLES, "bucket_1mib.json")
        self.small = os.path.join(EXAMPLES, "mlp.json")

    def tearDown(self):
        self.tmp.cleanup()

    # chan-1: the threaded run and the model agree to the ns on 1, 2, 4
    # and 8 channels, on --net and on two DGX H100 nodes. On --net the
    # channels share every link: the time hardly moves (within 0.1%); on
    # the nodes each channel leaves through another NIC: more channels
    # are faster.
    def test_run_equals_model(self):
        for where in ([*NET, "-w", 8], TOPO):
            times = []
            for c in (1, 2, 4, 8):
                with self.subTest(where=where, channels=c):
                    rc, out, err = helpers.run("-p", self.big, *where, "--channels", c,
                                               "--json", "--no-trace")
                    self.assertEqual(rc, 0, err)
                    report = json.loads(out)
                    self.assertEqual(report["status"], "ok")
                    rc, out, err = helpers.run("model", "-p", self.big, *where,
                                               "--channels", c, "--json")
                    self.assertEqual(rc, 0, err)
                    self.assertEqual(json.loads(out)["sim_ns"], report["sim_ns"])
                    times.append(report["sim_ns"])
            if where == TOPO:
                self.assertEqual(times, sorted(times, reverse=True), times)
                self.assertLess(times[-1], 0.8 * times[0], times)
            else:
                for t in times:
                    self.assertLess(abs(t - times[0]), times[0] / 1000, times)

    # chan-2: unless told, the ring runs on NCCL's count of channels
    # where NCCL's model knows the topology (the count `--like nccl`
    # gives the ring there: 16 on two DGX H100 nodes, 24 on one), and on
    # one on a flat --net: text and --json byte for byte what --channels
    # with that count prints (what the machine's speed changes aside),
    # run and model.
    def test_default_is_nccls_count(self):
        counts = {}
        for topo in (TOPO, ["--topo", "dgx-h100"]):
            rc, out, err = helpers.run("model", "--like", "nccl", *topo, "--algo", "ring",
                                       "-b", "1G", "-e", "1G", "--json")
            self.assertEqual(rc, 0, err)
            counts[topo[-1]] = json.loads(out)["sizes"][0]["channels"]
        self.assertEqual(counts, {"dgx-h100,nodes=2": 16, "dgx-h100": 24})
        for args, count in (
                (["-p", self.small, "-w", 4, *NET, "--no-trace"], 1),
                (["-p", self.small, "-w", 4, *NET, "--no-trace", "--json"], 1),
                (["-p", self.big, *TOPO, "--no-trace"], counts[TOPO[-1]]),
                (["-p", self.big, *TOPO, "--no-trace", "--json"], counts[TOPO[-1]]),
                (["model", "-p", self.big, *TOPO, "--json"], counts[TOPO[-1]]),
                (["model", "-p", self.big, "--topo", "dgx-h100", "--json"], 24)):
            with self.subTest(args=args):
                rc, plain, err = helpers.run(*args)
                self.assertEqual(rc, 0, err)
                rc, given, err = helpers.run(*args, "--channels", count)
                self.assertEqual(rc, 0, err)
                self.assertEqual(masked(given), masked(plain))
                if "--json" in args and args[0] != "model":
                    self.assertEqual(json.loads(plain)["channels"], count)
        # one channel is one ring: fewer transfers than the default's
        rc, one, err = helpers.run("-p", self.big, *TOPO, "--no-trace", "--json",
                                   "--channels", 1)
        self.assertEqual(rc, 0, err)
        rc, plain, err = helpers.run("-p", self.big, *TOPO, "--no-trace", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(one)["channels"], 1)
        self.assertLess(json.loads(plain)["sim_ns"], json.loads(one)["sim_ns"])

    # chan-3: the trace's channel column: each channel's transfers go
    # round its own ring (NCCL's on the nodes: channel 0 enters node 0 at
    # GPU 0 and goes down, 0 -> 7; channel 1 another way), every channel
    # moves its part of the bucket, and every transfer of a one-channel
    # run is channel 0.
    def test_trace_channel(self):
        db = os.path.join(self.tmp.name, "t.db")
        rc, out, err = helpers.run("-p", self.big, *TOPO, "--channels", 4, "--trace", db)
        self.assertEqual(rc, 0, err)
        rc, out, err = helpers.run("-p", self.small, "-w", 4, "--trace", db)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(db)
        self.assertEqual(con.execute("SELECT DISTINCT channel FROM transfer WHERE run_id = 2")
                         .fetchall(), [(0,)])
        rows = con.execute("SELECT channel, src, dst, bytes FROM transfer "
                           "WHERE run_id = 1").fetchall()
        self.assertEqual(sorted({r[0] for r in rows}), [0, 1, 2, 3])
        for c in range(4):
            nexts = {src: dst for ch, src, dst, _ in rows if ch == c}
            self.assertEqual(len(nexts), 16)
            seen, r = [], 0  # one cycle through all 16 GPUs
            while r not in seen:
                seen.append(r)
                r = nexts[r]
            self.assertEqual(len(seen), 16, (c, nexts))
            # each worker sends 2(W-1)/W of its channel's part
            sent = sum(b for ch, src, _, b in rows if ch == c and src == 0)
            self.assertEqual(sent, 2 * 15 * (1 << 20) // 4 // 16)
        self.assertEqual({src: dst for ch, src, dst, _ in rows if ch == 0}[0], 7)
        self.assertNotEqual({src: dst for ch, src, dst, _ in rows if ch == 0},
                            {src: dst for ch, src, dst, _ in rows if ch == 1})
        con.close()

    # chan-4: a trace made before the channel column (dropped here, as an
    # older ringsim made it) keeps its runs and gets the column, NULL in
    # its earlier runs.
    def test_trace_from_before_channel(self):
        db = os.path.join(self.tmp.name, "old.db")
        rc, out, err = helpers.run("-p", self.small, "-w", 3, "--trace", db)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(db)
        before = con.execute("SELECT * FROM transfer").fetchall()
        con.execute("ALTER TABLE transfer DROP COLUMN channel")
        con.commit()
        con.close()
        rc, out, err = helpers.run("-p", self.big, "-w", 4, *NET, "--channels", 2,
                                   "--trace", db)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(db)
        self.assertEqual([r[:-1] for r in con.execute(
            "SELECT * FROM transfer WHERE run_id = 1").fetchall()],
                         [r[:-1] for r in before])
        self.assertEqual(con.execute("SELECT count(*) FROM transfer WHERE run_id = 1 "
                                     "AND channel IS NOT NULL").fetchone()[0], 0)
        self.assertEqual(con.execute("SELECT DISTINCT channel FROM transfer WHERE run_id = 2 "
                                     "ORDER BY channel").fetchall(), [(0,), (1,)])
        con.close()

    # chan-11: --algo auto weighs each algorithm on its own channels (the
    # ring on NCCL's 16 on two DGX H100 nodes, the others on one), as
    # `ringsim model --algo <name>` times each: the ring's buckets run on
    # them and rd's on none, in one run, whose check passes and whose
    # simulated time is the sum of the chosen predictions to the ns.
    def test_auto_takes_each_algorithms_channels(self):
        mix = os.path.join(self.tmp.name, "mix.json")
        with open(mix, "w") as f:
            json.dump({"name": "mix", "params": [{"name": f"p{i}", "shape": [n]} for i, n in
                                                  enumerate([2, 2000000, 4, 8000000, 16])]}, f)
        rc, out, err = helpers.run("-p", mix, *TOPO, "--algo", "auto", "--bucket-mb",
                                   "0.00001", "--no-trace", "--json")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual((r["status"], r["checked"], r["identical"]), ("ok", True, True))
        self.assertEqual(r["channels"], 16)
        buckets = r["auto"]["buckets"]
        self.assertEqual([b["algo"] for b in buckets], ["ring", "rd", "ring", "rd"])
        self.assertEqual(r["sim_ns"], sum(b["predicted_ns"][b["algo"]] for b in buckets))
        self.assertEqual(r["sim_ns"], r["predicted_ns"])
        for b in buckets[:2]:
            one = os.path.join(self.tmp.name, f"b{b['bucket']}.json")
            with open(one, "w") as f:
                json.dump({"name": "one", "params": [{"name": "p", "shape": [b["elems"]]}]}, f)
            for algo in ("ring", "rd"):
                with self.subTest(bucket=b["bucket"], algo=algo):
                    rc, out, err = helpers.run("model", "-p", one, *TOPO, "--algo", algo,
                                               "--json")
                    self.assertEqual(rc, 0, err)
                    m = json.loads(out)
                    self.assertEqual(m["sim_ns"], b["predicted_ns"][algo])
                    self.assertEqual(m["channels"], 16 if algo == "ring" else 1)

    # chan-13: --explain runs the tree where a run without it does, on
    # NCCL's channels (24 on a DGX H100), and narrates it channel by
    # channel, as the ring: the run it explains is the user's run (the
    # same channels line, simulated time and result), not one channel's.
    def test_explain_tree_on_its_channels(self):
        args = ("-p", self.small, "--topo", "dgx-h100", "--algo", "tree", "--no-trace")
        rc, out, err = helpers.run(*args, "--explain")
        self.assertEqual(rc, 0, err)
        rc, plain, err = helpers.run(*args)
        self.assertEqual(rc, 0, err)
        text, report = out.split("\nringsim ", 1)
        self.assertIn("double binary tree all-reduce", text)
        self.assertIn("\nThe tree runs on 24 of NCCL's channels", text)
        self.assertIn("\n  channel 0: elements 0..25, tree 0, root worker 0\n", text)
        self.assertIn("\n  channel 1: idle (the bucket is too small for it)\n", text)
        self.assertIn("\nchannel 0, tree 0 reduce, level 3 up to level 2\n", text)
        self.assertNotIn("The ring runs on", text)

        def lines(report, *keys):
            return [l.split("   measured wall")[0] for l in report.splitlines()
                    if l.split()[:1] and l.split()[0] in keys]
        self.assertIn("  channels   24 of NCCL's", "ringsim " + report)
        self.assertEqual(lines(report, "channels", "simulated", "steps", "transfers"),
                         lines(plain, "channels", "simulated", "steps", "transfers"))
        self.assertEqual(report[report.index("result (every worker holds):"):],
                         plain[plain.index("result (every worker holds):"):])

    # chan-5: what is refused, one line naming the value, exit 2, nothing
    # on stdout; --like nccl keeps its own count.
    def test_refusals(self):
        cases = [(["-p", self.small, "--channels", 0], "--channels '0'"),
                 (["-p", self.small, "--channels", 65], "--channels '65'"),
                 (["-p", self.small, "--algo", "rd", "--channels", 2],
                  "--channels 2: NCCL's channels are rings"),
                 (["-p", self.small, "--algo", "auto", "--channels", 2], "--algo auto"),
                 (["model", "-p", self.small, *NET, "--algo", "all", "--channels", 4],
                  "--algo all"),
                 (["model", "-p", self.small, *NET, "--algo", "linear", "--channels", 4],
                  "--algo linear"),
                 (["step", "-p", self.small, *NET, "--algo", "rhd", "--channels", 2],
                  "--algo rhd")]
        for args, named in cases:
            with self.subTest(args=args):
                rc, out, err = helpers.run(*args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "")
                self.assertEqual(len(err.splitlines()), 1, err)
                self.assertIn(named, err)
        rc, out, err = helpers.run("model", "--like", "nccl", *TOPO, "-b", "1M", "-e", "1M",
                                   "--channels", 4, "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["sizes"][0]["channels"], 4)

    # chan-11: the tree on channels (NCCL's trees: docs/algorithms.md,
    # "The channels' trees"): the threaded run and the model agree to the
    # ns on 1, 2, 4 and 8 channels, every worker's result checked, on
    # --net and on two DGX H100 nodes, where channels are faster than one
    # (each crosses through its own NIC); and --channels 1 is the tree as
    # it was, byte for byte (refused before: --channels was the ring's).
    def test_tree_run_equals_model(self):
        for where in ([*NET, "-w", 8], TOPO):
            times = []
            for c in (1, 2, 4, 8):
                with self.subTest(where=where, channels=c):
                    rc, out, err = helpers.run("-p", self.big, *where, "--algo", "tree",
                                               "--channels", c, "--json", "--no-trace")
                    self.assertEqual(rc, 0, err)
                    report = json.loads(out)
                    self.assertEqual((report["status"], report["checked"],
                                      report["identical"], report["channels"]),
                                     ("ok", True, True, c))
                    rc, out, err = helpers.run("model", "-p", self.big, *where, "--algo",
                                               "tree", "--channels", c, "--json")
                    self.assertEqual(rc, 0, err)
                    self.assertEqual(json.loads(out)["sim_ns"], report["sim_ns"])
                    times.append(report["sim_ns"])
            if where == TOPO:
                self.assertTrue(all(t < 0.8 * times[0] for t in times[1:]), times)
        # unless told, the tree too on NCCL's count (16 on two DGX H100
        # nodes), one on --net
        for args, count in (
                (["-p", self.small, "-w", 5, *NET, "--algo", "tree", "--no-trace"], 1),
                (["-p", self.big, *TOPO, "--algo", "tree", "--no-trace", "--json"], 16),
                (["model", "-p", self.big, *TOPO, "--algo", "tree", "--json"], 16)):
            with self.subTest(args=args):
                rc, plain, err = helpers.run(*args)
                self.assertEqual(rc, 0, err)
                rc, one, err = helpers.run(*args, "--channels", count)
                self.assertEqual(rc, 0, err)
                self.assertEqual(masked(one), masked(plain))

    # chan-12: the tree's trace on 4 channels of two DGX H100 nodes (a NIC
    # a GPU): channel c's chain heads are GPU c of each node, which alone
    # cross (rail-aligned, through NIC c); channels 0 and 1 run tree 0
    # (node 0 the root: the reduce crosses 8+c -> c), 2 and 3 tree 1 (node
    # 1 the root); each channel moves its own part of the bucket, every
    # worker but its root receiving all of it in the broadcast; the report
    # says so.
    def test_tree_trace_channel(self):
        db = os.path.join(self.tmp.name, "t.db")
        rc, out, err = helpers.run("-p", self.big, *TOPO, "--algo", "tree",
                                   "--channels", 4, "--trace", db)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(db)
        rows = con.execute("SELECT channel, phase, src, dst, elem_offset, elems "
                           "FROM transfer").fetchall()
        con.close()
        rc, out, err = helpers.run("-p", self.big, *TOPO, "--algo", "tree",
                                   "--channels", 4, "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertIn("  channels   4 of NCCL's: each bucket cut between them as NCCL "
                      "cuts it, each one of the two trees on its part (the first half "
                      "tree 0), its chain through each node from its NIC's GPU", out)
        part = (1 << 20) // 4 // 4
        for c in range(4):
            across = sorted({(ph, s, d) for ch, ph, s, d, _, _ in rows
                             if ch == c and s // 8 != d // 8})
            root, leaf = (c, 8 + c) if c < 2 else (8 + c, c)
            self.assertEqual(across, [("broadcast", root, leaf), ("reduce", leaf, root)],
                             (c, across))
            for w in range(16):
                got = sorted((o, n) for ch, ph, s, d, o, n in rows
                             if ch == c and ph == "broadcast" and d == w)
                if w == root:
                    self.assertEqual(got, [])
                    continue
                self.assertEqual(sum(n for _, n in got), part, (c, w))
                self.assertEqual(got[0][0], c * part)
                for (o1, n1), (o2, _) in zip(got, got[1:]):
                    self.assertEqual(o1 + n1, o2)

    # chan-13: the tree's split (NCCL's runTreeSplit) by hand: 4 workers
    # on --net (0.25 us, 4.096 GB/s: 1000 ns a 4 KiB segment on the wire,
    # 1250 to arrive), 4096 floats (one cell: channel 0 alone busy, tree
    # 0: 0 <- 2 <- {1, 3}), 4 KiB segments: H = 2 chunks of 2 segments,
    # S = 4. Worker 2 (depth 1) runs Up(t + 1), Down(t - 1); the root
    # Up(t), Down(t); the leaves (depth 2) Up(t + 2), Down(t - 2). Each
    # receive waits for its port (a segment a wire time after the last)
    # and each send for the link. 2 sends segment 0 up at 2250 (1's came
    # at 1250, 3's a port time later); the root has it at 3500 and sends
    # it down at once; 2 takes it at 7250, between its reduces of segments
    # 2 and 3 (its port busy with segment 2 until 6250); the root's reduce
    # of segment 3 ends at 10500, the last broadcast at 16500 (worker 3's
    # segment 3). The up-down order took 19000: the root's broadcast
    # began at 9500, after the whole reduce.
    def test_tree_split_by_hand(self):
        params = os.path.join(self.tmp.name, "b.json")
        with open(params, "w") as f:
            json.dump({"name": "b", "params": [{"name": "g", "shape": [4096]}]}, f)
        db = os.path.join(self.tmp.name, "t.db")
        args = ["-p", params, "-w", 4, "--net", "latency=0.25us,bandwidth=4.096GB/s",
                "--algo", "tree", "--channels", 2, "--segment-bytes", 4096,
                "--bucket-mb", 0]
        rc, out, err = helpers.run(*args, "--json", "--trace", db)
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        self.assertEqual((report["status"], report["checked"], report["sim_ns"]),
                         ("ok", True, 16500))
        rc, out, err = helpers.run("model", *args, "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["sim_ns"], 16500)
        con = sqlite3.connect(db)
        rows = con.execute("SELECT phase, src, dst, elem_offset / 1024, sim_send_ns, "
                           "sim_recv_ns FROM transfer WHERE channel = 0 "
                           "ORDER BY phase, src, dst, elem_offset").fetchall()
        con.close()
        # (phase, from, to): each segment's (sent, received)
        hand = {("reduce", 1, 2): ((0, 1250), (1000, 3250), (2000, 5250), (3000, 8250)),
                ("reduce", 3, 2): ((0, 2250), (1000, 4250), (2000, 6250), (3000, 9250)),
                ("reduce", 2, 0): ((2250, 3500), (4250, 5500), (6250, 7500),
                                   (9250, 10500)),
                ("broadcast", 0, 2): ((3500, 7250), (5500, 10250), (7500, 11250),
                                      (10500, 12250)),
                ("broadcast", 2, 1): ((7250, 8500), (10250, 11500), (12250, 13500),
                                      (14250, 15500)),
                ("broadcast", 2, 3): ((8250, 9500), (11250, 12500), (13250, 14500),
                                      (15250, 16500))}
        self.assertEqual(rows, sorted((ph, a, b, j, sent, got)
                                      for (ph, a, b), times in hand.items()
                                      for j, (sent, got) in enumerate(times)))
        # the broadcast of segment 0 leaves the root before the reduce of
        # the last segment has reached it
        self.assertLess(min(r[4] for r in rows if r[0] == "broadcast"),
                        max(r[5] for r in rows if r[0] == "reduce"))

    # chan-14: in the split both steps begin at once, and a wire fault
    # still hits the first message its step sends: a corrupt at the
    # reduce (step 0) is caught in the reduce, one at the broadcast (step
    # 1) in the broadcast (the first was lost, and the second hit a
    # reduce message, when both steps began together).
    def test_tree_split_wire_faults(self):
        params = os.path.join(self.tmp.name, "b.json")
        with open(params, "w") as f:
            json.dump({"name": "b", "params": [{"name": "g", "shape": [4096]}]}, f)
        args = ["-p", params, "-w", 4, "--net", "latency=0.25us,bandwidth=4.096GB/s",
                "--algo", "tree", "--channels", 2, "--segment-bytes", 4096,
                "--no-trace", "--timeout", 5]
        for fault, said in (
                ("corrupt:worker=1,step=0", "worker 2 received a damaged segment of "
                 "chunk 0 from worker 1 in reduce step 0 (checksum mismatch)"),
                ("corrupt:worker=2,step=1", "worker 1 received a damaged segment of "
                 "chunk 0 from worker 2 in broadcast step 0 (checksum mismatch)")):
            with self.subTest(fault=fault):
                rc, out, err = helpers.run(*args, "--inject", fault)
                self.assertEqual(rc, 3, out + err)
                self.assertIn(f"ringsim: {said}\n", err)

    # chan-7: --explain and the report say the channels: each one's part
    # of the bucket and its ring (NCCL's on a topology its model knows:
    # two nodes of four GPUs with a switch and a NIC each), an idle one as
    # idle.
    def test_explain_and_report(self):
        topo = ["--topo", "nodes=2,gpus=4,nics=4,cc=90,switch=nvswitch,"
                "intra=1us/100GB/s,nic=5us/25GB/s"]
        rc, out, err = helpers.run("-p", self.big, *topo, "--channels", 4, "--explain",
                                   "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertIn("The ring runs on 4 of NCCL's channels", out)
        for line in ("  channel 0: elements 0..65535, ring 0 3 2 1 5 6 7 4",
                     "  channel 1: elements 65536..131071, ring 1 2 3 0 4 7 6 5",
                     "  channel 3: elements 196608..262143, ring 3 0 1 2 6 5 4 7"):
            self.assertIn(line + "\n", out)
        self.assertIn("on NCCL's rings", out)
        rc, out, err = helpers.run("-p", self.small, "-w", 4, "--channels", 2, "--explain",
                                   "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertIn("  channel 0: elements 0..25, ring 0 1 2 3\n", out)
        self.assertIn("  channel 1: idle", out)
        self.assertIn("they share every link", out)
        rc, out, err = helpers.run("-p", self.small, "-w", 4, "--explain", "--no-trace")
        self.assertNotIn("channel", out)

    # chan-11: --explain narrates each busy channel's steps along its own
    # ring over its own chunks: every message it narrates (who sends which
    # chunk to whom, at which step) is the trace's of that channel, and
    # its chunks' elements are the trace's; a channel on an earlier
    # channel's ring order is said in one line, not narrated again.
    def test_explain_each_channel(self):
        model = os.path.join(self.tmp.name, "m.json")
        with open(model, "w") as f:
            json.dump({"name": "m", "params": [{"name": "g", "shape": [20000]}]}, f)
        db = os.path.join(self.tmp.name, "t.db")
        cases = ((["-p", self.big, "--topo", "nodes=2,gpus=4,nics=4,cc=90,switch=nvswitch,"
                   "intra=1us/100GB/s,nic=5us/25GB/s", "--channels", 4], 8, {}),
                 (["-p", model, "--topo", "dgx-h100,nodes=2,gpus=2,nics=2", "--channels", 3],
                  4, {2: 0}))
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        for rid, (args, W, repeats) in enumerate(cases, 1):
            rc, out, err = helpers.run(*args, "--explain", "--trace", db)
            self.assertEqual(rc, 0, err)
            text = out[:out.index("\nringsim ")]
            said = {}  # (channel, phase, step) -> {(src, dst, chunk)}
            title = None
            for line in text.splitlines():
                m = re.fullmatch(r"channel (\d+), (reduce-scatter|all-gather) step (\d+)", line)
                if m:
                    title = (int(m[1]), m[2].replace("-", "_"), int(m[3]))
                    said[title] = set()
                    continue
                m = re.match(r"  worker (\d+) sends chunk (\d+), .* to worker (\d+),", line)
                if m and title:
                    said[title].add((int(m[1]), int(m[3]), int(m[2])))
                elif not line.startswith("  "):
                    title = None
            want = {}
            for ch, ph, st, src, dst, chunk in con.execute(
                    "SELECT channel, phase, step, src, dst, chunk FROM transfer WHERE run_id = ? "
                    "AND segment = 0", (rid,)):
                if ch not in repeats:
                    want.setdefault((ch, ph, st), set()).add((src, dst, chunk))
            self.assertEqual(said, want, f"run {rid}")
            self.assertIn((1, "reduce_scatter", 0), said)
            for ch, earlier in repeats.items():
                self.assertIn(f"Its ring is channel {earlier}'s: its steps are channel "
                              f"{earlier}'s", text)
            # each channel's chunks where the trace moves them
            for ch, chunk, first, last in con.execute(
                    "SELECT channel, chunk, min(elem_offset), max(elem_offset + elems) - 1 "
                    "FROM transfer WHERE run_id = ? GROUP BY channel, chunk", (rid,)):
                part = re.search(rf"Each worker's part of channel {ch} is cut into {W} "
                                 r"chunks: (.*)\.\n", text)
                self.assertIsNotNone(part, (rid, ch))
                self.assertIn(f"chunk {chunk} = elements {first}..{last}", part[1])

    # chan-14: --explain --algo tree --channels C narrates each busy
    # channel's tree over its part, as the ring's channels are narrated:
    # every message it narrates (who sends to whom, up or down) is the
    # trace's on that channel, each channel's tree and root are said, and
    # a channel on an earlier one's tree (the same tree from the same GPU
    # of each node) is said in one line, not narrated again.
    def test_explain_each_channel_tree(self):
        db = os.path.join(self.tmp.name, "t.db")
        # two nodes of 4 GPUs and 2 NICs: channel c's chains start at GPU
        # 0 or 2 (its NIC's first), channels 0-2 tree 0 and 3-5 tree 1
        topo = ["--topo", "nodes=2,gpus=4,nics=2,cc=90,switch=nvswitch,"
                "intra=1us/100GB/s,nic=5us/25GB/s"]
        rc, out, err = helpers.run("-p", self.big, *topo, "--algo", "tree", "--channels", 6,
                                   "--explain", "--trace", db)
        self.assertEqual(rc, 0, err)
        text = out[:out.index("\nringsim ")]
        self.assertIn("The tree runs on 6 of NCCL's channels", text)
        for line in ("  channel 0: elements 0..45055, tree 0, root worker 0, each node's "
                     "chain from its GPU 0",
                     "  channel 1: elements 45056..90111, tree 0, root worker 2, each "
                     "node's chain from its GPU 2",
                     "  channel 3: elements 135168..180223, tree 1, root worker 6, each "
                     "node's chain from its GPU 2",
                     "  channel 4: elements 180224..225279, tree 1, root worker 4, each "
                     "node's chain from its GPU 0"):
            self.assertIn(line + "\n", text)
        repeats = {2: 0, 5: 3}
        for ch, earlier in repeats.items():
            self.assertIn(f"Its tree is channel {earlier}'s: its steps are channel "
                          f"{earlier}'s", text)
        said = {}  # (channel, phase) -> {(src, dst)}
        title = None
        for line in text.splitlines():
            m = re.fullmatch(r"channel (\d+), tree \d (reduce|broadcast), level .*", line)
            if m:
                title = (int(m[1]), m[2])
                said.setdefault(title, set())
                continue
            m = re.match(r"  worker (\d+) sends its whole part, .* to worker (\d+),", line)
            if m and title:
                said[title].add((int(m[1]), int(m[2])))
            elif not line.startswith("  "):
                title = None
        con = sqlite3.connect(db)
        self.addCleanup(con.close)
        want = {}
        for ch, ph, src, dst in con.execute(
                "SELECT DISTINCT channel, phase, src, dst FROM transfer WHERE run_id = 1"):
            if ch not in repeats:
                want.setdefault((ch, ph), set()).add((src, dst))
        self.assertEqual(said, want)
        self.assertEqual(sorted({c for c, _ in said}), [0, 1, 3, 4])
        # the whole part is a channel's: its elements are the trace's
        for ch, first, last in con.execute(
                "SELECT channel, min(elem_offset), max(elem_offset + elems) - 1 "
                "FROM transfer WHERE run_id = 1 GROUP BY channel"):
            self.assertIn(f"Every message carries a worker's whole part of channel {ch}, "
                          f"elements {first}..{last}.", text)

    # chan-8: the Perfetto export says each transfer's channel, and in
    # simulated time gives each channel a lane of its own on a link.
    def test_export(self):
        db = os.path.join(self.tmp.name, "t.db")
        rc, out, err = helpers.run("-p", self.big, "-w", 4, *NET, "--channels", 4,
                                   "--trace", db)
        self.assertEqual(rc, 0, err)
        tool = os.path.join(os.path.dirname(EXAMPLES), "tools", "ringsim_plot.py")
        doc_path = os.path.join(self.tmp.name, "t.json")
        p = subprocess.run([sys.executable, tool, "export", db, "-o", doc_path],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(doc_path) as f:
            events = json.load(f)["traceEvents"]
        names = {e["args"]["name"] for e in events if e.get("name") == "thread_name"}
        for c in range(4):
            self.assertIn(f"link 0->1 channel {c}", names)
        moved = [e for e in events if e["ph"] == "X" and "channel" in e.get("args", {})]
        con = sqlite3.connect(db)
        want = con.execute("SELECT channel, count(*) FROM transfer GROUP BY channel").fetchall()
        con.close()
        got = {}
        for e in moved:
            got[e["args"]["channel"]] = got.get(e["args"]["channel"], 0) + 1
        self.assertEqual(sorted(got.items()), want)

    # chan-9: the viewer's page says which channel carried each message
    # (each of NCCL's rings its own messages), and a one-channel run's
    # messages say nothing of channels.
    def test_viewer(self):
        db = os.path.join(self.tmp.name, "t.db")
        for args in (["-p", self.big, *TOPO, "--channels", 4], ["-p", self.small, "-w", 4]):
            rc, out, err = helpers.run(*args, "--trace", db)
            self.assertEqual(rc, 0, err)
        tool = os.path.join(os.path.dirname(EXAMPLES), "tools", "ringsim_plot.py")
        page = os.path.join(self.tmp.name, "t.html")
        p = subprocess.run([sys.executable, tool, "html", db, "-o", page],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(page) as f:
            text = f.read()
        counts = {}
        for m in re.findall(r'"channels":\[([0-9,]*)\]', text):
            counts[m] = counts.get(m, 0) + 1
        # run 1: 4 channels of one bucket, 2(W-1) W = 480 messages each, one
        # channel each (their rings differ); run 2: none said
        self.assertEqual(counts, {"0": 480, "1": 480, "2": 480, "3": 480}, counts)
        self.assertIn('", channel" + (m.channels.length > 1', text)

    # chan-10: the timeline in simulated time gives each channel a lane in
    # each worker's row (a one-channel run keeps its two segment lanes)
    def test_timeline_lanes(self):
        db = os.path.join(self.tmp.name, "t.db")
        for args in (["-p", self.big, "-w", 4, *NET, "--channels", 4],
                     ["-p", self.big, "-w", 4, *NET, "--segment-bytes", "64K"]):
            rc, out, err = helpers.run(*args, "--trace", db)
            self.assertEqual(rc, 0, err)
        sys.path.insert(0, os.path.join(os.path.dirname(EXAMPLES), "tools"))
        import matplotlib
        matplotlib.use("Agg")
        import ringsim_plot
        from ringsim_plot.timeline import timeline_figure
        con = sqlite3.connect(db)
        for rid, lanes, said in ((1, 4, "a lane per channel"), (2, 2, "even and odd segments")):
            run = ringsim_plot.pick_run(con, db, rid)
            fig, _ = timeline_figure(con, run, "sim")
            ax = fig.axes[0]
            bottoms = set()
            for coll in ax.collections:
                for path in coll.get_paths():
                    y = round(float(path.vertices[:, 1].min()), 3)
                    if -0.5 < y < 0.5:  # worker 0's row
                        bottoms.add(y)
            self.assertEqual(len(bottoms), lanes, (rid, sorted(bottoms)))
            self.assertIn(said, ax.get_xlabel().replace("\n", " "))
        con.close()

    # chan-11: an idle channel shares no NIC. Two DGX H100 nodes with 5
    # NICs (GPU g on NIC 5g/8: GPUs 0 and 1 share NIC 0): channel 0's
    # ring leaves node 0 through GPU 1 (1 -> 8) and node 1 through GPU 9
    # (9 -> 0), channel 4's through GPUs 0 and 8 (0 -> 15, 8 -> 7), on the
    # same NICs. A bucket of 4096 floats is one of NCCL's 16 KiB cells:
    # channel 0 alone carries it, channels 1-4 idle, so GPU 1 has NIC 0's
    # send side to itself (share 1). By hand: 16 workers, chunks of 1 KiB
    # (one segment each); a hop in a node takes 600 ns + ceil(1024 B /
    # 450 GB/s) = 603 ns, one between nodes 2700 ns + ceil(1024 B /
    # 50 GB/s) = 2721 ns; each worker's send waits for its receive of the
    # step before, so the time is the longest chain of 2(W-1) = 30 hops
    # round the ring, which holds both node crossings twice:
    # 4 x 2721 + 26 x 603 = 26562 ns, the one-channel ring's. (Before:
    # 26642, channel 4 counted on NIC 0, each crossing 2700 + 41 ns.) And
    # buckets of 1, 2 and 4 cells (1, 2, 4 busy channels) take the same
    # time on 5 and 8 channels as on only their busy ones, run and model.
    def test_idle_channels_share_no_nic(self):
        topo = ["--topo", "dgx-h100,nodes=2,nics=5"]
        times = {}
        for elems, busy in ((4096, 1), (8192, 2), (16384, 4)):
            model = os.path.join(self.tmp.name, f"b{elems}.json")
            with open(model, "w") as f:
                json.dump({"name": "b", "params": [{"name": "g", "shape": [elems]}]}, f)
            for c in (busy, 5, 8):
                for mode in ([], ["model"]):
                    with self.subTest(elems=elems, channels=c, mode=mode):
                        rc, out, err = helpers.run(*mode, "-p", model, *topo,
                                                   "--channels", c, "--json",
                                                   *([] if mode else ["--no-trace"]))
                        self.assertEqual(rc, 0, err)
                        times[elems, c, tuple(mode)] = json.loads(out)["sim_ns"]
            for c in (5, 8):
                for mode in ((), ("model",)):
                    self.assertEqual(times[elems, c, mode], times[elems, busy, ()],
                                     (elems, c, mode, times))
        self.assertEqual(times[4096, 5, ()], 4 * (2700 + 21) + 26 * (600 + 3))

    # chan-6: ringsim step times the ring's buckets on the channels too,
    # as `ringsim model` does.
    def test_step(self):
        profile = os.path.join(EXAMPLES, "resnet18_profile.json")
        steps = []
        for c in (1, 4):
            rc, out, err = helpers.run("step", "-p", profile, *TOPO, "--channels", c,
                                       "--json")
            self.assertEqual(rc, 0, err)
            steps.append(out)
        self.assertNotEqual(steps[0], steps[1])


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
