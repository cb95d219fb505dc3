/* test_netmodel.c - the alpha-beta model: parsing, the formula against the
 * threaded ring and the schedule-only simulation, determinism, and how a
 * slow link or a straggler slows the ring. */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "net/netmodel.h"
#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

/* The schedule-only simulation of a one-bucket model. */
static uint64_t simulate_one(const rs_netmodel_t *net, int W, size_t elems,
                             size_t segment_bytes) {
  rs_bucket_t bucket = {.elem_offset = 0, .elems = elems, .params = 1};
  return rs_netmodel_simulate_algo(RS_ALGO_RING, net, W, &bucket, 1,
                                   segment_bytes, 4);
}

/* The threaded run's simulated time (first iteration). */
static uint64_t threaded_sim(const rs_netmodel_t *net, int W, size_t elems,
                             size_t segment_bytes, size_t *segs) {
  rs_model_t *m = model_of(elems);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.segment_bytes = segment_bytes;
  cfg.net = *net;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err))
    fail_msg("create: %s", err);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 1), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  uint64_t sim = rs_run_result(run)->sim_ns;
  *segs = rs_run_result(run)->segs_per_chunk;
  assert_int_equal(rs_run_result(run)->predicted_ns,
                   rs_netmodel_predict_algo(RS_ALGO_RING, net, W, elems, *segs,
                                            segment_bytes, 4));
  rs_run_free(run);
  rs_model_free(m);
  return sim;
}

/* net-1: units: ns/us/ms/s; B/s, KB/s ... GB/s (10^3), GiB/s (2^30), Gbps. */
static void test_parsing(void **state) {
  (void)state;
  rs_netmodel_t net = net_of("latency=5us,bandwidth=25GB/s", "20GB/s");
  assert_int_equal(net.link.latency_ns, 5000);
  assert_int_equal(net.link.bandwidth, 25000000000ull);
  assert_int_equal(net.reduce_rate, 20000000000ull);
  net = net_of("bandwidth=100Gbps,latency=1.5ms", NULL);
  assert_int_equal(net.link.latency_ns, 1500000);
  assert_int_equal(net.link.bandwidth, 12500000000ull);
  net = net_of("latency=250ns,bandwidth=2GiB/s", NULL);
  assert_int_equal(net.link.bandwidth, 2147483648ull);
  char err[RS_ERRMSG_MAX];
  const char *bad[] = {"latency=5us",
                       "latency=5,bandwidth=1GB/s",
                       "latency=5us,bandwidth=0GB/s",
                       "speed=1GB/s",
                       "latency=-1us,bandwidth=1GB/s",
                       ""};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    rs_netmodel_t n = {0};
    if (rs_netmodel_parse(bad[i], &n, err) != RS_EINVAL)
      fail_msg("accepted '%s'", bad[i]);
  }
  assert_int_equal(rs_netmodel_parse_link("2-3:bandwidth=1GB/s", &net, err),
                   RS_OK);
  assert_int_equal(net.links[0].src, 2);
  assert_int_equal(net.links[0].link.bandwidth, 1000000000ull);
  assert_int_equal(net.links[0].link.latency_ns, RS_NET_UNSET);
  assert_int_equal(rs_netmodel_check(&net, 4, err), RS_OK);
  assert_int_equal(rs_netmodel_check(&net, 3, err), RS_EINVAL);
  assert_non_null(strstr(err, "worker 3 does not exist"));
  assert_int_equal(rs_netmodel_parse_link("1-3:bandwidth=1GB/s", &net, err),
                   RS_OK);
  assert_int_equal(rs_netmodel_check(&net, 4, err), RS_EINVAL);
  assert_non_null(strstr(err, "not a ring link"));
  assert_int_equal(rs_netmodel_parse_straggler("worker=1,us=200", &net, err),
                   RS_OK);
  assert_int_equal(net.stragglers[0].delay_ns, 200000);
  assert_int_equal(rs_netmodel_parse_straggler("worker=1,s=2", &net, err),
                   RS_EINVAL);
}

/* net-2: in a uniform ring the simulated time equals the formula (its
 * segments streamed: ring.c's rs__ring_stream_step_ns) exactly, in the
 * threaded run
 * and in the schedule-only simulation, for several W, sizes and segment
 * sizes. */
