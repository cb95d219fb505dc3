#!/usr/bin/python3
"""The Python tools on inputs they must refuse or read right (issue 46):
ringsim-plot on a trace whose topology metadata is inconsistent and on a
step report with a missing or mistyped field, or thousands of lanes; on
trace names a SQLite URI would misread (run%31.db, q?x.db, h#1.db),
leaving no file behind; tools/torch_profile.py and scripts/crossover-table
refusing a missing directory before their work, and writing whole or not
at all. Every input is made here by the built ringsim.

    test_tool_inputs.py RINGSIM EXAMPLES_DIR TOOLS_DIR [ToolInputs.test_name ...]
"""
import contextlib
import copy
import hashlib
import io
import json
import os
import resource
import shutil
import signal
import sqlite3
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import helpers

RINGSIM = EXAMPLES = TOOLS = None


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def file_limit(size):
    """A preexec_fn: writes past size bytes fail (EFBIG, SIGXFSZ ignored),
    standing in for a full disk."""
    def preexec():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return preexec


class ToolInputs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.model = os.path.join(cls.dir, "m.json")
        with open(cls.model, "w") as f:
            json.dump({"name": "real-model", "params": [{"name": "g", "shape": [1001]}]}, f)
        # a --topo run: 2 nodes of 2 GPUs, a NIC each (W = 4)
        cls.topo = os.path.join(cls.dir, "topo.db")
        cls.ringsim("-p", cls.model, "--topo", "pcie,nodes=2,gpus=2,nics=1", "--algo", "rhd",
                    "--trace", cls.topo)
        # a step report: two caps, so two rows; two workers' lanes
        cls.step = os.path.join(cls.dir, "step.json")
        p = subprocess.run([RINGSIM, "step", "--params", os.path.join(EXAMPLES, "step_three.json"),
                            "--workers", "2", "--net", "latency=1us,bandwidth=1GB/s",
                            "--bucket-mb", "1,2", "--segment-bytes", "1M", "--json"],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        with open(cls.step, "w") as f:
            f.write(p.stdout)
        cls.report = json.loads(p.stdout)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @staticmethod
    def ringsim(*args):
        p = subprocess.run([RINGSIM, *map(str, args)], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        return p.stdout

    def scratch(self):
        """A new empty directory of this test's own."""
        return tempfile.mkdtemp(dir=self.dir)

    @staticmethod
    def plot_module():
        if TOOLS not in sys.path:
            sys.path.insert(0, TOOLS)
        import ringsim_plot
        return ringsim_plot

    def plot_in(self, *args):
        """ringsim-plot's main in this process: (exit status, stdout, stderr).
        An exception it lets out (a traceback) fails the test."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = self.plot_module().main([str(a) for a in args])
        return rc, out.getvalue(), err.getvalue()

    def script(self, argv, timeout=120, **kw):
        p = subprocess.run([sys.executable, *map(str, argv)], capture_output=True, text=True,
                           timeout=timeout, **kw)
        return p.returncode, p.stdout, p.stderr

    def assert_one_line(self, rc, err, *words):
        self.assertEqual(rc, 2, err)
        self.assertNotIn("Traceback", err)
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        for w in words:
            self.assertIn(w, err)

    # tool-inputs-1: a --topo run whose topology metadata is not what
    # ringsim writes (gpus 0, nics 0 or missing or more than the GPUs,
    # nodes as text, nodes x gpus other than W, net_model not JSON) is
    # refused by topo, html and the others in one line naming the trace
    # and the field, exit 2, before anything is written; the trace as
    # ringsim wrote it is drawn.
    def test_topology_metadata_inconsistent(self):
        cases = [("gpus 0", "json_set(net_model, '$.topo.gpus', 0)", "gpus"),
                 ("nics 0", "json_set(net_model, '$.topo.nics', 0)", "nics"),
                 ("nics missing", "json_remove(net_model, '$.topo.nics')", "nics"),
                 ("nics > gpus", "json_set(net_model, '$.topo.nics', 3)", "nics"),
                 ("nodes text", "json_set(net_model, '$.topo.nodes', '2')", "nodes"),
                 ("nodes x gpus < W", "json_set(net_model, '$.topo.nodes', 1)", "nodes"),
                 ("nodes x gpus > W", "json_set(net_model, '$.topo.gpus', 4)", "gpus"),
                 ("gpus real", "json_set(net_model, '$.topo.gpus', 2.5)", "gpus"),
                 ("topo a list", "json_set(net_model, '$.topo', json('[2, 2]'))", "topo"),
                 ("net_model not JSON", "'{\"topo\": {'", "net_model"),
                 ("net_model a number", "'7'", "net_model")]
        where = self.scratch()
        for label, expr, field in cases:
            db = os.path.join(where, label.replace(" ", "_") + ".db")
            shutil.copy(self.topo, db)
            con = sqlite3.connect(db)
            with con:
                con.execute(f"UPDATE run SET net_model = {expr}")
            con.close()
            for cmd, out in (("topo", "t.png"), ("html", "p.html"), ("timeline", "l.png"),
                             ("export", "e.json")):
                with self.subTest(label=label, cmd=cmd):
                    out = os.path.join(where, out)
                    rc, _, err = self.plot_in(cmd, db, "-o", out)
                    self.assert_one_line(rc, err, db, "inconsistent", field)
                    self.assertFalse(os.path.exists(out), "an output written")
        rc, stdout, err = self.plot_in("topo", self.topo, "-o", os.path.join(where, "t.png"))
        self.assertEqual(rc, 0, err)
        self.assertIn("NIC 0 -> NIC 1", stdout)
        rc, _, err = self.plot_in("html", self.topo, "-o", os.path.join(where, "p.html"))
        self.assertEqual(rc, 0, err)
        with open(os.path.join(where, "p.html")) as f:
            self.assertIn('"topo":{"nodes":2,"gpus":2,"nics":1', f.read())

    # tool-inputs-2: a step report with a field missing, of the wrong type
    # or out of what ringsim writes is refused in one line naming the file
    # and the field, exit 2; ringsim's own report is drawn.
    def test_step_report_mistyped(self):
        def lanes(doc):
            return doc["rows"][0]["later"]["workers"]

        def drop(path):
            def f(doc):
                *head, last = path
                node = doc
                for k in head:
                    node = node[k]
                del node[last]
            return f

        def put(path, value):
            def f(doc):
                *head, last = path
                node = doc
                for k in head:
                    node = node[k]
                node[last] = value
            return f
        cases = [
            ("rows missing", drop(["rows"]), "rows"),
            ("rows empty", put(["rows"], []), "rows"),
            ("a row a number", put(["rows", 0], 5), "rows[0]"),
            ("later.step_ns missing", drop(["rows", 0, "later", "step_ns"]), "step_ns"),
            ("first missing", drop(["rows", 1, "first"]), "first"),
            ("cap_bytes text", put(["rows", 0, "cap_bytes"], "1M"), "cap_bytes"),
            ("total_ns null", put(["rows", 0, "total_ns"], None), "total_ns"),
            ("algo a number", put(["rows", 0, "algo"], 7), "algo"),
            ("best text", put(["rows", 0, "best"], "yes"), "best"),
            ("exposed_ns real", put(["rows", 0, "later", "exposed_ns"], 1.5), "exposed_ns"),
            ("step_ns negative", put(["rows", 0, "later", "step_ns"], -1), "step_ns"),
            ("buckets a dict", put(["rows", 0, "later", "buckets"], {}), "buckets"),
            ("a lane's allreduce text", lambda d: lanes(d)[0].__setitem__("allreduce", "x"),
             "allreduce"),
            ("a span of one", lambda d: lanes(d)[0]["allreduce"].__setitem__(0, [1]), "allreduce"),
            ("a span ending first", lambda d: lanes(d)[0]["allreduce"].__setitem__(0, [9, 1]),
             "allreduce"),
            ("spans fewer than buckets", lambda d: lanes(d)[0]["allreduce"].pop() and None,
             "allreduce"),
            ("forward_ns missing", lambda d: lanes(d)[1].pop("forward_ns") and None,
             "forward_ns"),
            ("lanes not W", lambda d: lanes(d).pop() and None, "workers"),
            ("workers text", put(["workers"], "2"), "workers"),
            ("workers 0", put(["workers"], 0), "workers"),
            ("iterations text", put(["iterations"], "2"), "iterations"),
            ("model a list", put(["model"], ["m"]), "model"),
            ("rows a dict", put(["rows"], {"0": {}}), "rows"),
            ("the document a list", lambda d: [d], "rows"),
        ]
        where = self.scratch()
        for label, change, field in cases:
            with self.subTest(label=label):
                doc = copy.deepcopy(self.report)
                doc = change(doc) or doc
                path = os.path.join(where, label.replace(" ", "_") + ".json")
                with open(path, "w") as f:
                    json.dump(doc, f)
                out = os.path.join(where, "s.png")
                for first in ([], ["--first"]):
                    rc, _, err = self.plot_in("step", path, *first, "-o", out)
                    self.assert_one_line(rc, err, path, field)
                    self.assertFalse(os.path.exists(out), "an output written")
        rc, stdout, err = self.plot_in("step", self.step, "-o", os.path.join(where, "s.png"))
        self.assertEqual(rc, 0, err)
        self.assertIn("buckets", stdout)

    # tool-inputs-3: a report of 2,100 lanes (more than ringsim lists) is
    # drawn in seconds, at most 64 lanes: the first 63 and the worker
    # whose communication ends last, the title and stdout saying so.
    def test_step_report_of_many_lanes(self):
        doc = copy.deepcopy(self.report)
        W = 2100
        doc["workers"] = W
        for row in doc["rows"]:
            for tl in (row["first"], row["later"]):
                one = tl["workers"][0]
                tl["workers"] = [copy.deepcopy(one) for _ in range(W)]
                # worker 1234 ends its last all-reduce last
                tl["workers"][1234]["allreduce"][-1][1] += 1000
        where = self.scratch()
        path = os.path.join(where, "many.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        out = os.path.join(where, "many.png")
        began = time.monotonic()
        try:
            rc, stdout, err = self.script([os.path.join(TOOLS, "ringsim_plot.py"), "step", path,
                                           "-o", out], timeout=90)
        except subprocess.TimeoutExpired:
            self.fail("ringsim-plot step on 2,100 lanes ran past 90 s")
        took = time.monotonic() - began
        self.assertEqual(rc, 0, err)
        self.assertLess(took, 60)
        w, h = png_size(out)
        self.assertLess(h, 120 * 70, f"a picture {h} pixels tall")
        self.assertIn("64 of 2100 workers", stdout)
        self.assertIn("w1234", stdout)

    # tool-inputs-3b: a `ringsim model --json` sweep whose fastest is not
    # one of its algorithms, whose W is 0 or text, or whose time is text
    # is refused by sweep in one line naming the field, exit 2.
    def test_sweep_report_mistyped(self):
        where = self.scratch()
        doc = json.loads(self.ringsim("model", "--workers", "2,4", "--params", self.model,
                                      "--net", "latency=5us,bandwidth=25GB/s", "--algo", "all",
                                      "--json"))
        out = os.path.join(where, "w.png")
        for label, change, field in (
                ("fastest unknown", lambda d: d["rows"][1].__setitem__("fastest", "nccl"),
                 "rows[1].fastest"),
                ("workers 0", lambda d: d["rows"][0].__setitem__("workers", 0), "workers"),
                ("workers text", lambda d: d["rows"][0].__setitem__("workers", "2"), "workers"),
                ("sim_ns text", lambda d: d["rows"][0]["algos"]["ring"].__setitem__("sim_ns", "1"),
                 "sim_ns"),
                ("algos empty", lambda d: d["rows"][0].__setitem__("algos", {}), "algos")):
            with self.subTest(label=label):
                bad = copy.deepcopy(doc)
                change(bad)
                path = os.path.join(where, label.replace(" ", "_") + ".json")
                with open(path, "w") as f:
                    json.dump(bad, f)
                rc, _, err = self.plot_in("sweep", path, "-o", out)
                self.assert_one_line(rc, err, path, field)
                self.assertFalse(os.path.exists(out), "an output written")

    # tool-inputs-4: a trace whose name holds %, ? or # is read as that
    # file, not as run1.db, q or h beside it, and reading it leaves no file
    # behind: no -wal, no -shm, no empty h.
    def test_trace_names_are_not_uris(self):
        where = self.scratch()
        decoy_model = os.path.join(where, "decoy.json")
        with open(decoy_model, "w") as f:
            json.dump({"name": "decoy-model", "params": [{"name": "g", "shape": [7]}]}, f)
        decoy = os.path.join(where, "run1.db")
        self.ringsim("-p", decoy_model, "-w", 2, "--trace", decoy)
        shutil.copy(decoy, os.path.join(where, "q"))
        real = os.path.join(self.dir, "names-real.db")
        self.ringsim("-p", self.model, "-w", 3, "--trace", real)
        names = ["run%31.db", "q?x.db", "h#1.db", "a%20b.db", "sp ace.db"]
        for name in names:
            shutil.copy(real, os.path.join(where, name))
        before = sorted(os.listdir(where))
        for name in names:
            with self.subTest(name=name):
                out = os.path.join(self.dir, "names.json")
                rc, _, err = self.plot_in("export", os.path.join(where, name), "-o", out)
                self.assertEqual(rc, 0, err)
                with open(out) as f:
                    other = json.load(f)["otherData"]
                self.assertEqual((other["model"], other["workers"]), ("real-model", 3))
                self.assertEqual(sorted(os.listdir(where)), before)
        # a name SQLite cannot find as a file either: one line, nothing made
        rc, _, err = self.plot_in("export", os.path.join(where, "h#2.db"), "-o",
                                  os.path.join(self.dir, "names.json"))
        self.assert_one_line(rc, err, "h#2.db", "no such file")
        self.assertEqual(sorted(os.listdir(where)), before)

    # tool-inputs-5: reading a trace leaves no -wal or -shm beside it, by
    # every command; while a writer holds the trace open (its -wal and
    # -shm live) they stay, the writer's, and it goes on writing.
    def test_reading_leaves_no_wal(self):
        where = self.scratch()
        db = os.path.join(where, "t.db")
        self.ringsim("-p", self.model, "-w", 2, "--trace", db)
        self.assertEqual(os.listdir(where), ["t.db"])
        outs = self.scratch()
        for cmd, out in (("timeline", "t.png"), ("links", "l.png"), ("export", "e.json"),
                         ("html", "p.html"), ("compare", "c.png")):
            with self.subTest(cmd=cmd):
                rc, _, err = self.plot_in(cmd, db, "-o", os.path.join(outs, out))
                if cmd == "compare":  # one run: refused, having read it
                    self.assert_one_line(rc, err, "at least two")
                else:
                    self.assertEqual(rc, 0, err)
                self.assertEqual(os.listdir(where), ["t.db"])
        writer = sqlite3.connect(db)
        try:
            writer.execute("BEGIN IMMEDIATE")
            writer.execute("UPDATE run SET error = 'a writer was here'")
            writer.execute("COMMIT")
            self.assertEqual(sorted(os.listdir(where)), ["t.db", "t.db-shm", "t.db-wal"])
            rc, _, err = self.plot_in("export", db, "-o", os.path.join(outs, "e.json"))
            self.assertEqual(rc, 0, err)
            self.assertEqual(sorted(os.listdir(where)), ["t.db", "t.db-shm", "t.db-wal"])
            with open(os.path.join(outs, "e.json")) as f:
                self.assertEqual(json.load(f)["otherData"]["error"], "a writer was here")
            writer.execute("UPDATE run SET error = NULL")
            writer.commit()
        finally:
            writer.close()
        self.assertEqual(os.listdir(where), ["t.db"])

    # tool-inputs-6: torch_profile refuses an --out in a missing directory
    # in one line, exit 2, before it profiles (a run of 10^6 steps would
    # take an hour); the tools' mlp profiles as before.
    def test_torch_profile_missing_directory(self):
        out = os.path.join(self.dir, "no-such-dir", "model.json")
        began = time.monotonic()
        rc, _, err = self.script([os.path.join(TOOLS, "torch_profile.py"), "--out", out,
                                  "--iterations", 1000000], timeout=120)
        self.assertLess(time.monotonic() - began, 60)
        self.assert_one_line(rc, err, out, "no-such-dir")

    # tool-inputs-7: torch_profile on a model with a frozen param (left out
    # of the profile, as DDP leaves it out of its buckets, and said so on
    # stderr) and a forward returning a tuple (the loss the sum of every
    # tensor in it); the model.json ringsim step reads.
    def test_torch_profile_frozen_and_tuple(self):
        where = self.scratch()
        with open(os.path.join(where, "frozen_tuple.py"), "w") as f:
            f.write(
                "import torch\n"
                "class Net(torch.nn.Module):\n"
                "    def __init__(self):\n"
                "        super().__init__()\n"
                "        self.embed = torch.nn.Linear(8, 16)\n"
                "        self.embed.requires_grad_(False)\n"
                "        self.head = torch.nn.Linear(16, 4)\n"
                "        self.aux = torch.nn.Linear(16, 2)\n"
                "    def forward(self, x):\n"
                "        h = self.embed(x)\n"
                "        return self.head(h), self.aux(h), 'a label'\n"
                "def make():\n"
                "    torch.manual_seed(0)\n"
                "    return Net(), torch.randn(4, 8)\n")
        out = os.path.join(where, "model.json")
        rc, stdout, err = self.script([os.path.join(TOOLS, "torch_profile.py"), "--model",
                                       "frozen_tuple:make", "--out", out, "--iterations", 3,
                                       "--warmup", 1],
                                      env=dict(os.environ, PYTHONPATH=where))
        self.assertEqual(rc, 0, err)
        self.assertNotIn("Traceback", err)
        self.assertIn("embed.weight", err)
        self.assertIn("embed.bias", err)
        self.assertIn("requires_grad", err)
        with open(out) as f:
            model = json.load(f)
        self.assertEqual([p["name"] for p in model["params"]],
                         ["head.weight", "head.bias", "aux.weight", "aux.bias"])
        self.assertTrue(all(p["backward_us"] >= 0 and p["forward_us"] >= 0
                            for p in model["params"]))
        self.assertEqual(sorted(n for n in os.listdir(where) if n != "__pycache__"),
                         ["frozen_tuple.py", "model.json"])
        p = subprocess.run([RINGSIM, "step", "--params", out, "--workers", "2", "--net",
                            "latency=1us,bandwidth=1GB/s"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)

    # tool-inputs-8: torch_profile writes its model.json whole or not at
    # all: when the write fails (a file size limit standing in for a full
    # disk) it says so in one line, exit 2, and the model.json already
    # there is left as it was, no temporary file beside it.
    def test_torch_profile_write_is_whole(self):
        where = self.scratch()
        out = os.path.join(where, "model.json")
        old = json.dumps({"name": "older", "params": [{"name": "w", "shape": [3]}]}) + "\n"
        with open(out, "w") as f:
            f.write(old)
        rc, _, err = self.script([os.path.join(TOOLS, "torch_profile.py"), "--out", out,
                                  "--iterations", 1, "--warmup", 0],
                                 preexec_fn=file_limit(200))
        self.assert_one_line(rc, err, out, "File too large")
        with open(out) as f:
            self.assertEqual(f.read(), old)
        self.assertEqual(os.listdir(where), ["model.json"])
        rc, _, err = self.script([os.path.join(TOOLS, "torch_profile.py"), "--out", out,
                                  "--iterations", 1, "--warmup", 0])
        self.assertEqual(rc, 0, err)
        with open(out) as f:
            self.assertEqual(len(json.load(f)["params"]), 4)
        self.assertEqual(os.listdir(where), ["model.json"])

    def crossover(self, *args, **kw):
        return self.script([os.path.join(os.path.dirname(TOOLS), "scripts", "crossover-table"),
                            *args], **kw)

    # tool-inputs-9: crossover-table refuses a missing --ringsim, and a
    # --write or --check file that is missing, in a missing directory or
    # without the table's block, in one line, exit 2, before it simulates.
    def test_crossover_table_refusals(self):
        where = self.scratch()
        page = os.path.join(where, "page.md")
        with open(page, "w") as f:
            f.write("before\n<!-- crossover-table -->\nold\n<!-- /crossover-table -->\nafter\n")
        bare = os.path.join(where, "bare.md")
        with open(bare, "w") as f:
            f.write("no block here\n")
        # a ringsim that says it was run: refused before it is
        slow = os.path.join(where, "slow-ringsim")
        ran = os.path.join(where, "ran")
        with open(slow, "w") as f:
            f.write(f"#!/bin/sh\ntouch '{ran}'\nexit 1\n")
        os.chmod(slow, 0o755)
        missing = os.path.join(where, "no-such-dir")
        for args, words in (
                (["--ringsim", os.path.join(missing, "ringsim")], ["--ringsim", "no-such-dir"]),
                (["--ringsim", where], ["--ringsim", where]),
                (["--ringsim", slow, "--write", os.path.join(missing, "page.md")],
                 ["--write", "no-such-dir"]),
                (["--ringsim", slow, "--write", os.path.join(where, "none.md")],
                 ["--write", "none.md"]),
                (["--ringsim", slow, "--write", bare], ["bare.md", "crossover-table"]),
                (["--ringsim", slow, "--check", os.path.join(missing, "page.md")],
                 ["--check", "no-such-dir"]),
                (["--ringsim", slow, "--check", bare], ["bare.md", "crossover-table"])):
            with self.subTest(args=args):
                rc, _, err = self.crossover(*args, timeout=60)
                self.assert_one_line(rc, err, *words)
                self.assertFalse(os.path.exists(ran), "ringsim was run before the refusal")
        with open(page) as f:
            self.assertIn("\nold\n", f.read())

    # tool-inputs-10: crossover-table --write writes the page whole or not
    # at all: a write that fails (the file size limit) is one line, exit 2,
    # the page as it was, no temporary file; a good write replaces the
    # block alone.
    def test_crossover_table_write_is_whole(self):
        where = self.scratch()
        page = os.path.join(where, "page.md")
        text = ("before\n<!-- crossover-table -->\nold\n<!-- /crossover-table -->\nafter\n")
        with open(page, "w") as f:
            f.write(text)
        # a ringsim model that answers at once: every algorithm 1 us on
        # every node count
        fake = os.path.join(where, "fake-ringsim")
        with open(fake, "w") as f:
            f.write("#!/usr/bin/python3\n"
                    "import json, sys\n"
                    "a = sys.argv[sys.argv.index('--algo') + 1]\n"
                    "nodes = sys.argv[sys.argv.index('--topo') + 1].split('nodes=')[1]\n"
                    "print(json.dumps({'rows': [{'nodes': int(n), 'algos': {a: {'sim_ns': 1000}}}"
                    " for n in nodes.split(',')]}))\n")
        os.chmod(fake, 0o755)
        rc, _, err = self.crossover("--ringsim", fake, "--write", page,
                                    preexec_fn=file_limit(len(text) + 10))
        self.assert_one_line(rc, err, page, "File too large")
        with open(page) as f:
            self.assertEqual(f.read(), text)
        self.assertEqual(sorted(os.listdir(where)), ["fake-ringsim", "page.md"])
        rc, _, err = self.crossover("--ringsim", fake, "--write", page)
        self.assertEqual(rc, 0, err)
        with open(page) as f:
            new = f.read()
        self.assertTrue(new.startswith("before\n<!-- crossover-table -->\n`dgx-h100`"), new)
        self.assertTrue(new.endswith("<!-- /crossover-table -->\nafter\n"), new)
        self.assertIn("| 512 | 4,096 | 1 GiB | 1.0 | 1.0 | 1.0 | 1.0 | ring, tree, hier, rhd |",
                      new)
        self.assertEqual(sorted(os.listdir(where)), ["fake-ringsim", "page.md"])

    # tool-inputs-11: a trace ringsim writes with times near its 2^63 ns
    # limit (a 2^62 ns latency: two sends add up past 2^63) is read by
    # every command, not refused as "integer overflow".
    def test_trace_near_time_limit(self):
        where = self.scratch()
        db = os.path.join(where, "big.db")
        self.ringsim("-p", self.model, "-w", 2, "--net",
                     "latency=4611686018427386880ns,bandwidth=1TB/s", "--trace", db)
        for cmd, out in (("timeline", "t.png"), ("chunks", "c.png"), ("links", "l.png"),
                         ("export", "e.json"), ("html", "p.html")):
            with self.subTest(cmd=cmd):
                rc, _, err = self.plot_in(cmd, db, "-o", os.path.join(where, out))
                self.assertEqual(rc, 0, err)
        with open(os.path.join(where, "e.json")) as f:
            events = json.load(f)["traceEvents"]
        # the last receive ends past 2^63 - 2^62 ns, in us
        self.assertGreater(max(e.get("ts", 0) + e.get("dur", 0) for e in events), 9.2e15)

    # tool-inputs-12: JSON nested past Python's limit (a step or sweep
    # report, a trace's net_model or config_json) is one line, exit 2,
    # naming the file: no RecursionError traceback.
    def test_nested_json_refused(self):
        where = self.scratch()
        deep = {"list.json": "[" * 100000 + "]" * 100000,
                "object.json": '{"a": ' * 50000 + "1" + "}" * 50000,
                "rows.json": '{"rows": ' + "[" * 5000 + "]" * 5000 + "}"}
        for name, text in deep.items():
            path = os.path.join(where, name)
            with open(path, "w") as f:
                f.write(text)
            for cmd in ("step", "sweep"):
                with self.subTest(name=name, cmd=cmd):
                    rc, _, err = self.plot_in(cmd, path, "-o", os.path.join(where, "o.png"))
                    self.assert_one_line(rc, err, path, "nested too deeply")
            rc, _, err = self.plot_in("compare", "--bench", path, "-o",
                                      os.path.join(where, "o.png"))
            self.assert_one_line(rc, err, path, "nested too deeply")
        nested = '{"topo": ' * 5000 + "1" + "}" * 5000
        for column, word in (("net_model", "net_model"), ("config_json", None)):
            db = os.path.join(where, column + ".db")
            shutil.copy(self.topo, db)
            con = sqlite3.connect(db)
            with con:
                con.execute(f"UPDATE run SET {column} = ?", (nested,))
            con.close()
            for cmd, out in (("timeline", "t.png"), ("export", "e.json"), ("html", "p.html"),
                             ("topo", "g.png")):
                with self.subTest(column=column, cmd=cmd):
                    rc, _, err = self.plot_in(cmd, db, "-o", os.path.join(where, out))
                    if word:
                        self.assert_one_line(rc, err, db, word)
                    else:  # config_json only adds the faults injected: none
                        self.assertEqual(rc, 0, err)

    # tool-inputs-13: an integer past 2^63 - 1 in a step or sweep report
    # (ringsim writes none; past a float's range it failed where drawn)
    # is one line naming the field, exit 2.
    def test_report_integers_bounded(self):
        where = self.scratch()
        huge = 10 ** 400

        def lane(d):
            return d["rows"][0]["later"]["workers"][0]
        for label, change, field in (
                ("cap_bytes", lambda d: d["rows"][0].__setitem__("cap_bytes", huge), "cap_bytes"),
                ("step_ns", lambda d: d["rows"][0]["later"].__setitem__("step_ns", huge),
                 "step_ns"),
                ("forward_ns", lambda d: lane(d).__setitem__("forward_ns", huge), "forward_ns"),
                ("hidden_ns", lambda d: d["rows"][0]["later"].__setitem__("hidden_ns", -huge),
                 "hidden_ns"),
                ("span end", lambda d: lane(d)["allreduce"][0].__setitem__(1, huge),
                 "allreduce[0]"),
                ("2^63", lambda d: d["rows"][0].__setitem__("total_ns", 2 ** 63), "total_ns")):
            with self.subTest(label=label):
                doc = copy.deepcopy(self.report)
                change(doc)
                path = os.path.join(where, label.replace(" ", "_") + ".json")
                with open(path, "w") as f:
                    json.dump(doc, f)
                rc, _, err = self.plot_in("step", path, "-o", os.path.join(where, "s.png"))
                self.assert_one_line(rc, err, path, field, "2^63")
        sweep = {"model": "m", "rows": [{"workers": 2, "fastest": "ring",
                                         "algos": {"ring": {"sim_ns": 1000}}}]}
        for label, change, field in (
                ("sim_ns", lambda d: d["rows"][0]["algos"]["ring"].__setitem__("sim_ns", huge),
                 "sim_ns"),
                ("workers", lambda d: d["rows"][0].__setitem__("workers", huge), "workers")):
            with self.subTest(label=label):
                doc = copy.deepcopy(sweep)
                change(doc)
                path = os.path.join(where, "sweep-" + label + ".json")
                with open(path, "w") as f:
                    json.dump(doc, f)
                rc, _, err = self.plot_in("sweep", path, "-o", os.path.join(where, "w.png"))
                self.assert_one_line(rc, err, path, field)

    # tool-inputs-14: a real report of 600 buckets a lane is drawn with the
    # lanes' all-reduces merged (gaps under 1/500 of the step closed: at
    # most 500 bars a lane, every all-reduce inside a bar), the title and
    # stdout saying so; 5,000 buckets ran past 5 minutes, one bar each.
    def test_step_report_of_many_buckets(self):
        where = self.scratch()
        model = os.path.join(where, "many.json")
        with open(model, "w") as f:
            json.dump({"name": "many", "params": [
                {"name": f"p{i}", "shape": [262144], "backward_us": 1 + 60 * (i % 50 == 0),
                 "forward_us": 1} for i in range(600)]}, f)
        report = os.path.join(where, "r.json")
        with open(report, "w") as f:
            f.write(self.ringsim("step", "-p", model, "-w", 2, "--net",
                                 "latency=5us,bandwidth=25GB/s", "--bucket-mb", 1, "--json"))
        rc, stdout, err = self.plot_in("step", report, "-o", os.path.join(where, "r.png"))
        self.assertEqual(rc, 0, err)
        self.assertIn("600 buckets a lane, their all-reduces drawn merged", stdout)
        with open(report) as f:
            timeline = json.load(f)["rows"][0]["later"]
        step = self.plot_module().step
        spans, note = step.lane_spans(timeline, [0, 1])
        self.assertIn("merged", note)
        gap = -(-max(timeline["step_ns"], max(e for _, e in timeline["workers"][0]["allreduce"]))
                // step.STEP_MERGE_PARTS)
        for r, drawn in enumerate(spans):
            self.assertLessEqual(len(drawn), step.STEP_MERGE_PARTS)
            for (_, e0), (s1, _) in zip(drawn, drawn[1:]):
                self.assertGreaterEqual(s1 - e0, gap)
            for s, e in timeline["workers"][r]["allreduce"]:
                self.assertTrue(any(a <= s and e <= b for a, b in drawn), (s, e))
        # gaps of at least 1/500 of the step stay gaps
        self.assertEqual(step.merged_spans([[0, 10], [12, 20], [50, 60]], 5),
                         [[0, 20], [50, 60]])

    # tool-inputs-15: step prints a row's algorithm as ringsim prints a
    # name: an escape sequence in it reaches stdout as '?'.
    def test_step_algo_is_cleaned(self):
        where = self.scratch()
        doc = copy.deepcopy(self.report)
        doc["rows"][0]["algo"] = doc["rows"][1]["algo"] = "ring\u001b[2J\u001b[31mRED\r\n"
        path = os.path.join(where, "esc.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        rc, stdout, err = self.plot_in("step", path, "-o", os.path.join(where, "e.png"))
        self.assertEqual(rc, 0, err)
        self.assertIn("ring?[2J?[31mRED??", stdout)
        self.assertFalse(any(ord(c) < 0x20 and c != "\n" for c in stdout), repr(stdout))

    def crashed_writer(self, where, name):
        """A trace at where/name whose last run's error its -wal alone
        holds: a writer that committed and died, its -shm gone."""
        db = os.path.join(where, name)
        self.ringsim("-p", self.model, "-w", 2, "--trace", db)
        code = ("import os, sqlite3, sys\n"
                "c = sqlite3.connect(sys.argv[1])\n"
                "c.execute(\"UPDATE run SET error = 'only in the wal'\")\n"
                "c.commit()\n"
                "os._exit(0)\n")
        subprocess.run([sys.executable, "-c", code, db], check=True)
        os.unlink(db + "-shm")
        self.assertGreater(os.path.getsize(db + "-wal"), 0)
        return db

    # tool-inputs-16: where the trace's -wal and -shm cannot be made (a
    # file size limit standing in for a full disk) a trace is still read
    # (read-only: it has no -wal) and no side file is left; a crashed
    # writer's -wal, which needs a -shm, is one line saying the trace
    # cannot be read here, exit 2, its -wal left as it was. The probe
    # that keeps a live writer's -shm sees a connection holding it.
    def test_reading_on_a_full_disk(self):
        where = self.scratch()
        outs = self.scratch()
        db = os.path.join(where, "t.db")
        self.ringsim("-p", self.model, "-w", 2, "--trace", db)
        out = os.path.join(outs, "e.json")
        rc, _, err = self.script([os.path.join(TOOLS, "ringsim_plot.py"), "export", db, "-o", out],
                                 preexec_fn=file_limit(8192))
        self.assertEqual(rc, 0, err)
        self.assertEqual(os.listdir(where), ["t.db"])
        with open(out) as f:
            self.assertEqual(json.load(f)["otherData"]["workers"], 2)
        crashed = self.crashed_writer(where, "c.db")
        wal = digest(crashed + "-wal")
        rc, _, err = self.script([os.path.join(TOOLS, "ringsim_plot.py"), "export", crashed,
                                  "-o", out], preexec_fn=file_limit(8192))
        self.assert_one_line(rc, err, crashed, "cannot read the trace here", "-shm", "full")
        self.assertEqual(sorted(os.listdir(where)), ["c.db", "c.db-wal", "t.db"])
        self.assertEqual(digest(crashed + "-wal"), wal)
        # a writer in another process (a lock probe sees no lock of its own)
        replay = self.plot_module().replay
        code = ("import sqlite3, sys\n"
                "c = sqlite3.connect(sys.argv[1])\n"
                "c.execute('SELECT count(*) FROM run').fetchone()\n"
                "print('open', flush=True)\n"
                "sys.stdin.read()\n")
        writer = subprocess.Popen([sys.executable, "-c", code, db], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(writer.stdout.readline(), "open\n")
            self.assertTrue(replay.shm_in_use(db + "-shm"))
        finally:
            writer.communicate("")
        self.assertFalse(replay.shm_in_use(db + "-shm"))

    # tool-inputs-17: in a directory this user cannot write, a crashed
    # writer's -wal without its -shm is one line saying so, exit 2 (not
    # "not a ringsim trace"); a trace there with no -wal is read.
    def test_crashed_writer_in_read_only_directory(self):
        where = self.scratch()
        crashed = self.crashed_writer(where, "w2.db")
        shutil.copy(self.topo, os.path.join(where, "ok.db"))
        outs = self.scratch()
        kw = {}
        if os.geteuid() == 0:  # root writes anywhere: read as nobody
            os.chmod(outs, 0o777)
            for name in os.listdir(where):
                os.chmod(os.path.join(where, name), 0o644)

            def nobody():
                os.setgid(65534)
                os.setuid(65534)
            kw["preexec_fn"] = nobody
            os.chmod(self.dir, 0o755)
        os.chmod(where, 0o555)
        try:
            rc, _, err = self.script([os.path.join(TOOLS, "ringsim_plot.py"), "export", crashed,
                                      "-o", os.path.join(outs, "e.json")], **kw)
            self.assert_one_line(rc, err, crashed, "cannot read the trace here", "crashed",
                                 "-shm")
            rc, _, err = self.script([os.path.join(TOOLS, "ringsim_plot.py"), "export",
                                      os.path.join(where, "ok.db"), "-o",
                                      os.path.join(outs, "e.json")], **kw)
            self.assertEqual(rc, 0, err)
        finally:
            os.chmod(where, 0o755)
        self.assertEqual(sorted(os.listdir(where)), ["ok.db", "w2.db", "w2.db-wal"])

    # tool-inputs-18: torch_profile refuses an --out that is the source
    # of the --model's module (writing model.json over it) and an --out
    # ending in '/' (a directory not there: it wrote a file of that name),
    # in one line, exit 2, the module left as it was, nothing written.
    def test_torch_profile_out_not_source(self):
        where = self.scratch()
        source = ("import torch\n"
                  "def tup():\n"
                  "    torch.manual_seed(0)\n"
                  "    return torch.nn.Linear(4, 3), torch.randn(8, 4)\n")
        mods = os.path.join(where, "mods.py")
        with open(mods, "w") as f:
            f.write(source)
        env = dict(os.environ, PYTHONPATH=where)
        for out, words in (("mods.py", ["mods.py", "source of module 'mods'"]),
                           (mods, [mods, "source of module 'mods'"]),
                           ("nodir/", ["nodir/", "directory"])):
            with self.subTest(out=out):
                rc, _, err = self.script([os.path.join(TOOLS, "torch_profile.py"), "--model",
                                          "mods:tup", "--out", out, "--iterations", 2,
                                          "--warmup", 1], env=env, cwd=where)
                self.assert_one_line(rc, err, *words)
                with open(mods) as f:
                    self.assertEqual(f.read(), source)
                self.assertEqual(sorted(n for n in os.listdir(where) if n != "__pycache__"),
                                 ["mods.py"])

    # tool-inputs-19: torch_profile on a forward run under torch.no_grad()
    # (no graph to take a backward of), and on a model function that
    # raises: one line naming --model and why, exit 2, no traceback.
    def test_torch_profile_model_failures(self):
        where = self.scratch()
        with open(os.path.join(where, "bad.py"), "w") as f:
            f.write("import torch\n"
                    "class NoGrad(torch.nn.Module):\n"
                    "    def __init__(self):\n"
                    "        super().__init__()\n"
                    "        self.a = torch.nn.Linear(4, 3)\n"
                    "    def forward(self, x):\n"
                    "        with torch.no_grad():\n"
                    "            return self.a(x)\n"
                    "def nograd():\n"
                    "    return NoGrad(), torch.randn(8, 4)\n"
                    "def raises():\n"
                    "    raise RuntimeError('boom')\n")
        out = os.path.join(where, "model.json")
        for spec, words in (("bad:nograd", ["bad:nograd", "no autograd graph"]),
                            ("bad:raises", ["bad:raises", "RuntimeError: boom"])):
            with self.subTest(spec=spec):
                rc, _, err = self.script([os.path.join(TOOLS, "torch_profile.py"), "--model",
                                          spec, "--out", out, "--iterations", 2, "--warmup", 1],
                                         env=dict(os.environ, PYTHONPATH=where))
                self.assert_one_line(rc, err, *words)
                self.assertFalse(os.path.exists(out))


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES", "TOOLS")


if __name__ == "__main__":
    main()
