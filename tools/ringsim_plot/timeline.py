"""ringsim-plot timeline: a Gantt chart, one row per worker and a bar per
transfer (above TIMELINE_DETAIL_LIMIT transfers, a bar per worker and
step, aggregated in SQL), on the simulated or the wall clock.
"""
from . import output  # output.save, looked up when called (tests watch what is saved)
from .output import ToolError, progress
from .replay import (PHASES, algo_name, channel_column, participants, phase_abbrev, phase_label,
                     phases_present, pick_clock, run_failed, stop_times, time_columns, transfer_count)
from .style import figure, fit_title, phase_colour, shade, titled


# Above this many transfers, the timeline draws one bar per worker and step
# (aggregated in SQL) instead of one bar per transfer.
TIMELINE_DETAIL_LIMIT = 20000


def step_markers(con, run, sb, scale):
    """Where each (iteration, bucket, phase, step) began, in plot units:
    [(x, iter, bucket, phase, step)], time order."""
    rows = con.execute(
        f"SELECT min({sb}), iter, bucket, phase, step FROM transfer WHERE run_id = ? "
        "GROUP BY iter, bucket, phase, step ORDER BY 1", (run["run_id"],)).fetchall()
    return [(t / scale, it, b, ph, st) for t, it, b, ph, st in rows if t is not None]


def place_labels(labels, char, lanes):
    """Step labels [(priority, x, text)] into at most `lanes` rows, each at
    the lowest row where it runs into no other: [(x, text, row)] and the
    texts left out (no row had room). char: a character's width in x."""
    placed = [[] for _ in range(lanes)]  # per row: (x, width)
    drawn, left = [], []
    for _, x, label in sorted(labels):
        width = char * (len(label) + 1)
        for row, spans in enumerate(placed):
            if all(x + width <= px or x >= px + pw for px, pw in spans):
                spans.append((x, width))
                drawn.append((x, label, row))
                break
        else:
            left.append((x, label))
    return drawn, [label for _, label in sorted(left)]


# The timeline's rows of step labels (under the workers), and the least
# width a bar is drawn at, as a fraction of the time drawn (1/500: about
# 2 pixels of the 12-inch figure's 1,100-pixel axis at 120 dpi): a 21 us
# receive on a 100 ms axis would be a fifth of a pixel. Six rows: a W=4
# ring's six steps each find one even when all begin within a label's
# width, as in a failed run whose axis runs on to its timeout (a row past
# the fourth is used only when the rows above have no room).
TIMELINE_LABEL_ROWS = 6
TIMELINE_MIN_BAR = 1 / 500