static void test_formula_exact(void **state) {
  (void)state;
  const int workers[] = {2, 3, 4, 5, 8, 16};
  const size_t seg_bytes[] = {1 << 20, 4096, 1000};
  const char *nets[] = {"latency=5us,bandwidth=25GB/s",
                        "latency=100ns,bandwidth=1GB/s",
                        "latency=2ms,bandwidth=100Gbps"};
  for (size_t wi = 0; wi < sizeof workers / sizeof *workers; wi++)
    for (size_t si = 0; si < 3; si++)
      for (size_t ni = 0; ni < 3; ni++) {
        int W = workers[wi];
        /* W x k divides the count: 960 elements per worker-chunk-segment */
        size_t elems = (size_t)W * 4 * 960;
        rs_netmodel_t net = net_of(nets[ni], ni == 1 ? "20GB/s" : NULL);
        size_t segs;
        uint64_t sim = threaded_sim(&net, W, elems, seg_bytes[si], &segs);
        uint64_t want = rs_netmodel_predict_algo(RS_ALGO_RING, &net, W, elems,
                                                 segs, seg_bytes[si], 4);
        uint64_t model = simulate_one(&net, W, elems, seg_bytes[si]);
        if (sim != want || model != want)
          fail_msg("W=%d elems=%zu segs=%zu %s: threaded %llu, model %llu, "
                   "formula %llu",
                   W, elems, segs, nets[ni], (unsigned long long)sim,
                   (unsigned long long)model, (unsigned long long)want);
        /* and by hand for one case: W=4, k=1, 6 steps of 5 us plus
         * 15360 B at 25 B/ns = 614.4 ns, rounded up to 615 */
        if (W == 4 && si == 0 && ni == 0)
          assert_int_equal(sim, 6 * (5000 + 615));
      }
}

/* net-3: with non-uniform chunks, a slow link or a straggler, the threaded
 * run and `ringsim model` still agree exactly, run after run. */
static void test_threaded_equals_model(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  rs_netmodel_t net = net_of("latency=3us,bandwidth=10GB/s", "40GB/s");
  assert_int_equal(rs_netmodel_parse_link("1-2:bandwidth=1GB/s", &net, err),
                   RS_OK);
  assert_int_equal(rs_netmodel_parse_straggler("worker=3,us=50", &net, err),
                   RS_OK);
  for (int rep = 0; rep < 3; rep++) {
    size_t segs;
    uint64_t sim = threaded_sim(&net, 5, 100003, 8192, &segs);
    assert_int_equal(sim, simulate_one(&net, 5, 100003, 8192));
  }
}

/* net-6: pipelined links, worked by hand (docs/algorithms.md, "Pipelined
 * links"). W = 3 on latency a = 3 us, 1 GB/s (a byte a ns), segments of
 * 1000 bytes: w = 1 us on the wire; 4 steps of k segments, the messages
 * i = 0 .. 4k-1 on each link in order. Message i (segment j of step s)
 * leaves at D_i = max(its data: segment j received in step s-1; the link
 * free, D_{i-1} + w; a slot: A_{i-K}, K = slots) and arrives at
 * A_i = D_i + w + a (the reduction is free). By hand:
 *   k = 2, K = 1: each waits for the one before: A_7 = 8 (a + w) = 32 us
 *   k = 2, K = 2: D = 0 1 4 5 8 9 12 13;  A_7 = 17 us
 *   k = 3, K = 1: A_11 = 12 (a + w) = 48 us
 *   k = 3, K = 2: D = 0 1 4 5 8 9 12 13 16 17 20 21;  A_11 = 25 us
 *   k = 3, K = 8: D = 0 1 2 4 5 6 8 9 10 12 13 14;  A_11 = 18 us
 *     = 4 (a + w) + (k - 1) w: the latency once a step, not a segment.
 * The threaded run keeps the same clocks, and the formula agrees. */
