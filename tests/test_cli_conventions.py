#!/usr/bin/python3
"""The ringsim command's conventions across its modes (issue 49, item 7):
every mode named in the top-level help, `ringsim help [COMMAND]`,
--no-trace taken wherever no trace is written, and the last of a repeated
option winning (options that contradict each other still refused).

    test_cli_conventions.py RINGSIM EXAMPLES_DIR [CliConventions.test_name ...]
"""
import os
import tempfile
import unittest

import helpers

RINGSIM = EXAMPLES = None
MODES = ("bench", "model", "diff", "step")
NET = "latency=1us,bandwidth=1GB/s"


def model():
    return os.path.join(EXAMPLES, "model.json")


def in_dir(cwd, *args):
    return helpers.run(*args, cwd=cwd, timeout=120)


def run(*args):
    return helpers.run(*args, timeout=120)


class CliConventions(unittest.TestCase):
    def test_top_level_help_names_every_mode(self):
        rc, out, err = run("--help")
        self.assertEqual(rc, 0, err)
        usage = out.split("\n\n")[0]
        for mode in MODES:
            self.assertIn(f"ringsim {mode} ", usage)
            self.assertIn(f"{mode} --help", usage)

    def test_help_command(self):
        """`ringsim help` is `ringsim --help`; `ringsim help COMMAND` is
        `ringsim COMMAND --help`; anything else one line, exit 2."""
        rc, top, err = run("--help")
        self.assertEqual((rc, err), (0, ""))
        self.assertEqual(run("help"), (0, top, ""))
        for mode in MODES:
            rc, own, err = run(mode, "--help")
            self.assertEqual((rc, err), (0, ""))
            self.assertNotEqual(own, top)
            self.assertEqual(run("help", mode), (0, own, ""), mode)
        for argv, named in ((["help", "bogus"], "'bogus'"),
                            (["help", "bench", "extra"], "'extra'"),
                            (["help", "--workers"], "'--workers'")):
            rc, out, err = run(*argv)
            self.assertEqual(rc, 2, argv)
            self.assertEqual(out, "")
            self.assertEqual(err.count("\n"), 1, err)
            self.assertTrue(err.startswith("ringsim: help: "), err)
            self.assertIn(named, err)

    def test_no_trace_wherever_no_trace_is_written(self):
        """--no-trace changes nothing where no trace is written (model,
        diff, step and bench without --trace): the same output, no file;
        beside --trace it is still a contradiction."""
        step = ["step", "-p", model(), "-w", 2, "--net", NET,
                "--compute", "flops=1T,rows=32"]
        same = (["model", "-p", model(), "-w", 4, "--net", NET],
                ["diff", "-p", model(), "-w", 2, "--algo", "ring,rd"],
                step + ["--no-threads"])
        with tempfile.TemporaryDirectory() as cwd:
            for argv in same:
                rc, out, err = in_dir(cwd, *argv)
                self.assertEqual((rc, err), (0, ""), argv)
                self.assertEqual(in_dir(cwd, *argv, "--no-trace"),
                                 (0, out, ""), argv)
            for argv in (step, ["bench", "-w", 2, "-b", "1K", "-e", "4K", "-n", 2]):
                rc, out, err = in_dir(cwd, *argv, "--no-trace")
                self.assertEqual(rc, 0, err)
                self.assertNotIn("--no-trace", err)
            self.assertEqual(os.listdir(cwd), [])
            for argv in (step, ["bench", "-w", 2]):
                rc, out, err = in_dir(cwd, *argv, "--trace", "t.db", "--no-trace")
                self.assertEqual(rc, 2, argv)
                self.assertEqual(out, "")
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn(f"ringsim: {argv[0]}: --trace and --no-trace "
                              "contradict each other", err)
            self.assertEqual(os.listdir(cwd), [])


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
