#!/usr/bin/python3
"""Tests of tools/ringsim_plot.py on real traces made by ringsim here.

    test_tools.py RINGSIM EXAMPLES_DIR TOOLS_DIR [Tools.test_name ...]
"""
import json
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
        slices = [e for e in events if e["ph"] == "X"]
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
        cases = [
            (["timeline", self.out("missing.db")], "missing.db: no such file"),
            (["timeline", text], "not a ringsim trace"),
            (["chunks", other], "not a ringsim trace"),
            (["links", self.db, "--run", 99], "no run 99"),
            (["timeline", self.db, "-o", self.out("x.bmp")], "unknown image type"),
            (["chunks", os.path.join(self.dir, "one.db")], "1 worker: there is no ring"),
            (["animate", self.db, "-o", self.out("x.avi")], "unknown animation type"),
            (["compare", self.db, "--runs", "1,x"], "expected run ids"),
            (["export", self.db, "-o", "/nonexistent/t.json"], "cannot write"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                rc, out, err = self.tool(*args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(err.strip().count("\n"), 0, err)
                self.assertIn(message, err)
        rc, out, _ = self.tool("--help")
        self.assertEqual(rc, 0)
        for cmd in ("timeline", "chunks", "links", "compare", "animate", "export"):
            self.assertIn(cmd, out)


def main():
    global RINGSIM, EXAMPLES, TOOL
    if len(sys.argv) < 4:
        sys.exit("usage: test_tools.py RINGSIM EXAMPLES_DIR TOOLS_DIR [Tools.test_name ...]")
    RINGSIM, EXAMPLES = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    TOOL = os.path.join(os.path.abspath(sys.argv[3]), "ringsim_plot.py")
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[4:]])


if __name__ == "__main__":
    main()
