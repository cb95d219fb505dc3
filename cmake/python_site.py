"""Where `cmake --install` puts ringsim's Python packages (ringsim,
ringsim_plot) for an install prefix, asked of the Python that will import
them; run at install time (cmake/install_python.cmake.in), when the prefix
is known (`cmake --install build --prefix P` gives it only then).

    python3 cmake/python_site.py PREFIX

prints two lines: the directory, and the Python that finds the packages
there (bin/ringsim-plot's interpreter). The first of these that holds:

1. PREFIX is a virtual environment (PREFIX/pyvenv.cfg): its own Python's
   site-packages, and that Python;
2. a directory of this Python's path (sys.path) under PREFIX/lib* named
   site-packages or dist-packages, and this Python: Debian's
   /usr/lib/python3/dist-packages for /usr,
   /usr/local/lib/python3.X/dist-packages for /usr/local, the user site
   for ~/.local once it exists;
3. the user scheme's directory under PREFIX,
   PREFIX/lib/python3.X/site-packages, and this Python: where this Python
   looks when PREFIX is its user base (~/.local, or any PREFIX with
   PYTHONUSERBASE=PREFIX), before the directory exists too.

Standard library only. A bad PREFIX (not absolute) is one line on
stderr, exit 2.
"""
import os
import subprocess
import sys
import sysconfig

PACKAGE_DIRS = ("site-packages", "dist-packages")


def under(path, prefix):
    """path as a path under prefix's lib directory (PREFIX/lib*/...,
    spelt from prefix as given), or None if it is not there (symbolic
    links resolved to compare): /usr/local/lib/python3.X/dist-packages is
    not the prefix /usr's."""
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(prefix))
    if not rel.split(os.sep)[0].startswith("lib"):
        return None
    return os.path.join(prefix, rel)


def site_dir(prefix):
    """(directory, interpreter) for prefix, as the module's text says."""
    if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
        python = os.path.join(prefix, "bin", "python3")
        out = subprocess.run(
            [python, "-c", "import sys, sysconfig; "
             "print(sysconfig.get_path('purelib')); print(sys.executable)"],
            check=True, capture_output=True, text=True).stdout.splitlines()
        return out[0], out[1]
    for entry in sys.path:
        if entry and os.path.basename(entry) in PACKAGE_DIRS:
            found = under(entry, prefix)
            if found:
                return found, sys.executable
    user = sysconfig.get_path("purelib", f"{os.name}_user",
                              vars={"userbase": prefix})
    return user, sys.executable


def main(argv):
    if len(argv) != 1:
        print("usage: python_site.py PREFIX", file=sys.stderr)
        return 2
    prefix = argv[0]
    if not os.path.isabs(prefix):
        print(f"python_site.py: {prefix}: the install prefix must be an "
              "absolute path", file=sys.stderr)
        return 2
    directory, python = site_dir(os.path.normpath(prefix))
    print(directory)
    print(python)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
