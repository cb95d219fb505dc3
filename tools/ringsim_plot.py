#!/usr/bin/python3
"""ringsim-plot: turn a ringsim trace into pictures and a Perfetto trace.

The command's entry point in the source tree: the tool is the package
ringsim_plot (its __init__ says what each module holds), beside this
script (tools/ringsim_plot/). Installed (pip, or cmake --install), the
package is on Python's path and the command ringsim-plot runs its
cli.main.

    tools/ringsim_plot.py --help
"""
import os
import sys


if __name__ == "__main__":
    here = os.path.dirname(os.path.realpath(__file__))
    if not os.path.isfile(os.path.join(here, "ringsim_plot", "__init__.py")):
        print(f"ringsim-plot: its package ringsim_plot/ is not in {here}, beside this script",
              file=sys.stderr)
        sys.exit(2)
    sys.path.insert(0, here)
    from ringsim_plot.cli import main
    sys.exit(main())
