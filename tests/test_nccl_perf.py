#!/usr/bin/python3
"""`ringsim model --like nccl`: NCCL's tuner's pick per all-reduce, timed
by ringsim; without --params a virtual nccl-tests all_reduce_perf (its
columns, read as scripts read them), --json's keys, the forced choices,
every refusal, the "not in NCCL" marks of ringsim's own algorithms, and
docs/validation.md held to scripts/validation --check.

    test_nccl_perf.py RINGSIM EXAMPLES ROOT [NcclPerf.test_name ...]
"""
import json
import os
import subprocess
import sys
import unittest

import helpers

RINGSIM = EXAMPLES = ROOT = None

NET = "latency=5us,bandwidth=25GB/s"


def model(*args):
    return helpers.run("model", *args)


class NcclPerf(unittest.TestCase):
    # nccl-1: --algo all's table names, under it, the algorithms NCCL does
    # not run (ringsim's rd, rhd, linear and gloo's ring); the ring and
    # the tree are NCCL's. --json says it per algorithm (in_nccl).
    def test_algo_all_marks_not_in_nccl(self):
        mlp = os.path.join(EXAMPLES, "model.json")
        rc, out, err = model("-p", mlp, "-w", 4, "--net", NET, "--algo", "all")
        self.assertEqual(rc, 0, err)
        line = [l for l in out.splitlines() if l.strip().startswith("not in NCCL:")]
        self.assertEqual(len(line), 1, out)
        named = line[0].split(":", 1)[1].split("(")[0].replace(",", " ").split()
        self.assertEqual(named, ["rd", "rhd", "linear", "gloo-ring"])
        rc, out, err = model("-p", mlp, "-w", 4, "--net", NET, "--algo", "all",
                             "--json")
        self.assertEqual(rc, 0, err)
        marks = {a["algo"]: a["in_nccl"] for a in json.loads(out)["algos"]}
        self.assertEqual(marks, {"ring": True, "rd": False, "rhd": False,
                                 "linear": False, "tree": True,
                                 "gloo-ring": False})

    # nccl-2: forcing one of ringsim's own algorithms says it is not in
    # NCCL, in ringsim model's report and in a run's; NCCL's ring is not
    # marked.
    def test_forced_algorithm_marked(self):
        mlp = os.path.join(EXAMPLES, "model.json")
        for algo in ("rd", "rhd", "linear", "ring", "tree"):
            with self.subTest(algo=algo):
                rc, out, err = model("-p", mlp, "-w", 4, "--net", NET,
                                     "--algo", algo)
                self.assertEqual(rc, 0, err)
                mark = f"{algo} is not in NCCL"
                self.assertEqual(mark in out, algo not in ("ring", "tree"), out)
                rc, out, err = model("-p", mlp, "-w", 4, "--net", NET,
                                     "--algo", algo, "--json")
                self.assertEqual(json.loads(out)["in_nccl"],
                                 algo in ("ring", "tree"))
                rc, out, err = helpers.run("-p", mlp, "-w", 4, "--algo", algo,
                                           "--no-trace")
                self.assertEqual(rc, 0, err)
                self.assertEqual(mark in out, algo not in ("ring", "tree"), out)


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES", "ROOT")


if __name__ == "__main__":
    main()
