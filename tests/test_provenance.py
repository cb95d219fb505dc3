#!/usr/bin/python3
"""Provenance carried, not recomputed: every message says whose
contributions its payload holds (the trace's contrib_first/contrib_count,
written from the message itself). Proved against the data: float64
gradients where worker r's every element is exactly 2^r, summed (op sum),
so a payload holding the contributions of the set S is, element for
element, exactly the sum of 2^k over k in S: its bits spell S out. With
--checksum the trace holds each payload's checksum, so the test checks,
for every transfer of the run, that the payload's bytes are exactly the
ones the contributor column implies.

    test_provenance.py RINGSIM [Provenance.test_name ...]
"""
import os
import sqlite3
import struct
import subprocess
import sys
import tempfile
import unittest

import helpers

RINGSIM = None
MASK = (1 << 64) - 1

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import ringsim_st  # noqa: E402


def checksum(data):
    """queue.c's rs_checksum, in Python."""
    n = len(data)
    h = 0x9e3779b97f4a7c15 ^ n
    i = 0
    while i + 8 <= n:
        (word,) = struct.unpack_from("<Q", data, i)
        h = ((h ^ word) * 0xff51afd7ed558ccd) & MASK
        h ^= h >> 29
        i += 8
    while i < n:
        h = ((h ^ data[i]) * 0xc4ceb9fe1a85ec53) & MASK
        i += 1
    return h


def named(first, count, workers, src=None, dst=None, gpus=None):
    """The workers a transfer's contributor columns name (docs/trace-schema.md):
    first..first+count-1 round all W; for hier's messages within a node
    (gpus: its G, src and dst on one node) that hold fewer than all W (its
    reduce-scatter's partial sums), round that node's G workers."""
    if gpus and src // gpus == dst // gpus and count < workers:
        node = src // gpus * gpus
        return {node + (first + k) % gpus for k in range(count)}
    return {(first + k) % workers for k in range(count)}


def spelled(held):
    """The value a payload holding the contributions of the workers held
    has in every element: the sum of their 2^r, exact in float64."""
    return float(sum(1 << r for r in held))


