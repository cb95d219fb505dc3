"""ringsim-plot compare: time and busbw across a trace's runs (against W
and size, with the ring's theory), or, with --bench (and --model), time
against size per algorithm from ringsim bench (and model) JSON, with the
crossovers where the fastest algorithm changes, printed too.
"""
import json
import math
import os

from . import output  # output.save, looked up when called (tests watch what is saved)
from .output import ToolError, progress
from .replay import ALGO_NAMES, pick_run
from .style import pyplot


def parse_runs(text):
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ToolError(f"--runs '{text}': expected run ids separated by commas") from None


def plural(noun, ids, verb="have", verb_one="has"):
    """plural('run', ['1', '2']) -> 'runs 1,2 have'; one id -> 'run 1 has'."""
    if len(ids) == 1:
        return f"{noun} {ids[0]} {verb_one}"
    return f"{noun}s {','.join(ids)} {verb}"


def compare_runs(con, args):
    """The runs compare draws, as dicts (run_id, workers, bytes, ns, busbw,
    clock): --runs, or by default every completed run of the same kind as the
    latest one. Runs with a simulated network (--net) use simulated time and
    are never mixed with wall-clock runs."""
    if args.runs:
        ids = parse_runs(args.runs)
    else:
        ids = [r[0] for r in con.execute("SELECT run_id FROM run WHERE status = 'ok' ORDER BY run_id")]
    runs = []
    for rid in ids:
        run = pick_run(con, args.trace, rid)  # checked as every command's runs are
        rid, W, size, wall, busbw, status, net, sim, algo = (
            run[k] for k in ("run_id", "workers", "bytes", "wall_ns", "busbw_gbs", "status",
                             "net_model", "sim_ns", "algo"))
        algo = algo or "ring"
        if not isinstance(busbw, (int, float)) or isinstance(busbw, bool):
            busbw = None
        if status != "ok" or W < 2:
            continue
        if net is not None and sim:
            runs.append({"run_id": rid, "workers": W, "bytes": size, "ns": sim, "clock": "sim",
                         "busbw": size / sim * 2 * (W - 1) / W, "algo": algo})
        elif net is None and wall and busbw is not None:
            runs.append({"run_id": rid, "workers": W, "bytes": size, "ns": wall, "clock": "wall",
                         "busbw": busbw, "algo": algo})
    clocks = {r["clock"] for r in runs}
    if len(clocks) > 1:
        if args.runs:
            sim = [str(r["run_id"]) for r in runs if r["clock"] == "sim"]
            wall = [str(r["run_id"]) for r in runs if r["clock"] == "wall"]
            raise ToolError(f"--runs {args.runs}: {plural('run', sim)} a simulated network "
                            f"(--net) and {plural('run', wall, 'do', 'does')} not: compare one "
                            "kind at a time")
        # the latest run's kind, unless it has too few runs to compare
        latest = runs[-1]["clock"]
        if sum(r["clock"] == latest for r in runs) < 2:
            latest = "wall" if latest == "sim" else "sim"
        left = [r for r in runs if r["clock"] != latest]
        runs = [r for r in runs if r["clock"] == latest]
        kinds = {"sim": "simulated (--net)", "wall": "wall-clock"}
        progress(f"comparing the {len(runs)} {kinds[latest]} runs; left out {len(left)} "
                 f"{kinds[left[0]['clock']]} (--runs to choose)")
    if len(runs) < 2:
        raise ToolError("compare needs at least two completed runs with more than one worker")
    return runs


def size_text(size):
    """8 -> '8 B', 2048 -> '2 KiB', 67108864 -> '64 MiB' (as ringsim bench)."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size:,} B"


def read_json_objects(path, what):
    """Every JSON object in path: JSON Lines (ringsim bench --json) or
    objects one after another, pretty-printed (ringsim model --json in a
    loop). Refuses a file that holds none, or anything else."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise ToolError(f"{what} {path}: cannot read: {e.strerror}") from None
    decoder, objects, at = json.JSONDecoder(), [], 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            break
        try:
            obj, at = decoder.raw_decode(text, at)
        except ValueError as e:
            raise ToolError(f"{what} {path}: not JSON at character {at}: {e.msg}") from None
        except RecursionError:  # Python's decoder's limit: ringsim nests 3 deep
            raise ToolError(f"{what} {path}: not JSON ringsim writes at character {at}: "
                            "nested too deeply") from None
        if not isinstance(obj, dict):
            raise ToolError(f"{what} {path}: expected JSON objects, found {type(obj).__name__}")
        objects.append(obj)
    if not objects:
        raise ToolError(f"{what} {path}: no JSON objects")
    return objects


