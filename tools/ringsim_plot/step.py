"""ringsim-plot step: a training step from `ringsim step --json` output
(docs/step.md). Per worker a compute lane (forward, then backward up to its
last gradient) and a communication lane (each bucket's all-reduce), the
part of the all-reduces after the step's last gradient shaded as exposed;
for the steps after the first, or for step 1 with --first; one lane for
every worker when their lanes are the same. With several rows (a list of
caps, sweep, --algo all), also the step time against the cap, per
algorithm, the best of each and DDP's default marked. --compare REPORT
draws a second report's lanes below, on the same time axis.
"""
from . import output  # output.save, looked up when called (tests watch what is saved)
from .output import ToolError, clean
from .schema import check_step_report
from .style import fit_title, pyplot

EXPOSED = "#c0392b"
# The most worker lanes a picture draws: ringsim step lists them for up to
# 64 workers (src/cli/step.c's STEP_JSON_LANES). A report of more (not
# ringsim's) has the first STEP_MAX_LANES - 1 drawn and the worker whose
# communication ends last, where 2,100 lanes made a figure 4,500 inches
# tall that took minutes.
STEP_MAX_LANES = 64
# A lane's two rows are 0.45 inch each up to this many lanes; more share
# the height of this many, at least 0.2 inch a row (64 lanes: 27 inches,
# their 6-point labels apart).
STEP_FULL_HEIGHT_LANES = 16
# The most all-reduces a lane draws one bar each. Past it (1 MiB buckets
# of a large model: 5,000 buckets, 20,000 bars, ran past 5 minutes) each
# lane draws its all-reduces merged where the gap between them is under
# 1/STEP_MERGE_PARTS of the step: at most STEP_MERGE_PARTS bars a lane,
# every instant of communication still inside a bar and every gap longer
# than that still drawn; the title and stdout say so.
STEP_MAX_BUCKETS = 256
STEP_MERGE_PARTS = 500


def load(path):
    """The step report, checked against what ringsim step writes
    (schema.check_step_report), its texts as ringsim prints a name
    (control characters as '?': the title and stdout show them)."""
    doc = output.read_report(path, "`ringsim step --json`")
    check_step_report(path, doc)
    for key in ("model", "hook"):
        if key in doc:
            doc[key] = clean(doc[key])
    for row in doc["rows"]:
        row["algo"] = clean(row["algo"])
    return doc


def chosen_lanes(timeline):
    """(the indices of the workers whose lanes are drawn, a note naming
    them when some are left out, else ''): every worker's up to
    STEP_MAX_LANES; past it the first STEP_MAX_LANES - 1 and the one whose
    last all-reduce ends last (the step's end), or the first
    STEP_MAX_LANES if that one is among them."""
    lanes = timeline.get("workers") or []
    W = len(lanes)
    if W <= STEP_MAX_LANES:
        return list(range(W)), ""
    last = max(range(W), key=lambda r: max([e for _, e in lanes[r]["allreduce"]] +
                                          [lanes[r]["last_grad_ns"]]))
    keep = list(range(STEP_MAX_LANES - 1 if last >= STEP_MAX_LANES - 1 else STEP_MAX_LANES))
    if last not in keep:
        keep.append(last)
    note = (f"lanes of {len(keep)} of {W} workers: w0-w{keep[-2] if last == keep[-1] else keep[-1]}"
            + (f" and w{last}, whose communication ends last" if last == keep[-1] else "")
            + f" (ringsim step lists at most {STEP_MAX_LANES})")
    return keep, note


def representative(timeline, chosen):
    """(the lanes drawn, their labels): one lane, labelled "every worker",
    when every chosen worker's forward, last gradient and all-reduces are
    the same (no straggler, the ring's symmetric schedule), else each
    chosen worker's own."""
    lanes = timeline.get("workers") or []
    if len(chosen) > 1 and all(lanes[r] == lanes[chosen[0]] for r in chosen):
        return [chosen[0]], [f"every worker (w0-w{len(lanes) - 1} alike)"]
    return chosen, [f"w{r}" for r in chosen]


def merged_spans(spans, min_gap):
    """spans ([start, end] pairs) as the fewest spans covering them where
    every gap left between two is at least min_gap: sorted by start, a
    span joined to the one before when it starts less than min_gap after
    that one ends."""
    out = []
    for start, end in sorted(spans):
        if out and start - out[-1][1] < min_gap:
            out[-1][1] = max(out[-1][1], end)
        else:
            out.append([start, end])
    return out


