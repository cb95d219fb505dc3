#!/usr/bin/python3
"""The ringsim command's conventions across its modes (issue 49, item 7):
every mode named in the top-level help, `ringsim help [COMMAND]`,
--no-trace taken wherever no trace is written, and the last of a repeated
option winning (options that contradict each other still refused), and
the progress line: on a terminal alone, silenced by --quiet.

    test_cli_conventions.py RINGSIM EXAMPLES_DIR [CliConventions.test_name ...]
"""
import json
import os
import pty
import subprocess
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


def on_terminal(*args):
    """ringsim with stderr on a pseudo-terminal, stdout on a pipe, and the
    progress line drawn from a stage's start (RINGSIM_TEST_PROGRESS_AFTER=0,
    so no slow machine is needed): (exit status, stdout, what the terminal
    was sent)."""
    master, slave = pty.openpty()
    env = dict(os.environ, RINGSIM_TEST_PROGRESS_AFTER="0")
    p = subprocess.Popen([RINGSIM, *map(str, args)], stdout=subprocess.PIPE,
                         stderr=slave, stdin=subprocess.DEVNULL, env=env)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        shown += chunk
    out = p.stdout.read()
    rc = p.wait(timeout=600)
    os.close(master)
    return rc, out.decode(), shown.decode(errors="replace")


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

    def assert_same(self, given, last, cwd=None):
        """given (an option repeated) does what last (its last value
        alone) does: the same status, output and message."""
        a = in_dir(cwd, *given) if cwd else run(*given)
        b = in_dir(cwd, *last) if cwd else run(*last)
        self.assertEqual(a, b, given)
        self.assertEqual(a[0], 0, a[2])

    def test_last_repeated_option_wins(self):
        """As getopt's convention: a repeated option's last value wins,
        whole (a list is not merged), for values and flags alike."""
        m = model()
        mod = ["model", "-p", m, "--net", NET]
        self.assert_same(mod + ["-w", 2, "-w", 4], mod + ["-w", 4])
        self.assert_same(["model", "-p", m, "-w", 4, "--net", "latency=5us,bandwidth=9GB/s",
                          "--net", NET], mod + ["-w", 4])
        self.assert_same(mod + ["-w", 4, "--json", "--json"], mod + ["-w", 4, "--json"])
        # lists: the last one whole
        self.assert_same(mod + ["-w", "8,64", "-w", 4], mod + ["-w", 4])
        self.assert_same(mod + ["-w", 4, "-w", "8,64"], mod + ["-w", "8,64"])
        self.assert_same(mod + ["-w", "2,4,8", "--workers=8,64"], mod + ["-w", "8,64"])
        topo = ["model", "-p", m, "--topo"]
        self.assert_same(topo + ["dgx-h100,nodes=1,2", "--topo", "dgx-h100,nodes=2"],
                         topo + ["dgx-h100,nodes=2"])
        self.assert_same(topo + ["dgx-h100,nodes=2", "--topo", "dgx-h100,nodes=1,2"],
                         topo + ["dgx-h100,nodes=1,2"])
        step = ["step", "-p", m, "-w", 2, "--net", NET, "--compute", "flops=1T,rows=32",
                "--no-threads"]
        self.assert_same(step + ["--bucket-mb", "sweep", "--bucket-mb", "1,5"],
                         step + ["--bucket-mb", "1,5"])
        self.assert_same(step + ["--bucket-mb", "1,5,25", "--bucket-mb", "5"],
                         step + ["--bucket-mb", "5"])
        self.assert_same(step + ["--iterations", 5, "--iterations", 3],
                         step + ["--iterations", 3])
        # diff: an A,B value replaced by a later one, or by one value
        diff = ["diff", "-p", m, "-w", 2]
        self.assert_same(diff + ["--algo", "ring,rd,rhd", "--algo", "ring,rd"],
                         diff + ["--algo", "ring,rd"])
        self.assert_same(diff + ["--algo", "ring,rd", "--slots", "2,4,8", "--slots", 2],
                         diff + ["--algo", "ring,rd", "--slots", 2])
        self.assert_same(diff + ["--dtype", "f32,f16", "--dtype", "f64", "--algo", "ring,rd"],
                         diff + ["--dtype", "f64", "--algo", "ring,rd"])
        with tempfile.TemporaryDirectory() as cwd:
            bench = ["bench", "-b", "1K", "-e", "1K", "-n", 1, "--warmup", 0, "--json"]
            rc, out, err = in_dir(cwd, *bench, "-w", "2,3", "-w", 2, "-n", 3, "-n", 1)
            self.assertEqual(rc, 0, err)
            rows = [json.loads(line) for line in out.splitlines()]
            self.assertEqual([(r["workers"], r["size"], r["iters"]) for r in rows],
                             [(2, 1024, 1)])

    def test_conflicting_options_stay_refused(self):
        """Two options that contradict each other are refused however
        often each is given: one line, exit 2, nothing run."""
        m = model()
        for argv, said in (
                (["model", "-p", m, "-w", 8, "--net", NET, "--net", NET,
                  "--topo", "dgx-h100,nodes=1"], "--topo and --net"),
                (["bench", "-g", 2, "-w", 4, "-w", 2], "-g"),
                (["bench", "-w", 2, "--trace", "a.db", "--trace", "b.db", "--no-trace"],
                 "--trace and --no-trace contradict each other"),
                (["-p", m, "--no-trace", "--trace", "a.db", "--no-trace"],
                 "--trace and --no-trace contradict each other"),
                (["-p", m, "--like", "ddp-gloo", "--algo", "ring", "--like", "ddp-gloo"],
                 "--like"),
                (["diff", "-p", m, "-w", 2, "--algo", "ring,rd", "--slots", "2,4,8"],
                 "--slots 2,4,8: 3 values, where --algo gave 2")):
            with tempfile.TemporaryDirectory() as cwd:
                rc, out, err = in_dir(cwd, *argv)
                self.assertEqual(rc, 2, (argv, err))
                self.assertEqual(out, "")
                self.assertEqual(err.count("\n"), 1, err)
                self.assertIn(said, err)
                self.assertEqual(os.listdir(cwd), [])

    # ringsim model at 512 DGX H100 nodes, every algorithm: over a second
    # of simulations on the development machine
    # (the progress line shows from a stage's start here: on_terminal's
    # RINGSIM_TEST_PROGRESS_AFTER=0; a small model keeps it quick under
    # the sanitizers, where GPT-2 on 512 nodes took over 120 s)
    SLOW_MODEL = ("model", "--topo", "dgx-h100,nodes=8", "--algo", "all")

    def test_model_progress_on_a_terminal(self):
        """A progress line on the terminal, counting the simulations,
        redrawn in place and erased at the end; stdout as on a pipe."""
        argv = (*self.SLOW_MODEL, "-p", os.path.join(EXAMPLES, "model.json"))
        rc, piped, err = run(*argv)
        self.assertEqual((rc, err), (0, ""), "a pipe gets no progress line")
        rc, out, shown = on_terminal(*argv)
        self.assertEqual(rc, 0, shown)
        self.assertEqual(out, piped)
        self.assertRegex(shown, r"\rringsim: model: simulating: \d+/\d+ "
                         r"algorithms and size samples, \d+ s\x1b\[K")
        self.assertTrue(shown.endswith("\r\x1b[K"), repr(shown[-80:]))

    def test_quiet_silences_progress(self):
        """--quiet in every mode: nothing on the terminal."""
        mlp = os.path.join(EXAMPLES, "model.json")
        for argv in ((*self.SLOW_MODEL, "-p", mlp, "--quiet"),
                     (*self.SLOW_MODEL, "-p", mlp, "--quiet", "--json"),
                     ("-p", model(), "-w", 2, "--no-trace", "--quiet"),
                     ("bench", "-w", 2, "-b", 64, "-e", 64, "-n", 1, "--quiet"),
                     ("step", "-p", model(), "-w", 2, "--net", NET, "--compute",
                      "flops=312T,rows=4096", "--quiet"),
                     ("diff", "-p", model(), "--algo", "ring,rd", "--quiet")):
            rc, out, shown = on_terminal(*argv)
            self.assertEqual((rc, shown), (0, ""), argv)
            self.assertNotEqual(out, "", argv)


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
