"""ringsim-plot chunks: the chunk diagram, a panel per step of the first
bucket: whose contributions each worker's copy of each chunk (the ring) or
region (every other algorithm) holds, with that step's transfers as arrows.
animate draws the same panels as frames.
"""
import math

from . import output  # output.save, looked up when called (tests watch what is saved)
from .output import ToolError
from .replay import (algo_name, algo_steps, average_pre, phase_label, replay_holdings,
    replay_regions, ring_ranges, run_algo, run_channels, run_failed, worker_states)
from .style import figure, fit_title, titled


CHUNKS_MAX_WORKERS = 16  # the ring's chunk diagram
CHUNKS_MAX_WORKERS_OTHER = 8  # every other algorithm's, as --explain
# NCCL's channels (ringsim --channels) one picture or animation draws, a
# block of panels each; the page (html) shows every one
CHUNKS_MAX_CHANNELS = 4


def draw_chunks_stage(ax, stage, W, ctx=None, regions=None):
    """One panel of the chunk diagram: a column per worker, a row per chunk
    (the ring) or region (regions: replay_regions's; its moves are (src,
    dst, first region, end region, received)). ctx: {'op', 'pre', 'crashed':
    {worker: (phase, step)}, 'steps': the algorithm's steps in order} from
    chunk_context (None: a plain sum); on one of NCCL's channels its
    'order': the workers column by column, along its ring (else worker w
    is column w)."""
    import matplotlib.colors as mcolors
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle
    ctx = ctx or {"op": "sum", "pre": False, "crashed": {}, "steps": None}
    title, holds, moves, info = stage
    ring = regions is None
    R = W if ring else len(regions)
    columns = ctx.get("order") or list(range(W))  # the worker in each column
    col = {w: i for i, w in enumerate(columns)}
    if ring:
        moves = [(src, dst, c, c + 1, received) for src, dst, c, received in moves]
    cmap = mcolors.LinearSegmentedColormap.from_list("held", ["#f2f2f2", "#2a7a3b"])
    ax.set_xlim(-0.75, W - 0.25)
    ax.set_ylim(R - 0.5, -0.5)
    root = ax.figure if hasattr(ax.figure, "get_figwidth") else ax.figure.figure  # (a subfigure's)
    cell_pt = 72 * ax.get_position().width * root.get_figwidth() / (W + 0.5)
    # the figure's widest label (chunks_figure, animate) fits its cell
    font = ctx.get("font") or max(3.5, min(8.0, cell_pt * 0.92 / ctx.get("widest", 3.0)))
    rs_done = ring and (info["phase"] == "all_gather" or
                        (info["phase"] == "reduce_scatter" and info["step"] == W - 2))
    steps = ctx.get("steps") or [("reduce_scatter", s) for s in range(W - 1)] + \
        [("all_gather", s) for s in range(W - 1)]
    order = {ps: i for i, ps in enumerate(steps)}
    dead_columns = []
    cells, colours, outlined, hatched = [], [], [], []
    for x, w in enumerate(columns):
        crash = ctx["crashed"].get(w)
        dead = crash is not None and info["phase"] is not None and \
            order.get((info["phase"], info["step"]), -1) >= order.get(tuple(crash), len(order))
        for c in range(R):
            held = holds[w][c]
            # the ring's rank x owns chunk x + 1 (the worker at place x of a channel's ring)
            owner = rs_done and c == (x + 1) % W
            cells.append(Rectangle((x - 0.45, c - 0.42), 0.9, 0.84))
            colours.append(cmap(len(held) / W))
            if owner:
                outlined.append(Rectangle((x - 0.45, c - 0.42), 0.9, 0.84))
            if dead:
                hatched.append(Rectangle((x - 0.45, c - 0.42), 0.9, 0.84))
            label = ring_ranges(held, W)
            # out of the layout: thousands of labels at W=16 would make
            # the layout engine measure each one
            ax.text(x, c - 0.12, label, ha="center", va="center", fontsize=font,
                    color="white" if len(held) > W / 2 else "black").set_in_layout(False)
        dead_columns.append(dead)
    # one collection each (a patch per cell is slow at W=16)
    ax.add_collection(PatchCollection(cells, facecolors=colours, edgecolors="none"))
    if outlined:
        ax.add_collection(PatchCollection(outlined, facecolors="none", edgecolors="#111111",
                                          linewidths=1.6))
    if hatched:  # hatching takes the edge colour
        ax.add_collection(PatchCollection(hatched, facecolors="none", edgecolors="#c0392b",
                                          linewidths=0, hatch="///"))
    # an arrow on every row (chunk or region) the transfer carries
    for src, dst, first, end, received in [(col[m[0]], col[m[1]], c, c + 1, m[4])
                                           for m in moves for c in range(m[2], m[3])]:
        colour = "#c0392b" if received else "0.45"
        style = dict(arrowstyle="->", color=colour, lw=1.1, linestyle="-" if received else "--",
                     shrinkA=0, shrinkB=0)
        y = first + 0.25  # under the label
        if ring and dst == src + 1:
            ax.annotate("", xy=(dst - 0.08, y), xytext=(src + 0.08, y),
                        arrowprops=style).set_in_layout(False)
        elif ring:  # the ring's wrap-around edge: out at the right, in at the left
            ax.annotate("", xy=(W - 0.3, y), xytext=(src + 0.08, y), arrowprops=style,
                        annotation_clip=False).set_in_layout(False)
            ax.annotate("", xy=(dst - 0.08, y), xytext=(-0.72, y), arrowprops=style,
                        annotation_clip=False).set_in_layout(False)
        else:  # any pair: an arc, bending one way going right, the other going left
            style["connectionstyle"] = "arc3,rad=0.25"
            ax.annotate("", xy=(dst, y), xytext=(src, y), arrowprops=style,
                        annotation_clip=False).set_in_layout(False)
        if not received:
            ax.text(dst - 0.2, y, "\u00d7", color="#c0392b", fontsize=font * 1.4, ha="center",
                    va="center", fontweight="bold")
    ax.set_xticks(range(W))
    ax.set_xticklabels([f"w{w}\ncrashed" if dead_columns[x] else f"w{w}"
                        for x, w in enumerate(columns)], fontsize=min(7, font + 1))
    for w, tick in enumerate(ax.get_xticklabels()):
        if dead_columns[w]:
            tick.set_color("#c0392b")
    ax.set_yticks(range(R))
    ax.set_yticklabels([f"c{c}" for c in range(W)] if ring else
                       [name.replace("part ", "p").replace("half ", "h") for name, _, _ in regions],
                       fontsize=min(7, font + 1))
    ax.tick_params(length=0)
    for spine in ax.spines.values():
        spine.set_visible(False)
    if ring and info["phase"] == "reduce_scatter" and info["step"] == W - 2:
        title += f"\nowners (outlined) divide by {W}" if ctx["op"] == "avg" \
            and not ctx["pre"] else "\neach chunk complete at its owner"
    elif info["phase"] is None and ctx["op"] == "avg" and ctx["pre"]:
        title += f"\nand divides it by {W} (--average pre)"
    lost = sum(1 for m in moves if not m[4])
    if lost:
        title += f"\n{lost} sent, never received"
    title_pt = min(9, font + 2)
    # wrapped to the panel: at W=2 and 3 a line as long as the start's
    # ran past its neighbour's title and off the canvas
    ax.set_title(wrap_to(title, ctx.get("panel_w"), title_pt), fontsize=title_pt)


