#!/usr/bin/python3
"""--topo on the command line and in the Python API: what is refused, and
how (exit 2, one line on stderr naming the value, before anything runs or
is written), and what runs.

    test_topo_cli.py RINGSIM EXAMPLES_DIR [TopoCli.test_name ...]

The Python cases load the package from EXAMPLES_DIR/../python and the
libringsim.so beside RINGSIM (a build tree holds both), through
RINGSIM_LIBRARY, in a child interpreter (this one's).
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

# 2 nodes of 4 GPUs, 1 NIC each: 8 workers
TWO_BY_FOUR = "nodes=2,gpus=4,nics=1,intra=1us/100GB/s,nic=5us/25GB/s"
NET = "latency=5us,bandwidth=25GB/s"


run = helpers.run


def trace_content(path):
    """Everything the trace holds, as SQL (its runs, their rows)."""
    con = sqlite3.connect(path)
    try:
        return list(con.iterdump())
    finally:
        con.close()


class TopoCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.model = os.path.join(EXAMPLES, "model.json")

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def refused(self, args, names, mode="run"):
        """`ringsim [MODE] -p model.json ARGS` is refused: exit 2, nothing on
        stdout, one line on stderr that holds each of names. For a run,
        nothing is written: the trace that held one run still holds exactly
        it, and --out is not made. Returns the line."""
        if mode == "run":
            trace, out = self.path("t.db"), self.path("out.safetensors")
            if not os.path.exists(trace):
                rc, _, err = run("-p", self.model, "-w", 4, "--trace", trace,
                                 "--json", cwd=self.dir)
                self.assertEqual(rc, 0, err)
            before = trace_content(trace)
            argv = ["-p", self.model, "--trace", trace, "--out", out, *args]
        else:
            argv = [mode, "-p", self.model, *args]
        files = sorted(os.listdir(self.dir))
        rc, stdout, err = run(*argv, cwd=self.dir)
        self.assertEqual((rc, stdout, err.count("\n")), (2, "", 1),
                         f"{mode} {args}: {err!r}")
        self.assertTrue(err.startswith("ringsim: "), err)
        for name in names:
            self.assertIn(name, err, f"{mode} {args}")
        if mode == "run":
            self.assertEqual(trace_content(trace), before,
                             f"{args}: the trace changed")
            self.assertEqual(len([r for r in before if "INSERT INTO \"run\"" in r]),
                             1, "the trace should hold exactly one run")
            self.assertFalse(os.path.exists(out), f"{args}: --out was written")
        self.assertEqual(sorted(os.listdir(self.dir)), files,
                         f"{mode} {args}: files left")
        return err.rstrip("\n")

    def refused_everywhere(self, args, names):
        """Refused alike by a run, `ringsim model` and `ringsim diff`."""
        lines = {}
        for mode in ("run", "model", "diff"):
            extra = ["--algo", "ring,rd"] if mode == "diff" else []
            with self.subTest(mode=mode):
                line = self.refused([*args, *extra], names, mode)
                # the same message, after the mode's name (diff's names
                # the side it checked first, as for --net's mistakes)
                lines[mode] = re.sub(r"^ringsim: (model: |diff: )?(A: --algo \w+: )?", "",
                                     re.sub(r" \(see ringsim( \w+)? --help\)$",
                                            "", line))
        self.assertEqual(len(set(lines.values())), 1, lines)

    # topo-cli-1: a topology whose nodes x gpus is not the number of
    # workers (rs_topo_check's message, through rs_netmodel_check).
    def test_workers_not_nodes_times_gpus(self):
        self.refused_everywhere(["-w", 6, "--topo", TWO_BY_FOUR],
                                ["--topo", "8 workers", "--workers is 6"])
        self.refused_everywhere(["-w", 4, "--topo", "dgx-h100"],
                                ["--topo", "8 workers", "--workers is 4"])
        self.refused_everywhere(["-w", 8, "--topo", "dgx-h100,nodes=2"],
                                ["--topo", "16 workers", "--workers is 8"])

    # topo-cli-2: an unknown preset, and an unknown key.
    def test_unknown_preset_and_key(self):
        for spec, item in (("dgx-b200", "'dgx-b200'"),
                           ("dgx-h100,foo=1", "'foo=1'"),
                           ("dgx-h100,ncis=4", "'ncis=4'"),
                           ("nodes=2,gpus=4,nics=1,intra=1us/100GB/s,nic=5us/25GB/s,"
                            "speed=fast", "'speed=fast'")):
            with self.subTest(spec=spec):
                self.refused_everywhere(["-w", 8, "--topo", spec],
                                        [f"--topo '{spec}'", item])

    # topo-cli-3: a bandwidth of zero, negative or without a unit, of the
    # GPUs' links or the NICs.
    def test_bad_bandwidth(self):
        for bad in ("0GB/s", "-5GB/s", "100", "0"):
            for key in ("intra", "nic"):
                spec = TWO_BY_FOUR.replace(
                    "intra=1us/100GB/s" if key == "intra" else "nic=5us/25GB/s",
                    f"{key}={'1us' if key == 'intra' else '5us'}/{bad}")
                with self.subTest(spec=spec):
                    self.refused_everywhere(["-w", 8, "--topo", spec],
                                            [f"--topo '{spec}'", f"/{bad}'"])

    # topo-cli-16: a key given twice is refused, naming it (the preset's
    # values are overridden once each).
    def test_key_given_twice(self):
        for spec, key in (("pcie,nodes=1,nodes=2", "nodes"),
                          ("dgx-h100,nic=1us/1GB/s,gpus=8,nic=2us/1GB/s", "nic")):
            with self.subTest(spec=spec):
                self.refused_everywhere(["-w", 8, "--topo", spec],
                                        [f"--topo '{spec}': {key}= is given twice"])

    # topo-cli-4: gpus=0, and more NICs than GPUs.
    def test_gpus_zero_and_nics_over_gpus(self):
        self.refused_everywhere(["-w", 8, "--topo", "dgx-h100,gpus=0"],
                                ["--topo 'dgx-h100,gpus=0'", "'gpus=0'"])
        spec = TWO_BY_FOUR.replace("nics=1", "nics=5")
        self.refused_everywhere(["-w", 8, "--topo", spec],
                                [f"--topo '{spec}'", "nics=5", "4 GPUs"])
        # a preset's 8 NICs on fewer GPUs, too
        self.refused_everywhere(["-w", 4, "--topo", "dgx-h100,gpus=4"],
                                ["--topo 'dgx-h100,gpus=4'", "the preset's nics=8",
                                 "4 GPUs"])

    # topo-cli-5: --topo with --net (either order), and with --link.
    def test_with_net_or_link(self):
        for args in (["--topo", TWO_BY_FOUR, "--net", NET],
                     ["--net", NET, "--topo", TWO_BY_FOUR]):
            with self.subTest(args=args):
                self.refused_everywhere(["-w", 8, *args], ["--topo", "--net"])
        self.refused_everywhere(
            ["-w", 8, "--topo", TWO_BY_FOUR, "--link", "1-2:bandwidth=1GB/s"],
            ["--topo", "--link"])

    # topo-cli-6: `ringsim model` takes --topo instead of --net, and says
    # so when given neither.
    def test_model_takes_topo(self):
        rc, out, err = run("model", "--topo", "dgx-h100", "-w", 8, "-p", self.model)
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"simulated  [0-9.]+ us")
        self.assertIn("1 node x 8 GPUs, 8 NICs per node", out)
        rc, out, err = run("model", "--topo", "dgx-h100", "-w", 8, "-p", self.model,
                           "--algo", "all", "--json")
        self.assertEqual(rc, 0, err)
        algos = json.loads(out)["algos"]
        self.assertTrue(all(a["sim_ns"] > 0 for a in algos), algos)
        line = self.refused(["-w", 8], ["give --net or --topo"], "model")
        self.assertEqual(line, "ringsim: model: --net latency=...,bandwidth=... "
                               "is required, or a topology: give --net or --topo "
                               "(see ringsim model --help)")

    # topo-cli-7: a run on a topology passes its check, and its simulated
    # time is `ringsim model`'s to the nanosecond.
    def test_run_on_a_topology(self):
        for spec in (TWO_BY_FOUR, "dgx-h100", TWO_BY_FOUR.replace("nics=1", "nics=4")):
            for algo in ("ring", "rhd"):
                with self.subTest(spec=spec, algo=algo):
                    rc, out, err = run("-p", self.model, "-w", 8, "--topo", spec,
                                       "--algo", algo, "--no-trace", "--json",
                                       cwd=self.dir)
                    self.assertEqual(rc, 0, err)
                    r = json.loads(out)
                    self.assertEqual((r["status"], r["checked"], r["identical"]),
                                     ("ok", True, True))
                    # (the ring on NCCL's count where NCCL's model knows
                    # the topology: 24 channels on a DGX H100)
                    self.assertEqual(r["channels"],
                                     24 if (spec, algo) == ("dgx-h100", "ring") else 1)
                    self.assertGreater(r["sim_ns"], 0)
                    rc, out, err = run("model", "-p", self.model, "-w", 8,
                                       "--topo", spec, "--algo", algo, "--json")
                    self.assertEqual(rc, 0, err)
                    self.assertEqual(json.loads(out)["sim_ns"], r["sim_ns"])
        # what crossed the NICs: the ring's 3 -> 4 and 7 -> 0 alone, all
        # they send; rhd's every worker, the same; what left one node came
        # into the other
        for algo in ("ring", "rhd"):
            rc, out, err = run("-p", self.model, "-w", 8, "--topo", TWO_BY_FOUR,
                               "--algo", algo, "--no-trace", "--json", cwd=self.dir)
            self.assertEqual(rc, 0, err)
            r = json.loads(out)
            off, came = r["bytes_sent_off_node"], r["bytes_received_off_node"]
            self.assertEqual(sum(off), sum(came), algo)
            if algo == "ring":
                self.assertEqual([w for w in range(8) if off[w]], [3, 7])
                self.assertEqual([w for w in range(8) if came[w]], [0, 4])
                self.assertEqual(off[3], r["bytes_sent"][3])
            else:
                self.assertTrue(all(o > 0 for o in off), off)
                self.assertLessEqual(max(off) - min(off), 8, off)
        rc, out, err = run("-p", self.model, "-w", 8, "--topo", TWO_BY_FOUR,
                           "--algo", "ring", "--no-trace", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"off node   0-\d+ bytes per worker through the NICs; "
                              r"busiest NIC: node \d's NIC 0, \d+ bytes (out|in) "
                              r"\([0-9.]+ [KM]iB\)\n")  # the ring shares no NIC
        # rhd's crossing steps share each node's one NIC among its 4 GPUs,
        # for a halving and a doubling: twice one transfer's wire time
        rc, out, err = run("-p", self.model, "-w", 8, "--topo", TWO_BY_FOUR,
                           "--algo", "rhd", "--no-trace", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        m = re.search(r"busiest NIC: node \d's NIC 0, (\d+) bytes (out|in) .*, shared "
                      r"\(by up to 4 GPUs\) for ([0-9.]+) us\n", out)
        self.assertIsNotNone(m, out)
        # each GPU sends its eighth of the model twice at 25 GB/s / 4
        self.assertAlmostEqual(float(m.group(3)), 2 * 814120 / 8 / 6.25e9 * 1e6, delta=0.01)
        # the text report names the topology
        rc, out, err = run("-p", self.model, "-w", 8, "--topo", TWO_BY_FOUR,
                           "--no-trace", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertIn("network    2 nodes x 4 GPUs, 1 NIC per node: intra 1.000 us, "
                      "100.000 GB/s per GPU port; nic 5.000 us, 25.000 GB/s per NIC",
                      out)

    # topo-cli-7b: nvls (NVLink SHARP) on one node of dgx-h100: the threads
    # move the data (the check passes, the two-worker example holds
    # [2, 3]) and its simulated time is `ringsim model`'s, to the ns;
    # --algo all has its column on one node and "-" (no time, not in
    # --json) on the rows of several nodes.
    def test_nvls_on_one_node(self):
        rc, out, err = run("-p", self.model, "--topo", "dgx-h100", "--algo", "nvls",
                           "--no-trace", "--json", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual((r["status"], r["checked"], r["identical"]), ("ok", True, True))
        rc, out, err = run("model", "-p", self.model, "--topo", "dgx-h100",
                           "--algo", "nvls", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["sim_ns"], r["sim_ns"])
        rc, out, err = run("-w", 2, "-p", os.path.join(EXAMPLES, "two_workers.json"),
                           "--topo", "nodes=1,gpus=2,switch=nvls,intra=1us/1GB/s,"
                           "nic=1us/1GB/s", "--algo", "nvls", "--no-trace", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertIn("w: [2, 3]", out)
        rc, out, err = run("model", "-p", self.model, "--topo", "dgx-h100,nodes=1,2",
                           "--algo", "all")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        head = next(i for i, l in enumerate(lines) if "fastest" in l)
        cols = lines[head].replace("best busbw", "best_busbw").split()
        one, two = lines[head + 1].split(), lines[head + 2].split()
        nvls, tree = cols.index("nvls"), cols.index("nvlstree")
        self.assertRegex(one[nvls], r"^\d+\.\d{3}$")
        self.assertEqual(two[nvls], "-")
        self.assertEqual(one[tree], "-")
        self.assertRegex(two[tree], r"^\d+\.\d{3}$")
        rc, out, err = run("model", "-p", self.model, "--topo", "dgx-h100,nodes=1,2",
                           "--algo", "all", "--json")
        self.assertEqual(rc, 0, err)
        rows = json.loads(out)["rows"]
        self.assertIn("nvls", rows[0]["algos"])
        self.assertNotIn("nvls", rows[1]["algos"])
        self.assertNotIn("nvlstree", rows[0]["algos"])
        self.assertIn("nvlstree", rows[1]["algos"])
        rc, out, err = run("model", "-p", self.model, "--topo", "dgx-h100,nodes=1,2",
                           "--algo", "nvls")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("--algo nvls needs one node", err)
        self.assertEqual(err.count("\n"), 1, err)

    # topo-cli-7c: nvlstree on two dgx-h100 nodes: the check passes, the
    # threaded run's simulated time is `ringsim model`'s; every GPU heads a
    # shard and crosses the nodes through its own NIC (the same bytes off
    # node for all), where the ring on one channel crosses through one
    # GPU a node.
    def test_nvlstree_on_nodes(self):
        spec = "dgx-h100,nodes=2,gpus=4,nics=4"
        got = {}
        for algo in ("nvlstree", "ring"):
            one = ["--channels", 1] if algo == "ring" else []
            rc, out, err = run("-p", self.model, "--topo", spec, "--algo", algo, *one,
                               "--no-trace", "--json", cwd=self.dir)
            self.assertEqual(rc, 0, err)
            got[algo] = r = json.loads(out)
            self.assertEqual((r["status"], r["checked"], r["identical"]),
                             ("ok", True, True))
            rc, out, err = run("model", "-p", self.model, "--topo", spec,
                               "--algo", algo, *one, "--json")
            self.assertEqual(rc, 0, err)
            self.assertEqual(json.loads(out)["sim_ns"], r["sim_ns"])
        off = got["nvlstree"]["bytes_sent_off_node"]
        self.assertTrue(all(o > 0 for o in off), off)
        self.assertLessEqual(max(off) - min(off), 8, off)
        self.assertEqual(sum(1 for o in got["ring"]["bytes_sent_off_node"] if o), 2)
        self.assertLess(got["nvlstree"]["sim_ns"], got["ring"]["sim_ns"])
        rc, out, err = run("model", "-p", self.model, "--topo", "dgx-h100",
                           "--algo", "nvlstree")
        self.assertEqual((rc, out), (2, ""))
        self.assertIn("--algo nvlstree needs nodes", err)
        self.assertIn("on one node NCCL runs NVLS (--algo nvls)", err)

    # topo-cli-7e: the NVLink switch is a participant of its own, node n's
    # numbered W + n in the trace: every nvls transfer goes into the switch
    # or comes out of it (none from GPU to GPU, none holding a partial sum
    # but the switch's): each GPU puts its copy of every shard's segment
    # (W^2 a segment, its own data alone), the switch sends each head its
    # shard's sum (all W), stamped with the time the last copy reached it,
    # takes each head's multicast once and writes it to the other W-1. It
    # took shard i's copies from GPU i-1, i-2, ..., and the head's own last
    # (its order of additions: docs/algorithms.md). nvlstree's transfers
    # within a node are its switch's too; across the nodes, the heads'.
    # The run's counts, its worker table and the check are the GPUs'.
    def test_switch_in_the_trace(self):
        model = os.path.join(self.dir, "sixteen.json")
        with open(model, "w") as f:
            json.dump({"name": "sixteen", "params": [{"name": "g", "shape": [16]}]}, f)
        links = "intra=1us/100GB/s,nic=5us/25GB/s,switch=nvls"
        db = os.path.join(self.dir, "switch.db")
        rc, out, err = run("-p", model, "--topo", f"nodes=1,gpus=4,{links}", "--algo",
                           "nvls", "--segment-bytes", 8, "--trace", db, "--json",
                           cwd=self.dir)
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual((r["status"], r["identical"]), ("ok", True))
        con = sqlite3.connect(db)
        rows = con.execute("SELECT phase, src, dst, chunk, segment, contrib_first, "
                           "contrib_count, link, sim_send_ns, sim_recv_ns FROM transfer "
                           "WHERE iter = 0 ORDER BY rowid").fetchall()
        W, S, segs = 4, 4, 2
        self.assertFalse([x for x in rows if x[1] < W and x[2] < W])
        self.assertEqual({x[7] for x in rows}, {"intra"})
        puts = [x for x in rows if x[2] == S and x[0] == "reduce_scatter"]
        self.assertEqual(len(puts), W * W * segs)
        self.assertTrue(all(x[5:7] == (x[1], 1) for x in puts), puts)
        for i in range(W):  # the switch's order: GPU i-1, i-2, ..., i
            for k in range(segs):
                got = [x[1] for x in puts if x[3] == i and x[4] == k]
                self.assertEqual(got, [(i - d) % W for d in range(1, W + 1)])
        sums = [x for x in rows if x[1] == S and x[0] == "reduce_scatter"]
        self.assertEqual(sorted((x[2], x[4]) for x in sums),
                         [(i, k) for i in range(W) for k in range(segs)])
        for x in sums:
            self.assertEqual((x[3], x[5], x[6]), (x[2], 0, W))
            self.assertEqual(x[8], max(p[9] for p in puts if p[3:5] == x[3:5]))
        casts = [x for x in rows if x[2] == S and x[0] == "all_gather"]
        copies = [x for x in rows if x[1] == S and x[0] == "all_gather"]
        self.assertEqual(sorted((x[1], x[3]) for x in casts),
                         sorted((i, i) for i in range(W) for _ in range(segs)))
        self.assertEqual(len(copies), W * (W - 1) * segs)
        self.assertFalse([x for x in copies if x[2] == x[3]])
        self.assertEqual(len(rows), len(puts) + len(sums) + len(casts) + len(copies))
        self.assertEqual(con.execute("SELECT workers FROM run").fetchone()[0], W)
        self.assertEqual(con.execute("SELECT count(*) FROM worker").fetchone()[0], W)
        self.assertEqual(con.execute("SELECT transfers FROM run").fetchone()[0],
                         con.execute("SELECT count(*) FROM transfer WHERE src < ?",
                                     (W,)).fetchone()[0])
        con.close()
        rc, out, err = run("model", "-p", model, "--topo", f"nodes=1,gpus=4,{links}",
                           "--algo", "nvls", "--segment-bytes", 8, "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["sim_ns"], r["sim_ns"])
        db = os.path.join(self.dir, "switches.db")
        rc, out, err = run("-p", model, "--topo", f"nodes=2,gpus=2,{links}", "--algo",
                           "nvlstree", "--segment-bytes", 8, "--trace", db, cwd=self.dir)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(db)
        pairs = con.execute("SELECT DISTINCT src, dst, link FROM transfer").fetchall()
        con.close()
        W = 4
        within = {(s, d) for s, d, link in pairs if link == "intra"}
        across = {(s, d) for s, d, link in pairs if link == "nic"}
        self.assertEqual(within, {(g, W + g // 2) for g in range(W)} |
                         {(W + g // 2, g) for g in range(W)})
        self.assertEqual(across, {(0, 2), (2, 0), (1, 3), (3, 1)})

    # topo-cli-7d: with fewer NICs than GPUs, GPU g uses NIC g K / G, where
    # NCCL's topology places it (NIC k next to GPUs 2k and 2k+1 for 4 on
    # 8): NCCL's rings, on 16 channels, leave every node through every NIC
    # (each NIC sends what its two GPUs send), and the ring reaches the 4
    # NICs' 200 GB/s, where with GPU g on NIC g mod K they left through
    # half the NICs (100 GB/s).
    def test_channels_leave_by_every_nic(self):
        spec = "dgx-h100,nodes=2,nics=4"
        rc, out, err = run("-p", self.model, "--topo", spec, "--channels", 16,
                           "--no-trace", "--json", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["channels"], 16)
        off = json.loads(out)["bytes_sent_off_node"]
        per_nic = [off[n * 8 + 2 * k] + off[n * 8 + 2 * k + 1]
                   for n in range(2) for k in range(4)]
        self.assertTrue(all(b > 0 for b in per_nic), per_nic)
        self.assertLessEqual(max(per_nic) - min(per_nic), max(per_nic) // 4, per_nic)
        rc, out, err = run("model", "-p", os.path.join(EXAMPLES, "bucket_25mib.json"),
                           "--topo", spec, "--channels", 16, "--json")
        self.assertEqual(rc, 0, err)
        self.assertGreater(json.loads(out)["busbw_gbs"], 180)

    # topo-cli-8: one node whose GPU links are --net's link is --net, to
    # the nanosecond, for every algorithm; one NIC shared by a node's GPUs
    # is slower than one each.
    def test_one_node_is_net(self):
        def times(*args):
            rc, out, err = run("model", "-p", self.model, "-w", 4, "--algo", "all",
                               "--json", *args)
            self.assertEqual(rc, 0, err)
            return {a["algo"]: a["sim_ns"] for a in json.loads(out)["algos"]}
        flat = times("--net", NET)  # (no hier: it needs a topology)
        node = times("--topo", "nodes=1,gpus=4,intra=5us/25GB/s,nic=1us/1GB/s")
        self.assertEqual({a: node[a] for a in flat}, flat)
        self.assertEqual(set(node) - set(flat), {"hier", "hier:rd", "hier:rhd"})
        one = times("--topo", "nodes=2,gpus=2,nics=1,intra=1us/100GB/s,nic=5us/25GB/s")
        two = times("--topo", "nodes=2,gpus=2,nics=2,intra=1us/100GB/s,nic=5us/25GB/s")
        self.assertGreater(one["rhd"], two["rhd"])

    # topo-cli-11: --algo auto chooses on the topology: per bucket the
    # algorithm whose schedule, simulated alone, is fastest there; for one
    # bucket that is `ringsim model --algo all`'s fastest, and the choice
    # moves with the NICs (rd on 4 NICs at 64 KiB, where 1 NIC makes it slow).
    def test_auto_chooses_on_the_topology(self):
        model = os.path.join(EXAMPLES, "contention.json")
        for nics, size in ((1, "1M"), (4, "1M"), (1, "4K"), (4, "4K")):
            spec = ("nodes=2,gpus=4,nics=%d,intra=1us/100GB/s,nic=5us/30GB/s"
                    % nics)
            with self.subTest(nics=nics, segment_bytes=size):
                rc, out, err = run("model", "-p", model, "-w", 8, "--topo", spec,
                                   "--algo", "all", "--json",
                                   "--segment-bytes", size)
                self.assertEqual(rc, 0, err)
                sims = {a["algo"]: a["sim_ns"] for a in json.loads(out)["algos"]
                        if a["algo"] != "gloo-ring"}
                rc, out, err = run("-p", model, "-w", 8, "--topo", spec, "--algo",
                                   "auto", "--no-trace", "--json",
                                   "--segment-bytes", size, "--bucket-mb", 0,
                                   cwd=self.dir)
                self.assertEqual(rc, 0, err)
                r = json.loads(out)
                self.assertEqual(r["auto"]["model"], "topo")
                (bucket,) = r["auto"]["buckets"]
                self.assertEqual(bucket["predicted_ns"]["ring"], sims["ring"])
                self.assertEqual(bucket["algo"], min(sims, key=sims.get), sims)
                self.assertEqual(r["sim_ns"], sims[bucket["algo"]])
                self.assertEqual(r["predicted_ns"], r["sim_ns"])

    # topo-cli-12: `ringsim model` on a topology gives, beside the time,
    # the same schedule's with a NIC for every GPU (uncontended_ns): the
    # time of the topology with nics = gpus, never more than the time.
    def test_model_uncontended(self):
        model = os.path.join(EXAMPLES, "contention.json")
        spec = "nodes=2,gpus=4,nics=%d,intra=1us/100GB/s,nic=5us/30GB/s"
        def model_json(nics, *extra):
            rc, out, err = run("model", "-p", model, "-w", 8, "--topo", spec % nics,
                               "--segment-bytes", "1M", "--json", *extra)
            self.assertEqual(rc, 0, err)
            return json.loads(out)
        shared, own = model_json(1, "--algo", "all"), model_json(4, "--algo", "all")
        for a, b in zip(shared["algos"], own["algos"]):
            self.assertEqual(a["uncontended_ns"], b["sim_ns"], a["algo"])
            self.assertEqual(b["uncontended_ns"], b["sim_ns"], b["algo"])
            self.assertLessEqual(a["uncontended_ns"], a["sim_ns"], a["algo"])
        rhd = model_json(1, "--algo", "rhd")
        self.assertEqual((rhd["sim_ns"], rhd["uncontended_ns"]), (29468, 21468))
        rc, out, err = run("model", "-p", model, "-w", 8, "--net", NET, "--json")
        self.assertEqual(rc, 0, err)
        self.assertNotIn("uncontended_ns", json.loads(out))

    # topo-cli-13: `ringsim model` takes a list of sizes, a row each:
    # --topo's nodes=1,2,4 (W = nodes x gpus) or, under --net, --workers
    # 4,8,16; each row is what the one size gives alone. And a list is
    # refused where it cannot be: a run, --workers beside a list of nodes,
    # a list of --workers on a topology, a bad count.
    def test_model_rows(self):
        def model_json(*args):
            rc, out, err = run("model", "-p", self.model, "--json", *args)
            self.assertEqual(rc, 0, err)
            return json.loads(out)
        rows = model_json("--topo", "pcie,nodes=1,2,4,gpus=4", "--algo", "all")["rows"]
        self.assertEqual([(r["nodes"], r["workers"]) for r in rows],
                         [(1, 4), (2, 8), (4, 16)])
        for r in rows:
            alone = model_json("--topo", f"pcie,nodes={r['nodes']},gpus=4",
                               "--algo", "all")
            for a in alone["algos"]:
                self.assertEqual(r["algos"][a["algo"]]["sim_ns"], a["sim_ns"])
                self.assertEqual(r["algos"][a["algo"]]["uncontended_ns"],
                                 a["uncontended_ns"])
            self.assertEqual(r["fastest"], alone["fastest"])
        rows = model_json("--net", NET, "-w", "4,8,16", "--algo", "rhd")["rows"]
        self.assertEqual([r["workers"] for r in rows], [4, 8, 16])
        for r in rows:
            alone = model_json("--net", NET, "-w", r["workers"], "--algo", "rhd")
            self.assertEqual(r["algos"]["rhd"]["sim_ns"], alone["sim_ns"])
            self.assertNotIn("uncontended_ns", r["algos"]["rhd"])
        rc, out, err = run("model", "-p", self.model, "--topo", "dgx-h100,nodes=1,2",
                           "--algo", "all")
        self.assertEqual(rc, 0, err)
        self.assertIn("network    each row's nodes x 8 GPUs", out)
        self.assertRegex(out, r"\n +16 +2 +[0-9. ]+ +- +[0-9.]+ +[0-9.]+ +nvlstree\n")  # (- nvls)
        for args, says in (
                (["--topo", "pcie,nodes=1,2", "-w", 8], "--workers with a list of nodes"),
                (["--topo", "pcie", "-w", "8,16"], "a list of --workers with --topo"),
                (["--topo", "pcie,nodes=1,0"], "--topo 'pcie,nodes=1,0': expected nodes=N or a list"),
                (["--topo", "pcie,nodes=" + ",".join(["1"] * 17)], "at most 16"),
                (["--net", NET, "-w", "4,0"], "--workers '4,0': expected W or a list"),
                (["--topo", "pcie,nodes=1,2,bogus=1"], "--topo 'pcie,nodes=1,2,bogus=1': unknown item 'bogus=1'")):
            with self.subTest(args=args):
                self.refused(args, [says], "model")
        # too many workers for the mode, from the topology alone
        self.refused(["--topo", "pcie,nodes=1,65536"],
                     ["--topo: 65536 nodes of 8 GPUs are 524288 workers, more "
                      "than the 16384 ringsim model takes"], "model")
        self.refused(["--topo", "pcie,nodes=1024"],
                     ["--topo: 1024 nodes of 8 GPUs are 8192 workers, more "
                      "than the 4096 a run takes"])
        self.refused(["-w", 16, "--topo", "pcie,nodes=1,2"],
                     ["--topo 'pcie,nodes=1,2': '2' is not an item",
                      "only ringsim model takes one"])
        # a list's trailing comma is an empty item, as anywhere in a spec
        self.refused(["--topo", "dgx-h100,nodes=1,2,"],
                     ["--topo 'dgx-h100,nodes=1,2,': an empty item"], "model")

    # topo-cli-14: without --workers, a run's W is the topology's nodes x
    # gpus.
    def test_workers_from_the_topology(self):
        rc, out, err = run("-p", self.model, "--topo", "pcie,nodes=2,gpus=3",
                           "--no-trace", "--json", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["workers"], 6)
        rc, out, err = run("model", "-p", self.model, "--topo", "dgx-h100", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["workers"], 8)

    # topo-cli-15: the trace records each transfer's link class (intra or
    # nic) and, between nodes, its NIC's share: rhd's crossing step on 2x4
    # shares 1 NIC among 4 GPUs, the ring's never, and with 4 NICs neither;
    # a run without --topo has NULL in both.
    def test_trace_link_and_share(self):
        trace = self.path("links.db")
        cases = ((TWO_BY_FOUR, "rhd", {4}), (TWO_BY_FOUR, "ring", {1}),
                 (TWO_BY_FOUR.replace("nics=1", "nics=4"), "rhd", {1}))
        for spec, algo, _ in cases:
            rc, out, err = run("-p", self.model, "--topo", spec, "--algo", algo,
                               "--trace", trace, cwd=self.dir)
            self.assertEqual(rc, 0, err)
        rc, out, err = run("-p", self.model, "-w", 4, "--trace", trace, cwd=self.dir)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(trace)
        try:
            for run_id, (spec, algo, shares) in enumerate(cases, start=1):
                rows = con.execute("SELECT src / 4 = dst / 4, link, share FROM transfer "
                                   "WHERE run_id = ?", (run_id,)).fetchall()
                self.assertTrue(rows)
                for same, link, share in rows:
                    self.assertEqual(link, "intra" if same else "nic", (algo, spec))
                    self.assertEqual(share is None, bool(same), (algo, spec))
                self.assertEqual({s for _, _, s in rows if s is not None}, shares,
                                 (algo, spec))
            self.assertEqual(con.execute("SELECT count(*) FROM transfer WHERE run_id = 4 "
                                         "AND (link IS NOT NULL OR share IS NOT NULL)")
                             .fetchone(), (0,))
        finally:
            con.close()

    # topo-cli-17: a network so slow that the simulated time could pass
    # 2^63 ns (292 years, what --json and the trace hold) is refused in one
    # line, exit 2, with nothing printed or written: a run before it runs
    # (its bound: every message at the slowest rate and longest latency),
    # ringsim model once its clocks, which saturate, say so; where the
    # clocks once wrapped to a negative sim_ns with exit 0.
    def test_simulated_time_too_long(self):
        for net in (["--topo", "nodes=2,gpus=2,intra=1us/1GB/s,nic=9000000000s/1GB/s"],
                    ["--net", "latency=9000000000s,bandwidth=1GB/s", "-w", 4]):
            with self.subTest(net=net):
                self.refused(net, ["passes 2^63 ns (292 years)", net[0]])
                self.refused(net + ["--algo", "linear"],
                             ["the simulated time passes 2^63 ns (292 years)"], "model")
        self.refused(["--net", "latency=9000000000s,bandwidth=1GB/s", "-w", "4,8"],
                     ["the simulated time passes 2^63 ns"], "model")
        self.refused(["--topo", "nodes=2,gpus=8,intra=1us/1B/s,nic=9000000000s/1B/s",
                      "--algo", "all"], ["the simulated time passes 2^63 ns"], "model")

    # topo-cli-17b: the guard refuses only what passes the limit: a run of
    # 17 days (1.5e15 ns, 6,000 times below 2^63) on a NIC of 1 B/s runs,
    # and its simulated time is `ringsim model`'s to the nanosecond (the
    # bound once multiplied every message by the largest bucket and every
    # iteration's messages together, and refused it)
    def test_simulated_time_guard_is_tight(self):
        net = ["--topo", "dgx-h100,nodes=2,intra=0us/1TB/s,nic=0ns/1B/s", "--algo", "gloo-ring"]
        rc, out, err = run("-p", self.model, "--no-trace", "--json",
                           *net, cwd=self.dir)
        self.assertEqual(rc, 0, err)
        sim = json.loads(out)["sim_ns"]
        rc, out, err = run("model", "-p", self.model, "--json", *net, cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["sim_ns"], sim)
        self.assertGreater(sim, 10**15)
        # at the edge: two latencies of 2^62 ns in series on linear (its
        # bound exactly 2^63, which a double cannot tell from 2^63 - 1)
        # pass the limit, refused; just under it runs
        edge = ["-w", 2, "--algo", "linear", "--net"]
        self.refused([*edge, "latency=4611686018427387904ns,bandwidth=1TB/s"],
                     ["passes 2^63 ns (292 years)"])
        rc, out, err = run("-p", self.model, "--no-trace", "--json", *edge,
                           "latency=4611686018427386880ns,bandwidth=1TB/s", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertGreater(json.loads(out)["sim_ns"], 2**62)

    # topo-cli-9: diff takes --topo for both sides.
    def test_diff_takes_topo(self):
        rc, out, err = run("diff", "-p", self.model, "-w", 8, "--topo", TWO_BY_FOUR,
                           "--algo", "ring,rhd", cwd=self.dir)
        self.assertEqual(rc, 0, err)
        self.assertEqual(os.listdir(self.dir), [])

    # topo-cli-10: the Python API takes topo= (and refuses a bad one with
    # the command's message, as ValueError).
    def test_python_topo(self):
        repo = os.path.dirname(os.path.abspath(EXAMPLES))
        env = dict(os.environ, PYTHONPATH=os.path.join(repo, "python"),
                   RINGSIM_LIBRARY=os.path.join(os.path.dirname(RINGSIM),
                                                "libringsim.so"))
        code = r"""
