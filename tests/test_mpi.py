#!/usr/bin/python3
"""ringsim's all-reduce algorithms against Open MPI 4.1's, bit for bit.

The same float32 gradients go to ringsim (safetensors, --op sum) and to
Open MPI's MPI_Allreduce(MPI_FLOAT, MPI_SUM) run by tests/mpi_allreduce_ref
under mpirun, with the tuned component forced to one algorithm
(coll_tuned_allreduce_algorithm). The gradients are standard normal times
10^k, k uniform in -3..3, so float32 rounding makes every association of
the sum visible: equal bits mean the same additions in the same order. The
orders, read from Open MPI's source, are in docs/algorithms-openmpi.md.

    test_mpi.py RINGSIM MPI_ALLREDUCE_REF MPIRUN [Mpi.test_name ...]

Counts are at least W: below that Open MPI's ring switches to recursive
doubling, and below the largest power of two <= W Rabenseifner switches to
basic linear (test_forcing pins both fallbacks down); ringsim's algorithms
do not follow it there.
"""
import os
import subprocess
import sys
import tempfile
import unittest

import helpers

import numpy as np

RINGSIM = None
MPI_REF = None
MPIRUN = None

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import ringsim_st  # noqa: E402

# ringsim's --algo name: Open MPI's coll_tuned_allreduce_algorithm number.
OPENMPI_ALGORITHM = {"linear": 1, "rd": 3, "ring": 4, "rhd": 6}
WORKERS = range(2, 9)


def counts(workers):
    """W (one element per ring block), an even count, and an odd one past
    64K whose blocks and halves are uneven."""
    return (workers, 1000, 65537)


def gradients(workers, count, seed):
    """float32 gradients, one array per worker, magnitudes 1e-3..1e3."""
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(count) * 10.0 ** rng.integers(-3, 4, count))
            .astype(np.float32) for _ in range(workers)]


def differences(expected, got):
    """'' when the float32 arrays are equal bit for bit, else how many
    elements differ and the first few, value and bits."""
    e, g = expected.view(np.uint32), got.view(np.uint32)
    diff = np.flatnonzero(e != g)
    if diff.size == 0:
        return ""
    lines = [f"{diff.size} of {e.size} elements differ; first ones:"]
    for i in diff[:5]:
        lines.append(f"  [{i}] {expected[i]!r} (0x{e[i]:08x}) vs "
                     f"{got[i]!r} (0x{g[i]:08x})")
    return "\n".join(lines)