def check_drawable(run):
    """Refuse a run the chunk diagram cannot draw: auto's, too many
    workers, one worker."""
    W, algo = run["workers"], run_algo(run)
    if algo == "auto":
        raise ToolError(f"run {run['run_id']} chose an algorithm per bucket (--algo auto); the "
                        f"chunk diagram draws one algorithm's run (table bucket_algo says what "
                        f"each bucket ran; try timeline or links)")
    most = CHUNKS_MAX_WORKERS if algo == "ring" else CHUNKS_MAX_WORKERS_OTHER
    if W > most:
        raise ToolError(f"run {run['run_id']} has {W} workers; the chunk diagram draws "
                        f"{'rings' if algo == 'ring' else algo + ' runs'} of at most {most}")
    if W < 2:
        raise ToolError(f"run {run['run_id']} has 1 worker: there is no "
                        f"{'ring' if algo == 'ring' else 'transfer'} to draw")


def chunk_stages(con, run):
    """(stages, regions) of the run's chunk diagram: the ring's by chunk
    (replay_holdings; regions None), any other algorithm's by region
    (replay_regions). Refuses runs too large to draw."""
    check_drawable(run)
    if run_algo(run) == "ring":
        return replay_holdings(con, run), None
    return replay_regions(con, run)


def chunk_channels(con, run):
    """The chunk diagram channel by channel: a list of (channel, stages,
    regions), stages and regions as chunk_stages's. On one channel one
    entry, channel None: the diagram as it always was. On NCCL's channels
    (the trace's channel column) each busy channel's own: its chunks (the
    ring) or regions of its part, channel run_channels's dict (its number,
    part and ring order), the first CHUNKS_MAX_CHANNELS of them; and
    every channel there was (run_channels's list)."""
    check_drawable(run)
    channels = run_channels(con, run)
    if len(channels) <= 1:
        return [(None, *chunk_stages(con, run))], channels
    out = []
    for ch in channels[:CHUNKS_MAX_CHANNELS]:
        if run_algo(run) == "ring":
            out.append((ch, replay_holdings(con, run, channel=ch), None))
        else:
            out.append((ch, *replay_regions(con, run, channel=ch)))
    return out, channels