def timeline_figure(con, run, clock=None):
    """The timeline's figure and title (unwrapped: the file's metadata) of
    run (pick_run's row) on clock: "sim", "wall" or None (simulated when
    the run has it)."""
    from matplotlib.patches import Patch
    W, rid = run["workers"], run["run_id"]
    P = participants(run)  # a row each: the workers, then nvls's switches
    n = transfer_count(con, rid)
    if n == 0:
        raise ToolError(f"run {rid} has no transfers to draw (W = {W})")
    clock_key = pick_clock(con, run, clock)
    sb, se, rb, re_, clock = time_columns(clock_key)
    simulated = clock == "simulated"
    span = con.execute(f"SELECT max(max({se}), max(coalesce({re_}, 0))) FROM transfer "
                       "WHERE run_id = ?", (rid,)).fetchone()[0] or 0
    stops = stop_times(con, run, clock_key, se, re_)
    span = max([span] + [stop for _, _, stop in stops.values()])
    unit, scale = ("ms", 1e6) if span > 5e6 else ("us", 1e3)
    x_end = span / scale if span else 1
    least = x_end * TIMELINE_MIN_BAR  # every bar at least this wide

    def bar(t0, t1):
        return (t0 / scale, max((t1 - t0) / scale, least))
    fig = figure(figsize=(12, 1.4 + 0.45 * min(P, 64)))
    ax = fig.subplots()
    detail = n <= TIMELINE_DETAIL_LIMIT
    never = con.execute("SELECT count(*) FROM transfer WHERE run_id = ? AND recv_end_ns IS NULL",
                        (rid,)).fetchone()[0]
    # --topo runs: a transfer between nodes whose NIC side other GPUs
    # shared in that step (share > 1) went slower: outlined in simulated time
    has_share = any(c[1] == "share" for c in con.execute("PRAGMA table_info(transfer)"))
    shared = {}
    # NCCL's channels (ringsim --channels): in simulated time a lane per
    # channel in each worker's row, channel 0 on top (else the segments'
    # two lanes, even and odd)
    chan = channel_column(con)
    channels = 1 + (con.execute(f"SELECT max({chan}) FROM transfer WHERE run_id = ?",
                                (rid,)).fetchone()[0] or 0)
    lanes = channels if simulated and channels > 1 else 2

    def lane_at(w, lane):
        """(bottom, height) of a lane of worker w's row, in simulated time."""
        return (w - 0.4 + 0.52 / lanes * lane, 0.52 / lanes - 0.02)
    if detail:
        progress(f"drawing {n} transfers")
        rows = con.execute(
            f"SELECT phase, step, segment, src, dst, {sb}, {se}, {rb}, {re_}, wait_ns, "
            f"{'share' if has_share else 'NULL'}, {chan} FROM transfer WHERE run_id = ?",
            (rid,)).fetchall()
        sends = {}
        recvs = {}
        waits = {}
        lost = []
        for phase, step, seg, src, dst, s0, s1, r0, r1, wait, share, ch in rows:
            # Simulated time: shades alternate by step, and even and odd
            # segments take the upper and lower half of the row, so back-to-
            # back steps (a uniform ring) and segments in flight together
            # (the pipeline) stay apart. Wall time needs neither: a worker
            # does one thing at a time.
            tone = 0.35 if simulated and step % 2 else 0.0
            lane = (ch if channels > 1 else seg % 2) if simulated else 0
            if not simulated:
                sends.setdefault((phase, tone), {}).setdefault(src, []).append(bar(s0, s1))
            if r1 is not None:
                recvs.setdefault((phase, tone, lane), {}).setdefault(dst, []).append(bar(r0, r1))
                if simulated and share and share > 1:
                    shared.setdefault((lane, dst), []).append(bar(r0, r1))
                if wait and not simulated:
                    waits.setdefault(dst, []).append(bar(r0, r0 + wait))
            else:
                lost.append((s0 / scale, dst))
        for (phase, tone, lane), by_worker in recvs.items():
            for w, spans in by_worker.items():
                rows_at = lane_at(w, lane) if simulated else (w - 0.4, 0.5)
                ax.broken_barh(spans, rows_at, facecolors=shade(phase_colour(phase), tone),
                               edgecolors="white", linewidth=0.5 if simulated else 0)
        for (lane, w), spans in shared.items():
            ax.broken_barh(spans, lane_at(w, lane), facecolors="none",
                           edgecolors="#c0392b", hatch="\\\\\\", linewidth=0.8)
        for (phase, tone), by_worker in sends.items():
            for w, spans in by_worker.items():
                ax.broken_barh(spans, (w + 0.15, 0.25), facecolors=phase_colour(phase), alpha=0.45)
        for w, spans in waits.items():
            ax.broken_barh(spans, (w - 0.4, 0.5), facecolors="none", edgecolors="0.3", hatch="///",
                           linewidth=0)
        for x, dst in lost:
            ax.plot([x], [dst - 0.15], marker="x", color="#c0392b", markersize=7, mew=2)
    else:
        progress(f"{n} transfers: drawing one bar per worker and step (aggregated in SQL)")
        rows = con.execute(
            f"SELECT phase, dst, step, min({rb}), max({re_}), sum(wait_ns) FROM transfer "
            "WHERE run_id = ? AND recv_end_ns IS NOT NULL GROUP BY iter, bucket, phase, dst, step",
            (rid,)).fetchall()
        bars = {}
        for phase, dst, step, r0, r1, wait in rows:
            if r0 is None or r1 is None:
                continue
            bars.setdefault((phase, step % 2, dst), []).append(bar(r0, r1))
        for (phase, odd, dst), spans in bars.items():  # one collection per row, phase, parity
            ax.broken_barh(spans, (dst - 0.4, 0.8), facecolors=shade(phase_colour(phase), 0.3 * odd),
                           edgecolors="white", linewidth=0.3)
    # where a worker that did not finish stopped (stop_times): a dotted
    # line from its last transfer to there, where its state is written
    for w, (state, last, stop) in sorted(stops.items()):
        words = state.replace("_", " ")
        if stop > last:
            ax.plot([last / scale, stop / scale], [w - 0.15, w - 0.15], color="#c0392b", lw=1,
                    linestyle=":")
            words += f" at {stop / scale:,.1f} {unit}"
        far = stop / scale > 0.8 * x_end  # near the right edge: written to its left
        ax.text(stop / scale, w + 0.05, f" {words} " if far else f" {words}", color="#c0392b",
                fontsize=8, fontweight="bold", va="center", ha="right" if far else "left")
    # step boundaries: when each step of each bucket and iteration began,
    # labelled in rows under the workers; a label that finds no room in any
    # row is named in the axis label instead
    markers = step_markers(con, run, sb, scale)
    labels = []
    begun = set()  # the (iteration, bucket) pairs whose first step is marked
    for x, it, b, phase, step in markers:
        first_of_bucket = (it, b) not in begun
        begun.add((it, b))
        ax.axvline(x, color="0.4" if first_of_bucket else "0.6",
                   linewidth=0.9 if first_of_bucket else 0.6, linestyle="-" if first_of_bucket else ":")
        label = f"{phase_abbrev(phase)}{step}"
        if first_of_bucket and (run["buckets"] > 1 or it > 0):
            where = ([f"it{it}"] if it else []) + ([f"b{b}"] if run["buckets"] > 1 else [])
            label = f"{' '.join(where)} {label}"
        labels.append((not first_of_bucket, x, label))
    # bucket starts first, then steps, each in the first row where it runs
    # into no other
    char = x_end / 150  # about one character of 7-point text on a 12-inch axis
    drawn, left_out = place_labels(labels, char, TIMELINE_LABEL_ROWS)
    rows_used = 1 + max((row for _, _, row in drawn), default=0)
    # a row of labels: 9 points, in y units (a worker's row is about 0.45 inch)
    row_y = 9 / (72 * 0.45)
    for x, label, row in drawn:
        ax.text(x, P - 0.35 + row * row_y, label, fontsize=7, color="0.35")
    ax.set_ylim(P + 0.1 + (rows_used - 1) * row_y, -0.6)
    ax.set_xlim(-0.01 * x_end, 1.01 * x_end)
    ticks = list(range(W) if W <= 64 else range(0, W, max(1, W // 32))) + list(range(W, P))
    ax.set_yticks(ticks)
    ax.set_yticklabels([f"worker {w}" if w < W else f"switch {w - W}" for w in ticks],
                       fontsize=8)
    phases = phases_present(con, rid)
    # the ring's RS and AG need no key; other phases' abbreviations do
    key = ", ".join(f"{phase_abbrev(p)} {phase_label(p)}" for p in phases if p not in PHASES)
    xlabel = f"{clock} time since the run's start ({unit})" + (
        ("; shades alternate by step, a lane per channel in each row (NCCL's, channel 0 on "
         "top)" if channels > 1 else
         "; shades alternate by step, even and odd segments in the upper and lower half of a row")
        if simulated and detail else "") + (f"; steps: {key}" if key else "")
    xlabel += f"; every bar at least {least:.3g} {unit} wide"
    if left_out:
        shown = ", ".join(left_out[:24]) + (f" and {len(left_out) - 24} more" if len(left_out) > 24
                                            else "")
        xlabel += (f"\nstep labels left out ({len(left_out)} of {len(labels)}, no room: "
                   f"their dotted lines are drawn): {shown}")
    ax.set_xlabel(fit_title(xlabel, 11, 10))
    what = "in flight to this worker" if simulated else "receive"
    handles = [Patch(color=phase_colour(p), label=f"{phase_label(p)} ({what})") for p in phases]
    if detail and not simulated:
        handles += [Patch(color=phase_colour(p), alpha=0.45, label=f"{phase_label(p)} send")
                    for p in phases]
        handles.append(Patch(facecolor="none", edgecolor="0.3", hatch="///", label="receiver waiting"))
    if shared:
        most = con.execute("SELECT max(share) FROM transfer WHERE run_id = ?", (rid,)).fetchone()[0]
        handles.append(Patch(facecolor="none", edgecolor="#c0392b", hatch="\\\\\\",
                             label=f"between nodes, its NIC shared (by up to {most} GPUs)"))
    if detail and never:
        from matplotlib.lines import Line2D
        handles.append(Line2D([], [], marker="x", color="#c0392b", linestyle="none", mew=2,
                              label=f"sent, never received ({never})"))
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=6, fontsize=8,
              frameon=False)
    legend_rows = (len(handles) + 5) // 6
    title = titled(f"run {rid}: {algo_name(run)} all-reduce of {run['model']} on {W} workers, "
                   f"{run['bytes']:,} bytes per worker, {n} transfers, {clock} time", run)
    ax.set_title(fit_title(title, 12, 12), pad=24 + 14 * (legend_rows - 1),
                 color="#c0392b" if run_failed(run) else "black")
    return fig, title


def cmd_timeline(con, run, args):
    fig, title = timeline_figure(con, run, args.clock)
    output.save(fig, args.out, title)  # the metadata's title unwrapped
