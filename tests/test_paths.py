#!/usr/bin/env python3
"""generator_paths: the generator and the check give the same bits on every
machine. The release command's loops are compiled for AVX-512, AVX2 and the
baseline, picked at load time for the machine (grads.c, src/check/:
target_clones); ringsim-noclones is the same code compiled for the baseline
alone (RS_NO_CLONES: SSE2 on x86-64). Every dtype and init, a model whose
params start and end inside Box-Muller pairs and cross the fill's pieces:
the gradients (--out of a sum on one worker is worker 0's own), the
all-reduce's result and every field of the check must be equal.

    test_paths.py RINGSIM RINGSIM_NOCLONES
"""
import json
import os
import subprocess
import tempfile
import unittest

import helpers

RINGSIM = NOCLONES = None

# (odd sizes: params start inside a Box-Muller pair; 300001 crosses the
# fill's pieces of 2^18 elements and the check's blocks)
SHAPES = [[1001], [77, 33], [5], [300001]]


class Paths(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def run_both(self, args):
        """Both commands on args: their --out bytes and --json reports."""
        got = []
        for name, command in (("clones", RINGSIM), ("noclones", NOCLONES)):
            out = os.path.join(self.tmp.name, name + ".safetensors")
            p = subprocess.run([command, *map(str, args), "--out", out, "--json", "--no-trace"],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, f"{name} {args}: {p.stderr}")
            report = json.loads(p.stdout)
            for key in ("wall_ns", "fill_ns", "ref_ns", "check_ns", "algbw_gbs",
                        "busbw_gbs", "check_threads"):
                report.pop(key, None)  # times, not values
            with open(out, "rb") as f:
                got.append((f.read(), report))
        return got

    def test_the_clones_are_there(self):
        # the comparison means something only if the two differ in code
        with open(RINGSIM, "rb") as f:
            clones = f.read()
        with open(NOCLONES, "rb") as f:
            baseline = f.read()
        for symbol in (b"fill_block_f32.arch_x86_64_v4", b"fill_block.arch_x86_64_v3",
                       b"accumulate_f32.arch_x86_64_v4"):
            self.assertIn(symbol, clones)
            self.assertNotIn(symbol, baseline)

    def test_same_bits(self):
        cases = 0
        for dtype in ("f32", "f16", "bf16", "f64"):
            model = os.path.join(self.tmp.name, f"{dtype}.json")
            with open(model, "w") as f:
                json.dump({"params": [{"name": f"p{i}", "shape": shape, "dtype": dtype}
                                      for i, shape in enumerate(SHAPES)]}, f)
            for init in ("normal", "uniform", "exact"):
                # one worker: --out is its own gradients, as generated
                runs = [["-w", 1, "--op", "sum"], ["-w", 3], ["-w", 5, "--op", "sum"]]
                if dtype == "f32" and init == "normal":
                    runs += [["-w", 3, "--op", "prod"], ["-w", 3, "--op", "max"],
                             ["-w", 4, "--average", "pre"]]
                for extra in runs:
                    args = ["-p", model, "--init", init, "--seed", 11, *extra]
                    with self.subTest(dtype=dtype, init=init, args=extra):
                        (bits_a, report_a), (bits_b, report_b) = self.run_both(args)
                        if bits_a != bits_b:
                            at = next((i for i, (a, b) in enumerate(zip(bits_a, bits_b))
                                       if a != b), min(len(bits_a), len(bits_b)))
                            self.fail(f"the --out files differ from byte {at}")
                        self.assertEqual(report_a, report_b, "the reports differ")
                        self.assertEqual(report_a["status"], "ok")
                        cases += 1
        self.assertEqual(cases, 4 * 3 * 3 + 3)


def main():
    helpers.main(globals(), "RINGSIM", "NOCLONES")


if __name__ == "__main__":
    main()
