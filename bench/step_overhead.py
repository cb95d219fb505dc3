#!/usr/bin/python3
"""bench/step_overhead.py - what ringsim step adds, on threads, to the
all-reduces it contains: `ringsim step --algo gloo-ring` (W = 4, its
threads running step 1's one bucket and one later step's rebuilt buckets,
laid out as DDP's, checked) against the same two all-reduces as plain
runs (`ringsim --algo gloo-ring --bucket-mb 0`, and `--like ddp-gloo`: the
rebuilt buckets, DDP's layout), each pair timed in turn,
A B A B ..., the wall time of the whole commands; prints each model's
median step / runs ratio (the target: at most 1.10).

    bench/step_overhead.py RINGSIM [PAIRS]     (default 7 pairs per model)
"""
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples")
NET = "latency=5us,bandwidth=25GB/s"


def timed(argv):
    t0 = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__.split("\n\n")[1])
    ringsim = os.path.abspath(sys.argv[1])
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    print(f"{'model':10} {'step s':>8} {'runs s':>8} {'step/runs':>10}  (medians of {pairs} pairs)")
    for name in ("model.json", "resnet18.json"):
        model = os.path.join(EXAMPLES, name)
        step = [ringsim, "step", "-p", model, "-w", "4", "--net", NET, "--algo", "gloo-ring",
                "--compute", "flops=10T,rows=512"]
        runs = [[ringsim, "-p", model, "-w", "4", "--net", NET, "--no-trace", "--algo",
                 "gloo-ring", "--bucket-mb", "0"],
                [ringsim, "-p", model, "-w", "4", "--net", NET, "--no-trace", "--like",
                 "ddp-gloo"]]
        timed(step)  # warm-up: the page cache
        a, b, ratios = [], [], []
        for _ in range(pairs):
            a.append(timed(step))
            b.append(sum(timed(r) for r in runs))
            ratios.append(a[-1] / b[-1])
        print(f"{name[:-5]:10} {statistics.median(a):8.3f} {statistics.median(b):8.3f} "
              f"{statistics.median(ratios):10.3f}")


if __name__ == "__main__":
    main()
