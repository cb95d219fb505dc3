#!/usr/bin/python3
"""ringsim-plot: turn a ringsim trace into pictures and a Perfetto trace.

    ringsim-plot timeline ringsim-trace.db -o timeline.png
    ringsim-plot chunks   ringsim-trace.db --run 3 -o chunks.png
    ringsim-plot links    ringsim-trace.db -o links.svg
    ringsim-plot compare  ringsim-trace.db --runs 1,2,3 -o compare.png
    ringsim-plot animate  ringsim-trace.db -o ring.gif
    ringsim-plot export   ringsim-trace.db -o trace.json   # ui.perfetto.dev

Each subcommand reads the trace with the standard sqlite3 module (the schema
is docs/trace-schema.md), takes --run ID (default: the latest run) and -o FILE
(PNG, or SVG/PDF by extension), and aggregates in SQL so traces of millions of
transfers fit in memory. Errors are one line on stderr and exit status 2.
Runs under the Python that has matplotlib (Debian: /usr/bin/python3).
"""
import argparse
import json
import os
import shutil
import sqlite3
import sys

APPLICATION_ID = 0x5253696D  # "RSim", as src/trace.h
SCHEMA_VERSION = 1
PHASES = ("reduce_scatter", "all_gather")
PHASE_COLOURS = {"reduce_scatter": "#1f77b4", "all_gather": "#ff7f0e"}
# Above this many transfers, the timeline draws one bar per worker and step
# (aggregated in SQL) instead of one bar per transfer.
TIMELINE_DETAIL_LIMIT = 20000
CHUNKS_MAX_WORKERS = 16


class ToolError(Exception):
    """A problem with the user's input: reported as one line, exit 2."""


def progress(message):
    print(f"ringsim-plot: {message}", file=sys.stderr, flush=True)


# ---- reading the trace ---------------------------------------------------


def open_trace(path):
    """Open path read-only, refusing anything that is not a ringsim trace."""
    if not os.path.exists(path):
        raise ToolError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ToolError(f"{path}: is a directory, not a trace")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        version = con.execute("PRAGMA user_version").fetchone()[0]
    except sqlite3.DatabaseError as e:
        raise ToolError(f"{path}: not a ringsim trace ({e})") from None
    if app_id != APPLICATION_ID:
        con.close()
        raise ToolError(f"{path}: not a ringsim trace")
    if version != SCHEMA_VERSION:
        con.close()
        raise ToolError(f"{path}: trace schema version {version}, this tool reads {SCHEMA_VERSION}")
    return con


def pick_run(con, path, run_id):
    """The run's row as a dict: the given run, or the latest."""
    con.row_factory = sqlite3.Row
    if run_id is None:
        row = con.execute("SELECT * FROM run ORDER BY run_id DESC LIMIT 1").fetchone()
        if row is None:
            raise ToolError(f"{path}: the trace holds no runs")
    else:
        row = con.execute("SELECT * FROM run WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise ToolError(f"{path}: no run {run_id}")
    con.row_factory = None
    return dict(row)


def transfer_count(con, run_id):
    return con.execute("SELECT count(*) FROM transfer WHERE run_id = ?", (run_id,)).fetchone()[0]


def contributors(first, count, workers):
    return {(first + k) % workers for k in range(count)}


def replay_holdings(con, run):
    """Replay the ring from the trace: after each step, whose contributions
    each worker's copy of each chunk holds. Returns a list of
    (title, holds, arrows) per stage, starting with the inputs; holds[w][c] is
    a set of workers, arrows a list of (src, dst, chunk)."""
    W = run["workers"]
    holds = [[{w} for _ in range(W)] for w in range(W)]
    stages = [("start: each worker holds its own gradient", [[set(h) for h in row] for row in holds], [])]
    rows = con.execute(
        "SELECT phase, step, src, dst, chunk, contrib_first, contrib_count FROM transfer "
        "WHERE run_id = ? AND segment = 0 AND recv_end_ns IS NOT NULL "
        "ORDER BY phase = 'all_gather', step, src", (run["run_id"],)).fetchall()
    by_step = {}
    for row in rows:
        by_step.setdefault((row[0], row[1]), []).append(row)
    for phase in PHASES:
        for step in range(W - 1):
            arrivals = by_step.get((phase, step), [])
            if not arrivals:
                continue
            for ph, st, src, dst, chunk, first, count in arrivals:
                payload = contributors(first, count, W)
                if ph == "reduce_scatter":
                    holds[dst][chunk] = holds[dst][chunk] | payload
                else:
                    holds[dst][chunk] = set(payload)
            title = f"{'reduce-scatter' if phase == 'reduce_scatter' else 'all-gather'} step {step}"
            stages.append((title, [[set(h) for h in row] for row in holds],
                           [(r[2], r[3], r[4]) for r in arrivals]))
    return stages


# ---- figures ---------------------------------------------------------------


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, out):
    """Write fig; its type (checked by check_output) follows the extension."""
    try:
        fig.savefig(out, dpi=120, bbox_inches="tight")
    except OSError as e:
        raise ToolError(f"{out}: cannot write: {e.strerror}") from None
    progress(f"wrote {out}")


