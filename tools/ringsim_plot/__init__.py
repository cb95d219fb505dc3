"""ringsim-plot: turn a ringsim trace into pictures and a Perfetto trace.

    ringsim-plot timeline ringsim-trace.db -o timeline.png
    ringsim-plot chunks   ringsim-trace.db --run 3 -o chunks.png
    ringsim-plot links    ringsim-trace.db -o links.svg
    ringsim-plot compare  ringsim-trace.db --runs 1,2,3 -o compare.png
    ringsim-plot compare  --bench bench.jsonl --model model.json -o algos.png
    ringsim-plot animate  ringsim-trace.db -o ring.gif
    ringsim-plot export   ringsim-trace.db -o trace.json   # ui.perfetto.dev
    ringsim-plot html     ringsim-trace.db -o run.html     # a page to step through

Each subcommand reads the trace with the standard sqlite3 module (the schema
is docs/trace-schema.md), takes --run ID (default: the latest run) and -o FILE
(PNG, or SVG/PDF by extension), and aggregates in SQL so traces of millions of
transfers fit in memory. Errors are one line on stderr and exit status 2.
Runs under the Python that has matplotlib (Debian: /usr/bin/python3).

The modules, each importing only those above it:

    output    ToolError, clean (names as ringsim prints them), progress,
              check_output and replacing (outputs written whole or not at all)
    schema    what ringsim writes, checked: a run's row (its net_model and
              topology), the step report
    replay    the trace read and checked, a run's row, its transfers replayed
    style     what the pictures share (matplotlib, phase colours, titles)
    timeline, chunks, links, compare, animate, export, html
              one subcommand each (animate draws chunks' panels)
    cli       the command line: the parser and main
    figures   the pictures as matplotlib figures, for Python (a notebook):
              figures.timeline(trace), chunks, links, sweep

tools/ringsim_plot.py finds this package and runs cli.main; `python3 -m
ringsim_plot` does the same. Installed (pip, or cmake --install), the
package is on Python's path and ringsim-plot runs cli.main.
"""
# ringsim-plot --version: project(VERSION) of the top CMakeLists.txt
# (tests/test_install.py checks they are equal). Set before the imports
# below: cli reads it.
__version__ = "0.2.0"

from . import figures, output
from .chunks import chunk_stages
from .cli import main
from .output import ToolError, clean
from .replay import open_trace, pick_run, replay_holdings, replay_regions

__all__ = ["ToolError", "chunk_stages", "clean", "figures", "main", "open_trace", "output",
           "pick_run", "replay_holdings", "replay_regions"]
