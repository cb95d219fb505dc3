#!/usr/bin/python3
"""--proto on the command line: NCCL's protocols as the network model
moves bytes with them (docs/algorithms.md, "Protocols"): the threaded run
and `ringsim model` agree under each, the trace holds each transfer's
wire bytes, and what is refused.

    test_proto_cli.py RINGSIM EXAMPLES [ProtoCli.test_name ...]
"""
import json
import os
import sqlite3
import tempfile
import unittest

import helpers

RINGSIM = EXAMPLES = None


def wire(proto, n):
    """The bytes NCCL's protocol puts on the wire for n data bytes."""
    if proto == "LL":
        return -(-n // 8) * 16
    if proto == "LL128":
        return -(-n // 120) * 128
    return n


class ProtoCli(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.model = os.path.join(EXAMPLES, "model.json")

    def tearDown(self):
        self.tmp.cleanup()

    # proto-1: the threaded run and the model agree to the ns under each
    # protocol, on a flat network and on two DGX H100 nodes; each protocol
    # costs what its launch, wire bytes and hops say: on --net's 5 us
    # links LL's doubled bytes make it slower than Simple for 795 KiB; on
    # DGX H100 nodes Simple's 14 us network hops (LL's: 2.7) make it the
    # slower.
    def test_run_equals_model(self):
        for where, slower in ((["-w", 4, "--net", "latency=5us,bandwidth=25GB/s"], "LL"),
                              (["-w", 16, "--topo", "dgx-h100,nodes=2"], "Simple")):
            times = {}
            for proto in ("LL", "LL128", "Simple"):
                with self.subTest(where=where, proto=proto):
                    rc, out, err = helpers.run("-p", self.model, *where, "--proto", proto,
                                               "--json", "--no-trace")
                    self.assertEqual(rc, 0, err)
                    run = json.loads(out)["sim_ns"]
                    rc, out, err = helpers.run("model", "-p", self.model, *where,
                                               "--proto", proto, "--json")
                    self.assertEqual(rc, 0, err)
                    self.assertEqual(json.loads(out)["sim_ns"], run)
                    times[proto] = run
            rc, out, err = helpers.run("model", "-p", self.model, *where, "--json")
            self.assertEqual(rc, 0, err)
            plain = json.loads(out)["sim_ns"]
            # every protocol adds its launch; LL doubles the bytes
            self.assertGreater(min(times.values()), plain)
            self.assertEqual(max(times, key=times.get), slower, times)

    # proto-2: the trace's wire_bytes is each transfer's bytes in the
    # protocol's lines, and the run row's net_model names the protocol.
    def test_trace_wire_bytes(self):
        db = os.path.join(self.tmp.name, "t.db")
        for proto in ("LL", "LL128", "Simple"):
            rc, out, err = helpers.run("-p", self.model, "-w", 3, "--net",
                                       "latency=1us,bandwidth=10GB/s", "--proto", proto,
                                       "--segment-bytes", "4001", "--trace", db)
            self.assertEqual(rc, 0, err)
        rc, out, err = helpers.run("-p", self.model, "-w", 3, "--trace", db)
        self.assertEqual(rc, 0, err)
        con = sqlite3.connect(db)
        rows = con.execute("SELECT run_id, net_model FROM run ORDER BY run_id").fetchall()
        self.assertEqual([json.loads(n)["proto"] for _, n in rows[:3]], ["LL", "LL128", "Simple"])
        self.assertIsNone(rows[3][1])
        for run_id, proto in ((1, "LL"), (2, "LL128"), (3, "Simple")):
            pairs = con.execute("SELECT bytes, wire_bytes FROM transfer WHERE run_id = ?",
                                (run_id,)).fetchall()
            self.assertTrue(pairs)
            self.assertTrue(any(b % 8 and b % 120 for b, _ in pairs), pairs[:4])
            self.assertEqual([w for _, w in pairs], [wire(proto, b) for b, _ in pairs])
        self.assertEqual(con.execute("SELECT count(*) FROM transfer WHERE run_id = 4 "
                                     "AND wire_bytes IS NOT NULL").fetchone()[0], 0)
        con.close()

    # proto-3: what is refused, one line, exit 2, nothing on stdout.
    def test_refusals(self):
        cases = [(["-p", self.model, "-w", 2, "--proto", "LL"], "give --net or --topo"),
                 (["model", "-p", self.model, "-w", 2, "--proto", "Simple"],
                  "give --net or --topo"),
                 (["-p", self.model, "-w", 2, "--net", "latency=1us,bandwidth=1GB/s",
                   "--proto", "auto"], "--like nccl"),
                 (["-p", self.model, "-w", 2, "--net", "latency=1us,bandwidth=1GB/s",
                   "--proto", "LL64"], "--proto 'LL64'")]
        for args, named in cases:
            with self.subTest(args=args):
                rc, out, err = helpers.run(*args)
                self.assertEqual((rc, out, err.count("\n")), (2, "", 1), err)
                self.assertIn(named, err)


def main():
    helpers.main(globals(), "RINGSIM", "EXAMPLES")


if __name__ == "__main__":
    main()
