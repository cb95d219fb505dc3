#!/usr/bin/python3
"""The man page and the shell completion scripts, made from the option
table (issue 49, item 8): `ringsim help --man` lists every option each
mode's --help lists and renders without a warning; `ringsim help
--completion bash` completes commands, options and the values the table
knows.

    test_man_completion.py RINGSIM [ManCompletion.test_name ...]
"""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

import helpers

RINGSIM = None
MODES = ("", "bench", "model", "diff", "step")


def run(*args):
    return helpers.run(*args, timeout=120)


def help_options(mode):
    """The options mode's --help lists: {"--workers", ...}."""
    rc, out, err = run(*([mode] if mode else []), "--help")
    assert rc == 0, err
    return set(re.findall(r"^  (?:-\w, |    )(--[a-z][\w-]*)", out, re.M))


def complete(*words):
    """The candidates bash completion offers for the command line words,
    the last one being completed."""
    rc, script, err = run("help", "--completion", "bash")
    assert rc == 0, err
    with tempfile.NamedTemporaryFile("w", suffix=".bash") as f:
        f.write(script)
        f.flush()
        code = ('source "$1"; shift; COMP_WORDS=("$@"); '
                'COMP_CWORD=$(( $# - 1 )); _ringsim; '
                'printf "%s\\n" "${COMPREPLY[@]}"')
        p = subprocess.run(["bash", "-c", code, "bash", f.name, *words],
                           capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return [w for w in p.stdout.split("\n") if w]


class ManCompletion(unittest.TestCase):
    def test_man_page_lists_every_option(self):
        rc, page, err = run("help", "--man")
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(page.startswith(".\\\" generated"), page[:80])
        listed = set(re.findall(r"^\.B .*?(\\-\\-[a-z][\w\\-]*)", page, re.M))
        listed = {name.replace("\\-", "-") for name in listed}
        for mode in MODES:
            missing = help_options(mode) - listed
            self.assertEqual(missing, set(), f"ringsim {mode} --help")
        for section in ("OPTIONS", "RINGSIM BENCH", "RINGSIM MODEL",
                        "RINGSIM DIFF", "RINGSIM STEP"):
            self.assertIn(f'.SH "{section}"\n', page)

    def test_man_page_renders_without_warnings(self):
        rc, page, err = run("help", "--man")
        self.assertEqual(rc, 0, err)
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "ringsim.1")
            with open(path, "w") as f:
                f.write(page)
            env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
            if shutil.which("man"):
                argv = ["man", "--warnings", "-l", path]
            else:
                argv = ["groff", "-man", "-Tutf8", "-ww", path]
            p = subprocess.run(argv, capture_output=True, text=True,
                               env=env, timeout=60)
        self.assertEqual((p.returncode, p.stderr), (0, ""), argv)
        self.assertIn("ringsim - a data-parallel gradient all-reduce",
                      p.stdout)
        self.assertIn("--proto", p.stdout.replace("\u2010", "-"))

    def test_bash_completes_options(self):
        self.assertEqual(complete("ringsim", "model", "--al"), ["--algo"])
        self.assertIn("--quiet", complete("ringsim", "bench", "--q"))
        self.assertEqual(complete("ringsim", "m"), ["model"])
        self.assertNotIn("--explain", complete("ringsim", "model", "--"))

    def test_bash_completes_values(self):
        run_algos = complete("ringsim", "--algo", "")
        self.assertEqual(run_algos[:3], ["ring", "rd", "rhd"])
        self.assertIn("auto", run_algos)
        self.assertIn("hier:rd", run_algos)
        self.assertNotIn("all", run_algos)  # a run takes one algorithm
        self.assertIn("all", complete("ringsim", "model", "--algo", ""))
        self.assertEqual(complete("ringsim", "model", "--proto", "L"),
                         ["LL", "LL128"])
        self.assertEqual(complete("ringsim", "model", "--like", ""), ["nccl"])
        self.assertEqual(complete("ringsim", "--like", ""), ["ddp-gloo"])
        self.assertIn("dgx-h100", complete("ringsim", "step", "--topo", "dgx"))
        self.assertEqual(complete("ringsim", "help", "--completion", ""),
                         ["bash", "zsh"])

    def test_help_refuses_another_shell(self):
        rc, out, err = run("help", "--completion", "fish")
        self.assertEqual((rc, out), (2, ""))
        self.assertEqual(err.count("\n"), 1, err)
        self.assertIn("'fish': expected bash or zsh", err)


def main():
    helpers.main(globals(), "RINGSIM")


if __name__ == "__main__":
    main()