def channel_label(ch):
    """A channel's name, part and ring: 'channel 1: elements [8192, 16384),
    ring 1 0 2 3'."""
    text = f"channel {ch['channel']}: elements [{ch['off']}, {ch['end']})"
    if ch["order"]:
        text += ", ring " + " ".join(map(str, ch["order"]))
    return text


def channels_left_out(drawn, channels):
    """The sentence naming the channels a picture leaves out ('' none)."""
    left = [ch["channel"] for ch in channels[len(drawn):]]
    if not left:
        return ""
    names = f"{left[0]}-{left[-1]}" if len(left) > 2 else ", ".join(map(str, left))
    return (f"channel{'s' if len(left) > 1 else ''} {names} of {len(channels)} not drawn "
            f"(ringsim-plot html shows every one)")


def chunk_context(con, run):
    """What a chunk panel needs besides the holdings: the op, where avg
    divides, which workers crashed at which step, and the algorithm's
    steps in order."""
    crashed = {w: (st[1], st[2]) for w, st in worker_states(con, run).items()
               if st[0] == "crashed" and st[1] is not None}
    return {"op": run["op"], "pre": average_pre(run), "crashed": crashed,
            "steps": algo_steps(run)}


# Past this many workers the ring's chunk diagram draws the steps that
# matter (chunk_panels), not every one: W=16's 31 panels were 2592 x 2688
# pixels, their labels 7 pixels high on a 1080-line screen.
CHUNKS_ALL_STEPS_UP_TO = 8


def chunk_panels(stages, W, ring):
    """The stages a chunk diagram draws, and a sentence naming those left
    out ('' when it draws them all). Up to CHUNKS_ALL_STEPS_UP_TO workers
    (and every algorithm but the ring, drawn up to 8) every stage; past it
    the ring's start, its first two reduce-scatter steps and its last (each
    chunk complete at its owner), its first and last all-gather steps, the
    first step with a transfer never received, and a failed run's last."""
    if not ring or W <= CHUNKS_ALL_STEPS_UP_TO:
        return stages, ""
    keep = {(None, None), ("reduce_scatter", 0), ("reduce_scatter", 1),
            ("reduce_scatter", W - 2), ("all_gather", 0), ("all_gather", W - 2)}
    chosen = [i for i, st in enumerate(stages) if (st[3]["phase"], st[3]["step"]) in keep]
    lost = [i for i, st in enumerate(stages) if any(not m[3] for m in st[2])]
    chosen = sorted(set(chosen) | set(lost[:1]) | {len(stages) - 1})
    left = {}
    for i, st in enumerate(stages):
        if i not in chosen:
            left.setdefault(st[3]["phase"], []).append(st[3]["step"])

    def runs(steps):  # [2, 3, 4, 7] -> '2-4, 7'
        parts, start = [], None
        for k, s in enumerate(steps):
            if start is None:
                start = s
            if k + 1 == len(steps) or steps[k + 1] != s + 1:
                parts.append(f"{start}" if start == s else f"{start}-{s}")
                start = None
        return ", ".join(parts)
    gone = "; ".join(f"{phase_label(ph)} steps {runs(st)}" for ph, st in left.items())
    note = (f"{len(chosen)} of {len(stages)} panels (W > {CHUNKS_ALL_STEPS_UP_TO}): left out "
            f"{gone} (ringsim-plot animate or html shows every step)") if gone else ""
    return [stages[i] for i in chosen], note


