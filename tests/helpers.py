#!/usr/bin/python3
"""What the Python test files share: their command line, running the
ringsim command, and the peers some of them need.

A test file is run by CTest (tests/CMakeLists.txt) as

    test_NAME.py PATH... [Class.test_case ...]

its paths first (the command, the examples, ...), then the cases to run
(none: every case). In the test file:

    def main():
        helpers.main(globals(), "RINGSIM", "EXAMPLES")

sets the file's globals RINGSIM and EXAMPLES to the paths, made absolute,
and runs the cases; helpers.parse(globals(), ...) and helpers.run_tests()
do it in two steps for a file that has more to set up in between.
helpers.run(*args) runs the command (the file's RINGSIM).

A test that needs a peer (Open MPI's mpirun, torch, Chromium) the machine
lacks is skipped, saying why: the file exits SKIP (77, the tests'
SKIP_RETURN_CODE), which ctest shows as "Skipped". Where
RINGSIM_REQUIRE_PEERS=1 (scripts/test and CI set it) it fails instead, so
a peer test is never silently skipped there.

    helpers.py missing MESSAGE [SCRIPT SELECTOR]
        what tests/CMakeLists.txt registers for a peer CMake did not find:
        prints MESSAGE and skips, or fails under RINGSIM_REQUIRE_PEERS=1
"""
import importlib
import os
import subprocess
import sys
import unittest

SKIP = 77  # the SKIP_RETURN_CODE of every Python test (tests/CMakeLists.txt)

# the paths helpers.parse read: {"RINGSIM": ..., ...} (empty until then)
_paths = {}


def parse(module_globals, *names):
    """Set each global of names (RINGSIM, EXAMPLES, ...) of the test file
    to its argument, an absolute path; the arguments left (the cases)."""
    argv = sys.argv
    if len(argv) < 1 + len(names):
        sys.exit(f"usage: {os.path.basename(argv[0])} {' '.join(names)} "
                 "[Class.test_name ...]")
    for name, value in zip(names, argv[1:]):
        module_globals[name] = _paths[name] = os.path.abspath(value)
    return argv[1 + len(names):]


def run_tests(cases, verbosity=2):
    """unittest's main over the test file's classes, the given cases only
    (none: all)."""
    unittest.main(module="__main__", argv=[sys.argv[0], *cases],
                  verbosity=verbosity)


def main(module_globals, *names):
    """parse, then run_tests: a test file's main()."""
    run_tests(parse(module_globals, *names))


def run(*args, cwd=None, env=None, timeout=600):
    """The ringsim command (the RINGSIM path) on args: (exit status,
    stdout, stderr). env: variables added to this process's environment.
    The timeout catches a hang; it times nothing."""
    p = subprocess.run([_paths["RINGSIM"], *map(str, args)],
                       capture_output=True, text=True, timeout=timeout,
                       cwd=cwd, env=dict(os.environ, **env) if env else None)
    return p.returncode, p.stdout, p.stderr


def peers_required():
    """True where a missing peer is a failure (RINGSIM_REQUIRE_PEERS=1)."""
    return os.environ.get("RINGSIM_REQUIRE_PEERS", "") == "1"


def peer_missing(message):
    """A peer is missing: say so and end the test file, skipped (exit
    SKIP) or, under RINGSIM_REQUIRE_PEERS=1, failed (exit 1)."""
    if peers_required():
        print(f"FAILED: {message} (RINGSIM_REQUIRE_PEERS=1: a peer test "
              "is never skipped here)", file=sys.stderr)
        sys.exit(1)
    print(f"SKIPPED: {message} (RINGSIM_REQUIRE_PEERS=1 makes this a "
          "failure)", file=sys.stderr)
    sys.exit(SKIP)


def import_peer(module, package):
    """import module (torch, torch.distributed, ...), or peer_missing
    naming the Debian package that has it."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        peer_missing(f"needs {module} ({e}): apt-get install {package} "
                     "(scripts/deps.sh test installs it)")


def _main(argv):
    if len(argv) >= 2 and argv[0] == "missing":
        peer_missing(argv[1])
    print("usage: helpers.py missing MESSAGE [SCRIPT SELECTOR]",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
