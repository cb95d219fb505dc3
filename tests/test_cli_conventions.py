#!/usr/bin/python3
"""The ringsim command's conventions across its modes (issue 49, item 7):
every mode named in the top-level help, `ringsim help [COMMAND]`,
--no-trace taken wherever no trace is written, and the last of a repeated
option winning (options that contradict each other still refused).

    test_cli_conventions.py RINGSIM EXAMPLES_DIR [CliConventions.test_name ...]
"""
import os
import unittest

import helpers

RINGSIM = EXAMPLES = None
MODES = ("bench", "model", "diff", "step")


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


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
