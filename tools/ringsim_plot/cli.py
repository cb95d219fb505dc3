"""The ringsim-plot command: its subcommands and options (argparse), and
main, which checks -o, opens the trace, loads the run and hands it to the
subcommand; a ToolError or an unreadable trace is one line, exit 2.
"""
import argparse
import sqlite3
import sys

from . import __version__
from .output import ToolError, check_output, clean
from .replay import open_trace, pick_run
from .timeline import cmd_timeline
from .chunks import cmd_chunks
from .links import cmd_links
from .topo import cmd_topo
from .compare import cmd_compare, cmd_compare_algorithms
from .animate import cmd_animate
from .export import cmd_export
from .html import HTML_DEFAULT_RUNS, cmd_html
from .step import cmd_step
from .sweep import cmd_sweep


COMMANDS = {
    "timeline": (cmd_timeline, "Gantt chart: one row per worker, one bar per transfer, by phase"),
    "chunks": (cmd_chunks, "whose contributions each worker's chunks (regions) hold, step by step, "
                           "for every algorithm"),
    "links": (cmd_links, "bytes and bandwidth per link, and traffic over time"),
    "topo": (cmd_topo, "a --topo run's nodes, GPUs and NICs, each link coloured by the bytes "
                       "it carried"),
    "compare": (cmd_compare, "time and busbw across runs, against W and size, with the ring's theory; "
                             "or (--bench, --model) time against size per algorithm with the "
                             "crossovers"),
    "animate": (cmd_animate, "the chunks diagram as an animated GIF (or MP4 with ffmpeg)"),
    "export": (cmd_export, "Chrome trace event JSON for ui.perfetto.dev and chrome://tracing"),
    "html": (cmd_html, "an interactive page, one self-contained file: step through the chunk "
                       "view, click cells and transfers, the timeline, runs side by side"),
    "step": (cmd_step, "a training step from `ringsim step --json` output: per worker its "
                       "compute and its all-reduces, the exposed part shaded; with several "
                       "caps, the step time against the cap"),
    "sweep": (cmd_sweep, "the all-reduce time against W, per algorithm, from `ringsim model "
                         "--workers LIST --algo all --json` output; the fastest marked, the "
                         "crossovers printed"),
}
DEFAULT_OUT = {"timeline": "timeline.png", "chunks": "chunks.png", "links": "links.png",
               "topo": "topo.png", "compare": "compare.png", "animate": "ring.gif", "export": "trace.json",
               "html": "ringsim.html", "step": "step.png", "sweep": "sweep.png"}


def build_parser():
    parser = argparse.ArgumentParser(
        prog="ringsim-plot", description="Pictures and a Perfetto export from a ringsim trace.",
        epilog="exit status: 0 done; 2 bad input (no such file, not a ringsim trace, no such run, "
               "an inconsistent trace, an output that is an input or cannot be written)")
    parser.add_argument("--version", action="version", version=f"ringsim-plot {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (_, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == "compare":
            p.add_argument("trace", nargs="?",
                           help="the trace database (ringsim-trace.db); or give --bench")
            p.add_argument("--runs", help="run ids, e.g. 1,2,3 (default: every completed run)")
            p.add_argument("--bench", metavar="FILE",
                           help="instead of a trace: `ringsim bench --algo all --json` output; "
                                "draws time against size per algorithm, marks and prints the "
                                "crossovers (where the fastest algorithm changes)")
            p.add_argument("--model", metavar="FILE",
                           help="with --bench: `ringsim model --algo all --json` outputs, one per "
                                "size, drawn as the predicted times, their crossovers too")
        elif name == "step":
            p.add_argument("report", help="`ringsim step --json` output")
            p.add_argument("--first", action="store_true",
                           help="draw step 1 (one bucket: DDP's first backward), not a later one")
            p.add_argument("--compare", metavar="REPORT",
                           help="another `ringsim step --json` output, its lanes drawn below on "
                                "the same time axis (no sweep panel)")
        elif name == "sweep":
            p.add_argument("report", help="`ringsim model --workers LIST --algo all --json` "
                                          "output (or --topo ...,nodes=LIST)")
        elif name == "html":
            p.add_argument("trace", help="the trace database (ringsim-trace.db)")
            p.add_argument("--run", type=int, nargs="+", action="extend", metavar="ID",
                           help="the runs the page holds (default: the latest "
                                f"{HTML_DEFAULT_RUNS}); two or more open the first two side by side")
        else:
            p.add_argument("trace", help="the trace database (ringsim-trace.db)")
            p.add_argument("--run", type=int, help="run id (default: the latest run)")
        p.add_argument("-o", "--out", default=DEFAULT_OUT[name],
                       help=f"output file (default {DEFAULT_OUT[name]})")
        if name in ("timeline", "links", "export"):
            p.add_argument("--clock", choices=("sim", "wall"),
                           help="simulated (--net runs) or wall time (default: simulated when "
                                "the run has it)")
        if name == "animate":
            p.add_argument("--fps", type=float, default=1.0,
                           help="frames per second, 0.01 to 100 (default 1)")
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    try:
        check_output(args.command, args.out,
                     [getattr(args, k, None)
                      for k in ("trace", "bench", "model", "report", "compare")])
        if args.command in ("step", "sweep"):
            COMMANDS[args.command][0](args)
            return 0
        if args.command == "compare" and (args.bench or args.model):
            if not args.bench:
                raise ToolError("compare --model needs --bench FILE (the measured times)")
            if args.trace or args.runs:
                raise ToolError("compare: give a trace (with --runs) or --bench, not both")
            cmd_compare_algorithms(args)
            return 0
        if args.command == "compare" and not args.trace:
            raise ToolError("compare: give a trace, or --bench FILE")
        con = open_trace(args.trace)
        try:
            run = None if args.command in ("compare", "html") else \
                pick_run(con, args.trace, args.run)
            COMMANDS[args.command][0](con, run, args)
        finally:
            con.close()  # the last connection to the trace: its -wal, -shm go
    except ToolError as e:
        print(f"ringsim-plot: {clean(e)}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:  # a trace damaged past its header, or text that is not UTF-8
        print(f"ringsim-plot: {clean(getattr(args, 'trace', None))}: cannot read the trace: "
              f"{clean(e)}", file=sys.stderr)
        return 2
    return 0