def lane_spans(timeline, chosen):
    """(per lane chosen, the spans its communication lane draws; a note
    when they are the all-reduces merged, else ''): each bucket's
    all-reduce up to STEP_MAX_BUCKETS buckets, past it merged_spans with
    gaps under 1/STEP_MERGE_PARTS of the step closed."""
    lanes = [timeline["workers"][r]["allreduce"] for r in chosen]
    n = len(timeline["buckets"])
    if n <= STEP_MAX_BUCKETS:
        return [[list(s) for s in spans] for spans in lanes], ""
    end = max([timeline["step_ns"]] + [e for spans in lanes for _, e in spans])
    min_gap = max(1, -(-end // STEP_MERGE_PARTS))
    drawn = [merged_spans(spans, min_gap) for spans in lanes]
    most = max(len(d) for d in drawn)
    return drawn, (f"{n} buckets a lane, their all-reduces drawn merged into at most {most} "
                   f"bar{'s' if most != 1 else ''} a lane (gaps under {min_gap / 1e3:.3g} us "
                   "closed)")


def pick_row(doc):
    """The row the lanes show: the fastest in all (the first of a tie)."""
    rows = doc["rows"]
    return min(rows, key=lambda r: r.get("total_ns", 0))


def draw_lanes(ax, timeline, title, chosen, spans, merged, labels=None):
    """The lanes of the workers chosen (chosen_lanes), top to bottom, their
    communication lanes' spans (lane_spans; merged: not one a bucket),
    each lane named by labels (default w0, w1, ...). Unless merged, every
    bucket's bar is labelled b0, b1, ...: inside it where it is wide
    enough, else written upright over it."""
    labels = labels or [f"w{r}" for r in chosen]
    lanes = [timeline["workers"][r] for r in chosen]
    ms = 1e-6
    last_grad = timeline["forward_ns"] + timeline["backward_ns"]
    for r, lane in enumerate(lanes):
        y = 2 * r
        ax.broken_barh([(0, lane["forward_ns"] * ms)], (y + 1.05, 0.8), color="0.65")
        ax.broken_barh([(lane["forward_ns"] * ms, (lane["last_grad_ns"] - lane["forward_ns"]) * ms)],
                       (y + 1.05, 0.8), color="#1f77b4")
        # one collection per colour and part (hidden, exposed), not a bar each
        bars = {}
        for b, (start, end) in enumerate(spans[r]):
            colour = "#ff7f0e" if b % 2 == 0 else "#ffbb78"
            hidden_end = min(end, max(start, last_grad))
            if hidden_end > start:
                bars.setdefault((colour, False), []).append((start * ms, (hidden_end - start) * ms))
            if end > hidden_end:
                bars.setdefault((colour, True), []).append((hidden_end * ms,
                                                            (end - hidden_end) * ms))
            if not merged:
                wide = (end - start) > 0.03 * max(1, timeline["step_ns"])
                ax.text((start + end) / 2 * ms, y + 0.55, f"b{b}", ha="center", va="center",
                        fontsize=7 if wide else 5, rotation=0 if wide else 90,
                        clip_on=True)
        for (colour, exposed), xs in bars.items():
            if exposed:
                ax.broken_barh(xs, (y + 0.15, 0.8), color=colour, edgecolor=EXPOSED, hatch="///",
                               linewidth=0.8)
            else:
                ax.broken_barh(xs, (y + 0.15, 0.8), color=colour, edgecolor="0.3", linewidth=0.4)
    ax.axvline(last_grad * ms, color="0.2", lw=0.8, ls="--")
    ax.axvspan(last_grad * ms, timeline["step_ns"] * ms, color=EXPOSED, alpha=0.08)
    ax.text(last_grad * ms, 2 * len(lanes) + 0.1, " last gradient", fontsize=8, va="bottom")
    ax.set_yticks([2 * r + t for r in range(len(lanes)) for t in (0.55, 1.45)])
    ax.set_yticklabels([f"{name} {k}" for name in labels for k in ("comm", "compute")],
                       fontsize=7 if len(lanes) <= STEP_FULL_HEIGHT_LANES else 6)
    ax.set_ylim(0, 2 * len(lanes) + 0.8)
    ax.invert_yaxis()
    ax.set_xlabel("simulated time (ms) from the step's start: grey forward, blue backward, "
                  + ("orange the all-reduces (merged), " if merged else
                     "orange each bucket's all-reduce, ") + "hatched red their exposed part",
                  fontsize=8)
    ax.set_title(title, fontsize=10)


def draw_sweep(ax, doc):
    algos = []
    for r in doc["rows"]:
        if r["algo"] not in algos:
            algos.append(r["algo"])
    for i, algo in enumerate(algos):
        mine = [r for r in doc["rows"] if r["algo"] == algo and r["cap_bytes"] > 0]
        if not mine:
            continue
        caps = [r["cap_bytes"] / 2 ** 20 for r in mine]
        steps = [r["later"]["step_ns"] / 1e6 for r in mine]
        ax.plot(caps, steps, "o-", color=f"C{i}", label=algo, markersize=4)
        for r, c, t in zip(mine, caps, steps):
            if r.get("best"):
                ax.plot([c], [t], "*", color=f"C{i}", markersize=14, markeredgecolor="k")
    ax.axvline(25, color="0.4", ls=":", lw=1)
    ax.text(25, ax.get_ylim()[1], " DDP's default", fontsize=8, va="top")
    ax.set_xscale("log")
    ax.set_xlabel("bucket_cap_mb (MiB)")
    ax.set_ylabel("step after the first (ms)")
    ax.set_title("step time against the bucket cap (the best of each marked *)", fontsize=10)
    ax.legend(fontsize=8)


def picked(doc, report, first_only):
    """What a report's lanes show: (row, timeline, title, lanes drawn,
    their labels, spans, merged note, note). The title names the model,
    W, the algorithm, the hook (when the report has one), the cap and the
    step."""
    row = pick_row(doc)
    # a run of one step has no later ones: its first is drawn
    first = first_only or doc.get("iterations") == 1
    timeline = row["first"] if first else row["later"]
    which = "step 1 (one bucket: DDP's first backward)" if first else \
        "a step after the first (DDP's rebuilt buckets)"
    exposed, step = timeline["exposed_ns"], timeline["step_ns"]
    hook = f"hook {doc['hook']}, " if doc.get("hook") else ""
    title = (f"{clean(doc.get('model', '?'))}, {doc.get('workers')} workers, {row['algo']}, "
             f"{hook}cap {row['cap_bytes'] / 2 ** 20:g} MiB: {which}; step {step / 1e6:.3f} ms, "
             f"{exposed / 1e6:.3f} ms exposed ({100 * exposed / step if step else 0:.1f}%)")
    chosen, note = chosen_lanes(timeline)
    chosen, labels = representative(timeline, chosen)
    spans, merged = lane_spans(timeline, chosen) if chosen else ([], "")
    note = "; ".join(n for n in (note, merged) if n)
    if note:
        title += f"; {note}"
    return row, timeline, title, chosen, labels, spans, merged, note


def cmd_step(args):
    doc = load(args.report)
    row, timeline, title, chosen, labels, spans, merged, note = picked(doc, args.report,
                                                                        args.first)
    exposed, step = timeline["exposed_ns"], timeline["step_ns"]
    sweep = len(doc["rows"]) > 1 and not args.compare
    lanes = len(chosen)
    if not lanes and not sweep:
        raise ToolError(f"{args.report}: the report has no worker lanes (ringsim step lists them "
                        f"for up to {STEP_MAX_LANES} workers) and one row: nothing to draw")
    other = None
    if args.compare:
        other_doc = load(args.compare)
        other = picked(other_doc, args.compare, args.first)
        if not other[3]:
            raise ToolError(f"{args.compare}: the report has no worker lanes (ringsim step lists "
                            f"them for up to {STEP_MAX_LANES} workers): nothing to compare")
    plt = pyplot()

    def lane_height(n):
        row_in = 0.45 if n <= STEP_FULL_HEIGHT_LANES else \
            max(0.2, 0.45 * STEP_FULL_HEIGHT_LANES / n)
        return 1.2 + row_in * 2 * n

    panels = [p for p in (lanes and "lanes", other and "other", sweep and "sweep") if p]
    heights = {"lanes": lane_height(lanes), "sweep": 4,
               "other": lane_height(len(other[3])) if other else 0}
    fig, axes = plt.subplots(len(panels), 1, figsize=(11, sum(heights[p] for p in panels)),
                             squeeze=False, layout="constrained",
                             gridspec_kw={"height_ratios": [heights[p] for p in panels]})
    for ax, panel in zip(axes[:, 0], panels):
        if panel == "lanes":
            draw_lanes(ax, timeline, fit_title(title, 11, 10), chosen, spans, bool(merged),
                       labels)
        elif panel == "other":
            _, o_timeline, o_title, o_chosen, o_labels, o_spans, o_merged, _ = other
            draw_lanes(ax, o_timeline, fit_title(o_title, 11, 10), o_chosen, o_spans,
                       bool(o_merged), o_labels)
        else:
            draw_sweep(ax, doc)
            if not lanes:
                ax.set_title(fit_title(title + " (no lanes: more than 64 workers)", 11, 10),
                             fontsize=10)
    if other:  # one time axis: both from 0 to the longer step's end
        lane_axes = [ax for ax, p in zip(axes[:, 0], panels) if p in ("lanes", "other")]
        right = max(ax.get_xlim()[1] for ax in lane_axes)
        for ax in lane_axes:
            ax.set_xlim(0, right)
        title = f"{title} | against: {other[2]}"
    output.save(fig, args.out, title, tight=False)
    plt.close(fig)
    print(f"{row['algo']} cap {row['cap_bytes'] / 2 ** 20:g} MiB: step {step / 1e3:.3f} us, "
          f"exposed {exposed / 1e3:.3f} us, {len(timeline['buckets'])} buckets"
          + (f"; {note}" if note else ""))
    if other:
        o_row, o_timeline = other[0], other[1]
        print(f"against {args.compare}: {o_row['algo']} cap {o_row['cap_bytes'] / 2 ** 20:g} "
              f"MiB: step {o_timeline['step_ns'] / 1e3:.3f} us, exposed "
              f"{o_timeline['exposed_ns'] / 1e3:.3f} us, {len(o_timeline['buckets'])} buckets")
