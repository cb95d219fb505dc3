#!/usr/bin/python3
"""ringsim's gloo-ring against PyTorch's gloo backend, bit for bit.

Gloo: float32 gradients (standard normal times 10^k, k uniform in -3..3, so
float32 rounding makes every association of a sum visible) are all-reduced
by torch.distributed's gloo backend (Debian's python3-torch 1.13; eight
processes on this machine, one FileStore, a subgroup of ranks 0..W-1 for
each W = 2..8) and by ringsim --algo gloo-ring --op sum over --grads files.
Sizes: 1 element, W-1 (fewer than W), 2W-1 (fewer than gloo's 2W
segments), 1000, 65537 (W divides neither) and, for W <= 4, 2500001
(10 MB: more than 2W of gloo's 1 MiB segments).

Ddp: real DistributedDataParallel (gloo, no hook) on a small CNN (one
bucket) and a 3.2M-parameter MLP (two buckets at DDP's defaults; four at
bucket_cap_mb=4) for W = 3 and 4: its gradients after the second backward
(buckets rebuilt) equal ringsim --like ddp-gloo's --out, and after the
first (one bucket of every param in model order) those of --algo gloo-ring
--op avg --average pre-mul --bucket-mb 0. Each rank's local gradients
come from a copy of the model run without DDP on the rank's own batch.
A float16 parameter at W = 3 and 5 checks --like ddp-gloo's 1/W rounded to
float16. A comm hook (GradBucket.index(), parameters()) logs, for the tools'
MLP and CNN and a model of very unequal layers at bucket_cap_mb 25 and 1
on W = 2, which params each bucket holds, in which order, and the order
DDP launches the buckets, in the first and second iteration: ringsim
step's buckets must be those. Hooks (ddp-5): DDP with PyTorch's
allreduce_hook and fp16_compress_hook registered, W = 2..5, first and
second backward, equals --hook's --out. Record (ddp-6, ddp-7): a
3-process job recorded by ringsim.torch.record_hook replays bit for bit.
PowerSGD (ddp-8): the same job with PyTorch's powerSGD_hook at ranks 1 and
4, fresh state each step, replayed with --hook powersgd and torch's Qs:
the same params compressed, the same all-reduce sizes, the rest within
POWERSGD_BOUND; and with PyTorch's state carried (start_powerSGD_iter 2,
error feedback, warm start), five backwards replayed as one job with
--iterations 5: the compressed params within POWERSGD_STATE_BOUND.
All the DDP runs share one spawn of five processes (W < 5 on the
subgroup of ranks 0..W-1): each torch process's start costs seconds.

    test_gloo.py RINGSIM [Gloo.test_name | Ddp.test_name ...]
"""
import copy
import functools
import json
import os
import subprocess
import sys
import tempfile
import unittest

import helpers

import numpy as np

RINGSIM = None
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import ringsim_st  # noqa: E402

MAX_WORKERS = 8


def sizes(workers):
    """1 element, W-1, 2W-1, two W does not divide, and for W <= 4 one past
    gloo's 1 MiB segments (more than 2W of them)."""
    return (1, workers - 1, 2 * workers - 1, 1000, 65537) + \
        ((2500001,) if workers <= 4 else ())


def gradients(workers, count, seed):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(count) * 10.0 ** rng.integers(-3, 4, count))
            .astype(np.float32) for _ in range(workers)]


def differences(expected, got):
    """'' when the float32 arrays are equal bit for bit, else how many
    elements differ and the first few."""
    e, g = expected.view(np.uint32), got.view(np.uint32)
    if e.shape != g.shape:
        return f"shapes differ: {e.shape} vs {g.shape}"
    diff = np.flatnonzero(e != g)
    if diff.size == 0:
        return ""
    lines = [f"{diff.size} of {e.size} elements differ; first ones:"]
    for i in diff[:5]:
        lines.append(f"  [{i}] {expected[i]!r} (0x{e[i]:08x}) vs "
                     f"{got[i]!r} (0x{g[i]:08x})")
    return "\n".join(lines)


def spawn(fn, nprocs, args):
    """fn(rank, *args) on nprocs torch processes; an error in one is raised
    here."""
    import torch.multiprocessing as mp
    mp.start_processes(fn, args=args, nprocs=nprocs, start_method="spawn")


def init(rank, workers, d):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(d, "store"),
                            rank=rank, world_size=workers)
    return dist


# ---- gloo's all_reduce ---------------------------------------------------

def allreduce_peer(rank, d):
    """Rank `rank` of 8: in the subgroup of ranks 0..W-1 for each W, it
    all-reduces (SUM) each of its inputs d/W{W}n{n}_in{rank}.raw and
    writes the result to ..._gloo{rank}.raw."""
    import torch
    dist = init(rank, MAX_WORKERS, d)
    for workers in range(2, MAX_WORKERS + 1):
        group = dist.new_group(list(range(workers)))  # every rank calls it
        if rank >= workers:
            continue
        for n in sizes(workers):
            prefix = os.path.join(d, f"W{workers}n{n}")
            x = torch.from_numpy(np.fromfile(f"{prefix}_in{rank}.raw", dtype="<f4"))
            dist.all_reduce(x, group=group)
            x.numpy().astype("<f4").tofile(f"{prefix}_gloo{rank}.raw")
    dist.barrier()
    dist.destroy_process_group()


