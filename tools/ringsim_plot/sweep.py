"""ringsim-plot sweep: the all-reduce time against the world size, one
line per algorithm, from `ringsim model --workers LIST --algo all --json`
(or `--topo ...,nodes=LIST`): the schedule simulation's time of each
algorithm at each size, the fastest marked at each, and where the fastest
changes printed on stdout: how each algorithm's time grows with W, for a
class, without a shell loop (docs/tools.md).
"""
from . import output  # output.save, looked up when called (tests watch what is saved)
from .output import clean
from .schema import check_sweep_report
from .style import figure


def load(path):
    """The model report's rows, checked: [(W, nodes or None, {algo: us},
    fastest)], in the report's order."""
    doc = output.read_report(path, "`ringsim model --json`")
    check_sweep_report(path, doc)
    # the names as ringsim prints them (a hand-edited report's too)
    out = [(r["workers"], r.get("nodes"),
            {clean(a): t["sim_ns"] / 1e3 for a, t in r["algos"].items()}, clean(r["fastest"]))
           for r in doc["rows"]]
    return doc, out


def changes(rows):
    """[(W before, W after, fastest before, fastest after)] where the
    fastest algorithm changes from one size to the next."""
    return [(w0, w1, f0, f1) for (w0, _, _, f0), (w1, _, _, f1) in zip(rows, rows[1:])
            if f0 != f1]


def sweep_figure(path):
    """The figure, its title and the report's rows (load) of the model
    report at path."""
    doc, rows = load(path)
    # every row's algorithms, in order (a row leaves out one that cannot
    # run on its nodes: nvls on one node alone)
    algos = list(dict.fromkeys(a for _, _, t, _ in rows for a in t))
    fig = figure(figsize=(8, 5.2), layout="constrained")
    ax = fig.subplots()
    for i, algo in enumerate(algos):
        mine = [(w, t[algo]) for w, _, t, _ in rows if algo in t]
        ax.plot([w for w, _ in mine], [t for _, t in mine], "o-", color=f"C{i}",
                markersize=4, lw=1.4, label=algo)
    # the fastest at each size, a star on its line
    ax.plot([w for w, _, _, _ in rows], [t[f] for _, _, t, f in rows], "*", color="k",
            markersize=11, linestyle="none", label="fastest")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    xs = [w for w, _, _, _ in rows]
    ax.set_xticks(xs, [str(w) for w in xs], fontsize=8)
    ax.minorticks_off()
    topo = any(n is not None for _, n, _, _ in rows)
    ax.set_xlabel("workers W" + (" (nodes x GPUs)" if topo else ""))
    ax.set_ylabel("simulated time (us)")
    ax.legend(fontsize=8, ncol=2)
    size = doc.get("bytes")
    title = (f"all-reduce time against W: {clean(str(doc.get('model', 'model')))}"
             + (f", {size:,} bytes per worker" if isinstance(size, int) else "")
             + " (ringsim model, schedules alone)")
    ax.set_title(title, fontsize=9)
    return fig, title, rows


def cmd_sweep(args):
    fig, title, rows = sweep_figure(args.report)
    output.save(fig, args.out, title, tight=False)
    lines = [f"W={w}: fastest {f} ({t[f]:.3f} us)" for w, _, t, f in rows]
    lines += [f"crossover {f0} -> {f1} between W={w0} and W={w1}"
              for w0, w1, f0, f1 in changes(rows)]
    print("\n".join(lines))
