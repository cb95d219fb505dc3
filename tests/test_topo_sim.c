/* test_topo_sim.c - a topology's simulated time (net/topo.h): the same in
 * the threaded run and in the schedule simulation, to the nanosecond;
 * a one-node topology is --net exactly; and two cases computed by hand. */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "algo/list.h"
#include "ringsim/internal/command.h" /* rs_auto_choose_first */
#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

/* The threaded run's simulated time: algo on W workers under net, one
 * bucket of elems f32 elements. */
static uint64_t threaded(rs_algorithm_t algo, const rs_netmodel_t *net, int W,
                         size_t elems, size_t segment_bytes) {
  rs_model_t *m = model_of(elems);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.algo = algo;
  cfg.segment_bytes = segment_bytes;
  cfg.bucket_bytes = 0; /* one bucket */
  cfg.net = *net;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err))
    fail_msg("%s W=%d: create: %s", rs_algorithm_name(algo), W, err);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 1), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  assert_int_equal(rs_run_result(run)->status, RS_OK);
  uint64_t sim = rs_run_result(run)->sim_ns;
  rs_run_free(run);
  rs_model_free(m);
  return sim;
}

/* Does algorithm a run on the generic topologies below? Not one that
 * needs an NVLink switch that reduces (nvls: tests/test_nvls.c). */
static int on_generic(int a) {
  rs_algo_info_t info;
  return rs_algo_info((rs_algorithm_t)a, &info) == RS_OK &&
         !info.needs_nvls_switch;
}

/* The schedule simulation of the same one-bucket run. */
static uint64_t simulated(rs_algorithm_t algo, const rs_netmodel_t *net, int W,
                          size_t elems, size_t segment_bytes) {
  rs_bucket_t bucket = {.elem_offset = 0, .elems = elems, .params = 1};
  return rs_netmodel_simulate_algo(algo, net, W, &bucket, 1, segment_bytes, 4);
}

/* Topology spec as it is (variant 0), with a reduce rate (1), or with a
 * slower link 3 -> 4 and a straggler, worker 5 (2). */
static rs_netmodel_t variant_net(const char *spec, int variant) {
  rs_netmodel_t net = topo_of(spec, variant == 1 ? "40GB/s" : NULL);
  char err[RS_ERRMSG_MAX];
  if (variant == 2 &&
      (rs_netmodel_parse_link("3-4:bandwidth=5GB/s,latency=2us", &net, err) ||
       rs_netmodel_parse_straggler("worker=5,us=2", &net, err)))
    fail_msg("%s", err);
  return net;
}

/* (1) One node whose intra link is --net's link: the same time as --net,
 * to the nanosecond, for every algorithm, threaded and simulated (hier,
 * which needs a topology, threaded and simulated alike). */
static void test_one_node_is_net(void **state) {
  (void)state;
  static const size_t sizes[] = {1000, 4 * 3 * 960 + 7};
  static const size_t seg_bytes[] = {1 << 20, 1000};
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    for (int W = 2; W <= 8 && on_generic(a); W++)
      for (size_t si = 0; si < 2; si++)
        for (size_t gi = 0; gi < 2; gi++) {
          const rs_algorithm_t algo = (rs_algorithm_t)a;
          rs_netmodel_t net = net_of("latency=3us,bandwidth=10GB/s", "40GB/s");
          char spec[128];
          snprintf(spec, sizeof spec,
                   "nodes=1,gpus=%d,intra=3us/10GB/s,nic=9us/1GB/s", W);
          rs_netmodel_t topo = topo_of(spec, "40GB/s");
          char err[RS_ERRMSG_MAX];
          assert_int_equal(rs_netmodel_check(&topo, W, err), RS_OK);
          /* hier needs a topology (refused under --net): on one node its
           * threaded run and its simulation agree */
          rs_algo_info_t info;
          assert_int_equal(rs_algo_info(algo, &info), RS_OK);
          const int hier = info.needs_topology;
          uint64_t got = threaded(algo, &topo, W, sizes[si], seg_bytes[gi]);
          uint64_t want =
              hier ? got : threaded(algo, &net, W, sizes[si], seg_bytes[gi]);
          uint64_t sim_net =
              hier ? got : simulated(algo, &net, W, sizes[si], seg_bytes[gi]);
          uint64_t sim = simulated(algo, &topo, W, sizes[si], seg_bytes[gi]);
          if (want == 0 || got != want || sim != want || sim_net != want)
            fail_msg("%s W=%d n=%zu seg=%zu: --net %llu (model %llu), "
                     "one-node topology %llu (model %llu)",
                     rs_algorithm_name(algo), W, sizes[si], seg_bytes[gi],
                     (unsigned long long)want, (unsigned long long)sim_net,
                     (unsigned long long)got, (unsigned long long)sim);
        }
}

