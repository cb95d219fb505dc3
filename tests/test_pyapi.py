#!/usr/bin/python3
"""The Python API (python/ringsim, docs/python.md) against the command: the
same gradients give the same bits as `ringsim --grads ... --out`, the same
--json report, the documented errors, no leak, and the library found as
documented.

    test_pyapi.py RINGSIM LIBRARY REPO_DIR BUILD_DIR [PyApi.test_name ...]

LIBRARY is the libringsim.so of the build under test; the package is told
so through RINGSIM_LIBRARY, as docs/python.md says. torch and numpy are
required (Debian's python3-torch, python3-numpy; scripts/deps.sh): without
them the test fails, it does not skip.
"""
import doctest
import json
import math
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

import helpers

# a peer: skipped without torch, failed under RINGSIM_REQUIRE_PEERS=1
torch = helpers.import_peer("torch", "python3-torch")

RINGSIM = LIBRARY = REPO = BUILD = None
ringsim = None

# safetensors dtype names, and the integer type of the same width (to
# compare bits)
ST_DTYPE = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
            torch.bfloat16: "BF16"}
RS_DTYPE = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
            torch.bfloat16: "bf16"}
BITS = {torch.float32: torch.int32, torch.float64: torch.int64,
        torch.float16: torch.int16, torch.bfloat16: torch.int16}
NUMPY = {torch.float32: np.float32, torch.float64: np.float64,
         torch.float16: np.float16}

# params of mixed shapes: a matrix, a vector, a 4-d kernel, a scalar, an
# empty one, and enough elements for several chunks per worker
SHAPES = {"fc.weight": (7, 5), "fc.bias": (7,), "conv.weight": (2, 3, 3, 3),
          "scale": (), "empty": (0, 3), "embed": (33, 4)}


