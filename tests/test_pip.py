#!/usr/bin/env python3
"""ringsim's Python side installed as a user installs it (README.md,
"Installing"), and used from another directory with no PYTHONPATH.

Pip (one CTest test, `pip`: its cases share one copy and one build): a
clean copy of the source tree (what git tracks and would add, as in the
working tree; no build directory), then in a fresh virtual environment
(`python3 -m venv --system-site-packages`) `pip install
--no-build-isolation .` from the copy, and in a second one `pip install
--no-build-isolation -e .` (the copy's CMake build is reused: one
compile). No package index (PIP_NO_INDEX), and none of this machine's
pip settings.

CmakeInstall (install_python_*): `cmake --install` of the build under test
into a temporary ~/.local-like prefix (Python's user base, as
PYTHONUSERBASE names it), and into a virtual environment.

In each, the Python that finds the packages (the environment's, or
bin/ringsim-plot's own interpreter) imports ringsim, runs the two-worker
example (w = [1, 2] and w = [3, 4] -> [2, 3] on both workers) through
ringsim.allreduce, writing a trace; ringsim_plot.figures.timeline, chunks
and links draw it (matplotlib Figures); the environment's
bin/ringsim-plot prints --help and writes the trace's page (`ringsim-plot
html`: the template is installed with the package).

    test_pip.py RINGSIM REPO_DIR BUILD_DIR WORK_DIR CMAKE [Class.test_name ...]
"""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import helpers

RINGSIM = REPO = BUILD = WORK = CMAKE = None

# Run by the installed Python in an empty directory: the example, the
# trace and its figures (and a run it does not hold refused), as JSON on
# stdout.
CHECK = r"""
import json, sys
import numpy as np
from matplotlib.figure import Figure
import ringsim
from ringsim_plot import ToolError, figures

trace = sys.argv[1]
w0 = {"w": np.array([1.0, 2.0], dtype=np.float32)}
w1 = {"w": np.array([3.0, 4.0], dtype=np.float32)}
result, report = ringsim.allreduce([w0, w1], trace=trace)
fig = figures.timeline(trace)
others = [figures.chunks(trace, run=1), figures.links(trace, clock="wall")]
try:
    figures.timeline(trace, run=2)
    refusal = None
except ToolError as e:
    refusal = str(e)
print(json.dumps({
    "version": ringsim.__version__, "library": ringsim.library_path(),
    "package": ringsim.__file__, "plot": figures.__file__,
    "w": result["w"].tolist(), "identical": report["identical"],
    "status": report["status"], "workers": report["workers"],
    "figures": [isinstance(f, Figure) for f in [fig] + others],
    "title": fig.axes[0].get_title() if fig.axes else "",
    "refusal": refusal}))
"""


def project_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        m = re.search(r"^project\(ringsim VERSION (\d+\.\d+\.\d+)\b",
                      f.read(), re.M)
    assert m, "no project(ringsim VERSION X.Y.Z) in CMakeLists.txt"
    return m.group(1)


