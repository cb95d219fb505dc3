#!/usr/bin/python3
"""The PyTorch round trip: real gradients from tools/torch_grads.py, all-
reduced by ringsim, checked by tools/torch_check.py against torch's mean and
a real torch.distributed all_reduce over gloo. The two tools run in this
process (their main(argv), the command line they parse): torch's import is
most of their cost, and so it is paid once, not once per tool and case.

    test_torch.py RINGSIM TOOLS_DIR [Torch.test_name ...]
"""
import contextlib
import io
import json
import os
import subprocess
import sys
import tempfile
import unittest

RINGSIM = TOOLS = None


def tool(name, argv):
    """tools/NAME.py's main(argv) in this process: its exit status and what
    it printed."""
    if TOOLS not in sys.path:
        sys.path.insert(0, TOOLS)
    module = __import__(name)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = module.main(argv)
    return rc, out.getvalue()


class Torch(unittest.TestCase):
    # torch-1: for an MLP and a small CNN on 2 and 4 workers, ringsim's
    # result agrees with torch.stack(grads).mean(0) and with gloo's
    # all_reduce within the float32 bound; and for a float64 MLP
    # (model.double()) on 3 workers, within the float64 bound.
    def test_round_trip(self):
        for model, workers, dtype in (("mlp", 4, "f32"), ("cnn", 2, "f32"), ("mlp", 3, "f64")):
            with self.subTest(model=model, workers=workers, dtype=dtype), \
                    tempfile.TemporaryDirectory() as d:
                self.assertEqual(tool("torch_grads", ["--workers", str(workers), "--out", d,
                                                      "--model", model, "--dtype", dtype])[0], 0)
                out = os.path.join(d, "ringsim.safetensors")
                p = subprocess.run([RINGSIM, "-w", str(workers), "-p", os.path.join(d, "model.json"),
                                    "--grads", os.path.join(d, "worker{r}.safetensors"),
                                    "--out", out, "--no-trace", "--json"],
                                   capture_output=True, text=True, timeout=300)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertEqual(json.loads(p.stdout)["status"], "ok")
                self.assertEqual(json.loads(p.stdout)["dtype"], dtype)
                rc, stdout = tool("torch_check", ["--dir", d, "--workers", str(workers),
                                                  "--result", out, "--json"])
                self.assertEqual(rc, 0, stdout)
                report = json.loads(stdout)
                for key in ("ringsim_vs_torch_mean", "ringsim_vs_gloo_all_reduce"):
                    self.assertTrue(report[key]["within_bound"], report)
                    self.assertLess(report[key]["max_abs"], 1e-6 if dtype == "f32" else 1e-14)
                self.assertGreater(report["elements"], 100)


def main():
    global RINGSIM, TOOLS
    if len(sys.argv) < 3:
        sys.exit("usage: test_torch.py RINGSIM TOOLS_DIR [Torch.test_name ...]")
    RINGSIM, TOOLS = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0], "-v", *sys.argv[3:]])


if __name__ == "__main__":
    main()