static void test_pipelined_ring_by_hand(void **state) {
  (void)state;
  const struct {
    size_t k;
    int slots;
    uint64_t ns;
  } cases[] = {{2, 1, 32000}, {2, 2, 17000}, {3, 1, 48000},
               {3, 2, 25000}, {3, 8, 18000}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_netmodel_t net = net_of("latency=3us,bandwidth=1GB/s", NULL);
    net.slots = cases[i].slots;
    const size_t elems = 3 * cases[i].k * 250; /* 250 floats a segment */
    size_t segs;
    assert_int_equal(simulate_one(&net, 3, elems, 1000), cases[i].ns);
    assert_int_equal(threaded_sim(&net, 3, elems, 1000, &segs), cases[i].ns);
    assert_int_equal(segs, cases[i].k);
  }
}

/* net-7: NCCL's protocols (net/proto.h), worked by hand. W = 2 on --net
 * latency=1us,bandwidth=1GB/s (a byte a ns), one chunk of 251 floats
 * (1004 bytes) a worker in one segment, 2 steps. Each protocol puts its
 * wire bytes on the link, and its launch latency (tuning.cc's
 * baseLatencies, the ring's) comes first; --net keeps its own 1 us hop:
 *   LL:     ceil(1004/8) x 16 = 2016 bytes; 6.6 us + 2 (1 us + 2016 ns)
 *   LL128:  ceil(1004/120) x 128 = 1152;   14 us + 2 (1 us + 1152 ns)
 *   Simple: 1004;                          8.4 us + 2 (1 us + 1004 ns)
 * On a topology whose GPUs NCCL's model knows, the hop is NCCL's for the
 * link: two nodes of one H100 each (cc=90), one NIC each, a hop of the
 * network (hwLatencies NET: LL 2.7, LL128 4.0, Simple 14 us) at 50 GB/s
 * (20 ns for 1004 bytes, 40.32 for LL's 2016, 23.04 for LL128's 1152).
 * The threaded run keeps the same clocks. */
static void test_protocols_by_hand(void **state) {
  (void)state;
  const struct {
    rs_protocol_t proto;
    uint64_t flat, nodes;
  } cases[] = {
      {RS_PROTOCOL_LL, 6600 + 2 * (1000 + 2016), 6600 + 2 * (2700 + 41)},
      {RS_PROTOCOL_LL128, 14000 + 2 * (1000 + 1152), 14000 + 2 * (4000 + 24)},
      {RS_PROTOCOL_SIMPLE, 8400 + 2 * (1000 + 1004), 8400 + 2 * (14000 + 21)}};
  char err[RS_ERRMSG_MAX];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_netmodel_t net = net_of("latency=1us,bandwidth=1GB/s", NULL);
    net.proto = cases[i].proto;
    size_t segs;
    assert_int_equal(simulate_one(&net, 2, 2 * 251, 1 << 20), cases[i].flat);
    assert_int_equal(threaded_sim(&net, 2, 2 * 251, 1 << 20, &segs),
                     cases[i].flat);
    rs_netmodel_t topo = {0};
    assert_int_equal(rs_topo_parse("nodes=2,gpus=1,nics=1,intra=1us/100GB/s,"
                                   "nic=9us/50GB/s,cc=90,switch=nvls",
                                   &topo.topo, err),
                     RS_OK);
    topo.enabled = 1;
    topo.proto = cases[i].proto;
    assert_int_equal(simulate_one(&topo, 2, 2 * 251, 1 << 20), cases[i].nodes);
  }
}

/* net-4: a slow link slows the whole ring: the ring goes at the pace of its
 * slowest link, so one link 10x slower costs most (here at least 80%) of
 * making every link that slow. A straggler computes before each segment
 * it sends; with the segments streamed, its delay counts where the data
 * passes through it: some chunk's 2(W-1) = 6 hops start at worker 1
 * twice, so the ring takes at least 2 delays and 4 more hops (a + w
 * each), and the other workers' hops hide the rest: less than a delay at
 * every step. */
