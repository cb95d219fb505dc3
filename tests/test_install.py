#!/usr/bin/env python3
"""An installed ringsim, as another project uses it, and its versions.

`cmake --install` of the build under test into WORK_DIR/prefix; then the
consumer tests/consumer_installed/ finds it with find_package(ringsim
CONFIG) (CMAKE_PREFIX_PATH) and links ringsim::ringsim, static and shared,
and tests/consumer/consumer.c is compiled with pkg-config's flags (--static
against libringsim.a, then against libringsim.so); each program runs the
two-worker example: w0 = [1, 2], w1 = [3, 4] -> [2, 3] on both workers.

The version is project(VERSION) of the top CMakeLists.txt, the one place
it is written: the generated header's macros, rs_version(), ringsim
--version, ringsim.__version__, ringsim-plot --version, the CMake package
and ringsim.pc all say it; a Python package over a library of another
version is an ImportError naming both.

    test_install.py RINGSIM REPO_DIR BUILD_DIR WORK_DIR CMAKE CC [Install.test_name ...]

WORK_DIR holds, per test, the prefix and the consumers' builds.
"""
import os
import re
import shutil
import subprocess
import sys
import unittest

import helpers

RINGSIM = REPO = BUILD = WORK = CMAKE = CC = None
EXPECTED = "worker 0: w = [2, 3]\nworker 1: w = [2, 3]\n"


def project_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        text = f.read()
    m = re.search(r"^project\(ringsim VERSION (\d+)\.(\d+)\.(\d+)\b", text,
                  re.M)
    assert m, "no project(ringsim VERSION X.Y.Z) in CMakeLists.txt"
    return m.groups()


def sh(*args, env=None, timeout=600):
    """(exit status, stdout + stderr) of args."""
    p = subprocess.run(list(args), capture_output=True, text=True,
                       timeout=timeout,
                       env=dict(os.environ, **env) if env else None)
    return p.returncode, p.stdout + p.stderr


_prefix = None


def prefix():
    """The install prefix, installed once per process (each test its own
    WORK_DIR/TEST/prefix, emptied first: ctest may run them at once)."""
    global _prefix
    if _prefix is None:
        test = os.path.basename(sys.argv[-1]).replace(".", "-")
        work = os.path.join(WORK, test)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        rc, out = sh(CMAKE, "--install", BUILD, "--prefix",
                     os.path.join(work, "prefix"))
        assert rc == 0, out
        _prefix = os.path.join(work, "prefix")
    return _prefix


def libdir():
    """The prefix's lib directory holding libringsim.a."""
    for root, _, files in os.walk(prefix()):
        if "libringsim.a" in files:
            return root
    raise AssertionError("no libringsim.a installed")


