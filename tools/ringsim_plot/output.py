"""What every command shares to write its output and its messages: ToolError
(a bad input: one line on stderr, exit 2), clean (a name as ringsim prints
it: control characters as '?'), progress, check_output (refuses a bad -o,
and an -o that is one of the inputs, before any work) and replacing (an
output written whole or not at all: a new file beside it, flushed, renamed
over it); save writes a figure through it.
"""
import contextlib
import json
import os
import stat
import sys
import tempfile


class ToolError(Exception):
    """A problem with the user's input: reported as one line, exit 2."""


# C0 controls, DEL and C1 controls (ESC starts a terminal's escape
# sequences; none is legal in XML 1.0 but tab, newline and return), and
# lone surrogates (the bytes of a file name that are not UTF-8)
_CONTROLS = {c: "?" for c in [*range(0x20), *range(0x7f, 0xa0)]}


def clean(text):
    """text as ringsim prints a name: every control character a '?' (as its
    rs_one_line), and so a surrogate; None stays None."""
    if text is None:
        return None
    text = str(text).translate(_CONTROLS)
    if any("\ud800" <= ch <= "\udfff" for ch in text):
        text = "".join("?" if "\ud800" <= ch <= "\udfff" else ch for ch in text)
    return text


def progress(message):
    print(f"ringsim-plot: {clean(message)}", file=sys.stderr, flush=True)


OUT_TYPES = {"animate": (".gif", ".mp4"), "export": (".json",), "html": (".html", ".htm")}


def check_output(command, out, inputs=()):
    """Refuse a bad -o before any work: its type, whether it can be made,
    and whether it is one of the inputs (the same file: a hard link, a
    symlink, or the trace itself named t.png), which writing would destroy."""
    allowed = OUT_TYPES.get(command, (".png", ".svg", ".pdf"))
    ext = os.path.splitext(out)[1].lower()
    if ext not in allowed:
        kind = {"animate": "animation", "export": "export", "html": "page"}.get(command, "image")
        raise ToolError(f"{out}: unknown {kind} type '{ext}' (use {', '.join(allowed)})")
    if os.path.isdir(out):
        raise ToolError(f"{out}: cannot write: is a directory")
    for name in inputs:
        try:
            same = name is not None and os.path.samefile(out, name)
        except OSError:  # either does not exist (yet)
            same = False
        if same:
            raise ToolError(f"{out}: is the input {name} (the same file): refusing to write "
                            "over it; give another -o")
    folder = os.path.dirname(os.path.realpath(out))
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise ToolError(f"{out}: cannot write: no writable directory {folder}")


@contextlib.contextmanager
def replacing(out):
    """Write out whole or not at all: yields the name of a new file beside
    out's target (through a symlink, the file it names) with out's
    extension, to write; once the body returns it is flushed to disk and
    renamed over the target, taking the target's permissions (a new file:
    0666 less the umask). On any error (a full disk) the new file is
    removed and whatever was at out is left as it was: an OSError becomes
    a one-line ToolError. A target that is not a regular file (a FIFO,
    /dev/null) is written in place."""
    target = os.path.realpath(out)
    try:
        st = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise ToolError(f"{out}: cannot write: {e.strerror}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            yield target
        except OSError as e:
            raise ToolError(f"{out}: cannot write: {e.strerror}") from None
        return
    folder, name = os.path.split(target)
    ext = os.path.splitext(name)[1]
    try:
        most = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        most = 255
    # '.', the name cut to fit a directory entry, '.', 8 random characters, ext
    keep = max(0, most - 10 - len(ext.encode()))
    stem = os.fsencode(name)[:keep].decode(errors="ignore") if len(os.fsencode(name)) > keep else name
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{stem}.", suffix=ext, dir=folder)
        os.close(fd)
    except OSError as e:
        raise ToolError(f"{out}: cannot write: {e.strerror}") from None
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        if st is not None:
            mode = stat.S_IMODE(st.st_mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        # a writer that fails may raise something else while it cleans up
        # (matplotlib's PDF writer, on a full disk: AttributeError during
        # the OSError): the OSError behind it is the reason
        cause = e
        while cause is not None and not isinstance(cause, OSError) and \
                not isinstance(e, (ToolError, KeyboardInterrupt)):
            cause = cause.__cause__ or cause.__context__
        if isinstance(cause, OSError):
            raise ToolError(f"{out}: cannot write: {cause.strerror or cause}") from None
        raise


def read_report(path, what):
    """The JSON document at path, another command's output (what: its
    name, as `ringsim step --json`); one ToolError line if it cannot be
    read or is not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise ToolError(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise ToolError(f"{path}: not {what} output: {e}") from None
    except RecursionError:  # Python's decoder's limit: ringsim nests 5 deep
        raise ToolError(f"{path}: not {what} output: JSON nested too deeply") from None


def save(fig, out, title, tight=True):
    """Write fig (whole or not at all: replacing); its type (checked by
    check_output) follows the extension. The title also goes into the
    file's metadata (PNG tEXt, SVG and PDF title). tight=False for a
    figure whose layout engine already fits it: a tight bounding box draws
    the figure twice."""
    import matplotlib
    # SVG text stays text (searchable), whoever made the figure
    with replacing(out) as tmp, matplotlib.rc_context({"svg.fonttype": "none"}):
        fig.savefig(tmp, dpi=120, bbox_inches="tight" if tight else None,
                    metadata={"Title": title})
    progress(f"wrote {out}")
