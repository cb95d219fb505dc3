#!/usr/bin/python3
"""Tests of tools/ringsim_plot.py on real traces made by ringsim here.

    test_tools.py RINGSIM EXAMPLES_DIR TOOLS_DIR [Tools.test_name ...]
"""
import json
import re
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile
import unittest

RINGSIM = EXAMPLES = TOOL = None


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
                rc, _, err = self.tool(cmd, self.db, "--run", 1, "-o", self.out(f"{cmd}.png"))
                self.assertEqual(rc, 0, err)
                self.assert_image(self.out(f"{cmd}.png"))
        # run 5 has simulated times: the timeline draws those
        rc, _, err = self.tool("timeline", self.db, "--run", 5, "-o", self.out("sim.png"))
        self.assertEqual(rc, 0, err)
        self.assert_image(self.out("sim.png"))
        rc, _, err = self.tool("compare", self.db, "-o", self.out("compare.png"))
        self.assertEqual(rc, 0, err)
        self.assert_image(self.out("compare.png"))
        rc, _, err = self.tool("timeline", self.db, "-o", self.out("t.svg"))
        self.assertEqual(rc, 0, err)
        with open(self.out("t.svg")) as f:
            self.assertIn("<svg", f.read(2000))
        rc, _, err = self.tool("chunks", self.db, "-o", self.out("c.pdf"))
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
        rc, _, err = self.tool("export", self.db, "--run", 1, "-o", self.out("trace.json"))
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
        rc, _, err = self.tool("animate", self.db, "--run", 2, "-o", self.out("ring.gif"))
        self.assertEqual(rc, 0, err)
        from PIL import Image
        with Image.open(self.out("ring.gif")) as im:
            self.assertEqual(im.format, "GIF")
            self.assertEqual(im.n_frames, 2 * (3 - 1) + 1)

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
        rc, _, err = self.tool("export", db, *args, "-o", out)
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
        rc, out, err = self.tool("links", self.failed, "-o", self.out("links-failed.png"))
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
        rc, out, err = self.tool("links", self.slow, "-o", self.out("links-slow.svg"))
        self.assertEqual(rc, 0, err)
        self.assertIn("simulated", out.splitlines()[0])
        rates = {line.split()[0]: float(line.split()[-1]) for line in out.splitlines()[1:]}
        self.assertEqual(min(rates, key=rates.get), "2->3", rates)
        # bytes over the simulated time in flight: 1 GB/s with 5 us of latency
        nbytes, ns = self.rows(self.slow, "SELECT sum(bytes), sum(sim_recv_ns - sim_send_ns) "
                               "FROM transfer WHERE src = 2")[0]
        self.assertAlmostEqual(rates["2->3"], nbytes / ns, places=3)
        self.assertTrue(any("simulated time" in t for t, _, _ in self.svg_texts(self.out("links-slow.svg"))))
        rc, out, err = self.tool("links", self.slow, "--clock", "wall", "-o", self.out("links-wall.png"))
        self.assertEqual(rc, 0, err)
        self.assertIn("wall", out.splitlines()[0])

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

    # tools-10: the chunk diagram at W=16: a bounded image, labels as ring
    # ranges (never cut-off lists), owners and the mean marked.
    def test_chunks_at_sixteen_workers(self):
        db = self.out("w16.db")
        model = self.out("w16.json")
        with open(model, "w") as f:
            json.dump({"name": "w16", "params": [{"name": "g", "shape": [160]}]}, f)
        p = subprocess.run([RINGSIM, "-w", "16", "-p", model, "--trace", db], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        rc, _, err = self.tool("chunks", db, "-o", self.out("chunks16.png"))
        self.assertEqual(rc, 0, err)
        w, h = png_size(self.out("chunks16.png"))
        self.assertLessEqual(max(w, h), 3200, (w, h))
        self.assertGreaterEqual(min(w, h), 1500, (w, h))
        rc, _, err = self.tool("chunks", db, "-o", self.out("chunks16.svg"))
        self.assertEqual(rc, 0, err)
        texts = [t for t, _, _ in self.svg_texts(self.out("chunks16.svg"))]
        cells = [t for t in texts if t and (t[0].isdigit() or t in ("mean", "all"))]
        self.assertGreaterEqual(len(cells), 31 * 256, len(cells))
        self.assertFalse([t for t in cells if "," in t], "a label lists workers instead of a range")
        # reduce-scatter step 2: worker 1's chunk 14 holds 14, 15, 0, 1
        self.assertIn("14-1", cells)
        self.assertIn("0-14", cells)
        # op avg: the 16 owners hold the mean after the last reduce-scatter
        # step, 16 x (s + 2) copies after all-gather step s; never a bare "all"
        self.assertEqual(cells.count("mean"), 16 + sum(16 * (s + 2) for s in range(15)))
        self.assertNotIn("all", cells)
        self.assertTrue(any("divide by 16" in t for t in texts), "where the division happens")

    # tools-11: a failed run's chunk diagram and timeline say so: the title
    # (and the PNG's Title) carries the error, the crashed worker is marked,
    # transfers never received are drawn as such.
    def test_failed_run_pictures(self):
        error = self.rows(self.failed, "SELECT error FROM run")[0][0]
        for cmd in ("chunks", "timeline"):
            with self.subTest(cmd=cmd):
                rc, _, err = self.tool(cmd, self.failed, "-o", self.out(f"failed-{cmd}.png"))
                self.assertEqual(rc, 0, err)
                self.assertIn(f"FAILED: {error}", self.png_title(self.out(f"failed-{cmd}.png")))
                rc, _, err = self.tool(cmd, self.failed, "-o", self.out(f"failed-{cmd}.svg"))
                self.assertEqual(rc, 0, err)
                texts = " ".join(t for t, _, _ in self.svg_texts(self.out(f"failed-{cmd}.svg")))
                self.assertIn("crashed", texts)
                self.assertIn("never received", texts)
        rc, _, err = self.tool("timeline", self.db, "--run", 1, "-o", self.out("ok-timeline.png"))
        self.assertNotIn("FAILED", self.png_title(self.out("ok-timeline.png")))

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
        rc, _, err = self.tool("timeline", db, "-o", self.out("buckets.svg"))
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
        rc, _, err = self.tool("timeline", db, "-o", self.out("bench.svg"))
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
        rc, _, err = self.tool("timeline", db, "-o", self.out("big.svg"))
        self.assertEqual(rc, 0, err)
        import re
        labels = []
        for text, x, style in self.svg_texts(self.out("big.svg")):
            if re.fullmatch(r"(RS|AG)\d+", text):
                labels.append((x, text))
        labels.sort()
        self.assertGreaterEqual(len(labels), 4, labels)
        for (x0, t0), (x1, t1) in zip(labels, labels[1:]):
            # 7-point text: a character is about 4.5 points wide
            self.assertGreater(x1 - x0, 4.5 * len(t0), f"{t0} at {x0} runs into {t1} at {x1}")
        # a simulated uniform ring: bars of neighbouring steps differ in shade
        db = self.out("uniform.db")
        p = subprocess.run([RINGSIM, "-w", "4", "-p", os.path.join(EXAMPLES, "model.json"),
                            "--net", "latency=5us,bandwidth=25GB/s", "--trace", db],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        rc, _, err = self.tool("timeline", db, "-o", self.out("uniform.svg"))
        self.assertEqual(rc, 0, err)
        with open(self.out("uniform.svg")) as f:
            fills = set(re.findall(r"fill: ?(#[0-9a-f]{6})", f.read()))
        self.assertGreaterEqual(len(fills & {"#1f77b4", "#ff7f0e"}), 2, fills)
        self.assertGreaterEqual(len(fills - {"#1f77b4", "#ff7f0e", "#ffffff", "#000000"}), 2, fills)

    # tools-13: compare keeps --net runs and plain runs apart: by default
    # the kind of the latest run with two or more (here the plain runs), and
    # a --runs list that mixes them is refused.
    def test_compare_keeps_simulated_and_wall_runs_apart(self):
        rc, _, err = self.tool("compare", self.db, "-o", self.out("cmp.png"))
        self.assertEqual(rc, 0, err)
        title = self.png_title(self.out("cmp.png"))
        self.assertIn("4 runs (1,2,3,4), wall time", title)
        self.assertIn("left out 1 simulated", err)
        rc, _, err = self.tool("compare", self.db, "--runs", "1,5", "-o", self.out("cmp2.png"))
        self.assertEqual(rc, 2, err)
        self.assertIn("run 5 has a simulated network", err)
        self.assertEqual(err.strip().count("\n"), 0, err)

    # tools-14: every other algorithm (rd, rhd, linear, tree, gloo-ring at W=5, so rd
    # and rhd fold in and out): timeline, links, compare and export draw
    # each phase in its own colour and name it; chunks and animate draw
    # each one's regions, named in the title.
    def test_other_algorithms(self):
        import re
        colours = {"reduce_scatter": "#1f77b4", "all_gather": "#ff7f0e", "exchange": "#2ca02c",
                   "reduce": "#9467bd", "broadcast": "#17becf"}
        abbrev = {"reduce_scatter": "RS", "all_gather": "AG", "exchange": "EX", "reduce": "RED",
                  "broadcast": "BC"}
        db_all = self.out("algos-all.db")
        for algo in ("rd", "rhd", "linear", "tree", "gloo-ring"):
            db = self.out(f"algo-{algo}.db")
            for trace in (db, db_all):
                p = subprocess.run([RINGSIM, "-p", os.path.join(EXAMPLES, "mlp.json"), "-w", "5",
                                    "--algo", algo, "--trace", trace], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stderr)
            phases = [r[0] for r in self.rows(db, "SELECT phase FROM transfer GROUP BY phase "
                                              "ORDER BY min(send_begin_ns)")]
            with self.subTest(algo=algo, cmd="timeline"):
                rc, _, err = self.tool("timeline", db, "-o", self.out(f"algo-{algo}-timeline.png"))
                self.assertEqual(rc, 0, err)
                self.assert_image(self.out(f"algo-{algo}-timeline.png"))
                self.assertIn(f"{algo}) all-reduce" if algo in ("rd", "rhd") else f"{algo}",
                              self.png_title(self.out(f"algo-{algo}-timeline.png")))
                # (gloo-ring's name says ring; no title calls it the ring)
                self.assertNotIn("ring" if algo != "gloo-ring" else "ring all-reduce",
                                 self.png_title(self.out(f"algo-{algo}-timeline.png")))
                svg = self.out(f"algo-{algo}-timeline.svg")
                rc, _, err = self.tool("timeline", db, "-o", svg)
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
                rc, out, err = self.tool("links", db, "-o", self.out(f"algo-{algo}-links.png"))
                self.assertEqual(rc, 0, err)
                self.assert_image(self.out(f"algo-{algo}-links.png"))
                table = {line.split()[0]: [int(x) for x in line.split()[1:4]] for line in out.splitlines()[1:]}
                expected = {f"{s}->{d}": [n, r, b] for s, d, n, r, b in self.rows(
                    db, "SELECT src, dst, count(*), count(recv_end_ns), sum(bytes) FROM transfer "
                    "GROUP BY src, dst")}
                self.assertEqual(table, expected)
            with self.subTest(algo=algo, cmd="export"):
                doc = self.export(db)
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
            for cmd, ext in (("chunks", "png"), ("animate", "gif")):
                with self.subTest(algo=algo, cmd=cmd):
                    out = self.out(f"algo-{algo}-{cmd}.{ext}")
                    rc, _, err = self.tool(cmd, db, "-o", out)
                    self.assertEqual(rc, 0, err)
                    if ext == "png":
                        self.assert_image(out)
                        self.assertIn(f"{ringsim_plot_name(algo)} all-reduce, 5 workers",
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
        rc, _, err = self.tool("timeline", db, "-o", self.out("algo-rd-net.png"))
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
        rc, _, err = self.tool("compare", db_all, "-o", self.out("algos-compare.png"))
        self.assertEqual(rc, 0, err)
        self.assert_image(self.out("algos-compare.png"))
        self.assertIn("algorithms: gloo-ring, linear, rd, rhd, tree",
                      self.png_title(self.out("algos-compare.png")))

    @staticmethod
    def explain_tables(text, workers):
        """The contribution tables --explain prints after each step (not the
        values under them), each as rows[worker][column] of sets."""
        tables, lines = [], text.splitlines()
        for i, line in enumerate(lines):
            if line.startswith("           ") and i + 1 < len(lines) and \
                    lines[i + 1].startswith("  worker 0  "):
                rows = []
                for w in range(workers):
                    cells = lines[i + 1 + w].split()[2:]
                    rows.append([set(range(workers)) if c == "all" else
                                 {int(x) for x in c.strip("{}").split(",")} for c in cells])
                tables.append(rows)
        return tables

    # tools-15: the chunk diagram of every algorithm, replayed from the
    # trace (segments merged into messages; W = 2..8, W not a power of two
    # folding workers in), holds after each step exactly what --explain
    # replays from the algorithm's schedule functions, step for step; the
    # last step shows every region complete at every worker; above 8
    # workers (the ring: 16) it refuses in one line.
    def test_chunks_every_algorithm_match_the_schedule(self):
        sys.path.insert(0, os.path.dirname(TOOL))
        import ringsim_plot
        model = self.out("eight.json")
        with open(model, "w") as f:
            json.dump({"name": "eight", "params": [{"name": "g", "shape": [8]}]}, f)
        db = self.out("every-algo.db")
        compared = 0
        for algo in ("ring", "rd", "rhd", "linear", "tree", "gloo-ring"):
            for W in range(2, 9):
                p = subprocess.run([RINGSIM, "-p", model, "-w", str(W), "--algo", algo,
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
                got = [[[set(h) for h in row] for row in stage[1]] for stage in stages]
                with self.subTest(algo=algo, W=W):
                    self.assertEqual(len(got), len(want), [st[0] for st in stages])
                    self.assertEqual(got, want)
                    self.assertTrue(all(h == set(range(W)) for row in got[-1] for h in row))
                    self.assertGreater(len(stages[1][2]), 0, "the first step has transfers")
                    if regions is not None:
                        self.assertEqual(sum(n for _, _, n in regions), 8)
                compared += 1
        self.assertEqual(compared, 42)
        for algo, W, most in (("rd", 9, 8), ("tree", 9, 8), ("ring", 17, 16)):
            trace = self.out(f"big-{algo}.db")
            p = subprocess.run([RINGSIM, "-p", model, "-w", str(W), "--algo", algo, "--trace", trace],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stderr)
            rc, _, err = self.tool("chunks", trace, "-o", self.out(f"big-{algo}.png"))
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
        rc, out, err = self.tool("compare", "--bench", bench, "--model", model, "-o", svg)
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
                rc, _, err = self.tool("compare", *args, "-o", self.out("x.png"))
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
                rc, out, err = self.tool(*args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.strip().count("\n"), 0, err)
                self.assertIn(message, err)
        rc, out, _ = self.tool("--help")
        self.assertEqual(rc, 0)
        for cmd in ("timeline", "chunks", "links", "compare", "animate", "export", "html"):
            self.assertIn(cmd, out)

    def page_data(self, path):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        start = text.index('<script type="application/json" id="ringsim-data">')
        body = text[text.index(">", start) + 1:text.index("</script>", start)]
        return text, json.loads(body)

    # tools-html: `html` writes one page holding its data (the runs asked
    # for, the chunk view's messages and bytes as the transfer table has
    # them, each bucket of an auto run in the algorithm it ran) and loading
    # nothing; its bad inputs are one line, exit 2. (The page in a browser:
    # tests/test_viewer.py.)
    def test_html_page(self):
        rc, _, err = self.tool("html", self.db, "-o", self.out("all.html"))
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
        rc, _, err = self.tool("html", self.db, "--run", 2, "--run", 1, "-o", self.out("two.html"))
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
        rc, _, err = self.tool("html", auto, "-o", self.out("auto.html"))
        self.assertEqual(rc, 0, err)
        _, data = self.page_data(self.out("auto.html"))
        con = sqlite3.connect(auto)
        ran = dict(con.execute("SELECT bucket, algo FROM bucket_algo"))
        con.close()
        self.assertEqual({v["bucket"]: v["algo"] for v in data["runs"][0]["chunks"]}, ran)
        # one worker: a page that says there is nothing to step through
        rc, _, err = self.tool("html", os.path.join(self.dir, "one.db"), "-o", self.out("one.html"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.page_data(self.out("one.html"))[1]["runs"][0]["chunk_note"],
                         "run 1 has no transfers (W = 1)")
        for args, message in [
                (["html", self.db, "-o", self.out("x.png")], "unknown page type '.png'"),
                (["html", self.db, "--run", 1, 99], "no run 99"),
                (["html", self.db, "-o", "/nonexistent/x.html"], "cannot write")]:
            with self.subTest(args=args):
                rc, _, err = self.tool(*args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.strip().count("\n"), 0, err)
                self.assertIn(message, err)


def ringsim_plot_size(size):
    """Sizes as ringsim bench writes them: 8 B, 4 KiB, 64 MiB."""
    for unit, scale in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,} B"


def ringsim_plot_name(algo):
    return {"rd": "recursive-doubling (rd)", "rhd": "Rabenseifner (rhd)",
            "linear": "linear", "tree": "double-binary-tree",
            "gloo-ring": "gloo's ring (gloo-ring)"}[algo]


def main():
    global RINGSIM, EXAMPLES, TOOL
    if len(sys.argv) < 4:
        sys.exit("usage: test_tools.py RINGSIM EXAMPLES_DIR TOOLS_DIR [Tools.test_name ...]")
    RINGSIM, EXAMPLES = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    TOOL = os.path.join(os.path.abspath(sys.argv[3]), "ringsim_plot.py")
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[4:]])


if __name__ == "__main__":
    main()