class Install(unittest.TestCase):
    def run_consumer(self, program, env=None):
        p = subprocess.run([program], capture_output=True, text=True,
                           timeout=60, env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, EXPECTED)

    def linked_ringsim(self, program):
        """The libringsim.so the program loads (ldd), or None."""
        rc, out = sh("ldd", program)
        self.assertEqual(rc, 0, out)
        m = re.search(r"libringsim\.so\S* => (\S+)", out)
        return m and os.path.realpath(m.group(1))

    def test_find_package_static_and_shared(self):
        version = ".".join(project_version())
        for shared in ("OFF", "ON"):
            build = os.path.join(prefix(), "..", f"cmake-shared-{shared}")
            rc, out = sh(CMAKE, "-S", os.path.join(REPO, "tests",
                                                   "consumer_installed"),
                         "-B", build, f"-DCMAKE_PREFIX_PATH={prefix()}",
                         f"-DCMAKE_C_COMPILER={CC}",
                         f"-DRINGSIM_WANT_VERSION={version}",
                         f"-DRINGSIM_SHARED={shared}")
            self.assertEqual(rc, 0, out)
            self.assertIn(f"ringsim {version} at {prefix()}", out)
            rc, out = sh(CMAKE, "--build", build, "-j2")
            self.assertEqual(rc, 0, out)
            program = os.path.join(build, "consumer")
            lib = self.linked_ringsim(program)
            if shared == "ON":
                self.assertEqual(lib, os.path.realpath(
                    os.path.join(libdir(), "libringsim.so")))
            else:
                self.assertIsNone(lib)
            self.run_consumer(program)
        # a version it is not: the version file refuses it
        major = int(project_version()[0])
        rc, out = sh(CMAKE, "-S", os.path.join(REPO, "tests",
                                               "consumer_installed"),
                     "-B", os.path.join(prefix(), "..", "cmake-other"),
                     f"-DCMAKE_PREFIX_PATH={prefix()}",
                     f"-DRINGSIM_WANT_VERSION={major + 1}.0")
        self.assertNotEqual(rc, 0, out)
        out = " ".join(out.split())
        self.assertIn(f'compatible with requested version "{major + 1}.0"', out)
        self.assertIn(f"ringsimConfig.cmake, version: {'.'.join(project_version())}",
                      out)

    def test_pkg_config_static_and_shared(self):
        env = {"PKG_CONFIG_PATH": os.path.join(libdir(), "pkgconfig")}
        rc, out = sh("pkg-config", "--modversion", "ringsim", env=env)
        self.assertEqual((rc, out), (0, ".".join(project_version()) + "\n"))
        source = os.path.join(REPO, "tests", "consumer", "consumer.c")
        for mode in ("--static", "--shared"):
            args = ["pkg-config", "--cflags", "--libs", "ringsim"]
            if mode == "--static":
                args.insert(1, "--static")
            rc, flags = sh(*args, env=env)
            self.assertEqual(rc, 0, flags)
            flags = flags.split()
            if mode == "--static":
                # -lringsim would take the .so beside the .a: the .a, and
                # then only what ringsim.pc declares it needs
                self.assertIn("-lm", flags)
                flags = [f if f != "-lringsim" else
                         os.path.join(libdir(), "libringsim.a") for f in flags]
            program = os.path.join(prefix(), "..", f"pkg{mode[1:]}")
            rc, out = sh(CC, "-std=c11", source, "-o", program, *flags)
            self.assertEqual(rc, 0, out)
            run_env = dict(os.environ, LD_LIBRARY_PATH=libdir())
            self.assertEqual(self.linked_ringsim(program) is None,
                             mode == "--static")
            self.run_consumer(program, env=run_env)

    def test_versions(self):
        major, minor, patch = project_version()
        version = f"{major}.{minor}.{patch}"
        with open(os.path.join(prefix(), "include", "ringsim",
                               "version.h")) as f:
            header = f.read()
        for name, value in (("MAJOR", major), ("MINOR", minor),
                            ("PATCH", patch)):
            self.assertRegex(header, rf"#define RS_VERSION_{name} {value}\n")
        self.assertIn(f'#define RS_VERSION "{version}"\n', header)
        # the man page (of this version) and the completion scripts,
        # generated at build time from the option table
        with open(os.path.join(prefix(), "share", "man", "man1",
                               "ringsim.1")) as f:
            self.assertRegex(f.read(), rf'\.TH RINGSIM 1 "" "ringsim {version}"')
        for script, line in (("bash-completion/completions/ringsim",
                              "complete -F _ringsim ringsim\n"),
                             ("zsh/site-functions/_ringsim",
                              "#compdef ringsim\n")):
            with open(os.path.join(prefix(), "share", script)) as f:
                self.assertIn(line, f.read(), script)
        rc, out, _ = helpers.run("--version")
        self.assertEqual((rc, out), (0, f"ringsim {version}\n"))
        lib = os.path.join(BUILD, "libringsim.so")
        code = ("import ctypes, sys, ringsim; l = ctypes.CDLL(sys.argv[1]); "
                "l.rs_version.restype = ctypes.c_char_p; "
                "print(l.rs_version().decode(), ringsim.__version__)")
        rc, out = sh(sys.executable, "-c", code, lib,
                     env={"PYTHONPATH": os.path.join(REPO, "python"),
                          "RINGSIM_LIBRARY": lib})
        self.assertEqual((rc, out), (0, f"{version} {version}\n"))
        rc, out = sh(sys.executable, os.path.join(REPO, "tools",
                                                  "ringsim_plot.py"),
                     "--version")
        self.assertEqual((rc, out), (0, f"ringsim-plot {version}\n"))

    def test_python_refuses_a_library_of_another_version(self):
        package = os.path.join(WORK, "other-version", "ringsim")
        shutil.rmtree(os.path.dirname(package), ignore_errors=True)
        shutil.copytree(os.path.join(REPO, "python", "ringsim"), package,
                        ignore=shutil.ignore_patterns("__pycache__"))
        init = os.path.join(package, "__init__.py")
        with open(init) as f:
            text = f.read()
        version = ".".join(project_version())
        self.assertIn(f'__version__ = "{version}"\n', text)
        with open(init, "w") as f:
            f.write(text.replace(f'__version__ = "{version}"',
                                 '__version__ = "9.8.7"'))
        lib = os.path.join(BUILD, "libringsim.so")
        rc, out = sh(sys.executable, "-c", "import ringsim",
                     env={"PYTHONPATH": os.path.dirname(package),
                          "RINGSIM_LIBRARY": lib})
        self.assertNotEqual(rc, 0)
        self.assertEqual(out.strip().splitlines()[-1],
                         f"ImportError: ringsim: {lib} is libringsim "
                         f"{version}, this package is ringsim 9.8.7: "
                         f"install the two from the same build")


def main():
    helpers.main(globals(), "RINGSIM", "REPO", "BUILD", "WORK", "CMAKE", "CC")


if __name__ == "__main__":
    main()