static void test_slow_link_and_straggler(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  const int W = 4;
  const size_t elems = (size_t)W * 8 * 2048;
  rs_netmodel_t fast = net_of("latency=1us,bandwidth=10GB/s", NULL);
  rs_netmodel_t slow_all = net_of("latency=1us,bandwidth=1GB/s", NULL);
  rs_netmodel_t one_slow = fast;
  assert_int_equal(
      rs_netmodel_parse_link("2-3:bandwidth=1GB/s", &one_slow, err), RS_OK);
  uint64_t t_fast = simulate_one(&fast, W, elems, 8192);
  uint64_t t_slow = simulate_one(&slow_all, W, elems, 8192);
  uint64_t t_one = simulate_one(&one_slow, W, elems, 8192);
  assert_true(t_fast < t_one);
  assert_true(t_one <= t_slow);
  assert_true(t_one * 10 >= t_slow * 8);
  size_t got_segs;
  assert_int_equal(threaded_sim(&one_slow, W, elems, 8192, &got_segs), t_one);

  rs_netmodel_t lag = fast;
  assert_int_equal(rs_netmodel_parse_straggler("worker=1,us=100", &lag, err),
                   RS_OK);
  uint64_t t_lag = simulate_one(&lag, W, elems, 8192);
  assert_true(t_lag >= 2 * 100000 + 4 * (1000 + 820));
  assert_true(t_lag < t_fast + 2 * (W - 1) * 100000);
  assert_int_equal(threaded_sim(&lag, W, elems, 8192, &got_segs), t_lag);
}

/* net-5: big rings: the schedule-only model handles thousands of workers
 * (under a sanitizer 512: the model runs no thread, its arrays are W long
 * at any W, and the instrumented arithmetic took 18 s at 4096 under TSan,
 * 25 s under ASan). */
/* A transfer's time, ceil(bytes x 1e9 / rate) ns, is exact on both sides
 * of where 64 bits stop holding bytes x 1e9 (rs__net_ns takes 128 there):
 * against the sum and carry worked out by hand, in 32-bit halves. */
static void test_net_ns_exact(void **state) {
  (void)state;
  const uint64_t edge = UINT64_MAX / 2 / 1000000000u;
  const size_t sizes[] = {1, 3, 1000, edge - 1, edge, edge + 1, 2 * edge + 7};
  const uint64_t rates[] = {1, 7, 3000000000ull, 25000000000ull,
                            450000000000ull};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    for (size_t j = 0; j < sizeof rates / sizeof *rates; j++) {
      const uint64_t b = sizes[i], rate = rates[j];
      /* bytes x 1e9 + rate - 1 as 128 bits (hi, lo), then long division
       * by rate one bit at a time */
      const uint64_t lo32 = (b & 0xffffffffu) * 1000000000u,
                     hi32 = (b >> 32) * 1000000000u;
      uint64_t lo = lo32 + (hi32 << 32), hi = (hi32 >> 32) + (lo < lo32);
      const uint64_t before = lo;
      lo += rate - 1;
      hi += lo < before;
      uint64_t q = 0, r = 0;
      for (int bit = 127; bit >= 0; bit--) {
        const uint64_t top = r >> 63;
        r = r << 1 | ((bit >= 64 ? hi >> (bit - 64) : lo >> bit) & 1);
        q <<= 1; /* (q's bits past 64 are lost: hi >= rate saturates) */
        if (top || r >= rate) {
          r -= rate;
          q |= 1;
        }
      }
      assert_int_equal(rs__net_ns(b, rate), hi >= rate ? UINT64_MAX : q);
    }
}

static void test_big_ring_model(void **state) {
  (void)state;
  rs_netmodel_t net = net_of("latency=5us,bandwidth=25GB/s", NULL);
  const int W = RS_TEST_SANITIZED ? 512 : 4096;
  size_t elems = (size_t)W * 1000;
  assert_int_equal(simulate_one(&net, W, elems, 1 << 20),
                   rs_netmodel_predict_algo(
                       RS_ALGO_RING, &net, W, elems,
                       rs_segs_per_chunk(elems, W, 1 << 20, 4), 1 << 20, 4));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_parsing),
      cmocka_unit_test(test_formula_exact),
      cmocka_unit_test(test_threaded_equals_model),
      cmocka_unit_test(test_slow_link_and_straggler),
      cmocka_unit_test(test_pipelined_ring_by_hand),
      cmocka_unit_test(test_protocols_by_hand),
      cmocka_unit_test(test_net_ns_exact),
      cmocka_unit_test(test_big_ring_model),
  };
  return cmocka_run_group_tests_name("netmodel", tests, NULL, NULL);
}
