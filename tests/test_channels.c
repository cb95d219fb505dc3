/* test_channels.c - the ring on NCCL's channels (algo/channels.h): the
 * cut of a bucket between them as NCCL cuts it, their rings, the data
 * moved for real and checked, the threaded run and the schedule
 * simulation to the nanosecond, the steady repeats exact, three cases
 * worked by hand, and what a run refuses. */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "algo/channels.h"
#include "algo/list.h"
#include "algo/nccl.h"
#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

/* A run's simulated time: the ring on net's channels over W workers, one
 * bucket of elems f32 elements of exact inputs (the run checks every
 * worker's result against the direct mean: status RS_OK). */
static uint64_t threaded(const rs_netmodel_t *net, int W, size_t elems,
                         size_t segment_bytes, int slots) {
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.algo = RS_ALGO_RING;
  cfg.segment_bytes = segment_bytes;
  cfg.bucket_bytes = 0; /* one bucket */
  cfg.net = *net;
  cfg.slots = cfg.net.slots = slots;
  return run_sim_ns(&cfg, W, net->channels, elems);
}

static uint64_t simulated(const rs_netmodel_t *net, int W, size_t elems,
                          size_t segment_bytes) {
  rs_bucket_t bucket = {.elem_offset = 0, .elems = elems, .params = 1};
  return rs_netmodel_simulate_algo(RS_ALGO_RING, net, W, &bucket, 1,
                                   segment_bytes, 4);
}

/* (1) The cut, against NCCL's scheduleCollTasksToPlan worked by hand for
 * one all-reduce alone: cells of 16 KiB (LL: 4 KiB), a channel's share
 * ceil(traffic / C / 16) x 16 bytes of traffic in whole cells, the last
 * channel the rest, fewer than 32 KiB of traffic a channel idle. */
