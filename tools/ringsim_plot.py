#!/usr/bin/python3
"""ringsim-plot: turn a ringsim trace into pictures and a Perfetto trace.

The command's entry point (installed as ringsim-plot): the tool is the
package ringsim_plot (its __init__ says what each module holds), found
beside this script (tools/ringsim_plot/ in the source tree) or, installed,
in ../share/ringsim/ringsim_plot/.

    tools/ringsim_plot.py --help
"""
import os
import sys


def package_folders():
    """Where the package ringsim_plot/ may be: beside this script (the
    source tree), then in ../share/ringsim (installed)."""
    here = os.path.dirname(os.path.realpath(__file__))
    return [here, os.path.join(os.path.dirname(here), "share", "ringsim")]


if __name__ == "__main__":
    folders = [f for f in package_folders()
               if os.path.isfile(os.path.join(f, "ringsim_plot", "__init__.py"))]
    if not folders:
        print(f"ringsim-plot: its package ringsim_plot/ is in neither "
              f"{' nor '.join(package_folders())} (it is installed with the tool)", file=sys.stderr)
        sys.exit(2)
    sys.path.insert(0, folders[0])
    from ringsim_plot.cli import main
    sys.exit(main())
