#!/usr/bin/python3
"""Measure a PyTorch model's forward and backward on this CPU and write
model.json with each param's forward_us and backward_us, for ringsim step
(docs/step.md).

    tools/torch_profile.py --model mlp --out model.json
    tools/torch_profile.py --model mypkg.models:make --out model.json

--model is the tools' mlp or cnn (tools/torch_grads.py's), or
package.module:function, a function of no arguments returning (model,
batch): the batch is the forward's input (a tensor, or a tuple of them),
and the loss is the sum of every floating-point tensor the forward
returns (a tensor, or a tuple, list or dict of them, as a model returning
(logits, aux) or a HuggingFace ModelOutput). A param with
requires_grad=False (frozen) gets no gradient and DDP leaves it out of its
buckets: it is left out of model.json too, and named on stderr; its
layer's forward counts as time outside the layers. Each of --iterations timed steps (after
--warmup) runs the forward, then the backward with a hook on every param
that notes when its gradient is ready; per param the median over the
steps is taken. backward_us is the time from the gradient before it in
ringsim's backward order (model.json's order reversed: the last param's is
from the backward's start) to its own; where autograd readied a param
before the one after it in model order (a Conv2d's weight before its
bias), its gradient counts as ready with the later one, and its backward_us
is 0. forward_us: each layer's forward time, from hooks on the layers that
own params, shared among its params by their elements; the forward's time
outside those layers (activations, the loss) goes to the first param.

--out is checked before the profile runs (its directory must exist and
be writable; a name ending in '/' and the source file of a module loaded,
as --model's own, are refused), and model.json is written whole or not at
all (a new file beside it, renamed over it). A --model whose import,
function, forward or backward raises, or whose forward's output has no
autograd graph (torch.no_grad()), is refused too. A refusal is one line on
stderr, exit 2.
"""
import argparse
import importlib
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def refuse(message):
    """One line naming the input and what is wrong: exit 2 from the command
    line (the SystemExit's text printed by __main__), the message in the
    SystemExit for a caller of main."""
    raise SystemExit(f"torch_profile: {message}")


def one_line(e):
    """An exception as a refusal names it: its type and its first line."""
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}" + (f": {lines[0]}" if lines else "")


def check_out(out):
    """Refuse an --out that cannot be written, before the profile runs."""
    if os.path.isdir(out):
        refuse(f"--out {out}: is a directory, not a file")
    if out.endswith(os.sep) or (os.altsep and out.endswith(os.altsep)):
        refuse(f"--out {out}: names a directory (it ends in '{out[-1]}'), not a file")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        refuse(f"--out {out}: no directory {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        refuse(f"--out {out}: cannot write in {folder}")


def check_out_not_source(out, spec):
    """Refuse an --out that is the source file of a module loaded (the
    --model's module, one it imports, this tool's): writing model.json
    would destroy it. Compared by device and inode (a link, another path)."""
    try:
        target = os.stat(out)
    except OSError:  # nothing there yet: nothing to destroy
        return
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str):
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == (target.st_dev, target.st_ino):
            refuse(f"--out {out}: is the source of module '{name}' (--model '{spec}' loads "
                   "it): refusing to write over it; give another --out")


def output_loss(out):
    """The loss of a forward's output: the sum of every floating-point
    tensor in it (a tensor, or tuples, lists and dicts of them)."""
    import torch
    found = []

    def walk(x):
        if isinstance(x, torch.Tensor):
            if x.is_floating_point() or x.is_complex():
                found.append(x.sum().real if x.is_complex() else x.sum())
        elif isinstance(x, dict):
            for v in x.values():
                walk(v)
        elif isinstance(x, (tuple, list)):
            for v in x:
                walk(v)
    walk(out)
    if not found:
        refuse(f"the forward returned {type(out).__name__}, holding no floating-point tensor "
               "to take a loss from")
    return sum(found[1:], found[0])


def load_model(spec, batch):
    """(model, inputs as a tuple, loss(output)) for --model spec."""
    import torch
    import torch.nn.functional as F
    if spec in ("mlp", "cnn"):
        import torch_grads
        torch.manual_seed(0)
        model, shape = torch_grads.build_model(spec)
        x = torch.randn(batch, *shape)
        y = torch.randint(0, 10, (batch,))
        return model, (x,), lambda out: F.cross_entropy(out, y)
    if ":" not in spec:
        refuse(f"--model '{spec}': expected mlp, cnn or package.module:function")
    module, _, name = spec.partition(":")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        refuse(f"--model '{spec}': {e}")
    except Exception as e:  # the module's own code raised (a SyntaxError, ...)
        refuse(f"--model '{spec}': importing {module} raised {one_line(e)}")
    try:
        made = fn()
    except Exception as e:
        refuse(f"--model '{spec}': {name}() raised {one_line(e)}")
    if not (isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], torch.nn.Module)):
        refuse(f"--model '{spec}': the function must return (model, batch), a "
               "torch.nn.Module and its input")
    model, inputs = made
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return model, inputs, output_loss