def time_columns(run, con):
    """The columns a timeline draws. With simulated times (a run with --net),
    a receive bar spans the segment's simulated departure to its receipt
    (on the wire, then queued), and there are no wall-clock sends or waits to
    show; otherwise the wall-clock send and receive spans."""
    has_sim = con.execute(
        "SELECT count(*) FROM transfer WHERE run_id = ? AND sim_recv_ns IS NOT NULL",
        (run["run_id"],)).fetchone()[0] > 0
    if has_sim:
        return "sim_send_ns", "sim_send_ns", "sim_send_ns", "sim_recv_ns", "simulated"
    return "send_begin_ns", "send_end_ns", "recv_begin_ns", "recv_end_ns", "wall"


def cmd_timeline(con, run, args):
    plt = pyplot()
    from matplotlib.patches import Patch
    W, rid = run["workers"], run["run_id"]
    n = transfer_count(con, rid)
    if n == 0:
        raise ToolError(f"run {rid} has no transfers to draw (W = {W})")
    sb, se, rb, re_, clock = time_columns(run, con)
    simulated = clock == "simulated"
    span = (run["sim_ns"] if simulated else run["wall_ns"]) or 0
    unit, scale = ("ms", 1e6) if span > 5e6 else ("us", 1e3)
    fig, ax = plt.subplots(figsize=(12, 1.2 + 0.45 * min(W, 64)))
    detail = n <= TIMELINE_DETAIL_LIMIT
    if detail:
        progress(f"drawing {n} transfers")
        rows = con.execute(
            f"SELECT phase, src, dst, {sb}, {se}, {rb}, {re_}, wait_ns FROM transfer "
            "WHERE run_id = ?", (rid,)).fetchall()
        sends = {p: {} for p in PHASES}
        recvs = {p: {} for p in PHASES}
        waits = {}
        for phase, src, dst, s0, s1, r0, r1, wait in rows:
            if not simulated:
                sends[phase].setdefault(src, []).append((s0 / scale, max(s1 - s0, 1) / scale))
            if r0 is not None:
                recvs[phase].setdefault(dst, []).append((r0 / scale, max(r1 - r0, 1) / scale))
                if wait and not simulated:
                    waits.setdefault(dst, []).append((r0 / scale, wait / scale))
        for phase in PHASES:
            for w, spans in recvs[phase].items():
                ax.broken_barh(spans, (w - 0.4, 0.5), facecolors=PHASE_COLOURS[phase])
            for w, spans in sends[phase].items():
                ax.broken_barh(spans, (w + 0.15, 0.25), facecolors=PHASE_COLOURS[phase], alpha=0.45)
        for w, spans in waits.items():
            ax.broken_barh(spans, (w - 0.4, 0.5), facecolors="none", edgecolors="0.3", hatch="///",
                           linewidth=0)
    else:
        progress(f"{n} transfers: drawing one bar per worker and step (aggregated in SQL)")
        rows = con.execute(
            f"SELECT phase, dst, step, min({rb}), max({re_}), sum(wait_ns) FROM transfer "
            "WHERE run_id = ? AND recv_end_ns IS NOT NULL GROUP BY phase, dst, step",
            (rid,)).fetchall()
        bars = {}
        for phase, dst, step, r0, r1, wait in rows:
            bars.setdefault((phase, dst), []).append((r0 / scale, max(r1 - r0, 1) / scale))
        for (phase, dst), spans in bars.items():  # one collection per row and phase
            ax.broken_barh(spans, (dst - 0.4, 0.8), facecolors=PHASE_COLOURS[phase],
                           edgecolors="white", linewidth=0.3)
    # step boundaries: when each step's first send began
    starts = con.execute(
        f"SELECT phase, step, min({sb}) FROM transfer WHERE run_id = ? GROUP BY phase, step",
        (rid,)).fetchall()
    for phase, step, t in starts:
        ax.axvline(t / scale, color="0.6", linewidth=0.6, linestyle=":")
        if W <= 16:
            ax.text(t / scale, W - 0.35, f"{'RS' if phase == 'reduce_scatter' else 'AG'}{step}",
                    fontsize=7, color="0.35")
    ax.set_ylim(W - 0.4 + (0.5 if W <= 16 else 0), -0.6)
    ax.set_yticks(range(W) if W <= 64 else range(0, W, max(1, W // 32)))
    ax.set_yticklabels([f"worker {w}" for w in (range(W) if W <= 64 else range(0, W, max(1, W // 32)))],
                       fontsize=8)
    ax.set_xlabel(f"{clock} time since the run's start ({unit})")
    what = "in flight to this worker" if simulated else "receive"
    handles = [Patch(color=PHASE_COLOURS["reduce_scatter"], label=f"reduce-scatter ({what})"),
               Patch(color=PHASE_COLOURS["all_gather"], label=f"all-gather ({what})")]
    if detail and not simulated:
        handles += [Patch(color="0.5", alpha=0.45, label="send (thin bar)"),
                    Patch(facecolor="none", edgecolor="0.3", hatch="///", label="receiver waiting")]
    ax.legend(handles=handles, loc="lower left", bbox_to_anchor=(0, 1.0), ncol=4, fontsize=8,
              frameon=False)
    ax.set_title(f"run {rid}: ring all-reduce of {run['model']} on {W} workers, "
                 f"{run['bytes']:,} bytes per worker, {run['transfers']} transfers", pad=24)
    save(fig, args.out)
    plt.close(fig)


def draw_chunks_stage(ax, stage, W, arrows=True):
    import matplotlib.colors as mcolors
    from matplotlib.patches import Rectangle
    title, holds, moves = stage
    cmap = mcolors.LinearSegmentedColormap.from_list("held", ["#f2f2f2", "#2a7a3b"])
    ax.set_xlim(-0.5, W - 0.5)
    ax.set_ylim(W - 0.5, -0.5)
    for w in range(W):
        for c in range(W):
            held = holds[w][c]
            ax.add_patch(Rectangle((w - 0.45, c - 0.4), 0.9, 0.8, color=cmap(len(held) / W)))
            label = "all" if len(held) == W else ",".join(str(x) for x in sorted(held))
            ax.text(w, c, label, ha="center", va="center", fontsize=8 if W <= 8 else 5,
                    color="white" if len(held) > W / 2 else "black")
    if arrows:
        for src, dst, chunk in moves:
            # the ring's wrap-around edge curves back to worker 0
            style = "arc3,rad=0.0" if dst == src + 1 else "arc3,rad=-0.25"
            ax.annotate("", xy=(dst - 0.3, chunk), xytext=(src + 0.3, chunk),
                        arrowprops=dict(arrowstyle="->", color="#c0392b", lw=1.2,
                                        connectionstyle=style))
    ax.set_xticks(range(W))
    ax.set_xticklabels([f"w{w}" for w in range(W)], fontsize=7)
    ax.set_yticks(range(W))
    ax.set_yticklabels([f"c{c}" for c in range(W)], fontsize=7)
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(title, fontsize=9)


def chunk_stages(con, run):
    W = run["workers"]
    if W > CHUNKS_MAX_WORKERS:
        raise ToolError(f"run {run['run_id']} has {W} workers; the chunk diagram draws rings "
                        f"of at most {CHUNKS_MAX_WORKERS}")
    if W < 2:
        raise ToolError(f"run {run['run_id']} has 1 worker: there is no ring to draw")
    return replay_holdings(con, run)


def cmd_chunks(con, run, args):
    plt = pyplot()
    stages = chunk_stages(con, run)
    W = run["workers"]
    cols = min(len(stages), 4 if W <= 4 else 3)
    rows = (len(stages) + cols - 1) // cols
    size = 0.55 * W + 1.2
    fig, axes = plt.subplots(rows, cols, figsize=(cols * size, rows * size), squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i < len(stages):
            draw_chunks_stage(ax, stages[i], W)
        else:
            ax.axis("off")
    fig.suptitle(f"run {run['run_id']}: whose contributions each worker (column) holds for each chunk "
                 f"(row); arrows are that step's transfers", fontsize=10)
    fig.tight_layout()
    save(fig, args.out)
    plt.close(fig)


def cmd_links(con, run, args):
    plt = pyplot()
    W, rid = run["workers"], run["run_id"]
    rows = con.execute(
        "SELECT src, dst, sum(bytes), count(*), min(send_begin_ns), max(recv_end_ns), "
        "sum(recv_end_ns - send_begin_ns) FROM transfer WHERE run_id = ? AND recv_end_ns IS NOT NULL "
        "GROUP BY src, dst ORDER BY src", (rid,)).fetchall()
    if not rows:
        raise ToolError(f"run {rid} has no transfers to draw (W = {W})")
    labels = [f"{s}->{d}" for s, d, *_ in rows]
    mib = [r[2] / 2**20 for r in rows]
    gbs = [r[2] / max(r[5] - r[4], 1) for r in rows]  # bytes per ns = GB/s
    end = max(r[5] for r in rows)
    bins = min(100, max(10, run["transfers"] // max(W, 1)))
    width = max(end // bins, 1)
    heat = [[0.0] * bins for _ in range(W)]
    for src, b, nbytes in con.execute(
            "SELECT src, min(CAST(recv_end_ns / ? AS INTEGER), ?), sum(bytes) FROM transfer "
            "WHERE run_id = ? AND recv_end_ns IS NOT NULL GROUP BY src, 2", (width, bins - 1, rid)):
        heat[src][b] += nbytes / 2**20
    fig, (a1, a2, a3) = plt.subplots(3, 1, figsize=(11, 9), gridspec_kw={"height_ratios": [1, 1, 1.4]})
    step = max(1, W // 32)
    a1.bar(range(len(rows)), mib, color="#1f77b4")
    a1.set_ylabel("MiB sent")
    theory = 2 * (W - 1) / W * run["bytes"] / 2**20
    a1.axhline(theory, color="#c0392b", linestyle="--", linewidth=1, label="2(W-1)/W x S")
    a1.legend(fontsize=8)
    a2.bar(range(len(rows)), gbs, color="#2a7a3b")
    a2.set_ylabel("GB/s (first send to last receive)")
    for ax in (a1, a2):
        ax.set_xticks(range(0, len(rows), step))
        ax.set_xticklabels(labels[::step], fontsize=7, rotation=90 if W > 16 else 0)
    im = a3.imshow(heat, aspect="auto", cmap="viridis", interpolation="nearest",
                   extent=(0, end / 1e6, W - 0.5, -0.5))
    a3.set_yticks(range(0, W, step))
    a3.set_ylabel("link (from worker)")
    a3.set_xlabel("time since the run's start (ms)")
    fig.colorbar(im, ax=a3, label="MiB received in the interval")
    a1.set_title(f"run {rid}: traffic per link r -> r+1 ({W} workers)")
    fig.tight_layout()
    save(fig, args.out)
    plt.close(fig)


def parse_runs(text):
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ToolError(f"--runs '{text}': expected run ids separated by commas") from None


def cmd_compare(con, run_ignored, args):
    plt = pyplot()
    if args.runs:
        ids = parse_runs(args.runs)
    else:
        ids = [r[0] for r in con.execute("SELECT run_id FROM run WHERE status = 'ok' ORDER BY run_id")]
    runs = []
    for rid in ids:
        row = con.execute("SELECT run_id, workers, bytes, wall_ns, busbw_gbs, status FROM run "
                          "WHERE run_id = ?", (rid,)).fetchone()
        if row is None:
            raise ToolError(f"{args.trace}: no run {rid}")
        if row[5] == "ok" and row[1] > 1 and row[3]:
            runs.append(row)
    if len(runs) < 2:
        raise ToolError("compare needs at least two completed runs with more than one worker")
    busbw = max(r[4] for r in runs)  # the best measured: the reference link speed
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    for W in sorted({r[1] for r in runs}):
        mine = sorted((r for r in runs if r[1] == W), key=lambda r: r[2])
        sizes = [r[2] for r in mine]
        a1.plot(sizes, [r[3] / 1e3 for r in mine], "o-", label=f"W={W} measured")
        a1.plot(sizes, [2 * (W - 1) / W * s / (busbw * 1e9) * 1e6 for s in sizes], ":",
                color=a1.lines[-1].get_color(), label=f"W={W} ring at the best busbw, {busbw:.2f} GB/s")
    a1.set_xscale("log")
    a1.set_yscale("log")
    a1.set_xlabel("bytes per worker (S)")
    a1.set_ylabel("time (us)")
    a1.legend(fontsize=7)
    a1.set_title("time against size; dotted: 2(W-1)/W x S / busbw")
    for size in sorted({r[2] for r in runs}):
        mine = sorted((r for r in runs if r[2] == size), key=lambda r: r[1])
        a2.plot([r[1] for r in mine], [r[4] for r in mine], "o-", label=f"S={size:,} B")
    a2.axhline(busbw, color="0.5", linestyle=":", label="ideal ring: busbw independent of W")
    a2.set_xlabel("workers (W)")
    a2.set_ylabel("busbw (GB/s)")
    a2.legend(fontsize=7)
    a2.set_title("bus bandwidth against W")
    fig.tight_layout()
    save(fig, args.out)
    plt.close(fig)


def cmd_animate(con, run, args):
    plt = pyplot()
    from matplotlib import animation
    stages = chunk_stages(con, run)
    W = run["workers"]
    ext = os.path.splitext(args.out)[1].lower()
    if ext == ".gif":
        writer = animation.PillowWriter(fps=args.fps)
    elif not shutil.which("ffmpeg"):  # .mp4
        raise ToolError(f"{args.out}: MP4 needs ffmpeg (apt-get install ffmpeg); or write a .gif")
    else:
        writer = animation.FFMpegWriter(fps=args.fps)
    size = 0.7 * W + 2
    fig, ax = plt.subplots(figsize=(size, size))

    def frame(i):
        ax.clear()
        draw_chunks_stage(ax, stages[i], W)
        fig.suptitle(f"run {run['run_id']}: ring all-reduce, {W} workers ({i + 1}/{len(stages)})",
                     fontsize=9)

    anim = animation.FuncAnimation(fig, frame, frames=len(stages), repeat=False)
    try:
        anim.save(args.out, writer=writer)
    except OSError as e:
        raise ToolError(f"{args.out}: cannot write: {e.strerror}") from None
    plt.close(fig)
    progress(f"wrote {args.out} ({len(stages)} frames)")


def cmd_export(con, run, args):
    """Chrome trace event JSON: one track per worker, a slice per send and per
    receive, a flow arrow from each send to its receive. Streamed, so a
    million transfers do not need a million dicts in memory."""
    W, rid = run["workers"], run["run_id"]
    n = transfer_count(con, rid)
    progress(f"exporting {n} transfers")
    try:
        out = open(args.out, "w")
    except OSError as e:
        raise ToolError(f"{args.out}: cannot write: {e.strerror}") from None
    with out:
        out.write('{"displayTimeUnit": "ns", "otherData": ')
        json.dump({"ringsim_run": rid, "model": run["model"], "workers": W,
                   "bytes_per_worker": run["bytes"], "status": run["status"]}, out)
        out.write(', "traceEvents": [\n')
        meta = [{"ph": "M", "name": "process_name", "pid": rid, "tid": 0,
                 "args": {"name": f"ringsim run {rid}: {run['model']}, W={W}"}}]
        for w in range(W):
            meta.append({"ph": "M", "name": "thread_name", "pid": rid, "tid": w,
                         "args": {"name": f"worker {w}"}})
            meta.append({"ph": "M", "name": "thread_sort_index", "pid": rid, "tid": w,
                         "args": {"sort_index": w}})
        out.write(",\n".join(json.dumps(m) for m in meta))
        cur = con.execute(
            "SELECT phase, step, src, dst, chunk, segment, elem_offset, elems, bytes, seq, "
            "send_begin_ns, send_end_ns, recv_begin_ns, recv_end_ns, wait_ns, contrib_first, "
            "contrib_count FROM transfer WHERE run_id = ? ORDER BY src, seq", (rid,))
        done = 0
        for (phase, step, src, dst, chunk, seg, off, elems, nbytes, seq, s0, s1, r0, r1, wait,
             first, count) in cur:
            who = sorted(contributors(first, count, W))
            common = {"phase": phase, "step": step, "chunk": chunk, "segment": seg,
                      "elem_offset": off, "elems": elems, "bytes": nbytes, "seq": seq,
                      "contributors": who if len(who) <= 64 else f"{len(who)} workers"}
            flow = src * 1_000_000_000 + seq  # unique per (link, seq)
            events = [
                {"ph": "X", "name": f"send c{chunk}", "cat": phase, "pid": rid, "tid": src,
                 "ts": s0 / 1e3, "dur": max(s1 - s0, 1) / 1e3, "args": dict(common, to=dst)},
                {"ph": "s", "name": "transfer", "cat": phase, "id": flow, "pid": rid, "tid": src,
                 "ts": s0 / 1e3},
            ]
            if r0 is not None:
                events += [
                    {"ph": "X", "name": f"{'reduce' if phase == 'reduce_scatter' else 'copy'} c{chunk}",
                     "cat": phase, "pid": rid, "tid": dst, "ts": r0 / 1e3,
                     "dur": max(r1 - r0, 1) / 1e3, "args": dict(common, **{"from": src, "wait_ns": wait})},
                    {"ph": "f", "bp": "e", "name": "transfer", "cat": phase, "id": flow, "pid": rid,
                     "tid": dst, "ts": r0 / 1e3},
                ]
            out.write(",\n" + ",\n".join(json.dumps(e) for e in events))
            done += 1
            if done % 200000 == 0:
                progress(f"exported {done}/{n} transfers")
        out.write("\n]}\n")
    progress(f"wrote {args.out}: open it in ui.perfetto.dev or chrome://tracing")


COMMANDS = {
    "timeline": (cmd_timeline, "Gantt chart: one row per worker, one bar per transfer, by phase"),
    "chunks": (cmd_chunks, "the ring diagram: whose contributions each chunk holds, step by step"),
    "links": (cmd_links, "bytes and bandwidth per link, and traffic over time"),
    "compare": (cmd_compare, "time and busbw across runs, against W and size, with the ring's theory"),
    "animate": (cmd_animate, "the chunks diagram as an animated GIF (or MP4 with ffmpeg)"),
    "export": (cmd_export, "Chrome trace event JSON for ui.perfetto.dev and chrome://tracing"),
}
DEFAULT_OUT = {"timeline": "timeline.png", "chunks": "chunks.png", "links": "links.png",
               "compare": "compare.png", "animate": "ring.gif", "export": "trace.json"}


OUT_TYPES = {"animate": (".gif", ".mp4"), "export": (".json",)}


def check_output(command, out):
    """Refuse a bad -o before any work: its type, and whether it can be made."""
    allowed = OUT_TYPES.get(command, (".png", ".svg", ".pdf"))
    ext = os.path.splitext(out)[1].lower()
    if ext not in allowed:
        kind = {"animate": "animation", "export": "export"}.get(command, "image")
        raise ToolError(f"{out}: unknown {kind} type '{ext}' (use {', '.join(allowed)})")
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ToolError(f"{out}: cannot write: no writable directory {folder}")


def build_parser():
    parser = argparse.ArgumentParser(
        prog="ringsim-plot", description="Pictures and a Perfetto export from a ringsim trace.",
        epilog="exit status: 0 done; 2 bad input (no such file, not a ringsim trace, no such run)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("trace", help="the trace database (ringsim-trace.db)")
        if name == "compare":
            p.add_argument("--runs", help="run ids, e.g. 1,2,3 (default: every completed run)")
        else:
            p.add_argument("--run", type=int, help="run id (default: the latest run)")
        p.add_argument("-o", "--out", default=DEFAULT_OUT[name],
                       help=f"output file (default {DEFAULT_OUT[name]})")
        if name == "animate":
            p.add_argument("--fps", type=float, default=1.0, help="frames per second (default 1)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        check_output(args.command, args.out)
        con = open_trace(args.trace)
        with con:
            run = None if args.command == "compare" else pick_run(con, args.trace, args.run)
            COMMANDS[args.command][0](con, run, args)
        con.close()
    except ToolError as e:
        print(f"ringsim-plot: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