static void test_parts_as_nccl(void **state) {
  (void)state;
  static const struct {
    size_t elems, elem_size;
    int channels;
    rs_protocol_t proto;
    size_t count[4]; /* channels 0..3; offsets follow */
  } cases[] = {
      /* 32 KiB on 2: 2 cells, traffic 64 KiB, 32 KiB a channel = 1 cell */
      {8192, 4, 2, RS_PROTOCOL_NONE, {4096, 4096, 0, 0}},
      /* 16 KiB on 2: one cell: channel 1 idle */
      {4096, 4, 2, RS_PROTOCOL_NONE, {4096, 0, 0, 0}},
      /* 40000 B on 4: 3 cells (the last 1808 elements), channel 3 idle */
      {10000, 4, 4, RS_PROTOCOL_NONE, {4096, 4096, 1808, 0}},
      /* 1 MiB on 4: 64 cells, 16 each */
      {262144, 4, 4, RS_PROTOCOL_NONE, {65536, 65536, 65536, 65536}},
      /* LL, 16 KiB on 2: 4 cells of 4 KiB, 32 KiB of LL traffic a cell,
       * 16 KiB a channel: 1 cell, and the rest (3) to the last channel
       * ("Overflowed available channels") */
      {4096, 4, 2, RS_PROTOCOL_LL, {1024, 3072, 0, 0}},
      /* f64, 5 cells on 3: 2 a channel, the last 1 */
      {10240, 8, 3, RS_PROTOCOL_SIMPLE, {4096, 4096, 2048, 0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t at = 0;
    int busy = 0;
    for (int c = 0; c < 4; c++) {
      size_t off, n;
      rs__rings_part(cases[i].elems, cases[i].elem_size, cases[i].channels,
                       cases[i].proto, c, &off, &n);
      if (c >= cases[i].channels)
        continue;
      if (n != cases[i].count[c] || (n && off != at))
        fail_msg("case %zu channel %d: [%zu, +%zu), expected [%zu, +%zu)", i,
                 c, off, n, at, cases[i].count[c]);
      at += n;
      busy += n != 0;
    }
    assert_int_equal(at, cases[i].elems);
    assert_int_equal(rs__rings_busy(cases[i].elems, cases[i].elem_size,
                                       cases[i].channels, cases[i].proto),
                     busy);
  }
}

/* (2) The rings: on a topology NCCL's model knows, channel c's is
 * rs_nccl_ring_order's, pos its inverse; on --net (or a topology it does
 * not know) every channel's is the identity. */
static void test_rings(void **state) {
  (void)state;
  rs_netmodel_t net = topo_of("dgx-h100,nodes=2", NULL);
  net.channels = 4;
  rs_rings_t r;
  assert_int_equal(rs__rings_make(&r, &net, 16, 4), RS_OK);
  assert_true(r.nccl && !r.identity);
  rs_nccl_system_t sys;
  char err[RS_ERRMSG_MAX];
  assert_int_equal(rs_nccl_system_of(&net.topo, &sys, err), RS_OK);
  const rs_shape_t shape = {.workers = 16, .gpus = 8, .channels = 4,
                            .rings = &r};
  for (int c = 0; c < 4; c++) {
    int order[16];
    rs_nccl_ring_order(&sys, c, order);
    for (int p = 0; p < 16; p++) {
      assert_int_equal(rs__rings_worker(shape, c, p), order[p]);
      assert_int_equal(rs__rings_pos(shape, c, order[p]), p);
    }
  }
  /* channel 0 enters node 0 at GPU 0 and goes down: 0 7 6 ... 1 */
  assert_int_equal(rs__rings_worker(shape, 0, 1), 7);
  rs__rings_free(&r);
  rs_netmodel_t flat = net_of("latency=1us,bandwidth=1GB/s", NULL);
  flat.channels = 4;
  assert_int_equal(rs__rings_make(&r, &flat, 16, 4), RS_OK);
  assert_true(r.identity && !r.nccl);
  rs__rings_free(&r);
}

/* (3) The threaded run (the data moved for real along each channel's
 * ring, every worker's result checked) and the schedule simulation agree
 * to the nanosecond for 1, 2, 4 and 8 channels, on --net and on two DGX
 * H100 nodes; one channel is the ring as it was (its time unchanged). */
static void test_threaded_is_simulated(void **state) {
  (void)state;
  static const size_t sizes[] = {5000, 3 * 16 * 4096 + 7, 300001};
  static const size_t seg_bytes[] = {1 << 18, 8192};
  for (int topo = 0; topo < 2; topo++)
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
      for (size_t gi = 0; gi < 2; gi++) {
        if (RS_TEST_SANITIZED && si == 2)
          continue;
        for (int C = 1; C <= 8; C *= 2) {
          rs_netmodel_t net = topo ? topo_of("dgx-h100,nodes=2", NULL)
                                   : net_of("latency=2us,bandwidth=20GB/s",
                                            "80GB/s");
          const int W = topo ? 16 : 6;
          net.channels = C;
          const uint64_t t = threaded(&net, W, sizes[si], seg_bytes[gi], 8);
          const uint64_t s = simulated(&net, W, sizes[si], seg_bytes[gi]);
          if (t == 0 || t != s)
            fail_msg("%s C=%d n=%zu seg=%zu: threaded %llu, model %llu",
                     topo ? "dgx-h100,nodes=2" : "--net", C, sizes[si],
                     seg_bytes[gi], (unsigned long long)t,
                     (unsigned long long)s);
          if (!topo) { /* (--net: the closed formula, chunks alike) */
            const uint64_t p = rs_netmodel_predict_algo(
                RS_ALGO_RING, &net, W, sizes[si],
                rs_segs_per_chunk(sizes[si], W, seg_bytes[gi], 4),
                seg_bytes[gi], 4);
            assert_true(p >= s);
          }
        }
      }
}

/* (4) The steady repeats stay exact on channels: with repeats and
 * played step by step, the same time, on rings that repeat every node
 * (--net, pcie), every two nodes (DGX H100: NCCL's odd-node swap) and
 * not at all (three DGX H100 nodes: the swap breaks at the wrap). */
static void test_repeats_are_exact(void **state) {
  (void)state;
  static const char *const specs[] = {"dgx-h100,nodes=4", "dgx-h100,nodes=3",
                                      "pcie,nodes=4", "dgx-a100,nodes=4"};
  static const size_t sizes[] = {7, 64 * 1000 + 1, 1 << 20};
  for (size_t ti = 0; ti < sizeof specs / sizeof *specs; ti++)
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
      for (int C = 2; C <= 16; C *= 4) {
        rs_netmodel_t net = topo_of(specs[ti], NULL);
        net.channels = C;
        const int W = net.topo.nodes * net.topo.gpus;
        rs_bucket_t b[3] = {{.elems = sizes[si], .params = 1},
                            {.elems = sizes[si], .params = 1},
                            {.elems = sizes[si], .params = 1}};
        const rs_sim_job_t job = {rs__algo_get(RS_ALGO_RING), &net, W, b, 3,
                                  1 << 16, 4};
        const uint64_t fast = rs__algo_simulate(&job),
                       plain = rs__algo_simulate_plain(&job);
        if (fast != plain || fast == 0 || fast == UINT64_MAX)
          fail_msg("%s C=%d n=%zu: with repeats %llu, played %llu",
                   specs[ti], C, sizes[si], (unsigned long long)fast,
                   (unsigned long long)plain);
      }
}

/* (5) By hand: 2 workers, 2 channels, one bucket of 8192 f32 (32 KiB:
 * two cells, so channel 0 holds elements 0..4095 and channel 1 the rest;
 * chunks of 2048 elements, 8192 B), alpha-beta link of bandwidth
 * 8.192 GB/s (8192 B: 1000 ns), no reduce cost. The two channels share
 * each worker's ports equally: a segment takes twice its wire time on
 * its channel's half. They are alike here (the same sizes, the same
 * ring), so one channel's times tell all; each worker's partner sends at
 * the same times.
 *
 * (a) latency 500 ns, one segment a chunk (1000 ns alone, 2000 on a
 *     half port):
 *     step 0 (reduce-scatter): ready 0, link 0   -> 0..2000, arrives 2500
 *     step 1 (all-gather):     ready 2500        -> 2500..4500, at 5000
 *     = 5000 ns: as on one channel (2 x (500 + 2000)); two channels on
 *     one link move no more bytes, they only share it.
 *
 * (b) latency 3000 ns, segments of 4096 B (2 a chunk: 500 ns alone,
 *     1000 on a half port), one slot a connection (--slots 1: a
 *     channel's segment leaves once the one before it on that channel
 *     has arrived):
 *     step 0  seg0 ready 0: 0..1000, arrives 4000
 *             seg1 ready 0, link 1000, slot 4000: 4000..5000, at 8000
 *     step 1  seg0 ready 4000, slot 8000: 8000..9000, at 12000
 *             seg1 ready 8000, slot 12000: 12000..13000, at 16000
 *     = 16000 ns
 * (c) the same with 8 slots (none binds); a receive waits for its port
 *     (its share) to take the one before it, 1000 ns:
 *     step 0  seg0 0..1000, arrives 4000
 *             seg1 1000..2000, arrives 5000 (port: 4000 + 1000: 5000)
 *     step 1  seg0 ready 4000: 4000..5000, arrives 8000
 *             seg1 ready 5000: 5000..6000, arrives 9000
 *     = 9000 ns */
static void test_by_hand(void **state) {
  (void)state;
  static const struct {
    const char *net;
    size_t seg_bytes;
    int slots;
    uint64_t want;
  } cases[] = {
      {"latency=500ns,bandwidth=8.192GB/s", 1 << 20, 8, 5000},
      {"latency=3us,bandwidth=8.192GB/s", 4096, 1, 16000},
      {"latency=3us,bandwidth=8.192GB/s", 4096, 8, 9000},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_netmodel_t net = net_of(cases[i].net, NULL);
    net.channels = 2;
    net.slots = cases[i].slots;
    const uint64_t t = threaded(&net, 2, 8192, cases[i].seg_bytes,
                                cases[i].slots);
    const uint64_t s = simulated(&net, 2, 8192, cases[i].seg_bytes);
    const uint64_t p = rs_netmodel_predict_algo(
        RS_ALGO_RING, &net, 2, 8192,
        rs_segs_per_chunk(8192, 2, cases[i].seg_bytes, 4), cases[i].seg_bytes,
        4);
    if (t != cases[i].want || s != cases[i].want || p != cases[i].want)
      fail_msg("case %zu: threaded %llu, model %llu, formula %llu, by hand "
               "%llu",
               i, (unsigned long long)t, (unsigned long long)s,
               (unsigned long long)p, (unsigned long long)cases[i].want);
  }
  /* (a) on one channel: 5000; (b) on one channel, 4 segments of 4096 B
   * a chunk, 500 ns each, one slot: step 0's leave at 0, 3500, 7000,
   * 10500, step 1's at 14000, ..., 24500, arriving at 28000 */
  rs_netmodel_t one = net_of(cases[0].net, NULL);
  assert_int_equal(threaded(&one, 2, 8192, 1 << 20, 8), 5000);
  one = net_of(cases[1].net, NULL);
  one.slots = 1;
  assert_int_equal(threaded(&one, 2, 8192, 4096, 1), 28000);
}

/* (6) What a run refuses: a count out of 1..64, channels for an
 * algorithm that runs on none (only the ring and the tree do), or for
 * auto. */
static void test_refused(void **state) {
  (void)state;
  rs_model_t *m = model_of(1000);
  static const struct {
    int channels;
    rs_algorithm_t algo;
    const char *says;
  } cases[] = {{65, RS_ALGO_RING, "channels: 65 is not in 1..64"},
               {-1, RS_ALGO_RING, "channels: -1 is not in 1..64"},
               {2, RS_ALGO_RD, "rd runs one schedule"},
               {2, RS_ALGO_GLOO_RING, "gloo-ring runs one schedule"},
               {4, RS_ALGO_AUTO, "give algo ring or tree, not auto"}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = 4;
    cfg.algo = cases[i].algo;
    cfg.net.channels = cases[i].channels;
    char err[RS_ERRMSG_MAX] = "";
    rs_run_t *run = NULL;
    assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_EINVAL);
    assert_null(run);
    if (!strstr(err, cases[i].says))
      fail_msg("case %zu: '%s' does not say '%s'", i, err, cases[i].says);
  }
  rs_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parts_as_nccl),
      cmocka_unit_test(test_rings),
      cmocka_unit_test(test_threaded_is_simulated),
      cmocka_unit_test(test_repeats_are_exact),
      cmocka_unit_test(test_by_hand),
      cmocka_unit_test(test_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