def profile(model, inputs, loss_of, warmup, iterations, spec):
    """Per param that requires grad (model order): median forward seconds
    (its layer's share) and median seconds from the backward's start to
    its gradient; and the median forward in all. A forward or backward
    that raises, or a loss autograd cannot differentiate (a forward under
    torch.no_grad()), is refused naming --model spec."""
    params = {n: p for n, p in model.named_parameters() if p.requires_grad}
    names = list(params)
    owners = [m for m in model.modules()
              if any(p.requires_grad for p in m.parameters(recurse=False))]
    ready, layer_s, starts = {}, {}, {}

    def pre(m, _args):
        starts[id(m)] = time.perf_counter()

    def post(m, _args, _out):
        layer_s[id(m)] = time.perf_counter() - starts[id(m)]

    hooks = [m.register_forward_pre_hook(pre) for m in owners]
    hooks += [m.register_forward_hook(post) for m in owners]
    for n, p in params.items():
        hooks.append(p.register_hook(lambda g, n=n: ready.__setitem__(n, time.perf_counter())))
    forward, grads, shares = [], {n: [] for n in names}, {n: [] for n in names}
    for it in range(warmup + iterations):
        model.zero_grad(set_to_none=True)
        ready.clear()
        t0 = time.perf_counter()
        try:
            out = model(*inputs)
        except Exception as e:
            refuse(f"--model '{spec}': its forward raised {one_line(e)}")
        loss = loss_of(out)
        t1 = time.perf_counter()
        if not loss.requires_grad:
            refuse(f"--model '{spec}': the forward's output has no autograd graph (computed "
                   "under torch.no_grad(), or detached): no backward to profile")
        try:
            loss.backward()
        except Exception as e:
            refuse(f"--model '{spec}': its backward raised {one_line(e)}")
        if it < warmup:
            continue
        forward.append(t1 - t0)
        missing = [n for n in names if n not in ready]
        if missing:
            refuse(f"param '{missing[0]}' got no gradient (unused in the forward?): "
                   "ringsim step needs every one's")
        for n in names:
            grads[n].append(ready[n] - t1)
        for m in owners:
            own = [(pn, p) for pn, p in m.named_parameters(recurse=False) if p.requires_grad]
            total = sum(p.numel() for _, p in own) or 1
            prefix = next(k for k, v in model.named_modules() if v is m)
            for pn, p in own:
                full = f"{prefix}.{pn}" if prefix else pn
                shares[full].append(layer_s.get(id(m), 0.0) * p.numel() / total)
    for h in hooks:
        h.remove()
    med = statistics.median
    return ({n: med(shares[n]) for n in names}, {n: med(grads[n]) for n in names},
            med(forward))


def backward_us(names, ready_s):
    """ringsim's backward_us: in model order reversed, each gradient's time
    after the one before (a gradient readied before the one after it in
    model order counts as ready with it)."""
    out, last = {}, 0.0
    for n in reversed(names):
        at = max(ready_s[n], last)
        out[n] = (at - last) * 1e6
        last = at
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default="mlp",
                   help="mlp, cnn, or package.module:function returning (model, batch)")
    p.add_argument("--out", required=True, help="the model.json to write")
    p.add_argument("--batch", type=int, default=64,
                   help="the batch of the tools' models (default 64)")
    p.add_argument("--iterations", type=int, default=20, help="timed steps (default 20)")
    p.add_argument("--warmup", type=int, default=3, help="steps not timed, first (default 3)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch's CPU threads (default 1: what one rank of a job on "
                   "this machine has)")
    a = p.parse_args(argv)
    if a.iterations < 1 or a.warmup < 0 or a.batch < 1 or a.threads < 1:
        p.error("--iterations, --batch and --threads are at least 1, --warmup at least 0")
    check_out(a.out)
    import torch
    from ringsim_plot.output import ToolError, replacing
    torch.set_num_threads(a.threads)
    model, inputs, loss_of = load_model(a.model, a.batch)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    frozen = [n for n, p in model.named_parameters() if not p.requires_grad]
    if not names:
        refuse(f"--model '{a.model}' has no params that require grad"
               + (f" ({len(frozen)} frozen)" if frozen else ""))
    if frozen:
        print(f"torch_profile: left out {len(frozen)} frozen param{'s' if len(frozen) > 1 else ''}"
              f" (requires_grad=False: no gradient, so not in DDP's buckets): "
              f"{', '.join(frozen)}", file=sys.stderr)
    check_out_not_source(a.out, a.model)
    fwd, ready, forward = profile(model, inputs, loss_of, a.warmup, a.iterations, a.model)
    fwd[names[0]] += max(0.0, forward - sum(fwd.values()))
    bwd = backward_us(names, ready)
    dtypes = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
              torch.bfloat16: "bf16"}
    params = []
    for n, prm in model.named_parameters():
        if not prm.requires_grad:
            continue
        if prm.dtype not in dtypes:
            refuse(f"param '{n}' is {prm.dtype}: ringsim takes f32, f64, f16 or bf16")
        params.append({"name": n, "shape": list(prm.shape), "dtype": dtypes[prm.dtype],
                       "forward_us": round(fwd[n] * 1e6, 3),
                       "backward_us": round(bwd[n], 3)})
    try:
        with replacing(a.out) as tmp, open(tmp, "w") as f:  # whole or not at all
            json.dump({"name": f"torch-profile-{a.model}",
                       "description": f"tools/torch_profile.py: {a.iterations} steps, batch "
                       f"{a.batch}, {a.threads} thread(s), medians",
                       "params": params}, f, indent=1)
    except ToolError as e:
        refuse(str(e))
    total_b = max(ready.values()) * 1e6
    print(f"torch_profile: {len(names)} params; forward {forward * 1e6:.1f} us, backward "
          f"{total_b:.1f} us (medians of {a.iterations}) -> {a.out}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except SystemExit as e:
        if isinstance(e.code, str):  # a refusal: its one line, exit 2
            print(e.code, file=sys.stderr)
            sys.exit(2)
        raise
