#!/usr/bin/python3
"""--hook on the command line: each hook's arithmetic against the same
arithmetic done here by hand with numpy on small inputs (W = 2 and 3;
the ring's order of additions, docs/algorithms.md), float16's overflow
and underflow as the report counts them, and what is refused (exit 2,
one line on stderr naming the input); model.json's "buckets" (Buckets).
PowerSgd: --hook powersgd:rank=R against PowerSGD written here from the
hook's definition in float64 from the same Q, the hook's split and sizes,
a rank-1 mean reproduced, and its refusals.
Real DDP with the hooks registered is tests/test_gloo.py's Ddp.test_hooks,
a recorded job's replay its Ddp.test_record, PowerSGD's Ddp.test_powersgd.

    test_hooks.py RINGSIM [Hooks.test_name | Buckets.test_name |
                           PowerSgd.test_name ...]
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

import helpers

import numpy as np

RINGSIM = None
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tools"))
import ringsim_st  # noqa: E402


run = helpers.run


def bf16(x):
    """float32 values rounded to bfloat16 (ties to even), as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def f16(x):
    return np.asarray(x, np.float32).astype(np.float16).astype(np.float32)


def ring_mean(grads, hook):
    """What --algo ring --hook HOOK leaves on every worker: each worker's
    gradient cast (fp16, bf16) and divided by W in the hook's dtype, then
    chunk c (n/W elements; n a multiple of W) summed from worker c on,
    ((q_c + q_c+1) + q_c+2) + ..., each addition in float32 rounded to the
    hook's dtype."""
    W, n = len(grads), len(grads[0])
    rnd = {"allreduce": lambda v: np.asarray(v, np.float32), "fp16": f16,
           "bf16": bf16}[hook]
    q = [rnd(rnd(g) / np.float32(W)) for g in grads]
    out = np.empty(n, np.float32)
    k = n // W
    for c in range(W):
        sl = slice(c * k, (c + 1) * k)
        acc = q[c][sl].copy()
        for j in range(1, W):
            acc = rnd(acc + q[(c + j) % W][sl])
        out[sl] = acc
    return out