def bench_points(path):
    """Measured times from `ringsim bench --algo all --json` lines:
    {(W, size, algo): time in us} (the mean time, as nccl-tests reports)."""
    points = {}
    for i, row in enumerate(read_json_objects(path, "--bench")):
        try:
            key = (int(row["workers"]), int(row["size"]), str(row["algo"]))
            points[key] = float(row["time_us"])
        except (KeyError, TypeError, ValueError):
            raise ToolError(f"--bench {path}: object {i + 1} is not a line of ringsim bench "
                            "--json (it needs workers, size, algo and time_us)") from None
    return points


def model_points(path):
    """Predicted times from `ringsim model --algo all --json` objects, one
    per size: {(W, size, algo): simulated time in us}."""
    points = {}
    for i, obj in enumerate(read_json_objects(path, "--model")):
        try:
            for a in obj["algos"]:
                points[(int(obj["workers"]), int(obj["bytes"]), str(a["algo"]))] = a["sim_ns"] / 1e3
        except (KeyError, TypeError, ValueError):
            raise ToolError(f"--model {path}: object {i + 1} is not the output of ringsim model "
                            "--algo all --json (it needs workers, bytes and algos)") from None
    return points


def crossovers(points, workers):
    """Where the fastest algorithm changes with size, for W = workers:
    (fastest, changes). fastest is [(size, algo)] for every size at which
    every algorithm of the data has a time; changes is [(size before, size
    after, algo before, algo after)] for each pair of consecutive such sizes
    whose fastest differ (so a crossover lies between them)."""
    algos = sorted({a for w, _, a in points if w == workers})
    sizes = sorted({s for w, s, _ in points if w == workers})
    fastest = []
    for size in sizes:
        times = {a: points.get((workers, size, a)) for a in algos}
        if all(t is not None for t in times.values()):
            fastest.append((size, min(algos, key=lambda a: (times[a], a))))
    changes = [(s0, s1, a0, a1) for (s0, a0), (s1, a1) in zip(fastest, fastest[1:]) if a0 != a1]
    return fastest, changes


def crossover_lines(kind, points, workers):
    """The text compare prints for one W and one kind (measured or
    predicted): the fastest by size range, then each crossover."""
    fastest, changes = crossovers(points, workers)
    spans = []
    for size, algo in fastest:
        if spans and spans[-1][2] == algo:
            spans[-1][1] = size
        else:
            spans.append([size, size, algo])
    ranges = ", ".join(f"{a} {size_text(lo)}" + (f"..{size_text(hi)}" if hi != lo else "")
                       for lo, hi, a in spans)
    lines = [f"W={workers} {kind}: fastest {ranges}"]
    for s0, s1, a0, a1 in changes:
        lines.append(f"W={workers} {kind}: crossover {a0} -> {a1} between {size_text(s0)} "
                     f"and {size_text(s1)}")
    if not changes and fastest:
        lines.append(f"W={workers} {kind}: no crossover, {fastest[0][1]} fastest at every size")
    return lines