/* (2) 2 nodes of 4 GPUs with 1, 2 and 4 NICs: the threaded run and the
 * schedule simulation agree to the nanosecond, for every algorithm; more
 * NICs are never slower. */
static void test_threaded_is_simulated(void **state) {
  (void)state;
  /* (under TSan the first two: 80000 adds bytes, not paths, and TSan
   * pays for every byte) */
  static const size_t sizes[] = {999, 3 * 8 * 1000 + 5, 80000};
  static const size_t seg_bytes[] = {1 << 20, 4000};
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    for (size_t si = 0; si < (RS_TEST_TSAN ? 2u : 3u) && on_generic(a); si++)
      for (size_t gi = 0; gi < 2; gi++) {
        uint64_t before = UINT64_MAX;
        for (int nics = 1; nics <= 4; nics *= 2) {
          const rs_algorithm_t algo = (rs_algorithm_t)a;
          char spec[128];
          snprintf(spec, sizeof spec,
                   "nodes=2,gpus=4,nics=%d,intra=1us/100GB/s,nic=5us/25GB/s",
                   nics);
          rs_netmodel_t net = topo_of(spec, si == 1 ? "50GB/s" : NULL);
          uint64_t t = threaded(algo, &net, 8, sizes[si], seg_bytes[gi]);
          uint64_t s = simulated(algo, &net, 8, sizes[si], seg_bytes[gi]);
          if (t == 0 || t != s)
            fail_msg("%s n=%zu seg=%zu nics=%d: threaded %llu, model %llu",
                     rs_algorithm_name(algo), sizes[si], seg_bytes[gi], nics,
                     (unsigned long long)t, (unsigned long long)s);
          assert_true(t <= before);
          before = t;
        }
      }
}

/* (2b) The steady repeats (algo.h) are exact: a simulation that skips
 * the steps and buckets that repeat a uniform move gives, to the
 * nanosecond, what playing every one gives, for every algorithm; on
 * several topologies (NICs shared and not, a reduce rate, a slower link
 * and a straggler), chunks of one size and not (a slow NIC hop whose
 * clocks' pattern repeats every few steps, sizes whose one-element
 * difference does and does not change a segment's time), several
 * segments, fewer elements than workers, and runs of equal buckets. */