class Hooks(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def model(self, grads, name="hooked", dtype=None):
        """A model of one param w holding inline grads (one list per
        worker); its path."""
        param = {"name": "w", "shape": [len(grads[0])]}
        if dtype:
            param["dtype"] = dtype
        path = os.path.join(self.d, f"{name}.json")
        with open(path, "w") as f:
            json.dump({"name": name, "params": [param],
                       "grads": [{"w": [float(v) for v in g]} for g in grads]}, f)
        return path

    def result(self, path, *args):
        """The run's --json report and worker 0's result (--print's
        values, read back exactly: they print to round trip)."""
        rc, out, err = run("-p", path, "--no-trace", "--json", "--print", *args)
        self.assertEqual(rc, 0, err)
        report = json.loads(out)
        return report, np.array(report["result"]["w"], np.float32)

    # hooks-1: each hook's bits, W = 2 and 3, against the arithmetic by
    # hand; at W = 3 the three hooks and no hook all give different bits
    def test_by_hand(self):
        rng = np.random.default_rng(7)
        for W in (2, 3):
            grads = [(rng.standard_normal(6 * W) * 10.0 ** rng.integers(-3, 3, 6 * W))
                     .astype(np.float32) for _ in range(W)]
            path = self.model(grads, f"w{W}")
            got = {}
            for hook in ("allreduce", "fp16", "bf16"):
                with self.subTest(workers=W, hook=hook):
                    report, values = self.result(path, "--algo", "ring", "--hook", hook)
                    want = ring_mean(grads, hook)
                    self.assertEqual(values.view(np.uint32).tolist(),
                                     want.view(np.uint32).tolist())
                    self.assertEqual(report["hook"]["name"], hook)
                    got[hook] = values
            _, plain = self.result(path, "--algo", "ring")
            if W == 3:  # 1/3 rounds in every dtype: each hook moves bits
                for hook, values in got.items():
                    self.assertFalse(np.array_equal(values, plain), hook)

    # hooks-2: half the bytes: fp16 and bf16 send 2 bytes an element, and
    # the report says so against the float32 all-reduce
    def test_bytes(self):
        grads = [np.arange(12, dtype=np.float32) + w for w in range(3)]
        path = self.model(grads)
        plain, _ = self.result(path)
        for hook, ratio in (("allreduce", 1.0), ("fp16", 0.5), ("bf16", 0.5)):
            with self.subTest(hook=hook):
                report, _ = self.result(path, "--hook", hook)
                self.assertEqual(report["hook"]["bytes_ratio"], ratio)
                self.assertEqual([b * ratio for b in plain["bytes_sent"]],
                                 report["bytes_sent"])
                rc, out, err = run("-p", path, "--no-trace", "--hook", hook)
                self.assertEqual(rc, 0, err)
                if ratio < 1:
                    self.assertIn("0.50 of the f32 all-reduce's", out)

    # hooks-3: float16 overflow. Dividing first keeps 40000 + 40000 finite
    # (20000 + 20000); summed first it would overflow (80000 > 65504), and
    # the report says dividing saved it. An input beyond float16 (70000)
    # overflows in the cast: the check fails (exit 1) and says where.
    def test_overflow(self):
        path = self.model([[40000, 1.5], [40000, 2.5]])
        report, values = self.result(path, "--hook", "fp16")
        self.assertEqual(values.tolist(), [40000.0, 2.0])
        h = report["hook"]
        self.assertEqual((h["sum_first_overflows"], h["saved_by_dividing_first"],
                          h["cast_overflowed"]), (1, 1, 0))
        self.assertEqual(h["max_abs_mean"], 40000.0)
        self.assertEqual(h["sum_first_overflows_from_workers"], 2.0)  # 65520 / 40000
        rc, out, err = run("-p", path, "--no-trace", "--hook", "fp16")
        self.assertIn("dividing first saved 1 of them from overflow", out)
        # a mean of 30000: W x 30000 reaches 65520 from W = 3
        path = self.model([[30000], [30000]], "small")
        report, values = self.result(path, "--hook", "fp16")
        self.assertEqual(report["hook"]["sum_first_overflows"], 0)
        self.assertEqual(report["hook"]["sum_first_overflows_from_workers"], 3.0)
        path = self.model([[70000, 1], [1, 2]], "huge")
        rc, out, err = run("-p", path, "--no-trace", "--hook", "fp16")
        self.assertEqual(rc, 1, err)
        self.assertIn("the hook's cast to f16 overflowed 1 input element(s) to inf",
                      err)
        self.assertIn("cast: 1 overflowed to inf", out)
        # bfloat16 has float32's range: the same inputs stay finite
        report, values = self.result(path, "--hook", "bf16")
        self.assertEqual(report["hook"]["cast_overflowed"], 0)
        self.assertEqual(values.tolist(), bf16([35000.5, 1.5]).tolist())

    # hooks-4: float16 underflow: 1e-8 flushes to zero in the cast (below
    # half of float16's smallest subnormal, 2^-24); 2^-24 itself survives
    # the cast and flushes in the division by 3; 2^-22 / 3 rounds to 2^-24
    def test_underflow(self):
        tiny = 2.0 ** -24
        path = self.model([[1e-8, tiny, 2.0 ** -22], [1e-8, tiny, 2.0 ** -22],
                           [1e-8, tiny, 2.0 ** -22]])
        report, values = self.result(path, "--hook", "fp16")
        h = report["hook"]
        self.assertEqual((h["cast_flushed"], h["div_flushed"]), (3, 3))
        self.assertEqual(values.tolist(), [0.0, 0.0, 3 * tiny])
        self.assertEqual(values.tolist(),
                         ring_mean([np.array(g, np.float32) for g in
                                    [[1e-8, tiny, 2.0 ** -22]] * 3], "fp16").tolist())

    # hooks-4b: on a model already of the hook's dtype the cast is a no-op
    # but the division is the hook's: an f16 model's 2^-24 still flushes
    # in the division by 3 and is counted (it read 0 of everything, the
    # largest |value| 0), and the bits are the same hook's; bf16 on a
    # bf16 model likewise (its smallest normal 2^-126, halved by W = 3,
    # rounds to 2^-127's neighbours, no flush: counted 0, the largest
    # |value| its own)
    def test_model_of_the_hooks_dtype(self):
        for dtype, hook, grads, flushed, largest in (
                ("f16", "fp16", [[2.0 ** -24, 2.0 ** -22, 1.5]] * 3, 3, 1.5),
                ("bf16", "bf16", [[2.0 ** -126, 3.0, 0.5]] * 3, 0, 3.0)):
            with self.subTest(dtype=dtype):
                report, values = self.result(self.model(grads, name=dtype, dtype=dtype),
                                             "--hook", hook)
                h = report["hook"]
                self.assertEqual((h["cast_overflowed"], h["cast_flushed"], h["div_flushed"]),
                                 (0, 0, flushed))
                self.assertEqual(h["max_abs_input"], largest)
                self.assertEqual(values.tolist(), ring_mean(
                    [np.array(g, np.float32) for g in grads], hook).tolist())

    # hooks-5: diff compares two hooks element by element, on the same
    # gradients; step's buckets move half the bytes under fp16
    def test_diff_and_step(self):
        path = self.model([np.arange(9, dtype=np.float32) / 7 + w for w in range(3)])
        rc, out, err = run("diff", "-p", path, "--hook", "allreduce,fp16")
        self.assertEqual(rc, 0, err)
        self.assertIn("B: --hook fp16  (ring, f32 summed in f16)", out)
        self.assertIn("with (cast to the hook's dtype)", out)
        rc, out, err = run("diff", "-p", path, "--hook", "allreduce,none")
        self.assertEqual(rc, 0, err)
        self.assertIn("((g0+g1)+g2)/3", out)  # no hook: --average post
        # allreduce_hook is the pre-division: bit for bit --average pre's
        _, hooked = self.result(path, "--hook", "allreduce")
        _, pre = self.result(path, "--average", "pre")
        self.assertEqual(hooked.view(np.uint32).tolist(), pre.view(np.uint32).tolist())
        big = os.path.join(self.d, "big.json")
        with open(big, "w") as f:
            json.dump({"name": "big", "params": [{"name": "w", "shape": [1 << 20],
                                                  "backward_us": 10}]}, f)
        comm = {}
        for hook in ("none", "fp16"):
            rc, out, err = run("step", "-p", big, "-w", 4, "--no-threads", "--json",
                               "--net", "latency=1us,bandwidth=1GB/s", "--hook", hook)
            self.assertEqual(rc, 0, err)
            comm[hook] = json.loads(out)["rows"][0]["later"]["comm_ns"]
        # the ring's 6 steps of 1 MiB / 4 at 1 GB/s: the bytes' time halves
        self.assertLess(comm["fp16"], 0.51 * comm["none"] + 6 * 1000 * 2)

    # hooks-7: --explain says what the hook did to the values it shows
    def test_explain(self):
        path = self.model([[1, 2], [3, 4]])
        for hook, says in (("fp16", "cast to float16 and divided by the number of "
                                    "workers in it (--hook fp16)"),
                           ("allreduce", "divided by the number of workers (--hook "
                                         "allreduce)")):
            with self.subTest(hook=hook):
                rc, out, err = run("-p", path, "--no-trace", "--explain", "--hook", hook)
                self.assertEqual(rc, 0, err)
                self.assertIn(says, out.replace("\n", " "))
                self.assertIn("w: [2, 3]", out)  # the two-worker example holds

    # hooks-8: one worker casts too (fp16_compress_hook does at W = 1):
    # 70000 overflows and the check fails; a plain value comes back cast
    def test_one_worker(self):
        path = self.model([[70000, 1.0000001]], "one")
        rc, out, err = run("-p", path, "--no-trace", "--hook", "fp16")
        self.assertEqual(rc, 1, err)
        self.assertIn("the hook's cast to f16 overflowed 1 input element(s)", err)
        path = self.model([[1.0000001, 3.3]], "one-ok")
        report, values = self.result(path, "--hook", "fp16")
        self.assertEqual(values.tolist(), f16([1.0000001, 3.3]).tolist())
        self.assertEqual(report["hook"]["max_abs_input"], float(f16([3.3])[0]))

    # hooks-9: diff's written order of a hook side ends at that side's
    # result, and its JSON inputs are the cast ones its partial sums start
    # from (seed 8 at W = 3 puts a float16 tie in the element that differs
    # most: an order that divided the uncast input rounded it apart); a
    # model of no elements still reports its hook
    def test_diff_order_is_the_result(self):
        gen = os.path.join(self.d, "gen.json")
        with open(gen, "w") as f:
            json.dump({"name": "gen", "params": [{"name": "a", "shape": [4]}]}, f)
        for hooks, cast in (("allreduce,fp16", f16), ("none,bf16", bf16)):
            with self.subTest(hooks=hooks):
                rc, out, err = run("diff", "-p", gen, "-w", 3, "--seed", 8, "--hook", hooks,
                                   "--json")
                self.assertEqual(rc, 0, err)
                e = json.loads(out)["element"]
                self.assertEqual([o["value"] for o in e["orders"]], [e["a"], e["b"]])
                self.assertEqual(e["orders"][1]["inputs"],
                                 cast(e["orders"][0]["inputs"]).tolist())
        empty = os.path.join(self.d, "empty.json")
        with open(empty, "w") as f:
            json.dump({"params": [{"name": "z", "shape": [0]}]}, f)
        rc, out, err = run("-p", empty, "-w", 3, "--hook", "fp16", "--no-trace", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["hook"]["bytes_ratio"], 0.5)

    # hooks-6: refused before anything runs, one line naming the input
    def test_refused(self):
        path = self.model([[1, 2], [3, 4]])
        f64 = self.model([[1, 2], [3, 4]], "double", dtype="f64")
        for args, says in (
                (["--hook", "fp17"], "--hook 'fp17': expected none, allreduce, fp16, bf16 "
                 "or powersgd:rank=R"),
                (["--hook", "fp16", "--op", "sum"], "--op sum does not apply"),
                (["--hook", "allreduce", "--average", "pre"], "--average does not apply"),
                (["-p", f64, "--hook", "fp16"], 'model "double" is f64')):
            with self.subTest(args=args):
                argv = ["-p", path, "--no-trace", *args] if "-p" not in args else \
                    ["--no-trace", *args]
                rc, out, err = run(*argv)
                self.assertEqual(rc, 2, err)
                self.assertIn(says, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertEqual(out, "")
        rc, out, err = run("-p", f64, "--no-trace", "--hook", "allreduce")
        self.assertEqual(rc, 0, err)  # allreduce divides in the model's dtype


def orthogonalise(a):
    """Gram-Schmidt on a's columns, as powerSGD_hook's
    _orthogonalize_gram_schmidt (epsilon 0), in float64."""
    a = a.astype(np.float64).copy()
    for i in range(a.shape[1]):
        a[:, i] /= np.linalg.norm(a[:, i])
        for k in range(i + 1, a.shape[1]):
            a[:, k] -= (a[:, i] @ a[:, k]) * a[:, i]
    return a


def powersgd(grads, qs, rank, q_out=None):
    """One PowerSGD step from powerSGD_hook.py's text, in float64: grads a
    list (per worker) of {name: array}, qs {name: initial Q (m x r)} for
    the params it compresses; the result {name: array}. q_out (a dict)
    gets each param's all-reduced Q / W, what warm start keeps."""
    W = len(grads)
    out = {}
    for name, g0 in grads[0].items():
        n = g0.shape[0] if g0.ndim else 1
        m = g0.size // n if n else 0
        r = min(n, m, rank)
        if name not in qs:
            out[name] = sum(g[name].astype(np.float64) for g in grads) / W
            continue
        M = [g[name].reshape(n, m).astype(np.float64) for g in grads]
        q = orthogonalise(qs[name])
        p = orthogonalise(sum(Mw @ q for Mw in M))
        q = sum(Mw.T @ p for Mw in M) / W
        out[name] = (p @ q.T).reshape(g0.shape)
        assert q.shape == (m, r)
        if q_out is not None:
            q_out[name] = q
    return out


def powersgd_steps(steps, qs, rank, start, feedback, warm):
    """Steps of powerSGD_hook with PowerSGDState's state, in float64, as
    powerSGD_hook.py carries it: steps a list (per step) of per-worker
    grads, qs a list (per step) of the Qs a step draws; each step's
    result. A step before start is the vanilla all-reduce (the mean) and
    keeps no state; a compressed step adds the residuals kept by the one
    before (feedback) to its grads first, and starts from the Q / W the
    one before all-reduced (warm) rather than its own draw."""
    error, memory, results = None, None, []
    for s, grads in enumerate(steps):
        if s < start:
            results.append({n: sum(g[n].astype(np.float64) for g in grads) /
                            len(grads) for n in grads[0]})
            continue
        if feedback and error is not None:
            grads = [{n: g[n] + e[n] for n in g} for g, e in zip(grads, error)]
        kept = {}
        out = powersgd(grads, memory if warm and memory else qs[s], rank, kept)
        if feedback:
            error = [{n: g[n] - out[n] for n in g} for g in grads]
        if warm:
            memory = kept
        results.append(out)
    return results


class PowerSgd(unittest.TestCase):
    """--hook powersgd:rank=R (docs/hooks.md)."""
    # A bucket of every kind: a bias (1-D: never compressed), a matrix too
    # small to be worth it at rank 2 (4 x 4: (4+4) 2 2 = 32 >= 16), two
    # of one shape and a conv weight viewed as 8 x 27 (grouped by shape,
    # in the order each shape first comes, in the bucket's layout: the
    # params last to first)
    PARAMS = (("fc.bias", [6]), ("small", [4, 4]), ("a.weight", [16, 12]),
              ("conv.weight", [8, 3, 3, 3]), ("b.weight", [16, 12]))

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def files(self, W, rank, seed=0, rank1=False):
        """model.json, W grads files and a Q file; (model, grads pattern,
        q path, grads, qs)."""
        rng = np.random.default_rng(seed)
        model = os.path.join(self.d, "m.json")
        with open(model, "w") as f:
            json.dump({"name": "psgd", "params": [{"name": n, "shape": s}
                                                  for n, s in self.PARAMS]}, f)
        grads = []
        u = {n: rng.standard_normal(s[0]) for n, s in self.PARAMS}
        for w in range(W):
            g = {}
            for n, s in self.PARAMS:
                if rank1 and len(s) > 1:  # every worker's a multiple of one u v^T
                    v = rng.standard_normal(int(np.prod(s[1:])))
                    g[n] = np.outer(u[n], v).reshape(s).astype(np.float32)
                else:
                    g[n] = rng.standard_normal(s).astype(np.float32)
            grads.append(g)
            ringsim_st.write(os.path.join(self.d, f"g{w}.safetensors"), g)
        qs = {}
        for n, s in self.PARAMS:
            rows = s[0]
            cols = int(np.prod(s[1:])) if len(s) > 1 else 1
            r = min(rows, cols, rank)
            if (rows + cols) * r * 2 < rows * cols:
                qs[n] = rng.standard_normal((cols, r)).astype(np.float32)
        qpath = os.path.join(self.d, "q.safetensors")
        ringsim_st.write(qpath, qs)
        return model, os.path.join(self.d, "g{r}.safetensors"), qpath, grads, qs

    def step(self, W, rank, *extra, rank1=False, algo="ring"):
        model, pattern, qpath, grads, qs = self.files(W, rank, rank1=rank1)
        out = os.path.join(self.d, "out.safetensors")
        rc, text, err = run("-p", model, "-w", W, "--grads", pattern, "--hook",
                            f"powersgd:rank={rank},q={qpath}", "--algo", algo,
                            "--no-trace", "--json", "--out", out, *extra)
        self.assertEqual(rc, 0, err)
        return json.loads(text), ringsim_st.read(out), grads, qs

    # psgd-1: the result against the hook's arithmetic in float64 from the
    # same Q, W = 2 and 3, ranks 1, 2 and 3, on three algorithms; the
    # report's own f64 figure agrees
    def test_by_hand(self):
        for W in (2, 3):
            for rank in (1, 2, 3):
                for algo in ("ring", "rd", "gloo-ring"):
                    with self.subTest(W=W, rank=rank, algo=algo):
                        report, ours, grads, qs = self.step(W, rank, algo=algo)
                        want = powersgd(grads, qs, rank)
                        self.assertEqual(sorted(ours), sorted(want))
                        worst = max(float(np.max(np.abs(ours[n] - want[n])))
                                    for n in want)
                        scale = max(float(np.max(np.abs(want[n]))) for n in want)
                        self.assertLess(worst, 1e-5 * scale, (W, rank, algo))
                        self.assertLess(report["f64_max_abs"], 1e-5 * scale)
                        self.assertGreater(report["rel_err"], 0.05)  # lossy
                        self.assertTrue(report["passed"])

    # psgd-5: several steps with PowerSGDState's state (start=2, then
    # PowerSGD), each step its own grads ({s} in --grads) and Q file: every
    # step's --out ({s} in it) against powersgd_steps in float64, for error
    # feedback and warm start each on and off (dropping either moves the
    # result by the size of the gradients, far above the bound); the
    # report's steps say which step was vanilla, drew its Q or fed back
    def test_steps(self):
        W, rank, K, start = 3, 2, 5, 2
        model, _, _, _, _ = self.files(W, rank)
        steps, qs = [], []
        for s in range(1, K + 1):
            self.files(W, rank, seed=s)
            for w in range(W):
                os.replace(os.path.join(self.d, f"g{w}.safetensors"),
                           os.path.join(self.d, f"g{s}_{w}.safetensors"))
            os.replace(os.path.join(self.d, "q.safetensors"),
                       os.path.join(self.d, f"q{s}.safetensors"))
            steps.append([ringsim_st.read(os.path.join(self.d, f"g{s}_{w}.safetensors"))
                          for w in range(W)])
            qs.append(ringsim_st.read(os.path.join(self.d, f"q{s}.safetensors")))
        for feedback in ("on", "off"):
            for warm in ("on", "off"):
                with self.subTest(feedback=feedback, warm=warm):
                    out = os.path.join(self.d, f"out{feedback}{warm}{{s}}.safetensors")
                    rc, text, err = run(
                        "-p", model, "-w", W, "--grads",
                        os.path.join(self.d, "g{s}_{r}.safetensors"), "--hook",
                        f"powersgd:rank={rank},start={start},feedback={feedback},"
                        f"warm={warm},q={self.d}/q{{s}}.safetensors",
                        "--iterations", K, "--algo", "gloo-ring", "--no-trace",
                        "--json", "--out", out)
                    self.assertEqual(rc, 0, err)
                    report = json.loads(text)
                    want = powersgd_steps(steps, qs, rank, start, feedback == "on",
                                          warm == "on")
                    self.assertEqual([x["vanilla"] for x in report["steps"]],
                                     [True, True, False, False, False])
                    self.assertEqual([x["q"] for x in report["steps"]],
                                     [None, None, "drawn"] +
                                     2 * ["warm" if warm == "on" else "drawn"])
                    self.assertEqual([x["error_added"] for x in report["steps"]],
                                     [False, False, False] + 2 * [feedback == "on"])
                    for s in range(K):
                        ours = ringsim_st.read(out.replace("{s}", str(s + 1)))
                        scale = max(float(np.max(np.abs(want[s][n]))) for n in want[s])
                        worst = max(float(np.max(np.abs(ours[n] - want[s][n])))
                                    for n in want[s])
                        self.assertLess(worst, 1e-5 * scale, f"step {s + 1}")
                    # the state matters: the other setting's last step is far off
                    other = powersgd_steps(steps, qs, rank, start, feedback != "on",
                                           warm != "on")[-1]
                    far = max(float(np.max(np.abs(ours[n] - other[n]))) for n in other)
                    self.assertGreater(far, 1e-2 * scale)

    # psgd-6: a step whose check fails (RINGSIM_TEST_FLIP flips a bit of
    # worker 0's result, docs/reliability.md) ends the steps there, exit 1,
    # naming the step: the vanilla step 1 of three, and the compressed
    # step 1 of three
    def test_failed_step_stops(self):
        model, pattern, qpath, _, _ = self.files(2, 2)
        for spec, says in (("powersgd:rank=2,start=1", "powersgd step 1, the "
                            "vanilla all-reduce: workers do not hold identical"),
                           (f"powersgd:rank=2,q={qpath}", "powersgd bucket 0, the ")):
            with self.subTest(spec=spec):
                p = subprocess.run(
                    [RINGSIM, "-p", model, "-w", "2", "--grads", pattern, "--hook",
                     spec, "--iterations", "3", "--no-trace", "--json"],
                    capture_output=True, text=True, timeout=60,
                    env=dict(os.environ, RINGSIM_TEST_FLIP="0:0"))
                self.assertEqual(p.returncode, 1, p.stderr)
                self.assertIn(says, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                report = json.loads(p.stdout)
                self.assertEqual([x["step"] for x in report["steps"]], [1])
                self.assertFalse(report["passed"])
                self.assertFalse(report["steps"][0]["checked"])

    # psgd-2: the hook's split and its sizes: 1-D and small params all-
    # reduced as they are, the rest P n x r and Q m x r, grouped by shape;
    # bytes below the plain all-reduce's
    def test_split(self):
        report, _, _, _ = self.step(3, 2)
        ranks = {t["name"]: t["rank"] for t in report["tensors"]}
        self.assertEqual(ranks, {"fc.bias": 0, "small": 0, "a.weight": 2,
                                 "conv.weight": 2, "b.weight": 2})
        compressed = [t["name"] for t in report["tensors"] if t["rank"]]
        # the layout is b, conv, a, small, bias: b's shape first, then conv's
        self.assertEqual(compressed, ["b.weight", "a.weight", "conv.weight"])
        (bucket,) = report["buckets"]
        elems = [a["elems"] for a in bucket["allreduces"]]
        self.assertEqual(elems, [6 + 16, 2 * (16 * 2) + 8 * 2, 2 * (12 * 2) + 27 * 2])
        # the ring sends 2(W-1)/W of each all-reduce a worker
        for a in bucket["allreduces"]:
            self.assertEqual(a["bytes"], 3 * 2 * 2 * a["elems"] * 4 // 3)
        self.assertLess(report["bytes"], report["plain_bytes"])

    # psgd-3: a mean of rank 1 (every worker's matrix u v_w^T, one u) comes
    # back whole: P spans u, so P Q^T is the mean; the 1-D param exactly
    def test_rank_one_mean(self):
        report, ours, grads, _ = self.step(3, 1, rank1=True)
        for n, _ in self.PARAMS:
            mean = sum(g[n].astype(np.float64) for g in grads) / 3
            self.assertLess(float(np.max(np.abs(ours[n] - mean))),
                            1e-5 * float(np.max(np.abs(mean))), n)
        self.assertLess(report["rel_err"], 1e-5)

    # psgd-4: the trace holds the three all-reduces, each a run of op sum
    # named for its bucket and part, and the residual the report gives is
    # g_w - result
    def test_trace_and_residual(self):
        model, pattern, qpath, grads, _ = self.files(2, 2)
        trace = os.path.join(self.d, "t.db")
        out = os.path.join(self.d, "out.safetensors")
        rc, text, err = run("-p", model, "-w", 2, "--grads", pattern, "--hook",
                            f"powersgd:rank=2,q={qpath}", "--trace", trace,
                            "--json", "--out", out)
        self.assertEqual(rc, 0, err)
        report = json.loads(text)
        import sqlite3
        with sqlite3.connect(trace) as db:
            rows = db.execute("SELECT run_id, model, op, elems FROM run "
                              "ORDER BY run_id").fetchall()
        ids = [a["trace_run_id"] for a in report["buckets"][0]["allreduces"]]
        self.assertEqual([r[0] for r in rows], ids)
        self.assertEqual([r[1:] for r in rows],
                         [(f"psgd: powersgd step 1 bucket 0 {part}", "sum", a["elems"])
                          for part, a in zip(("uncompressed", "P", "Q"),
                                             report["buckets"][0]["allreduces"])])
        ours = ringsim_st.read(out)
        rel = []
        for g in grads:
            e2 = sum(float(np.sum((g[n].astype(np.float64) - ours[n]) ** 2)) for n in g)
            g2 = sum(float(np.sum(g[n].astype(np.float64) ** 2)) for n in g)
            rel.append(np.sqrt(e2 / g2))
        self.assertAlmostEqual(report["residual_rel"], max(rel), places=6)
        self.assertEqual(report["residual_worker"], int(np.argmax(rel)))

    # psgd-5: refused before anything runs, one line naming the input, and
    # nothing written: no --out, the trace as it was
    def test_refused(self):
        model, pattern, qpath, _, _ = self.files(2, 2)
        f64 = os.path.join(self.d, "f64.json")
        with open(f64, "w") as f:
            json.dump({"name": "double", "params": [{"name": "w", "shape": [8, 8],
                                                     "dtype": "f64"}]}, f)
        badq = os.path.join(self.d, "badq.safetensors")
        ringsim_st.write(badq, {"a.weight": np.zeros((12, 3), np.float32)})
        trace = os.path.join(self.d, "t.db")
        out = os.path.join(self.d, "never.safetensors")
        rc, _, err = run("-p", model, "-w", 2, "--hook", "allreduce", "--trace", trace)
        self.assertEqual(rc, 0, err)
        with open(trace, "rb") as f:
            before = f.read()
        base = ["-p", model, "-w", 2, "--grads", pattern, "--trace", trace, "--out", out]
        for args, says in (
                (["--hook", "powersgd"], "--hook 'powersgd': powersgd needs its rank: "
                 "powersgd:rank=R"),
                (["--hook", "powersgd:rank=0"], "rank=0: expected a rank R from 1 to"),
                (["--hook", "powersgd:rank=-2"], "rank=-2: expected a rank R from 1"),
                (["--hook", "powersgd:rank=2,feedback=on"], "powersgd:rank=2,"
                 "feedback=on: feedback=on needs start=2 or more"),
                (["--hook", "powersgd:rank=2,start=1,warm=on"], "warm=on needs "
                 "start=2 or more"),
                (["--hook", "powersgd:rank=2,start=x"], "start=x: expected a step"),
                (["--hook", "powersgd:rank=2,start=2,warm=yes"], "warm=yes: "
                 "expected on or off"),
                (["--hook", "powersgd:rank=2,rank=3"], "rank= given twice"),
                (["--hook", "powersgd:rank=2,beta=1"], "'beta=1' is not rank=R"),
                (["--hook", "powersgd:start=2"], "powersgd needs its rank"),
                (["--hook", "allreduce", "--iterations", "2"], "--iterations 2: a "
                 "run's steps are --hook powersgd's"),
                (["--hook", "powersgd:rank=2", "--iterations", "0"], "--iterations"),
                (["-p", model, "--hook", "powersgd:rank=2", "--iterations", "2", "--grads",
                  os.path.join(self.d, "s{s}_{r}.safetensors")],
                 "s1_0.safetensors: no such readable file"),
                (["--hook", f"powersgd:rank=2,q={self.d}/q{{s}}.safetensors",
                  "--iterations", "2"], "q1.safetensors: cannot open it (step 1 "
                 "draws its Qs)"),
                (["--hook", "powersgd:rank=13"], "powersgd:rank=13 is above min(n, m) "
                 "of every param's matrix (the largest is 12: a.weight, 16 x 12)"),
                (["--hook", "powersgd:rank=2", "--op", "sum"], "--op sum does not apply"),
                (["--hook", "powersgd:rank=2", "--average", "pre"],
                 "--average does not apply"),
                (["--hook", "powersgd:rank=2", "--explain"], "--explain narrates one"),
                (["--hook", "powersgd:rank=2,q="], "q= names no file"),
                (["--hook", f"powersgd:rank=2,q={badq}"], "badq.safetensors"),
                (["--hook", f"powersgd:rank=2,q={self.d}/none"], "none: cannot open"),
                (["-p", f64, "--hook", "powersgd:rank=2"], "the model is f64")):
            with self.subTest(args=args):
                argv = base + args if "-p" not in args else \
                    ["-w", 2, "--trace", trace, "--out", out, *args]
                rc, text, err = run(*argv)
                self.assertEqual(rc, 2, err)
                self.assertIn(says, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertEqual(text, "")
                self.assertFalse(os.path.exists(out))
                with open(trace, "rb") as f:
                    self.assertEqual(f.read(), before)
        # one run of three: refused where one run is all there is (ringsim
        # step times the three: tests/test_step_cli.py's test_powersgd)
        for argv, says in (
                (["diff", "-p", model, "-w", 2, "--hook", "powersgd:rank=2,allreduce"],
                 "powersgd all-reduces three times a bucket"),
                (["diff", "-p", model, "-w", 2, "--hook", "powersgd:rank=2,start=2"],
                 "--hook 'powersgd:rank=2,start=2': powersgd all-reduces three times"),
                (["diff", "-p", model, "-w", 2, "--hook", "allreduce,powersgd:rank=2"],
                 "powersgd all-reduces three times a bucket")):
            with self.subTest(argv=argv[0]):
                rc, text, err = run(*argv)
                self.assertEqual(rc, 2, err)
                self.assertIn(says, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)


class Buckets(unittest.TestCase):
    """model.json's "buckets" (a recorded job's, ringsim.torch.record_hook):
    the run's buckets and their layout, and what is refused."""

    def write(self, d, model):
        path = os.path.join(d, "m.json")
        with open(path, "w") as f:
            json.dump(model, f)
        return path

    PARAMS = [{"name": "a", "shape": [300]}, {"name": "b", "shape": [200]},
              {"name": "c", "shape": [400]}]

    # buckets-1: the listed buckets run, in the listed order, each laid out
    # as listed (the report's params); --bucket-mb is refused beside them
    # by a run, ringsim model, step and diff.
    # (Bit for bit with a real job's layout: test_gloo's Ddp.test_record.)
    def test_layout(self):
        with tempfile.TemporaryDirectory() as d:
            listed = self.write(d, {"params": self.PARAMS,
                                    "buckets": [["c"], ["a", "b"]]})
            rc, out, err = run("-w", 3, "-p", listed, "--like", "ddp-gloo",
                               "--no-trace", "--json", "--out",
                               os.path.join(d, "listed.safetensors"))
            self.assertEqual(rc, 0, err)
            report = json.loads(out)
            self.assertEqual([b["params"] for b in report["buckets"]], [["c"], ["a", "b"]])
            rc, out, err = run("-w", 3, "-p", listed, "--like", "ddp-gloo", "--no-trace")
            self.assertIn("2 buckets as the model lists them", out)
            for argv in (["-w", 3, "-p", listed, "--bucket-mb", 1, "--no-trace"],
                         ["model", "-w", 3, "-p", listed, "--bucket-mb", 1, "--net",
                          "latency=1us,bandwidth=1GB/s"],
                         ["step", "-w", 2, "-p", listed, "--bucket-mb", 1, "--net",
                          "latency=1us,bandwidth=1GB/s", "--no-threads"],
                         ["diff", "-w", 3, "-p", listed, "--bucket-mb", 1, "--algo",
                          "ring,rd"]):
                with self.subTest(argv=argv[0]):
                    rc, out, err = run(*argv)
                    self.assertEqual(rc, 2, err)
                    self.assertIn("lists its buckets (a recorded job's): --bucket-mb "
                                  "does not apply", err)
                    self.assertEqual(out, "")

    # buckets-2: one line naming the fault, exit 2
    def test_refused(self):
        two = self.PARAMS[:2]
        for buckets, says in (
                ([["c", "a"], ["b"]], 'buckets[0]: its params are not consecutive'),
                ([["a", "b"]], 'buckets: "c" is in none'),
                ([["a", "x"], ["b", "c"]], 'buckets[0][1]: "x" is not a param'),
                ([["a", "b"], ["a", "c"]], 'buckets[1][0]: "a" is in an earlier bucket'),
                ([[]], "buckets[0]: must be a non-empty list of param names"),
                ([], "buckets: must be a non-empty list"),
                ([[3]], "buckets[0][0]: must be a param name (a string)"),
                ([["a", "a"], ["b", "c"]], 'buckets[0][1]: "a" is in this bucket too')):
            with self.subTest(buckets=buckets), tempfile.TemporaryDirectory() as d:
                path = self.write(d, {"params": self.PARAMS if buckets != [[]] else two,
                                      "buckets": buckets})
                rc, out, err = run("-p", path, "--no-trace")
                self.assertEqual(rc, 2, err)
                self.assertIn(says, err)
                self.assertEqual(len(err.strip().splitlines()), 1, err)


def main():
    helpers.main(globals(), "RINGSIM")


if __name__ == "__main__":
    main()