class Gloo(unittest.TestCase):
    # gloo-1: for W = 2..8 and each of sizes(W), every rank of torch's gloo
    # all_reduce holds the same bits, and ringsim --algo gloo-ring --op sum
    # gives them too.
    def test_allreduce(self):
        with tempfile.TemporaryDirectory() as d:
            for workers in range(2, MAX_WORKERS + 1):
                for n in sizes(workers):
                    prefix = os.path.join(d, f"W{workers}n{n}")
                    for r, g in enumerate(gradients(workers, n, [18, workers, n])):
                        g.astype("<f4").tofile(f"{prefix}_in{r}.raw")
                        ringsim_st.write(f"{prefix}_g{r}.safetensors", {"g": g})
                    with open(f"{prefix}_model.json", "w") as f:
                        f.write('{"params": [{"name": "g", "shape": [%d]}]}' % n)
            spawn(allreduce_peer, MAX_WORKERS, (d,))
            for workers in range(2, MAX_WORKERS + 1):
                for n in sizes(workers):
                    with self.subTest(workers=workers, n=n):
                        prefix = os.path.join(d, f"W{workers}n{n}")
                        gloo = [np.fromfile(f"{prefix}_gloo{r}.raw", dtype="<f4")
                                for r in range(workers)]
                        for r in range(1, workers):
                            self.assertEqual(differences(gloo[0], gloo[r]), "",
                                             f"gloo rank 0 vs rank {r}")
                        out = f"{prefix}_ringsim.safetensors"
                        p = subprocess.run(
                            [RINGSIM, "-w", str(workers), "-p", f"{prefix}_model.json",
                             "--grads", f"{prefix}_g{{r}}.safetensors", "--op", "sum",
                             "--algo", "gloo-ring", "--bucket-mb", "0", "--no-trace",
                             "--out", out],
                            capture_output=True, text=True, timeout=300)
                        self.assertEqual(p.returncode, 0, p.stderr)
                        self.assertEqual(differences(gloo[0], ringsim_st.read(out)["g"]),
                                         "", f"W={workers} n={n}: gloo vs ringsim "
                                         "gloo-ring")


# ---- DDP -----------------------------------------------------------------

MODELS = ("cnn", "mlp")


def build(kind):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    if kind == "hook-mlp":  # 662026 parameters: two buckets at cap 1 MiB
        return (nn.Sequential(nn.Linear(128, 1024), nn.ReLU(), nn.Linear(1024, 512),
                              nn.ReLU(), nn.Linear(512, 10)), (128,))
    if kind == "cnn":  # 2970 parameters: one bucket
        return (nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(),
                              nn.Linear(8 * 6 * 6, 10)), (1, 8, 8))
    # 3154442 parameters (12.6 MB): buckets of 2.1 MB and 10.5 MB at DDP's
    # defaults, four at bucket_cap_mb=4
    return (nn.Sequential(nn.Linear(256, 2048), nn.ReLU(), nn.Linear(2048, 1024),
                          nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(),
                          nn.Linear(512, 10)), (256,))


# The DDP runs, all on one spawn of DDP_WORLD torch processes (a process's
# start and torch's import are most of the cost): the W = 3 and 4 runs on a
# subgroup of ranks 0..W-1, which DDP averages over (1/W, its
# process_group's size) exactly as over a world of W.
DDP_WORLD = 5
DDP_MODELS = ((3, 25), (4, 4))  # (W, bucket_cap_mb): ddp-1, ddp-2
DDP_HALF = (3, 5)               # W: ddp-3
# ddp-4: the buckets DDP makes and launches, logged by a comm hook on W = 2
DDP_BUCKETS_W = 2
DDP_BUCKET_CAPS = (25, 1)
BUCKET_MODELS = ("tools-mlp", "tools-cnn", "unequal")
# ddp-5: DDP with PyTorch's own comm hooks registered, W = 2..5, on the
# CNN (one bucket) and a small MLP that makes two buckets at cap 1 MiB
DDP_HOOKS = ("allreduce", "fp16")
DDP_HOOK_WORKERS = (2, 3, 4, 5)
DDP_HOOK_CAP = 1
HOOK_MODELS = ("cnn", "hook-mlp")
# ddp-6: ringsim.torch.record_hook around each hook on a 3-process job
DDP_RECORD_W = 3
# ddp-8: PyTorch's powerSGD_hook at these ranks, on the same 3 processes
DDP_POWERSGD_RANKS = (1, 4)
# ddp-8's and ddp-9's jobs: (tag, start_powerSGD_iter, error feedback and
# warm start, steps). Fresh state every step; and PyTorch's state carried:
# two vanilla steps, a drawn Q, then warm-started Qs with error fed back
DDP_POWERSGD_JOBS = (("", 0, False, 2), ("_state", 2, True, 5))
# ddp-8's bound on |ringsim - torch| over a compressed param, relative to
# the param's largest |element| in torch's result (the measured worst is
# printed, and docs/hooks.md states it)
POWERSGD_BOUND = 1e-5
# ddp-9's, the same measure over steps with error feedback and warm start
# (each step's difference from torch feeds the next one's input and Q)
POWERSGD_STATE_BOUND = 5e-5


def build_bucket_model(kind):
    """The tools' MLP and CNN (tools/torch_grads.py) and one of very unequal
    layers (8 MiB, then a few KiB, then 1 MiB, then 160 KiB), with an
    input shape."""
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    if kind.startswith("tools-"):
        import torch_grads
        return torch_grads.build_model(kind[len("tools-"):])
    return (nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 16),
                          nn.ReLU(), nn.Linear(16, 16384), nn.ReLU(),
                          nn.Linear(16384, 10)), (1024,))


def ddp_dir(d, what, workers):
    return os.path.join(d, f"{what}{workers}")