static void test_repeats_are_exact(void **state) {
  (void)state;
  static const char *const specs[] = {
      "dgx-h100,nodes=8", "pcie,nodes=4",
      "nodes=6,gpus=4,nics=2,intra=1us/100GB/s,nic=5us/25GB/s",
      "nodes=3,gpus=8,nics=1,intra=700ns/300GB/s,nic=3us/12500MB/s"};
  static const size_t sizes[] = {7,      64 * 100,     64 * 1000 + 1,
                                 100003, 64 * 3 * 997, 1 << 20};
  static const size_t seg_bytes[] = {1 << 20, 4096};
  for (size_t ti = 0; ti < sizeof specs / sizeof *specs; ti++)
    for (int variant = 0; variant < 3; variant++) {
      rs_netmodel_t net = variant_net(specs[ti], variant);
      const int W = net.topo.nodes * net.topo.gpus;
      for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t gi = 0; gi < 2; gi++) {
          if (RS_TEST_SANITIZED && (si == 5 || gi == 1) && ti > 0)
            continue; /* (a sanitized build: one topology in full) */
          rs_bucket_t b[5];
          for (int k = 0; k < 5; k++) /* one odd bucket, three alike, one */
            b[k] = (rs_bucket_t){.elems = k == 0  ? 999
                                          : k < 4 ? sizes[si]
                                                  : 5,
                                 .params = 1};
          for (int a = 0; a < RS_ALGO_COUNT; a++) {
            if (!on_generic(a))
              continue;
            const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
            for (size_t nb = 1; nb <= 5; nb += 4) {
              const rs_bucket_t *first = nb == 1 ? &b[1] : b;
              uint64_t fast =
                  rs__algo_simulate(
                  &(rs_sim_job_t){algo, &net, W, first, nb, seg_bytes[gi], 4});
              uint64_t plain = rs__algo_simulate_plain(
                  &(rs_sim_job_t){algo, &net, W, first, nb, seg_bytes[gi], 4});
              if (fast != plain || fast == 0 || fast == UINT64_MAX)
                fail_msg("%s on %s (variant %d), %zu buckets of %zu, seg %zu:"
                         " with repeats %llu, played %llu",
                         algo->name, specs[ti], variant, nb, sizes[si],
                         seg_bytes[gi], (unsigned long long)fast,
                         (unsigned long long)plain);
            }
          }
        }
    }
}

/* (2b') The lower bound an argmin skips an algorithm by (rs__algo_least)
 * never passes the algorithm's simulated time, and is not empty: on
 * topologies with shared NICs, a slower link, a straggler and workers
 * that are not a power of two, flat and on nodes, from 1 element up. */
static void test_least_is_a_bound(void **state) {
  (void)state;
  static const char *const specs[] = {
      "dgx-h100,nodes=4", "pcie,nodes=3",
      "nodes=6,gpus=4,nics=2,intra=1us/100GB/s,nic=5us/25GB/s",
      "nodes=5,gpus=3,nics=1,intra=700ns/300GB/s,nic=3us/12500MB/s"};
  for (size_t ti = 0; ti < sizeof specs / sizeof *specs; ti++)
    for (int variant = 0; variant < 3; variant++) {
      rs_netmodel_t net = variant_net(specs[ti], variant);
      const int W = net.topo.nodes * net.topo.gpus;
      /* segments of 64 KiB, and of 3 elements (many rounds, whose count
       * differs between a step's messages) */
      static const size_t segment[] = {1 << 16, 12};
      for (size_t gi = 0; gi < 2; gi++)
        for (size_t elems = 1; elems < ((size_t)1 << (gi ? 13 : 22));
             elems = elems * 5 + 3 - gi)
          for (int a = 0; a < RS_ALGO_COUNT; a++) {
            if (!on_generic(a))
              continue;
            const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
            const rs_bucket_t b = {.elems = elems, .params = 1};
            const size_t seg = segment[gi];
            const uint64_t least =
                rs__algo_least(algo, &net, W, elems,
                               rs_segs_per_chunk(elems, W, seg, 4), seg, 4);
            const uint64_t sim =
                rs__algo_simulate_plain(&(rs_sim_job_t){algo, &net, W, &b, 1, seg, 4});
            if (least > sim ||
                (least == 0 && (algo->least || algo->step_least)))
              fail_msg("%s on %s (variant %d), %zu elements, segments of %zu "
                       "B: bound %llu, simulated %llu",
                       algo->name, specs[ti], variant, elems, seg,
                       (unsigned long long)least, (unsigned long long)sim);
          }
    }
}

/* (2b'') The tree's bound on NCCL's channels (channel 0's deepest leaf's
 * way up and down, each hop at its latency) is its time where the bytes
 * cost nothing: one element on 4 DGX H100 nodes, within 1%. */
