#!/usr/bin/python3
"""Real gradients from PyTorch, as DDP's workers would have them.

Builds a small model (an MLP or a small CNN), splits one batch into W shards,
runs forward and backward on each shard (what each DDP rank does), and writes:

    DIR/model.json               the params, for ringsim --params
    DIR/worker{r}.safetensors    each worker's local gradients, for --grads
    DIR/reference.safetensors    torch.stack(grads).mean(dim=0)

(DIR is made first, a refusal one line and exit 2 before the work; each
file is written whole or not at all.)

    tools/torch_grads.py --workers 4 --out grads/
    build/ringsim --workers 4 --params grads/model.json \\
        --grads 'grads/worker{r}.safetensors' --out grads/ringsim.safetensors
    tools/torch_check.py --dir grads --workers 4 --result grads/ringsim.safetensors
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ringsim_st  # noqa: E402
from ringsim_plot.output import ToolError, replacing  # noqa: E402


def build_model(kind):
    import torch.nn as nn
    if kind == "mlp":
        return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)), (32,)
    return nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 6 * 6, 10)), (1, 8, 8)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=4, help="W, the number of shards (default 4)")
    p.add_argument("--out", required=True, help="directory to write into")
    p.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    p.add_argument("--batch", type=int, default=64, help="global batch size (default 64)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", choices=("f32", "f64"), default="f32",
                   help="the model's precision: f32 (default) or f64 (model.double())")
    a = p.parse_args(argv)
    if a.workers < 1 or a.batch < a.workers:
        p.error("need 1 <= --workers <= --batch")
    try:  # the directory first: a refusal before the work, not after
        os.makedirs(a.out, exist_ok=True)
        if not os.access(a.out, os.W_OK | os.X_OK):
            raise PermissionError(13, "cannot write in it")
    except OSError as e:
        print(f"torch_grads: --out {a.out}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        write_all(a)
    except ToolError as e:  # a file that could not be written (each whole or not at all)
        print(f"torch_grads: {e}", file=sys.stderr)
        return 2
    return 0


def write_all(a):
    """The gradients of --workers shards, and the files of DIR."""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(a.seed)
    model, shape = build_model(a.model)
    x = torch.randn(a.batch, *shape)
    if a.dtype == "f64":
        model, x = model.double(), x.double()
    y = torch.randint(0, 10, (a.batch,))
    grads = []
    for xs, ys in zip(torch.chunk(x, a.workers), torch.chunk(y, a.workers)):
        model.zero_grad()
        F.cross_entropy(model(xs), ys).backward()
        grads.append({n: p.grad.detach().clone() for n, p in model.named_parameters()})
    names = [n for n, _ in model.named_parameters()]
    with replacing(os.path.join(a.out, "model.json")) as tmp, open(tmp, "w") as f:
        json.dump({"name": f"torch-{a.model}", "description": "gradients from tools/torch_grads.py",
                   "params": [{"name": n, "shape": list(grads[0][n].shape), "dtype": a.dtype}
                              for n in names]},
                  f, indent=1)
    st_dtype = a.dtype.upper()
    for r, g in enumerate(grads):
        ringsim_st.write(os.path.join(a.out, f"worker{r}.safetensors"), g, st_dtype)
    ringsim_st.write(os.path.join(a.out, "reference.safetensors"),
                     {n: torch.stack([g[n] for g in grads]).mean(dim=0) for n in names}, st_dtype)
    print(f"torch_grads: {len(names)} params ({a.dtype}), {a.workers} workers -> {a.out}")


if __name__ == "__main__":
    sys.exit(main())
