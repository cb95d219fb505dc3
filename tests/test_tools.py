#!/usr/bin/python3
"""Tests of tools/ringsim_plot.py on real traces made by ringsim here.

    test_tools.py RINGSIM EXAMPLES_DIR TOOLS_DIR [Tools.test_name ...]
"""
import contextlib
import hashlib
import io
import json
import re
import shutil
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile
import unittest

import helpers

RINGSIM = EXAMPLES = TOOLS = TOOL = None


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


class Tools(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.db = os.path.join(cls.dir, "t.db")
        model = os.path.join(cls.dir, "m.json")
        with open(model, "w") as f:
            json.dump({"name": "m", "params": [{"name": "g", "shape": [1001]}]}, f)
        # run 1: W=4 with 3 segments per chunk; run 2: W=3; runs 3-4: bigger
        for args in (["-w", 4, "--segment-bytes", 100], ["-w", 3], ["-w", 2], ["-w", 4, "--seed", 2],
                     ["-w", 4, "--net", "latency=5us,bandwidth=10GB/s", "--straggler", "worker=1,us=20"]):
            p = subprocess.run([RINGSIM, "-p", model, "--trace", cls.db, *[str(a) for a in args]],
                               capture_output=True, text=True)
            assert p.returncode == 0, p.stderr
        one = subprocess.run([RINGSIM, "-p", model, "-w", "1", "--trace",
                              os.path.join(cls.dir, "one.db")], capture_output=True, text=True)
        assert one.returncode == 0, one.stderr
        example = os.path.join(EXAMPLES, "model.json")
        # a failed run: worker 2 crashes at the first all-gather step
        cls.failed = os.path.join(cls.dir, "failed.db")
        p = subprocess.run([RINGSIM, "-w", "4", "-p", example, "--inject", "crash:worker=2,step=3",
                            "--timeout", "0.3", "--trace", cls.failed], capture_output=True, text=True)
        assert p.returncode == 3, p.stderr
        # a simulated network with one slow link
        cls.slow = os.path.join(cls.dir, "slow.db")
        p = subprocess.run([RINGSIM, "-w", "4", "-p", example, "--net", "latency=5us,bandwidth=25GB/s",
                            "--link", "2-3:bandwidth=1GB/s", "--trace", cls.slow],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def tool(self, *args):
        p = subprocess.run([sys.executable, TOOL, *map(str, args)], capture_output=True,
                           text=True, timeout=600)
        return p.returncode, p.stdout, p.stderr

    @staticmethod
    def plot_module():
        sys.path.insert(0, os.path.dirname(TOOL))
        import ringsim_plot
        return ringsim_plot

    def tool_in(self, *args):
        """The tool in this process (its main, as the command runs it):
        (exit status, stdout, stderr) as tool() returns them, without a
        Python and matplotlib started for each call."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = self.plot_module().main([str(a) for a in args])
            except SystemExit as e:  # argparse: --help, a usage error
                rc = e.code
        return rc, out.getvalue(), err.getvalue()

    def figure_of(self, *args):
        """(figure, title) a picture command drew, as it was handed to save
        (the figure drawn once, as the file would be)."""
        output = self.plot_module().output  # where the pictures find save
        got = []
        real = output.save

        def keep(fig, out, title, tight=True):
            got.append((fig, title))
            real(fig, out, title, tight)
        output.save = keep
        try:
            rc, _, err = self.tool_in(*args)
        finally:
            output.save = real
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(got), 1)
        got[0][0].canvas.draw()
        return got[0]

    def out(self, name):
        return os.path.join(self.dir, name)

    def assert_image(self, path, min_w=400, min_h=200):
        w, h = png_size(path)
        self.assertGreaterEqual(w, min_w)
        self.assertGreaterEqual(h, min_h)
        self.assertGreater(os.path.getsize(path), 10000, "an image that small is blank")

    # tools-1: each picture subcommand writes a real, non-trivial PNG, and
    # SVG or PDF by extension.
    def test_pictures(self):
        for cmd in ("timeline", "chunks", "links"):
            with self.subTest(cmd=cmd):
                # the timeline through the command line (the script's own
                # entry); the rest in this process
                run = self.tool if cmd == "timeline" else self.tool_in
                rc, _, err = run(cmd, self.db, "--run", 1, "-o", self.out(f"{cmd}.png"))
                self.assertEqual(rc, 0, err)
                self.assert_image(self.out(f"{cmd}.png"))
        # run 5 has simulated times: the timeline draws those
        rc, _, err = self.tool_in("timeline", self.db, "--run", 5, "-o", self.out("sim.png"))
        self.assertEqual(rc, 0, err)
        self.assert_image(self.out("sim.png"))
        rc, _, err = self.tool_in("compare", self.db, "-o", self.out("compare.png"))
        self.assertEqual(rc, 0, err)
        self.assert_image(self.out("compare.png"))
        rc, _, err = self.tool_in("timeline", self.db, "-o", self.out("t.svg"))
        self.assertEqual(rc, 0, err)
        with open(self.out("t.svg")) as f:
            self.assertIn("<svg", f.read(2000))
        rc, _, err = self.tool_in("chunks", self.db, "-o", self.out("c.pdf"))
        self.assertEqual(rc, 0, err)
        with open(self.out("c.pdf"), "rb") as f:
            self.assertEqual(f.read(5), b"%PDF-")

    # tools-2: the chunk diagram's contents follow the ring schedule: after
    # reduce-scatter step s, worker r's chunk (r-s-1) mod W holds the
    # contributions of workers r-s-1 .. r, and at the end all hold all.
    def test_chunk_contributors_match_the_schedule(self):
        sys.path.insert(0, os.path.dirname(TOOL))
        import ringsim_plot
        con = ringsim_plot.open_trace(self.db)
        for rid in (1, 2, 3):
            run = ringsim_plot.pick_run(con, self.db, rid)
            W = run["workers"]
            stages = ringsim_plot.replay_holdings(con, run)
            self.assertEqual(len(stages), 2 * (W - 1) + 1)
            for s in range(W - 1):
                holds = stages[1 + s][1]
                for r in range(W):
                    c = (r - s - 1) % W
                    self.assertEqual(holds[r][c], {(r - k) % W for k in range(s + 2)},
                                     f"run {rid} step {s} worker {r}")
            # the counts agree with the rows' contrib_count column
            for s in range(W - 1):
                for src, dst, chunk, count in con.execute(
                        "SELECT src, dst, chunk, contrib_count FROM transfer WHERE run_id = ? "
                        "AND phase = 'reduce_scatter' AND step = ? AND segment = 0", (rid, s)):
                    self.assertEqual(len(stages[s][1][src][chunk]), count)
            final = stages[-1][1]
            self.assertTrue(all(final[r][c] == set(range(W)) for r in range(W) for c in range(W)))
        con.close()

    # tools-3: export writes Chrome trace JSON: a send slice per transfer row,
    # a receive slice per received row, and flows pairing each send with its
    # receive, on one track per worker.
    def test_export(self):
        rc, _, err = self.tool_in("export", self.db, "--run", 1, "-o", self.out("trace.json"))
        self.assertEqual(rc, 0, err)
        with open(self.out("trace.json")) as f:
            doc = json.load(f)
        events = doc["traceEvents"]
        con = sqlite3.connect(self.db)
        rows = con.execute("SELECT count(*), count(recv_end_ns) FROM transfer WHERE run_id = 1").fetchone()
        con.close()
        slices = [e for e in events if e["ph"] == "X" and e["cat"] in ("reduce_scatter", "all_gather")]
        sends = [e for e in slices if e["name"].startswith("send")]
        recvs = [e for e in slices if not e["name"].startswith("send")]
        self.assertEqual(len(sends), rows[0])
        self.assertEqual(len(recvs), rows[1])
        starts = {e["id"]: e for e in events if e["ph"] == "s"}
        ends = {e["id"]: e for e in events if e["ph"] == "f"}
        self.assertEqual(len(starts), rows[0])
        self.assertEqual(set(starts), set(ends))
        for fid, s in starts.items():
            f = ends[fid]
            self.assertEqual((f["tid"] - s["tid"]) % 4, 1, "a flow goes to the next worker")
            self.assertLessEqual(s["ts"], f["ts"] + 1e-3 + 1e9)  # same clock
        self.assertEqual(sorted({e["tid"] for e in slices}), [0, 1, 2, 3])
        names = [e for e in events if e["ph"] == "M" and e["name"] == "thread_name"]
        self.assertEqual(len(names), 4)
        self.assertEqual(sends[0]["args"]["contributors"], [sends[0]["tid"]])

    # tools-4: animate writes a GIF with one frame per stage.
    def test_animate(self):
        rc, _, err = self.tool_in("animate", self.db, "--run", 2, "-o", self.out("ring.gif"))
        self.assertEqual(rc, 0, err)
        from PIL import Image
        with Image.open(self.out("ring.gif")) as im:
            self.assertEqual(im.format, "GIF")
            self.assertEqual(im.n_frames, 2 * (3 - 1) + 1)

    # tools-channels: on NCCL's channels (--channels 2 on two nodes of two
    # GPUs: rings 0 1 3 2 and 1 0 2 3) the chunk picture draws each
    # channel's block of panels, titled with the channel, its part and its
    # ring, its columns in its ring's order; each channel's replay counts
    # a payload's contributors round its own ring, so after reduce-scatter
    # step s the worker at place p holds, of chunk p-s-1, the places
    # p-s-1 .. p; animate draws every channel's frames in turn.
    def test_chunks_on_channels(self):
        model = self.out("ch.json")
        with open(model, "w") as f:
            json.dump({"name": "ch", "params": [{"name": "g", "shape": [20000]}]}, f)
        db = self.out("channels.db")
        p = subprocess.run([RINGSIM, "-p", model, "--topo", "dgx-h100,nodes=2,gpus=2,nics=2",
                            "--channels", "2", "--trace", db], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        W = 4
        want = self.rows(db, "SELECT channel, min(elem_offset), max(elem_offset + elems) "
                             "FROM transfer GROUP BY channel ORDER BY channel")
        self.assertEqual([c for c, _, _ in want], [0, 1])
        orders = {}
        for c, _, _ in want:
            senders = dict(self.rows(db, "SELECT chunk, src FROM transfer WHERE channel = ? AND "
                                         "phase = 'reduce_scatter' AND step = 0 AND segment = 0",
                                     c))
            orders[c] = [senders[k] for k in range(W)]
        self.assertNotEqual(orders[0], orders[1])
        fig, title = self.figure_of("chunks", db, "-o", self.out("channels.png"))
        self.assertIn("on 2 of NCCL's channels", title)
        self.assertEqual(len(fig.subfigs), 2)
        for sub, (c, a, b) in zip(fig.subfigs, want):
            self.assertEqual(sub._suptitle.get_text(),
                             f"channel {c}: elements [{a}, {b}), ring "
                             + " ".join(map(str, orders[c])))
            for ax in sub.axes:
                if ax.axison:
                    self.assertEqual([t.get_text() for t in ax.get_xticklabels()],
                                     [f"w{w}" for w in orders[c]])
        self.assert_image(self.out("channels.png"))
        rc, _, err = self.tool_in("animate", db, "-o", self.out("channels.gif"))
        self.assertEqual(rc, 0, err)
        self.assertIn("(14 frames, 2 channels' in turn)", err)
        from PIL import Image
        with Image.open(self.out("channels.gif")) as im:
            self.assertEqual(im.n_frames, 2 * (2 * (W - 1) + 1))
        ringsim_plot = self.plot_module()
        from ringsim_plot.replay import replay_holdings, run_channels
        con = ringsim_plot.open_trace(db)
        run = ringsim_plot.pick_run(con, db, None)
        channels = run_channels(con, run)
        self.assertEqual([(ch["channel"], ch["off"], ch["end"], ch["order"]) for ch in channels],
                         [(c, a, b, orders[c]) for c, a, b in want])
        for ch in channels:
            order = ch["order"]
            stages = replay_holdings(con, run, channel=ch)
            self.assertEqual(len(stages), 2 * (W - 1) + 1)
            for s in range(W - 1):
                holds = stages[1 + s][1]
                for p_ in range(W):
                    c = (p_ - s - 1) % W
                    self.assertEqual(holds[order[p_]][c],
                                     {order[(p_ - k) % W] for k in range(s + 2)},
                                     f"channel {ch['channel']} step {s} place {p_}")
            self.assertTrue(all(cell == set(range(W)) for row in stages[-1][1] for cell in row))
        con.close()
        # a trace from before the channel column draws its one ring as ever
        old = self.out("before-channels.db")
        shutil.copy(self.db, old)
        con = sqlite3.connect(old)
        con.execute("ALTER TABLE transfer DROP COLUMN channel")
        con.commit()
        con.close()
        for cmd, out in (("chunks", "before.png"), ("html", "before.html")):
            rc, _, err = self.tool_in(cmd, old, "--run", 2, "-o", self.out(out))
            self.assertEqual(rc, 0, err)

    def svg_texts(self, path):
        """The text elements of an SVG the tool wrote (text stays text)."""
        import xml.etree.ElementTree as ET
        texts = []
        for el in ET.parse(path).iter():
            if el.tag.endswith("}text") or el.tag == "text":
                texts.append(("".join(el.itertext()), float(el.get("x") or 0), el.get("style") or ""))
        return texts

    def png_title(self, path):
        from PIL import Image
        with Image.open(path) as im:
            return im.info.get("Title", "")

    def rows(self, db, sql, *params):
        con = sqlite3.connect(db)
        try:
            return con.execute(sql, params).fetchall()
        finally:
            con.close()

    def export(self, db, *args):
        out = self.out(f"export-{os.path.basename(db)}-{len(args)}.json")
        rc, _, err = self.tool_in("export", db, *args, "-o", out)
        self.assertEqual(rc, 0, err)
        with open(out) as f:
            return json.load(f)

    def assert_nested(self, events):
        """Complete slices on each track nest (Perfetto drops those that do not)."""
        by_track = {}
        for e in events:
            if e["ph"] == "X":
                by_track.setdefault(e["tid"], []).append(
                    (round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000), e["name"]))
        for tid, spans in by_track.items():
            spans.sort(key=lambda s: (s[0], -s[1]))
            stack = []
            for t0, t1, name in spans:
                while stack and stack[-1][1] <= t0:
                    stack.pop()
                self.assertFalse(stack and t1 > stack[-1][1],
                                 f"track {tid}: {name} [{t0}, {t1}] overlaps {stack[-1] if stack else ''}")
                stack.append((t0, t1, name))

    # tools-6: links counts every transfer sent, received or not (a failed
    # run's bytes per link are SUM(bytes) from SQL), and for a --net run rates
    # the links in simulated time: the 1 GB/s link is the slowest.
    def test_links_counts_every_transfer_and_uses_simulated_time(self):
        rc, out, err = self.tool_in("links", self.failed, "-o", self.out("links-failed.png"))
        self.assertEqual(rc, 0, err)
        table = {line.split()[0]: line.split() for line in out.splitlines()[1:]}
        expected = self.rows(self.failed, "SELECT src, dst, count(*), count(recv_end_ns), sum(bytes) "
                             "FROM transfer GROUP BY src, dst")
        self.assertTrue(any(n != received for _, _, n, received, _ in expected),
                        "the failed run left no transfer unreceived")
        for src, dst, n, received, nbytes in expected:
            row = table[f"{src}->{dst}"]
            self.assertEqual([int(x) for x in row[1:4]], [n, received, nbytes], f"link {src}->{dst}")
        self.assertIn("FAILED", self.png_title(self.out("links-failed.png")))
        rc, out, err = self.tool_in("links", self.slow, "-o", self.out("links-slow.svg"))
        self.assertEqual(rc, 0, err)
        self.assertIn("simulated", out.splitlines()[0])
        rates = {line.split()[0]: float(line.split()[-1]) for line in out.splitlines()[1:]}
        self.assertEqual(min(rates, key=rates.get), "2->3", rates)
        # bytes over the simulated time in flight: 1 GB/s with 5 us of latency
        nbytes, ns = self.rows(self.slow, "SELECT sum(bytes), sum(sim_recv_ns - sim_send_ns) "
                               "FROM transfer WHERE src = 2")[0]
        self.assertAlmostEqual(rates["2->3"], nbytes / ns, places=3)
        self.assertTrue(any("simulated time" in t for t, _, _ in self.svg_texts(self.out("links-slow.svg"))))
        rc, out, err = self.tool_in("links", self.slow, "--clock", "wall", "-o", self.out("links-wall.png"))
        self.assertEqual(rc, 0, err)
        self.assertIn("wall", out.splitlines()[0])

    # tools-topo: topo draws a --topo run's nodes, GPUs and NICs, and prints
    # the bytes of each link it colours: GPU to GPU within a node, NIC to
    # NIC between nodes (GPU g on NIC floor(g K / G)), each SUM(bytes) of the
    # transfers from SQL; a run without --topo is refused in one line.
    def test_topo_counts_every_link(self):
        db = os.path.join(self.dir, "topo.db")
        algos = ("rhd", "ring", "hier")
        for algo in algos:
            p = subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "model.json"), "--topo",
                                "nodes=2,gpus=4,nics=2,intra=1us/100GB/s,nic=5us/25GB/s",
                                "--algo", algo, "--trace", db], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
        links = {}
        for run, algo in enumerate(algos, 1):
            rc, out, err = self.tool_in("topo", db, "--run", run, "-o", self.out(f"topo-{algo}.png"))
            self.assertEqual(rc, 0, err)
            self.assert_image(self.out(f"topo-{algo}.png"))
            shown = {}
            for line in out.splitlines()[1:]:
                kind, src, _, _, dst, nbytes = line.split()
                shown[(kind, int(src), int(dst))] = int(nbytes)
            want = {}
            for src, dst, nbytes in self.rows(db, "SELECT src, dst, sum(bytes) FROM transfer "
                                                  f"WHERE run_id = {run} GROUP BY src, dst"):
                key = (("GPU", src, dst) if src // 4 == dst // 4 else
                       ("NIC", src // 4 * 2 + src % 4 // 2, dst // 4 * 2 + dst % 4 // 2))
                want[key] = want.get(key, 0) + nbytes
            self.assertEqual(shown, want, algo)
            self.assertTrue(any(k[0] == "NIC" for k in shown), shown)
            links[algo] = shown
        self.assertEqual(len([k for k in links["ring"] if k[0] == "NIC"]), 2)  # 3->4, 7->0
        # hier: each node's ring of 4, and local rank l to l on the other node
        self.assertEqual({k for k in links["hier"] if k[0] == "GPU"},
                         {("GPU", n * 4 + g, n * 4 + (g + 1) % 4)
                          for n in (0, 1) for g in range(4)})
        self.assertIn("2 nodes x 4 GPUs, 2 NICs per node", self.png_title(self.out("topo-ring.png")))
        # the timeline in simulated time outlines the transfers whose NIC
        # was shared (rhd's and hier's crossing steps, 2 GPUs per NIC); the
        # ring's crossings share nothing, and its timeline says nothing of it
        for run, algo, said in ((1, "rhd", True), (2, "ring", False), (3, "hier", True)):
            svg = self.out(f"timeline-topo-{algo}.svg")
            rc, _, err = self.tool_in("timeline", db, "--run", run, "-o", svg)
            self.assertEqual(rc, 0, err)
            texts = " ".join(t for t, _, _ in self.svg_texts(svg))
            self.assertEqual("between nodes, its NIC shared (by up to 2 GPUs)" in texts, said,
                             algo)
        rc, out, err = self.tool_in("topo", self.db, "--run", 1, "-o", self.out("topo-none.png"))
        self.assertEqual(rc, 2)
        self.assertEqual(err, "ringsim-plot: run 1 has no topology: topo draws a run made with "
                              "--topo\n")
        self.assertFalse(os.path.exists(self.out("topo-none.png")))

    # tools-7: export: waiting is its own slice (duration = wait_ns), the
    # reduce after it; args carry iter, bucket and dtype; a bucket slice
    # around step slices around the transfers, properly nested.
    def test_export_wait_slices_steps_and_buckets(self):
        doc = self.export(self.db, "--run", 1)
        events = doc["traceEvents"]
        self.assertEqual(doc["otherData"]["clock"], "wall")
        waits = [e for e in events if e["ph"] == "X" and e["name"].startswith("wait")]
        expected = self.rows(self.db, "SELECT src, seq, wait_ns, recv_begin_ns, recv_end_ns FROM transfer "
                             "WHERE run_id = 1 AND wait_ns > 0")
        self.assertEqual(len(waits), len(expected))
        by_key = {(e["args"]["from"], e["args"]["seq"]): e for e in waits}
        works = {(e["args"]["from"], e["args"]["seq"]): e for e in events
                 if e["ph"] == "X" and e["name"].split()[0] in ("reduce", "copy")}
        for src, seq, wait, r0, r1 in expected:
            self.assertAlmostEqual(by_key[(src, seq)]["dur"], wait / 1e3, places=6)
            self.assertAlmostEqual(by_key[(src, seq)]["ts"], r0 / 1e3, places=6)
            work = works[(src, seq)]
            self.assertAlmostEqual(work["ts"], (r0 + wait) / 1e3, places=6)
            self.assertAlmostEqual(work["dur"], max(r1 - r0 - wait, 1) / 1e3, places=6)
        for e in works.values():
            self.assertEqual((e["args"]["iter"], e["args"]["bucket"], e["args"]["dtype"]), (0, 0, "f32"))
        steps = [e for e in events if e["ph"] == "X" and e.get("cat") == "step"]
        buckets = [e for e in events if e["ph"] == "X" and e.get("cat") == "bucket"]
        self.assertEqual(len(buckets), 4)  # one bucket, four workers
        self.assertEqual(len(steps), 4 * 2 * 3)  # each worker's 2(W-1) steps
        self.assertEqual({(e["tid"], e["name"]) for e in steps},
                         {(w, f"{p} step {s}") for w in range(4) for p in ("RS", "AG") for s in range(3)})
        self.assert_nested(events)

    # tools-8: export of a --net run is in simulated time by default: each
    # transfer a slice from sim_send_ns to sim_recv_ns on its link's track;
    # --clock wall gives the wall-clock export.
    def test_export_simulated_time_by_default(self):
        doc = self.export(self.slow)
        self.assertEqual(doc["otherData"]["clock"], "simulated")
        events = doc["traceEvents"]
        transfers = [e for e in events if e["ph"] == "X" and e.get("cat") in ("reduce_scatter", "all_gather")]
        expected = self.rows(self.slow, "SELECT src, seq, sim_send_ns, sim_recv_ns FROM transfer")
        self.assertEqual(len(transfers), len(expected))
        by_key = {(e["args"]["from"], e["args"]["seq"]): e for e in transfers}
        for src, seq, t0, t1 in expected:
            self.assertAlmostEqual(by_key[(src, seq)]["ts"], t0 / 1e3, places=6)
            self.assertAlmostEqual(by_key[(src, seq)]["dur"], (t1 - t0) / 1e3, places=6)
        sim_ns = self.rows(self.slow, "SELECT sim_ns FROM run")[0][0]
        self.assertAlmostEqual(max(e["ts"] + e["dur"] for e in transfers), sim_ns / 1e3, places=3)
        self.assert_nested(events)
        wall = self.export(self.slow, "--clock", "wall")
        self.assertEqual(wall["otherData"]["clock"], "wall")
        self.assertTrue(any(e["ph"] == "X" and e["name"].startswith("send") for e in wall["traceEvents"]))

    # tools-9: export of a failed run: its metadata says failed, with the
    # error; an instant where the injected crash fired; sends never received
    # are marked and start no flow; every flow that starts ends.
    def test_export_failed_run(self):
        doc = self.export(self.failed)
        meta = doc["otherData"]
        error = self.rows(self.failed, "SELECT error FROM run")[0][0]
        self.assertEqual((meta["status"], meta["failed"], meta["error"]), ("failed", True, error))
        events = doc["traceEvents"]
        process = [e for e in events if e["ph"] == "M" and e["name"] == "process_name"][0]
        self.assertIn("FAILED", process["args"]["name"])
        faults = [e for e in events if e["ph"] == "i" and e["name"].startswith("fault")]
        self.assertEqual(len(faults), 1, faults)
        self.assertEqual((faults[0]["tid"], faults[0]["args"]["phase"], faults[0]["args"]["step"],
                          faults[0]["args"]["worker_state"]), (2, "all_gather", 0, "crashed"))
        # it fired after worker 2's last transfer
        last = self.rows(self.failed, "SELECT max(max(CASE WHEN src = 2 THEN send_end_ns END), "
                         "max(CASE WHEN dst = 2 THEN recv_end_ns END)) FROM transfer")[0][0]
        self.assertAlmostEqual(faults[0]["ts"], last / 1e3, places=6)
        lost = [e for e in events if e["ph"] == "X" and e["args"].get("received") is False]
        never = self.rows(self.failed, "SELECT count(*) FROM transfer WHERE recv_end_ns IS NULL")[0][0]
        self.assertGreater(never, 0)
        self.assertEqual(len(lost), never)
        self.assertTrue(all("never received" in e["name"] for e in lost))
        starts = {e["id"] for e in events if e["ph"] == "s"}
        ends = {e["id"] for e in events if e["ph"] == "f"}
        self.assertEqual(starts, ends)
        self.assert_nested(events)

    # tools-switch: where a GPU stopped waiting on its node's NVLink switch
    # (nvls: participant W + n), the export names the switch as ringsim
    # does, "switch 0 (participant 8)", never "worker 8" of 8 workers.
    def test_export_names_a_switch(self):
        db = self.out("nvls-failed.db")
        p = subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "mlp.json"), "--topo",
                            "dgx-h100", "--algo", "nvls", "--inject", "corrupt:worker=2",
                            "--timeout", "0.3", "--trace", db], capture_output=True, text=True)
        self.assertEqual(p.returncode, 3, p.stderr)
        events = self.export(db)["traceEvents"]
        stopped = {e["tid"]: e["args"] for e in events if e["name"].startswith("stopped: ")}
        peers = self.rows(db, "SELECT worker, peer FROM worker WHERE waiting = 'receive'")
        self.assertTrue(peers)
        for w, peer in peers:
            self.assertEqual(peer, 8, (w, peer))
            self.assertTrue(stopped[w]["where"].endswith(
                ", waiting to receive from switch 0 (participant 8)"), stopped[w])

    # tools-10: the chunk diagram at W=16 fits one 1920 x 1080 screen: the
    # panels of the steps that matter (start, reduce-scatter 0, 1 and 14,
    # all-gather 0 and 14), the title naming those left out, labels 10
    # pixels or more high, as ring ranges (never cut-off lists), owners
    # marked. (Drawn in this process, PNG and SVG from one trace.)
    def test_chunks_at_sixteen_workers(self):
        db = self.out("w16.db")
        model = self.out("w16.json")
        with open(model, "w") as f:
            json.dump({"name": "w16", "params": [{"name": "g", "shape": [160]}]}, f)
        p = subprocess.run([RINGSIM, "-w", "16", "-p", model, "--trace", db], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        fig, title = self.figure_of("chunks", db, "-o", self.out("chunks16.png"))
        w, h = png_size(self.out("chunks16.png"))
        self.assertLessEqual(w, 1920, (w, h))
        self.assertLessEqual(h, 1080, (w, h))
        self.assertGreaterEqual(w, 1500, (w, h))
        panels = [ax.get_title() for ax in fig.axes if ax.get_title()]
        self.assertEqual([t.split("\n")[0] for t in panels],
                         ["start: each worker holds its own gradient", "reduce-scatter step 0",
                          "reduce-scatter step 1", "reduce-scatter step 14", "all-gather step 0",
                          "all-gather step 14"])
        self.assertIn("6 of 31 panels (W > 8): left out reduce-scatter steps 2-13; all-gather "
                      "steps 1-13", " ".join(title.split()))
        # every cell label at least 10 pixels high in the 120 dpi picture
        sizes = [t.get_fontsize() for ax in fig.axes for t in ax.texts if t.get_text()]
        self.assertEqual(len(sizes), 6 * 256)
        self.assertGreaterEqual(min(sizes) * 120 / 72, 10, min(sizes))
        rc, _, err = self.tool_in("chunks", db, "-o", self.out("chunks16.svg"))
        self.assertEqual(rc, 0, err)
        texts = [t for t, _, _ in self.svg_texts(self.out("chunks16.svg"))]
        cells = [t for t in texts if t and " " not in t and (t[0] == "{" or t == "all")]
        self.assertEqual(len(cells), 6 * 256, len(cells))
        # a ring's copy holds one run round the ring: one worker, two, or
        # three or more as first-last (never a cut-off list)
        self.assertEqual([t for t in cells if not re.fullmatch(r"all|\{\d+(,\d+|-\d+)?\}", t)],
                         [])
        # reduce-scatter step 1: worker 0's chunk 14 holds 14, 15, 0;
        # step 14: worker 14's chunk 15 holds 0-14; step 0: worker 0's
        # chunk 15 holds 15 and 0, listed ascending
        self.assertIn("{14-0}", cells)
        self.assertIn("{0-14}", cells)
        self.assertIn("{0,15}", cells)
        # the 16 owners hold every contribution after the last
        # reduce-scatter step (op avg divides there), 32 copies after
        # all-gather step 0, all 256 after step 14
        self.assertEqual(cells.count("all"), 16 + 32 + 256)
        self.assertTrue(any("divide by 16" in t for t in texts), "where the division happens")

    # tools-17: the chunk diagram fits its canvas at W=2, 3, 4, 8 and 16:
    # drawn as the file is (120 dpi), every text's and arrow's box (the
    # renderer's window extent) lies inside the figure, and no two titles
    # (the figure's, the panels') overlap. At W=2 the start's title ran
    # into its neighbour's; at W=3 it was clipped ("tart: each worker").
    def test_chunks_fit_their_canvas(self):
        model = self.out("fit.json")
        with open(model, "w") as f:
            json.dump({"name": "fit", "params": [{"name": "g", "shape": [1001]}]}, f)
        for W in (2, 3, 4, 8, 16):
            db = self.out(f"fit{W}.db")
            p = subprocess.run([RINGSIM, "-w", str(W), "-p", model, "--trace", db],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            fig = self.plot_module().figures.chunks(db)
            fig.set_dpi(120)  # output.save's
            fig.canvas.draw()
            renderer = fig.canvas.get_renderer()
            canvas = fig.bbox
            boxes, titles = [], []
            for text in fig.texts:
                titles.append(("suptitle", text.get_window_extent(renderer)))
            for ax in fig.axes:
                if not ax.axison:
                    continue
                titles.append((ax.get_title().split("\n")[0],
                               ax.title.get_window_extent(renderer)))
                for text in ax.get_xticklabels() + ax.get_yticklabels() + ax.texts:
                    if text.get_text():
                        boxes.append((f"text {text.get_text()!r}", text.get_window_extent(renderer)))
                    arrow = getattr(text, "arrow_patch", None)
                    if arrow is not None:
                        boxes.append(("arrow", arrow.get_window_extent(renderer)))
                for patch in ax.patches:
                    boxes.append(("patch", patch.get_window_extent(renderer)))
            self.assertGreater(sum(1 for name, _ in boxes if name == "arrow"), 2 * (W - 1))
            for name, box in boxes + titles:
                with self.subTest(W=W, artist=name):
                    # half a pixel for rounding
                    self.assertTrue(box.x0 >= -0.5 and box.y0 >= -0.5 and
                                    box.x1 <= canvas.x1 + 0.5 and box.y1 <= canvas.y1 + 0.5,
                                    f"{name} at {box.extents} off the canvas {canvas.extents}")
            for i, (one, box) in enumerate(titles):
                for other, box2 in titles[i + 1:]:
                    with self.subTest(W=W, titles=(one, other)):
                        self.assertFalse(box.overlaps(box2),
                                         f"{one!r} at {box.extents} overlaps {other!r} at "
                                         f"{box2.extents}")

    # tools-11: a failed run's chunk diagram and timeline say so: the title
    # (and the PNG's Title) carries the error, the crashed worker is marked,
    # transfers never received are drawn as such.
    def test_abandoned_run_says_it_once(self):
        """A row a later run marked abandoned (its process gone) is titled
        "ABANDONED: its process ...", the status once (it read "ABANDONED:
        abandoned: its process ...")."""
        db = self.out("abandoned.db")
        shutil.copy(self.failed, db)
        con = sqlite3.connect(db)
        con.execute("UPDATE run SET status = 'running', host = ?, pid = 999999999, "
                    "pid_start = 1", (os.uname().nodename,))
        con.commit()
        con.close()
        p = subprocess.run([RINGSIM, "-w", "2", "-p", os.path.join(EXAMPLES, "two_workers.json"),
                            "--trace", db], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        (error,), = self.rows(db, "SELECT error FROM run WHERE run_id = 1 AND "
                                  "status = 'abandoned'")
        self.assertTrue(error.startswith("abandoned: "), error)
        rc, _, err = self.tool_in("chunks", db, "--run", 1, "-o", self.out("abandoned.png"))
        self.assertEqual(rc, 0, err)
        title = self.png_title(self.out("abandoned.png"))
        self.assertIn("ABANDONED: " + error[len("abandoned: "):], title)
        self.assertNotIn("ABANDONED: abandoned", title)

    def test_failed_run_pictures(self):
        error = self.rows(self.failed, "SELECT error FROM run")[0][0]
        for cmd in ("chunks", "timeline"):
            with self.subTest(cmd=cmd):
                rc, _, err = self.tool_in(cmd, self.failed, "-o", self.out(f"failed-{cmd}.png"))
                self.assertEqual(rc, 0, err)
                self.assertIn(f"FAILED: {error}", self.png_title(self.out(f"failed-{cmd}.png")))
                rc, _, err = self.tool_in(cmd, self.failed, "-o", self.out(f"failed-{cmd}.svg"))
                self.assertEqual(rc, 0, err)
                texts = " ".join(t for t, _, _ in self.svg_texts(self.out(f"failed-{cmd}.svg")))
                self.assertIn("crashed", texts)
                self.assertIn("never received", texts)
        rc, _, err = self.tool_in("timeline", self.db, "--run", 1, "-o", self.out("ok-timeline.png"))
        self.assertNotIn("FAILED", self.png_title(self.out("ok-timeline.png")))

    # tools-hier-steps: hier's steps in the order --inject counts them (the
    # node's reduce-scatter, the steps across the nodes, the node's
    # all-gather; a phase's steps numbered through): a crash injected at
    # each global step of hier, hier:rd and hier:rhd on 3 nodes of 2 (rd
    # and rhd fold across them) is named the phase and step the worker
    # table says the worker stopped in; the chunk diagram of such a run
    # draws the crash.
    def test_hier_steps_as_inject_counts_them(self):
        plot = self.plot_module()
        model = os.path.join(EXAMPLES, "mlp.json")
        topo = "nodes=3,gpus=2,intra=1us/100GB/s,nic=5us/25GB/s"
        for algo in ("hier", "hier:rd", "hier:rhd"):
            p = subprocess.run([RINGSIM, "-p", model, "--topo", topo, "--algo", algo, "--no-trace"],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            steps = int(re.search(r"steps +(\d+) per bucket", p.stdout).group(1))
            for step in range(steps):
                db = self.out(f"hier-crash-{algo}-{step}.db")
                p = subprocess.run([RINGSIM, "-p", model, "--topo", topo, "--algo", algo,
                                    "--inject", f"crash:worker=2,step={step}", "--timeout", "0.3",
                                    "--trace", db], capture_output=True, text=True)
                self.assertEqual(p.returncode, 3, p.stderr)
                con = plot.open_trace(db)
                run = plot.pick_run(con, db, None)
                con.close()
                fault, = plot.replay.injected_faults(run)
                stopped = self.rows(db, "SELECT state, phase, step FROM worker WHERE worker = 2")[0]
                self.assertEqual(("crashed", fault["phase"], fault["phase_step"]), stopped,
                                 f"{algo} global step {step}")
            self.assertEqual(plot.replay.phase_step(steps, run), (None, None))  # past the last
            svg = self.out(f"hier-crash-{algo}.svg")
            rc, _, err = self.tool_in("chunks", db, "-o", svg)
            self.assertEqual(rc, 0, err)
            self.assertIn("crashed", [t.split("\n")[-1] for t, _, _ in self.svg_texts(svg)])

    # tools-12: the timeline: send swatches in the phase colours, a step
    # marker for every bucket, labels that do not run together at 24,000
    # transfers, and on a simulated uniform ring each step told apart.
    def test_timeline_markers_legend_and_steps(self):
        model = self.out("buckets.json")
        with open(model, "w") as f:
            json.dump({"name": "b", "params": [{"name": f"p{i}", "shape": [60000]} for i in range(6)]}, f)
        db = self.out("buckets.db")
        p = subprocess.run([RINGSIM, "-w", "4", "-p", model, "--bucket-mb", "0.5", "--trace", db],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        buckets = self.rows(db, "SELECT count(DISTINCT bucket) FROM transfer")[0][0]
        self.assertGreater(buckets, 1)
        rc, _, err = self.tool_in("timeline", db, "-o", self.out("buckets.svg"))
        self.assertEqual(rc, 0, err)
        texts = [t for t, _, _ in self.svg_texts(self.out("buckets.svg"))]
        for b in range(buckets):
            self.assertIn(f"b{b} RS0", texts)
        self.assertIn("reduce-scatter send", texts)
        self.assertIn("all-gather send", texts)
        self.assertNotIn("send (thin bar)", texts)
        with open(self.out("buckets.svg")) as f:
            svg = f.read()
        self.assertNotIn("#808080", svg.lower(), "a grey send swatch")
        # ringsim bench: a marker for every iteration, not just the first
        db = self.out("bench.db")
        p = subprocess.run([RINGSIM, "bench", "-w", "4", "-b", "64K", "-e", "64K", "-n", "3", "--warmup", "1",
                            "--trace", db], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        iters = self.rows(db, "SELECT count(DISTINCT iter) FROM transfer WHERE run_id = 1")[0][0]
        self.assertGreater(iters, 1)
        rc, _, err = self.tool_in("timeline", db, "-o", self.out("bench.svg"))
        self.assertEqual(rc, 0, err)
        texts = [t for t, _, _ in self.svg_texts(self.out("bench.svg"))]
        self.assertIn("it1 RS0", texts)
        # 24,000 transfers on 16 workers: step labels apart
        model = self.out("big.json")
        with open(model, "w") as f:
            json.dump({"name": "big", "params": [{"name": "g", "shape": [160000]}]}, f)
        db = self.out("big.db")
        p = subprocess.run([RINGSIM, "-w", "16", "-p", model, "--segment-bytes", "800", "--trace", db],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.rows(db, "SELECT count(*) FROM transfer")[0][0], 24000)
        rc, _, err = self.tool_in("timeline", db, "-o", self.out("big.svg"))
        self.assertEqual(rc, 0, err)
        import re
        import xml.etree.ElementTree as ET
        rows, texts = {}, []
        for el in ET.parse(self.out("big.svg")).iter():
            if el.tag.endswith("}text"):
                text = "".join(el.itertext())
                texts.append(text)
                if re.fullmatch(r"(RS|AG)\d+", text):
                    rows.setdefault(float(el.get("y")), []).append((float(el.get("x")), text))
        self.assertGreaterEqual(sum(map(len, rows.values())), 4, rows)
        for labels in rows.values():  # labels of one row never run into each other
            labels.sort()
            for (x0, t0), (x1, t1) in zip(labels, labels[1:]):
                # 7-point text: a character is about 4.5 points wide
                self.assertGreater(x1 - x0, 4.5 * len(t0), f"{t0} at {x0} runs into {t1} at {x1}")
        # every step labelled, or named among those left out
        drawn = {t for labels in rows.values() for _, t in labels}
        note = " ".join(t for t in texts if "step labels left out" in t)
        for p, s in self.rows(db, "SELECT DISTINCT phase, step FROM transfer"):
            label = f"{'RS' if p == 'reduce_scatter' else 'AG'}{s}"
            self.assertTrue(label in drawn or re.search(rf"\b{label}\b", note), (label, drawn, note))
        # a simulated uniform ring: bars of neighbouring steps differ in shade
        db = self.out("uniform.db")
        p = subprocess.run([RINGSIM, "-w", "4", "-p", os.path.join(EXAMPLES, "model.json"),
                            "--net", "latency=5us,bandwidth=25GB/s", "--trace", db],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        rc, _, err = self.tool_in("timeline", db, "-o", self.out("uniform.svg"))
        self.assertEqual(rc, 0, err)
        with open(self.out("uniform.svg")) as f:
            fills = set(re.findall(r"fill: ?(#[0-9a-f]{6})", f.read()))
        self.assertGreaterEqual(len(fills & {"#1f77b4", "#ff7f0e"}), 2, fills)
        self.assertGreaterEqual(len(fills - {"#1f77b4", "#ff7f0e", "#ffffff", "#000000"}), 2, fills)

    # tools-13: compare keeps --net runs and plain runs apart: by default
    # the kind of the latest run with two or more (here the plain runs), and
    # a --runs list that mixes them is refused.
    def test_compare_keeps_simulated_and_wall_runs_apart(self):
        rc, _, err = self.tool_in("compare", self.db, "-o", self.out("cmp.png"))
        self.assertEqual(rc, 0, err)
        title = self.png_title(self.out("cmp.png"))
        self.assertIn("4 runs (1,2,3,4), wall time", title)
        self.assertIn("left out 1 simulated", err)
        rc, _, err = self.tool_in("compare", self.db, "--runs", "1,5", "-o", self.out("cmp2.png"))
        self.assertEqual(rc, 2, err)
        self.assertIn("run 5 has a simulated network", err)
        self.assertEqual(err.strip().count("\n"), 0, err)

    # tools-14: every other algorithm (rd, rhd, linear, tree, gloo-ring at W=5, so rd
    # and rhd fold in and out; hier, hier:rd and hier:rhd on 2 nodes of 3
    # GPUs, in wall time): timeline, links, compare and export draw each
    # phase in its own colour and name it; chunks draws each one's
    # regions, named in the title, and animate the frames of rd's (a fold)
    # and hier:rhd's (a topology) as chunks' panels (its frames are
    # chunk_stages', whatever the algorithm; a GIF of each took a third of
    # the test); the export's contributors of hier's reduce-scatter within
    # a node are its schedule's, wrapping round the node.
    def test_other_algorithms(self):
        import re
        colours = {"reduce_scatter": "#1f77b4", "all_gather": "#ff7f0e", "exchange": "#2ca02c",
                   "reduce": "#9467bd", "broadcast": "#17becf"}
        abbrev = {"reduce_scatter": "RS", "all_gather": "AG", "exchange": "EX", "reduce": "RED",
                  "broadcast": "BC"}
        db_all = self.out("algos-all.db")
        G = 3
        hier = ["--topo", f"nodes=2,gpus={G},intra=1us/100GB/s,nic=5us/25GB/s"]
        runs = [(a, 5, ["-w", "5"]) for a in ("rd", "rhd", "linear", "tree", "gloo-ring")]
        runs += [(a, 2 * G, hier) for a in ("hier", "hier:rd", "hier:rhd")]
        for algo, W, size in runs:
            # a --topo run has simulated times: its wall times have the
            # send bars and the copy and reduce slices checked here
            clock = ["--clock", "wall"] if size is hier else []
            db = self.out(f"algo-{algo}.db")
            for trace in (db,) if size is hier else (db, db_all):
                p = subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "mlp.json"), *size,
                                    "--algo", algo, "--trace", trace], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
            phases = [r[0] for r in self.rows(db, "SELECT phase FROM transfer GROUP BY phase "
                                              "ORDER BY min(send_begin_ns)")]
            with self.subTest(algo=algo, cmd="timeline"):
                rc, _, err = self.tool_in("timeline", db, "-o", self.out(f"algo-{algo}-timeline.png"))
                self.assertEqual(rc, 0, err)
                self.assert_image(self.out(f"algo-{algo}-timeline.png"))
                self.assertIn(f"{algo}) all-reduce" if algo in ("rd", "rhd") else f"{algo}",
                              self.png_title(self.out(f"algo-{algo}-timeline.png")))
                # (gloo-ring's and hier's names say ring; no title calls it the ring)
                self.assertNotIn("ring all-reduce" if algo in ("gloo-ring", "hier") else "ring",
                                 self.png_title(self.out(f"algo-{algo}-timeline.png")))
                svg = self.out(f"algo-{algo}-timeline.svg")
                rc, _, err = self.tool_in("timeline", db, *clock, "-o", svg)
                self.assertEqual(rc, 0, err)
                texts = [t for t, _, _ in self.svg_texts(svg)]
                with open(svg) as f:
                    fills = set(re.findall(r"fill: ?(#[0-9a-f]{6})", f.read()))
                for phase in phases:  # a legend entry and a colour each
                    name = phase.replace("_", "-")
                    self.assertIn(f"{name} (receive)", texts)
                    self.assertIn(f"{name} send", texts)
                    self.assertIn(colours[phase], fills, phase)
                # step labels (only those that fit are drawn) name the
                # trace's phases and steps, the first step among them
                labels = {t for t in texts if re.fullmatch(r"[A-Z]+\d+", t)}
                self.assertTrue(labels, texts)
                self.assertLessEqual(labels, {f"{abbrev[p]}{s}" for p, s in self.rows(
                    db, "SELECT DISTINCT phase, step FROM transfer")})
                first = self.rows(db, "SELECT phase, step FROM transfer ORDER BY send_begin_ns LIMIT 1")[0]
                self.assertIn(f"{abbrev[first[0]]}{first[1]}", labels)
                for phase in set(colours) - set(phases):
                    self.assertNotIn(f"{phase.replace('_', '-')} (receive)", texts)
            with self.subTest(algo=algo, cmd="links"):
                rc, out, err = self.tool_in("links", db, "-o", self.out(f"algo-{algo}-links.png"))
                self.assertEqual(rc, 0, err)
                self.assert_image(self.out(f"algo-{algo}-links.png"))
                table = {line.split()[0]: [int(x) for x in line.split()[1:4]] for line in out.splitlines()[1:]}
                expected = {f"{s}->{d}": [n, r, b] for s, d, n, r, b in self.rows(
                    db, "SELECT src, dst, count(*), count(recv_end_ns), sum(bytes) FROM transfer "
                    "GROUP BY src, dst")}
                self.assertEqual(table, expected)
            with self.subTest(algo=algo, cmd="export"):
                doc = self.export(db, *clock)
                self.assertEqual(doc["otherData"]["algo"], algo)
                events = doc["traceEvents"]
                steps = {e["name"] for e in events if e["ph"] == "X" and e.get("cat") == "step"}
                self.assertEqual(steps, {f"{abbrev[p]} step {s}" for p, s in self.rows(
                    db, "SELECT DISTINCT phase, step FROM transfer")})
                works = [e for e in events if e["ph"] == "X" and e.get("cat") in phases
                         and not e["name"].startswith(("send", "wait"))]
                self.assertEqual(len(works), self.rows(db, "SELECT count(recv_end_ns) FROM transfer")[0][0])
                for e in works:
                    self.assertEqual(e["name"].split()[0],
                                     "copy" if e["cat"] in ("all_gather", "broadcast") else "reduce", e)
                starts = {e["id"] for e in events if e["ph"] == "s"}
                self.assertEqual(starts, {e["id"] for e in events if e["ph"] == "f"})
                self.assert_nested(events)
                if size is hier:  # in node step s local rank l sends the sum of l-s .. l
                    sends = [dict(e["args"], src=e["tid"], contrib=e["args"]["contributors"])
                             for e in events if e["ph"] == "X" and e["name"].startswith("send")]
                    self.assert_node_contributors(sends, G, W, self.rows(
                        db, "SELECT count(*) FROM transfer WHERE phase = 'reduce_scatter' "
                        "AND step < ?", G - 1)[0][0])
            for cmd, ext in (("chunks", "png"), ("animate", "gif")):
                if cmd == "animate" and algo not in ("rd", "hier:rhd"):
                    continue
                with self.subTest(algo=algo, cmd=cmd):
                    out = self.out(f"algo-{algo}-{cmd}.{ext}")
                    rc, _, err = self.tool_in(cmd, db, "-o", out)
                    self.assertEqual(rc, 0, err)
                    if ext == "png":
                        self.assert_image(out)
                        self.assertIn(f"{ringsim_plot_name(algo)} all-reduce, {W} workers",
                                      self.png_title(out))
                    else:
                        from PIL import Image
                        with Image.open(out) as im:
                            self.assertGreater(im.n_frames, 2)
        # a simulated network: each transfer on its own link's track, named
        # for the link it used
        db = self.out("algo-rd-net.db")
        p = subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "mlp.json"), "-w", "5", "--algo", "rd",
                            "--net", "latency=5us,bandwidth=10GB/s", "--trace", db],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        rc, _, err = self.tool_in("timeline", db, "-o", self.out("algo-rd-net.png"))
        self.assertEqual(rc, 0, err)
        self.assert_image(self.out("algo-rd-net.png"))
        events = self.export(db)["traceEvents"]
        names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
        transfers = [e for e in events if e["ph"] == "X" and e.get("cat") in colours]
        self.assertEqual(len(transfers), self.rows(db, "SELECT count(*) FROM transfer")[0][0])
        for e in transfers:
            self.assertEqual(names[e["tid"]].split(" (")[0], f"link {e['args']['from']}->{e['args']['to']}")
        self.assertEqual({n.split(" (")[0] for n in names.values() if n.startswith("link")},
                         {f"link {s}->{d}" for s, d in self.rows(db, "SELECT DISTINCT src, dst FROM transfer")})
        self.assert_nested(events)
        # compare: a series per algorithm, named in the title
        rc, _, err = self.tool_in("compare", db_all, "-o", self.out("algos-compare.png"))
        self.assertEqual(rc, 0, err)
        self.assert_image(self.out("algos-compare.png"))
        self.assertIn("algorithms: gloo-ring, linear, rd, rhd, tree",
                      self.png_title(self.out("algos-compare.png")))

    @staticmethod
    def explain_tables(text, workers):
        """The contribution tables --explain prints after each step (not the
        values under them), each as rows[worker][column] of its labels."""
        tables, lines = [], text.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("           ") and i + 1 < len(lines) and \
                    lines[i + 1].startswith("  worker 0  "):
                rows = []
                for w in range(workers):
                    cells = lines[i + 1 + w].split()[2:]
                    rows.append(cells)
                tables.append(rows)
        return tables

    # tools-15b: NVLink SHARP's (nvls on one node, nvlstree on two): the
    # chunk diagram's stages are the run's steps in the order it runs them
    # (the switch's reduce, nvlstree's tree up and down, the multicast),
    # each holding what --explain's table holds at that step's end (its
    # rounds told one a table: the last of each; the reduce's G-1 copies
    # and the head's own), and every region complete at the end. What the
    # GPUs put into their switch (participant W + node) is not a GPU's.
    def test_chunks_nvls_steps_in_order(self):
        sys.path.insert(0, os.path.dirname(TOOL))
        import ringsim_plot
        model = self.out("eight.json")
        with open(model, "w") as f:
            json.dump({"name": "eight", "params": [{"name": "g", "shape": [8]}]}, f)
        links = "intra=1us/100GB/s,nic=5us/25GB/s,switch=nvls"
        for algo, N, G, phases in (
                ("nvls", 1, 4, ["reduce_scatter", "all_gather"]),
                ("nvlstree", 2, 2, ["reduce_scatter", "reduce", "broadcast", "all_gather"]),
                ("nvlstree", 2, 4, ["reduce_scatter", "reduce", "broadcast", "all_gather"])):
            db = self.out(f"{algo}-{N}x{G}.db")
            p = subprocess.run([RINGSIM, "-p", model, "--topo", f"nodes={N},gpus={G},{links}",
                                "--algo", algo, "--segment-bytes", "8", "--explain",
                                "--trace", db], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            W = N * G
            want = self.explain_tables(p.stdout[:p.stdout.index("\nringsim ")], W)
            con = ringsim_plot.open_trace(db)
            run = ringsim_plot.pick_run(con, db, None)
            stages, _ = ringsim_plot.chunk_stages(con, run)
            con.close()
            got = [[[ringsim_plot.replay.ring_ranges(h, W) for h in row] for row in st[1]]
                   for st in stages]
            with self.subTest(algo=algo, N=N, G=G):
                self.assertEqual([st[3]["phase"] for st in stages[1:]], phases)
                self.assertEqual(got[0], want[0])  # each its own
                self.assertEqual(got[1], want[G])  # the switch's last round
                self.assertEqual(got[-1], want[-1])
                self.assertTrue(all(h == "all" for row in got[-1] for h in row))

    # tools-15: the chunk diagram of every algorithm, replayed from the
    # trace (segments merged into messages; W = 2..8, W not a power of two
    # folding workers in; hier, hier:rd and hier:rhd on 1 to 4 nodes of 1 to
    # 4 GPUs, their within-node contributors wrapping round the node), holds
    # after each step exactly what --explain replays from the algorithm's
    # schedule functions, step for step; the last step shows every region
    # complete at every worker; above 8 workers (the ring: 16) it refuses
    # in one line.
    def test_chunks_every_algorithm_match_the_schedule(self):
        sys.path.insert(0, os.path.dirname(TOOL))
        import ringsim_plot
        model = self.out("eight.json")
        with open(model, "w") as f:
            json.dump({"name": "eight", "params": [{"name": "g", "shape": [8]}]}, f)
        db = self.out("every-algo.db")
        compared = 0
        runs = [(algo, W, ["-w", W])
                for algo in ("ring", "rd", "rhd", "linear", "tree", "gloo-ring") for W in range(2, 9)]
        runs += [(algo, N * G, ["--topo", f"nodes={N},gpus={G},intra=1us/100GB/s,nic=5us/25GB/s"])
                 for algo in ("hier", "hier:rd", "hier:rhd")
                 for N, G in ((1, 3), (3, 1), (2, 2), (2, 3), (3, 2), (2, 4), (4, 2))]
        for algo, W, options in runs:
            p = subprocess.run([RINGSIM, "-p", model, *map(str, options), "--algo", algo,
                                "--segment-bytes", "8", "--explain", "--trace", db],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            want = self.explain_tables(p.stdout[:p.stdout.index("\nringsim ")], W)
            # gloo-ring's last chunks may be empty (--explain lists them:
            # "chunk 4 empty"); no message cuts a region for them
            empty = {int(c) for c in re.findall(r"chunk (\d+) empty", p.stdout)}
            want = [[[h for k, h in enumerate(row) if k not in empty] for row in stage]
                    for stage in want]
            con = ringsim_plot.open_trace(db)
            run = ringsim_plot.pick_run(con, db, None)
            stages, regions = ringsim_plot.chunk_stages(con, run)
            con.close()
            # one notation: the picture's label is --explain's, character
            # for character
            got = [[[ringsim_plot.replay.ring_ranges(h, W) for h in row] for row in stage[1]]
                   for stage in stages]
            with self.subTest(algo=algo, W=W, options=options):
                self.assertEqual(len(got), len(want), [st[0] for st in stages])
                self.assertEqual(got, want)
                self.assertTrue(all(h == "all" for row in got[-1] for h in row))
                self.assertGreater(len(stages[1][2]), 0, "the first step has transfers")
                if regions is not None:
                    self.assertEqual(sum(n for _, _, n in regions), 8)
            compared += 1
        self.assertEqual(compared, 42 + 21)
        for algo, W, most in (("rd", 9, 8), ("tree", 9, 8), ("ring", 17, 16), ("hier:rd", 9, 8)):
            trace = self.out(f"big-{algo}.db")
            size = ["--topo", "nodes=3,gpus=3,intra=1us/100GB/s,nic=5us/25GB/s"] \
                if algo.startswith("hier") else ["-w", str(W)]
            p = subprocess.run([RINGSIM, "-p", model, *size, "--algo", algo, "--trace", trace],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            rc, _, err = self.tool_in("chunks", trace, "-o", self.out(f"big-{algo}.png"))
            self.assertEqual(rc, 2, err)
            self.assertEqual(err, f"ringsim-plot: run 1 has {W} workers; the chunk diagram draws "
                                  f"{'rings' if algo == 'ring' else algo + ' runs'} of at most {most}\n")

    # tools-16: compare --bench --model draws time against size per
    # algorithm, measured and predicted, and prints the crossovers: on real
    # output of ringsim bench --algo all and ringsim model --algo all, each
    # W's fastest algorithm per size and the sizes between which it changes
    # are those the JSON says (recomputed here), and the picture marks each.
    def test_compare_algorithms_crossovers(self):
        import re
        bench = self.out("bench.jsonl")
        with open(bench, "w") as f:
            p = subprocess.run([RINGSIM, "bench", "-w", "2,4", "--algo", "all", "-b", "8", "-e", "256K",
                                "-f", "8", "-n", "2", "--warmup", "1", "--json"], stdout=f,
                               stderr=subprocess.PIPE, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        sizes = [8 * 8 ** k for k in range(6)]
        model = self.out("model.json")
        with open(model, "w") as out:
            for W in (2, 4):
                for size in sizes:
                    m = self.out("size.json")
                    with open(m, "w") as f:
                        json.dump({"params": [{"name": "g", "shape": [size // 4]}]}, f)
                    p = subprocess.run([RINGSIM, "model", "-p", m, "-w", str(W), "--net",
                                        "latency=20us,bandwidth=2GB/s", "--algo", "all", "--json"],
                                       stdout=out, stderr=subprocess.PIPE, text=True)
                    self.assertEqual(p.returncode, 0, p.stderr)
        svg = self.out("algos.svg")
        rc, out, err = self.tool_in("compare", "--bench", bench, "--model", model, "-o", svg)
        self.assertEqual(rc, 0, err)
        # the same answer, computed here from the JSON
        with open(bench) as f:
            rows = [json.loads(line) for line in f]
        measured = {}
        for r in rows:
            measured.setdefault((r["workers"], r["size"]), []).append((r["time_us"], r["algo"]))
        with open(model) as f:
            text, objs, at = f.read(), [], 0
        decoder = json.JSONDecoder()
        while text[at:].strip():
            obj, at = decoder.raw_decode(text, at + len(text[at:]) - len(text[at:].lstrip()))
            objs.append(obj)
        self.assertEqual(len(objs), 12)
        predicted = {(o["workers"], o["bytes"]): [(a["sim_ns"], a["algo"]) for a in o["algos"]]
                     for o in objs}
        want_changes = 0
        for kind, table in (("measured", measured), ("predicted", predicted)):
            for W in (2, 4):
                fastest = [(s, min(table[W, s])[1]) for s in sizes]
                self.assertEqual(len(table[W, sizes[0]]), 6)  # every algorithm
                changes = [(a, b) for a, b in zip(fastest, fastest[1:]) if a[1] != b[1]]
                lines = [l for l in out.splitlines() if l.startswith(f"W={W} {kind}: crossover ")]
                self.assertEqual(lines, [
                    f"W={W} {kind}: crossover {a0} -> {a1} between "
                    f"{ringsim_plot_size(s0)} and {ringsim_plot_size(s1)}"
                    for (s0, a0), (s1, a1) in changes], out)
                if not changes:
                    self.assertIn(f"W={W} {kind}: no crossover, {fastest[0][1]} fastest", out)
                want_changes += len(changes)
        # one marker (a label on its line) per crossover, measured and predicted
        labels = [t for t, _, _ in self.svg_texts(svg) if re.fullmatch(r"[a-z-]+\u2192[a-z-]+", t)]
        self.assertEqual(len(labels), want_changes, labels)
        for t in ("ring measured", "rd predicted", "tree measured"):
            self.assertIn(t, [t for t, _, _ in self.svg_texts(svg)])
        # bad input: one line, exit 2
        broken = self.out("broken.jsonl")
        with open(broken, "w") as f:
            f.write('{"algo": "ring"}\n')
        for args, message in (
                (["--model", model], "compare --model needs --bench FILE"),
                ([self.db, "--bench", bench], "give a trace (with --runs) or --bench, not both"),
                (["--bench", broken], "object 1 is not a line of ringsim bench --json"),
                (["--bench", bench, "--model", bench], "object 1 is not the output of ringsim model"),
                (["--bench", self.out("nope.jsonl")], "cannot read"),
                ([], "compare: give a trace, or --bench FILE")):
            with self.subTest(args=args):
                rc, _, err = self.tool_in("compare", *args, "-o", self.out("x.png"))
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.strip().count("\n"), 0, err)
                self.assertIn(message, err)

    # tools-5: bad input: one line, exit 2, and the reason.
    def test_errors(self):
        text = self.out("notes.txt")
        with open(text, "w") as f:
            f.write("hello\n" * 100)
        other = self.out("other.db")
        con = sqlite3.connect(other)
        con.execute("CREATE TABLE t (x)")
        con.commit()
        con.close()
        auto = self.out("auto.db")
        p = subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "mlp.json"), "-w", "4",
                            "--algo", "auto", "--trace", auto], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        cases = [
            (["timeline", self.out("missing.db")], "missing.db: no such file"),
            (["timeline", text], "not a ringsim trace"),
            (["chunks", other], "not a ringsim trace"),
            (["links", self.db, "--run", 99], "no run 99"),
            (["timeline", self.db, "-o", self.out("x.bmp")], "unknown image type"),
            (["chunks", os.path.join(self.dir, "one.db")], "1 worker: there is no ring"),
            (["animate", self.db, "-o", self.out("x.avi")], "unknown animation type"),
            (["chunks", auto], "chose an algorithm per bucket (--algo auto)"),
            (["animate", auto, "-o", self.out("auto.gif")], "chose an algorithm per bucket"),
            (["compare", self.db, "--runs", "1,x"], "expected run ids"),
            (["export", self.db, "-o", "/nonexistent/t.json"], "cannot write"),
            (["links", self.db, "--run", 1, "--clock", "sim"], "run 1 has no simulated times"),
            (["animate", self.db, "--fps", "0", "-o", self.out("x.gif")], "--fps 0: expected"),
            (["animate", self.db, "--fps", "-1", "-o", self.out("x.gif")], "--fps -1: expected"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                rc, out, err = self.tool_in(*args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.strip().count("\n"), 0, err)
                self.assertIn(message, err)
        rc, out, _ = self.tool_in("--help")
        self.assertEqual(rc, 0)
        for cmd in ("timeline", "chunks", "links", "compare", "animate", "export", "html"):
            self.assertIn(cmd, out)

    @staticmethod
    def digest(path):
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    # tools-output-1: an output that is the input (the trace named t.png,
    # t.svg, t.gif, t.html or t.json; a symlink or a hard link to it) is
    # refused, exit 2, and the trace is left byte for byte; a symlink to
    # another file is written through, its target replaced whole.
    def test_output_never_the_input(self):
        before = self.digest(self.db)
        cases = []
        for cmd, ext in (("timeline", "png"), ("chunks", "svg"), ("animate", "gif"),
                         ("html", "html"), ("export", "json"), ("links", "pdf")):
            named = self.out(f"trace-as.{ext}")
            with open(self.db, "rb") as f, open(named, "wb") as g:
                g.write(f.read())
            cases.append((cmd, named, named))
            link = self.out(f"trace-link.{ext}")
            if not os.path.lexists(link):
                os.symlink(self.db, link)
            cases.append((cmd, self.db, link))
            hard = self.out(f"trace-hard.{ext}")
            if not os.path.exists(hard):
                os.link(self.db, hard)
            cases.append((cmd, self.db, hard))
        for cmd, trace, out in cases:
            with self.subTest(cmd=cmd, out=os.path.basename(out)):
                kept = self.digest(trace)
                rc, _, err = self.tool_in(cmd, trace, *(["--run", 2] if cmd != "html" else []),
                                          "-o", out)
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.strip().count("\n"), 0, err)
                self.assertIn("(the same file): refusing to write over it", err)
                self.assertEqual(self.digest(trace), kept)
        self.assertEqual(self.digest(self.db), before)
        # compare --bench FILE -o FILE: the same refusal
        bench = self.out("bench-as.png")
        with open(bench, "w") as f:
            f.write('{"workers": 2, "size": 8, "algo": "ring", "time_us": 1}\n')
        rc, _, err = self.tool_in("compare", "--bench", bench, "-o", bench)
        self.assertEqual(rc, 2, err)
        self.assertIn("is the input", err)
        # a symlink to another picture: the picture it names is replaced,
        # the link kept, with the old file's permissions
        target = self.out("pic-target.png")
        with open(target, "w") as f:
            f.write("old")
        os.chmod(target, 0o640)
        link = self.out("pic-link.png")
        if not os.path.lexists(link):
            os.symlink(target, link)
        rc, _, err = self.tool_in("timeline", self.db, "--run", 2, "-o", link)
        self.assertEqual(rc, 0, err)
        self.assertTrue(os.path.islink(link))
        self.assert_image(target)
        self.assertEqual(os.stat(target).st_mode & 0o777, 0o640)
        # a name as long as a directory entry allows: its new file's name,
        # beside it, is cut to fit
        longest = self.out("l" * 251 + ".png")
        rc, _, err = self.tool_in("timeline", self.db, "--run", 2, "-o", longest)
        self.assertEqual(rc, 0, err)
        self.assert_image(longest)

    # tools-output-2: on a full disk (a 2 MiB tmpfs, filled) every command
    # fails in one line, exit 2, and leaves the earlier picture, page or
    # export at its path whole, a new output absent, no temporary file
    # behind; the same through a symlink to /dev/full.
    def test_full_disk_keeps_earlier_files(self):
        disk = tempfile.mkdtemp(dir=self.dir)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", disk],
                           capture_output=True, text=True)
        if p.returncode != 0:
            self.skipTest(f"cannot mount a tmpfs (tests run as root): {p.stderr.strip()}")
        self.addCleanup(subprocess.run, ["umount", "-l", disk], capture_output=True)
        earlier = {}
        for cmd, name in (("timeline", "t.png"), ("chunks", "c.svg"), ("export", "e.json"),
                          ("html", "p.html"), ("animate", "a.gif")):
            path = os.path.join(disk, name)
            rc, _, err = self.tool_in(cmd, self.db, *(["--run", 2] if cmd != "html" else []),
                                      "-o", path)
            self.assertEqual(rc, 0, err)
            earlier[path] = (cmd, self.digest(path))
        with open(os.path.join(disk, "fill"), "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        news = [("timeline", "new.png"), ("chunks", "new.pdf"), ("export", "new.json"),
                ("html", "new.html"), ("animate", "new.gif")]
        for path, (cmd, digest) in list(earlier.items()) + [
                (os.path.join(disk, n), (c, None)) for c, n in news]:
            with self.subTest(cmd=cmd, out=os.path.basename(path)):
                rc, _, err = self.tool_in(cmd, self.db, *(["--run", 2] if cmd != "html" else []),
                                          "-o", path)
                self.assertEqual(rc, 2, err)
                errors = [l for l in err.splitlines() if "cannot write" in l]
                self.assertEqual(errors, [f"ringsim-plot: {path}: cannot write: No space left on device"],
                                 err)
                self.assertNotIn("Traceback", err)
                if digest:
                    self.assertEqual(self.digest(path), digest, "the earlier file was damaged")
                else:
                    self.assertFalse(os.path.exists(path), "a new output left behind")
        self.assertEqual(sorted(os.listdir(disk)), sorted(["fill"] + [os.path.basename(p) for p in earlier]))
        full = self.out("full.json")
        if not os.path.lexists(full):
            os.symlink("/dev/full", full)
        rc, _, err = self.tool_in("export", self.db, "--run", 2, "-o", full)
        self.assertEqual(rc, 2, err)
        self.assertIn(f"{full}: cannot write: No space left on device", err)

    # tools-names: control characters in a trace's texts (the model's name,
    # the error) and in a file name print as '?', as ringsim prints them:
    # nothing raw reaches the terminal (nor matplotlib's missing-glyph
    # warning), the SVG parses as XML and holds the hostile name as text,
    # the export's JSON loads and holds it '?'-replaced, as the page's data.
    def test_control_characters_print_as_question_marks(self):
        db = self.out("names.db")
        with open(self.failed, "rb") as f, open(db, "wb") as g:
            g.write(f.read())
        name = "m\x1b[31m<!--<script>alert(1)</script>\"&'\x07\x9b"
        shown = "m?[31m<!--<script>alert(1)</script>\"&'??"
        con = sqlite3.connect(db)
        con.execute("UPDATE run SET model = ?, error = 'bad \x1b]0;x\x07 end'", (name,))
        con.commit()
        con.close()
        raw = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")
        for cmd, out in (("timeline", "names.svg"), ("timeline", "names.png"), ("chunks", "names-c.svg"),
                         ("export", "names.json")):
            with self.subTest(cmd=cmd, out=out):
                rc, stdout, err = self.tool(cmd, db, "-o", self.out(out))
                self.assertEqual(rc, 0, err)
                self.assertIsNone(raw.search(err + stdout), repr(err))
                self.assertNotIn("Glyph", err)
        import xml.etree.ElementTree as ET
        ET.parse(self.out("names-c.svg"))
        texts = " ".join(t for t, _, _ in self.svg_texts(self.out("names.svg")))
        self.assertIn(shown, texts)
        self.assertIn("bad ?]0;x? end", texts)
        with open(self.out("names.svg"), encoding="utf-8") as f:
            self.assertIsNone(raw.search(f.read()))
        self.assertIn(shown, self.png_title(self.out("names.png")))
        with open(self.out("names.json")) as f:
            doc = json.load(f)
        self.assertEqual(doc["otherData"]["model"], shown)
        self.assertEqual(doc["otherData"]["error"], "bad ?]0;x? end")
        self.assertIn(shown, [e for e in doc["traceEvents"] if e["name"] == "process_name"][0]["args"]["name"])
        rc, _, err = self.tool_in("html", db, "-o", self.out("names.html"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.page_data(self.out("names.html"))[1]["runs"][0]["model"], shown)
        # a file name: the error line names it with '?'
        rc, _, err = self.tool("timeline", self.out("no\x1b[2Jsuch.db"))
        self.assertEqual(rc, 2, err)
        self.assertIn("no?[2Jsuch.db: no such file", err)
        self.assertIsNone(raw.search(err), repr(err))
        # tools/torch_check.py names tensors the same way: a result whose
        # names differ from the reference's, and a tensor of a dtype it
        # cannot read, each refused in one '?'-replaced line, exit 2
        sys.path.insert(0, os.path.dirname(TOOL))
        import ringsim_st
        st = self.out("st")
        os.makedirs(st, exist_ok=True)
        for f in ("worker0", "worker1", "reference"):
            ringsim_st.write(os.path.join(st, f"{f}.safetensors"), {"w": [1.0, 2.0]})
        ringsim_st.write(os.path.join(st, "result.safetensors"), {"w\x1b[2J\x9b": [1.0, 2.0]})
        header = json.dumps({"i\x1b]0;x\x07": {"dtype": "I64", "shape": [1],
                                                "data_offsets": [0, 8]}}).encode()
        with open(os.path.join(st, "i64.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + bytes(8))
        with open(os.path.join(st, "short.safetensors"), "wb") as f:
            f.write(b"abc")  # shorter than the header's length
        with open(os.path.join(st, "long.safetensors"), "wb") as f:
            f.write(b"\xff" * 16)  # a header longer than the file
        for result, shown_name in (("result", "['w?[2J?'] differ from the reference's ['w']"),
                                   ("i64", "tensor i?]0;x? is I64"),
                                   ("short", "not a safetensors file (3 bytes"),
                                   ("long", "not a safetensors file (a header of "
                                            "18446744073709551615 bytes in 16)")):
            with self.subTest(torch_check=result):
                p = subprocess.run([sys.executable, os.path.join(os.path.dirname(TOOL), "torch_check.py"),
                                    "--dir", st, "--workers", "2", "--result",
                                    os.path.join(st, f"{result}.safetensors")],
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(shown_name, p.stderr)
                self.assertIsNone(raw.search(p.stderr + p.stdout), repr(p.stderr))
                self.assertEqual(len(p.stderr.splitlines()), 1, p.stderr)

    # tools-consistent: a trace whose run row disagrees with its own rows
    # (workers against the worker table, counts against the transfers, a
    # transfer's worker, chunk or contributors out of range, a value of the
    # wrong type) is refused by every command in one line, exit 2, before
    # any drawing: workers=1000000000 once had export write 900 MB.
    def test_inconsistent_trace_refused(self):
        edits = [
            ("UPDATE run SET workers = 1000000000", "workers is 1000000000, not 1..4096"),
            ("UPDATE run SET workers = 'x'", "workers is 'x', not a count"),
            ("UPDATE run SET workers = 5", "workers is 5 but the worker table has 4 rows"),
            ("UPDATE run SET workers = 3", "workers is 3 but the worker table has 4 rows"),
            ("UPDATE run SET transfers = 7", "transfers is 7 but its workers sent"),
            ("UPDATE worker SET transfers_sent = transfers_sent + (worker = 1) * 3 - (worker = 0) * 3",
             "worker 0 sent"),
            ("UPDATE transfer SET src = 9 WHERE rowid = 3", "a transfer's src is 9"),
            ("UPDATE transfer SET contrib_count = 1000000000 WHERE rowid = 3",
             "a transfer's contrib_count is 1000000000"),
            ("UPDATE transfer SET chunk = 'x' WHERE rowid = 3",
             "its transfer rows hold values of the wrong type in chunk"),
            ("UPDATE transfer SET recv_end_ns = 1.5 WHERE rowid = 3",
             "its transfer rows hold values of the wrong type in recv_end_ns"),
            ("UPDATE transfer SET phase = X'41' WHERE rowid = 3",
             "its transfer rows hold values of the wrong type in phase"),
            ("UPDATE run SET buckets = -1", "buckets is -1, not a count"),
        ]
        for k, (sql, message) in enumerate(edits):
            db = self.out(f"edited-{k}.db")
            with open(self.failed, "rb") as f, open(db, "wb") as g:
                g.write(f.read())
            con = sqlite3.connect(db)
            con.execute(sql)
            con.commit()
            con.close()
            for cmd, ext in (("timeline", "png"), ("chunks", "png"), ("links", "png"),
                             ("animate", "gif"), ("export", "json"), ("html", "html"),
                             ("compare", "png")):
                with self.subTest(sql=sql, cmd=cmd):
                    out = self.out(f"edited-{k}-{cmd}.{ext}")
                    args = [cmd, db, "-o", out] + (["--runs", "1"] if cmd == "compare" else [])
                    rc, _, err = self.tool_in(*args)
                    self.assertEqual(rc, 2, err)
                    self.assertEqual(err.strip().count("\n"), 0, err)
                    self.assertIn(f"{db}: run 1 is inconsistent: {message}", err)
                    self.assertFalse(os.path.exists(out))
        # text that is not UTF-8 (sqlite3 cannot decode it): one line too
        db = self.out("edited-utf8.db")
        with open(self.failed, "rb") as f, open(db, "wb") as g:
            g.write(f.read())
        con = sqlite3.connect(db)
        con.execute("UPDATE run SET model = CAST(X'6DFF1B41' AS TEXT)")
        con.commit()
        con.close()
        rc, _, err = self.tool_in("timeline", db, "-o", self.out("edited-utf8.png"))
        self.assertEqual(rc, 2, err)
        self.assertEqual(err.strip().count("\n"), 0, err)
        self.assertIn(f"{db}: cannot read the trace: Could not decode to UTF-8 column 'model'", err)
        self.assertNotIn("\x1b", err)

    # tools-titles: a figure's title stays on its canvas: the failed run's
    # chunk diagram (its FAILED line wrapped, not cut at "orker 2
    # crashed"), the timeline's, and W=2's narrow chunk diagram.
    def test_titles_fit_their_figures(self):
        for args in (["chunks", self.failed], ["timeline", self.failed],
                     ["chunks", self.db, "--run", 3]):
            with self.subTest(args=args):
                fig, title = self.figure_of(*args, "-o", self.out("title-fit.png"))
                renderer = fig.canvas.get_renderer()
                text = fig._suptitle if fig._suptitle is not None else fig.axes[0].title
                box = text.get_window_extent(renderer)
                self.assertTrue(title, "a title")
                if args[0] == "timeline":  # the tight bounding box fits the figure round it
                    box = fig.get_tightbbox(renderer)  # inches
                    self.assertLessEqual(box.width, fig.get_figwidth() * 1.15, (box, title))
                    continue
                self.assertGreaterEqual(box.x0, 0, (box, title))
                self.assertLessEqual(box.x1, fig.bbox.x1, (box, title))
                self.assertLessEqual(box.y1, fig.bbox.y1, (box, title))
                self.assertIn("FAILED" if args[1] == self.failed else "run 3", text.get_text())

    def timeline_bars(self, ax):
        """Each bar of a timeline's axes: (x0, x1) in display pixels."""
        from matplotlib.collections import PolyCollection
        bars = []
        for coll in ax.collections:
            if isinstance(coll, PolyCollection):
                for path in coll.get_paths():
                    xs = ax.transData.transform(path.vertices)[:, 0]
                    bars.append((xs.min(), xs.max()))
        return bars

    # tools-timeline-truth: every bar of a wall-clock timeline is at least
    # 1.5 pixels wide (21 us receives on a 100 ms axis were invisible);
    # every step is labelled, or named as left out; and a worker that timed
    # out is drawn where it did, its --timeout after its last transfer, not
    # after its last transfer.
    def test_timeline_bars_labels_and_timeouts(self):
        fig, _ = self.figure_of("timeline", self.failed, "-o", self.out("truth.png"))
        ax = fig.axes[0]
        bars = self.timeline_bars(ax)
        self.assertGreater(len(bars), 10)
        narrow = min(x1 - x0 for x0, x1 in bars)
        self.assertGreaterEqual(narrow, 1.5, "a bar too narrow to see")
        # the worker that timed out (3, or another that noticed first) did
        # so 0.3 s into its wait, begun after its last transfer; the
        # export's instant where it stopped is the same moment
        timed_out = [r[0] for r in self.rows(self.failed, "SELECT worker FROM worker "
                                             "WHERE state = 'timed_out' ORDER BY worker")]
        self.assertTrue(timed_out)
        wall = self.rows(self.failed, "SELECT wall_ns FROM run")[0][0]
        where = sorted((t for t in ax.texts if "timed out" in t.get_text()),
                       key=lambda t: t.get_position()[1])  # by row: worker
        self.assertEqual(len(where), len(timed_out), [t.get_text() for t in ax.texts])
        doc = self.export(self.failed)
        stopped = sorted((e for e in doc["traceEvents"] if e["name"] == "stopped: timed_out"),
                         key=lambda e: e["tid"])
        self.assertEqual([e["tid"] for e in stopped], timed_out)
        for w, text, instant in zip(timed_out, where, stopped):
            last = self.rows(self.failed, "SELECT max(max(CASE WHEN src = ? THEN send_end_ns END), "
                             "max(CASE WHEN dst = ? THEN recv_end_ns END)) FROM transfer", w, w)[0][0]
            x_ms = text.get_position()[0]  # the axis is in ms
            self.assertGreaterEqual(x_ms * 1e6, min(last + 0.3e9, wall) - 1e6, (x_ms, last, wall))
            self.assertLessEqual(x_ms * 1e6, wall + 1e6)
            self.assertIn("timed out at", text.get_text())
            self.assertAlmostEqual(instant["ts"] / 1e3, x_ms, places=3)
        failed = [e for e in doc["traceEvents"] if e["name"] == "run failed"][0]
        self.assertGreaterEqual(failed["ts"], max(e["ts"] for e in stopped))
        # every step label drawn (W=4, 6 steps)
        steps = {f"{'RS' if p == 'reduce_scatter' else 'AG'}{s}" for p, s in self.rows(
            self.failed, "SELECT DISTINCT phase, step FROM transfer")}
        drawn = {t.get_text() for t in ax.texts}
        self.assertLessEqual(steps, drawn)
        for rid in (1, 4):
            fig, _ = self.figure_of("timeline", self.db, "--run", rid, "-o", self.out("truth.png"))
            ax = fig.axes[0]
            self.assertGreaterEqual(min(x1 - x0 for x0, x1 in self.timeline_bars(ax)), 1.5)
            self.assertLessEqual({f"{p}{s}" for p in ("RS", "AG") for s in range(3)},
                                 {t.get_text() for t in ax.texts})

    def page_data(self, path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        start = text.index('<script type="application/json" id="ringsim-data">')
        body = text[text.index(">", start) + 1:text.index("</script>", start)]
        return text, json.loads(body)

    def assert_node_contributors(self, messages, G, W, how_many):
        """hier's reduce-scatter within a node (its steps 0 .. G-2) as the
        page's messages or the export's sends have it: in step s local rank
        l sends the sum of l-s .. l of its node (contrib: the page's label,
        or the export's list); how_many such messages."""
        node_rs = [m for m in messages if m["phase"] == "reduce_scatter" and m["step"] < G - 1]
        self.assertEqual(len(node_rs), how_many)
        for m in node_rs:
            r, got = m["src"], m["contrib"]
            self.assertEqual(held(got, W) if isinstance(got, str) else set(got),
                             {r // G * G + (r - k) % G for k in range(m["step"] + 1)}, m)

    # tools-html: `html` writes one page holding its data (the runs asked
    # for, the chunk view's messages and bytes as the transfer table has
    # them, each bucket of an auto run in the algorithm it ran) and loading
    # nothing; its bad inputs are one line, exit 2. (The page in a browser:
    # tests/test_viewer.py.)
    def test_html_page(self):
        rc, _, err = self.tool_in("html", self.db, "-o", self.out("all.html"))
        self.assertEqual(rc, 0, err)
        text, data = self.page_data(self.out("all.html"))
        con = sqlite3.connect(self.db)
        ids = [r[0] for r in con.execute("SELECT run_id FROM run ORDER BY run_id")]
        self.assertEqual([r["id"] for r in data["runs"]], ids)
        self.assertEqual(data["open"], [len(ids) - 1])
        self.assertNotRegex(text, r"(?i)(src|href)\s*=\s*[\"']?\s*(https?:|//)")
        self.assertNotRegex(text, r"(?i)@import|fetch\(|XMLHttpRequest|<link[^>]*stylesheet")
        for run in data["runs"]:
            rid = run["id"]
            with self.subTest(run=rid):
                view = run["chunks"][0]
                segment0, nbytes = con.execute(
                    "SELECT count(*) FILTER (WHERE segment = 0), sum(bytes) FROM transfer "
                    "WHERE run_id = ? AND bucket = ?", (rid, view["bucket"])).fetchone()
                self.assertEqual(len(view["messages"]), segment0)
                self.assertEqual(sum(m["bytes"] for m in view["messages"]), nbytes)
                self.assertEqual(len(view["stages"]), 2 * (run["workers"] - 1) + 1)
        self.assertIn("sim", data["runs"][4]["clocks"])
        self.assertNotIn("sim", data["runs"][0]["clocks"])
        rc, _, err = self.tool_in("html", self.db, "--run", 2, "--run", 1, "-o", self.out("two.html"))
        self.assertEqual(rc, 0, err)
        _, data = self.page_data(self.out("two.html"))
        self.assertEqual([r["id"] for r in data["runs"]], [2, 1])
        self.assertEqual(data["open"], [0, 1])
        con.close()
        # an auto run: each bucket in the algorithm it ran
        auto = self.out("auto-html.db")
        p = subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "mlp.json"), "-w", "4",
                            "--algo", "auto", "--trace", auto], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        rc, _, err = self.tool_in("html", auto, "-o", self.out("auto.html"))
        self.assertEqual(rc, 0, err)
        _, data = self.page_data(self.out("auto.html"))
        con = sqlite3.connect(auto)
        ran = dict(con.execute("SELECT bucket, algo FROM bucket_algo"))
        con.close()
        self.assertEqual({v["bucket"]: v["algo"] for v in data["runs"][0]["chunks"]}, ran)
        # hier on 2 nodes of 3: the node's reduce-scatter, the ring across
        # the nodes, the node's all-gather, and the contributors of each
        # message within a node round the node (local ranks l-s .. l in
        # step s), as the trace's messages
        hier = self.out("hier-html.db")
        p = subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "mlp.json"), "--topo",
                            "nodes=2,gpus=3,intra=1us/100GB/s,nic=5us/25GB/s", "--algo", "hier",
                            "--trace", hier], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        rc, _, err = self.tool_in("html", hier, "-o", self.out("hier.html"))
        self.assertEqual(rc, 0, err)
        view = self.page_data(self.out("hier.html"))[1]["runs"][0]["chunks"][0]
        self.assertEqual([r["label"] for r in view["rows"]], [f"chunk {k}" for k in range(6)])
        self.assertEqual(len(view["stages"]), 1 + 2 * 2 + 2)  # start, 2(G-1) within, 2(N-1) across
        segment0, nbytes = self.rows(hier, "SELECT count(*) FILTER (WHERE segment = 0), sum(bytes) "
                                           "FROM transfer WHERE bucket = ?", view["bucket"])[0]
        self.assertEqual(len(view["messages"]), segment0)
        self.assertEqual(sum(m["bytes"] for m in view["messages"]), nbytes)
        self.assert_node_contributors(view["messages"], 3, 6, 2 * 6)
        # --algo auto on a topology whose NICs are slow picks hier (a
        # bucket_algo row), whose contributors read the same, in the page
        # and in the export
        auto = self.out("auto-topo.db")
        p = subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "model.json"), "--topo",
                            "nodes=2,gpus=3,intra=1us/100GB/s,nic=5us/1GB/s", "--algo", "auto",
                            "--trace", auto], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(self.rows(auto, "SELECT algo FROM bucket_algo")[0][0].startswith("hier"))
        rc, _, err = self.tool_in("html", auto, "-o", self.out("auto-topo.html"))
        self.assertEqual(rc, 0, err)
        view = self.page_data(self.out("auto-topo.html"))[1]["runs"][0]["chunks"][0]
        self.assert_node_contributors(view["messages"], 3, 6, 2 * 6)
        sends = [dict(e["args"], src=e["tid"], contrib=e["args"]["contributors"])
                 for e in self.export(auto, "--clock", "wall")["traceEvents"]
                 if e["ph"] == "X" and e["name"].startswith("send")]
        self.assert_node_contributors(sends, 3, 6, self.rows(
            auto, "SELECT count(*) FROM transfer WHERE phase = 'reduce_scatter' "
            "AND step < 2")[0][0])
        # one worker: a page that says there is nothing to step through
        rc, _, err = self.tool_in("html", os.path.join(self.dir, "one.db"), "-o", self.out("one.html"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.page_data(self.out("one.html"))[1]["runs"][0]["chunk_note"],
                         "run 1 has no transfers (W = 1)")
        for args, message in [
                (["html", self.db, "-o", self.out("x.png")], "unknown page type '.png'"),
                (["html", self.db, "--run", 1, 99], "no run 99"),
                (["html", self.db, "-o", "/nonexistent/x.html"], "cannot write")]:
            with self.subTest(args=args):
                rc, _, err = self.tool_in(*args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.strip().count("\n"), 0, err)
                self.assertIn(message, err)


    # tools-step: `ringsim-plot step` draws a step from `ringsim step
    # --json`: two lanes per worker, a bar per bucket's all-reduce on each
    # worker's communication lane, the exposed part (after the last
    # gradient) hatched; with a sweep also the step time against the cap,
    # the best marked. What is not such a report is refused in one line.
    def test_step(self):
        model = os.path.join(EXAMPLES, "step_three.json")
        report = self.out("step.json")
        for caps in ("1", "1,2,25"):
            with self.subTest(caps=caps):
                p = subprocess.run([RINGSIM, "step", "-p", model, "-w", "2", "--net",
                                    "latency=1us,bandwidth=1GB/s", "--segment-bytes", "1M",
                                    "--bucket-mb", caps, "--json"],
                                   capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(report, "w") as f:
                    f.write(p.stdout)
                doc = json.loads(p.stdout)
                fig, title = self.figure_of("step", report, "-o", self.out("step.png"))
                self.assertIn("1.051 ms exposed", title)
                self.assertIn("2 workers, ring, hook none, cap 1 MiB", title)
                # the two workers' lanes are the same: one lane for both,
                # forward, backward, and each bucket's bar: its part before
                # the last gradient plain, after it hatched, each labelled
                later = [r for r in doc["rows"] if r["best"]][0]["later"]
                self.assertEqual(later["workers"][0], later["workers"][1])
                last = later["forward_ns"] + later["backward_ns"]
                spans = later["workers"][0]["allreduce"]
                self.assertEqual(len(spans), len(later["buckets"]))
                bars = fig.axes[0].collections
                hatched = [c for c in bars if c.get_hatch()]
                self.assertEqual(len(hatched), sum(e > last for _, e in spans))
                self.assertEqual(len(bars) - len(hatched),
                                 2 + sum(min(e, max(s, last)) > s for s, e in spans))
                self.assertEqual([t.get_text() for t in fig.axes[0].get_yticklabels()],
                                 ["every worker (w0-w1 alike) comm",
                                  "every worker (w0-w1 alike) compute"])
                self.assertEqual([t.get_text() for t in fig.axes[0].texts
                                  if t.get_text().startswith("b")],
                                 [f"b{b}" for b in range(len(spans))])
                self.assertGreater(len(hatched), 0)
                self.assertEqual(len(fig.axes), 2 if "," in caps else 1)
                if "," in caps:
                    best = [r["cap_bytes"] >> 20 for r in doc["rows"] if r["best"]]
                    stars = [l for l in fig.axes[1].lines if l.get_marker() == "*"]
                    self.assertEqual([l.get_xdata()[0] for l in stars], best)
        # a straggler: the workers differ, each drawn; --compare: a second
        # report (fp16 here) below, on the same time axis, its hook named
        slow, fp16 = self.out("slow.json"), self.out("fp16.json")
        for path, extra in ((slow, ["--straggler", "worker=1,compute=1.5"]),
                            (fp16, ["--hook", "fp16"])):
            p = subprocess.run([RINGSIM, "step", "-p", model, "-w", "2", "--net",
                                "latency=1us,bandwidth=1GB/s", "--segment-bytes", "1M",
                                "--bucket-mb", "1", "--json", *extra],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(path, "w") as f:
                f.write(p.stdout)
        fig, title = self.figure_of("step", slow, "-o", self.out("slow.png"))
        self.assertEqual([t.get_text() for t in fig.axes[0].get_yticklabels()],
                         ["w0 comm", "w0 compute", "w1 comm", "w1 compute"])
        fig, title = self.figure_of("step", fp16, "--compare", slow, "-o", self.out("both.png"))
        self.assertEqual(len(fig.axes), 2)
        self.assertIn("hook fp16, cap 1 MiB", fig.axes[0].get_title())
        self.assertIn("hook none, cap 1 MiB", fig.axes[1].get_title())
        self.assertEqual(fig.axes[0].get_xlim(), fig.axes[1].get_xlim())
        with open(slow) as f:
            slow_ns = json.load(f)["rows"][0]["later"]["step_ns"]
        self.assertGreaterEqual(fig.axes[0].get_xlim()[1], slow_ns / 1e6)
        with open(self.out("not-step.json"), "w") as f:
            json.dump({"model": "m"}, f)
        rc, out, err = self.tool("step", self.out("not-step.json"), "-o", self.out("x.png"))
        self.assertEqual(rc, 2)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("not `ringsim step --json` output", err)


    # tools-sweep: `ringsim-plot sweep` draws `ringsim model --workers LIST
    # --algo all --json`: a line per algorithm through its simulated time
    # at each W, a star on the fastest at each W, and prints each W's
    # fastest and the crossovers, as the report says them. On a topology
    # too (nodes=LIST). What is not such a report is refused in one line.
    def test_sweep(self):
        report = self.out("sweep.json")
        for args in (["--workers", "2,4,8,16,32", "--params",
                      os.path.join(EXAMPLES, "model.json"), "--net",
                      "latency=5us,bandwidth=25GB/s"],
                     ["--topo", "dgx-h100,nodes=1,2,4", "--params",
                      os.path.join(EXAMPLES, "bucket_1mib.json")]):
            with self.subTest(args=args[0]):
                p = subprocess.run([RINGSIM, "model", *args, "--algo", "all", "--json"],
                                   capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                with open(report, "w") as f:
                    f.write(p.stdout)
                rows = json.loads(p.stdout)["rows"]
                fig, title = self.figure_of("sweep", report, "-o", self.out("sweep.png"))
                self.assertIn("all-reduce time against W", title)
                ax = fig.axes[0]
                # (a row leaves out what cannot run on its nodes: nvls
                # beyond one node, a line through the rows that have it)
                algos = list(dict.fromkeys(a for r in rows for a in r["algos"]))
                self.assertEqual("nvls" in algos, args[0] == "--topo")
                lines = {l.get_label(): l for l in ax.lines}
                self.assertEqual(sorted(lines), sorted(algos + ["fastest"]))
                for a in algos:
                    self.assertEqual(list(lines[a].get_ydata()),
                                     [r["algos"][a]["sim_ns"] / 1e3 for r in rows
                                      if a in r["algos"]])
                self.assertEqual(list(lines["fastest"].get_xdata()),
                                 [r["workers"] for r in rows])
                self.assertEqual(list(lines["fastest"].get_ydata()),
                                 [r["algos"][r["fastest"]]["sim_ns"] / 1e3 for r in rows])
                rc, out, err = self.tool_in("sweep", report, "-o", self.out("sweep.png"))
                self.assertEqual(rc, 0, err)
                for r in rows:
                    self.assertIn(f"W={r['workers']}: fastest {r['fastest']} ", out)
                for r0, r1 in zip(rows, rows[1:]):
                    said = (f"crossover {r0['fastest']} -> {r1['fastest']} between "
                            f"W={r0['workers']} and W={r1['workers']}")
                    self.assertEqual(said in out, r0["fastest"] != r1["fastest"], out)
        with open(self.out("not-model.json"), "w") as f:
            json.dump({"rows": [{"workers": 2}]}, f)
        rc, out, err = self.tool("sweep", self.out("not-model.json"), "-o", self.out("x.png"))
        self.assertEqual(rc, 2)
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("not `ringsim model --json` output", err)


def held(label, W):
    """A chunk view's contributors ('all', '{3}', '{0-2}', '{5-1}', '{0,2-4}',
    '{}') as a set."""
    if label == "all":
        return set(range(W))
    out = set()
    for part in filter(None, label.strip("{}").split(",")):
        a, _, b = part.partition("-")
        out |= {(int(a) + k) % W for k in range(((int(b) - int(a)) % W if b else 0) + 1)}
    return out


def ringsim_plot_size(size):
    """Sizes as ringsim bench writes them: 8 B, 4 KiB, 64 MiB."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,} B"


def ringsim_plot_name(algo):
    return {"rd": "recursive-doubling (rd)", "rhd": "Rabenseifner (rhd)",
            "linear": "linear", "tree": "double-binary-tree",
            "gloo-ring": "gloo's ring (gloo-ring)",
            "hier": "hierarchical (hier, the ring across nodes)",
            "hier:rd": "hierarchical (hier:rd, recursive doubling across nodes)",
            "hier:rhd": "hierarchical (hier:rhd, Rabenseifner across nodes)"}[algo]


def main():
    global TOOL
    cases = helpers.parse(globals(), "RINGSIM", "EXAMPLES", "TOOLS")
    TOOL = os.path.join(TOOLS, "ringsim_plot.py")
    helpers.run_tests(cases)


if __name__ == "__main__":
    main()