import json, sys
import numpy as np
import ringsim
grads = [{"w": np.arange(24, dtype=np.float32) * (r + 1)} for r in range(8)]
result, report = ringsim.allreduce(grads, topo="dgx-h100,nodes=1")
assert report["status"] == "ok" and report["identical"], report
assert report["sim_ns"] > 0, report
assert report["bytes_sent_off_node"] == [0] * 8, report
_, two = ringsim.allreduce(grads, topo="dgx-h100,gpus=4,nics=4,nodes=2")
assert sum(two["bytes_sent_off_node"]) == sum(two["bytes_received_off_node"]) > 0, two
want = np.arange(24, dtype=np.float32) * 4.5
assert np.array_equal(result["w"], want), result
mean = ringsim.ddp_allreduce_average_grads(grads, topo="dgx-h100", algo="rhd")
assert np.array_equal(mean["w"], want), mean
errors = []
for topo, n in (("dgx-b200", 8), ("dgx-h100", 4), ("dgx-h100,gpus=0", 8)):
    try:
        ringsim.allreduce(grads[:n], topo=topo)
        errors.append(None)
    except ValueError as e:
        errors.append(str(e))
try:
    ringsim.allreduce(grads, topo="dgx-h100", net="latency=5us,bandwidth=25GB/s")
    errors.append(None)
