"""ringsim-plot animate: the chunk diagram's panels (chunks.py) as the frames
of a GIF, or of an MP4 where ffmpeg is installed. On NCCL's channels each
channel drawn has its frames, channel after channel, each titled with the
channel, its part and its ring.
"""
import os
import shutil

from .output import ToolError, progress, replacing
from .replay import algo_name, run_failed
from .style import fit_title, pyplot, titled
from .chunks import (channel_label, channels_left_out, chunk_channels, chunk_context,
    draw_chunks_stage, widest_label)


def cmd_animate(con, run, args):
    if not 0.01 <= args.fps <= 100:  # also NaN
        raise ToolError(f"--fps {args.fps:g}: expected frames per second from 0.01 to 100")
    plt = pyplot()
    from matplotlib import animation
    drawn, channels = chunk_channels(con, run)
    # every frame: (channel or None, stage, regions)
    frames = [(ch, stage, regions) for ch, stages, regions in drawn for stage in stages]
    ctx = chunk_context(con, run)
    W = run["workers"]
    ctx["widest"] = max(widest_label(stages, W) for _, stages, _ in drawn)
    left = channels_left_out(drawn, channels)
    ext = os.path.splitext(args.out)[1].lower()
    if ext == ".gif":
        writer = animation.PillowWriter(fps=args.fps)
    elif not shutil.which("ffmpeg"):  # .mp4
        raise ToolError(f"{args.out}: MP4 needs ffmpeg (apt-get install ffmpeg); or write a .gif")
    else:
        writer = animation.FFMpegWriter(fps=args.fps)
    size = 0.7 * W + 2
    fig, ax = plt.subplots(figsize=(size, size), layout="constrained")

    def frame(i):
        ax.clear()
        ch, stage, regions = frames[i]
        draw_chunks_stage(ax, stage, W, dict(ctx, order=ch["order"]) if ch else ctx, regions)
        # a channel's name, part and ring on a line of their own
        on = "\n" + fit_title(channel_label(ch), size, 9) if ch else ""
        fig.suptitle(titled(f"run {run['run_id']}: {algo_name(run)} all-reduce, {W} workers "
                            f"({i + 1}/{len(frames)}){on}",
                            run, width=int(size * 13)),
                     fontsize=9, color="#c0392b" if run_failed(run) else "black")

    anim = animation.FuncAnimation(fig, frame, frames=len(frames), repeat=False)
    with replacing(args.out) as tmp:
        anim.save(tmp, writer=writer)
    plt.close(fig)
    per = f", {len(drawn)} channels' in turn" if drawn[0][0] else ""
    progress(f"wrote {args.out} ({len(frames)} frames{per})" + (f"; {left}" if left else ""))