def user_env(**extra):
    """This environment without what would find ringsim for the tests
    (PYTHONPATH, RINGSIM_LIBRARY) or pick another Python's packages, with
    CMAKE's directory first on PATH (setup.py runs cmake from PATH) and pip
    offline, with none of this machine's settings (PIP_*, pip.conf); plus
    extra."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "RINGSIM_LIBRARY", "PYTHONHOME",
                        "PYTHONUSERBASE", "VIRTUAL_ENV")
           and not k.startswith("PIP_")}
    env["PATH"] = os.pathsep.join([os.path.dirname(CMAKE),
                                   env.get("PATH", os.defpath)])
    env.update(PIP_NO_INDEX="1", PIP_CONFIG_FILE=os.devnull,
               PIP_DISABLE_PIP_VERSION_CHECK="1", **extra)
    return env


def sh(args, cwd=None, env=None, timeout=600):
    """(exit status, stdout, stderr) of args."""
    p = subprocess.run(args, cwd=cwd, env=env or user_env(),
                       capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def fresh(*parts):
    """WORK/parts..., emptied."""
    path = os.path.join(WORK, *parts)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def clean_copy(dest):
    """The source tree as a fresh clone would have it, with the working
    tree's edits: the files git tracks and those it would add (untracked,
    not ignored); without git, the tree less .git, build*/ and caches."""
    p = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--cached",
                        "--others", "--exclude-standard"],
                       capture_output=True)
    if p.returncode != 0:
        skip = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info")
        shutil.copytree(REPO, dest, symlinks=True, dirs_exist_ok=True,
                        ignore=lambda d, names: list(skip(d, names)) + [
                            n for n in names
                            if d == REPO and n.startswith("build")])
        return
    for name in sorted(set(p.stdout.split(b"\0")) - {b""}):
        name = os.fsdecode(name)
        source = os.path.join(REPO, name)
        if not os.path.lexists(source):  # deleted in the working tree
            continue
        os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
        shutil.copy2(source, os.path.join(dest, name), follow_symlinks=False)


def make_venv(path, pip=True):
    """A fresh virtual environment at path that sees the system's packages
    (numpy, matplotlib, setuptools: Debian's), with pip or without; its
    python3."""
    rc, out, err = sh([sys.executable, "-m", "venv", "--system-site-packages",
                       *([] if pip else ["--without-pip"]), path])
    assert rc == 0, out + err
    return os.path.join(path, "bin", "python3")


class Checks(unittest.TestCase):
    def check_python(self, python, name, where, env=None, under=None):
        """Run CHECK with python from an empty directory WORK/name (env:
        user_env's by default): the example's result, the package's
        version, the files it loaded (the packages under where, the
        library under under, default where) and a Figure of the run; the
        trace's path."""
        cwd = fresh(name)
        trace = os.path.join(cwd, "ringsim-trace.db")
        rc, out, err = sh([python, "-c", CHECK, trace], cwd=cwd, env=env)
        self.assertEqual(rc, 0, err)
        got = json.loads(out)
        self.assertEqual((got["w"], got["identical"], got["status"],
                          got["workers"]), ([2.0, 3.0], True, "ok", 2), got)
        self.assertEqual(got["version"], project_version())
        for key, root in (("package", where), ("plot", where),
                          ("library", under or where)):
            self.assertTrue(got[key].startswith(root + os.sep),
                            f"{key} {got[key]} is not under {root}")
        self.assertEqual(got["figures"], [True, True, True], got)
        self.assertIn("on 2 workers", got["title"])
        self.assertEqual(got["refusal"], f"{trace}: no run 2")
        return trace

    def check_plot_command(self, command, trace, env=None, page=True):
        """command (an installed ringsim-plot) prints its --help, and
        writes the trace's page when page."""
        rc, out, err = sh([command, "--help"], env=env)
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("usage: ringsim-plot "), out)
        if page:
            html = os.path.join(os.path.dirname(trace), "run.html")
            rc, out, err = sh([command, "html", trace, "-o", html], env=env)
            self.assertEqual(rc, 0, err)
            with open(html, encoding="utf-8") as f:
                text = f.read()
            self.assertTrue(text.lstrip().lower().startswith("<!doctype html"),
                            text[:80])
            self.assertNotIn("/*RINGSIM_DATA*/null", text)  # data filled in


class Pip(Checks):
    """pip install and pip install -e from one clean copy, one build."""
    copy = None

    @classmethod
    def setUpClass(cls):
        cls.copy = fresh("pip", "src")
        clean_copy(cls.copy)

    def pip_install(self, venv, *args):
        python = make_venv(venv)
        rc, out, err = sh([python, "-m", "pip", "install", "--no-cache-dir",
                           "--no-build-isolation", *args, "."],
                          cwd=self.copy, timeout=1200)
        self.assertEqual(rc, 0, out + err)
        return python

    # (named so that they run in this order: the second reuses the build)
    def test_1_install(self):
        venv = os.path.join(WORK, "pip", "venv")
        shutil.rmtree(venv, ignore_errors=True)
        python = self.pip_install(venv)
        trace = self.check_python(python, "pip-run", venv)
        rc, out, err = sh([python, "-c", "import importlib.metadata as m; "
                           "print(m.version('ringsim'))"])
        self.assertEqual((rc, out.strip()), (0, project_version()), err)
        self.check_plot_command(os.path.join(venv, "bin", "ringsim-plot"),
                                trace)

    def test_2_editable(self):
        venv = os.path.join(WORK, "pip", "venv-editable")
        shutil.rmtree(venv, ignore_errors=True)
        python = self.pip_install(venv, "-e")
        # the packages are the copy's, the library built into it
        trace = self.check_python(python, "pip-editable-run", self.copy)
        self.check_plot_command(os.path.join(venv, "bin", "ringsim-plot"),
                                trace, page=False)


class CmakeInstall(Checks):
    """cmake --install of the build under test, the prefix's Python."""

    def installed(self, prefix):
        """Install into prefix; bin/ringsim-plot's interpreter."""
        rc, out, err = sh([CMAKE, "--install", BUILD, "--prefix", prefix],
                          env=dict(os.environ))
        self.assertEqual(rc, 0, out + err)
        with open(os.path.join(prefix, "bin", "ringsim-plot")) as f:
            return f.readline()[2:].strip()

    def test_user_prefix(self):
        # a ~/.local of its own: Python's user base (PYTHONUSERBASE stands
        # for HOME=...), which bin/ringsim-plot's Python searches
        prefix = os.path.join(fresh("cmake-user"), ".local")
        python = self.installed(prefix)
        env = user_env(PYTHONUSERBASE=prefix)
        rc, out, err = sh([python, "-c", "import site; "
                           "print(site.getusersitepackages())"], env=env)
        self.assertEqual(rc, 0, err)
        trace = self.check_python(python, "cmake-user-run", out.strip(),
                                  env=env, under=prefix)
        # its ringsim-plot finds them from where it is, with no
        # PYTHONUSERBASE (any prefix)
        self.check_plot_command(os.path.join(prefix, "bin", "ringsim-plot"),
                                trace)

    def test_venv_prefix(self):
        venv = fresh("cmake-venv")
        python = make_venv(venv, pip=False)
        self.assertEqual(self.installed(venv), python)
        trace = self.check_python(python, "cmake-venv-run", venv)
        self.check_plot_command(os.path.join(venv, "bin", "ringsim-plot"),
                                trace, page=False)


def main():
    helpers.main(globals(), "RINGSIM", "REPO", "BUILD", "WORK", "CMAKE")


if __name__ == "__main__":
    main()