def ddp_peer(rank, d):
    """Rank `rank` of DDP_WORLD: every DDP run this rank is in, each on
    the group of ranks 0..W-1, written under ddp_dir(d, ..., W)."""
    dist = init(rank, DDP_WORLD, d)
    # every rank creates every group, in the same order
    groups = {w: dist.new_group(list(range(w))) for w in sorted(
        {w for w, _ in DDP_MODELS} | set(DDP_HALF) | {DDP_BUCKETS_W} |
        set(DDP_HOOK_WORKERS) | {DDP_RECORD_W}) if w < DDP_WORLD}
    groups[DDP_WORLD] = None  # the default group: all ranks
    for workers, cap_mb in DDP_MODELS:
        if rank < workers:
            ddp_models(rank, cap_mb, groups[workers], ddp_dir(d, "w", workers))
    for workers in DDP_HALF:
        if rank < workers:
            ddp_half(rank, groups[workers], ddp_dir(d, "half", workers))
    if rank < DDP_BUCKETS_W:
        ddp_buckets(rank, groups[DDP_BUCKETS_W], ddp_dir(d, "buckets", DDP_BUCKETS_W))
    for workers in DDP_HOOK_WORKERS:
        if rank < workers:
            ddp_hooks(rank, groups[workers], ddp_dir(d, "hooks", workers))
    if rank < DDP_RECORD_W:
        ddp_record(rank, groups[DDP_RECORD_W], ddp_dir(d, "record", DDP_RECORD_W))
        ddp_powersgd(rank, groups[DDP_RECORD_W], ddp_dir(d, "powersgd", DDP_RECORD_W))
    dist.barrier()
    dist.destroy_process_group()


def ddp_buckets(rank, group, d):
    """For each bucket model and cap: DDP (gloo) with a comm hook that
    logs each call's GradBucket.index() and its parameters() by name, then
    all-reduces as DDP's default does (allreduce_hook), over two
    iterations; rank 0 writes the log, in call order, as JSON."""
    import torch
    import torch.nn as nn
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
    log = {}
    for kind in BUCKET_MODELS:
        for cap in DDP_BUCKET_CAPS:
            model, shape = build_bucket_model(kind)
            names = {id(p): n for n, p in model.named_parameters()}
            calls = []

            def hook(state, bucket, calls=calls, names=names):
                calls[-1].append({"index": bucket.index(),
                                  "params": [names[id(p)] for p in bucket.parameters()]})
                return allreduce_hook(state, bucket)

            ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap,
                                                      process_group=group)
            ddp.register_comm_hook(group, hook)
            g = torch.Generator().manual_seed(200 + rank)
            x = torch.randn((4,) + shape, generator=g)
            for _ in (1, 2):
                calls.append([])
                ddp(x).sum().backward()
            log[f"{kind}/{cap}"] = {
                "params": [[n, list(p.shape)] for n, p in model.named_parameters()],
                "iterations": calls}
    if rank == 0:
        with open(os.path.join(d, "log.json"), "w") as f:
            json.dump(log, f)


def local_grads(kind, seed, path):
    """The model `kind`, and one batch (x, y) drawn from seed; the model's
    gradients on that batch without DDP (a copy: what this rank computes
    alone) written to path as safetensors."""
    import torch
    import torch.nn as nn
    model, shape = build(kind)
    local = copy.deepcopy(model)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((8,) + shape, generator=g)
    y = torch.randint(0, 10, (8,), generator=g)
    nn.functional.cross_entropy(local(x), y).backward()
    write_grads(path, local)
    return model, x, y


def write_model(kind, path):
    """model.json of the model `kind` (its params' names and shapes) at
    path; path."""
    model, _ = build(kind)
    with open(path, "w") as f:
        json.dump({"params": [{"name": n, "shape": list(p.shape)}
                              for n, p in model.named_parameters()]}, f)
    return path


def write_grads(path, model):
    ringsim_st.write(path, {n: p.grad.numpy() for n, p in model.named_parameters()})


def ddp_models(rank, cap_mb, group, d):
    """For each model: this rank's local gradients (a copy, no DDP) and
    DDP's averaged ones after backward 1 and 2, as safetensors."""
    import torch.nn as nn
    for kind in MODELS:
        model, x, y = local_grads(kind, 100 + rank,
                                  os.path.join(d, f"{kind}_local{rank}.safetensors"))
        ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap_mb,
                                                  process_group=group)
        for it in (1, 2):
            for p in model.parameters():
                p.grad = None
            nn.functional.cross_entropy(ddp(x), y).backward()
            write_grads(os.path.join(d, f"{kind}_ddp{it}_{rank}.safetensors"), model)


def ddp_hooks(rank, group, d):
    """For each hook model: this rank's local gradients (a copy, no DDP),
    and for each of PyTorch's hooks, DDP's gradients after backward 1 and
    2 with that hook registered, as safetensors."""
    import torch.nn as nn
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    hooks = {"allreduce": default_hooks.allreduce_hook,
             "fp16": default_hooks.fp16_compress_hook}
    for kind in HOOK_MODELS:
        _, x, y = local_grads(kind, 400 + rank,
                              os.path.join(d, f"{kind}_local{rank}.safetensors"))
        for name in DDP_HOOKS:
            model, _ = build(kind)
            ddp = nn.parallel.DistributedDataParallel(
                model, bucket_cap_mb=DDP_HOOK_CAP, process_group=group)
            ddp.register_comm_hook(group, hooks[name])
            for it in (1, 2):
                for p in model.parameters():
                    p.grad = None
                nn.functional.cross_entropy(ddp(x), y).backward()
                write_grads(os.path.join(d, f"{kind}_{name}{it}_{rank}.safetensors"),
                            model)


