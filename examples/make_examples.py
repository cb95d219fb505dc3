#!/usr/bin/env python3
"""Write the parameter-shape examples: model.json, mlp.json, contention.json,
resnet18.json, gpt2_small.json, and bucket_1mib.json, bucket_25mib.json and
bucket_1gib.json (one bucket each: docs/algorithms.md's table of a cluster). Shapes follow torchvision's resnet18 and Hugging Face's
GPT2Model (only trainable parameters: gradients, not BatchNorm running
statistics; GPT-2's output layer is tied to wte). Run from anywhere:
    examples/make_examples.py
"""
import json
import os


def resnet18():
    params = [("conv1.weight", [64, 3, 7, 7])]
    params += [("bn1.weight", [64]), ("bn1.bias", [64])]
    cin = 64
    for layer, cout in enumerate([64, 128, 256, 512], start=1):
        for block in range(2):
            p = f"layer{layer}.{block}."
            stride_down = block == 0 and cin != cout
            params.append((p + "conv1.weight", [cout, cin if block == 0 else cout, 3, 3]))
            params += [(p + "bn1.weight", [cout]), (p + "bn1.bias", [cout])]
            params.append((p + "conv2.weight", [cout, cout, 3, 3]))
            params += [(p + "bn2.weight", [cout]), (p + "bn2.bias", [cout])]
            if stride_down:
                params.append((p + "downsample.0.weight", [cout, cin, 1, 1]))
                params += [(p + "downsample.1.weight", [cout]),
                           (p + "downsample.1.bias", [cout])]
        cin = cout
    params += [("fc.weight", [1000, 512]), ("fc.bias", [1000])]
    return params


def gpt2_small(d=768, layers=12, vocab=50257, ctx=1024):
    params = [("wte.weight", [vocab, d]), ("wpe.weight", [ctx, d])]
    for i in range(layers):
        p = f"h.{i}."
        params += [
            (p + "ln_1.weight", [d]), (p + "ln_1.bias", [d]),
            (p + "attn.c_attn.weight", [d, 3 * d]), (p + "attn.c_attn.bias", [3 * d]),
            (p + "attn.c_proj.weight", [d, d]), (p + "attn.c_proj.bias", [d]),
            (p + "ln_2.weight", [d]), (p + "ln_2.bias", [d]),
            (p + "mlp.c_fc.weight", [d, 4 * d]), (p + "mlp.c_fc.bias", [4 * d]),
            (p + "mlp.c_proj.weight", [4 * d, d]), (p + "mlp.c_proj.bias", [d]),
        ]
    params += [("ln_f.weight", [d]), ("ln_f.bias", [d])]
    return params


def mlp(sizes):
    params = []
    for i, (a, b) in enumerate(zip(sizes, sizes[1:])):
        params += [(f"fc{i + 1}.weight", [b, a]), (f"fc{i + 1}.bias", [b])]
    return params


def count(params):
    total = 0
    for _, shape in params:
        n = 1
        for d in shape:
            n *= d
        total += n
    return total


def write(path, name, description, params):
    doc = {"name": name, "description": description,
           "params": [{"name": n, "shape": s} for n, s in params]}
    with open(path, "w") as f:
        f.write("{\n")
        f.write(f'  "name": {json.dumps(name)},\n')
        f.write(f'  "description": {json.dumps(description)},\n')
        f.write('  "params": [\n')
        rows = [f'    {{"name": {json.dumps(n)}, "shape": {json.dumps(s)}}}'
                for n, s in params]
        f.write(",\n".join(rows) + "\n  ]\n}\n")
    with open(path) as f:
        assert json.load(f) == doc, path
    print(f"{path}: {len(params)} params, {count(params):,} elements")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    write(os.path.join(here, "model.json"), "mlp-784-256-10",
          "A small MLP for MNIST (784-256-10): the model a newcomer runs first.",
          mlp([784, 256, 10]))
    write(os.path.join(here, "mlp.json"), "mlp-3-4-2",
          "A tiny MLP (3-4-2): 26 gradients, small enough to print every value.",
          mlp([3, 4, 2]))
    p = resnet18()
    write(os.path.join(here, "resnet18.json"), "resnet18",
          f"torchvision ResNet-18's trainable parameters ({count(p):,} elements).", p)
    write(os.path.join(here, "contention.json"), "contention-80k",
          "One parameter of 80,000 elements (320,000 bytes of f32): the worked "
          "contention example of docs/algorithms.md.", [("g", [80000])])
    p = gpt2_small()
    write(os.path.join(here, "gpt2_small.json"), "gpt2-small",
          f"GPT-2 small (Hugging Face GPT2Model, 124M): {count(p):,} elements; "
          "the LM head is tied to wte.", p)
    for size, elems in (("1mib", 1 << 18), ("25mib", 25 << 18), ("1gib", 1 << 28)):
        label = size[:-3] + " " + size[-3:].replace("mib", "MiB").replace("gib", "GiB")
        write(os.path.join(here, f"bucket_{size}.json"), f"bucket-{size}",
              f"One parameter of {elems:,} f32 elements ({label}): one bucket "
              "of docs/algorithms.md's table of a cluster "
              "(scripts/crossover-table).", [("g", [elems])])


if __name__ == "__main__":
    main()