static void test_tree_least_is_tight(void **state) {
  (void)state;
  const rs_netmodel_t net = topo_of("dgx-h100,nodes=4", NULL);
  const int W = net.topo.nodes * net.topo.gpus;
  const rs_algo_t *tree = rs__algo_get(RS_ALGO_TREE);
  const rs_bucket_t b = {.elems = 1, .params = 1};
  assert_int_equal(rs__algo_channels(&net, RS_ALGO_TREE, W), 16);
  const uint64_t least = rs__algo_least(tree, &net, W, 1, 1, 1 << 18, 4);
  const uint64_t sim = rs__algo_simulate_plain(
      &(rs_sim_job_t){tree, &net, W, &b, 1, 1 << 18, 4});
  if (least > sim || least < sim - sim / 100)
    fail_msg("the tree's bound %llu, simulated %llu",
             (unsigned long long)least, (unsigned long long)sim);
}

/* (2c) --algo auto's argmin alone (rs_auto_choose without predictions:
 * the schedules simulated cheapest first, each only while it can still
 * win, the tree stopped by its root's port) chooses what running every
 * prediction through chooses, ties included, at sizes from 8 B up, on
 * topologies where each algorithm wins somewhere (linear and rd at the
 * smallest, the tree on many nodes of one GPU, the ring and rhd at the
 * largest). */
static void test_argmin_is_the_choice(void **state) {
  (void)state;
  static const char *const specs[] = {
      "dgx-h100,nodes=8", "pcie,nodes=4",
      "nodes=32,gpus=1,nics=1,intra=1us/100GB/s,nic=2us/25GB/s",
      "nodes=6,gpus=4,nics=2,intra=1us/100GB/s,nic=5us/25GB/s"};
  for (size_t ti = 0; ti < sizeof specs / sizeof *specs; ti++) {
    rs_netmodel_t net = topo_of(specs[ti], ti == 3 ? "40GB/s" : NULL);
    const int W = net.topo.nodes * net.topo.gpus;
    /* every algorithm; and the tree against the ring and linear alone,
     * so that it wins and its early stop is held to its choices too */
    static const unsigned masks[] = {(1u << RS_ALGO_COUNT) - 1,
                                     1u << RS_ALGO_RING | 1u << RS_ALGO_TREE |
                                         1u << RS_ALGO_LINEAR};
    unsigned won = 0;
    for (size_t mi = 0; mi < 2; mi++)
      for (size_t elems = 2; elems < ((size_t)1 << 24); elems = elems * 3 + 1) {
        uint64_t pred[RS_ALGO_COUNT];
        const rs_sim_setup_t on = {&net, W, 1 << 18, 4};
        const rs_algorithm_t full = rs_auto_choose(&on, elems, masks[mi], pred);
        const rs_algorithm_t alone =
            rs_auto_choose(&on, elems, masks[mi], NULL);
        for (int first = 0; first <= RS_ALGO_COUNT; first++)
          if (rs_auto_choose_first(&on, elems, masks[mi],
                                   (rs_algorithm_t)first) != alone)
            fail_msg("%s, %zu elements, eligible %#x: %s first chooses "
                     "otherwise",
                     specs[ti], elems, masks[mi],
                     first < RS_ALGO_COUNT
                         ? rs_algorithm_name((rs_algorithm_t)first)
                         : "none");
        if (full != alone)
          fail_msg("%s, %zu elements, eligible %#x: with predictions %s, "
                   "alone %s",
                   specs[ti], elems, masks[mi], rs_algorithm_name(full),
                   rs_algorithm_name(alone));
        won |= 1u << full;
      }
    assert_true(won & 1u << RS_ALGO_TREE); /* (the tree won somewhere) */
  }
}