class Provenance(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def run_traced(self, workers, shapes, *options):
        import numpy as np
        params = ", ".join('{"name": "p%d", "shape": [%d], "dtype": "f64"}' % (i, n)
                           for i, n in enumerate(shapes))
        model = self.path("m.json")
        with open(model, "w") as f:
            f.write('{"params": [%s]}' % params)
        for r in range(workers):
            ringsim_st.write(self.path("g%d.safetensors" % r),
                             {"p%d" % i: np.full(n, 2.0 ** r) for i, n in enumerate(shapes)},
                             dtype="F64")
        db = self.path("t%d.db" % len(os.listdir(self.tmp.name)))  # one per run
        p = subprocess.run([RINGSIM, "-w", str(workers), "-p", model, "--grads",
                            self.path("g{r}.safetensors"), "--op", "sum", "--checksum",
                            "--trace", db, *map(str, options)],
                           capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        con = sqlite3.connect(db)
        rows = con.execute("SELECT src, dst, phase, step, elems, checksum, contrib_first, "
                           "contrib_count FROM transfer").fetchall()
        con.close()
        return rows

    def check(self, workers, rows, want_rows, ring=True, gpus=None):
        self.assertEqual(len(rows), want_rows)
        seen = set()
        for src, dst, phase, step, elems, ck, first, count in rows:
            held = named(first, count, workers, src, dst, gpus)
            payload = struct.pack("<%dd" % elems, *([spelled(held)] * elems))
            self.assertEqual(ck & MASK, checksum(payload),
                             "%s step %d, %d -> %d: the payload is not the sum of the "
                             "contributions %d..+%d the trace names (%s)"
                             % (phase, step, src, dst, first, count, sorted(held)))
            # and the set is a real one: it holds its sender's contribution
            self.assertIn(src, held)
            seen.add((phase, count))
        if not ring:
            return
        # every size of partial sum travelled, and the full one
        self.assertEqual({c for p, c in seen if p == "reduce_scatter"},
                         set(range(1, workers)))
        self.assertEqual({c for p, c in seen if p == "all_gather"}, {workers})

    # provenance-1: for W = 2, 3, 5, 8 and 52 (the most 2^r that float64
    # sums exactly), in several buckets and segments, step and slice order,
    # copying and direct: every payload is exactly what its contributor
    # column says it holds.
    def test_payloads_spell_their_contributors(self):
        cases = [(2, [7], []), (3, [10, 5], ["--segment-bytes", 16]),
                 (5, [40, 3, 1000], ["--segment-bytes", 64, "--bucket-mb", 0.004]),
                 (8, [300], ["--segment-bytes", 32, "--loop", "slices"]),
                 (8, [300], ["--segment-bytes", 32, "--direct"]),
                 (52, [104, 1], ["--segment-bytes", 8])]
        for workers, shapes, options in cases:
            with self.subTest(workers=workers, options=options):
                rows = self.run_traced(workers, shapes, *options)
                self.assertGreater(len(rows), 0)
                # W(2(W-1)) messages of every segment of every bucket
                per_step = len([r for r in rows if r[2] == "all_gather" and r[3] == 0])
                self.assertEqual(len(rows), per_step * 2 * (workers - 1))
                self.check(workers, rows, len(rows))

    # provenance-2: the same for every other algorithm (recursive doubling,
    # Rabenseifner, linear, NCCL's tree, gloo's ring), at powers of two and between them,
    # in several segments: each message holds exactly the contributions its
    # schedule says, and its sender's among them.
    def test_every_algorithm(self):
        for algo in ("rd", "rhd", "linear", "tree", "gloo-ring"):
            for workers, shapes, options in [(2, [7], []), (3, [10, 5], ["--segment-bytes", 16]),
                                             (5, [40, 3], ["--segment-bytes", 64]),
                                             (6, [300], ["--bucket-mb", 0.001]),
                                             (8, [300], ["--segment-bytes", 32]),
                                             (13, [104, 1], ["--segment-bytes", 8])]:
                with self.subTest(algo=algo, workers=workers):
                    rows = self.run_traced(workers, shapes, "--algo", algo, *options)
                    self.assertGreater(len(rows), 0)
                    self.check(workers, rows, len(rows), ring=False)

    # provenance-3: the same for hier, hier:rd and hier:rhd on topologies of
    # 2 x 3, 3 x 2, 2 x 4 and 3 x 3 (3 nodes: rd and rhd fold across them), in
    # several segments and buckets. Within a node the contributors wrap round
    # its G workers and its reduce-scatter carries partial sums of 1 .. G-1
    # of them, its all-gather the whole sum; across the nodes a message
    # carries whole nodes.
    def test_hier(self):
        for algo in ("hier", "hier:rd", "hier:rhd"):
            for nodes, gpus, shapes, options in [
                    (2, 3, [10, 5], ["--segment-bytes", 16]), (3, 2, [40, 3], []),
                    (2, 4, [300], ["--segment-bytes", 32]),
                    (3, 3, [104, 1], ["--segment-bytes", 8, "--bucket-mb", 0.0005])]:
                workers = nodes * gpus
                with self.subTest(algo=algo, nodes=nodes, gpus=gpus):
                    rows = self.run_traced(workers, shapes, "--algo", algo, "--topo",
                                           "nodes=%d,gpus=%d,intra=1us/100GB/s,"
                                           "nic=5us/25GB/s" % (nodes, gpus), *options)
                    self.assertGreater(len(rows), 0)
                    self.check(workers, rows, len(rows), ring=False, gpus=gpus)
                    within = [r for r in rows if r[0] // gpus == r[1] // gpus]
                    across = [r for r in rows if r[0] // gpus != r[1] // gpus]
                    self.assertEqual({r[7] for r in within if r[2] == "reduce_scatter"},
                                     set(range(1, gpus)))
                    self.assertEqual({r[7] for r in within if r[2] == "all_gather"}, {workers})
                    self.assertTrue(across)
                    for src, dst, phase, step, _, _, first, count in across:
                        self.assertEqual((first % gpus, count % gpus), (0, 0),
                                         "%s step %d, %d -> %d: contributors %d..+%d are not "
                                         "whole nodes" % (phase, step, src, dst, first, count))


def main():
    helpers.main(globals(), "RINGSIM")


if __name__ == "__main__":
    main()
