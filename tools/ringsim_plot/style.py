"""What the pictures share: matplotlib set up for files (Agg, SVG text as
text), a colour per phase, and titles that carry a failed run's status
and fit their figure.
"""
from .replay import status_line


# A colour per phase of every algorithm (docs/trace-schema.md): the ring's
# two first, then recursive doubling's exchange and the reduce (linear's and
# the tree's gathering, the fold-in of rd and rhd) and broadcast phases.
PHASE_COLOURS = {"reduce_scatter": "#1f77b4", "all_gather": "#ff7f0e", "exchange": "#2ca02c",
                 "reduce": "#9467bd", "broadcast": "#17becf"}


def pyplot():
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # SVG text stays text: searchable
    import matplotlib.pyplot as plt
    return plt


def figure(**kw):
    """A new matplotlib Figure (kw: Figure's, figsize and layout) on an Agg
    canvas of its own, made without pyplot: no backend chosen for the
    caller and no figure kept open, so that ringsim_plot.figures can hand
    it to a caller (a notebook shows it; savefig writes it) and a command
    need not close it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(**kw)
    FigureCanvasAgg(fig)
    return fig


def phase_colour(phase):
    """The phase's colour; grey for a phase this tool does not know."""
    return PHASE_COLOURS.get(phase, "#7f7f7f")


def shade(colour, factor):
    """colour made lighter (factor > 0) or darker (factor < 0)."""
    import matplotlib.colors as mcolors
    r, g, b = mcolors.to_rgb(colour)
    if factor >= 0:
        return (r + (1 - r) * factor, g + (1 - g) * factor, b + (1 - b) * factor)
    return (r * (1 + factor), g * (1 + factor), b * (1 + factor))


def fit_title(text, width_inches, fontsize):
    """text wrapped, line by line, to what width_inches holds at fontsize
    (a DejaVu Sans character is at most about 0.6 em wide on average), so
    a figure's title stays on its canvas."""
    import textwrap
    chars = max(30, int(width_inches * 72 / (fontsize * 0.6)))
    return "\n".join(part for line in text.split("\n")
                     for part in (textwrap.wrap(line, chars) or [""]))


def titled(text, run, width=None):
    """text, with the run's failure on a second line (wrapped at width
    characters when given)."""
    line = status_line(run)
    if line and width:
        import textwrap
        line = "\n".join(textwrap.wrap(line, width))
    return f"{text}\n{line}" if line else text