def chunks_layout(stages, W):
    """(columns, rows, panel width, panel height, inches): panels wrap into
    a near-square grid. Past CHUNKS_ALL_STEPS_UP_TO workers (chunk_panels:
    at most 8 panels) two columns in 16 x 9 inches, 1920 x 1080 pixels
    at 120 dpi: a screen's worth, its labels 10 or more pixels high."""
    n = len(stages)
    if W > CHUNKS_ALL_STEPS_UP_TO:
        cols = min(n, 2)
        rows = (n + cols - 1) // cols
        return cols, rows, 16 / cols, (9 - 1.0) / rows
    cols = min(n, 4 if W <= 4 else max(3, math.ceil(math.sqrt(n))))
    rows = (n + cols - 1) // cols
    panel = min(0.42 * W + 1.0, 3.6)
    return cols, rows, panel, panel


def wrap_to(text, width_inches, fontsize):
    """text wrapped, line by line, to what width_inches holds at fontsize
    (DejaVu Sans: about 0.6 em a character on average; unlike fit_title,
    no floor of 30 characters: a panel at W=2 is 1.8 inches wide). None:
    text as it is."""
    if not width_inches:
        return text
    import textwrap
    chars = max(12, int(width_inches * 72 / (fontsize * 0.6)))
    return "\n".join(part for line in text.split("\n")
                     for part in (textwrap.wrap(line, chars) or [""]))


def ring_example(W):
    """The title's key to a range round the ring ('; {3-1} is 3, 0, 1'),
    where W workers can hold one (W >= 4)."""
    if W < 4:
        return ""
    return f"; {{{W - 1}-1}} is {W - 1}, 0, 1"


def widest_label(stages, W):
    """The widest cell label of any of the stages, in em of the font
    (DejaVu Sans: a digit or brace 0.64 em, a comma 0.32, a hyphen 0.36;
    'all' about 1.5); at least 3."""
    def em(label):
        return sum(0.32 if c == "," else 0.36 if c == "-" else 0.5 if c.isalpha() else 0.64
                   for c in label)
    return max([3.0] + [em(ring_ranges(held, W)) for _, holds, _, _ in stages
                        for column in holds for held in column])


