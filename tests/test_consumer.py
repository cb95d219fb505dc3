#!/usr/bin/env python3
"""A consumer's build: tests/consumer/ is a tiny project that
add_subdirectory()s the ringsim source tree. Configured on a machine view
without cmocka (CMAKE_DISABLE_FIND_PACKAGE_cmocka=ON), it must configure
(ringsim's tests, benchmarks and fuzz replays off, as it is not the
top-level project), build its program with the library alone, and run the
two-worker example through the public API: w0 = [1, 2], w1 = [3, 4] ->
[2, 3] on both workers.

    test_consumer.py RINGSIM REPO_DIR WORK_DIR CMAKE CC [Consumer.test_name ...]

WORK_DIR is emptied and holds the consumer's build.
"""
import os
import shutil
import subprocess
import unittest

import helpers

RINGSIM = REPO = WORK = CMAKE = CC = None


def cmake(*args):
    """(exit status, stdout + stderr) of cmake on args."""
    p = subprocess.run([CMAKE, *args], capture_output=True, text=True,
                       timeout=600)
    return p.returncode, p.stdout + p.stderr


class Consumer(unittest.TestCase):
    def test_add_subdirectory_without_cmocka(self):
        shutil.rmtree(WORK, ignore_errors=True)
        os.makedirs(WORK)
        build = os.path.join(WORK, "build")
        rc, out = cmake("-S", os.path.join(REPO, "tests", "consumer"),
                        "-B", build, f"-DRINGSIM_SOURCE_DIR={REPO}",
                        f"-DCMAKE_C_COMPILER={CC}",
                        "-DCMAKE_BUILD_TYPE=Release",
                        "-DCMAKE_DISABLE_FIND_PACKAGE_cmocka=ON")
        self.assertEqual(rc, 0, out)
        # nothing looked for cmocka or a Python for the tests
        self.assertNotIn("module 'cmocka'", out)
        self.assertNotIn("Python for the tests", out)
        cache = open(os.path.join(build, "CMakeCache.txt")).read()
        for option in ("RINGSIM_BUILD_TESTS", "RINGSIM_BUILD_BENCH",
                       "RINGSIM_BUILD_FUZZ_REPLAY", "RINGSIM_WERROR"):
            self.assertIn(f"{option}:BOOL=OFF", cache, option)
        # the consumer's own flags, untouched
        self.assertRegex(cache, r"CMAKE_C_FLAGS_RELEASE:STRING=-O3 -DNDEBUG\n")
        # the program and what it needs: the library once, not the
        # command, the shared library or the test build's second variant
        rc, out = cmake("--build", build, "-j2", "--target", "consumer")
        self.assertEqual(rc, 0, out)
        self.assertNotIn("ringsim_cli", out)
        self.assertNotIn("noclones", out)
        # ringsim's warnings on its own targets, not errors by default
        flags = open(os.path.join(build, "ringsim", "CMakeFiles",
                                  "ringsim.dir", "flags.make")).read()
        self.assertIn("-Wall", flags)
        self.assertNotIn("-Werror", flags)
        consumer_flags = open(os.path.join(build, "CMakeFiles",
                                           "consumer.dir", "flags.make")).read()
        self.assertNotIn("-Wall", consumer_flags)
        p = subprocess.run([os.path.join(build, "consumer")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, "worker 0: w = [2, 3]\n"
                                   "worker 1: w = [2, 3]\n")


def main():
    helpers.main(globals(), "RINGSIM", "REPO", "WORK", "CMAKE", "CC")


if __name__ == "__main__":
    main()