def ddp_record(rank, group, d):
    """For each hook model and each hook: DDP with ringsim.torch.record_hook
    wrapping the hook, two backwards recorded under d/{kind}_{hook}, and
    the param.grad DDP left after each."""
    import torch
    import torch.nn as nn
    import ringsim.torch
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    inner = {"allreduce": None, "fp16": default_hooks.fp16_compress_hook}
    for kind in HOOK_MODELS:
        for name in DDP_HOOKS:
            model, shape = build(kind)
            ddp = nn.parallel.DistributedDataParallel(
                model, bucket_cap_mb=DDP_HOOK_CAP, process_group=group)
            rec = os.path.join(d, f"{kind}_{name}")
            ddp.register_comm_hook(group, ringsim.torch.record_hook(
                rec, inner=inner[name], module=model))
            g = torch.Generator().manual_seed(500 + rank)
            for it in (1, 2):
                x = torch.randn((8,) + shape, generator=g)
                y = torch.randint(0, 10, (8,), generator=g)
                for p in model.parameters():
                    p.grad = None
                nn.functional.cross_entropy(ddp(x), y).backward()
                write_grads(os.path.join(rec, f"ddp{it}_{rank}.safetensors"), model)


def ddp_powersgd(rank, group, d):
    """For each hook model and each rank R of DDP_POWERSGD_RANKS, and each
    job of DDP_POWERSGD_JOBS: DDP with PyTorch's powerSGD_hook and that
    job's PowerSGDState inside ringsim.torch.record_hook, its backwards
    recorded under d/{kind}_r{R}{tag}. Rank 0 also writes, for each step
    s that drew Qs, the Qs torch drew (q{s}.safetensors: each compressed
    param's m x r draw, before it is orthogonalised, keyed by the param's
    name) and log.json: each step's compressed params and the element
    count of every all_reduce the hook made."""
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import ringsim.torch
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
    real_all_reduce, real_randn = dist.all_reduce, torch.randn
    counts = []

    def all_reduce(tensor, *args, **kwargs):  # the hook's own, some in callbacks
        counts[-1].append(tensor.numel())
        return real_all_reduce(tensor, *args, **kwargs)

    log = {}
    dist.all_reduce = all_reduce
    try:
        for tag, start, carried, steps in DDP_POWERSGD_JOBS:
            for kind in HOOK_MODELS:
                for R in DDP_POWERSGD_RANKS:
                    model, shape = build(kind)
                    names = {id(p): n for n, p in model.named_parameters()}
                    qs, compressed = {}, []

                    @functools.wraps(psgd.powerSGD_hook)  # record_hook knows it
                    def hook(state, bucket, qs=qs, compressed=compressed, names=names):
                        drawn = []

                        def randn(*size, **kwargs):
                            t = real_randn(*size, **kwargs)
                            drawn.append(t)
                            return t
                        torch.randn = randn
                        vanilla = state.iter < state.start_powerSGD_iter
                        try:
                            fut = psgd.powerSGD_hook(state, bucket)
                        finally:
                            torch.randn = real_randn
                        # The hook's P and Q all_reduces are issued from its
                        # futures' callbacks, on gloo's threads: with several
                        # buckets in flight their order races, differs between
                        # ranks, and gloo pairs one rank's P with another's
                        # uncompressed bucket (a hang). Waiting here keeps one
                        # bucket's three in flight at a time; the sums are the
                        # same.
                        fut.wait()
                        if vanilla:
                            return fut
                        # the hook's compressed tensors, grouped by their
                        # (n, m) in first-appearance order: its Qs' order
                        by_shape = {}
                        for p in bucket.parameters():
                            n, m = p.shape[0], p.numel() // p.shape[0]
                            r = min(n, m, state.matrix_approximation_rank)
                            if psgd._should_compress(n, m, r, state.min_compression_rate)[0]:
                                by_shape.setdefault((n, m), []).append(names[id(p)])
                        order = [name for group in by_shape.values() for name in group]
                        # one draw per compressed tensor, or none (warm start)
                        assert len(drawn) in (0, len(order)), \
                            (order, [q.shape for q in drawn])
                        for name, q in zip(order, drawn):
                            qs[name] = q[0].numpy().copy()
                        compressed.extend(order)
                        return fut

                    state = psgd.PowerSGDState(
                        process_group=group, matrix_approximation_rank=R,
                        start_powerSGD_iter=start, use_error_feedback=carried,
                        warm_start=carried)
                    ddp = nn.parallel.DistributedDataParallel(
                        model, bucket_cap_mb=DDP_HOOK_CAP, process_group=group)
                    rec = os.path.join(d, f"{kind}_r{R}{tag}")
                    ddp.register_comm_hook(state, ringsim.torch.record_hook(
                        rec, inner=hook, module=model))
                    g = torch.Generator().manual_seed(600 + rank)
                    for s in range(1, steps + 1):
                        x = torch.randn((8,) + shape, generator=g)
                        y = torch.randint(0, 10, (8,), generator=g)
                        for p in model.parameters():
                            p.grad = None
                        qs.clear()
                        del compressed[:]
                        counts.append([])
                        nn.functional.cross_entropy(ddp(x), y).backward()
                        log[f"{kind}_r{R}{tag}/{s}"] = {"compressed": list(compressed),
                                                        "allreduces": counts[-1]}
                        if rank == 0 and qs:
                            ringsim_st.write(os.path.join(rec, f"q{s}.safetensors"), qs)
    finally:
        dist.all_reduce = real_all_reduce
    if rank == 0:
        with open(os.path.join(d, "log.json"), "w") as f:
            json.dump(log, f)


