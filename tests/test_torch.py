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

import helpers

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


    # torch-2: tools/torch_profile.py measures a real model's forward and
    # backward (a hook per param) into model.json: every param's
    # backward_us and forward_us, none negative, the gradients' times
    # adding up to the measured backward; ringsim step runs on it, its
    # compute the file's to the ns. A model function of the user's is
    # taken too, and what is not one is refused.
    def test_profile(self):
        with tempfile.TemporaryDirectory() as d:
            sys.path.insert(0, d)
            for spec in ("mlp", "cnn", "profile_fixture:make"):
                with self.subTest(model=spec):
                    out = os.path.join(d, spec.replace(":", "_") + ".json")
                    with open(os.path.join(d, "profile_fixture.py"), "w") as f:
                        f.write("import torch\n"
                                "def make():\n"
                                "    torch.manual_seed(1)\n"
                                "    m = torch.nn.Sequential(torch.nn.Linear(16, 300), torch.nn.Tanh(),\n"
                                "                            torch.nn.Linear(300, 3))\n"
                                "    return m, torch.randn(32, 16)\n"
                                "def bad():\n"
                                "    return 3\n")
                    rc, printed = tool("torch_profile", ["--model", spec, "--out", out,
                                                         "--iterations", "5", "--warmup", "1"])
                    self.assertEqual(rc, 0, printed)
                    with open(out) as f:
                        doc = json.load(f)
                    params = doc["params"]
                    self.assertGreaterEqual(len(params), 4)
                    for prm in params:
                        self.assertGreaterEqual(prm["backward_us"], 0, prm)
                        self.assertGreaterEqual(prm["forward_us"], 0, prm)
                    measured = float(printed.split("backward ")[1].split(" us")[0])
                    self.assertAlmostEqual(sum(p["backward_us"] for p in params), measured,
                                           delta=0.1 + 1e-3 * len(params))
                    self.assertGreater(measured, 0)
                    p = subprocess.run([RINGSIM, "step", "-p", out, "-w", "2", "--net",
                                        "latency=5us,bandwidth=1GB/s", "--json"],
                                       capture_output=True, text=True, timeout=300)
                    self.assertEqual(p.returncode, 0, p.stderr)
                    later = json.loads(p.stdout)["rows"][0]["later"]
                    self.assertEqual(later["forward_ns"],
                                     sum(round(p["forward_us"] * 1000) for p in params))
                    self.assertEqual(later["backward_ns"],
                                     sum(round(p["backward_us"] * 1000) for p in params))
            for spec, said in (("profile_fixture:bad", "must return (model, batch)"),
                               ("profile_fixture:nosuch", "--model 'profile_fixture:nosuch'"),
                               ("nomodule", "expected mlp, cnn or package.module:function")):
                with self.subTest(model=spec):
                    with self.assertRaises(SystemExit) as e:
                        tool("torch_profile", ["--model", spec, "--out", os.path.join(d, "x.json")])
                    self.assertIn(said, str(e.exception.code))
            sys.path.remove(d)


def main():
    cases = helpers.parse(globals(), "RINGSIM", "TOOLS")
    # a peer: skipped without torch, failed under RINGSIM_REQUIRE_PEERS=1
    helpers.import_peer("torch", "python3-torch")
    helpers.run_tests(cases)


if __name__ == "__main__":
    main()