/* (3) By hand: 2 nodes x 4 GPUs, 1 NIC per node, ports of 1 us and
 * 100 GB/s, NICs of 5 us and 30 GB/s; one bucket of n = 80000 f32
 * elements (320000 bytes) in one segment (1 MiB segments); reduce rate 0
 * (free). Every transfer costs its latency + ceil(bytes * 1e9 / pace) ns
 * (rs__net_ns); every worker starts a step when the last ended, since
 * all move the same sizes at once.
 *
 * rhd (W = 8 = P: no fold), each step every worker swaps half its window:
 *   halving, distance 1 (r xor 1, in the node): 40000 elements = 160000 B
 *     at 100 GB/s: 1000 + 1600 = 2600 ns
 *   halving, distance 2 (in the node): 80000 B: 1000 + 800 = 1800 ns
 *   halving, distance 4 (r xor 4: between the nodes): 40000 B; each
 *     node's one NIC sends for its 4 GPUs and receives for 4: n = 4, the
 *     pace min(100 GB/s, 30 GB/s / 4) = 7.5 GB/s: 40000 / 7.5 B/ns =
 *     5333.3, ceil 5334: 5000 + 5334 = 10334 ns
 *   doubling, distance 4: the same 40000 B back: 10334 ns
 *   doubling, distance 2: 1800 ns;  doubling, distance 1: 2600 ns
 *   total: 2 x (2600 + 1800 + 10334) = 29468 ns.
 *
 * The ring, 14 steps (7 reduce-scatter, 7 all-gather), each worker r
 * sends one chunk of 10000 elements = 40000 B to r + 1: within a node
 * a = 1000 + 40000 / 100 = 1400 ns; 3 -> 4 and 7 -> 0 cross, one GPU on
 * each NIC side: n = 1, the pace min(100, 30) = 30 GB/s: b = 5000 +
 * ceil(1333.3) = 6334 ns. Worker j starts step s+1 when its chunk of step
 * s has come in: after s steps its clock is the sum of the costs of the s
 * links before it (clock_j(s) = max(clock_j(s-1), clock_{j-1}(s-1) +
 * cost of j-1 -> j)). After 14 steps the latest is the worker whose 14
 * links back (the ring's 8 once, then 6 more) take in both crossings
 * twice: 4 b + 10 a = 25336 + 14000 = 39336 ns. With 4 NICs a node
 * still has one GPU crossing each way (n = 1): the same 39336 ns.
 *
 * rd (W = 8, no fold): three whole-buffer exchanges of 320000 B, with
 * r xor 1, r xor 2 (in the node: 1000 + 3200 = 4200 ns each) and r xor 4
 * (between the nodes): with 1 NIC, n = 4, 7.5 GB/s: 5000 + ceil(42666.7)
 * = 47667 ns, in all 56067 ns; with 4 NICs (GPU g on NIC g), n = 1,
 * 30 GB/s: 5000 + ceil(10666.7) = 15667 ns, in all 24067 ns. (rhd with 4
 * NICs: 2 x (2600 + 1800 + 6334) = 21468 ns.) */
static void test_by_hand(void **state) {
  (void)state;
  static const struct {
    int nics;
    rs_algorithm_t algo;
    uint64_t ns;
  } cases[] = {{1, RS_ALGO_RHD, 29468}, {1, RS_ALGO_RING, 39336},
               {1, RS_ALGO_RD, 56067},  {4, RS_ALGO_RING, 39336},
               {4, RS_ALGO_RD, 24067},  {4, RS_ALGO_RHD, 21468}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char spec[96], err[RS_ERRMSG_MAX];
    snprintf(spec, sizeof spec,
             "nodes=2,gpus=4,nics=%d,intra=1us/100GB/s,nic=5us/30GB/s",
             cases[i].nics);
    rs_netmodel_t net = topo_of(spec, NULL);
    assert_int_equal(rs_netmodel_check(&net, 8, err), RS_OK);
    const uint64_t sim = simulated(cases[i].algo, &net, 8, 80000, 1 << 20);
    const uint64_t run = threaded(cases[i].algo, &net, 8, 80000, 1 << 20);
    if (sim != cases[i].ns || run != cases[i].ns)
      fail_msg("%s, %d NICs: model %llu, threaded %llu, by hand %llu",
               rs_algorithm_name(cases[i].algo), cases[i].nics,
               (unsigned long long)sim, (unsigned long long)run,
               (unsigned long long)cases[i].ns);
  }
}