class Ddp(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        for workers, _ in DDP_MODELS:
            os.mkdir(ddp_dir(cls.tmp.name, "w", workers))
        for workers in DDP_HALF:
            os.mkdir(ddp_dir(cls.tmp.name, "half", workers))
        os.mkdir(ddp_dir(cls.tmp.name, "buckets", DDP_BUCKETS_W))
        for workers in DDP_HOOK_WORKERS:
            os.mkdir(ddp_dir(cls.tmp.name, "hooks", workers))
        os.mkdir(ddp_dir(cls.tmp.name, "record", DDP_RECORD_W))
        os.mkdir(ddp_dir(cls.tmp.name, "powersgd", DDP_RECORD_W))
        spawn(ddp_peer, DDP_WORLD, (cls.tmp.name,))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def check(self, workers, cap_mb):
        self.assertIn((workers, cap_mb), DDP_MODELS)
        d = ddp_dir(self.tmp.name, "w", workers)
        for kind in MODELS:
            path = write_model(kind, os.path.join(d, f"{kind}_model.json"))
            # iteration 2 (rebuilt buckets): --like ddp-gloo; iteration
            # 1 (one bucket, model order): gloo-ring, pre-mul, one bucket
            for it, args in ((2, ["--like", "ddp-gloo", "--bucket-mb", str(cap_mb)]),
                             (1, ["--algo", "gloo-ring", "--op", "avg", "--average",
                                  "pre-mul", "--bucket-mb", "0"])):
                with self.subTest(model=kind, iteration=it):
                    ddp = [ringsim_st.read(os.path.join(d, f"{kind}_ddp{it}_{r}.safetensors"))
                           for r in range(workers)]
                    out = os.path.join(d, f"{kind}_ringsim{it}.safetensors")
                    p = subprocess.run(
                        [RINGSIM, "-w", str(workers), "-p", path, "--grads",
                         os.path.join(d, f"{kind}_local{{r}}.safetensors"),
                         "--no-trace", "--json", "--out", out, *args],
                        capture_output=True, text=True, timeout=300)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    report = json.loads(p.stdout)
                    if kind == "mlp" and it == 2:  # several buckets
                        self.assertGreater(len(report["buckets"]), 1, report["buckets"])
                    ours = ringsim_st.read(out)
                    self.assertEqual(sorted(ours), sorted(ddp[0]))
                    for name in ddp[0]:
                        for r in range(workers):
                            self.assertEqual(
                                differences(ddp[r][name].ravel(), ours[name].ravel()),
                                "", f"{kind} W={workers} iteration {it} {name}: "
                                f"DDP rank {r} vs ringsim {' '.join(args)}")

    # ddp-1: W=3, DDP's default buckets (25 MiB, the first 1 MiB).
    def test_w3(self):
        self.check(3, 25)

    # ddp-2: W=4, buckets of 4 MiB (DDP's bucket_cap_mb, ringsim's
    # --bucket-mb): four for the MLP.
    def test_w4(self):
        self.check(4, 4)

    # ddp-5: PyTorch's allreduce_hook and fp16_compress_hook registered on
    # DDP (gloo), W = 2..5, the CNN and an MLP of two buckets: every
    # element of every rank's param.grad after the first backward (one
    # bucket, model order) equals ringsim --algo gloo-ring --hook H
    # --bucket-mb 0's --out, and after the second (rebuilt buckets) --like
    # ddp-gloo --hook H's.
    def test_hooks(self):
        several = 0
        for workers in DDP_HOOK_WORKERS:
            d = ddp_dir(self.tmp.name, "hooks", workers)
            for kind in HOOK_MODELS:
                path = write_model(kind, os.path.join(d, f"{kind}_model.json"))
                for hook in DDP_HOOKS:
                    for it, args in ((1, ["--algo", "gloo-ring", "--bucket-mb", "0"]),
                                     (2, ["--like", "ddp-gloo", "--bucket-mb",
                                          str(DDP_HOOK_CAP)])):
                        with self.subTest(workers=workers, model=kind, hook=hook,
                                          iteration=it):
                            out = os.path.join(d, f"{kind}_{hook}{it}_ringsim.safetensors")
                            p = subprocess.run(
                                [RINGSIM, "-w", str(workers), "-p", path, "--grads",
                                 os.path.join(d, f"{kind}_local{{r}}.safetensors"),
                                 "--hook", hook, "--no-trace", "--json", "--out", out,
                                 *args], capture_output=True, text=True, timeout=300)
                            self.assertEqual(p.returncode, 0, p.stderr)
                            report = json.loads(p.stdout)
                            several += len(report["buckets"]) > 1
                            ours = ringsim_st.read(out)
                            for r in range(workers):
                                ddp = ringsim_st.read(os.path.join(
                                    d, f"{kind}_{hook}{it}_{r}.safetensors"))
                                self.assertEqual(sorted(ours), sorted(ddp))
                                for name in ddp:
                                    self.assertEqual(
                                        differences(ddp[name].ravel(), ours[name].ravel()),
                                        "", f"{kind} W={workers} --hook {hook} "
                                        f"iteration {it} {name}: DDP rank {r} vs ringsim")
        self.assertGreater(several, 0, "no run made several buckets")

    # ddp-6: a real 3-process DDP job with ringsim.torch.record_hook
    # around allreduce_hook and fp16_compress_hook, the CNN and the
    # two-bucket MLP: what it recorded of backward 1 and 2 (each rank's
    # bucket inputs, DDP's bucket layout in model.json), replayed by
    # ringsim --like ddp-gloo --hook H, equals the recorded results bit for
    # bit, which are each rank's param.grad. The CNN's rebuilt bucket holds
    # 0.weight before 0.bias (autograd's order), which the record keeps.
    def test_record(self):
        d = ddp_dir(self.tmp.name, "record", DDP_RECORD_W)
        W = DDP_RECORD_W
        for kind in HOOK_MODELS:
            for hook in DDP_HOOKS:
                rec = os.path.join(d, f"{kind}_{hook}")
                for s in (1, 2):
                    with self.subTest(model=kind, hook=hook, step=s):
                        step = os.path.join(rec, f"step{s}")
                        with open(os.path.join(step, "model.json")) as f:
                            model = json.load(f)
                        self.assertIn(f"--like ddp-gloo --hook {hook}",
                                      model["description"])
                        if kind == "cnn" and s == 2:
                            self.assertEqual(model["buckets"][0][-2:],
                                             ["0.weight", "0.bias"])
                        out = os.path.join(rec, f"replay{s}.safetensors")
                        p = subprocess.run(
                            [RINGSIM, "-w", str(W), "-p", os.path.join(step, "model.json"),
                             "--grads", os.path.join(step, "rank{r}.safetensors"),
                             "--like", "ddp-gloo", "--hook", hook, "--no-trace", "--out",
                             out], capture_output=True, text=True, timeout=300)
                        self.assertEqual(p.returncode, 0, p.stderr)
                        ours = ringsim_st.read(out)
                        for r in range(W):
                            result = ringsim_st.read(os.path.join(
                                step, f"result{r}.safetensors"))
                            grad = ringsim_st.read(os.path.join(
                                rec, f"ddp{s}_{r}.safetensors"))
                            self.assertEqual(sorted(result), sorted(grad))
                            for n in grad:
                                self.assertEqual(differences(grad[n].ravel(),
                                                             result[n].ravel()), "",
                                                 f"rank {r} {n}: recorded vs param.grad")
                                self.assertEqual(differences(result[n].ravel(),
                                                             ours[n].ravel()), "",
                                                 f"rank {r} {n}: recorded vs ringsim")

    # ddp-8: PyTorch's powerSGD_hook (ranks 1 and 4, fresh state each
    # step) in a real 3-process DDP job, recorded by record_hook with the
    # Qs torch drew; each step replayed by ringsim --algo gloo-ring --hook
    # powersgd:rank=R,q=FILE: the same params compressed (torch's own
    # _should_compress), the same element counts in the hook's all_reduces,
    # the uncompressed params bit for bit, the compressed ones within
    # POWERSGD_BOUND of torch's (matmul and QR rounding differ), every
    # torch rank's result the same bits.
    def test_powersgd(self):
        d = ddp_dir(self.tmp.name, "powersgd", DDP_RECORD_W)
        W = DDP_RECORD_W
        with open(os.path.join(d, "log.json")) as f:
            log = json.load(f)
        worst, several = 0.0, 0
        for kind in HOOK_MODELS:
            for R in DDP_POWERSGD_RANKS:
                rec = os.path.join(d, f"{kind}_r{R}")
                for s in (1, 2):
                    with self.subTest(model=kind, rank=R, step=s):
                        step = os.path.join(rec, f"step{s}")
                        torch_log = log[f"{kind}_r{R}/{s}"]
                        self.assertTrue(torch_log["compressed"], "torch compressed nothing")
                        with open(os.path.join(step, "model.json")) as f:
                            self.assertIn(f"--hook powersgd:rank={R} ",
                                          json.load(f)["description"])
                        out = os.path.join(rec, f"replay{s}.safetensors")
                        p = subprocess.run(
                            [RINGSIM, "-w", str(W), "-p", os.path.join(step, "model.json"),
                             "--grads", os.path.join(step, "rank{r}.safetensors"),
                             "--algo", "gloo-ring", "--hook",
                             f"powersgd:rank={R},q={rec}/q{s}.safetensors",
                             "--no-trace", "--json", "--out", out],
                            capture_output=True, text=True, timeout=300)
                        self.assertEqual(p.returncode, 0, p.stderr)
                        report = json.loads(p.stdout)
                        several += len(report["buckets"]) > 1
                        ours = sorted(t["name"] for t in report["tensors"] if t["rank"])
                        self.assertEqual(ours, sorted(torch_log["compressed"]))
                        self.assertEqual(
                            sorted(a["elems"] for b in report["buckets"]
                                   for a in b["allreduces"]),
                            sorted(torch_log["allreduces"]))
                        got = ringsim_st.read(out)
                        results = [ringsim_st.read(os.path.join(
                            step, f"result{r}.safetensors")) for r in range(W)]
                        self.assertEqual(sorted(got), sorted(results[0]))
                        for r in range(1, W):
                            for n in results[0]:
                                self.assertEqual(differences(results[0][n].ravel(),
                                                             results[r][n].ravel()), "",
                                                 f"torch rank 0 vs {r} {n}")
                        for n, theirs in results[0].items():
                            if n not in ours:
                                self.assertEqual(differences(theirs.ravel(),
                                                             got[n].ravel()), "",
                                                 f"{n} (uncompressed)")
                                continue
                            scale = float(np.max(np.abs(theirs)))
                            self.assertGreater(scale, 0.0, n)
                            rel = float(np.max(np.abs(got[n].astype(np.float64) -
                                                      theirs))) / scale
                            self.assertLess(rel, POWERSGD_BOUND, f"{n} rank {R}")
                            worst = max(worst, rel)
        self.assertGreater(several, 0, "no replay made several buckets")
        print(f"\nPowerSGD, ringsim against torch: worst |difference| over a "
              f"compressed param, relative to its largest |element|: {worst:.3g} "
              f"(bound {POWERSGD_BOUND:g})", file=sys.stderr)

    # ddp-9: PyTorch's powerSGD_hook with its state carried
    # (start_powerSGD_iter 2, error feedback and warm start; ranks 1 and
    # 4) in a real 3-process DDP job, five backwards recorded by
    # record_hook, the Q torch drew at step 3 kept; replayed as one job by
    # ringsim --like ddp-gloo --hook powersgd:rank=R,start=2,feedback=on,
    # warm=on,q=FILE --iterations 5 over the recorded steps: every step,
    # vanilla or not, the same all_reduce sizes; the compressed steps the
    # same params compressed, the uncompressed params bit for bit (their
    # residuals are exact too), the compressed within POWERSGD_STATE_BOUND
    # of torch's, step after step; vanilla step 2 bit for bit (step 1 was
    # one bucket in DDP, the rebuilt ones here: within 1e-6)
    def test_powersgd_steps(self):
        d = ddp_dir(self.tmp.name, "powersgd", DDP_RECORD_W)
        W = DDP_RECORD_W
        tag, start, _, steps = DDP_POWERSGD_JOBS[1]
        with open(os.path.join(d, "log.json")) as f:
            log = json.load(f)
        worst = [0.0] * (steps + 1)
        for kind in HOOK_MODELS:
            for R in DDP_POWERSGD_RANKS:
                with self.subTest(model=kind, rank=R):
                    rec = os.path.join(d, f"{kind}_r{R}{tag}")
                    spec = f"powersgd:rank={R},start={start},feedback=on,warm=on"
                    with open(os.path.join(rec, "step4", "model.json")) as f:
                        line = json.load(f)["description"]
                    self.assertIn(f"step{{s}}/rank{{r}}.safetensors' --like ddp-gloo "
                                  f"--hook {spec} --iterations 4 ", line)
                    self.assertEqual(sorted(os.listdir(rec)),
                                     ["q3.safetensors"] + [f"step{s}" for s in
                                                           range(1, steps + 1)])
                    out = os.path.join(rec, "replay{s}.safetensors")
                    p = subprocess.run(
                        [RINGSIM, "-w", str(W), "-p",
                         os.path.join(rec, "step2", "model.json"), "--grads",
                         os.path.join(rec, "step{s}", "rank{r}.safetensors"),
                         "--like", "ddp-gloo", "--hook",
                         f"{spec},q={rec}/q{{s}}.safetensors", "--iterations",
                         str(steps), "--no-trace", "--json", "--out", out],
                        capture_output=True, text=True, timeout=300)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    report = json.loads(p.stdout)
                    self.assertEqual([x["vanilla"] for x in report["steps"]],
                                     [s <= start for s in range(1, steps + 1)])
                    self.assertEqual([x["q"] for x in report["steps"]][start:],
                                     ["drawn"] + ["warm"] * (steps - start - 1))
                    ours = sorted(t["name"] for t in report["tensors"] if t["rank"])
                    for s in range(1, steps + 1):
                        torch_log = log[f"{kind}_r{R}{tag}/{s}"]
                        if s > start:
                            self.assertEqual(ours, sorted(torch_log["compressed"]), s)
                            self.assertEqual(
                                sorted(a["elems"] for b in report["buckets"]
                                       for a in b["allreduces"]),
                                sorted(torch_log["allreduces"]), s)
                        elif s > 1:  # DDP's rebuilt buckets, as the replay's
                            self.assertEqual(sorted(b["elems"] for b in report["buckets"]),
                                             sorted(torch_log["allreduces"]), s)
                        got = ringsim_st.read(out.replace("{s}", str(s)))
                        results = [ringsim_st.read(os.path.join(
                            rec, f"step{s}", f"result{r}.safetensors")) for r in range(W)]
                        self.assertEqual(sorted(got), sorted(results[0]))
                        for r in range(1, W):
                            for n in results[0]:
                                self.assertEqual(differences(results[0][n].ravel(),
                                                             results[r][n].ravel()), "",
                                                 f"step {s}: torch rank 0 vs {r} {n}")
                        for n, theirs in results[0].items():
                            if s == 1 or (s > start and n in ours):
                                scale = float(np.max(np.abs(theirs)))
                                rel = float(np.max(np.abs(got[n].astype(np.float64) -
                                                          theirs))) / scale
                                self.assertLess(rel, 1e-6 if s == 1 else
                                                POWERSGD_STATE_BOUND,
                                                f"step {s} {n} rank {R}")
                                worst[s] = max(worst[s], rel)
                                continue
                            self.assertEqual(differences(theirs.ravel(), got[n].ravel()),
                                             "", f"step {s} {n} (uncompressed)")
        print("\nPowerSGD with its state (start 2, error feedback, warm start), "
              "ringsim against torch: worst |difference| over a compressed "
              "param, relative to its largest |element|, steps "
              f"{start + 1}-{steps}: " +
              ", ".join(f"{w:.3g}" for w in worst[start + 1:]) +
              f" (bound {POWERSGD_STATE_BOUND:g}); step 1 (vanilla, one "
              f"bucket in DDP): {worst[1]:.3g}", file=sys.stderr)

    # ddp-7: record_hook refuses, before training starts and naming the
    # path, a directory it cannot write and one that holds a recording
    # (nothing recorded is overwritten); a replay whose model.json and
    # files disagree is refused with one line (exit 2)
    def test_record_refused(self):
        import ringsim.torch
        with tempfile.TemporaryDirectory() as d:
            afile = os.path.join(d, "file")
            open(afile, "w").close()
            with self.assertRaises(ValueError) as cm:
                ringsim.torch.record_hook(os.path.join(afile, "rec"))
            self.assertIn(f"{afile}/rec is not a writable directory", str(cm.exception))
            os.makedirs(os.path.join(d, "rec", "step1"))
            with self.assertRaises(ValueError) as cm:
                ringsim.torch.record_hook(os.path.join(d, "rec"))
            self.assertIn("already holds a recording (step1)", str(cm.exception))
            with self.assertRaises(TypeError):
                ringsim.torch.record_hook(os.path.join(d, "new"), inner=3)
            self.assertFalse(os.path.exists(os.path.join(d, "new")))  # checked first
            with self.assertRaises(ValueError) as cm:
                ringsim.torch.record_hook("")
            self.assertIn("the directory is an empty path", str(cm.exception))
        rec = os.path.join(ddp_dir(self.tmp.name, "record", DDP_RECORD_W),
                           "cnn_allreduce", "step2")
        with open(os.path.join(rec, "model.json")) as f:
            model = json.load(f)
        model["params"][0]["shape"][0] += 1  # the files hold another shape
        bad = os.path.join(self.tmp.name, "bad_model.json")
        with open(bad, "w") as f:
            json.dump(model, f)
        p = subprocess.run([RINGSIM, "-w", str(DDP_RECORD_W), "-p", bad, "--grads",
                            os.path.join(rec, "rank{r}.safetensors"), "--like",
                            "ddp-gloo", "--hook", "allreduce", "--no-trace"],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("rank0.safetensors", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)

    # ddp-4: ringsim step's buckets are DDP's: in the first iteration one
    # bucket of every param in model order, in the second the rebuilt ones,
    # each holding the same params, launched in index order, for the three
    # bucket models at caps 25 and 1 MiB. Within a rebuilt bucket DDP lays
    # the params out in the order their gradients became ready, ringsim
    # last to first: the same for the Linear layers, but autograd readies a
    # Conv2d's weight before its bias, so for the CNN the two differ in
    # exactly that pair (docs/ddp.md).
    def test_buckets(self):
        d = ddp_dir(self.tmp.name, "buckets", DDP_BUCKETS_W)
        with open(os.path.join(d, "log.json")) as f:
            log = json.load(f)
        self.assertEqual(len(log), len(BUCKET_MODELS) * len(DDP_BUCKET_CAPS))
        several = 0
        for key, entry in sorted(log.items()):
            kind, cap = key.split("/")
            with self.subTest(model=kind, cap=cap):
                names = [n for n, _ in entry["params"]]
                path = os.path.join(d, f"{kind}_{cap}.json")
                with open(path, "w") as f:
                    json.dump({"params": [{"name": n, "shape": s, "backward_us": 1}
                                          for n, s in entry["params"]]}, f)
                p = subprocess.run(
                    [RINGSIM, "step", "-p", path, "-w", str(DDP_BUCKETS_W), "--net",
                     "latency=1us,bandwidth=1GB/s", "--bucket-mb", cap, "--no-threads",
                     "--json"], capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                row = json.loads(p.stdout)["rows"][0]

                def ours(timeline, rebuilt):
                    out = []
                    for i, b in enumerate(timeline["buckets"]):
                        held = names[b["first_param"]:b["first_param"] + b["params"]]
                        out.append({"index": i, "params": held[::-1] if rebuilt else held})
                    return out

                first, second = entry["iterations"]
                self.assertEqual(first, ours(row["first"], False))
                expected = ours(row["later"], True)
                if kind == "tools-cnn":  # the conv's (bias, weight) as autograd readies them
                    for b in expected:
                        held = b["params"]
                        if "0.bias" in held:
                            i = held.index("0.bias")
                            self.assertEqual(held[i + 1], "0.weight")
                            held[i], held[i + 1] = held[i + 1], held[i]
                self.assertEqual(second, expected)
                several += len(second) > 1
        self.assertGreaterEqual(several, 2, "no model made several buckets")

    # ddp-3: float16 parameters at W = 3 and 5, where 1/W is not a power
    # of two: DDP multiplies each gradient by 1/W rounded to float16 (not
    # to float32), and so must --like ddp-gloo.
    def test_half(self):
        for workers in DDP_HALF:
            with self.subTest(workers=workers):
                d = ddp_dir(self.tmp.name, "half", workers)
                path = os.path.join(d, "model.json")
                with open(path, "w") as f:
                    json.dump({"params": [{"name": "w", "shape": [HALF_ELEMS],
                                           "dtype": "f16"}]}, f)
                out = os.path.join(d, "ringsim.safetensors")
                p = subprocess.run(
                    [RINGSIM, "-w", str(workers), "-p", path, "--grads",
                     os.path.join(d, "local{r}.safetensors"), "--like", "ddp-gloo",
                     "--no-trace", "--out", out],
                    capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                ours = ringsim_st.read(out)["w"]
                for r in range(workers):
                    ddp = ringsim_st.read(os.path.join(d, f"ddp{r}.safetensors"))["w"]
                    self.assertEqual(ddp.dtype, np.float16)
                    self.assertEqual(np.flatnonzero(ddp.view(np.uint16) != ours.view(np.uint16))
                                     .size, 0, f"W={workers}: DDP rank {r} vs ringsim")


HALF_ELEMS = 1000


def ddp_half(rank, group, d):
    """DDP (gloo, no hook) on one float16 parameter w whose gradient is the
    rank's own input x (loss (w * x).sum()): x as the local gradient, and
    w's gradient after the second backward (buckets rebuilt)."""
    import torch

    class Linear(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.ones(HALF_ELEMS, dtype=torch.float16))

        def forward(self, x):
            return (self.w * x).sum()

    rng = np.random.default_rng(300 + rank)
    x = (rng.standard_normal(HALF_ELEMS) * 10.0 ** rng.integers(-2, 3, HALF_ELEMS)) \
        .astype(np.float16)
    ringsim_st.write(os.path.join(d, f"local{rank}.safetensors"), {"w": x}, "F16")
    model = Linear()
    ddp = torch.nn.parallel.DistributedDataParallel(model, process_group=group)
    for _ in range(2):
        model.w.grad = None
        ddp(torch.from_numpy(x)).backward()
    ringsim_st.write(os.path.join(d, f"ddp{rank}.safetensors"), {"w": model.w.grad.numpy()},
                     "F16")


def main():
    cases = helpers.parse(globals(), "RINGSIM")
    # ringsim.torch (record_hook) from this tree, on this build's library
    # (the torch processes inherit both)
    sys.path.insert(0, os.path.join(HERE, "..", "python"))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [os.path.join(HERE, "..", "python")] +
        [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])
    library = os.path.join(os.path.dirname(RINGSIM), "libringsim.so")
    if os.path.exists(library):
        os.environ["RINGSIM_LIBRARY"] = library
    # a peer: skipped without torch, failed under RINGSIM_REQUIRE_PEERS=1
    helpers.import_peer("torch.distributed", "python3-torch")
    helpers.run_tests(cases)


if __name__ == "__main__":
    main()
