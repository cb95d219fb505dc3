#!/usr/bin/python3
"""`ringsim diff`, end to end, against numpy: its counts, ULPs and relative
differences match a comparison of the two sides' --out files made by two
plain runs, and the summation orders it writes out, evaluated here in the
written order from the inputs this test wrote, give each side's bits.

    test_diff.py RINGSIM [Diff.test_name ...]
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import unittest

import helpers

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import ringsim_st  # noqa: E402

RINGSIM = None

# Two params, 208 elements: enough for thousands of differing sums across
# chunks that do not divide evenly, small enough for many runs.
PARAMS = [{"name": "layer.weight", "shape": [37, 5]}, {"name": "layer.bias", "shape": [23]}]


run = helpers.run


def write_grads(pattern, rows):
    """rows[r] (flat f32, model order) as worker r's safetensors file,
    pattern with {r} replaced by r; returns pattern (tools/ringsim_st.py
    writes the format apart from ringsim's C writer)."""
    sizes = [int(np.prod(p["shape"])) for p in PARAMS]
    for r, flat in enumerate(rows):
        parts, off = {}, 0
        for p, n in zip(PARAMS, sizes):
            parts[p["name"]] = flat[off:off + n].reshape(p["shape"])
            off += n
        ringsim_st.write(pattern.replace("{r}", str(r)), parts)
    return pattern


def read_flat(path):
    """A safetensors file's params, flat in model order, as float32 (or
    float64): F32, F64 and BF16 (widened exactly)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    parts = []
    for p in PARAMS:
        t = header[p["name"]]
        b, e = t["data_offsets"]
        blob = raw[8 + n + b:8 + n + e]
        if t["dtype"] == "F32":
            parts.append(np.frombuffer(blob, "<f4"))
        elif t["dtype"] == "BF16":
            bits = np.frombuffer(blob, "<u2").astype(np.uint32) << 16
            parts.append(bits.view(np.float32))
        else:
            raise AssertionError("unexpected dtype %s" % t["dtype"])
    return np.concatenate(parts)


def bf16(x):
    """float32 values rounded to bfloat16, to nearest, ties to even (no NaN
    here), still as float32."""
    x = np.asarray(x, np.float32)
    bits = x.reshape(-1).view(np.uint32).astype(np.int64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32).reshape(x.shape)[()]


def ordered(x):
    """float32 encodings as integers in value order: neighbours differ by 1."""
    i = np.asarray(x, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(2 ** 31) - i, i)


def ulps(a, b, dtype_a, dtype_b):
    """The documented measure: same dtype, the count of its values between
    a and b; two dtypes, |a - b| over the coarser one's spacing at
    max(|a|, |b|) (bf16: 8 significand bits, smallest normal exponent -126)."""
    if dtype_a == dtype_b:
        d = np.abs(ordered(a) - ordered(b)).astype(np.float64)
        return d / (2 ** 16 if dtype_a == "bf16" else 1)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    big = np.maximum(np.abs(a64), np.abs(b64))
    _, exp = np.frexp(big)
    e = np.maximum(exp - 1, -126)
    return np.where(a64 == b64, 0.0, np.abs(a64 - b64) / np.ldexp(1.0, e - 7))


def relative(a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    big = np.maximum(np.abs(a64), np.abs(b64))
    return np.where(big == 0, 0.0, np.abs(a64 - b64) / np.where(big == 0, 1, big))


def parse(expr):
    """The written order as a tree: ("g", r), ("div", node, W) for a leaf
    divided before the sum, ("+", left, right), ("mean", left, right, W) for
    the last addition divided by W. A leaf is gR (worker R's gradient) or,
    comparing two world sizes, cR (contribution R)."""
    tokens = re.findall(r"[gc]\d+|/\d+|[()+]", expr)
    assert "".join(tokens) == expr, "unexpected text in %r" % expr
    pos = [0]

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def take():
        pos[0] += 1
        return tokens[pos[0] - 1]

    def atom():
        t = take()
        if t == "(":
            left = atom()
            assert take() == "+", expr
            right = atom()
            assert take() == ")", expr
            if peek() and peek().startswith("/"):
                return ("mean", left, right, int(take()[1:]))
            return ("+", left, right)
        assert t[0] in "gc", expr
        leaf = ("g", int(t[1:]))
        if peek() and peek().startswith("/"):
            return ("div", leaf, int(take()[1:]))
        return leaf

    node = atom()
    if peek() == "+":  # the outermost addition is written without brackets
        take()
        node = ("+", node, atom())
    assert peek() is None, "trailing text in %r" % expr
    return node


def leaves(node):
    if node[0] == "g":
        return [node[1]]
    return [w for child in node[1:] if isinstance(child, tuple) for w in leaves(child)]


def evaluate(node, g, rnd):
    """In float32, rounded by rnd (to the dtype) after each fold, as the
    written order says; a mean's sum and division are one fold."""
    f = np.float32
    if node[0] == "g":
        return g[node[1]]
    if node[0] == "div":
        return rnd(f(evaluate(node[1], g, rnd)) / f(node[2]))
    s = f(evaluate(node[1], g, rnd)) + f(evaluate(node[2], g, rnd))
    if node[0] == "mean":
        return rnd(f(s) / f(node[3]))
    return rnd(s)


class Diff(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.model = os.path.join(cls.dir, "model.json")
        with open(cls.model, "w") as f:
            json.dump({"name": "diffed", "params": PARAMS}, f)
        rng = np.random.default_rng(18)
        cls.inputs = {}
        sizes = [int(np.prod(p["shape"])) for p in PARAMS]
        for w in (3, 4, 5, 6, 8):
            flat = rng.standard_normal((w, sum(sizes))).astype(np.float32)
            cls.inputs[w] = flat
            write_grads(os.path.join(cls.dir, "w%d_{r}.safetensors" % w), flat)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def grads(self, w):
        return os.path.join(self.dir, "w%d_{r}.safetensors" % w)

    def out(self, w, side_args, name, model=None, source=None):
        path = os.path.join(self.dir, name)
        if source is None:
            source = ["--grads", self.grads(w)]
        rc, _, err = run("-p", model or self.model, "-w", w, *source, *side_args,
                         "--no-trace", "--out", path)
        self.assertEqual(rc, 0, err)
        return read_flat(path)

    def check_against_numpy(self, report, a, b, dtype_a="f32", dtype_b="f32"):
        """diff's counts, largest ULPs and relative difference, and per-param
        counts and ULPs, against numpy's comparison of the two --out files."""
        differ = a.astype(np.float64) != b.astype(np.float64)
        u = ulps(a, b, dtype_a, dtype_b)
        rel = relative(a, b)
        self.assertEqual(report["compared"], a.size)
        self.assertEqual(report["differing"], int(differ.sum()))
        self.assertEqual(report["identical"], not differ.any())
        self.assertAlmostEqual(report["max_ulps"], float(u.max()), places=9)
        self.assertAlmostEqual(report["max_rel"], float(rel.max()), places=12)
        off = 0
        for p, got in zip(PARAMS, report["params"]):
            n = int(np.prod(p["shape"]))
            self.assertEqual(got["name"], p["name"])
            self.assertEqual(got["differing"], int(differ[off:off + n].sum()), p["name"])
            self.assertAlmostEqual(got["max_ulps"], float(u[off:off + n].max()), places=9,
                                   msg=p["name"])
            off += n
        return differ, u

    def check_orders(self, report, outs, inputs, rounders):
        """Each side's written order, evaluated here from this test's inputs,
        gives that side's result at the element exactly; every worker's
        contribution appears once; the element is one with the most ULPs."""
        el = report["element"]
        self.assertIsNotNone(el)
        i = el["index"]
        for k, order in enumerate(el["orders"]):
            self.assertEqual(order["side"], k)
            tree = parse(order["expr"])
            W = len(inputs[k])
            self.assertEqual(sorted(leaves(tree)), list(range(W)), order["expr"])
            g = [rounders[k](np.float32(inputs[k][r][i])) for r in range(W)]
            self.assertEqual(order["inputs"], [float(x) for x in g])
            got = np.float32(evaluate(tree, g, rounders[k]))
            self.assertEqual(got.view(np.uint32), np.float32(outs[k][i]).view(np.uint32),
                             "side %d: %s = %r, its --out holds %r"
                             % (k, order["expr"], float(got), float(outs[k][i])))
            self.assertEqual(order["value"], float(outs[k][i]))
            # the partial values listed are the written order's own
            last = order["partials"][-1]
            self.assertEqual(last["expr"], order["expr"])
            self.assertEqual(last["value"], float(outs[k][i]))
        return i

    # diff-1: pairs of algorithms and of averaging at W = 3, 4, 5: counts,
    # ULPs, relative differences and per-param counts equal numpy's
    # comparison of two plain runs' --out files; the written orders give
    # each side's bits; the element shown is one that differs most.
    def test_counts_and_orders_match_numpy(self):
        cases = [
            (4, ["--algo", "ring"], ["--algo", "rd"], "--algo", "ring,rd"),
            (5, ["--algo", "ring"], ["--algo", "rhd"], "--algo", "ring,rhd"),
            (3, ["--algo", "tree"], ["--algo", "linear"], "--algo", "tree,linear"),
            (5, ["--algo", "rd"], ["--algo", "tree"], "--algo", "rd,tree"),
            # (at W = 4 dividing first is exact, so post and pre agree)
            (5, ["--average", "post"], ["--average", "pre"], "--average", "post,pre"),
            # auto's choice per bucket (rd, on this slow-latency network)
            (4, ["--algo", "ring"], ["--algo", "auto"], "--algo", "ring,auto",
             "--net", "latency=1ms,bandwidth=100GB/s"),
        ]
        for w, side_a, side_b, option, values, *common in cases:
            with self.subTest(w=w, option=option, values=values):
                rc, out, err = run("diff", "-p", self.model, "-w", w, "--grads",
                                   self.grads(w), option, values, *common, "--json")
                self.assertEqual(rc, 0, err)
                report = json.loads(out)
                a = self.out(w, side_a + common, "a.safetensors")
                b = self.out(w, side_b + common, "b.safetensors")
                differ, u = self.check_against_numpy(report, a, b)
                self.assertTrue(differ.any(), "these pairs sum in other orders")
                if side_a == ["--algo", "ring"]:
                    # one bucket (208 elements): the ring's W chunks, the
                    # first n mod W of them one element longer
                    sizes = [a.size // w + (c < a.size % w) for c in range(w)]
                    bounds = np.concatenate([[0], np.cumsum(sizes)])
                    want = [int(differ[bounds[c]:bounds[c + 1]].sum()) for c in range(w)]
                    ring = [r for r in report["regions"] if r["side"] == 0]
                    self.assertEqual(len(ring), 1, report["regions"])
                    self.assertEqual(ring[0]["region"], "chunk")
                    self.assertEqual(ring[0]["differing"], want)
                i = self.check_orders(report, (a, b), (self.inputs[w], self.inputs[w]),
                                      (np.float32, np.float32))
                self.assertEqual(u[i], u.max())
                self.assertEqual(report["element"]["a"], float(a[i]))
                self.assertEqual(report["element"]["b"], float(b[i]))

    # diff-2: f32 against bf16 on the same inline gradients (each side rounds
    # them to its dtype): ULPs of bf16 as documented, and the bf16 order
    # rounds after every fold, as the run does.
    def test_f32_against_bf16(self):
        w = 4
        flat = self.inputs[w]
        sizes = [int(np.prod(p["shape"])) for p in PARAMS]
        grads = []
        for r in range(w):
            off, entry = 0, {}
            for p, n in zip(PARAMS, sizes):
                entry[p["name"]] = [float(x) for x in flat[r, off:off + n]]
                off += n
            grads.append(entry)
        models = {}
        for dtype in ("f32", "bf16"):
            models[dtype] = os.path.join(self.dir, "inline_%s.json" % dtype)
            with open(models[dtype], "w") as f:
                json.dump({"name": "diffed",
                           "params": [dict(p, dtype=dtype) for p in PARAMS],
                           "grads": grads}, f)
        rc, out, err = run("diff", "-p", models["f32"], "--algo", "ring", "--dtype",
                           "f32,bf16", "--json")
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        self.assertEqual(report["ulps_of"], "bf16")
        a = self.out(w, [], "a16.safetensors", models["f32"], [])
        b = self.out(w, [], "b16.safetensors", models["bf16"], [])
        differ, u = self.check_against_numpy(report, a, b, "f32", "bf16")
        self.assertTrue(differ.any())
        i = self.check_orders(report, (a, b), (flat, flat), (np.float32, bf16))
        self.assertEqual(u[i], u.max())

    # diff-8: each difference against its element's scale, the check's
    # (the mean of |g| over the workers for avg, the sum for sum), beside
    # ULPs, and the differing elements whose ULPs mean little counted: the
    # two results differ in sign, or either is under 1/1024 of the scale.
    # Numbers against numpy's of the two --out files and this test's
    # inputs, in JSON and in the text report.
    def test_scaled_differences_and_caveats(self):
        w = 4
        # the last worker's first 64 elements cancel the others' sum to
        # within its rounding: results near zero, of either sign by order
        g32 = self.inputs[w].copy()
        g32[w - 1, :64] = -g32[:w - 1, :64].astype(np.float64).sum(axis=0)
        grads = write_grads(os.path.join(self.dir, "cancel_{r}.safetensors"), g32)
        g = g32.astype(np.float64)
        seen = {"sign_change": 0, "near_zero": 0}
        for op, side_a, side_b, option, values in (
                ("avg", ["--algo", "ring"], ["--algo", "rd"], "--algo", "ring,rd"),
                ("sum", ["--algo", "ring"], ["--algo", "tree"], "--algo", "ring,tree"),
                ("avg", ["--hook", "allreduce"], ["--hook", "fp16"], "--hook", "allreduce,fp16")):
            with self.subTest(op=op, values=values):
                common = ["--op", op] if "--hook" not in side_a else []
                rc, out, err = run("diff", "-p", self.model, "-w", w, "--grads", grads,
                                   option, values, *common, "--json")
                self.assertEqual(rc, 0, err)
                report = json.loads(out)
                source = ["--grads", grads]
                a = self.out(w, side_a + common, "sa.safetensors", source=source).astype(np.float64)
                b = self.out(w, side_b + common, "sb.safetensors", source=source).astype(np.float64)
                scale = np.abs(g).sum(axis=0) / (w if op == "avg" else 1)
                differ = a != b
                scaled = np.where(differ, np.abs(a - b) / scale, 0)
                sign = differ & (((a < 0) & (b > 0)) | ((a > 0) & (b < 0)))
                near = differ & ~sign & (np.minimum(np.abs(a), np.abs(b)) < scale / 1024)
                self.assertEqual(report["near_zero_below"], 1 / 1024)
                self.assertEqual(report["ulps_caveats"],
                                 {"sign_change": int(sign.sum()), "near_zero": int(near.sum())})
                # (the scale is kept as a float32: 7 digits)
                self.assertAlmostEqual(report["max_scaled"] / scaled.max(), 1, places=6)
                off = 0
                for p, got in zip(PARAMS, report["params"]):
                    n = int(np.prod(p["shape"]))
                    self.assertAlmostEqual(got["max_scaled"] / scaled[off:off + n].max(), 1,
                                           places=6, msg=p["name"])
                    off += n
                el = report["element"]
                i = el["index"]
                self.assertAlmostEqual(el["scale"] / scale[i], 1, places=6)
                self.assertAlmostEqual(el["scaled"] / scaled[i], 1, places=6)
                want = "sign change" if sign[i] else "near zero" if near[i] else None
                self.assertEqual(el.get("ulps_caveat"), want, el)
                for key in seen:
                    seen[key] += report["ulps_caveats"][key]
                rc, text, err = run("diff", "-p", self.model, "-w", w, "--grads", grads,
                                    option, values, *common)
                self.assertEqual(rc, 0, err)
                self.assertIn("scaled     largest %.3g of the scale (|a - b| / the %s of |g| over "
                              "the workers)" % (report["max_scaled"],
                                                "mean" if op == "avg" else "sum"), text)
                caveats = int(sign.sum() + near.sum())
                if caveats:
                    self.assertIn("caveat     ULPs mean little for %d of the %d: %d change sign, "
                                  "%d near zero (under 1/1024 of the scale)"
                                  % (caveats, int(differ.sum()), int(sign.sum()), int(near.sum())),
                                  text)
                else:
                    self.assertNotIn("caveat", text)
                self.assertRegex(text, r"differs most: [\d.]+ ULPs, %s of its scale "
                                 % re.escape("%.3g" % el["scaled"]))
        # these inputs hold both kinds
        self.assertGreater(seen["sign_change"], 0, seen)
        self.assertGreater(seen["near_zero"], 0, seen)

    # diff-3: identical configurations (and options that never change a
    # sum) report 0 differing and no element; --fail-on-diff exits 1 only
    # when some element differs.
    def test_identical_reports_zero(self):
        w = 4
        for option, values in (("--algo", "ring,ring"), ("--segment-bytes", "8,1K"),
                               ("--loop", "steps,slices"), ("--bucket-mb", "0,25")):
            with self.subTest(option=option):
                rc, out, err = run("diff", "-p", self.model, "-w", w, "--grads",
                                   self.grads(w), option, values, "--json",
                                   "--fail-on-diff")
                self.assertEqual(rc, 0, err)
                report = json.loads(out)
                self.assertEqual(report["differing"], 0)
                self.assertTrue(report["identical"])
                self.assertIsNone(report["element"])
        rc, out, err = run("diff", "-p", self.model, "-w", w, "--grads", self.grads(w),
                           "--algo", "ring,ring")
        self.assertEqual(rc, 0, err)
        self.assertIn("differing  0 (0.00%): identical, bit for bit\n", out)
        rc, out, err = run("diff", "-p", self.model, "-w", w, "--grads", self.grads(w),
                           "--algo", "ring,rd", "--fail-on-diff")
        self.assertEqual(rc, 1, err)
        self.assertRegex(out, r"differing  [1-9]\d* \(")

    # diff-4: bad usage exits 2 with one line naming the input and what is
    # wrong, before anything runs (nothing on stdout).
    def test_bad_usage(self):
        m = self.model
        cases = [
            (["-p", m, "-w", "4"], "diff: no option has two values"),
            (["-p", m, "--algo", "ring,rd", "--seed", "1,2"],
             "diff: --seed 1,2: the two sides would not get the same gradients"),
            (["-p", m, "--algo", "ring,rd", "--init", "normal,exact"],
             "diff: --init normal,exact: the two sides would not get the same gradients"),
            (["-p", m, "--op", "sum,avg"], "diff: --op sum,avg: the two sides would "
                                           "compute two different reductions"),
            (["-p", m, "--algo", "ring,"],
             "diff: --algo 'ring,': expected two to 8 values A,B,..."),
            (["-p", m, "--algo", "ring,,rd"],
             "diff: --algo 'ring,,rd': expected two to 8 values A,B,..."),
            (["-p", m, "--algo", "ring,rd,rhd,tree,linear,gloo-ring,ring,rd,rhd"],
             "diff: --algo 'ring,rd,rhd,tree,linear,gloo-ring,ring,rd,rhd': expected two "
             "to 8 values A,B,..."),
            (["-p", m, "--algo", "ring,rd,tree", "--dtype", "f32,f16"],
             "diff: --dtype f32,f16: 2 values, where --algo gave 3: each option given so "
             "gives one value per side"),
            (["-p", m, "--algo", "ring,rd,tree", "--seed", "1,1,2"],
             "diff: --seed 1,1,2: the two sides would not get the same gradients"),
            (["-p", m, "--algo", "ring,bogus"], "--algo 'bogus': expected ring"),
            (["-p", m, "--dtype", "f32,f8"], "diff: --dtype 'f8': expected f32, f16, bf16"),
            (["-p", m, "--dtype", "f32,bf16", "--grads", self.grads(4), "-w", "4"],
             "diff: --dtype A,B with --grads: a safetensors file holds one dtype"),
            (["-p", m, "--algo", "ring,rd", "--out", "x.safetensors"],
             "diff: --out does not apply to a comparison"),
            (["-p", m, "--algo", "ring,rd", "--explain"],
             "diff: --explain does not apply to a comparison"),
            (["-p", os.path.join(self.dir, "missing.json"), "--algo", "ring,rd"],
             "missing.json"),
            (["--algo", "ring,rd"], "--params MODEL.json is required"),
        ]
        self.assert_refused(cases)

    def assert_refused(self, cases):
        """Each `ringsim diff ARGS` exits 2 with one line naming MESSAGE."""
        for args, message in cases:
            with self.subTest(args=args):
                rc, out, err = run("diff", *args)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "")
                self.assertEqual(err.count("\n"), 1, err)
                self.assertTrue(err.startswith("ringsim: "), err)
                self.assertIn(message, err)

    def local_folds(self, contribs, workers, op):
        """Each of the smaller world's workers' local fold of its L/S
        contiguous contributions, in float32, left to right; for avg the
        last addition divided by L/S (their mean)."""
        f = np.float32
        k = len(contribs) // workers
        folds = []
        for r in range(workers):
            acc = contribs[r * k]
            for j in range(1, k):
                acc = (acc + contribs[r * k + j]).astype(f)
                if op == "avg" and j == k - 1:
                    acc = (acc / f(k)).astype(f)
            folds.append(acc)
        return folds

    def grads_files(self, folds, name):
        """folds[r] (flat, model order) written as worker r's safetensors."""
        return write_grads(os.path.join(self.dir, name + "_{r}.safetensors"), folds)

    # diff-5: two world sizes on one global batch (--workers A,B, one
    # dividing the other), sum and avg: diff's counts, ULPs and per-chunk
    # counts equal numpy's comparison of a plain L-worker run's --out with
    # a plain S-worker run's on the local folds numpy made of the L
    # contributions; each written order, over c0..c{L-1}, gives its side's
    # bits.
    def test_world_sizes_match_numpy(self):
        cases = [(2, 4, "ring"), (4, 8, "ring"), (8, 4, "ring"), (3, 6, "linear"), (3, 6, "tree")]
        for wa, wb, algo in cases:
            for op in ("sum", "avg"):
                with self.subTest(workers=(wa, wb), algo=algo, op=op):
                    big, small = max(wa, wb), min(wa, wb)
                    contribs = self.inputs[big]
                    rc, out, err = run("diff", "-p", self.model, "-w", "%d,%d" % (wa, wb),
                                       "--grads", self.grads(big), "--algo", algo,
                                       "--op", op, "--json")
                    self.assertEqual(rc, 0, err)
                    report = json.loads(out)
                    self.assertEqual(report["contributions"], big)
                    self.assertEqual([sd["workers"] for sd in report["sides"]], [wa, wb])
                    common = ["--algo", algo, "--op", op]
                    large = self.out(big, common, "large.safetensors")
                    folds = self.local_folds(list(contribs), small, op)
                    local = self.grads_files(folds, "local%d" % small)
                    smaller = self.out(small, common, "small.safetensors",
                                       source=["--grads", local])
                    outs = (smaller, large) if wa < wb else (large, smaller)
                    differ, u = self.check_against_numpy(report, *outs)
                    self.assertTrue(differ.any(), "two groupings of one sum")
                    for k, w in enumerate((wa, wb)):
                        if algo != "ring":
                            continue
                        sizes = [differ.size // w + (c < differ.size % w) for c in range(w)]
                        bounds = np.concatenate([[0], np.cumsum(sizes)])
                        want = [int(differ[bounds[c]:bounds[c + 1]].sum()) for c in range(w)]
                        got = [r["differing"] for r in report["regions"] if r["side"] == k]
                        self.assertEqual(got, [want])
                    el = report["element"]
                    i = el["index"]
                    self.assertEqual(u[i], u.max())
                    for k, order in enumerate(el["orders"]):
                        w = (wa, wb)[k]
                        self.assertEqual(order.get("local"), big // w)
                        tree = parse(order["expr"])
                        self.assertEqual(sorted(leaves(tree)), list(range(big)),
                                         order["expr"])
                        c = [np.float32(contribs[r][i]) for r in range(big)]
                        self.assertEqual(order["inputs"], [float(x) for x in c])
                        got = np.float32(evaluate(tree, c, np.float32))
                        self.assertEqual(got.view(np.uint32),
                                         np.float32(outs[k][i]).view(np.uint32),
                                         "side %d: %s = %r, its --out holds %r"
                                         % (k, order["expr"], float(got),
                                            float(outs[k][i])))
                        self.assertEqual(order["partials"][-1]["expr"], order["expr"])
                        self.assertEqual(order["partials"][-1]["value"], float(outs[k][i]))
                        if w == small and big // w > 1:
                            # the local folds are listed with their values
                            values = {p["expr"]: p["value"] for p in order["partials"]}
                            for r in range(small):
                                text = "c%d" % (r * (big // small))
                                for j in range(1, big // small):
                                    nxt = r * (big // small) + j
                                    if op == "avg" and j == big // small - 1:
                                        text = "(%s+c%d)/%d" % (text, nxt, big // small)
                                    else:
                                        text = "(%s+c%d)" % (text, nxt)
                                top = text[1:-1] if text.endswith(")") else text
                                self.assertIn(top if top in values else text, values)
                                self.assertEqual(values.get(top, values.get(text)),
                                                 float(folds[r][i]), text)

    # diff-6: two world sizes refused (exit 2, one line, before anything
    # runs) when neither divides the other, or when the grads given are not
    # the larger world's L contributions.
    # diff-sizes-inline: with one world size taken from a model's inline
    # grads (5 workers, no --workers), --json's contributions is that W
    def test_inline_contributions(self):
        inline = os.path.join(self.dir, "inline5.json")
        with open(inline, "w") as f:
            json.dump({"name": "x", "params": [{"name": "w", "shape": [7]}],
                       "grads": [{"w": [w + i / 7 for i in range(7)]} for w in range(5)]}, f)
        p = subprocess.run([RINGSIM, "diff", "-p", inline, "--algo", "ring,rd", "--json"],
                           capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        report = json.loads(p.stdout)
        self.assertEqual([s["workers"] for s in report["sides"]], [5, 5])
        self.assertEqual(report["contributions"], 5)

    def test_world_sizes_bad_usage(self):
        m = self.model
        inline = os.path.join(self.dir, "inline4.json")
        with open(inline, "w") as f:
            json.dump({"name": "x", "params": [{"name": "w", "shape": [2]}],
                       "grads": [{"w": [1, 2]}, {"w": [3, 4]}, {"w": [5, 6]},
                                 {"w": [7, 8]}]}, f)
        cases = [
            (["-p", m, "-w", "5,3"], "diff: --workers 5,3: neither world size divides "
                                     "the other"),
            (["-p", m, "-w", "4,6", "--algo", "ring,rd"],
             "diff: --workers 4,6: neither world size divides the other"),
            (["-p", m, "-w", "4,8", "--grads", self.grads(4)],
             "diff: --grads %s: no file for contribution 4" % self.grads(4)),
            (["-p", inline, "-w", "2,8"],
             "grads has 4 entries but --workers 2,8 needs 8"),
            (["-p", inline, "-w", "1,2"],
             "grads has 4 entries but --workers 1,2 needs 2"),
            # one topology, one W: side B's 16 named, not side A blamed
            (["-p", m, "-w", "8,16", "--topo", "dgx-h100"],
             "diff: --workers 8,16 with --topo: its 1 node of 8 GPUs are 8 workers"),
            # a list: each world size divides the largest
            (["-p", m, "-w", "2,3,8"],
             "diff: --workers 2,3,8: 3 does not divide the largest, 8, so its workers"),
            (["-p", inline, "-w", "1,2,8"],
             "grads has 4 entries but --workers 1,2,8 needs 8"),
        ]
        self.assert_refused(cases)

    # diff-7: more values than two compare each side with the first, on
    # the same gradients: each line (and each --json comparison) is the
    # comparison of A with that side alone, made with two values on the
    # same contributions; world sizes share the largest's.
    def test_lists(self):
        m, g = self.model, self.grads(4)
        algos = ["ring", "rd", "tree", "linear"]
        rc, out, err = run("diff", "-p", m, "-w", 4, "--grads", g, "--algo", ",".join(algos),
                           "--json")
        self.assertEqual(rc, 0, err)
        each = json.loads(out)
        self.assertEqual(each["reference"]["label"], "A: --algo ring")
        self.assertEqual(each["contributions"], 4)
        self.assertEqual(len(each["comparisons"]), 3)
        for k, (algo, got) in enumerate(zip(algos[1:], each["comparisons"])):
            rc, out, err = run("diff", "-p", m, "-w", 4, "--grads", g, "--algo", f"ring,{algo}",
                               "--json")
            self.assertEqual(rc, 0, err)
            pair = json.loads(out)
            self.assertEqual(got["sides"][1]["label"], f"{'BCD'[k]}: --algo {algo}")
            got["sides"][1]["label"] = pair["sides"][1]["label"]
            self.assertEqual(got, pair, algo)
            self.assertGreater(got["differing"], 0, algo)
        # the text: the head, A's line, a line per comparison with its
        # counts, as the pair's report gives them
        rc, out, err = run("diff", "-p", m, "-w", 4, "--grads", g, "--algo", "ring,rd,tree",
                           "--fail-on-diff")
        self.assertEqual(rc, 1, err)
        lines = out.splitlines()
        self.assertEqual(lines[:2], [
            "diff: diffed, 4 workers, avg; B and C each against A, on the same gradients",
            "  A: --algo ring  (ring, f32)"])
        self.assertEqual(len(lines), 4, out)
        pair = each["comparisons"][0]
        self.assertRegex(lines[2], r"^  B: --algo rd  \(rd, f32\): %d of %d differ \(" % (
            pair["differing"], pair["compared"]))
        self.assertIn(f", at {pair['element']['param']}[", lines[2])
        # world sizes: one global batch of the largest's 8 contributions;
        # A with the largest is the pair 2,8; A with 4 folds 2 a worker
        rc, out, err = run("diff", "-p", m, "-w", "2,4,8", "--grads", self.grads(8), "--json")
        self.assertEqual(rc, 0, err)
        each = json.loads(out)
        self.assertEqual(each["contributions"], 8)
        self.assertEqual([c["sides"][1]["workers"] for c in each["comparisons"]], [4, 8])
        rc, out, err = run("diff", "-p", m, "-w", "2,8", "--grads", self.grads(8), "--json")
        self.assertEqual(rc, 0, err)
        pair = json.loads(out)
        last = each["comparisons"][1]
        last["sides"][1]["label"] = pair["sides"][1]["label"]
        self.assertEqual(last, pair)
        rc, out, err = run("diff", "-p", m, "-w", "2,4,8", "--init", "exact")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines(), [
            "diff: diffed, 8 contributions on 2, 4 and 8 workers, avg; B and C each against "
            "A, on the same gradients",
            "  A: --workers 2  (ring, f32)",
            "  B: --workers 4  (ring, f32): identical, bit for bit",
            "  C: --workers 8  (ring, f32): identical, bit for bit"])

    # diff-8: on NCCL's channels (two nodes of 4 GPUs with an NVLink switch
    # and 4 NICs: 16 channels, each on its own ring order) an element is
    # in one channel's part, which its channel's ring (or tree) sums: the
    # written order, evaluated here, gives each side's bits, and the
    # report names the channel (channel 1's ring is 1 2 3 0 4 7 6 5: the
    # whole bucket's ring 0..7 wrote another order and another value).
    def test_orders_follow_channels(self):
        model = os.path.join(self.dir, "channels.json")
        with open(model, "w") as f:
            json.dump({"name": "channels", "params": [{"name": "w", "shape": [20000]}]}, f)
        topo = ("nodes=2,gpus=4,nics=4,intra=0.6us/370.8GB/s,nic=2.7us/400Gbps,"
                "cc=90,switch=nvls")
        args = ("diff", "-p", model, "-w", 8, "--topo", topo, "--algo", "ring,tree")
        rc, out, err = run(*args, "--json")
        self.assertEqual(rc, 0, err)
        el = json.loads(out)["element"]
        # NCCL's cut: whole cells of 16 KiB, 4096 floats a channel
        channel = el["index"] // 4096
        for k, order in enumerate(el["orders"]):
            g = [np.float32(x) for x in order["inputs"]]
            got = np.float32(evaluate(parse(order["expr"]), g, np.float32))
            want = np.float32(el["ab"[k]])
            self.assertEqual(got.view(np.uint32), want.view(np.uint32),
                             "side %d: %s = %r, the run's result %r"
                             % (k, order["expr"], float(got), float(want)))
            self.assertEqual(order["value"], el["ab"[k]])
            self.assertEqual(order.get("channel"), channel, order)
        # the ring's: each chunk of a channel's part is summed place after
        # place round that channel's ring, from where it starts
        self.assertEqual(el["index"], 6951)
        self.assertEqual(el["orders"][0]["expr"],
                         "(((((((g7+g6)+g5)+g1)+g2)+g3)+g0)+g4)/8")
        rc, out, err = run(*args, "--quiet")
        self.assertEqual(rc, 0, err)
        self.assertIn("  side A (ring, chunk 5 of channel 1's part of bucket 0): "
                      "(((((((g7+g6)+g5)+g1)+g2)+g3)+g0)+g4)/8 = ", out)
        self.assertIn("  side B (tree, channel 1's part of bucket 0): ", out)

    # diff-channels-regions: on NCCL's channels the per-region counts
    # follow the channels' cut, not W chunks of the whole bucket: the
    # ring's chunk c is chunk c of every channel's part (each part cut
    # into W chunks, as the channel's ring moves it), and a channel's tree
    # carries its part whole, counted per channel; both against numpy's
    # comparison of two plain runs' --out files on the same inputs.
    def test_regions_follow_channels(self):
        W, n = 8, 20000
        model = os.path.join(self.dir, "channels_regions.json")
        with open(model, "w") as f:
            json.dump({"name": "channels", "params": [{"name": "w", "shape": [n]}]}, f)
        rng = np.random.default_rng(7)
        grads = os.path.join(self.dir, "chreg_{r}.safetensors")
        for r in range(W):
            ringsim_st.write(grads.replace("{r}", str(r)),
                             {"w": rng.standard_normal(n).astype(np.float32)})
        topo = ("nodes=2,gpus=4,nics=4,intra=0.6us/370.8GB/s,nic=2.7us/400Gbps,"
                "cc=90,switch=nvls")
        common = ("-p", model, "-w", W, "--grads", grads, "--topo", topo)
        rc, out, err = run("diff", *common, "--algo", "ring,tree", "--json")
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        outs = []
        for algo in ("ring", "tree"):
            path = os.path.join(self.dir, f"chreg_{algo}.safetensors")
            rc, _, err = run(*common, "--algo", algo, "--no-trace", "--out", path)
            self.assertEqual(rc, 0, err)
            outs.append(np.asarray(ringsim_st.read(path)["w"], dtype=np.float32).ravel())
        differ = outs[0] != outs[1]
        self.assertEqual(report["differing"], int(differ.sum()))
        # NCCL's cut: whole cells of 16 KiB, 4096 floats a channel, the
        # last the rest: 5 busy channels
        parts = [(o, min(o + 4096, n)) for o in range(0, n, 4096)]
        chunks = [0] * W
        for lo, hi in parts:
            m = hi - lo
            bounds = [lo + c * (m // W) + min(c, m % W) for c in range(W)] + [hi]
            for c in range(W):
                chunks[c] += int(differ[bounds[c]:bounds[c + 1]].sum())
        per_channel = [int(differ[lo:hi].sum()) for lo, hi in parts]
        self.assertEqual(report["regions"],
                         [{"side": 0, "region": "chunk", "differing": chunks},
                          {"side": 1, "region": "channel", "differing": per_channel}])
        # (not the whole bucket's W chunks, which these runs do not move)
        whole = [int(differ[c * (n // W):(c + 1) * (n // W)].sum()) for c in range(W)]
        self.assertNotEqual(chunks, whole)
        rc, out, err = run("diff", *common, "--algo", "ring,tree", "--quiet")
        self.assertEqual(rc, 0, err)
        self.assertIn("\nper chunk of side A's channels' parts (ring): " +
                      ", ".join(f"{c}: {k}" for c, k in enumerate(chunks)) + "\n", out)
        self.assertIn("\nper channel of side B's buckets (tree): " +
                      ", ".join(f"{c}: {k}" for c, k in enumerate(per_channel)) + "\n", out)


def main():
    helpers.main(globals(), "RINGSIM")


if __name__ == "__main__":
    main()
