#!/usr/bin/python3
"""Check ringsim's averaged gradients against PyTorch.

Compares ringsim's --out file with the reference tools/torch_grads.py wrote
(torch.stack(grads).mean(dim=0)) and with a real torch.distributed
all_reduce over the gloo backend, run on the same gradients by W processes
on this machine (loopback only), and reports max abs and ULP differences.

    tools/torch_check.py --dir grads --workers 4 --result grads/ringsim.safetensors [--json]

Exit status: 0 when ringsim agrees with both within the bound of a sum of W
terms in the gradients' precision (float32, or float64 for F64 files); 1
otherwise; 2 bad input.
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ringsim_st  # noqa: E402
from ringsim_plot.output import clean  # noqa: E402  (names as ringsim prints them)


def gloo_rank(rank, workers, directory, store, out):
    import torch
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                            world_size=workers)
    grads = ringsim_st.read(os.path.join(directory, f"worker{rank}.safetensors"))
    result = {}
    for name, value in grads.items():
        t = torch.from_numpy(value.copy())
        dist.all_reduce(t, op=dist.ReduceOp.SUM)  # what DDP's hook does,
        result[name] = t / workers                # then divide by W
    if rank == 0:
        ringsim_st.write(out, result, "F64" if next(iter(grads.values())).dtype.itemsize == 8
                         else "F32")
    dist.barrier()
    dist.destroy_process_group()


def run_gloo(workers, directory):
    import torch.multiprocessing as mp
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "store")
        out = os.path.join(directory, "gloo.safetensors")
        mp.spawn(gloo_rank, args=(workers, directory, store, out), nprocs=workers, join=True)
    return ringsim_st.read(out)


def ulps(a, b):
    """Distance in units in the last place of b's precision (float32 or
    float64), elementwise."""
    import numpy as np
    if b.dtype.itemsize == 8:
        ia = a.astype("<f8").view("<i8").astype(object)
        ib = b.astype("<f8").view("<i8").astype(object)
        ia = np.where(ia < 0, -(2**63) - ia, ia)
        ib = np.where(ib < 0, -(2**63) - ib, ib)
        return np.abs(ia - ib)
    ia = a.astype("<f4").view("<i4").astype(np.int64)
    ib = b.astype("<f4").view("<i4").astype(np.int64)
    ia = np.where(ia < 0, -(2**31) - ia, ia)
    ib = np.where(ib < 0, -(2**31) - ib, ib)
    return np.abs(ia - ib)


def compare(a, b, grads, workers):
    """Max abs and ULP differences of a and b, and whether every element is
    within the bound of two sums of W terms plus their divisions, in b's
    precision."""
    import numpy as np
    f64 = next(iter(b.values())).dtype.itemsize == 8
    u = 2.0 ** (-53 if f64 else -24)
    out = {"max_abs": 0.0, "max_ulps": 0, "within_bound": True}
    for name in b:
        x, y = a[name].astype(np.float64), b[name].astype(np.float64)
        abs_sum = sum(np.abs(g[name].astype(np.float64)) for g in grads) / workers
        bound = 2 * (workers - 1 + 1) * u * abs_sum + 2 * u * np.abs(y) + (2e-323 if f64 else 1e-44)
        diff = np.abs(x - y)
        out["max_abs"] = max(out["max_abs"], float(diff.max(initial=0)))
        out["max_ulps"] = max(out["max_ulps"], int(ulps(a[name], b[name]).max(initial=0)))
        out["within_bound"] &= bool(np.all(diff <= bound))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True, help="what tools/torch_grads.py wrote")
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--result", required=True, help="ringsim's --out file")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    a = p.parse_args(argv)
    try:
        grads = [ringsim_st.read(os.path.join(a.dir, f"worker{r}.safetensors"))
                 for r in range(a.workers)]
        reference = ringsim_st.read(os.path.join(a.dir, "reference.safetensors"))
        result = ringsim_st.read(a.result)
    except (OSError, ValueError) as e:
        print(f"torch_check: {clean(e)}", file=sys.stderr)
        return 2
    if set(result) != set(reference):
        print(f"torch_check: {clean(a.result)}: tensors {[clean(n) for n in sorted(result)]} differ "
              f"from the reference's {[clean(n) for n in sorted(reference)]}", file=sys.stderr)
        return 2
    gloo = run_gloo(a.workers, a.dir)
    report = {"workers": a.workers, "params": len(reference),
              "elements": int(sum(v.size for v in reference.values())),
              "ringsim_vs_torch_mean": compare(result, reference, grads, a.workers),
              "ringsim_vs_gloo_all_reduce": compare(result, gloo, grads, a.workers),
              "gloo_vs_torch_mean": compare(gloo, reference, grads, a.workers)}
    ok = (report["ringsim_vs_torch_mean"]["within_bound"]
          and report["ringsim_vs_gloo_all_reduce"]["within_bound"])
    if a.json:
        print(json.dumps(report, indent=2))
    else:
        for key in ("ringsim_vs_torch_mean", "ringsim_vs_gloo_all_reduce", "gloo_vs_torch_mean"):
            r = report[key]
            print(f"{key:28s} max abs {r['max_abs']:.3g}  max {r['max_ulps']} ulps  "
                  f"{'within the bound' if r['within_bound'] else 'OUTSIDE THE BOUND'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
