#!/usr/bin/python3
"""bench/step_vs_ddp.py - ringsim step's predicted training step against
real PyTorch DDP on gloo, W = 2 processes on this machine, for three models
and two bucket caps: predicted over measured, each case.

    bench/step_vs_ddp.py RINGSIM [--iterations N]

1. The network, fitted to gloo's own all_reduce (two processes, a float32
   tensor): alpha is half the median time of a 4-byte all_reduce (gloo's
   ring on 2 workers takes 2 steps), beta from the median time of a 16 MiB
   one, its 2 steps' latencies taken off: 16 MiB / (t - 2 alpha)
   (each worker sends half of it twice).
2. The compute: tools/torch_profile.py on each model, alone, one thread.
3. Measured: DDP (gloo, no hook, bucket_cap_mb 25 and 1) on each model,
   the median step (forward, loss, backward, which waits for the last
   all-reduce) over N steps after the first two (DDP's first backward runs
   one bucket; the buckets are rebuilt after it), each rank one thread.
4. Predicted: ringsim step --algo gloo-ring (what PyTorch's gloo backend
   runs) --no-threads on the profile with the fitted network: the steps
   after the first.
Prints one row per case and the largest miss. Not a test: the machine is
shared and noisy, and the figures are this machine's.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.join(HERE, "..", "tools")
sys.path.insert(0, TOOLS)
sys.path.insert(0, HERE)

CAPS = (25, 1)
MODELS = ("mlp", "cnn", "unequal")
WORLD = 2


def build(kind):
    """(model, input batch, loss of the output): the tools' MLP and CNN at a
    batch of 64, and a model of very unequal layers (8 MiB, a few KiB,
    1 MiB, 640 KiB) at a batch of 32."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.manual_seed(0)
    if kind in ("mlp", "cnn"):
        import torch_grads
        model, shape = torch_grads.build_model(kind)
        x = torch.randn(64, *shape)
        y = torch.randint(0, 10, (64,))
        return model, x, lambda out: F.cross_entropy(out, y)
    model = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 16), nn.ReLU(),
                          nn.Linear(16, 16384), nn.ReLU(), nn.Linear(16384, 10))
    return model, torch.randn(32, 1024), lambda out: out.sum()


def make_unequal():
    """For tools/torch_profile.py --model step_vs_ddp:make_unequal."""
    model, x, _ = build("unequal")
    return model, x


def peer(rank, d, iterations):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="file://" + os.path.join(d, "store"),
                            rank=rank, world_size=WORLD)
    result = {"allreduce": {}, "ddp": {}}
    for nbytes in (4, 16 << 20):
        t = torch.ones(nbytes // 4)
        times = []
        for i in range(iterations + 3):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            if i >= 3:
                times.append(time.perf_counter() - t0)
        result["allreduce"][nbytes] = statistics.median(times)
    for kind in MODELS:
        for cap in CAPS:
            model, x, loss_of = build(kind)
            ddp = torch.nn.parallel.DistributedDataParallel(model, bucket_cap_mb=cap)
            times = []
            for i in range(iterations + 2):
                for p in model.parameters():
                    p.grad = None
                dist.barrier()
                t0 = time.perf_counter()
                loss_of(ddp(x)).backward()
                if i >= 2:
                    times.append(time.perf_counter() - t0)
            result["ddp"][f"{kind}/{cap}"] = statistics.median(times)
    if rank == 0:
        with open(os.path.join(d, "measured.json"), "w") as f:
            json.dump(result, f)
    dist.barrier()
    dist.destroy_process_group()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.split("\n\n")[1])
    ringsim = os.path.abspath(sys.argv[1])
    iterations = int(sys.argv[sys.argv.index("--iterations") + 1]) \
        if "--iterations" in sys.argv else 20
    import torch.multiprocessing as mp
    import torch_profile
    with tempfile.TemporaryDirectory() as d:
        mp.start_processes(peer, args=(d, iterations), nprocs=WORLD, start_method="spawn")
        with open(os.path.join(d, "measured.json")) as f:
            measured = json.load(f)
        small, large = measured["allreduce"]["4"], measured["allreduce"][str(16 << 20)]
        alpha = small / 2
        beta = (16 << 20) / (large - 2 * alpha)
        net = f"latency={alpha * 1e6:.3f}us,bandwidth={beta / 1e9:.4f}GB/s"
        print(f"network fitted to gloo's all_reduce (W={WORLD}): 4 B in {small * 1e6:.1f} us, "
              f"16 MiB in {large * 1e3:.2f} ms: --net {net}")
        print(f"{'model':8} {'cap MiB':>7} {'measured ms':>12} {'predicted ms':>13} "
              f"{'predicted/measured':>19}")
        worst = 0
        for kind in MODELS:
            profile = os.path.join(d, f"{kind}.json")
            spec = kind if kind != "unequal" else "step_vs_ddp:make_unequal"
            argv = ["--model", spec, "--out", profile, "--iterations", str(iterations)]
            if kind == "unequal":
                argv += ["--batch", "32"]
            with open(os.devnull, "w") as null:
                old, sys.stdout = sys.stdout, null
                try:
                    torch_profile.main(argv)
                finally:
                    sys.stdout = old
            for cap in CAPS:
                p = subprocess.run([ringsim, "step", "-p", profile, "-w", str(WORLD), "--net", net,
                                    "--algo", "gloo-ring", "--bucket-mb", str(cap),
                                    "--no-threads", "--json"],
                                   capture_output=True, text=True, check=True)
                predicted = json.loads(p.stdout)["rows"][0]["later"]["step_ns"] / 1e9
                real = measured["ddp"][f"{kind}/{cap}"]
                ratio = predicted / real
                worst = max(worst, abs(ratio - 1))
                print(f"{kind:8} {cap:7} {real * 1e3:12.3f} {predicted * 1e3:13.3f} {ratio:19.3f}")
        print(f"largest miss: {worst * 100:.1f}% (target: within 20%)")


if __name__ == "__main__":
    main()