class Mpi(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        # mpirun's session directory in this test's own TMPDIR: two
        # mpiruns starting at once (ctest -j) race to create
        # /tmp/ompi.HOST.UID, and the loser's orte_init fails ("File
        # exists")
        self.tmpdir_was = os.environ.get("TMPDIR")
        os.environ["TMPDIR"] = self.tmp.name

    def tearDown(self):
        if self.tmpdir_was is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = self.tmpdir_was
        self.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.tmp.name, name)

    def write_inputs(self, grads):
        """Each worker's gradients, raw for MPI and safetensors for ringsim,
        and a one-parameter model.json; gives the directory's prefix."""
        prefix = self.path(f"w{len(grads)}n{grads[0].size}")
        for r, g in enumerate(grads):
            g.astype("<f4").tofile(f"{prefix}_in{r}.raw")
            ringsim_st.write(f"{prefix}_g{r}.safetensors", {"g": g}, dtype="F32")
        with open(f"{prefix}_model.json", "w") as f:
            f.write('{"params": [{"name": "g", "shape": [%d]}]}' % grads[0].size)
        return prefix

    def run_mpi(self, workers, algorithm, jobs, gpus=0):
        """Open MPI's all-reduce with the tuned component forced to
        algorithm, once per (prefix, count) of jobs, all in one mpirun (each
        its own MPI_Allreduce); checks every rank got the same bits and
        gives rank 0's results, in the order of jobs. gpus: the
        hierarchical composition on nodes of that many ranks
        (mpi_allreduce_ref --hier), its MPI_Reduce_scatter forced to the
        ring (coll_tuned_reduce_scatter_algorithm 3) and its MPI_Allreduce
        across the nodes to algorithm."""
        args = ["--hier", str(gpus)] if gpus else []
        hier = ["--mca", "coll_tuned_reduce_scatter_algorithm", "3"] if gpus else []
        for prefix, count in jobs:
            args += [str(count), f"{prefix}_in{{r}}.raw",
                     f"{prefix}_mpi{algorithm}_out{{r}}.raw"]
        counts_text = ",".join(str(count) for _, count in jobs)
        p = subprocess.run(
            [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(workers),
             "--mca", "btl", "self,vader",
             "--mca", "coll_tuned_use_dynamic_rules", "1",
             "--mca", "coll_tuned_allreduce_algorithm", str(algorithm), *hier,
             MPI_REF, *args],
            capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, f"mpirun W={workers} count={counts_text} "
                         f"algorithm {algorithm}: exit {p.returncode}\n{p.stderr}")
        firsts = []
        for prefix, count in jobs:
            out = f"{prefix}_mpi{algorithm}_out"
            results = [np.fromfile(f"{out}{r}.raw", dtype="<f4")
                       for r in range(workers)]
            for r, result in enumerate(results):
                self.assertEqual(result.size, count, f"rank {r}'s output")
                self.assertEqual(differences(results[0], result), "",
                                 f"Open MPI algorithm {algorithm}, W={workers} "
                                 f"count={count}: rank 0 vs rank {r}")
            firsts.append(results[0])
        return firsts

    def run_ringsim(self, prefix, workers, algo, topo=None):
        out = f"{prefix}_ringsim_{algo}.safetensors"
        # ring is the default; the others need --algo.
        algo_args = [] if algo == "ring" else ["--algo", algo]
        if topo:
            algo_args += ["--topo", topo]
        p = subprocess.run(
            [RINGSIM, "-w", str(workers), "-p", f"{prefix}_model.json",
             "--grads", f"{prefix}_g{{r}}.safetensors", "--op", "sum",
             "--bucket-mb", "0", "--no-trace", "--out", out, *algo_args],
            capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, f"ringsim W={workers} {algo}: exit "
                         f"{p.returncode}\n{p.stderr}")
        return ringsim_st.read(out)["g"]

    def check_algorithm(self, algo):
        """ringsim's algo equals Open MPI's, bit for bit, for W = 2..8 and
        each of counts(W): one mpirun per W for all its counts."""
        algorithm = OPENMPI_ALGORITHM[algo]
        for workers in WORKERS:
            ours = {}
            for count in counts(workers):
                with self.subTest(workers=workers, count=count):
                    prefix = self.write_inputs(gradients(workers, count,
                                                         [15, workers, count]))
                    # ringsim first: a count it refuses is not given to
                    # mpirun.
                    ours[count] = (prefix, self.run_ringsim(prefix, workers, algo))
            if not ours:
                continue
            with self.subTest(workers=workers, count=tuple(ours)):
                mpi = self.run_mpi(workers, algorithm,
                                   [(prefix, count)
                                    for count, (prefix, _) in ours.items()])
                for (count, (_, got)), want in zip(ours.items(), mpi):
                    with self.subTest(workers=workers, count=count):
                        self.assertEqual(
                            differences(want, got), "",
                            f"{algo}, W={workers} count={count}: Open MPI "
                            f"(algorithm {algorithm}) vs ringsim")

    def test_ring(self):
        self.check_algorithm("ring")

    def test_rd(self):
        self.check_algorithm("rd")

    def test_rhd(self):
        self.check_algorithm("rhd")

    def test_linear(self):
        self.check_algorithm("linear")

    def check_hier(self, algo, shapes):
        """ringsim's hier (hier:rd, hier:rhd) on nodes x gpus equals Open
        MPI's composition of the same collectives, bit for bit: ring
        MPI_Reduce_scatter in the node, MPI_Allreduce across the nodes with
        the inner algorithm forced, MPI_Allgatherv in the node. Counts 1000
        and 65537: blocks uneven, each at least the nodes (below that the
        ring and Rabenseifner fall back, as test_forcing shows)."""
        inner = algo.split(":")[1] if ":" in algo else "ring"
        algorithm = OPENMPI_ALGORITHM[inner]
        differs = []
        for nodes, gpus in shapes:
            workers = nodes * gpus
            jobs, ours = [], []
            for count in (1000, 65537):
                prefix = self.write_inputs(gradients(workers, count, [16, workers, count]))
                topo = f"pcie,nodes={nodes},gpus={gpus}"
                ours.append(self.run_ringsim(prefix, workers, algo, topo))
                jobs.append((prefix, count))
            mpi = self.run_mpi(workers, algorithm, jobs, gpus)
            for (prefix, count), got, want in zip(jobs, ours, mpi):
                with self.subTest(nodes=nodes, gpus=gpus, count=count):
                    self.assertEqual(
                        differences(want, got), "",
                        f"{algo} on {nodes} nodes of {gpus}, count {count}: "
                        f"Open MPI's composition (allreduce algorithm "
                        f"{algorithm}) vs ringsim")
                    flat = self.run_ringsim(prefix, workers, inner)
                    differs.append(differences(got, flat) != "")
        # The flat algorithm adds in another order, so some case differs
        # (not each: with G = 2 rd's and rhd's fold-in is the node's sum).
        self.assertTrue(any(differs), f"{algo} gave {inner}'s bits every time")

    # (nodes, gpus): W = 4, 6, 8, 12, 16 and G = 2, 3, 4; the nodes both
    # powers of two and not (rd's and rhd's fold-in).
    def test_hier_ring(self):
        self.check_hier("hier", ((2, 2), (2, 3), (3, 2), (2, 4), (4, 2), (3, 4),
                                 (4, 3), (4, 4)))

    def test_hier_rd(self):
        self.check_hier("hier:rd", ((2, 2), (3, 2), (2, 4), (3, 4), (4, 4)))

    def test_hier_rhd(self):
        self.check_hier("hier:rhd", ((2, 2), (3, 2), (4, 3), (3, 4), (4, 4)))

    def test_forcing(self):
        """mpirun's choice of algorithm is what runs. At W=5 basic linear,
        recursive doubling and ring add in three different orders, so each
        pair differs somewhere; Rabenseifner equals recursive doubling bit
        for bit (both fold ranks 0..1 into one, then combine the four
        partial sums as a butterfly: the same tree per element). Below
        count 4 (the power of two) Rabenseifner falls back to basic linear,
        and below count 5 (W) the ring falls back to recursive doubling."""
        workers = 5
        prefix = self.write_inputs(gradients(workers, 1000, [15, 0]))

        # Three elements, each x0 = s (a power of two), x1 = x2 = s*2^-24
        # (half an ulp of s), x3 = x4 = 0: recursive doubling adds
        # ((x0+x1)+x2)+(x3+x4) = s (each half ulp is lost to round-to-even),
        # basic linear (((x4+x3)+x2)+x1)+x0 = s*(1+2^-23).
        scale = np.array([1.0, -2.0, 2.0 ** 20])
        tiny = scale * 2.0 ** -24
        grads = [scale, tiny, tiny, 0 * scale, 0 * scale]
        small = self.write_inputs([g.astype(np.float32) for g in grads])

        # one mpirun per algorithm for both inputs
        both = {a: self.run_mpi(workers, a, [(prefix, 1000), (small, 3)])
                for a in (1, 3, 4, 6)}
        result = {a: both[a][0] for a in both}
        for a, b in ((1, 3), (1, 4), (3, 4)):
            self.assertNotEqual(differences(result[a], result[b]), "",
                                f"algorithms {a} and {b} gave the same bits: "
                                "is the tuned component's forcing ignored?")
        self.assertEqual(differences(result[3], result[6]), "",
                         "Rabenseifner vs recursive doubling at W=5")

        result = {a: both[a][1] for a in both}
        self.assertEqual(differences(result[1], (scale * (1 + 2.0 ** -23))
                                     .astype(np.float32)), "", "basic linear")
        self.assertEqual(differences(result[3], scale.astype(np.float32)), "",
                         "recursive doubling")
        self.assertEqual(differences(result[3], result[4]), "",
                         "ring with count < W falls back to recursive doubling")
        self.assertEqual(differences(result[1], result[6]), "",
                         "Rabenseifner with count < 4 falls back to basic linear")


def main():
    helpers.main(globals(), "RINGSIM", "MPI_REF", "MPIRUN")


if __name__ == "__main__":
    main()
