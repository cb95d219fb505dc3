#!/usr/bin/python3
"""Inputs at the edges, end to end: the memory a traced run needs, names
holding control characters, the largest values of a dtype, and safetensors
files whose tensors do not cover their data exactly.

    test_inputs.py RINGSIM [Inputs.test_name ...]
"""
import json
import os
import resource
import struct
import subprocess
import sys
import tempfile
import unittest

import helpers

RINGSIM = None
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import ringsim_st  # noqa: E402


def run(*args, cwd=None, limit_bytes=None):
    def limit():
        # A regression must not take a shared machine's memory: the address
        # space is capped well below what the refused run would touch.
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    p = subprocess.run([RINGSIM, *map(str, args)], capture_output=True, text=True,
                       timeout=600, cwd=cwd, preexec_fn=limit if limit_bytes else None)
    return p.returncode, p.stdout, p.stderr


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


class Inputs(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    # inputs-1: the memory check counts the trace's event buffers (112 B per
    # transfer received, every worker): a run whose records alone exceed the
    # machine's memory, though its buffers fit, is refused with exit 2 on
    # one line naming the need, before anything is allocated or written.
    def test_memory_check_counts_trace_records(self):
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        # W=16, 4-byte segments: each worker receives 2 x 15 segments of one
        # element per chunk of n/16, 112 B each: about 3360 n bytes in all,
        # while the buffers take 16 x 4 n.
        n = int(1.2 * memory / 3360) + 16
        model = write_json(self.path("m.json"),
                           {"params": [{"name": "g", "shape": [n]}]})
        trace = self.path("t.db")
        # Sanitizers reserve terabytes of address space: no cap for them.
        with open(RINGSIM, "rb") as f:
            binary = f.read()
        sanitized = b"__asan_init" in binary or b"__tsan_init" in binary
        rc, out, err = run("-w", 16, "-p", model, "--segment-bytes", 4, "--trace", trace,
                           limit_bytes=None if sanitized else 4 << 30)
        self.assertEqual(rc, 2, err)
        self.assertEqual(out, "")
        self.assertEqual(err.count("\n"), 1, err)
        self.assertRegex(err, r"^ringsim: the run needs about [\d.]+ GiB \(W=16 x %d elements; "
                              r"[\d.]+ GiB of it trace records, 112 B per transfer\), more than "
                              r"this machine's [\d.]+ GiB\n$" % n)
        self.assertFalse(os.path.exists(trace), "refused before the trace is opened")

    # inputs-2: names with control characters (ESC, CR, LF, BEL) reach the
    # text outputs escaped as error messages escape them ('?'): the report
    # (header, buckets, order report, --print), --explain, `ringsim model`;
    # JSON keeps them verbatim (jansson escapes them).
    def test_control_characters_escaped_in_text(self):
        def model(path, elems):
            return write_json(self.path(path), {
                "name": "m\x1b[2J\r",
                "params": [{"name": "p\x1b[31m\r\n", "shape": [elems]},
                           {"name": "q\x07", "shape": [elems]}]})
        small, big = model("small.json", 2), model("big.json", 300000)
        outputs = {}
        for key, args in (("print", ["-p", small, "--print", "--no-trace"]),
                          ("buckets", ["-p", big, "--order-report", "--bucket-mb", 1,
                                       "--no-trace"]),
                          ("explain", ["-p", small, "-w", 2, "--explain", "--no-trace"]),
                          ("model", ["model", "-p", small, "-w", 2, "--net",
                                     "latency=1us,bandwidth=1GB/s"])):
            rc, out, err = run(*args)
            self.assertEqual(rc, 0, err)
            for c in "\x1b\r\x07":
                self.assertNotIn(c, out, key)
            self.assertIn('"m?[2J?"', out, key)
            outputs[key] = out
        self.assertIn("\n  p?[31m??: [", outputs["print"])
        self.assertIn("\n  q?: [", outputs["print"])
        self.assertIn(", 1 param (q?)\n", outputs["buckets"])
        self.assertIn(", 1 param (p?[31m??)\n", outputs["buckets"])
        self.assertRegex(outputs["buckets"], r"\n +p\?\[31m\?\?: \d+ of 300000 differ")
        self.assertRegex(outputs["buckets"], r"\n +q\?: \d+ of 300000 differ")
        rc, out, err = run("-p", small, "-w", 2, "--json", "--no-trace")
        self.assertEqual(rc, 0, err)
        r = json.loads(out)
        self.assertEqual(r["model"], "m\x1b[2J\r")
        self.assertIn("p\x1b[31m\r\n", [p["name"] for p in r["param_checks"]])
        # C1 as UTF-8 (U+009B is CSI to a terminal) is a control character
        # too, and one '?' (it was printed raw); other non-ASCII text stays
        c1 = write_json(self.path("c1.json"), {
            "name": "a\u009b31mb\u00e9\u0085c",
            "params": [{"name": "w\u009b2J", "shape": [2]}]})
        rc, out, err = run("-p", c1, "-w", 2, "--print", "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertIn('of model "a?31mb\u00e9?c" on 2 workers\n', out)
        self.assertIn("\n  w?2J: [", out)
        for c in ("\u009b", "\u0085"):
            self.assertNotIn(c, out)

    # inputs-3: the f32 maximum round-trips through the CLI: --op sum prints
    # FLT_MAX as 3.4028235e+38, and that text fed back as an inline value
    # is read as FLT_MAX again.
    def test_f32_maximum_round_trips(self):
        flt_max = 3.4028234663852886e+38
        first = write_json(self.path("a.json"), {
            "params": [{"name": "w", "shape": [1]}], "grads": [{"w": [flt_max]}, {"w": [0]}]})
        rc, out, err = run("-p", first, "--op", "sum", "--print", "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertIn("  w: [3.4028235e+38]", out)
        printed = out.split("  w: [")[1].split("]")[0]
        with open(self.path("b.json"), "w") as f:
            f.write('{"params": [{"name": "w", "shape": [1]}], "grads": [{"w": [%s]}, '
                    '{"w": [0]}]}' % printed)
        rc, out, err = run("-p", self.path("b.json"), "--op", "sum", "--print", "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertIn("  w: [3.4028235e+38]", out)
        # the rounding threshold, FLT_MAX + half an ulp, is refused
        with open(self.path("c.json"), "w") as f:
            f.write('{"params": [{"name": "w", "shape": [1]}], "grads": '
                    '[{"w": [3.4028235677973366e+38]}]}')
        rc, out, err = run("-p", self.path("c.json"), "--no-trace")
        self.assertEqual(rc, 2)
        self.assertEqual(err, "ringsim: %s: grads[0].w: element 0 (3.4028235677973366e+38) "
                              "does not fit in f32: it rounds to infinity (the largest f32 "
                              "is 3.40282347e+38)\n" % self.path("c.json"))

    # inputs-4: a safetensors file the format forbids, its tensors' byte
    # ranges overlapping, leaving a hole, or followed by trailing bytes
    # (tensors the model does not read count too), is refused with exit 2
    # and one line naming the file, the tensor and what is wrong, before
    # anything is written; what ringsim's --out, tools/ringsim_st.py and
    # tools/torch_grads.py write is read (an empty param among them).
    def test_safetensors_layout_refused(self):
        model = write_json(self.path("m.json"), {"params": [
            {"name": "a", "shape": [2]}, {"name": "b", "shape": [3]},
            {"name": "e", "shape": [0]}]})
        vals = struct.pack("<5f", 1, 2, 3, 4, 5)

        def write(name, tensors, data):
            """tensors: {name: (shape, begin, end, dtype)}; data: the bytes"""
            header = {n: {"dtype": d, "shape": shape, "data_offsets": [b, e]}
                      for n, (shape, b, e, d) in tensors.items()}
            text = json.dumps(header).encode()
            with open(self.path(name), "wb") as f:
                f.write(struct.pack("<Q", len(text)) + text + data)

        good = {"a": ([2], 0, 8, "F32"), "b": ([3], 8, 20, "F32"), "e": ([0], 20, 20, "F32")}
        write("w0.st", good, vals)
        cases = {
            "overlap": ({**good, "b": ([3], 4, 16, "F32"), "e": ([0], 16, 16, "F32")},
                        vals[:16],
                        'tensor "b": data_offsets [4, 16] overlap tensor "a"\'s [0, 8] (the '
                        'format lets no two tensors share bytes)'),
            "trailing": (good, vals + b"\0\0\0\0",
                         '4 trailing bytes after tensor "e", the last (its data ends at 20 of '
                         'the file\'s 24 data bytes; the format allows no trailing bytes)'),
            "hole": ({**good, "b": ([3], 12, 24, "F32"), "e": ([0], 24, 24, "F32")},
                     vals + b"\0\0\0\0",
                     'tensor "b": data_offsets begin at 12, where tensor "a" ends at 8: the 4 '
                     'bytes between belong to no tensor (the format allows no holes)'),
            "other": ({**good, "x": ([1], 16, 24, "I64")}, vals + b"\0\0\0\0",
                      'tensor "x": data_offsets [16, 24] overlap tensor "b"\'s [8, 20] (the '
                      'format lets no two tensors share bytes)'),
        }
        out = self.path("out.st")
        for case, (tensors, data, message) in cases.items():
            with self.subTest(case=case):
                write("w1.st", tensors, data)
                rc, stdout, err = run("-w", 2, "-p", model, "--grads", self.path("w{r}.st"),
                                      "--out", out, "--no-trace")
                self.assertEqual(rc, 2, err)
                self.assertEqual(stdout, "")
                self.assertEqual(err, "ringsim: %s: %s\n" % (self.path("w1.st"), message))
                self.assertFalse(os.path.exists(out))
        # what the project's writers write is read: ringsim_st (the tests'
        # and torch_grads.py's writer), then ringsim's own --out
        import numpy as np
        for r in range(2):
            ringsim_st.write(self.path("p%d.st" % r), {
                "a": np.array([1, 2], np.float32) * (r + 1),
                "b": np.array([3, 4, 5], np.float32), "e": np.zeros(0, np.float32)})
        rc, stdout, err = run("-w", 2, "-p", model, "--grads", self.path("p{r}.st"),
                              "--out", out, "--no-trace")
        self.assertEqual(rc, 0, err)
        os.link(out, self.path("q0.st"))
        os.link(out, self.path("q1.st"))
        rc, stdout, err = run("-w", 2, "-p", model, "--grads", self.path("q{r}.st"),
                              "--out", self.path("again.st"), "--no-trace")
        self.assertEqual(rc, 0, err)
        self.assertEqual(ringsim_st.read(self.path("again.st"))["a"].tolist(), [1.5, 3.0])
        tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
        d = self.path("tg")
        p = subprocess.run([sys.executable, os.path.join(tools, "torch_grads.py"),
                            "--workers", "2", "--out", d], capture_output=True, text=True,
                           timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        for args in (["-w", 2, "--grads", os.path.join(d, "worker{r}.safetensors")],
                     ["-w", 1, "--grads", os.path.join(d, "reference.safetensors")]):
            rc, stdout, err = run("-p", os.path.join(d, "model.json"), *args, "--no-trace")
            self.assertEqual(rc, 0, err)


def main():
    helpers.main(globals(), "RINGSIM")


if __name__ == "__main__":
    main()
