#!/usr/bin/python3
"""Numbers on the command line: every option that reads one reads it by the
one grammar (docs/reliability.md, "Numbers"; the table of spellings is
tests/test_numbers.c), and a refusal quotes what the user typed.

    test_numbers_cli.py RINGSIM EXAMPLES_DIR [NumbersCli.test_name ...]
"""
import os
import tempfile
import unittest

import helpers

RINGSIM = EXAMPLES = None

NET = "latency=5us,bandwidth=25GB/s"


run = helpers.run


class NumbersCli(unittest.TestCase):
    def setUp(self):
        self.model = os.path.join(EXAMPLES, "model.json")
        self.step = os.path.join(EXAMPLES, "step_three.json")

    def refused(self, argv, quoted, env=None):
        """Exit 2 before anything runs, nothing on stdout, one line on
        stderr that quotes each of quoted. Returns the line."""
        rc, out, err = run(*argv, env=env)
        self.assertEqual((rc, out, err.count("\n")), (2, "", 1),
                         f"{argv}: {err!r}")
        for text in quoted:
            self.assertIn(text, err, argv)
        return err.rstrip("\n")

    # numbers-cli-1: hex, a sign (even on 0), a leading zero or blank, in
    # every option that reads a number, the command's own (--seed, step's
    # --bucket-mb list, --straggler compute=, --compute, the variables)
    # and the library's: all were accepted.
    def test_other_spellings_refused(self):
        run_ = ["-p", self.model, "-w", 4, "--no-trace"]
        net = run_ + ["--net", NET]
        step = ["step", "-p", self.step, "-w", 4, "--net", NET]
        model = ["model", "-p", self.model]
        for argv, value in (
                (run_ + ["--bucket-mb", "0x10"], "0x10"),
                (run_ + ["--bucket-mb", "-0"], "-0"),
                (run_ + ["--bucket-mb", "00"], "00"),
                (run_ + ["--bucket-mb", " 1"], " 1"),
                (run_ + ["--bucket-mb", "+1"], "+1"),
                (run_ + ["--timeout", "0x10"], "0x10"),
                (run_ + ["--timeout", "+1"], "+1"),
                (run_ + ["--seed", "-0"], "-0"),
                (run_ + ["--seed", "+1"], "+1"),
                (run_ + ["--inject", "crash:worker=-0"], "crash:worker=-0"),
                (run_ + ["--hook", "powersgd:rank=1,start=-0"], "start=-0"),
                (run_ + ["--net", "latency=0x10us,bandwidth=1GB/s"],
                 "latency=0x10us"),
                (net + ["--reduce-rate", "0x10GB/s"], "0x10GB/s"),
                (net + ["--straggler", "worker=+1,us=5"], "worker=+1,us=5"),
                (net + ["--straggler", "worker=1,us= 5"], "worker=1,us= 5"),
                (net + ["--link", "+1-2:bandwidth=1GB/s"], "+1-2:"),
                (model + ["--topo", "dgx-h100,intra=0x10us/1GB/s"],
                 "intra=0x10us/1GB/s"),
                (model + ["--topo", "dgx-h100,nodes=1,02"], "nodes=1,02"),
                (step + ["--compute", "flops=0x10T,rows=4096"], "0x10T"),
                (step + ["--compute", "flops=1T,rows=04096"], "rows=04096"),
                (step + ["--straggler", "worker=1,compute= 1.5"],
                 "compute= 1.5"),
                (step + ["--straggler", "worker=1,compute=0x2"],
                 "compute=0x2"),
                (step + ["--bucket-mb", "0x10,1"], "0x10,1")):
            with self.subTest(argv=argv):
                self.refused(argv, [value])
        for name, value in (("RINGSIM_TRACE_WAIT", "0x10"),
                            ("RINGSIM_TRACE_WAIT", " 1"),
                            ("RINGSIM_TEST_FLIP", "+1:0")):
            with self.subTest(variable=name, value=value):
                with tempfile.TemporaryDirectory() as tmp:
                    trace = ["--trace", os.path.join(tmp, "t.db")]
                    self.refused(run_ if name == "RINGSIM_TEST_FLIP" else
                                 run_[:-1] + trace,
                                 [f"{name} '{value}'"], env={name: value})

    # numbers-cli-2: the same number however the grammar lets it be
    # written (an exponent, Python's repr) runs the same, to the byte.
    def test_spellings_of_one_value_run_alike(self):
        base = ["model", "-p", self.model, "-w", 4]
        outs = []
        for net, mb in (("latency=5us,bandwidth=25GB/s", "0.25"),
                        ("latency=5e0us,bandwidth=2.5e1GB/s", "2.5e-1"),
                        ("latency=0.005ms,bandwidth=25E+09B/s", "25e-02")):
            rc, out, err = run(*base, "--net", net, "--bucket-mb", mb)
            self.assertEqual(rc, 0, err)
            outs.append(out)
        self.assertEqual(outs[1], outs[0])
        self.assertEqual(outs[2], outs[0])

    # numbers-cli-3: 1e-300 MiB and 4.9e-324 MiB are both less than a
    # byte: refused alike (one ran as a 4-byte cap, the other was refused
    # as if out of range).
    def test_sizes_below_a_byte_refused_alike(self):
        run_ = ["-p", self.model, "-w", 4, "--no-trace"]
        lines = [self.refused(run_ + ["--bucket-mb", v], [f"'{v}'"])
                 for v in ("1e-300", "4.9e-324")]
        self.assertEqual(lines[0].replace("1e-300", "X"),
                         lines[1].replace("4.9e-324", "X"))
        self.assertIn("less than a byte", lines[0])

    # numbers-cli-4: ringsim model's --topo with a list of counts quotes
    # the spec as typed (nodes=1,2,nodes=3 was quoted as nodes=1,nodes=3),
    # and a list of 2,048 counts says what is wrong, with a bounded
    # excerpt around it (it filled the line with the spec).
    def test_topo_quoted_as_typed(self):
        self.refused(["model", "-p", self.model, "--topo",
                      "dgx-h100,nodes=1,2,nodes=3"],
                     ["--topo 'dgx-h100,nodes=1,2,nodes=3': nodes= is given "
                      "twice"])
        self.refused(["model", "-p", self.model, "--topo",
                      "dgx-h100,nodes=1,2,bogus=1"],
                     ["--topo 'dgx-h100,nodes=1,2,bogus=1': unknown item "
                      "'bogus=1'"])
        spec = "dgx-h100,nodes=" + ",".join(map(str, range(1, 2049)))
        for mode, says in (("model", "(at most 16)"),
                           ("run", "'2' is not an item")):
            with self.subTest(mode=mode):
                argv = (["model"] if mode == "model" else []) + \
                    ["-p", self.model, "--no-trace" if mode == "run" else
                     "--json", "--topo", spec]
                line = self.refused(argv, ["--topo: ", says, "...'"])
                self.assertLess(len(line), 500, line)
                self.assertTrue(line.endswith("--help)"), line)


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