def cmd_compare_algorithms(args):
    """compare --bench: time against size per algorithm and W, measured
    (bench) and predicted (model), with the crossovers marked; the same
    crossovers printed on stdout."""
    measured = bench_points(args.bench)
    predicted = model_points(args.model) if args.model else {}
    widths = sorted({w for w, _, _ in measured})
    algos = sorted({a for _, _, a in measured} | {a for _, _, a in predicted},
                   key=lambda a: (list(ALGO_NAMES).index(a) if a in ALGO_NAMES else 99, a))
    lines = []
    for W in widths:
        lines += crossover_lines("measured", measured, W)
        if any(w == W for w, _, _ in predicted):
            lines += crossover_lines("predicted", predicted, W)
    plt = pyplot()
    fig, axes = plt.subplots(1, len(widths), figsize=(7 * len(widths), 5.8), squeeze=False,
                             layout="constrained")
    colours = {a: f"C{i}" for i, a in enumerate(algos)}
    for ax, W in zip(axes.flat, widths):
        for algo in algos:
            for points, style, kind in ((measured, "o-", "measured"), (predicted, "x--", "predicted")):
                mine = sorted((s, t) for (w, s, a), t in points.items() if w == W and a == algo)
                if mine:
                    ax.plot([s for s, _ in mine], [t for _, t in mine], style, color=colours[algo],
                            markersize=4, lw=1.2 if kind == "measured" else 0.9,
                            label=f"{algo} {kind}")
        for points, kind, colour, y in ((measured, "measured", "#c0392b", 0.97),
                                        (predicted, "predicted", "0.35", 0.03)):
            for s0, s1, a0, a1 in crossovers(points, W)[1]:
                x = math.sqrt(s0 * s1)  # halfway between the sizes, on the log axis
                ax.axvline(x, color=colour, linestyle="-" if kind == "measured" else ":", lw=1)
                ax.text(x, y, f"{a0}\u2192{a1}", rotation=90, fontsize=7, color=colour,
                        ha="right", va="top" if y > 0.5 else "bottom",
                        transform=ax.get_xaxis_transform())
        from matplotlib.ticker import FuncFormatter, LogLocator
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(LogLocator(base=2, numticks=12))
        ax.xaxis.set_major_formatter(FuncFormatter(
            lambda x, _: size_text(int(round(x))).replace(",", "") if x >= 1 else ""))
        ax.tick_params(axis="x", labelsize=7)
        ax.set_yscale("log")
        ax.set_xlabel("bytes per worker (S)")
        ax.set_ylabel("time (us): measured wall, predicted simulated")
        ax.set_title(f"W={W}: crossovers where the fastest changes\n"
                     f"(red: measured; grey dotted: predicted)", fontsize=9)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=5,
                  frameon=False)
    title = (f"all-reduce time against size per algorithm: measured ({os.path.basename(args.bench)})"
             + (f" and predicted ({os.path.basename(args.model)})" if args.model else ""))
    fig.suptitle(title, fontsize=10)
    output.save(fig, args.out, title)
    plt.close(fig)
    print("\n".join(lines))


def cmd_compare(con, run_ignored, args):
    plt = pyplot()
    runs = compare_runs(con, args)
    clock = runs[0]["clock"]
    unit = "simulated" if clock == "sim" else "wall"
    busbw = max(r["busbw"] for r in runs)  # the best measured: the reference link speed
    algos = sorted({r["algo"] for r in runs}, key=lambda a: (a != "ring", a))
    # a series per algorithm (named unless every run is the ring's) and W
    named = algos != ["ring"]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 5.5), layout="constrained")
    for W in sorted({r["workers"] for r in runs}):
        colour = None
        for algo in algos:
            mine = sorted((r for r in runs if r["workers"] == W and r["algo"] == algo),
                          key=lambda r: r["bytes"])
            if not mine:
                continue
            sizes = [r["bytes"] for r in mine]
            a1.plot(sizes, [r["ns"] / 1e3 for r in mine], "o-" if algo == "ring" else "s--",
                    label=f"W={W}{' ' + algo if named else ''} "
                          f"{'simulated' if clock == 'sim' else 'measured'}")
            colour = colour or a1.lines[-1].get_color()
        sizes = sorted({r["bytes"] for r in runs if r["workers"] == W})
        # markers too: with one size the theory is a single point
        a1.plot(sizes, [2 * (W - 1) / W * s / (busbw * 1e9) * 1e6 for s in sizes], "x:", markersize=8,
                color=colour, label=f"W={W} ring at the best busbw, {busbw:.2f} GB/s")
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("bytes per worker (S)")
    a1.set_ylabel(f"{unit} time (us)")
    a1.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    a1.set_title("time against size; dotted: 2(W-1)/W x S / busbw")
    for size in sorted({r["bytes"] for r in runs}):
        for algo in algos:
            mine = sorted((r for r in runs if r["bytes"] == size and r["algo"] == algo),
                          key=lambda r: r["workers"])
            if mine:
                a2.plot([r["workers"] for r in mine], [r["busbw"] for r in mine],
                        "o-" if algo == "ring" else "s--",
                        label=f"S={size:,} B" + (f" {algo}" if named else ""))
    a2.axhline(busbw, color="0.5", linestyle=":", label="ideal ring: busbw independent of W")
    a2.set_xlabel("workers (W)")
    a2.set_ylabel(f"busbw (GB/s, {unit} time)")
    a2.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=3, frameon=False)
    a2.set_title("bus bandwidth against W")
    ids = ",".join(str(r["run_id"]) for r in runs)
    title = f"{len(runs)} runs ({ids if len(ids) <= 60 else ids[:57] + '...'}), {unit} time"
    if named:
        title += f"; algorithms: {', '.join(algos)} (busbw: S / time x 2(W-1)/W for each)"
    fig.suptitle(title, fontsize=10)
    output.save(fig, args.out, title)
    plt.close(fig)