def write_safetensors(path, tensors):
    """A safetensors file written here, apart from ringsim's writer."""
    header, blobs, offset = {}, [], 0
    for name, t in tensors.items():
        data = t.contiguous().view(BITS[t.dtype]).numpy().tobytes()
        header[name] = {"dtype": ST_DTYPE[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    inv = {v: k for k, v in ST_DTYPE.items()}
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    out = {}
    for name, t in json.loads(raw[8:8 + n]).items():
        if name == "__metadata__":
            continue
        dtype = inv[t["dtype"]]
        b, e = t["data_offsets"]
        bits = np.frombuffer(raw[8 + n + b:8 + n + e],
                             dtype=np.dtype(str(BITS[dtype]).replace(
                                 "torch.", "")))
        out[name] = torch.from_numpy(bits.copy()).view(dtype).reshape(
            t["shape"])
    return out


def make_grads(workers, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return [{name: torch.randn(shape, generator=g, dtype=torch.float64)
             .to(dtype) for name, shape in SHAPES.items()}
            for _ in range(workers)]


def same_bits(a, b):
    """Tensors (or arrays) equal bit for bit, with the same dtype and
    shape."""
    a = torch.from_numpy(np.array(a)) if isinstance(a, np.ndarray) else a
    b = torch.from_numpy(np.array(b)) if isinstance(b, np.ndarray) else b
    return (a.dtype == b.dtype and a.shape == b.shape
            and torch.equal(a.contiguous().view(BITS[a.dtype]),
                            b.contiguous().view(BITS[b.dtype])))


def run_cli(d, grads, dtype, extra=(), name="cli_model", exit_code=0):
    """`ringsim --grads --out --json` on grads: (result dict, report)."""
    model = {"name": name, "params": [
        {"name": n, "shape": list(t.shape), "dtype": RS_DTYPE[dtype]}
        for n, t in grads[0].items()]}
    with open(os.path.join(d, "model.json"), "w") as f:
        json.dump(model, f)
    for w, g in enumerate(grads):
        write_safetensors(os.path.join(d, f"w{w}.safetensors"), g)
    out = os.path.join(d, "out.safetensors")
    p = subprocess.run([RINGSIM, "-w", str(len(grads)), "-p",
                        os.path.join(d, "model.json"), "--grads",
                        os.path.join(d, "w{r}.safetensors"), "--out", out,
                        "--no-trace", "--json", *extra],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != exit_code:
        raise AssertionError(f"ringsim exited {p.returncode}: {p.stderr}")
    # (a run whose check failed writes no --out)
    return (read_safetensors(out) if exit_code == 0 else None,
            json.loads(p.stdout))


# report keys that are measured (times) or name where the grads came from
VOLATILE = {"wall_ns", "fill_ns", "ref_ns", "check_ns", "algbw_gbs", "busbw_gbs", "grads"}


def same_report(test, py, cli, f64, path="report"):
    """py equals cli: exactly for everything but reals, which the command
    prints with 9 significant digits (17 for an f64 model)."""
    if isinstance(cli, dict):
        test.assertEqual(set(py), set(cli), path)
        for k in cli:
            if path != "report" or k not in VOLATILE:
                same_report(test, py[k], cli[k], f64, f"{path}.{k}")
    elif isinstance(cli, list):
        test.assertEqual(len(py), len(cli), path)
        for i, (a, b) in enumerate(zip(py, cli)):
            same_report(test, a, b, f64, f"{path}[{i}]")
    elif isinstance(cli, float) or isinstance(py, float):
        test.assertTrue(math.isclose(py, cli, rel_tol=0 if f64 else 1e-8),
                        f"{path}: {py!r} != {cli!r}")
    else:
        test.assertEqual(py, cli, path)


def ddp_of_one(model):
    """model in DDP over a process group of one (gloo, an in-memory store;
    made once a process): a real DDP backward, comm hook and all, in
    about a second."""
    import torch.distributed as dist
    if not dist.is_initialized():
        dist.init_process_group("gloo", store=dist.HashStore(), rank=0,
                                world_size=1)
    return torch.nn.parallel.DistributedDataParallel(model)


def record_one(directory, steps=1):
    """steps backwards of a small model in DDP (one rank) recorded by
    ringsim.torch.record_hook(directory): the directory of backward 1."""
    import ringsim.torch
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    ddp = ddp_of_one(model)
    ddp.register_comm_hook(None, ringsim.torch.record_hook(directory,
                                                           module=model))
    for _ in range(steps):
        ddp(torch.randn(5, 3)).sum().backward()
    return os.path.join(directory, "step1")


def status_of_proc():
    """(VmRSS in KiB, threads) of this process, from /proc/self/status. The
    threads counted as the fewest of ten looks 20 ms apart: a thread that
    Python has joined may take a moment more to leave the kernel's list."""
    rss, threads = None, []
    for _ in range(10):
        fields = {}
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                fields[key] = value.split()
        rss = int(fields["VmRSS"][0])
        threads.append(int(fields["Threads"][0]))
        time.sleep(0.02)
    return rss, min(threads)


class PyApi(unittest.TestCase):
    # pyapi-1: the seed's doctest, as written, by Python's doctest module
    # against the package (its docstrings), and every example of
    # docs/python.md (the DDP-style training loop among them).
    def test_doctest(self):
        result = doctest.testmod(ringsim, verbose=False)
        self.assertEqual(result.failed, 0, result)
        self.assertGreaterEqual(result.attempted, 4)
        doc = ringsim.ddp_allreduce_average_grads.__doc__
        for line in ('>>> w0 = {"w": torch.tensor([1.0, 2.0])}',
                     '>>> w1 = {"w": torch.tensor([3.0, 4.0])}',
                     '>>> ddp_allreduce_average_grads([w0, w1])',
                     "{'w': tensor([2., 3.])}"):
            self.assertIn(line, doc)

    def test_docs_examples(self):
        result = doctest.testfile(os.path.join(REPO, "docs", "python.md"),
                                  module_relative=False, verbose=False)
        self.assertEqual(result.failed, 0, result)
        self.assertGreaterEqual(result.attempted, 10)

    # pyapi-2: for W in 1, 2, 3, 5, 8 and every dtype, torch tensors of
    # mixed shapes give the bits the command's --out gives for the same
    # gradients as safetensors files, and the same --json report; numpy
    # arrays give the same bits as numpy arrays; the result is within the
    # bound of the exact mean and of torch.stack(...).mean(0); the inputs
    # are unchanged.
    def test_matches_cli(self):
        for dtype in (torch.float32, torch.float64, torch.float16,
                      torch.bfloat16):
            for workers in (1, 2, 3, 5, 8):
                with self.subTest(dtype=str(dtype), workers=workers), \
                        tempfile.TemporaryDirectory() as d:
                    self.check_against_cli(d, dtype, workers, {}, ())

    # pyapi-3: the options reach the run as the command's do: another
    # algorithm, several buckets, small segments, the slice loop, average
    # pre, op sum, a network model, DDP's hooks (the report's "hook" too).
    def test_options_match_cli(self):
        cases = [
            ({"algo": "rhd", "bucket_mb": 0.0002, "segment_bytes": 64},
             ("--algo", "rhd", "--bucket-mb", "0.0002", "--segment-bytes",
              "64")),
            ({"loop": "slices", "segment_bytes": 16, "average": "pre"},
             ("--loop", "slices", "--segment-bytes", "16", "--average",
              "pre")),
            ({"op": "sum", "algo": "tree", "direct": True},
             ("--op", "sum", "--algo", "tree", "--direct")),
            ({"net": "latency=5us,bandwidth=25GB/s", "algo": "ring",
              "order_report": True},
             ("--net", "latency=5us,bandwidth=25GB/s", "--order-report")),
            ({"net": "latency=50us,bandwidth=1GB/s", "algo": "auto",
              "bucket_mb": 0.0002},
             ("--net", "latency=50us,bandwidth=1GB/s", "--algo", "auto",
              "--bucket-mb", "0.0002")),
            ({"like": "ddp-gloo", "bucket_mb": 0.0002},
             ("--like", "ddp-gloo", "--bucket-mb", "0.0002")),
            ({"like": "ddp-gloo", "hook": "fp16", "bucket_mb": 0.0002},
             ("--like", "ddp-gloo", "--hook", "fp16", "--bucket-mb", "0.0002")),
            ({"hook": "bf16", "algo": "rd"}, ("--hook", "bf16", "--algo", "rd")),
            ({"hook": "allreduce"}, ("--hook", "allreduce")),
        ]
        for options, argv in cases:
            for dtype in (torch.float32, torch.float16):
                with self.subTest(options=options, dtype=str(dtype)), \
                        tempfile.TemporaryDirectory() as d:
                    self.check_against_cli(d, dtype, 5, options, argv)
        # auto without net: this machine is measured before the run, and
        # every bucket runs one of the algorithms its predictions rank first
        grads = make_grads(4, torch.float32, seed=11)
        _, report = ringsim.allreduce(grads, algo="auto", bucket_mb=0.0002)
        self.assertEqual(report["auto"]["model"], "measured")
        self.assertGreater(report["auto"]["latency_ns"], 0)
        for b in report["auto"]["buckets"]:
            ns = {a: t for a, t in b["predicted_ns"].items() if t is not None}
            self.assertEqual(ns[b["algo"]], min(ns.values()), b)
        self.assertTrue(report["identical"])

    def check_against_cli(self, d, dtype, workers, options, argv):
        grads = make_grads(workers, dtype, seed=workers * 7 + len(argv))
        before = [{n: t.clone() for n, t in g.items()} for g in grads]
        result, report = ringsim.allreduce(grads, model_name="cli_model",
                                           **options)
        cli, cli_report = run_cli(d, grads, dtype, argv)
        self.assertEqual(list(result), list(SHAPES))
        for name in SHAPES:
            self.assertIsInstance(result[name], torch.Tensor)
            self.assertEqual(result[name].device.type, "cpu")
            self.assertTrue(same_bits(result[name], cli[name]),
                            f"{name}: {result[name]} != {cli[name]}")
        same_report(self, report, cli_report, dtype == torch.float64)
        self.assertEqual(report["status"], "ok")
        self.assertTrue(report["identical"])
        # inputs unchanged, bit for bit
        for g, b in zip(grads, before):
            for name in SHAPES:
                self.assertTrue(same_bits(g[name], b[name]), name)
        if options.get("op", "avg") == "avg":
            self.within_bound(grads, result, report)
        if dtype in NUMPY:  # numpy has no bfloat16
            arrays = [{n: t.numpy() for n, t in g.items()} for g in grads]
            copies = [{n: a.copy() for n, a in g.items()} for g in arrays]
            np_result, np_report = ringsim.allreduce(
                arrays, model_name="cli_model", **options)
            for name in SHAPES:
                self.assertIsInstance(np_result[name], np.ndarray)
                self.assertEqual(np_result[name].dtype, NUMPY[dtype])
                self.assertTrue(same_bits(np_result[name], cli[name]), name)
                for a, c in zip(arrays, copies):
                    self.assertTrue(same_bits(a[name], c[name]), name)
            same_report(self, np_report, cli_report, dtype == torch.float64)

    def within_bound(self, grads, result, report):
        """|ring - exact mean| <= the param's bound, and |ring -
        torch.stack(...).mean(0)| <= twice it (both are roundings of the
        same mean)."""
        for check in report["param_checks"]:
            name = check["name"]
            stack = torch.stack([g[name] for g in grads])
            exact = stack.double().mean(0)
            torch_mean = stack.mean(0).double()
            ring = result[name].double()
            if ring.numel() == 0:
                continue
            err = (ring - exact).abs().max().item()
            self.assertLessEqual(err, check["bound"], name)
            self.assertAlmostEqual(err, check["max_abs_err"], delta=1e-12 +
                                   1e-6 * err)
            diff = (ring - torch_mean).abs().max().item()
            self.assertLessEqual(diff, 2 * check["bound"], name)

    # pyapi-4: torch in, torch out for every dtype; a tensor that is not
    # contiguous, needs grad, or is a numpy scalar; dict order kept
    def test_kinds_and_layouts(self):
        g = torch.Generator().manual_seed(5)
        base = [torch.randn(4, 6, generator=g) for _ in range(3)]
        contiguous = ringsim.ddp_allreduce_average_grads(
            [{"b": t.t().contiguous(), "a": t[:, :2].contiguous()}
             for t in base])
        strided = ringsim.ddp_allreduce_average_grads(
            [{"b": t.t(), "a": t[:, :2].requires_grad_()} for t in
             [b.clone() for b in base]])
        self.assertEqual(list(strided), ["b", "a"])
        for name in ("a", "b"):
            self.assertTrue(same_bits(contiguous[name], strided[name]))
            self.assertFalse(strided[name].requires_grad)
        for dtype in (torch.float32, torch.float64, torch.float16,
                      torch.bfloat16):
            out = ringsim.ddp_allreduce_average_grads(
                [{"w": torch.tensor([1.0, 2.0], dtype=dtype)},
                 {"w": torch.tensor([3.0, 4.0], dtype=dtype)}])
            self.assertEqual(out["w"].dtype, dtype)
            self.assertEqual(out["w"].tolist(), [2.0, 3.0])
        out = ringsim.ddp_allreduce_average_grads(
            [{"s": np.float32(1.5)}, {"s": np.float32(2.5)}])
        self.assertEqual(out["s"].shape, ())
        self.assertEqual(out["s"].dtype, np.float32)
        self.assertEqual(float(out["s"]), 2.0)

    # pyapi-14: a view too big for memory (2^36 float32 elements, the most
    # a model holds, through a stride of 0, on 1,024 workers: 256 TiB of
    # buffers) is ringsim's MemoryError from its memory check, before
    # anything copies it (the address space is capped meanwhile, so that
    # a copy fails at once rather than wake the OOM killer); small views
    # of every sort (broadcast, negated, byte-swapped, float16 transposed)
    # give the bits of their contiguous copies, read straight into the
    # workers' buffers
    def test_huge_view(self):
        import resource
        n, W = 1 << 36, 1024
        with open("/proc/self/status") as f:
            vm = next(int(line.split()[1]) for line in f
                      if line.startswith("VmSize:")) * 1024
        limits = resource.getrlimit(resource.RLIMIT_AS)
        cap = vm + (16 << 30)
        if limits[1] != resource.RLIM_INFINITY:
            cap = min(cap, limits[1])
        for kind, view in (
                ("torch", lambda: torch.empty(1).expand(n)),
                ("numpy", lambda: np.broadcast_to(np.float32(0), (n,)))):
            with self.subTest(kind=kind):
                grads = [{"w": view()} for _ in range(W)]
                resource.setrlimit(resource.RLIMIT_AS, (cap, limits[1]))
                try:
                    with self.assertRaises(MemoryError) as cm:
                        ringsim.allreduce(grads)
                finally:
                    resource.setrlimit(resource.RLIMIT_AS, limits)
                self.assertIn("the run needs about", str(cm.exception))
                self.assertIn(f"W={W} x {n} elements", str(cm.exception))
        g = torch.Generator().manual_seed(8)
        base = [torch.randn(5, 7, generator=g) for _ in range(3)]
        views = {
            "broadcast": lambda t: t[:1].expand(4, 7),
            "negated": lambda t: torch._neg_view(t),
            "f16_transposed": lambda t: t.half().t(),
            "bf16_strided": lambda t: t.bfloat16()[::2, 1::3],
            "numpy_swapped": lambda t: t.numpy().astype(">f4")[:, ::2],
            "numpy_f16_broadcast": lambda t: np.broadcast_to(
                t.numpy()[0].astype(np.float16), (3, 7)),
        }
        for name, make in views.items():
            with self.subTest(view=name):
                given = [make(t) for t in base]
                copies = [np.ascontiguousarray(v) if isinstance(v, np.ndarray)
                          else v.contiguous() for v in given]
                for v in given:  # none is read in place
                    if isinstance(v, np.ndarray):
                        self.assertFalse(v.flags.c_contiguous and
                                         v.dtype.isnative)
                    else:
                        self.assertFalse(v.is_contiguous() and not v.is_neg())
                ours = ringsim.ddp_allreduce_average_grads(
                    [{"w": v} for v in given])["w"]
                want = ringsim.ddp_allreduce_average_grads(
                    [{"w": c} for c in copies])["w"]
                self.assertEqual(ours.dtype, want.dtype)
                self.assertTrue(same_bits(ours, want), f"{ours} != {want}")

    # pyapi-15: a tensor ringsim cannot read as dense values (sparse, CSR,
    # nested, on the meta device) is a ValueError naming it, before
    # anything runs
    def test_layouts_and_devices(self):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # CSR's "in beta state"
            cases = {
                "sparse_coo": (torch.tensor([1.0, 2.0]).to_sparse(),
                               "is a sparse tensor (torch.sparse_coo)"),
                "sparse_csr": (torch.eye(2).to_sparse_csr(),
                               "is a sparse tensor (torch.sparse_csr)"),
                "nested": (torch.nested.nested_tensor(
                    [torch.ones(2), torch.ones(3)]), "is a nested tensor"),
                "meta": (torch.empty(2, device="meta"),
                         "is on device meta, which holds no values"),
            }
        for name, (t, says) in cases.items():
            with self.subTest(kind=name):
                with self.assertRaises(ValueError) as cm:
                    ringsim.ddp_allreduce_average_grads(
                        [{"w": torch.ones(2)}, {"w": t}])
                self.assertIn(f"worker_grads[1]['w'] {says}",
                              str(cm.exception))
                self.assertNotIn("\n", str(cm.exception))

    # pyapi-19: an input at an address that is not a multiple of its
    # element's size (np.frombuffer or torch.frombuffer at offset 1) is
    # copied into the run's buffer by numpy or torch, not read in place by
    # C (a misaligned uint16_t load for float16 and bfloat16: undefined
    # behaviour, which UBSan reports): its _Tensor has no address, and the
    # result is the bits of the same values aligned. What this proves
    # without a sanitizer: the copying path is taken, and it is right.
    def test_unaligned_inputs_copied(self):
        def odd(t):
            raw = bytearray(b"\0") + t.contiguous().view(torch.uint8).numpy().tobytes()
            return raw
        for dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
            with self.subTest(dtype=dtype):
                g = torch.Generator().manual_seed(24)
                aligned = [torch.randn(37, generator=g).to(dtype) for _ in range(3)]
                unaligned = [torch.frombuffer(odd(t), dtype=dtype, offset=1)
                             for t in aligned]
                for t, u in zip(aligned, unaligned):
                    self.assertNotEqual(u.data_ptr() % u.element_size(), 0)
                    self.assertTrue(torch.equal(t, u))
                    self.assertIsNone(ringsim._Tensor(u, "u").ptr)
                    self.assertIsNotNone(ringsim._Tensor(t, "t").ptr)
                want = ringsim.ddp_allreduce_average_grads([{"w": t} for t in aligned])
                got = ringsim.ddp_allreduce_average_grads([{"w": u} for u in unaligned])
                self.assertTrue(same_bits(want["w"], got["w"]))
                if dtype in NUMPY:
                    arrays = [np.frombuffer(odd(t), dtype=NUMPY[dtype], offset=1)
                              for t in aligned]
                    self.assertFalse(arrays[0].flags.aligned)
                    self.assertIsNone(ringsim._Tensor(arrays[0], "a").ptr)
                    out = ringsim.ddp_allreduce_average_grads([{"w": a} for a in arrays])
                    self.assertTrue(same_bits(want["w"], torch.from_numpy(out["w"])))

    # pyapi-16: hook="powersgd:rank=R,q=FILE" reads the Qs from FILE as
    # the command's --hook does: the same bits and report as the command
    # from the same file ({s} the step: 1); a q= naming no file, a file
    # that cannot be read and a model with nothing to compress are
    # ValueErrors naming it
    def test_powersgd_q_file(self):
        g = torch.Generator().manual_seed(21)
        grads = [{"fc.weight": torch.randn(16, 12, generator=g),
                  "fc.bias": torch.randn(16, generator=g)}
                 for _ in range(3)]
        with tempfile.TemporaryDirectory() as d:
            q = os.path.join(d, "q 1.safetensors")
            write_safetensors(q, {"fc.weight": torch.randn(12, 2, generator=g)})
            for given in (q, os.path.join(d, "q {s}.safetensors")):
                with self.subTest(q=given):
                    spec = f"powersgd:rank=2,q={given}"
                    ours, report = ringsim.allreduce(grads, hook=spec,
                                                     model_name="cli_model")
                    cli, cli_report = run_cli(d, grads, torch.float32,
                                              ["--hook", spec])
                    for n in cli:
                        self.assertTrue(same_bits(ours[n], cli[n]), n)
                    self.assertEqual(report["initial_q"], cli_report["initial_q"])
                    self.assertIn("read from ", report["initial_q"])
                    same_report(self, report, cli_report, True)
            # another Q, another result: the file is read
            write_safetensors(q, {"fc.weight": torch.randn(12, 2, generator=g)})
            other, _ = ringsim.allreduce(grads, hook=f"powersgd:rank=2,q={q}")
            self.assertFalse(same_bits(other["fc.weight"], ours["fc.weight"]))
            missing = os.path.join(d, "none.safetensors")
            for grads_, spec, says in (
                    (grads, "powersgd:rank=2,q=", "q= names no file"),
                    (grads, f"powersgd:rank=2,q={missing}",
                     f"{missing}: cannot open"),
                    ([{"w": torch.ones(4, 4)}] * 2, f"powersgd:rank=2,q={q}",
                     "no param is compressed at rank 2, so there is no Q")):
                with self.subTest(spec=spec):
                    with self.assertRaises(ValueError) as cm:
                        ringsim.allreduce(grads_, hook=spec)
                    self.assertIn(f"hook '{spec}'", str(cm.exception))
                    self.assertIn(says, str(cm.exception))
                    self.assertNotIn("\n", str(cm.exception))

    # pyapi-17: record_hook's replay command, pasted from model.json's
    # description into a shell, runs, in a directory whose name holds a
    # quote, spaces and a $ (each word shell-quoted), and its --out is the
    # recorded result bit for bit; a directory holding files of its own
    # whose names start with "step" (steps.txt) takes a recording, one
    # holding a recording (step1) does not
    def test_record_hook_replay(self):
        import shlex
        import ringsim.torch
        with tempfile.TemporaryDirectory() as d:
            rec = os.path.join(d, "it's a \"run\" of $USER")
            os.makedirs(os.path.join(rec, "stepping"))
            for name in ("steps.txt", "step1.log"):
                open(os.path.join(rec, name), "w").close()
            step = record_one(rec)
            with open(os.path.join(step, "model.json")) as f:
                line = json.load(f)["description"]
            command = line.split("; replay: ", 1)[1]
            out = os.path.join(d, "replay.safetensors")
            p = subprocess.run(
                f"{shlex.quote(RINGSIM)} {command.split(' ', 1)[1]} "
                f"--no-trace --out {shlex.quote(out)}", shell=True,
                capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, f"{command}: {p.stderr}")
            ours = read_safetensors(out)
            recorded = read_safetensors(os.path.join(step,
                                                     "result0.safetensors"))
            self.assertEqual(sorted(ours), sorted(recorded))
            for name in recorded:
                self.assertTrue(same_bits(ours[name], recorded[name]), name)
            with self.assertRaises(ValueError) as cm:
                ringsim.torch.record_hook(rec)
            self.assertIn(f"{rec} already holds a recording (step1)",
                          str(cm.exception))

    # pyapi-20: a record_hook directory whose path holds {r} or {s} (which
    # the replay's --grads would replace, naming other files) is a
    # ValueError naming it, before anything is made
    def test_record_hook_directory_with_fields(self):
        import ringsim.torch
        with tempfile.TemporaryDirectory() as d:
            for name in ("run{r}", "a{s}/rec", "job-{r}-{s}"):
                with self.subTest(name=name):
                    rec = os.path.join(d, name)
                    with self.assertRaises(ValueError) as cm:
                        ringsim.torch.record_hook(rec)
                    self.assertIn(rec, str(cm.exception))
                    self.assertIn("{r}" if "{r}" in name else "{s}", str(cm.exception))
                    self.assertNotIn("\n", str(cm.exception))
            self.assertEqual(os.listdir(d), [])
            ringsim.torch.record_hook(os.path.join(d, "run{x}"))  # any other brace is a name

    # pyapi-18: a write that fails (the file size capped, as a full disk
    # would) leaves no model.json and no temporary file, and says which
    # file and why; written, model.json has the mode the safetensors files
    # have (0644), not a temporary file's 0600
    def test_record_hook_write_fails(self):
        import resource
        with tempfile.TemporaryDirectory() as d:
            # a long name: model.json (which names it) outgrows the cap,
            # the safetensors files (which do not) stay under it
            rec = os.path.join(d, "r" * 200)
            limits = resource.getrlimit(resource.RLIMIT_FSIZE)
            xfsz = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (512, limits[1]))
            try:
                with self.assertRaises(RuntimeError) as cm:
                    record_one(rec)
            finally:
                resource.setrlimit(resource.RLIMIT_FSIZE, limits)
                signal.signal(signal.SIGXFSZ, xfsz)
            step = os.path.join(rec, "step1")
            self.assertIn(f"{step}/model.json: cannot write: File too large",
                          str(cm.exception))
            self.assertEqual(sorted(os.listdir(step)),
                             ["rank0.safetensors", "result0.safetensors"])
        with tempfile.TemporaryDirectory() as d:
            step = record_one(os.path.join(d, "rec"))
            modes = {name: os.stat(os.path.join(step, name)).st_mode & 0o777
                     for name in os.listdir(step)}
            self.assertEqual(modes, {"model.json": 0o644,
                                     "rank0.safetensors": 0o644,
                                     "result0.safetensors": 0o644})

    # pyapi-5: every bad input raises the documented exception with
    # ringsim's one-line message
    def test_errors(self):
        t = torch.tensor
        cases = [
            ([], ValueError, "worker_grads is empty: give one dict of "
                             "gradients per worker"),
            ([{}], ValueError, "worker_grads[0] is empty"),
            ([{"a": t([1.0])}, {"b": t([1.0])}], ValueError,
             "worker_grads[1] lacks 'a': every worker needs the same param "
             "names"),
            ([{"a": t([1.0])}, {"a": t([1.0]), "b": t([1.0])}], ValueError,
             "worker_grads[1] has 'b', which worker_grads[0] lacks"),
            ([{"a": t([1.0, 2.0])}, {"a": t([1.0, 2.0, 3.0])}], ValueError,
             "worker_grads[1]['a'] has shape [3] but worker_grads[0]['a'] "
             "has [2]: shapes must match across workers"),
            ([{"a": t([1, 2])}, {"a": t([1, 2])}], ValueError,
             "worker_grads[0]['a'] is torch.int64: ringsim reduces float32, "
             "float64, float16 or bfloat16"),
            ([{"a": np.array([1, 2])}], ValueError,
             "worker_grads[0]['a'] is numpy int64"),
            ([{"a": t([1.0]), "b": t([1.0], dtype=torch.float64)}],
             ValueError, "worker_grads[0]['b'] is float64 but "
                         "worker_grads[0]['a'] is float32"),
            ([{"a": t([1.0])}, {"a": np.array([1.0], np.float32)}],
             ValueError, "worker_grads[1]['a'] is a numpy array but "
                         "worker_grads[0]['a'] is a torch tensor: give all "
                         "of one kind"),
            ([{"a": t([1.0, float("inf")])}, {"a": t([1.0, 2.0])}],
             ValueError, "worker 0's gradient of \"a\" holds inf at element "
                         "1: inputs must be finite"),
            ([{"": t([1.0])}], ValueError, "param name '' must be a "
                                           "non-empty string"),
            ({"a": t([1.0])}, TypeError, "worker_grads must be a list"),
            ([[1.0]], TypeError, "worker_grads[0] must be a dict"),
            ([{"a": [1.0]}], TypeError, "worker_grads[0]['a'] is a "
                                        "builtins.list: expected a torch "
                                        "tensor or a numpy array"),
        ]
        for grads, exc, message in cases:
            with self.subTest(message=message):
                with self.assertRaises(exc) as cm:
                    ringsim.ddp_allreduce_average_grads(grads)
                self.assertIn(message, str(cm.exception))
                self.assertNotIn("\n", str(cm.exception))
        ok = [{"a": t([1.0])}, {"a": t([2.0])}]
        options = [
            ({"algo": "ringg"}, "algo 'ringg': expected ring, rd, rhd, "
                                "linear, tree, gloo-ring, hier, hier:rd, "
                                "hier:rhd, nvls, nvlstree or auto"),
            ({"bucket_mb": -1}, "bucket_mb '-1': expected MiB from 0"),
            ({"slots": 0}, "slots '0': expected an integer in 1..1024"),
            ({"op": "mean"}, "op 'mean': expected sum, avg, min, max or "
                             "prod"),
            ({"op": "sum", "average": "pre"}, "average='pre' applies to op "
                                              "'avg' only"),
            ({"inject": "explode"}, "inject 'explode': expected "
                                    "KIND:worker=N,step=S"),
            ({"net": "latency=fast"}, "latency"),
            ({"like": "ddp"}, "like 'ddp': expected ddp-gloo"),
            ({"like": "ddp-gloo", "algo": "rd"}, "like='ddp-gloo' sets algo "
             "gloo-ring, op avg and average pre-mul; give none of them"),
            ({"like": "ddp-gloo", "direct": True}, "direct"),
            ({"hook": "fp17"}, "hook 'fp17': expected none, allreduce, fp16, "
                               "bf16 or powersgd:rank=R"),
            ({"hook": "fp16", "op": "sum"}, "hook='fp16' averages"),
            ({"hook": "powersgd:rank=2,start=2,feedback=on,beta=1"},
             "'beta=1' is not rank=R"),
            ({"hook": "powersgd:rank=2", "order_report": True},
             "order_report counts one all-reduce's orders"),
            ({"hook": "fp16", "average": "pre"}, "give no op or average"),
        ]
        for kwargs, message in options:
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(ValueError) as cm:
                    ringsim.allreduce(ok, **kwargs)
                self.assertIn(message, str(cm.exception))
        with tempfile.TemporaryDirectory() as d, \
                self.assertRaises(ValueError) as cm:
            ringsim.allreduce(ok, trace=d)
        self.assertIn(d, str(cm.exception))
        with self.assertRaises(TypeError):
            ringsim.ddp_allreduce_average_grads(ok, op="sum")

    # pyapi-6: a run that fails once started raises RunError, a
    # RuntimeError, carrying the command's report and its watchdog
    # pyapi-9: workers whose results differ (the RINGSIM_TEST_FLIP knob,
    # docs/reliability.md) fail the check, and the report lists them as
    # the command's does.
    def test_mismatches_match_cli(self):
        grads = make_grads(4, torch.float32, seed=3)
        # fc.weight[3] of worker 1; embed[0] (element 35 + 7 + 54 + 1) of
        # worker 3
        os.environ["RINGSIM_TEST_FLIP"] = "1:3,3:97"
        try:
            with self.assertRaises(ringsim.RunError) as caught:
                ringsim.allreduce(grads, model_name="cli_model")
            with tempfile.TemporaryDirectory() as d:
                _, cli_report = run_cli(d, grads, torch.float32, exit_code=1)
        finally:
            del os.environ["RINGSIM_TEST_FLIP"]
        report = caught.exception.report
        self.assertEqual(report["status"], "check_failed")
        same_report(self, report, cli_report, False)
        self.assertEqual(
            [(m["worker"], m["param"], m["index"])
             for m in report["mismatches"]["first"]],
            [(1, "fc.weight", 3), (3, "embed", 0)])

    def test_failed_run(self):
        grads = [{"w": torch.arange(12.0)} for _ in range(4)]
        with self.assertRaises(RuntimeError) as cm:
            ringsim.ddp_allreduce_average_grads(
                grads, inject="crash:worker=2,step=1", timeout=0.5)
        e = cm.exception
        self.assertIsInstance(e, ringsim.RunError)
        self.assertIn("worker 2 crashed (injected) at the start of "
                      "reduce_scatter step 1", str(e))
        self.assertEqual(e.report["status"], "failed")
        self.assertEqual(e.report["error"], str(e))
        self.assertFalse(e.report["checked"])
        self.assertIsNone(e.report["identical"])
        self.assertEqual(len(e.watchdog), 4)
        self.assertEqual(e.watchdog[2]["state"], "crashed")
        self.assertEqual(e.watchdog, e.report["watchdog"])
        # the same run from the command: the same first line and watchdog
        # states for the culprit
        with tempfile.TemporaryDirectory() as d:
            model = {"name": "m", "params": [{"name": "w", "shape": [12]}],
                     "grads": [{"w": list(range(12))}] * 4}
            path = os.path.join(d, "m.json")
            with open(path, "w") as f:
                json.dump(model, f)
            p = subprocess.run([RINGSIM, "-p", path, "--no-trace", "--json",
                                "--inject", "crash:worker=2,step=1",
                                "--timeout", "0.5"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 3, p.stderr)
            cli = json.loads(p.stdout)
            self.assertEqual(cli["watchdog"][2], e.watchdog[2])
            self.assertEqual(set(cli), set(e.report))

    # pyapi-7: Ctrl-C during a run interrupts it (here a worker stalls for
    # 10 minutes, so nothing else ends it): KeyboardInterrupt. How soon is
    # a benchmark (bench/stop_latency.py), not a test. The
    # signal is sent once the run is under way (readysignal), not after a
    # guessed sleep: the process has 4 threads more than it had just before
    # the call (it prints its count): the binding's thread that calls
    # rs_run_execute, and threads only rs_run_execute starts (the 3
    # workers, or first the reference's helpers).
    def test_interrupt(self):
        code = ("import os, time, torch, ringsim\n"
                "grads = [{'w': torch.ones(8)} for _ in range(3)]\n"
                "print('running', len(os.listdir('/proc/self/task')), flush=True)\n"
                "t = time.monotonic()\n"
                "try:\n"
                "    ringsim.ddp_allreduce_average_grads(\n"
                "        grads, inject='stall:worker=1,step=0,ms=600000',\n"
                "        timeout=900)\n"
                "except KeyboardInterrupt:\n"
                "    print('interrupted after %.1f s' % (time.monotonic() - t))\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        with subprocess.Popen([sys.executable, "-c", code], env=env,
                              stdout=subprocess.PIPE, text=True) as p:
            try:
                said, threads = p.stdout.readline().split()
                self.assertEqual(said, "running")
                deadline = time.monotonic() + 30  # readysignal
                while len(os.listdir(f"/proc/{p.pid}/task")) < int(threads) + 4:
                    self.assertLess(time.monotonic(), deadline,
                                    "the run's worker threads never started")
                    time.sleep(0.01)
                p.send_signal(signal.SIGINT)
                # (a bound for a hang: only the interrupt ends the stall)
                out, _ = p.communicate(timeout=120)
            finally:
                if p.poll() is None:
                    p.kill()
        self.assertEqual(p.returncode, 0, out)
        self.assertRegex(out, r"^interrupted after [0-9.]+ s$")

    # pyapi-7b: Ctrl-C at an awkward moment still stops the run first. In
    # the middle of Thread.start() (the run's thread exists, the call has
    # not returned: no try there can tell), and delivered by the kernel to
    # the run's thread rather than the main one (the main thread then
    # sleeps on, unless its wait wakes to read Python's flag). Either way
    # KeyboardInterrupt comes, not the end of the 10-minute stall, and only
    # once the run's worker threads are gone (the run is freed after it).
    def test_interrupt_any_moment(self):
        code = (
            "import os, sys, time, signal, threading, numpy, ringsim\n"
            "grads = [{'w': numpy.ones(8, numpy.float32)} for _ in range(3)]\n"
            "def count():\n"
            "    return len(os.listdir('/proc/self/task'))\n"
            "before = count()\n"
            "sender = None\n"
            "if sys.argv[1] == 'start':\n"
            "    start = threading.Thread.start\n"
            "    def patched(self):\n"
            "        start(self)\n"
            "        if self.name == 'ringsim-run':\n"
            "            time.sleep(0.3)\n"
            "            os.kill(os.getpid(), signal.SIGINT)\n"
            "    threading.Thread.start = patched\n"
            "else:\n"
            "    def send():\n"
            "        time.sleep(0.3)\n"
            "        run, = [t for t in threading.enumerate()\n"
            "                if t.name == 'ringsim-run']\n"
            "        signal.pthread_kill(run.ident, signal.SIGINT)\n"
            "    sender = threading.Thread(target=send)\n"
            "    sender.start()\n"
            "t = time.monotonic()\n"
            "try:\n"
            "    ringsim.ddp_allreduce_average_grads(\n"
            "        grads, inject='stall:worker=1,step=0,ms=600000',\n"
            "        timeout=900)\n"
            "except KeyboardInterrupt:\n"
            "    took = time.monotonic() - t\n"
            "    more = count() - before - (sender is not None)\n"
            "    print('interrupted after %.1f s, %d threads more' % (took, more))\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        for mode in ("start", "thread"):
            with self.subTest(mode=mode):
                p = subprocess.run([sys.executable, "-c", code, mode], env=env,
                                   capture_output=True, text=True, timeout=120)
                self.assertEqual(p.returncode, 0, p.stderr)
                m = re.fullmatch(r"interrupted after ([0-9.]+) s, "
                                 r"(-?\d+) threads more\n", p.stdout)
                self.assertTrue(m, p.stdout + p.stderr)
                # at most the run's Python thread, as it ends after join()
                self.assertLessEqual(int(m.group(2)), 1, p.stdout)

    # pyapi-8: a traced run is in the trace, with its transfers
    def test_trace(self):
        import sqlite3
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.db")
            grads = [{"w": torch.randn(10)} for _ in range(3)]
            _, r1 = ringsim.allreduce(grads, trace=path)
            _, r2 = ringsim.allreduce(grads, trace=path,
                                      net="latency=5us,bandwidth=25GB/s")
            self.assertEqual((r1["run_id"], r2["run_id"]), (1, 2))
            self.assertEqual(r1["trace"], path)
            self.assertGreater(r2["sim_ns"], 0)
            con = sqlite3.connect(path)
            n = con.execute("SELECT count(*) FROM transfer WHERE run_id = 2"
                            ).fetchone()[0]
            self.assertEqual(n, r2["transfers"])
            status, config = con.execute(
                "SELECT status, config_json FROM run WHERE run_id = 2"
            ).fetchone()
            self.assertEqual(status, "ok")
            self.assertEqual(json.loads(config)["api"], "python")
            # like= and hook= traced: the average they take, and an argv
            # the command runs as it is (no --average beside them)
            for kwargs, average in (({"like": "ddp-gloo"}, "pre-mul"),
                                    ({"hook": "fp16"}, "pre")):
                with self.subTest(**kwargs):
                    _, r = ringsim.allreduce(grads, trace=path, **kwargs)
                    conf = json.loads(con.execute(
                        "SELECT config_json FROM run WHERE run_id = ?",
                        (r["run_id"],)).fetchone()[0])
                    self.assertEqual(conf["average"], average)
                    self.assertNotIn("--average", conf["argv"])
                    write = os.path.join(d, "m.json")
                    with open(write, "w") as f:
                        json.dump({"params": [{"name": "w", "shape": [10]}]}, f)
                    p = subprocess.run([RINGSIM, "-p", write, "--no-trace",
                                        *conf["argv"]], capture_output=True,
                                       text=True, timeout=60)
                    self.assertEqual(p.returncode, 0, p.stderr)

    # pyapi-13: hook="powersgd:rank=R" is the command's --hook powersgd
    # step: the same result bits and the same report (its --json: every
    # key, but where the Qs came from, worded for each), from the same Qs
    # (ringsim's stream from seed 0); f64 refused as the command refuses
    # it; traced, its runs' ids in the report; Ctrl-C during a stalled
    # all-reduce of the step ends it with KeyboardInterrupt.
    def test_powersgd(self):
        g = torch.Generator().manual_seed(13)
        grads = [{"fc.weight": torch.randn(16, 12, generator=g),
                  "fc.bias": torch.randn(16, generator=g),
                  "conv.weight": torch.randn(8, 3, 3, 3, generator=g)}
                 for _ in range(3)]
        for spec, extra in (("powersgd:rank=2", {}),
                            ("powersgd:rank=1", {"algo": "gloo-ring"}),
                            ("powersgd:rank=3", {"net": "latency=5us,bandwidth=25GB/s"}),
                            ("powersgd:rank=2,start=1", {})):
            with self.subTest(spec=spec, **extra), tempfile.TemporaryDirectory() as d:
                ours, report = ringsim.allreduce(grads, hook=spec, model_name="cli_model",
                                                 **extra)
                argv = ["--hook", spec] + [x for k, v in extra.items()
                                           for x in (f"--{k}", v)]
                cli, cli_report = run_cli(d, grads, torch.float32, argv)
                self.assertEqual(sorted(ours), sorted(cli))
                for n in cli:
                    self.assertTrue(same_bits(ours[n], cli[n]), n)
                q, cli_q = report.pop("initial_q"), cli_report.pop("initial_q")
                if "start" in spec:  # step 1 vanilla: nothing drawn
                    self.assertEqual((q, cli_q), ("none drawn", "none drawn"))
                else:
                    self.assertIn("stream, seed 0 (", q)
                    self.assertIn("stream, seed 0 (", cli_q)
                same_report(self, report, cli_report, True)
                self.assertEqual(report["passed"], True)
        with self.assertRaises(ValueError) as cm:
            ringsim.allreduce([{k: v.double() for k, v in w.items()} for w in grads],
                              hook="powersgd:rank=2")
        self.assertIn("computes in float32", str(cm.exception))
        import sqlite3
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.db")
            _, report = ringsim.allreduce(grads, hook="powersgd:rank=2", trace=path)
            ids = [a["trace_run_id"] for b in report["buckets"] for a in b["allreduces"]]
            self.assertEqual(ids, [1, 2, 3])
            con = sqlite3.connect(path)
            self.assertEqual([r[0] for r in con.execute(
                "SELECT status FROM run ORDER BY run_id")], ["ok"] * 3)
        code = ("import time, torch, ringsim\n"
                "grads = [{'w': torch.ones(64, 64), 'b': torch.ones(8)}"
                " for _ in range(3)]\n"
                "print('running', flush=True)\n"
                "t = time.monotonic()\n"
                "try:\n"
                "    ringsim.allreduce(grads, hook='powersgd:rank=2', timeout=900,\n"
                "                      inject='stall:worker=1,step=0,ms=600000')\n"
                "except KeyboardInterrupt:\n"
                "    print('interrupted after %.1f s' % (time.monotonic() - t))\n")
        env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
        with subprocess.Popen([sys.executable, "-c", code], env=env,
                              stdout=subprocess.PIPE, text=True) as p:
            try:
                self.assertEqual(p.stdout.readline().strip(), "running")
                time.sleep(1.0)  # in the stall: the first all-reduce's
                p.send_signal(signal.SIGINT)
                # (a bound for a hang: only the interrupt ends the stall)
                out, _ = p.communicate(timeout=120)
            finally:
                if p.poll() is None:
                    p.kill()
        self.assertEqual(p.returncode, 0, out)
        self.assertRegex(out, r"^interrupted after [0-9.]+ s$")

    # pyapi-12: every string and path argument of the API goes through one
    # conversion: a value holding a NUL is refused (ValueError naming the
    # argument), where C would have read it cut short at the NUL (the part
    # before the NUL, given alone, runs); a trace path is what open() takes:
    # str, pathlib.Path, bytes, an os.PathLike of bytes, a name that is not
    # UTF-8.
    def test_strings_and_paths(self):
        import inspect
        import pathlib
        import sqlite3
        grads = [{"w": torch.arange(6.0)}, {"w": torch.ones(6)}]
        net = "latency=5us,bandwidth=25GB/s"
        with tempfile.TemporaryDirectory() as d:
            # the argument, its value before the NUL, what it needs beside
            clean = {
                "op": ("sum", {}), "algo": ("rd", {}), "average": ("pre", {}),
                "bucket_mb": ("1", {}), "segment_bytes": ("64", {}),
                "slots": ("2", {}), "timeout": ("30", {}),
                "loop": ("slices", {}), "direct": ("true", {}),
                "checksum": ("true", {}), "order_report": ("true", {}),
                "net": (net, {}), "link": ("0-1:bandwidth=1GB/s", {"net": net}),
                "topo": ("nodes=1,gpus=2,intra=1us/10GB/s,nic=2us/1GB/s", {}),
                "straggler": ("worker=1,us=1", {"net": net}),
                "reduce_rate": ("10GB/s", {"net": net}),
                "inject": ("stall:worker=1,step=0,ms=1", {}),
                "trace": (os.path.join(d, "runs"), {}),
                "model_name": ("m", {}), "like": ("ddp-gloo", {}),
                "hook": ("fp16", {}), "proto": ("LL", {"net": net}),
                "channels": ("2", {})}
            # every argument of every public function is here
            for fn in (ringsim.allreduce, ringsim.ddp_allreduce_average_grads):
                params = set(inspect.signature(fn).parameters)
                self.assertLessEqual(params - {"worker_grads", "options"},
                                     set(clean), fn.__name__)
            self.assertEqual(set(inspect.signature(ringsim.allreduce).parameters),
                             set(clean) | {"worker_grads"})
            self.assertEqual(list(inspect.signature(ringsim.library_path)
                                  .parameters), [])
            for name, (value, beside) in clean.items():
                with self.subTest(argument=name):
                    ringsim.allreduce(grads, **beside, **{name: value})
                    if name == "trace":
                        os.unlink(value)
                    cut = value + "\0.junk"
                    calls = [(ringsim.allreduce, {name: cut}, name),
                             (ringsim.allreduce, {name: [value, cut]},
                              name + "[1]")]
                    if name != "op":
                        calls.append((ringsim.ddp_allreduce_average_grads,
                                      {name: cut}, name))
                    for fn, kwargs, label in calls:
                        if isinstance(kwargs[name], list) and name not in (
                                "inject", "link", "straggler"):
                            continue  # a list only where a spec repeats
                        with self.assertRaises(ValueError) as cm:
                            fn(grads, **beside, **kwargs)
                        self.assertEqual(
                            str(cm.exception),
                            f"{label} {cut!r}: holds a NUL character (at byte "
                            f"{len(value)}), where a C string ends: ringsim "
                            f"would read it cut short")
            self.assertEqual(os.listdir(d), [])  # no "runs" was made
            for names in ({"a\0b": torch.ones(1)}, {"w": torch.ones(1),
                                                    "\0": torch.ones(1)}):
                with self.assertRaises(ValueError) as cm:
                    ringsim.ddp_allreduce_average_grads([names, names])
                self.assertIn("worker_grads[0]: param name ", str(cm.exception))
                self.assertIn("holds a NUL character", str(cm.exception))

            class BytesPath:
                def __fspath__(self):
                    return os.fsencode(os.path.join(d, "t.db"))
            path = os.path.join(d, "t.db")
            for i, given in enumerate((path, pathlib.Path(path),
                                       os.fsencode(path), BytesPath())):
                fn = (ringsim.allreduce, ringsim.ddp_allreduce_average_grads)[i % 2]
                if fn is ringsim.allreduce:
                    _, report = fn(grads, trace=given)
                    self.assertEqual((report["trace"], report["run_id"]),
                                     (path, i + 1))
                else:
                    fn(grads, trace=given)
            con = sqlite3.connect(path)
            self.assertEqual(con.execute("SELECT count(*) FROM run").fetchone(),
                             (4,))
            con.close()
            raw = os.path.join(os.fsencode(d), b"t\xff.db")  # not UTF-8
            _, report = ringsim.allreduce(grads, trace=raw)
            self.assertEqual(report["trace"], os.fsdecode(raw))
            self.assertTrue(os.path.isfile(raw))
            before = sorted(os.listdir(d))
            for bad in (os.path.join(d, "runs\0.db"),
                        pathlib.Path(d, "runs\0.db"),
                        os.fsencode(os.path.join(d, "runs\0.db"))):
                with self.assertRaises(ValueError) as cm:
                    ringsim.allreduce(grads, trace=bad)
                self.assertTrue(str(cm.exception).startswith(
                    f"trace {os.fspath(bad)!r}: holds a NUL character"),
                    cm.exception)
            self.assertEqual(sorted(os.listdir(d)), before)
            with self.assertRaises(TypeError) as cm:
                ringsim.allreduce(grads, trace=3)
            self.assertEqual(str(cm.exception), "trace must be a path (str, "
                             "bytes or os.PathLike), not int")

    # pyapi-9: 1,000 calls in one process keep memory and the thread count
    # flat (a run's buffers are 256 KiB: one leaked run per call would be
    # a quarter of a gigabyte); so do 1,000 calls refused after the model was made
    def test_no_leak(self):
        g = torch.Generator().manual_seed(3)
        grads = [{"a": torch.randn(64, 256, generator=g),
                  "b": torch.randn(7, generator=g)} for _ in range(4)]
        for _ in range(50):  # warm up: allocator pools, torch's threads
            ringsim.ddp_allreduce_average_grads(grads)
        rss0, threads0 = status_of_proc()
        for _ in range(1000):
            ringsim.ddp_allreduce_average_grads(grads)
        for _ in range(1000):
            with self.assertRaises(ValueError):
                ringsim.allreduce(grads, slots=0)
        rss1, threads1 = status_of_proc()
        self.assertLessEqual(threads1, threads0)
        self.assertLess(rss1 - rss0, 8 * 1024,
                        f"RSS grew from {rss0} KiB to {rss1} KiB")
        # hook="powersgd:...": a plan, four runs and a report a call
        for _ in range(20):
            ringsim.allreduce(grads, hook="powersgd:rank=2")
        rss0, threads0 = status_of_proc()
        for _ in range(300):
            ringsim.allreduce(grads, hook="powersgd:rank=2")
        rss1, threads1 = status_of_proc()
        self.assertLessEqual(threads1, threads0)
        self.assertLess(rss1 - rss0, 8 * 1024,
                        f"RSS grew from {rss0} KiB to {rss1} KiB")

    # pyapi-10: found without installing, as documented: the build tree
    # (build/ beside python/), then beside the package; RINGSIM_LIBRARY
    # naming no file is an ImportError that says so
    def test_found_without_installing(self):
        with tempfile.TemporaryDirectory() as d:
            tree = os.path.join(d, "repo")
            shutil.copytree(os.path.join(REPO, "python", "ringsim"),
                            os.path.join(tree, "python", "ringsim"),
                            ignore=shutil.ignore_patterns("__pycache__"))
            os.makedirs(os.path.join(tree, "build"))
            shutil.copy(LIBRARY, os.path.join(tree, "build", "libringsim.so"))
            self.assertEqual(self.import_from(os.path.join(tree, "python")),
                             os.path.join(tree, "build", "libringsim.so"))
            beside = os.path.join(d, "site")
            shutil.copytree(os.path.join(tree, "python", "ringsim"),
                            os.path.join(beside, "ringsim"))
            shutil.copy(LIBRARY, os.path.join(beside, "ringsim",
                                              "libringsim.so"))
            self.assertEqual(self.import_from(beside),
                             os.path.join(beside, "ringsim", "libringsim.so"))
            env = dict(os.environ, PYTHONPATH=beside,
                       RINGSIM_LIBRARY=os.path.join(d, "nothing.so"))
            p = subprocess.run([sys.executable, "-c", "import ringsim"],
                               env=env, capture_output=True, text=True,
                               timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("ImportError: ringsim: RINGSIM_LIBRARY=", p.stderr)
            self.assertIn("nothing.so", p.stderr)

    def import_from(self, path):
        """Import ringsim with PYTHONPATH=path and no RINGSIM_LIBRARY, run
        the seed's example, and return the library it found."""
        env = {k: v for k, v in os.environ.items() if k != "RINGSIM_LIBRARY"}
        env["PYTHONPATH"] = path
        p = subprocess.run(
            [sys.executable, "-c",
             "import ringsim, torch\n"
             "r = ringsim.ddp_allreduce_average_grads([{'w': torch.tensor("
             "[1.0, 2.0])}, {'w': torch.tensor([3.0, 4.0])}])\n"
             "assert r['w'].tolist() == [2.0, 3.0], r\n"
             "print(ringsim.library_path())"],
            env=env, cwd=tempfile.gettempdir(), capture_output=True,
            text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.strip()

    # pyapi-11: `cmake --install` puts the package where the prefix's
    # python3 finds it (a prefix of its own: as its user base,
    # cmake/python_site.py; test_pip.py runs it there), and the package
    # finds the library under the prefix
    def test_install(self):
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run(["cmake", "--install", BUILD, "--prefix", d],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stderr)
            found = [os.path.join(root, "ringsim")
                     for root, dirs, _ in os.walk(d) if "ringsim" in dirs
                     and root.endswith("-packages")]
            self.assertEqual(len(found), 1, found)
            site = os.path.dirname(found[0])
            self.assertEqual(os.path.relpath(site, d),
                             "lib/python%d.%d/site-packages"
                             % sys.version_info[:2])
            self.assertTrue(self.import_from(site).startswith(d + os.sep))


def tearDownModule():
    """The gloo group of ddp_of_one, if a test made one, destroyed before
    the interpreter's teardown: left to it, its threads were once destroyed
    while still joinable, after a test had passed (std::terminate,
    "terminate called without an active exception"; seen once in CI, in
    test_record_hook_write_fails, whose hook fails inside DDP's backward)."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def main():
    global ringsim
    cases = helpers.parse(globals(), "RINGSIM", "LIBRARY", "REPO", "BUILD")
    os.environ["RINGSIM_LIBRARY"] = LIBRARY
    sys.path.insert(0, os.path.join(REPO, "python"))
    import ringsim as module
    ringsim = module
    if ringsim.library_path() != LIBRARY:
        sys.exit(f"ringsim loaded {ringsim.library_path()}, not {LIBRARY}")
    helpers.run_tests(cases)


if __name__ == "__main__":
    main()
