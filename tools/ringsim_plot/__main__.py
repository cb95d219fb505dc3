"""python3 -m ringsim_plot: the ringsim-plot command."""
import sys

from .cli import main

sys.exit(main())