def chunks_figure(con, run):
    """The chunk diagram's figure and title (cmd_chunks saves it)."""
    drawn, channels = chunk_channels(con, run)
    if drawn[0][0] is not None:
        return channels_figure(con, run, drawn, channels)
    stages, regions = chunk_stages(con, run)
    ctx = chunk_context(con, run)
    W = run["workers"]
    ctx["widest"] = widest_label(stages, W)
    stages, left_out = chunk_panels(stages, W, regions is None)
    cols, rows, panel_w, panel_h = chunks_layout(stages, W)
    if W > CHUNKS_ALL_STEPS_UP_TO:  # a cell's width (of W + 0.5 in the panel's 88%)
        ctx["font"] = min(10.0, 72 * panel_w * 0.88 / (W + 0.5) * 0.92 / ctx["widest"])
    # the title's lines: 10-point text, about 0.2 inch a line
    width = cols * panel_w
    buckets = f" (the first of {run['buckets']} buckets)" if run["buckets"] > 1 else ""
    if regions is None:
        title = (f"run {run['run_id']}: whose contributions each worker (column) holds for each "
                 f"chunk (row){buckets}{ring_example(W)}\n"
                 f"arrows: that step's transfers "
                 f"(dashed with \u00d7: never received); outlined: the chunk's owner after "
                 f"reduce-scatter")
    else:
        rows_text = ", ".join(f"{name} = elements {off}..{off + n - 1}" for name, off, n in regions)
        title = (f"run {run['run_id']}: {algo_name(run)} all-reduce, {W} workers: whose "
                 f"contributions each worker (column) holds of each region (row){buckets}; "
                 f"{rows_text}; arrows: that step's transfers (dashed with \u00d7: never received)")
    if left_out:
        title += "\n" + left_out
    title = titled(title, run)
    shown = fit_title(title, width, 10)
    lines = shown.count("\n") + 1
    fig = figure(figsize=(width, rows * panel_h + 0.2 * lines + 0.2), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    ctx["panel_w"] = panel_w
    for i, ax in enumerate(axes.flat):
        if i < len(stages):
            draw_chunks_stage(ax, stages[i], W, ctx, regions)
        else:
            ax.axis("off")
    # a row whose titles wrapped past two lines gets their height, so
    # its cells keep theirs
    extra = sum(max([0] + [ax.get_title().count("\n") - 1 for ax in row]) *
                row[0].title.get_fontsize() * 1.25 / 72 for row in axes)
    fig.set_figheight(fig.get_figheight() + extra)
    fig.suptitle(shown, fontsize=10, color="#c0392b" if run_failed(run) else "black")
    return fig, title  # the metadata's title unwrapped


def channels_figure(con, run, drawn, channels):
    """The chunk diagram on NCCL's channels: a block of panels per channel
    drawn (chunk_channels), one under the other, each titled with its
    channel, its part and its ring, its columns the workers in its ring's
    order (so every arrow but the ring's wrap goes one column right), its
    panels as one channel's (chunk_panels, chunks_layout)."""
    ctx = chunk_context(con, run)
    W = run["workers"]
    ctx["widest"] = max(widest_label(stages, W) for _, stages, _ in drawn)
    blocks, notes = [], []
    for ch, stages, regions in drawn:
        shown, left_out = chunk_panels(stages, W, regions is None)
        if left_out:
            notes.append(left_out)
        blocks.append((ch, shown, regions, chunks_layout(shown, W)))
    cols = max(b[3][0] for b in blocks)
    panel_w, panel_h = blocks[0][3][2], blocks[0][3][3]
    if W > CHUNKS_ALL_STEPS_UP_TO:  # a cell's width, as chunks_figure's
        ctx["font"] = min(10.0, 72 * panel_w * 0.88 / (W + 0.5) * 0.92 / ctx["widest"])
    width = cols * panel_w
    buckets = f" (the first of {run['buckets']} buckets)" if run["buckets"] > 1 else ""
    what = "chunk" if drawn[0][2] is None else "region"
    title = (f"run {run['run_id']}: {algo_name(run)} all-reduce, {W} workers on "
             f"{len(channels)} of NCCL's channels: whose contributions each worker (column) "
             f"holds for each {what} (row) of each channel's part{buckets}, a block of panels "
             f"per channel, its columns in its ring's order{ring_example(W)}\n"
             f"arrows: that step's transfers (dashed with \u00d7: never received)"
             + ("; outlined: the chunk's owner after reduce-scatter" if what == "chunk" else ""))
    left = channels_left_out(drawn, channels)
    for note in ([left] if left else []) + notes[:1]:
        title += "\n" + note
    title = titled(title, run)
    shown_title = fit_title(title, width, 10)
    lines = shown_title.count("\n") + 1
    heights = [b[3][1] * panel_h + 0.45 for b in blocks]
    fig = figure(figsize=(width, sum(heights) + 0.2 * lines + 0.2), layout="constrained")
    subfigs = fig.subfigures(len(blocks), 1, squeeze=False, height_ratios=heights).flat
    ctx["panel_w"] = panel_w
    all_rows = []
    for sub, (ch, shown, regions, (_, rows, _, _)) in zip(subfigs, blocks):
        label = channel_label(ch)
        if regions is not None:
            label += "; " + ", ".join(f"{name} = elements {off}..{off + n - 1}"
                                      for name, off, n in regions)
        sub.suptitle(fit_title(label, width, 9), fontsize=9, fontweight="bold")
        axes = sub.subplots(rows, cols, squeeze=False)
        chctx = dict(ctx, order=ch["order"])
        for i, ax in enumerate(axes.flat):
            if i < len(shown):
                draw_chunks_stage(ax, shown[i], W, chctx, regions)
            else:
                ax.axis("off")
        all_rows.extend(axes)
    extra = sum(max([0] + [ax.get_title().count("\n") - 1 for ax in row]) *
                row[0].title.get_fontsize() * 1.25 / 72 for row in all_rows)
    fig.set_figheight(fig.get_figheight() + extra)
    fig.suptitle(shown_title, fontsize=10, color="#c0392b" if run_failed(run) else "black")
    return fig, title


def cmd_chunks(con, run, args):
    fig, title = chunks_figure(con, run)
    output.save(fig, args.out, title, tight=False)
