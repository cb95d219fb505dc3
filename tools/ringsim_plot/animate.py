"""ringsim-plot animate: the chunk diagram's panels (chunks.py) as the frames
of a GIF, or of an MP4 where ffmpeg is installed.
"""
import os
import shutil

from .output import ToolError, progress, replacing
from .replay import algo_name, run_failed
from .style import pyplot, titled
from .chunks import chunk_context, chunk_stages, draw_chunks_stage, widest_label


def cmd_animate(con, run, args):
    if not 0.01 <= args.fps <= 100:  # also NaN
        raise ToolError(f"--fps {args.fps:g}: expected frames per second from 0.01 to 100")
    plt = pyplot()
    from matplotlib import animation
    stages, regions = chunk_stages(con, run)
    ctx = chunk_context(con, run)
    W = run["workers"]
    ctx["widest"] = widest_label(stages, W)
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
        draw_chunks_stage(ax, stages[i], W, ctx, regions)
        fig.suptitle(titled(f"run {run['run_id']}: {algo_name(run)} all-reduce, {W} workers "
                            f"({i + 1}/{len(stages)})",
                            run, width=int(size * 13)),
                     fontsize=9, color="#c0392b" if run_failed(run) else "black")

    anim = animation.FuncAnimation(fig, frame, frames=len(stages), repeat=False)
    with replacing(args.out) as tmp:
        anim.save(tmp, writer=writer)
    plt.close(fig)
    progress(f"wrote {args.out} ({len(stages)} frames)")