/* (3b) A GPU's NIC side is beside its NVLink port (netmodel.h): what it
 * sends to another node leaves beside what it sends within its node, and
 * what it takes from another node comes in beside what it takes from its
 * own. Linear on 2 nodes of 2 GPUs, a NIC each (n = 1 on every crossing),
 * NVLink 1 us and 1 GB/s, a NIC 2 us and 1 GB/s; 250 floats, 1000 B: 1 us
 * on any wire. Root 0 takes 3's, 2's, then 1's buffer, all sent at 0:
 * 3's over the NICs arrives at 1 + 2 = 3 us, 2's at 3 us too, its NIC
 * side free at 4 us (it took 3's until 3): taken at 4 us; 1's over NVLink
 * arrives at 1 + 1 = 2 us, through its NVLink port, free: taken at 2 us.
 * The root holds the sum at 4 us, and sends it to 1, 2 and 3: to 1 on
 * NVLink, 4-5 us, there at 6; to 2 on its NIC side, 4-5 us (beside the
 * send to 1), there at 7; to 3 after it, 5-6 us, there at 8. 8 us,
 * threaded and simulated. Through one port each way, as before, the
 * three receives took 3, 4 and 5 us and the three sends 5-6, 6-7 and 7-8
 * us: 10 us. */
static void test_nic_beside_nvlink_by_hand(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  rs_netmodel_t net =
      topo_of("nodes=2,gpus=2,nics=2,intra=1us/1GB/s,nic=2us/1GB/s", NULL);
  assert_int_equal(rs_netmodel_check(&net, 4, err), RS_OK);
  const uint64_t sim = simulated(RS_ALGO_LINEAR, &net, 4, 250, 1 << 20);
  const uint64_t run = threaded(RS_ALGO_LINEAR, &net, 4, 250, 1 << 20);
  if (sim != 8000 || run != 8000)
    fail_msg("linear, 2 x 2 GPUs: model %llu, threaded %llu, by hand 8000",
             (unsigned long long)sim, (unsigned long long)run);
}

/* On several nodes the tree is NCCL's multi-node shape (algo/tree.h):
 * each node's GPUs a chain, its head (local rank 0) in the nodes' double
 * binary tree. Its run and its schedule simulation agree to the
 * nanosecond and its exact inputs come out exact, for nodes of 1 to 4
 * GPUs; and the edges are the shape's: in the reduce a GPU past its
 * node's head sends only to the one before it. */
static void test_tree_on_nodes(void **state) {
  (void)state;
  static const int shapes[][2] = {{3, 3}, {4, 2}, {2, 4}, {5, 1}, {3, 4}};
  for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
    const int N = shapes[i][0], G = shapes[i][1], W = N * G;
    char spec[128];
    snprintf(spec, sizeof spec,
             "nodes=%d,gpus=%d,nics=1,intra=1us/100GB/s,nic=5us/25GB/s", N, G);
    rs_netmodel_t net = topo_of(spec, "50GB/s");
    for (size_t n = 999; n <= 60000; n += 59001) {
      const uint64_t t = threaded(RS_ALGO_TREE, &net, W, n, 4000);
      const uint64_t m = simulated(RS_ALGO_TREE, &net, W, n, 4000);
      if (t == 0 || t != m)
        fail_msg("tree on %d x %d, n=%zu: threaded %llu, model %llu", N, G, n,
                 (unsigned long long)t, (unsigned long long)m);
    }
    const rs_shape_t shape = {.workers = W, .gpus = G};
    const rs_algo_t *tree = rs__algo_get(RS_ALGO_TREE);
    int dst[RS_TOPO_MAX_SENDS];
    for (int r = 0; r < W; r++)
      if (r % G) {
        assert_int_equal(tree->sends(shape, 0, r, dst, RS_TOPO_MAX_SENDS), 1);
        assert_int_equal(dst[0], r - 1);
      }
  }
}

