#!/usr/bin/env python3
"""End-to-end tests of the ringsim command: output, exit codes, files.

Run by CTest, one test per case:  test_cli.py RINGSIM EXAMPLES_DIR CASE
(or with no CASE, every case). Needs numpy only to check --out files
against an independent reference.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import helpers

import numpy as np

RINGSIM = None
EXAMPLES = None


run = helpers.run


def run_on_terminal(*args):
    """Run ringsim with stderr on a pseudo-terminal and stdout on a pipe:
    (exit status, stdout, everything the terminal was sent)."""
    import pty
    master, slave = pty.openpty()
    p = subprocess.Popen([RINGSIM, *map(str, args)], stdout=subprocess.PIPE,
                         stderr=slave, stdin=subprocess.DEVNULL)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    out = p.stdout.read()
    rc = p.wait(timeout=600)
    os.close(master)
    return rc, out.decode(), shown.decode(errors="replace")


# Safetensors files for the C reader to read and from the C writer, through
# the project's Python implementation of the format (tools/ringsim_st.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import ringsim_st  # noqa: E402

write_safetensors = ringsim_st.write
read_safetensors = ringsim_st.read


class Cli(unittest.TestCase):
    def setUp(self):
        # Each case runs in its own directory, where the default trace goes.
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.old_cwd = os.getcwd()
        os.chdir(self.dir)

    def tearDown(self):
        os.chdir(self.old_cwd)
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)

    def assert_usage_error(self, args, message):
        """Exit 2, nothing on stdout, one line on stderr holding message."""
        rc, out, err = run(*args, cwd=self.dir)
        self.assertEqual(rc, 2, f"{args}: exit {rc}, stderr {err!r}")
        self.assertEqual(out, "", args)
        self.assertEqual(err.count("\n"), 1, f"{args}: {err!r}")
        self.assertTrue(err.startswith("ringsim: "), err)
        self.assertIn(message, err, args)

    # cli-1: the reference example prints w: [2, 3] and exits 0.
    def test_two_workers_example(self):
        rc, out, err = run("--workers", 2, "--params",
                           os.path.join(EXAMPLES, "two_workers.json"))
        self.assertEqual(rc, 0, err)
        self.assertIn("  w: [2, 3]\n", out)
        self.assertIn("all workers hold identical gradients", out)
        self.assertIn("transfers  4 (2 per worker)", out)

    # cli-2: --json holds the documented fields with the right values.
    def test_json_report(self):
        rc, out, err = run("-w", 2, "-p", os.path.join(EXAMPLES, "two_workers.json"), "--json")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual(r["workers"], 2)
        self.assertEqual(r["params"], 1)
        self.assertEqual(r["elems"], 2)
        self.assertEqual(r["bytes"], 8)
        self.assertEqual(r["transfers"], 4)
        self.assertEqual(r["bytes_sent"], [8, 8])
        self.assertIs(r["identical"], True)
        self.assertEqual(r["max_abs_err"], 0)
        self.assertEqual(r["status"], "ok")
        self.assertEqual(r["result"], {"w": [2, 3]})
        self.assertEqual((r["loop"], r["direct"], r["slots"]), ("steps", False, 8))
        # direct mode overwrites a sent region W-1 messages later: 1 slot here
        rc, out, err = run("-w", 2, "-p", os.path.join(EXAMPLES, "two_workers.json"), "--json",
                           "--direct", "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertEqual((json.loads(out)["direct"], json.loads(out)["slots"]), (True, 1))
        self.assertGreater(r["wall_ns"], 0)
        self.assertAlmostEqual(r["busbw_gbs"], r["algbw_gbs"] * 2 * 1 / 2)
        for key in ("bound", "algbw_gbs"):
            self.assertIn(key, r)

    # cli-3: generated grads: exact inputs reproduce the reference bit for
    # bit, with traffic as the theory says (W=5, 1003 elements).
    def test_generated_exact(self):
        model = self.write("m.json", '{"params": [{"name": "g", "shape": [1003]}]}')
        rc, out, err = run("-w", 5, "-p", model, "--init", "exact", "--json", "--seed", 9)
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertIs(r["exact"], True)
        self.assertEqual(r["param_checks"][0]["differing"], 0)
        self.assertAlmostEqual(sum(r["bytes_sent"]) / 5, 2 * 4 / 5 * 1003 * 4, delta=8 * 4)
        self.assertNotIn("result", r)  # 1003 values: not printed by default

    # cli-4: real gradients in through --grads (written here, not by
    # ringsim), out through --out; numpy agrees within the bound; the --out
    # file read back through --grads on 2 workers gives itself, bitwise.
    def test_grads_in_and_out(self):
        model = self.write("m.json", '{"params": [{"name": "w", "shape": [3, 5]},'
                                     ' {"name": "b", "shape": [7]}]}')
        rng = np.random.default_rng(1)
        inputs = []
        for r in range(3):
            t = {"w": rng.standard_normal((3, 5)).astype(np.float32),
                 "b": rng.standard_normal(7).astype(np.float32)}
            write_safetensors(self.path(f"worker{r}.safetensors"), t)
            inputs.append(t)
        rc, out, err = run("-w", 3, "-p", model, "--grads", self.path("worker{r}.safetensors"),
                           "--out", self.path("avg.safetensors"), "--json")
        self.assertEqual(rc, 0, err)
        got = read_safetensors(self.path("avg.safetensors"))
        for name in ("w", "b"):
            stack = np.stack([t[name].astype(np.float64) for t in inputs])
            want = stack.mean(axis=0)
            bound = 3 * 2.0**-24 * np.abs(stack).sum(axis=0) / 3 + 2.0**-24 * np.abs(want)
            self.assertEqual(got[name].shape, want.shape)
            self.assertTrue(np.all(np.abs(got[name] - want) <= bound), name)
        for r in range(2):
            os.link(self.path("avg.safetensors"), self.path(f"again{r}.safetensors"))
        rc, out, err = run("-w", 2, "-p", model, "--grads", self.path("again{r}.safetensors"),
                           "--out", self.path("avg2.safetensors"))
        self.assertEqual(rc, 0, err)
        again = read_safetensors(self.path("avg2.safetensors"))
        for name in ("w", "b"):
            self.assertEqual(again[name].tobytes(), got[name].tobytes())

    # cli-5: --print prints every param's values; a bigger model prints none
    # without it.
    def test_print_values(self):
        mlp = os.path.join(EXAMPLES, "mlp.json")
        rc, out, _ = run("-w", 3, "-p", mlp, "--init", "exact")
        self.assertEqual(rc, 0)
        self.assertIn("fc2.bias: [", out)
        model = os.path.join(EXAMPLES, "model.json")
        rc, out, _ = run("-w", 2, "-p", model)
        self.assertEqual(rc, 0)
        self.assertNotIn("fc1.weight: [", out)
        rc, out, _ = run("-w", 2, "-p", model, "--print")
        self.assertEqual(rc, 0)
        line = [l for l in out.splitlines() if l.startswith("  fc2.bias: [")][0]
        self.assertEqual(line.count(",") + 1, 10)

    # cli-5.1: every printed value is the shortest decimal that reads back as
    # the same value of the model's dtype, in one notation (positional from
    # 1e-4 to 1e16, scientific outside, as Python's repr): numpy's
    # shortest-digit formatting is the independent reference.
    def test_values_shortest_one_format(self):
        def shortest(x):
            a = abs(float(x))
            if a != 0 and (a < 1e-4 or a >= 1e16):
                return np.format_float_scientific(x, unique=True, trim="-", exp_digits=2)
            return np.format_float_positional(x, unique=True, trim="-")

        def printed(out, name):
            line = [l for l in out.splitlines() if l.startswith(f"  {name}: [")][0]
            return line[len(name) + 5:-1].split(", ")

        w0 = [-4, -8, -2, 0.5, 1e-5, 3e20, 0.1, 123456, 1, 0, 7e-5, 1e15]
        w1 = [7, 10, 81, 0.5, 1, 1, 1, 1000, 1 / 3, -1, 1, 100]
        cases = [("f32", np.float32, "prod"), ("f64", np.float64, "prod"),
                 ("f16", np.float16, "max"), ("bf16", None, "min")]
        for dtype, np_type, op in cases:
            with self.subTest(dtype=dtype):
                # the half types' range ends near 65504 and 3.4e38
                x0, x1 = ([min(x, 6e4) for x in w] if dtype in ("f16", "bf16") else w
                          for w in (w0, w1))
                model = self.write(f"{dtype}.json", json.dumps(
                    {"params": [{"name": "a", "shape": [len(w0)], "dtype": dtype}],
                     "grads": [{"a": x0}, {"a": x1}]}))
                rc, out, err = run("-p", model, "--op", op, "--no-trace")
                self.assertIn(rc, (0, 1), err)  # prod's check may flag underflow
                got = printed(out, "a")
                self.assertEqual(len(got), len(w0))
                if np_type is None:  # bf16: no numpy type; each reads back
                    def bf16(v):
                        u = int(np.array(v, dtype=np.float32).view(np.uint32))
                        u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
                        return float(np.array(u, dtype=np.uint32).view(np.float32))
                    want = [min(bf16(p), bf16(q)) for p, q in zip(x0, x1)]
                    self.assertEqual([bf16(float(t)) for t in got], want)
                    for text, v in zip(got, want):
                        self.assertEqual("e" in text, v != 0 and not 1e-4 <= abs(v) < 1e16, text)
                    continue
                a = np.array(x0, dtype=np.float64).astype(np_type)
                b = np.array(x1, dtype=np.float64).astype(np_type)
                want = {"prod": a * b, "max": np.maximum(a, b), "min": np.minimum(a, b)}[op]
                self.assertEqual(got, [shortest(x) for x in want])
        # the case: -80 printed as -8e+01 beside -28 and -162
        self.assertEqual(printed(run("-p", self.path("f32.json"), "--op", "prod", "--no-trace")[1],
                                 "a")[:4], ["-28", "-80", "-162", "0.25"])
        # random values, each the shortest for float32
        rc, out, err = run("-w", 3, "-p", os.path.join(EXAMPLES, "mlp.json"), "--json", "--no-trace")
        values = json.loads(out)["result"]["fc2.bias"]
        rc, out, err = run("-w", 3, "-p", os.path.join(EXAMPLES, "mlp.json"), "--no-trace")
        self.assertEqual(printed(out, "fc2.bias"), [shortest(np.float32(v)) for v in values])

    # cli-5.3: --json's result values read back as the very values the
    # workers hold: all 17 digits of an f64 model's doubles.
    def test_json_values_round_trip(self):
        model = self.write("d.json", '{"params": [{"name": "w", "shape": [3], "dtype": "f64"}], '
                                     '"grads": [{"w": [0.1, 1, 1e-300]}, {"w": [0.2, 2, 3e-300]}]}')
        rc, out, err = run("-p", model, "--op", "sum", "--json", "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["result"]["w"], [0.1 + 0.2, 3.0, 1e-300 + 3e-300])
        model = self.write("f.json", '{"params": [{"name": "w", "shape": [2]}], '
                                     '"grads": [{"w": [0.1, 1]}, {"w": [0.2, 2]}]}')
        rc, out, err = run("-p", model, "--op", "sum", "--json", "--no-trace")
        self.assertEqual(rc, 0, err)
        got = np.array(json.loads(out)["result"]["w"]).astype(np.float32)
        self.assertEqual(list(got), list(np.float32([0.1, 1]) + np.float32([0.2, 2])))

    # cli-5.2: the report's counts agree with their nouns.
    def test_report_singular_plural(self):
        two = os.path.join(EXAMPLES, "two_workers.json")
        rc, out, err = run("-p", two, "--no-trace", "--slots", 1)
        self.assertEqual(rc, 0, err)
        self.assertIn("  model      1 param, 2 elements, 8 B of f32 per worker\n", out)
        self.assertIn("  chunks     2 of 1 element, 1 segment each (<= 1 element), 1 slot per queue\n", out)
        model = self.write("m.json", '{"params": [{"name": "g", "shape": [40]}]}')
        rc, out, err = run("-p", model, "-w", 4, "--segment-bytes", 4, "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertIn("  chunks     4 of 10 elements, 10 segments each (<= 1 element), 8 slots per queue\n",
                      out)

    def test_transfers_per_worker(self):
        """The report's transfers line gives how many each worker sent: one
        number where all sent as many (the ring), else the fewest and the
        most, as --json's transfers_sent has them."""
        model = self.write("m.json", '{"params": [{"name": "g", "shape": [101]}]}')
        for algo, uneven in (("ring", False), ("linear", True), ("tree", True),
                             ("gloo-ring", True)):
            with self.subTest(algo=algo):
                args = ("-w", 16, "-p", model, "--algo", algo, "--no-trace")
                rc, out, err = run(*args)
                self.assertEqual(rc, 0, err)
                rc, js, err = run(*args, "--json")
                self.assertEqual(rc, 0, err)
                r = json.loads(js)
                lo, hi = min(r["transfers_sent"]), max(r["transfers_sent"])
                self.assertEqual(sum(r["transfers_sent"]), r["transfers"])
                self.assertEqual(lo != hi, uneven, r["transfers_sent"])
                per = f"{lo}-{hi}" if uneven else str(lo)
                self.assertIn(f"  transfers  {r['transfers']} ({per} per worker)\n", out)

    def test_gloo_segments_per_chunk(self):
        """gloo-ring reports gloo's own segments per chunk: N segments (as
        many of at most --segment-bytes as the bucket needs, at least 2W,
        rounded up to a multiple of W) of ceil(n/N) elements, N/W a chunk
        (docs/algorithms.md), not the ring's."""
        for n, W, seg_bytes in ((101, 16, None), (1000, 4, 64), (1000, 3, 100)):
            with self.subTest(n=n, W=W, seg_bytes=seg_bytes):
                model = self.write("m.json", json.dumps({"params": [{"name": "g", "shape": [n]}]}))
                extra = ("--segment-bytes", seg_bytes) if seg_bytes else ()
                rc, out, err = run("-w", W, "-p", model, "--algo", "gloo-ring", "--no-trace",
                                   "--json", *extra)
                self.assertEqual(rc, 0, err)
                r = json.loads(out)
                N = max(-(-4 * n // (seg_bytes or 2 ** 20)), 2 * W)
                N = -(-N // W) * W
                self.assertEqual((r["segs_per_chunk"], r["segment_elems"]), (N // W, -(-n // N)))

    def test_params_from_pipes_and_fifos(self):
        """--params may be a pipe (-p /dev/stdin, -p <(...)), inline grads
        included; a FIFO that nobody writes to is an empty model, at once
        (opening it used to wait for a writer, and no signal stopped that),
        and one given as --grads is not a regular file, at once."""
        two = os.path.join(EXAMPLES, "two_workers.json")
        with open(two) as f:
            p = subprocess.run([RINGSIM, "-p", "/dev/stdin", "--no-trace"], stdin=f,
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("  w: [2, 3]\n", p.stdout)
        fifo = self.path("fifo")
        os.mkfifo(fifo)
        model = self.write("m.json", '{"params": [{"name": "g", "shape": [4]}]}')
        for args, message in (
                (["-p", fifo], f"ringsim: {fifo}:1:0: '[' or '{{' expected near end of file\n"),
                (["model", "-p", fifo, "--net", "latency=1us,bandwidth=1GB/s"],
                 f"ringsim: {fifo}:1:0: '[' or '{{' expected near end of file\n"),
                (["-p", model, "-w", 1, "--grads", self.path("fif{r}")],
                 f"ringsim: {self.path('fif0')}: not a regular file\n")):
            if "--grads" in args and not os.path.exists(self.path("fif0")):
                os.mkfifo(self.path("fif0"))
            with self.subTest(args=args):
                rc, out, err = run(*args, "--no-trace") if args[0] != "model" else run(*args)
                self.assertEqual((rc, err), (2, message))

    # cli-6.N: bad usage and bad input: exit 2 and one clear line.
    def test_bad_usage(self):
        two = os.path.join(EXAMPLES, "two_workers.json")
        model = self.write("m.json", '{"params": [{"name": "g", "shape": [4]}]}')
        cases = [
            ([], "--params MODEL.json is required"),
            (["-p", two, "--bogus"], "unknown option '--bogus'"),
            (["-p", two, "--workers"], "option '--workers' needs a value"),
            (["-p", model, "-w", 0], "--workers '0': expected an integer in 1..4096"),
            (["-p", model, "-w", -3], "--workers '-3'"),
            (["-p", model, "-w", "four"], "--workers 'four'"),
            (["-p", model, "-w", "+4"], "--workers '+4': expected an integer in 1..4096"),
            (["-p", model, "-w", "04"], "--workers '04': expected an integer in 1..4096"),
            (["-p", model, "-w", 5000], "--workers '5000'"),
            (["-p", model, "extra"], "unexpected argument 'extra'"),
            (["-p", model, "--init", "zeros"], "--init 'zeros'"),
            (["-p", model, "--op", "median"], "--op 'median': expected sum, avg, min, max or prod"),
            (["-p", model, "--op", "max", "--average", "pre"], "--average applies to --op avg only"),
            (["-p", model, "--average", "mid"], "--average 'mid': expected pre, post or pre-mul"),
            (["-p", model, "--segment-bytes", "2"], "--segment-bytes '2'"),
            (["-p", model, "--slots", "0"], "--slots '0'"),
            (["-p", model, "--timeout", "-1"], "--timeout '-1'"),
            (["-p", model, "--seed", "x"], "--seed 'x'"),
            (["-p", model, "--out", "/nonexistent/o.safetensors"], "--out '/nonexistent/o.safetensors'"),
            (["-p", self.path("missing.json")], "missing.json: cannot open"),
            (["-p", self.dir], "cannot read"),
            (["-p", self.write("bad.json", '{"params": [\n  {"name": "w", "shape": [2]}\n  {"name"')],
             "bad.json:3:3:"),
            (["-p", two, "-w", 3], "grads has 2 entries but --workers is 3"),
            (["-p", two, "--init", "exact"], "--init and --seed only apply to generated grads"),
            (["-p", model, "--grads", self.path("w{r}.safetensors")], "w0.safetensors: cannot open"),
            (["-p", model, "-w", 2, "--grads", self.path("w.safetensors")], "must contain {r}"),
            (["-p", model, "--grads", "x{r}", "--init", "exact"], "cannot be used with --grads"),
            (["-p", model, "--loop", "ring"], "--loop 'ring': expected steps or slices"),
            (["-p", model, "--loop", "slices", "--net", "latency=5us,bandwidth=1GB/s"],
             "loop: the network model simulates the step order"),
            (["-p", model, "--like", "ddp"], "--like 'ddp': expected ddp-gloo"),
            # (NCCL's run is the model's and the step's, not yet the threads')
            (["-p", model, "--like", "nccl"], "ringsim model --like nccl"),
            (["-p", model, "--like", "ddp-gloo", "--op", "sum"],
             "--like ddp-gloo sets --algo gloo-ring, --op avg and --average pre-mul"),
            (["-p", model, "--like", "ddp-gloo", "--direct"],
             "direct: peers read a bucket in place"),
            (["-p", model, "--like", "ddp-gloo", "--explain"],
             "--explain narrates the model's layout, not DDP's reversed buckets"),
            (["-p", model, "--explain", "--json"],
             "--explain narrates in text; --json prints one JSON object (give one of them)"),
            (["-p", model, "-w", " 2"], "--workers ' 2': expected an integer in 1..4096"),
            (["-p", model, "--seed", "9223372036854775808"],
             "--seed '9223372036854775808': expected an integer in 0..9223372036854775807"),
            (["-p", model, "--net", "latency=1us,bandwidth=1GB/s", "--link", "1-0:"],
             "--link '1-0:': nothing to set"),
        ]
        for args, message in cases:
            with self.subTest(args=args):
                self.assert_usage_error(args, message)

    # cli-7: non-finite gradients from a file are refused (exit 2), naming
    # the worker, param and element.
    def test_non_finite_grads_refused(self):
        model = self.write("m.json", '{"params": [{"name": "g", "shape": [3]}]}')
        write_safetensors(self.path("w0.safetensors"), {"g": np.array([1, 2, 3], np.float32)})
        write_safetensors(self.path("w1.safetensors"), {"g": np.array([1, np.inf, 3], np.float32)})
        self.assert_usage_error(["-w", 2, "-p", model, "--grads", self.path("w{r}.safetensors")],
                                "worker 1's gradient of \"g\" holds inf at element 1")

    # cli-19: a product's bound holds for every algorithm: each of the W-1
    # multiplications rounds the whole product, so rd's result carries all
    # W-1 roundings though its depth is log2 W + 1. These 7 workers' values
    # (once generated) put one element of rd's product at 1.05 times a
    # theta(depth) bound; within theta(W-1), every algorithm passes.
    def test_product_bound_every_algorithm(self):
        values = [
            [0.5668731, -0.5980161, 0.4031101, 2.0149803, -0.057025954, -0.017350523, 0.0076813935],
            [0.18905036, -0.7222954, 1.838942, -1.4715669, -0.6614867, -1.527795, 0.64843947],
            [0.19249928, -1.1535294, 0.18557419, 0.12383002, 0.6027562, -0.22346403, 1.2882631],
            [-0.00024241128, -0.2873611, -0.12363371, 0.08752565, -1.1197892, -2.7921677, 0.282008],
            [0.11766127, 0.19444825, -1.5397438, -0.20411082, -0.30053142, -3.221347, 1.3054485],
            [1.341576, -1.2657342, -1.536612, -0.50121474, 0.16091384, 0.69589615, -2.1146662],
            [-0.67690176, 1.0286356, 0.094752334, 1.4851847, 0.12494819, -0.34835026, -2.0515745]]
        model = self.write("prod7.json", json.dumps({
            "params": [{"name": "a", "shape": [3]}, {"name": "b", "shape": [4]}],
            "grads": [{"a": v[:3], "b": v[3:]} for v in values]}))
        for algo in ("ring", "rd", "rhd", "linear", "tree", "gloo-ring"):
            with self.subTest(algo=algo):
                rc, out, err = run("-w", 7, "-p", model, "--algo", algo, "--op", "prod",
                                   "--json", "--no-trace")
                self.assertEqual(rc, 0, err)
                report = json.loads(out)
                self.assertEqual(report["status"], "ok")
                self.assertLessEqual(report["worst_ratio"], 1.0)
                if algo == "rd":  # the element that needs all W-1 roundings
                    self.assertGreater(report["worst_ratio"], 0.3)

    # cli-10: float16 gradients (numpy's, through F16 safetensors) are
    # all-reduced as NCCL does and come out as F16 within the f16 bound; the
    # classic overflow: 4 x 40000 overflows f16 when the sum comes first
    # (exit 1, inf), not when each worker divides first (--average pre).
    def test_half_precision(self):
        model = self.write("h.json", '{"params": [{"name": "w", "shape": [64, 9], "dtype": "f16"}]}')
        rng = np.random.default_rng(3)
        grads = [rng.standard_normal((64, 9)).astype(np.float16) for _ in range(4)]
        for r, g in enumerate(grads):
            write_safetensors(self.path(f"h{r}.safetensors"), {"w": g}, dtype="F16")
        rc, out, err = run("-w", 4, "-p", model, "--grads", self.path("h{r}.safetensors"),
                           "--out", self.path("hout.safetensors"), "--json")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual((r["dtype"], r["bytes"]), ("f16", 64 * 9 * 2))
        got = read_safetensors(self.path("hout.safetensors"))["w"]
        self.assertEqual(got.dtype, np.float16)
        stack = np.stack([g.astype(np.float64) for g in grads])
        want = stack.mean(axis=0)
        u = 2.0 ** -11
        bound = 6 * u * np.abs(stack).sum(axis=0) / 4 + u * np.abs(want)
        self.assertTrue(np.all(np.abs(got.astype(np.float64) - want) <= bound))

        over = self.write("over.json", '{"params": [{"name": "w", "shape": [2], "dtype": "f16"}], '
                                       '"grads": [{"w": [40000, 1]}, {"w": [40000, 2]}, '
                                       '{"w": [40000, 3]}, {"w": [40000, 4]}]}')
        rc, out, err = run("-p", over, "--json")
        self.assertEqual(rc, 1, err)
        self.assertIn("element(s) outside the error bound", err)
        self.assertEqual(json.loads(out)["result"]["w"], [None, 2.5])
        rc, out, err = run("-p", over, "--json", "--average", "pre")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["result"]["w"], [40000, 2.5])

    # cli-11: float64 end to end. The two-worker example holds in f64;
    # numpy's float64 gradients (F64 safetensors) come out as F64 within
    # f64's bound of the correctly rounded mean (math.fsum), which a float32
    # ring could not meet; generated exact inputs match bit for bit.
    def test_double_precision(self):
        import math
        two = self.write("two.json", '{"params": [{"name": "w", "shape": [2], "dtype": "f64"}], '
                                     '"grads": [{"w": [1, 2]}, {"w": [3, 4]}]}')
        rc, out, err = run("-w", 2, "-p", two)
        self.assertEqual(rc, 0, err)
        self.assertIn("w: [2, 3]", out)
        self.assertIn("16 B of f64 per worker", out)

        W, shape = 5, (33, 7)
        model = self.write("d.json", '{"params": [{"name": "w", "shape": [33, 7], "dtype": "f64"}]}')
        rng = np.random.default_rng(11)
        grads = [rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape) for _ in range(W)]
        for r, g in enumerate(grads):
            write_safetensors(self.path(f"d{r}.safetensors"), {"w": g}, dtype="F64")
        rc, out, err = run("-w", W, "-p", model, "--grads", self.path("d{r}.safetensors"),
                           "--out", self.path("dout.safetensors"), "--json")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual((r["dtype"], r["bytes"]), ("f64", 33 * 7 * 8))
        got = read_safetensors(self.path("dout.safetensors"))["w"]
        self.assertEqual(got.dtype, np.float64)
        flat = [g.ravel() for g in grads]
        want = np.array([math.fsum(g[i] for g in flat) / W for i in range(got.size)]).reshape(shape)
        u = 2.0 ** -53
        bound = (W + 1) * u * np.abs(np.stack(grads)).sum(axis=0) / W + u * np.abs(want)
        err_abs = np.abs(got - want)
        self.assertTrue(np.all(err_abs <= bound), float((err_abs / bound).max()))
        # what rounding to float32 would lose is far outside that bound
        f32 = np.abs(got.astype(np.float32).astype(np.float64) - want)
        self.assertTrue(np.any(f32 > bound))

        rc, out, err = run("-w", 7, "-p", model, "--init", "exact")
        self.assertEqual(rc, 0, err)
        self.assertIn("bit for bit", out)
        rc, out, err = run("-w", 7, "-p", model, "--order-report")
        self.assertEqual(rc, 0, err)
        self.assertIn("in double", out)

    def test_order_report_counts_the_dtypes_ulps(self):
        """--order-report counts ULPs of the dtype the sums are written in:
        an f16 or bf16 model's, and a compressing hook's (it counted f32's,
        2^13 times as many for f16). Ring at W = 3: chunk 1 sums
        (g1+g2)+g0, the fixed order (g0+g1)+g2. With g0 = 1 and g1 = g2 =
        half an ULP of 1, the fixed order loses both halves (1 + half an
        ULP rounds to even, 1) and the ring keeps them (their sum is one
        ULP): one ULP apart, in either dtype."""
        for dtype, ulp in (("f16", 2.0 ** -10), ("bf16", 2.0 ** -7)):
            g = [[0, 1, 0], [0, ulp / 2, 0], [0, ulp / 2, 0]]
            model = self.write("o.json", json.dumps(
                {"params": [{"name": "w", "shape": [3], "dtype": dtype}],
                 "grads": [{"w": v} for v in g]}))
            with self.subTest(dtype=dtype):
                rc, out, err = run("-p", model, "--op", "sum", "--no-trace", "--order-report",
                                   "--json")
                self.assertEqual(rc, 0, err)
                check = json.loads(out)["param_checks"][0]
                self.assertEqual((check["order_differing"], check["order_max_ulps"]), (1, 1))
                rc, out, err = run("-p", model, "--op", "sum", "--no-trace", "--order-report")
                self.assertIn(f"in float, rounded to the dtype): elements that differ, largest "
                              f"difference in ULPs of {dtype}", out)
                self.assertIn("w: 1 of 3 differ (33.3%), by up to 1 ulp\n", out)
        # the fp16 hook on an f32 model: its sums in f16, its ULPs f16's
        # (each input divided by W = 3 first: 1 and two half ULPs again)
        g = [[0, 3, 0], [0, 3 * 2.0 ** -11, 0], [0, 3 * 2.0 ** -11, 0]]
        model = self.write("o.json", json.dumps(
            {"params": [{"name": "w", "shape": [3]}], "grads": [{"w": v} for v in g]}))
        rc, out, err = run("-p", model, "--hook", "fp16", "--no-trace", "--order-report",
                           "--json")
        self.assertEqual(rc, 0, err)
        check = json.loads(out)["param_checks"][0]
        self.assertEqual((check["order_differing"], check["order_max_ulps"]), (1, 1))

    def test_double_error_against_the_long_double_sum(self):
        """An f64 run's max abs err is measured against the long double
        reference, as the report says, not against that reference rounded
        to double (which made a correctly rounded 0.1 + 0.2 show 0, and
        1 + 2^-53 + 2^-54 rounded to 1 show 2^-52): exact here, with
        Fractions. Inline grads keep the reference whole; generated ones
        make it again after the run (recovered here from a min and a max
        run: the two workers' values of each element)."""
        from fractions import Fraction
        for grads, exact in (([0.1, 0.2], Fraction(0.1) + Fraction(0.2)),
                             ([1.0, 2.0 ** -53, 2.0 ** -54], 1 + Fraction(3, 2 ** 54))):
            model = self.write("m.json", json.dumps(
                {"params": [{"name": "w", "shape": [1], "dtype": "f64"}],
                 "grads": [{"w": [g]} for g in grads]}))
            rc, out, err = run("-p", model, "--op", "sum", "--no-trace", "--json")
            self.assertEqual(rc, 0, err)
            r = json.loads(out)
            want = float(abs(Fraction(r["result"]["w"][0]) - exact))
            self.assertGreater(want, 0)
            self.assertEqual(r["max_abs_err"], want, grads)
        model = self.write("g.json", '{"params": [{"name": "w", "shape": [3000], "dtype": "f64"}]}')
        runs = {}
        for op in ("min", "max", "sum"):
            rc, out, err = run("-w", 2, "-p", model, "--op", op, "--no-trace", "--json",
                               "--out", self.path(f"{op}.safetensors"))
            self.assertEqual(rc, 0, err)
            runs[op] = (json.loads(out), read_safetensors(self.path(f"{op}.safetensors"))["w"])
        lo, hi, got = runs["min"][1], runs["max"][1], runs["sum"][1]
        errors = [abs(Fraction(float(got[i])) - Fraction(float(lo[i])) - Fraction(float(hi[i])))
                  for i in range(got.size)]
        self.assertGreater(max(errors), 0)
        self.assertEqual(runs["sum"][0]["max_abs_err"], float(max(errors)))

    # cli-8: --help documents every option and the exit codes; --version.
    def test_memory_is_the_buffers(self):
        """Generated grads are checked block by block, from the inputs made
        again, so a run needs the W gradient buffers and little more: peak
        RSS at most 1.1 x (W+1) x the model's bytes (ResNet-18, W=4; a
        float64 reference and bounds kept whole would add 3 x the model).
        The report times the phases: making the grads, the all-reduce, the
        check."""
        import resource
        with open(RINGSIM, "rb") as f:
            if re.search(rb"__(a|t|m)san_init", f.read()):
                self.skipTest("a sanitizer's shadow memory is not the run's")
        began = time.monotonic()
        rc, out, err = run("--workers", 4, "--params",
                           os.path.join(EXAMPLES, "resnet18.json"), "--no-trace", "--json")
        whole_ns = (time.monotonic() - began) * 1e9
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual((r["status"], r["checked"], r["identical"]), ("ok", True, True))
        # the phases, each timed, within the command's own wall time
        phases = [r["fill_ns"], r["wall_ns"], r["check_ns"]]
        self.assertTrue(all(t > 0 for t in phases), phases)
        self.assertLess(sum(phases), whole_ns, phases)
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
        limit = 1.1 * 5 * r["bytes"]
        self.assertLessEqual(peak, limit, f"peak RSS {peak} B, model {r['bytes']} B")

    def test_helpers_follow_affinity(self):
        """The threads that make and check the grads are one per core the
        process may run on (its affinity mask, as taskset or a cpuset sets
        it), not one per core the machine has."""
        cores = sorted(os.sched_getaffinity(0))
        model = os.path.join(EXAMPLES, "two_workers.json")
        for allowed in ({cores[0]}, set(cores)):
            p = subprocess.run([RINGSIM, "-w", "2", "-p", model, "--json", "--no-trace"],
                               capture_output=True, text=True, timeout=600,
                               preexec_fn=lambda: os.sched_setaffinity(0, allowed))
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(json.loads(p.stdout)["check_threads"], min(len(allowed), 64),
                             allowed)

    def test_progress_only_on_a_terminal(self):
        """A stage that takes more than a second (here the all-reduce, held
        up 1.5 s by a stalled worker) draws one progress line on stderr when
        it is a terminal, redrawn in place and cleared at the end; nothing
        when stderr is a pipe, and nothing with --json, whose stdout stays
        one JSON object."""
        args = ["--workers", "4", "--params", os.path.join(EXAMPLES, "model.json"),
                "--no-trace", "--inject", "stall:worker=1,step=2,ms=1500"]
        rc, out, shown = run_on_terminal(*args)
        self.assertEqual(rc, 0, shown)
        self.assertIn("\rringsim: the all-reduce: ", shown)
        self.assertRegex(shown, r"the all-reduce: \d+%, 1 s\x1b\[K")
        self.assertTrue(shown.endswith("\r\x1b[K"), repr(shown[-60:]))
        self.assertIn("status     ok", out)
        self.assertNotIn("ringsim:", out)
        rc, out, err = run(*args)
        self.assertEqual((rc, err), (0, ""))
        rc, out, shown = run_on_terminal(*args, "--json")
        self.assertEqual((rc, shown), (0, ""))
        self.assertEqual(json.loads(out)["status"], "ok")

    def test_lost_report_is_a_failed_run(self):
        """A report that cannot reach stdout (a full disk: /dev/full) is a
        failed run: exit 3, one line on stderr saying so, and the run's row
        in the trace says its report was not delivered, while the trace's
        earlier runs stay whole. The same for every command that prints:
        model, bench, diff, --help. (It used to exit 0 with the report
        lost.)"""
        two = os.path.join(EXAMPLES, "two_workers.json")
        trace = self.path("t.db")
        rc, _, err = run("-p", two, "--trace", trace)
        self.assertEqual(rc, 0, err)
        lost = "the report was not delivered: stdout: No space left on device"
        base = {k: v for k, v in os.environ.items() if k != "RINGSIM_TEST_FLIP"}
        # the last: worker 1's element 0 flipped (docs/reliability.md's
        # test knob), a failed check, exit 1, with its report lost
        for extra, check_rc in (([], 0), (["--json"], 0), (["--explain"], 0), ([], 1)):
            env = base | ({"RINGSIM_TEST_FLIP": "1:0"} if check_rc else {})
            with self.subTest(extra=extra, check_rc=check_rc):
                ok = subprocess.run([RINGSIM, "-p", two, "--trace", trace, *extra],
                                    capture_output=True, text=True, env=env, timeout=60)
                self.assertEqual(ok.returncode, check_rc, ok.stderr)
                with open("/dev/full", "w") as full:
                    p = subprocess.run([RINGSIM, "-p", two, "--trace", trace, *extra],
                                       stdout=full, stderr=subprocess.PIPE,
                                       text=True, env=env, timeout=60)
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertEqual(p.stderr.splitlines()[-1], f"ringsim: {lost}")
        rows = subprocess.run(["sqlite3", trace, "SELECT run_id, status, "
                               "coalesce(error, '') FROM run ORDER BY run_id"],
                              capture_output=True, text=True, check=True).stdout
        rows = [r.split("|") for r in rows.splitlines()]
        self.assertEqual([r[0] for r in rows], [str(i) for i in range(1, 10)])
        self.assertEqual(rows[0][1:], ["ok", ""])
        for good, bad in zip(rows[1::2], rows[2::2]):
            self.assertIn(good[1], ("ok", "check_failed"))
            self.assertEqual(bad[1:], ["failed", lost])
        net = "latency=1us,bandwidth=10GB/s"
        for args in (["model", "-p", two, "--net", net],
                     ["bench", "-w", 2, "-b", 8, "-e", 8, "-n", 1],
                     ["diff", "-p", two, "--algo", "ring,rd"],
                     ["--help"], ["model", "--help"]):
            with self.subTest(args=args):
                rc, _, err = run(*args)
                self.assertEqual(rc, 0, err)
                with open("/dev/full", "w") as full:
                    p = subprocess.run([RINGSIM, *map(str, args)], stdout=full,
                                       stderr=subprocess.PIPE, text=True, timeout=60)
                self.assertEqual(p.returncode, 3, p.stderr)
                self.assertRegex(p.stderr, r"ringsim: the output was not delivered: "
                                 r"stdout: (No space left on device|a write failed)\n$")

    def test_out_long_names(self):
        """--out with a legal file name of 245 to 255 bytes is written, read
        back as the result, with no temporary file left (the temporary's
        name, 11 bytes longer, made the write fail after the run: exit 3);
        a name longer than the directory allows is refused before the run
        (exit 2), and the trace gets no row."""
        two = os.path.join(EXAMPLES, "two_workers.json")
        trace = self.path("t.db")
        d = self.path("long")
        os.mkdir(d)
        for n in (245, 250, 254, 255):
            with self.subTest(n=n):
                out = os.path.join(d, "o" * (n - 3) + ".st")
                rc, _, err = run("-p", two, "--trace", trace, "--out", out)
                self.assertEqual((rc, err), (0, ""))
                self.assertEqual(read_safetensors(out)["w"].tolist(), [2.0, 3.0])
                self.assertEqual(os.listdir(d), [os.path.basename(out)])
                os.unlink(out)
        out = os.path.join(d, "o" * 256)
        rc, stdout, err = run("-p", two, "--trace", trace, "--out", out)
        self.assertEqual((rc, stdout), (2, ""))
        # (a name over 100 bytes is quoted by its last 80, after "...")
        self.assertEqual(err, f"ringsim: --out '...{out[-80:]}': its file name is 256 bytes, "
                              "more than the 255 its directory allows (see ringsim --help)\n")
        self.assertEqual(os.listdir(d), [])
        rows = subprocess.run(["sqlite3", trace, "SELECT count(*) FROM run"],
                              capture_output=True, text=True, check=True).stdout
        self.assertEqual(rows, "4\n")

    def test_overflow_named(self):
        """A sum that overflows the dtype's range (finite inputs whose mean
        is in range) fails the check, and the message says so: overflowed
        to inf, in which param and at which element, how many, and, for a
        post-divided average, that --average pre divides first (which then
        passes). It said only 'outside the error bound (worst error/bound
        inf)'."""
        for dtype, big in (("f16", 40000), ("f32", 2e38)):
            grads = [{"a": [1, 2], "b": [big, 1, -big]} for _ in range(3)]
            model = self.write(f"{dtype}.json", json.dumps({
                "name": "of", "grads": grads,
                "params": [{"name": "a", "shape": [2], "dtype": dtype},
                           {"name": "b", "shape": [3], "dtype": dtype}]}))
            with self.subTest(dtype=dtype):
                rc, out, err = run("-p", model, "--no-trace")
                self.assertEqual(rc, 1, err)
                self.assertEqual(err, f"ringsim: 2 element(s) outside the error bound (worst "
                                 f"error/bound inf): the sum overflowed to inf in {dtype}, at "
                                 f"2 element(s), the first \"b\"[0] (element 2); --average "
                                 f"pre divides each gradient by the worker count before the "
                                 f"sum\n")
                rc, out, err = run("-p", model, "--no-trace", "--average", "pre")
                self.assertEqual((rc, err), (0, ""))
                rc, out, err = run("-p", model, "--no-trace", "--op", "max")
                self.assertEqual((rc, err), (0, ""))
                # the exact sum is out of range too: an overflow all the same
                rc, out, err = run("-p", model, "--no-trace", "--op", "sum")
                self.assertEqual(rc, 1, err)
                self.assertIn("  b: [inf, 3, -inf]\n", out)
                self.assertTrue(err.endswith(f": the sum overflowed to inf in {dtype}, at 2 "
                                             f"element(s), the first \"b\"[0] (element 2)\n"),
                                err)
        # a sum whose exact value is out of range is inf, and correct; one
        # whose partial sums overflow first is not
        grads = [{"b": [40000]}, {"b": [40000]}, {"b": [-40000]}]
        model = self.write("partial.json", json.dumps({
            "name": "of", "grads": grads,
            "params": [{"name": "b", "shape": [1], "dtype": "f16"}]}))
        rc, out, err = run("-p", model, "--no-trace", "--op", "sum", "--algo", "ring")
        self.assertEqual(rc, 1, err)  # 40000 + 40000 first: inf in f16
        self.assertEqual(err, "ringsim: 1 element(s) outside the error bound (worst error/"
                         "bound inf): the sum overflowed to inf in f16, at 1 element(s), "
                         "the first \"b\"[0] (element 0)\n")
        rc, out, err = run("-p", model, "--no-trace", "--op", "sum", "--algo", "linear")
        self.assertEqual((rc, err), (0, ""))  # 40000 - 40000 first: in range
        # an f64 product beyond double's range: the reference is inf too,
        # and the result inf (it passed as exact); its bound is Inf in the
        # trace, where the run failed to insert it (NOT NULL constraint)
        model = self.write("prod.json", json.dumps({
            "name": "p", "grads": [{"x": [1e300, 2]} for _ in range(3)],
            "params": [{"name": "x", "shape": [2], "dtype": "f64"}]}))
        trace = self.path("prod.db")
        rc, out, err = run("-p", model, "--op", "prod", "--trace", trace)
        self.assertEqual((rc, err), (1, "ringsim: 1 element(s) outside the error bound (worst "
                                        "error/bound inf): the product overflowed to inf in f64, "
                                        "at 1 element(s), the first \"x\"[0] (element 0)\n"))
        rows = subprocess.run(["sqlite3", trace, "SELECT r.status, x.bound, x.wrong FROM run r "
                               "JOIN result x USING (run_id)"],
                              capture_output=True, text=True, check=True).stdout
        self.assertEqual(rows, "check_failed|Inf|1\n")

    def test_header_says_what_runs(self):
        """The report's head says how an average divides ("avg, pre",
        "avg, pre-mul"), and --like ddp-gloo says it is DDP, pre-mul and
        DDP's bucket layout, with the buckets' count and caps (it said only
        "gloo-ring all-reduce (avg)")."""
        model = os.path.join(EXAMPLES, "model.json")
        for args, head in (([], "ring all-reduce (avg)"),
                           (["--average", "pre"], "ring all-reduce (avg, pre)"),
                           (["--average", "pre-mul", "--algo", "gloo-ring"],
                            "gloo-ring all-reduce (avg, pre-mul)"),
                           (["--op", "sum"], "ring all-reduce (sum)")):
            with self.subTest(args=args):
                rc, out, err = run("-p", model, "-w", 3, "--no-trace", *args)
                self.assertEqual(rc, 0, err)
                first, second = out.splitlines()[:2]
                self.assertEqual(first, f'ringsim 0.2.0: {head} of model "mlp-784-256-10" '
                                        f'on 3 workers')
                self.assertFalse(second.startswith("  like"))
        # (three params of 1 MiB: several buckets at a 1 MiB cap, at a
        # thousandth of ResNet-18's bytes, which a sanitized run pays for)
        big = os.path.join(EXAMPLES, "step_three.json")
        for model, extra, buckets in (
                (model, [], "1 bucket (cap 25.00 MiB, first 1.00 MiB)"),
                (big, ["--bucket-mb", 1, "--json"], None)):
            if buckets is None:  # the count as the JSON report gives it
                rc, out, err = run("-p", model, "-w", 3, "--no-trace", "--like", "ddp-gloo",
                                   *extra)
                self.assertEqual(rc, 0, err)
                n = len(json.loads(out)["buckets"])
                self.assertGreater(n, 1)
                buckets = f"{n} buckets (cap 1.00 MiB, first 1.00 MiB)"
                extra = extra[:-1]
            with self.subTest(extra=extra):
                rc, out, err = run("-p", model, "-w", 3, "--no-trace", "--like", "ddp-gloo", *extra)
                self.assertEqual(rc, 0, err)
                self.assertEqual(out.splitlines()[:3], [
                    'ringsim 0.2.0: gloo-ring all-reduce (avg, pre-mul) of model '
                    f'"{"mlp-784-256-10" if model != big else "step-three"}" on 3 workers',
                    "  like       PyTorch 1.13 DDP on gloo (--like ddp-gloo): gloo's ring, "
                    "pre-mul (each gradient times 1/W in its dtype, then the sum)",
                    f"             {buckets}, each laid out as DDP's rebuilt buckets "
                    "(params last to first)"])

    def test_help_and_version(self):
        rc, out, _ = run("--help")
        self.assertEqual(rc, 0)
        for word in ("--params", "--workers", "--init", "--seed", "--grads", "--out", "--op",
                     "--segment-bytes", "--slots", "--timeout", "--print", "--json",
                     "exit status: 0 all good; 1 the check failed; 2 bad usage"):
            self.assertIn(word, out)
        rc, out, _ = run("--version")
        self.assertEqual(rc, 0)
        self.assertRegex(out, r"^ringsim \d+\.\d+\.\d+\n$")

    # cli-9: the shipped examples parse with the documented sizes, and
    # ResNet-18's shapes run on 2 workers (in a sanitized build, where
    # its 47 MB a worker took 22 s under TSan, ringsim model reads it:
    # the runs of model.json's shapes take the same paths).
    def test_examples(self):
        sizes = {"model.json": 203530, "mlp.json": 26, "resnet18.json": 11689512,
                 "two_workers.json": 2}
        for name, elems in sizes.items():
            workers = 2
            if name == "resnet18.json" and os.environ.get("RINGSIM_SANITIZED"):
                rc, out, err = run("model", "-w", workers, "-p", os.path.join(EXAMPLES, name),
                                   "--net", "latency=1us,bandwidth=1GB/s", "--json")
                self.assertEqual(rc, 0, f"{name}: {err}")
                self.assertEqual(json.loads(out)["elems"], elems, name)
                continue
            rc, out, err = run("-w", workers, "-p", os.path.join(EXAMPLES, name), "--json")
            self.assertEqual(rc, 0, f"{name}: {err}")
            r = json.loads(out)
            self.assertEqual(r["elems"], elems, name)
            self.assertIs(r["identical"], True)
        with open(os.path.join(EXAMPLES, "gpt2_small.json")) as f:
            gpt2 = json.load(f)
        total = 0
        for p in gpt2["params"]:
            n = 1
            for d in p["shape"]:
                n *= d
            total += n
        self.assertEqual(total, 124439808)


    # cli-28 (one option path): one mistake gives one message in every mode
    # that takes the option: run, model, bench and diff (on one side's
    # value, A,B split, too) print the same line after the mode's name,
    # and point at the mode's own --help; and however the option was
    # written, the message names it by its long name.
    def mode_error(self, mode, args):
        """The usage error `ringsim MODE ... ARGS` prints, without its
        "ringsim: MODE: " start and "(see ...)" end."""
        model = self.write("one.json", '{"params": [{"name": "g", "shape": [4]}]}')
        before = {"run": ["-p", model], "model": ["model", "-p", model],
                  "bench": ["bench"], "diff": ["diff", "-p", model, "--average", "post,pre"]}
        rc, out, err = run(*before[mode], *args, cwd=self.dir)
        self.assertEqual((rc, out, err.count("\n")), (2, "", 1), f"{mode} {args}: {err!r}")
        start = "ringsim: " if mode == "run" else f"ringsim: {mode}: "
        help_hint = " (see ringsim --help)\n" if mode == "run" else f" (see ringsim {mode} --help)\n"
        self.assertTrue(err.startswith(start) and err.endswith(help_hint), err)
        return err[len(start):-len(help_hint)]

    def test_one_message_per_mistake(self):
        every = ("run", "model", "bench", "diff")
        cases = [  # (the modes that take the option, args, the message)
            (every, ["--segment-bytes", "2"],
             "--segment-bytes '2': expected a size from 4 to 1G (K, M, G suffixes)"),
            (every, ["--segment-bytes", " 4K"],
             "--segment-bytes ' 4K': expected a size from 4 to 1G (K, M, G suffixes)"),
            (every, ["--bogus"], "unknown option '--bogus'"),
            (every, ["-q"], "unknown option '-q'"),
            (every, ["--json=1"], "option '--json' takes no value"),
            (every, ["--segment-bytes"], "option '--segment-bytes' needs a value"),
            (every, ["extra"], "unexpected argument 'extra'"),
            (("run", "bench", "diff"), ["--slots", "0"], "--slots '0': expected an integer in 1..1024"),
            (("run", "bench", "diff"), ["--timeout", "0"], "--timeout '0': expected seconds in (0, 1e6]"),
            (("run", "bench", "diff"), ["--op", "median"],
             "--op 'median': expected sum, avg, min, max or prod"),
            (("run", "bench", "diff"), ["--loop", "ring"], "--loop 'ring': expected steps or slices"),
            (("run", "bench"), ["--transport", "tcp"], "--transport 'tcp': expected shm or mpi"),
            (("run", "model", "diff"), ["--net", "latency=1us"],
             self.mode_error("run", ["--net", "latency=1us"])),
            (("run", "model", "diff"), ["--bucket-mb", "-1"],
             "--bucket-mb '-1': expected MiB from 0 (one bucket) to 1048576"),
            (("run", "diff"), ["--seed", "x"],
             "--seed 'x': expected an integer in 0..9223372036854775807"),
            (("run", "diff"), ["--workers", "0"], "--workers '0': expected an integer in 1..4096"),
        ]
        for modes, args, message in cases:
            for mode in modes:
                with self.subTest(mode=mode, args=args):
                    self.assertEqual(self.mode_error(mode, args), message)
        # diff's A,B: each side's value is read as a run reads it
        self.assertEqual(self.mode_error("diff", ["--slots", "8,0"]),
                         "--slots '0': expected an integer in 1..1024")
        # another mode's option is named as one, in words of the mode
        for mode, what in (("run", "a run"), ("model", "the schedule alone"),
                           ("diff", "a comparison")):
            self.assertEqual(self.mode_error(mode, ["--iters", "3"]),
                             f"--iters does not apply to {what}")
        self.assertEqual(self.mode_error("bench", ["--params", "m.json"]),
                         "--params does not apply to a sweep")
        # one mistake, however written: short, long, =, abbreviated
        for args in (["-w", "0"], ["-w0"], ["--workers", "0"], ["--workers=0"], ["--work", "0"]):
            self.assertEqual(self.mode_error("run", args),
                             "--workers '0': expected an integer in 1..4096")
        for args in (["-n", "0"], ["-n0"], ["--iters=0"], ["--it", "0"]):
            self.assertEqual(self.mode_error("bench", args),
                             "--iters '0': expected an integer in 1..1000000")
        self.assertEqual(self.mode_error("run", ["--s", "1"]),
                         "option '--s' is ambiguous: --seed, --segment-bytes, --slots, --straggler")
        # -V and --version in every mode
        for mode in ([], ["model"], ["bench"], ["diff"]):
            rc, out, err = run(*mode, "-V")
            self.assertEqual((rc, err), (0, ""), mode)
            self.assertRegex(out, r"^ringsim \d+\.\d+\.\d+\n$")

    # cli-29 (one option path): --algo's names, in every mode's messages
    # and --help, are the library's algorithms, with auto and all where the
    # mode takes them; model refuses auto by name.
    def test_algorithm_names_from_the_library(self):
        def names(mode):
            message = self.mode_error(mode, ["--algo", "bogus"])
            head = "--algo 'bogus': expected "
            self.assertTrue(message.startswith(head), message)
            # (model adds NCCL's, which --like nccl takes: one list of them)
            ours, _, nccl = message[len(head):].partition(" (with --like nccl: ")
            if mode == "model":
                self.assertEqual(nccl, "ring, tree, nvls or nvlstree)")
            return re.split(r", | or ", ours)
        algos = [n for n in names("run") if n != "auto"]
        self.assertEqual(names("run"), algos + ["auto"])
        self.assertEqual(names("diff"), algos + ["auto"])
        self.assertEqual(names("bench"), algos + ["auto", "all"])
        self.assertEqual(names("model"), algos + ["all"])
        self.assertIn("gloo-ring", algos)
        self.assertIn("--algo auto chooses an algorithm per bucket of a run", self.mode_error("model", ["--algo", "auto"]))
        for mode in ([], ["model"], ["bench"]):
            rc, out, _ = run(*mode, "--help")
            self.assertEqual(rc, 0, mode)
            text = re.sub(r"\s+", " ", out.split("--algo NAME", 1)[1])
            self.assertIn(", ".join([algos[0] + " (default)"] + algos[1:]), text, mode)


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