except ValueError as e:
    errors.append(str(e))
types = []
for kwargs in ({"topo": b"dgx-h100"}, {"topo": 8}, {"net": ["latency=1us,bandwidth=1GB/s"]},
               {"link": [b"0-1:bandwidth=1GB/s"], "net": "latency=1us,bandwidth=1GB/s"}):
    try:
        ringsim.allreduce(grads, **kwargs)
        types.append(None)
    except TypeError as e:
        types.append(str(e))
errors.append(types)
print(json.dumps(errors))
"""
        p = subprocess.run([sys.executable, "-c", code], env=env, cwd=self.dir,
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        unknown, workers, gpus, net, types = json.loads(p.stdout)
        # a spec that is not text: a TypeError naming the argument, where
        # its repr ("b'dgx-h100'") reached the library before
        self.assertEqual(types, ["topo must be a str, not bytes", "topo must be a str, not int",
                                 "net must be a str, not list",
                                 "link[0] must be a str, not bytes (or a list of str)"])
        self.assertIn("--topo 'dgx-b200': unknown item 'dgx-b200'", unknown or "")
        self.assertIn("--workers is 4", workers or "")
        self.assertIn("'gpus=0'", gpus or "")
        self.assertIn("--net", net or "")
        for message in (unknown, workers, gpus, net):
            self.assertNotIn("\n", message)


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