/* --topo with --net or --link is refused, and W must be N x G. */
static void test_refused(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  rs_netmodel_t net =
      topo_of("nodes=2,gpus=4,nics=1,intra=1us/100GB/s,nic=5us/30GB/s", NULL);
  assert_int_equal(rs_netmodel_check(&net, 6, err), RS_EINVAL);
  assert_non_null(strstr(err, "2 nodes of 4 GPUs are 8 workers"));
  rs_netmodel_t with_net = net;
  assert_int_equal(
      rs_netmodel_parse("latency=1us,bandwidth=1GB/s", &with_net, err), RS_OK);
  assert_int_equal(rs_netmodel_check(&with_net, 8, err), RS_EINVAL);
  assert_string_equal(err, "--topo and --net: give one (--net is one switch "
                           "without contention)");
  rs_netmodel_t with_link = net;
  assert_int_equal(
      rs_netmodel_parse_link("2-3:bandwidth=1GB/s", &with_link, err), RS_OK);
  assert_int_equal(rs_netmodel_check(&with_link, 8, err), RS_EINVAL);
  assert_string_equal(err, "--link: the topology names its links; give one "
                           "of --topo and --link");
}

/* Every algorithm's sends (the destinations per step the counts come
 * from) against its edges: each step's are send peers, never itself, each
 * at most once; and over the steps every send peer is named. (NVLS names
 * the GPUs of its node its data reaches; its edge to them is its node's
 * switch's, participant W + node: xfer.h.) */
static void test_sends_are_the_edges(void **state) {
  (void)state;
  int peers[64], dst[RS_TOPO_MAX_SENDS];
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    /* (nvls sends to every GPU of its one node, whose NICs no transfer
     * crosses: its sends fill the room, RS_TOPO_MAX_SENDS, not more) */
    for (int W = 2; W <= (on_generic(a) ? 33 : RS_TOPO_MAX_SENDS + 1); W++) {
      const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
      const rs_shape_t flat = rs__shape_flat(W);
      const int steps = algo->steps(flat, RS_COLL_ALLREDUCE);
      for (int r = 0; r < W; r++) {
        const int np = algo->send_peers(flat, r, peers);
        unsigned long long named = 0;
        for (int s = 0; s < steps; s++) {
          const int n = algo->sends(flat, s, r, dst, RS_TOPO_MAX_SENDS);
          assert_true(n >= 0 && n <= RS_TOPO_MAX_SENDS);
          for (int i = 0; i < n; i++) {
            int at = -1;
            const int via =
                algo->run_switch && dst[i] / flat.gpus == r / flat.gpus
                    ? rs__switch_of(flat, r)
                    : dst[i];
            for (int j = 0; j < np; j++)
              at = peers[j] == via ? j : at;
            if (at < 0 || dst[i] == r)
              fail_msg("%s W=%d: %d sends to %d in step %d, not an edge",
                       algo->name, W, r, dst[i], s);
            for (int k = 0; k < i; k++)
              assert_int_not_equal(dst[k], dst[i]);
            named |= 1ull << at;
          }
        }
        if (named != (np == 64 ? ~0ull : (1ull << np) - 1))
          fail_msg("%s W=%d: %d has send peers no step names", algo->name, W,
                   r);
      }
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_node_is_net),
      cmocka_unit_test(test_threaded_is_simulated),
      cmocka_unit_test(test_repeats_are_exact),
      cmocka_unit_test(test_least_is_a_bound),
      cmocka_unit_test(test_tree_least_is_tight),
      cmocka_unit_test(test_argmin_is_the_choice),
      cmocka_unit_test(test_by_hand),
      cmocka_unit_test(test_nic_beside_nvlink_by_hand),
      cmocka_unit_test(test_tree_on_nodes),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_sends_are_the_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
