"""ringsim-plot's pictures as matplotlib figures, for Python (a notebook,
a script): each function reads what the subcommand of its name reads and
returns the Figure the subcommand saves, not saved, and no pyplot figure
left open (show it, or fig.savefig(...) it).

    from ringsim_plot import figures
    fig = figures.timeline("ringsim-trace.db")         # the latest run
    fig = figures.chunks("ringsim-trace.db", run=3)
    fig.savefig("chunks.svg")

A bad input (no such file, not a ringsim trace, no such run, a run with
nothing to draw) raises ringsim_plot.ToolError, whose text is the line
ringsim-plot prints; the trace is closed either way.
"""
import contextlib

from .chunks import chunks_figure
from .links import links_figure
from .replay import open_trace, pick_run
from .sweep import sweep_figure
from .timeline import timeline_figure

__all__ = ["chunks", "links", "sweep", "timeline"]


@contextlib.contextmanager
def _run(trace, run):
    """(connection, run's row) of the trace at path trace (str or
    os.PathLike), run id run (None: the latest), closed on leaving."""
    path = str(trace)
    con = open_trace(path)
    try:
        yield con, pick_run(con, path, run)
    finally:
        con.close()  # the last connection to the trace: its -wal, -shm go


def timeline(trace, run=None, clock=None):
    """`ringsim-plot timeline`: a Gantt chart, one row per worker and a bar
    per transfer. clock: "sim", "wall" or None (simulated when the run has
    it)."""
    with _run(trace, run) as (con, row):
        return timeline_figure(con, row, clock)[0]


def chunks(trace, run=None):
    """`ringsim-plot chunks`: whose contributions each worker's chunks
    (regions) hold, step by step."""
    with _run(trace, run) as (con, row):
        return chunks_figure(con, row)[0]


def links(trace, run=None, clock=None):
    """`ringsim-plot links`: bytes and rate per link, and the traffic over
    time. clock: as timeline's."""
    with _run(trace, run) as (con, row):
        return links_figure(con, row, clock)[0]


def sweep(report):
    """`ringsim-plot sweep`: the all-reduce time against W per algorithm,
    from the file report, `ringsim model --workers LIST --algo all --json`
    output."""
    return sweep_figure(str(report))[0]
