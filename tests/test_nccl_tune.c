/* test_nccl_tune.c - NCCL's tuner replayed (algo/nccl.h, nccl_system.c,
 * nccl_tune.c): the protocols' wire bytes, a --topo as NCCL sees it, the
 * cost table of docs/nccl-reference.md section 1.7, the choice at sizes
 * worked by hand, forcing, and the execution channels. Every expected
 * number is worked in the comment above it from NCCL v2.30.7-1's
 * constants (src/graph/tuning.cc, search.cc, connect.cc, enqueue.cc). */
#include "test.h"

#include <math.h>
#include <string.h>

#include "algo/nccl.h"

/* The values are worked to 4 decimals (NCCL's own model computes in
 * float): within 5e-4, and a relative 1e-7 for the largest */
#define TOL 5e-4

#define assert_near(actual, expected)                                          \
  do {                                                                         \
    const double a_ = (actual), e_ = (expected);                               \
    if (!(fabs(a_ - e_) <= TOL + 1e-7 * fabs(e_)))                             \
      fail_msg("%s = %.6f, expected %.6f", #actual, a_, e_);                   \
  } while (0)

static rs_nccl_system_t system_of(const char *spec) {
  rs_topo_t t;
  rs_nccl_system_t s;
  char err[RS_ERRMSG_MAX];
  if (rs_topo_parse(spec, &t, err))
    fail_msg("%s: %s", spec, err);
  if (rs_nccl_system_of(&t, &s, err))
    fail_msg("%s: %s", spec, err);
  return s;
}

/* 1. Wire bytes: LL ceil(n/8) x 16, LL128 ceil(n/120) x 128, Simple n. */
static void test_wire_bytes_odd_sizes(void **state) {
  (void)state;
  static const struct {
    uint64_t n, ll, ll128;
  } rows[] = {
      /* 1: one line each */
      {1, 16, 128},
      /* 7: still one line (8 data bytes a LL line, 120 a LL128 line) */
      {7, 16, 128},
      /* 9: LL 2 lines of 16; LL128 one of 128 */
      {9, 32, 128},
      /* 119: LL ceil(14.875) = 15 lines, 240; LL128 one line */
      {119, 240, 128},
      /* 121: LL ceil(15.125) = 16 lines, 256; LL128 2 lines, 256 */
      {121, 256, 256},
      /* 1000001: LL 125001 lines x 16 = 2000016; LL128 ceil(8333.34) =
       * 8334 lines x 128 = 1066752 */
      {1000001, 2000016, 1066752},
      /* 0: no line */
      {0, 0, 0},
  };
  for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
    assert_int_equal(rs_proto_wire_bytes(RS_PROTO_LL, rows[i].n), rows[i].ll);
    assert_int_equal(rs_proto_wire_bytes(RS_PROTO_LL128, rows[i].n),
                     rows[i].ll128);
    assert_int_equal(rs_proto_wire_bytes(RS_PROTO_SIMPLE, rows[i].n),
                     rows[i].n);
  }
  /* near the top: 2^63 - 8 bytes are 2^60 - 1 LL lines, 2^64 - 16 wire
   * bytes, which fit; 2^63 are 2^60 lines, 2^64 bytes, which saturate */
  const uint64_t top = UINT64_C(1) << 63;
  assert_int_equal(rs_proto_wire_bytes(RS_PROTO_LL, top - 8), UINT64_MAX - 15);
  assert_int_equal(rs_proto_wire_bytes(RS_PROTO_LL, top), UINT64_MAX);
  assert_int_equal(rs_proto_wire_bytes(RS_PROTO_LL, UINT64_MAX), UINT64_MAX);
  /* UINT64_MAX / 120 + 1 lines of 128 pass 2^64: saturate; 120 x 2^56
   * bytes are 2^56 lines, 2^63 wire bytes exactly */
  assert_int_equal(rs_proto_wire_bytes(RS_PROTO_LL128, UINT64_MAX), UINT64_MAX);
  assert_int_equal(
      rs_proto_wire_bytes(RS_PROTO_LL128, 120 * (UINT64_C(1) << 56)), top);
  assert_int_equal(rs_proto_wire_bytes(RS_PROTO_SIMPLE, UINT64_MAX),
                   UINT64_MAX);
}

/* 2. NCCL_ALGO and NCCL_PROTO spellings, any case. */
static void test_names(void **state) {
  (void)state;
  assert_string_equal(rs_nccl_algo_name(RS_NCCL_NVLSTREE), "NVLSTree");
  assert_string_equal(rs_proto_name(RS_PROTO_SIMPLE), "Simple");
  assert_int_equal(rs_nccl_algo_from_name("ring"), RS_NCCL_RING);
  assert_int_equal(rs_nccl_algo_from_name("TREE"), RS_NCCL_TREE);
  assert_int_equal(rs_nccl_algo_from_name("nvls"), RS_NCCL_NVLS);
  assert_int_equal(rs_nccl_algo_from_name("nvlstree"), RS_NCCL_NVLSTREE);
  assert_int_equal(rs_nccl_algo_from_name("collnetdirect"), -1);
  assert_int_equal(rs_nccl_algo_from_name(""), -1);
  assert_int_equal(rs_nccl_algo_from_name(NULL), -1);
  assert_int_equal(rs_proto_from_name("ll"), RS_PROTO_LL);
  assert_int_equal(rs_proto_from_name("LL128"), RS_PROTO_LL128);
  assert_int_equal(rs_proto_from_name("SIMPLE"), RS_PROTO_SIMPLE);
  assert_int_equal(rs_proto_from_name("LL64"), -1);
}

/* 3. A --topo as NCCL sees it (topo.cc ncclTopoAddNvLinks, PCIe width x
 * speed / 80, NIC Mb/s / 8000). */
static void test_system_of_topologies(void **state) {
  (void)state;
  /* H100: 370.8 GB/s / SM90_NVLINK_BW 20.6 = 18 NVLinks: 370.8;
   * Gen5 x16 16 x 240 / 80 = 48; 400 Gb/s = 400000 / 8000 = 50 */
  rs_nccl_system_t h = system_of("dgx-h100,nodes=2");
  assert_int_equal(h.nodes, 2);
  assert_int_equal(h.gpus, 8);
  assert_int_equal(h.nics, 8);
  assert_int_equal(h.cc, 90);
  assert_int_equal(h.nvswitch, 1);
  assert_int_equal(h.nvls, 1);
  assert_near(h.nvlink_gbs, 370.8);
  assert_near(h.pci_gbs, 48.0);
  assert_near(h.nic_gbs, 50.0);
  assert_near(h.net_latency_us, 0.0);
  /* A100: 240 / SM80_NVLINK_BW 20 = 12 links: 240; Gen4 x16 16 x 120 /
   * 80 = 24; 200 Gb/s: 25; its switch does not reduce */
  rs_nccl_system_t a = system_of("dgx-a100");
  assert_int_equal(a.cc, 80);
  assert_int_equal(a.nvswitch, 1);
  assert_int_equal(a.nvls, 0);
  assert_near(a.nvlink_gbs, 240.0);
  assert_near(a.pci_gbs, 24.0);
  assert_near(a.nic_gbs, 25.0);
  /* the same machine spelled out as items */
  rs_nccl_system_t c = system_of("nodes=2,gpus=8,nics=8,intra=0.6us/370.8GB/s,"
                                 "nic=2.7us/400Gbps,cc=90,switch=nvls");
  assert_int_equal(memcmp(&c, &h, sizeof c), 0);
  /* pcie,cc=80: no switch; PCIe 4.0 x16 at NCCL's 16 x 120 / 80 = 24 */
  rs_nccl_system_t p = system_of("pcie,cc=80");
  assert_int_equal(p.nvswitch, 0);
  assert_int_equal(p.nvls, 0);
  assert_near(p.nvlink_gbs, 0.0);
  assert_near(p.pci_gbs, 24.0);
  assert_near(p.nic_gbs, 12.5);

  /* refused: too little for NCCL's model, or what it does not replay */
  static const struct {
    const char *spec, *says;
  } bad[] = {
      {"pcie", "compute capability (add cc=80"},
      {"dgx-h100,cc=100", "cc=100: ringsim replays NCCL's model for"},
      {"dgx-h100,cc=60", "cc=60"},
      {"dgx-h100,intra=1us/10GB/s", "less than one NVLink"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    rs_topo_t t;
    rs_nccl_system_t s;
    char err[RS_ERRMSG_MAX] = "";
    assert_int_equal(rs_topo_parse(bad[i].spec, &t, err), RS_OK);
    assert_int_equal(rs_nccl_system_of(&t, &s, err), RS_EINVAL);
    if (!strstr(err, bad[i].says))
      fail_msg("%s: said \"%s\", not \"%s\"", bad[i].spec, err, bad[i].says);
    assert_null(strchr(err, '\n'));
  }
  rs_topo_t flat = {0};
  rs_nccl_system_t s;
  char err[RS_ERRMSG_MAX];
  assert_int_equal(rs_nccl_system_of(&flat, &s, err), RS_EINVAL);
}

/* 4. The new --topo items and preset. */
static void test_topo_items(void **state) {
  (void)state;
  rs_topo_t t;
  char err[RS_ERRMSG_MAX];
  assert_int_equal(rs_topo_parse("dgx-a100,nodes=4", &t, err), RS_OK);
  assert_int_equal(t.gpus, 8);
  assert_int_equal(t.nics, 8);
  assert_int_equal(t.intra.bandwidth, 240000000000ull);
  assert_int_equal(t.nic.bandwidth, 25000000000ull);
  assert_int_equal(t.cc, 80);
  assert_int_equal(t.nvswitch, RS_TOPO_SWITCH_NVSWITCH);
  assert_int_equal(rs_topo_parse("dgx-h100", &t, err), RS_OK);
  assert_int_equal(t.cc, 90);
  assert_int_equal(t.nvswitch, RS_TOPO_SWITCH_NVLS);
  assert_int_equal(rs_topo_parse("pcie", &t, err), RS_OK);
  assert_int_equal(t.cc, 0);
  assert_int_equal(t.nvswitch, RS_TOPO_SWITCH_NONE);
  assert_int_equal(rs_topo_parse("dgx-h100,switch=none,cc=80", &t, err), RS_OK);
  assert_int_equal(t.nvswitch, RS_TOPO_SWITCH_NONE);
  assert_int_equal(t.cc, 80);
  static const struct {
    const char *spec, *says;
  } bad[] = {
      {"dgx-h100,switch=fast", "'switch=fast': expected switch=none, "
                               "nvswitch or nvls"},
      {"dgx-h100,cc=9", "'cc=9': expected cc=a compute capability"},
      {"dgx-h100,cc=90,cc=80", "cc= is given twice"},
      {"dgx-h100,switch=nvls,switch=none", "switch= is given twice"},
      {"dgx-h100,speed=3", "unknown item 'speed=3' (a preset first: "
                           "dgx-h100, dgx-a100 or pcie"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char msg[RS_ERRMSG_MAX] = "";
    if (rs_topo_parse(bad[i].spec, &t, msg) != RS_EINVAL)
      fail_msg("'%s' was taken", bad[i].spec);
    if (!strstr(msg, bad[i].says))
      fail_msg("'%s': said \"%s\", not \"%s\"", bad[i].spec, msg, bad[i].says);
  }
}

typedef rs_nccl_cost_t table_t[RS_NCCL_ALGOS][RS_PROTOS];

/* 5. One DGX H100 (docs/nccl-reference.md 1.7). The ring graph: maxBw =
 * totalBw = 370.8; speed 60 fits 6 channels (6 x 60 = 360 < 370.8, a 7th
 * would pass it), no lower speed beats 360 (50 x 7 = 350, 40 x 9 = 360 and
 * 30 x 12 = 360 are not more); duplicated (60 >= 50) to 12 x 30. The tree
 * (BALANCED_TREE, 12 channels): its first speed with 12 x speed <= 370.8
 * x 8/7 = 423.8 is 30, and 12 x 30 fits at once; not duplicated (cc 90,
 * 30 < 50, 12 > 4). NVLS: 8 heads at bwIntra 40 (the head's link twice:
 * 9 x 40 = 360 <= 370.8), bwInter raised to 60. */
static void test_h100_one_node_table(void **state) {
  (void)state;
  rs_nccl_system_t s = system_of("dgx-h100");
  table_t c;
  rs_nccl_tune(&s, c);
  /* nsteps 2 x 7 = 14, algbw ratio 8/14 */
  /* Ring/LL: 6.6 + 14 x 0.6 = 15.0; min(llMaxBw 141, 360 x .5) = 141 */
  assert_int_equal(c[RS_NCCL_RING][RS_PROTO_LL].search_channels, 12);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL].channel_gbs, 30.0);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL].latency_us, 15.0);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL].busbw_gbs, 141.0);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL].algbw_gbs, 141.0 * 8 / 14);
  /* Ring/LL128: 14 + 14 x 1.9 = 40.6; min(360 x .92, 12 x 36.7) = 331.2 */
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL128].latency_us, 40.6);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL128].busbw_gbs, 331.2);
  /* Ring/Simple: 8.4 + 14 x 3.4 = 56.0; 12 x 30 = 360 */
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].latency_us, 56.0);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].busbw_gbs, 360.0);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].algbw_gbs, 360.0 * 8 / 14);
  /* NVLS/Simple: latency the NVLink hwLat alone, 25; 8 x min(40 x .85 x
   * 7/8 x 2 = 59.5, 60) = 476, algbw 476 x 8/14 = 272 */
  assert_int_equal(c[RS_NCCL_NVLS][RS_PROTO_SIMPLE].available, 1);
  assert_int_equal(c[RS_NCCL_NVLS][RS_PROTO_SIMPLE].search_channels, 8);
  assert_near(c[RS_NCCL_NVLS][RS_PROTO_SIMPLE].channel_gbs, 59.5);
  assert_near(c[RS_NCCL_NVLS][RS_PROTO_SIMPLE].latency_us, 25.0);
  assert_near(c[RS_NCCL_NVLS][RS_PROTO_SIMPLE].busbw_gbs, 476.0);
  assert_near(c[RS_NCCL_NVLS][RS_PROTO_SIMPLE].algbw_gbs, 272.0);
  /* Tree: 12 x 30 = 360, min(360 x .92, 12 x 38.7) = 331.2; the pattern is
   * BALANCED_TREE, so no x .85: LL min(331.2 / 3.8, 141) = 87.158, LL128
   * min(331.2 x 7/9, 12 x 36.7) = 257.6, Simple 331.2. Latencies 6.8 + 2
   * x 7 x 0.6 = 15.2, 14 + 14 x 1.25 = 31.5, 8.4 + 14 x 4 = 64.4. */
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL].latency_us, 15.2);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL128].latency_us, 31.5);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_SIMPLE].latency_us, 64.4);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL].busbw_gbs, 331.2 / 3.8);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL128].busbw_gbs, 257.6);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_SIMPLE].busbw_gbs, 331.2);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_SIMPLE].algbw_gbs, 165.6);
  /* off: NVLSTree on one node; NVLS's LL and LL128 */
  assert_int_equal(c[RS_NCCL_NVLSTREE][RS_PROTO_SIMPLE].available, 0);
  assert_int_equal(c[RS_NCCL_NVLS][RS_PROTO_LL].available, 0);
  assert_int_equal(c[RS_NCCL_NVLS][RS_PROTO_LL128].available, 0);
  assert_near(rs_nccl_time_us(&s, (const rs_nccl_cost_t(*)[RS_PROTOS])c,
                              RS_NCCL_NVLSTREE, RS_PROTO_SIMPLE, 1024),
              -1.0);
}

/* 6. Two DGX H100 (8 x 400G). Ring graph: maxBw GPU->NIC min(48, 50) =
 * 48; at 48 each NIC starts one channel (50 - 48 < 48), its GPU's PCIe
 * takes one in (48), and cross-NIC rings of 7 NVLink hops give each GPU 7
 * x 48 = 336 <= 370.8: 8 channels, 8 x 48 = 384 >= totalBw 370.8, done;
 * not duplicated (48 < 50, 8 > 4). Tree: TREE pattern (Hopper's simpler
 * tree: the balanced one's second GPU has no NIC of its own) 8 x 48.
 * NVLS graph: 8 heads at bwIntra 40, bwInter raised to 48. nRanks 16,
 * nsteps 30, nInterSteps 2, ppn 8. */
static void test_h100_two_nodes_table(void **state) {
  (void)state;
  rs_nccl_system_t s = system_of("dgx-h100,nodes=2");
  table_t c;
  rs_nccl_tune(&s, c);
  assert_int_equal(c[RS_NCCL_RING][RS_PROTO_SIMPLE].search_channels, 8);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].channel_gbs, 48.0);
  assert_int_equal(c[RS_NCCL_TREE][RS_PROTO_SIMPLE].search_channels, 8);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_SIMPLE].channel_gbs, 48.0);
  /* Ring/LL: 6.6 + 28 x max(0.6, net overhead 1.0) + 2 x 2.7 = 40.0;
   * min(llMaxBw Intel-N2 39, 384 x .5) = 39 */
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL].latency_us, 40.0);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL].busbw_gbs, 39.0);
  /* Ring/LL128: 14 + 28 x 1.9 + 2 x 4.0 = 75.2; min(353.28, 8 x 36.7) =
   * 293.6 */
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL128].latency_us, 75.2);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL128].busbw_gbs, 293.6);
  /* Ring/Simple: 8.4 + 28 x max(3.4, 3 x 1.0) + 2 x 14 = 131.6; 384 */
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].latency_us, 131.6);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].busbw_gbs, 384.0);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].algbw_gbs, 384.0 * 16 / 30);
  /* Tree/LL: 6.8 + 2 x (7 x 0.6 + log2(2) x 5.0) = 25.2, NCCL's log's
   * 25.2 us at 128 B (nccl#1453); busBw min(384 x .92, 8 x 41.4) = 331.2,
   * min(331.2 / 3.8, 39) = 39, x .85 (TREE) = 33.15 */
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL].latency_us, 25.2);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL].busbw_gbs, 33.15);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL].algbw_gbs, 16.575);
  /* Tree/LL128: 14 + 2 x (7 x 1.25 + 8.5) = 48.5; min(331.2 x 120/128,
   * 8 x 36.7) = 293.6, x .85 = 249.56 */
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL128].latency_us, 48.5);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL128].busbw_gbs, 249.56);
  /* Tree/Simple: 8.4 + 2 x (7 x 4 + 14) = 92.4; 331.2 x .85 = 281.52 */
  assert_near(c[RS_NCCL_TREE][RS_PROTO_SIMPLE].latency_us, 92.4);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_SIMPLE].busbw_gbs, 281.52);
  /* NVLSTree/Simple: 0 + 25 + 2 x 1 x 20.9 = 66.8; 8 x min(59.5, 48 x 2,
   * 57.7) = 461.6 */
  assert_near(c[RS_NCCL_NVLSTREE][RS_PROTO_SIMPLE].latency_us, 66.8);
  assert_near(c[RS_NCCL_NVLSTREE][RS_PROTO_SIMPLE].busbw_gbs, 461.6);
  assert_near(c[RS_NCCL_NVLSTREE][RS_PROTO_SIMPLE].algbw_gbs, 461.6 * 16 / 30);
  /* NVLS across nodes needs CollNet: off */
  assert_int_equal(c[RS_NCCL_NVLS][RS_PROTO_SIMPLE].available, 0);
  /* 128 B on Tree/LL: 25.2 + 128 / (1000 x 16.575) = 25.2077 (the log
   * says 25.2148: its bandwidth term is 0.0148 us, as 20.4 x .85 gives,
   * another NCCL's llMaxBw) */
  assert_near(rs_nccl_time_us(&s, (const rs_nccl_cost_t(*)[RS_PROTOS])c,
                              RS_NCCL_TREE, RS_PROTO_LL, 128),
              25.2 + 128 / 16575.0);
}

/* 7. Four DGX H100: the graphs of two nodes; nRanks 32, nsteps 62,
 * nInterSteps 6, log2(4) = 2, the N4 column. */
static void test_h100_four_nodes_table(void **state) {
  (void)state;
  rs_nccl_system_t s = system_of("dgx-h100,nodes=4");
  table_t c;
  rs_nccl_tune(&s, c);
  /* Ring: LL 6.6 + 56 x 1.0 + 6 x 2.7 = 78.8, min(20.4, 192) = 20.4;
   * LL128 14 + 56 x 1.9 + 6 x 4 = 144.4, 293.6; Simple 8.4 + 56 x 3.4 + 6
   * x 14 = 282.8, 384 */
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL].latency_us, 78.8);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL].busbw_gbs, 20.4);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL128].latency_us, 144.4);
  assert_near(c[RS_NCCL_RING][RS_PROTO_LL128].busbw_gbs, 293.6);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].latency_us, 282.8);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].busbw_gbs, 384.0);
  /* Tree: busBw min(353.28, 8 x 36.0) = 288. LL 6.8 + 2 x (4.2 + 2 x 5)
   * = 35.2, min(75.8, 20.4) x .85 = 17.34; LL128 14 + 2 x (8.75 + 17) =
   * 65.5, min(270, 8 x 29) x .85 = 197.2; Simple 8.4 + 2 x (28 + 28) =
   * 120.4, 288 x .85 = 244.8 */
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL].latency_us, 35.2);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL].busbw_gbs, 17.34);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL128].latency_us, 65.5);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_LL128].busbw_gbs, 197.2);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_SIMPLE].latency_us, 120.4);
  assert_near(c[RS_NCCL_TREE][RS_PROTO_SIMPLE].busbw_gbs, 244.8);
  /* NVLSTree: 25 + 2 x 2 x 20.9 = 108.6; 8 x min(59.5, 48, 45.5) = 364 */
  assert_near(c[RS_NCCL_NVLSTREE][RS_PROTO_SIMPLE].latency_us, 108.6);
  assert_near(c[RS_NCCL_NVLSTREE][RS_PROTO_SIMPLE].busbw_gbs, 364.0);
}

static rs_nccl_choice_t choose(const rs_nccl_system_t *s,
                               const rs_nccl_force_t *force, uint64_t bytes) {
  rs_nccl_choice_t ch;
  char err[RS_ERRMSG_MAX];
  if (rs_nccl_choose(s, force, bytes, &ch, err))
    fail_msg("%llu bytes: %s", (unsigned long long)bytes, err);
  return ch;
}

#define assert_choice(ch, a, p, nc, t)                                         \
  do {                                                                         \
    if ((ch).algo != (a) || (ch).proto != (p))                                 \
      fail_msg("chose %s/%s, expected %s/%s", rs_nccl_algo_name((ch).algo),    \
               rs_proto_name((ch).proto), rs_nccl_algo_name(a),                \
               rs_proto_name(p));                                              \
    assert_int_equal((ch).channels, (nc));                                     \
    assert_near((ch).time_us, (t));                                            \
  } while (0)

/* 8. The choice on one node (nccl-tests#309's log: Ring/LL up to 1 MiB,
 * NVLS from 2 MiB). algbw: Ring/LL 141 x 8/14 = 80.571, NVLS 272. */
static void test_choice_one_node(void **state) {
  (void)state;
  rs_nccl_system_t s = system_of("dgx-h100");
  /* 8 B: Ring/LL 15.0 + 8 / 80571 = 15.0001 (Tree/LL's 15.2 next; 8 >> 6
   * is 0, no tree correction); channels: 8 < nc x 512 threads x 8 x 8
   * ranks down to 1 */
  rs_nccl_choice_t ch = choose(&s, NULL, 8);
  assert_choice(ch, RS_NCCL_RING, RS_PROTO_LL, 1, 15.0 + 8 / 80571.43);
  assert_int_equal(ch.runner_algo, RS_NCCL_TREE);
  assert_int_equal(ch.runner_proto, RS_PROTO_LL);
  assert_near(ch.runner_time_us, 15.2 + 8 / 43578.95);
  /* 1 MiB: Ring/LL 15.0 + 1048576 / 80571.43 = 28.0142 beats NVLS 25 +
   * 1048576 / 272000 = 28.8551; 1048576 >= 24 x 512 x 64 = 786432: all 24
   * channels */
  ch = choose(&s, NULL, 1 << 20);
  assert_choice(ch, RS_NCCL_RING, RS_PROTO_LL, 24, 28.0142);
  assert_int_equal(ch.runner_algo, RS_NCCL_NVLS);
  assert_near(ch.runner_time_us, 28.8551);
  /* 256 KiB: Ring/LL 15 + 3.2535 = 18.2535; channels cut while 262144 <
   * nc x 32768: 8 */
  ch = choose(&s, NULL, 256 << 10);
  assert_choice(ch, RS_NCCL_RING, RS_PROTO_LL, 8, 15.0 + 262144 / 80571.43);
  /* 64 MiB: NVLS 25 + 67108864 / 272000 = 271.7238 on nvlsChannels 16;
   * Ring/Simple 56 + 67108864 / 205714.3 = 382.2236 next (one node: no
   * plateau) */
  ch = choose(&s, NULL, 64 << 20);
  assert_choice(ch, RS_NCCL_NVLS, RS_PROTO_SIMPLE, 16, 271.7238);
  assert_int_equal(ch.runner_algo, RS_NCCL_RING);
  assert_int_equal(ch.runner_proto, RS_PROTO_SIMPLE);
  assert_near(ch.runner_time_us, 382.2236);
}

/* 9. Two nodes: Tree at small sizes, NVLSTree from 2 MiB. algbw: Tree/LL
 * 16.575, Tree/LL128 124.78, NVLSTree 461.6 x 16/30 = 246.187. */
static void test_choice_two_nodes(void **state) {
  (void)state;
  rs_nccl_system_t s = system_of("dgx-h100,nodes=2");
  /* 8 B: Tree/LL 25.2 + 8 / 16575 = 25.2005, 1 channel (8 < 512 x 8);
   * Ring/LL's 40.0 next */
  rs_nccl_choice_t ch = choose(&s, NULL, 8);
  assert_choice(ch, RS_NCCL_TREE, RS_PROTO_LL, 1, 25.2005);
  assert_int_equal(ch.runner_algo, RS_NCCL_RING);
  assert_near(ch.runner_time_us, 40.0004);
  /* 1 MiB: Tree/LL128, correction log2(16384) = 14: x .6, 48.5 +
   * 1048576 / 74868 = 62.5057; 16 channels (1048576 >= 16 x 640 x 8) */
  ch = choose(&s, NULL, 1 << 20);
  assert_choice(ch, RS_NCCL_TREE, RS_PROTO_LL128, 16, 62.5057);
  /* 2 MiB: NVLSTree 66.8 + 2097152 / 246186.7 = 75.3185 beats Tree/LL128
   * 48.5 + 2097152 / 74868 (x .6 at log 15) = 76.5113 */
  ch = choose(&s, NULL, 2 << 20);
  assert_choice(ch, RS_NCCL_NVLSTREE, RS_PROTO_SIMPLE, 16, 75.3185);
  assert_int_equal(ch.runner_algo, RS_NCCL_TREE);
  assert_int_equal(ch.runner_proto, RS_PROTO_LL128);
  assert_near(ch.runner_time_us, 76.5113);
  /* 64 MiB: NVLSTree 66.8 + 67108864 / 246186.7 = 339.3934; Ring/LL128
   * 75.2 + 67108864 / 156586.7 = 503.7733 next */
  ch = choose(&s, NULL, 64 << 20);
  assert_choice(ch, RS_NCCL_NVLSTREE, RS_PROTO_SIMPLE, 16, 339.3934);
  assert_int_equal(ch.runner_algo, RS_NCCL_RING);
  assert_near(ch.runner_time_us, 503.7733);
}

/* 10. Four nodes: Tree, NVLSTree, then Ring/Simple at the largest. */
static void test_choice_four_nodes(void **state) {
  (void)state;
  rs_nccl_system_t s = system_of("dgx-h100,nodes=4");
  /* 8 B: Tree/LL 35.2 + 8 / 8670 = 35.2009 */
  rs_nccl_choice_t ch = choose(&s, NULL, 8);
  assert_choice(ch, RS_NCCL_TREE, RS_PROTO_LL, 1, 35.2009);
  /* 1 MiB: Tree/LL128 65.5 + 1048576 / (98600 x .6) = 83.2244 */
  ch = choose(&s, NULL, 1 << 20);
  assert_choice(ch, RS_NCCL_TREE, RS_PROTO_LL128, 16, 83.2244);
  /* 64 MiB: NVLSTree, algbw 364 x 32/62 = 187.871: 108.6 + 67108864 /
   * 187871 = 465.8072 */
  ch = choose(&s, NULL, 64 << 20);
  assert_choice(ch, RS_NCCL_NVLSTREE, RS_PROTO_SIMPLE, 16, 465.8072);
  /* 8 GiB: Ring/Simple, plateau (8 GiB / (16 x 32) >= 64) 282.8 x 1.4 =
   * 395.92, + 8589934592 / 198193.5 = 43737.06; NVLSTree 108.6 +
   * 45722.52 = 45831.12 next */
  ch = choose(&s, NULL, UINT64_C(8) << 30);
  assert_choice(ch, RS_NCCL_RING, RS_PROTO_SIMPLE, 16, 43737.0613);
  assert_int_equal(ch.runner_algo, RS_NCCL_NVLSTREE);
  assert_near(ch.runner_time_us, 45831.1227);
}

/* 11. The ring plateau reads the execution channels: on two nodes, 16
 * channels x 16 ranks = 256, so 16384 bytes (64 each) take Ring/Simple's
 * latency x 1.4 and 16383 do not; with NCCL_MAX_NCHANNELS=8, 16383 / 128
 * = 127 >= 64 does. */
static void test_ring_plateau(void **state) {
  (void)state;
  rs_nccl_system_t s = system_of("dgx-h100,nodes=2");
  const rs_nccl_force_t ring_simple = {1u << RS_NCCL_RING,
                                       1u << RS_PROTO_SIMPLE, 0, 0};
  /* 131.6 x 1.4 = 184.24, + 16384 / 204800 = 0.08 */
  rs_nccl_choice_t ch = choose(&s, &ring_simple, 16384);
  assert_near(ch.time_us, 184.24 + 0.08);
  /* 131.6 + 16383 / 204800 */
  ch = choose(&s, &ring_simple, 16383);
  assert_near(ch.time_us, 131.6 + 16383 / 204800.0);
  const rs_nccl_force_t eight = {1u << RS_NCCL_RING, 1u << RS_PROTO_SIMPLE, 0,
                                 8};
  ch = choose(&s, &eight, 16383);
  assert_near(ch.time_us, 184.24 + 16383 / 204800.0);
  /* rs_nccl_time_us reads NCCL's own 16 */
  table_t c;
  rs_nccl_tune(&s, c);
  assert_near(rs_nccl_time_us(&s, (const rs_nccl_cost_t(*)[RS_PROTOS])c,
                              RS_NCCL_RING, RS_PROTO_SIMPLE, 16384),
              184.32);
  /* one node: no plateau at any size */
  rs_nccl_system_t one = system_of("dgx-h100");
  rs_nccl_tune(&one, c);
  assert_near(rs_nccl_time_us(&one, (const rs_nccl_cost_t(*)[RS_PROTOS])c,
                              RS_NCCL_RING, RS_PROTO_SIMPLE, 1 << 30),
              56.0 + 1073741824 / 205714.29);
}

/* 12. Forcing, as NCCL_ALGO / NCCL_PROTO / NCCL_MIN,MAX_NCHANNELS. */
static void test_forcing(void **state) {
  (void)state;
  rs_nccl_system_t s = system_of("dgx-h100");
  /* ring only at 64 MiB: Ring/Simple 382.2236 on 24 channels; runner
   * Ring/LL128 40.6 + 67108864 / 189257.1 = 395.1898 */
  rs_nccl_force_t ring = {1u << RS_NCCL_RING, 0, 0, 0};
  rs_nccl_choice_t ch = choose(&s, &ring, 64 << 20);
  assert_choice(ch, RS_NCCL_RING, RS_PROTO_SIMPLE, 24, 382.2236);
  assert_int_equal(ch.runner_algo, RS_NCCL_RING);
  assert_int_equal(ch.runner_proto, RS_PROTO_LL128);
  assert_near(ch.runner_time_us, 40.6 + 67108864 / 189257.14);
  /* NCCL_MAX_NCHANNELS=4: 4; NCCL_MIN_NCHANNELS=32: 32 (64 MiB >= 32 x
   * 512 x 64); 100: MAXCHANNELS 64 */
  ring.max_channels = 4;
  assert_int_equal(choose(&s, &ring, 64 << 20).channels, 4);
  ring.max_channels = 0;
  ring.min_channels = 32;
  assert_int_equal(choose(&s, &ring, 64 << 20).channels, 32);
  ring.min_channels = 100;
  assert_int_equal(choose(&s, &ring, 64 << 20).channels, 64);
  /* NVLS keeps its 16 (nvls.cc clamps nvlsChannels by the CTAs only) */
  const rs_nccl_force_t max4 = {0, 0, 0, 4};
  ch = choose(&s, &max4, 64 << 20);
  assert_int_equal(ch.algo, RS_NCCL_NVLS);
  assert_int_equal(ch.channels, 16);
  /* one protocol: LL at 64 MiB is Ring/LL, 15 + 67108864 / 80571.43 */
  const rs_nccl_force_t ll = {0, 1u << RS_PROTO_LL, 0, 0};
  ch = choose(&s, &ll, 64 << 20);
  assert_choice(ch, RS_NCCL_RING, RS_PROTO_LL, 24, 15.0 + 67108864 / 80571.43);
  /* ring only: no runner-up of another algorithm is invented */
  const rs_nccl_force_t ring_ll = {1u << RS_NCCL_RING, 1u << RS_PROTO_LL, 0, 0};
  ch = choose(&s, &ring_ll, 8);
  assert_near(ch.runner_time_us, -1.0);

  /* refused: nothing left to run */
  static const struct {
    const char *spec;
    unsigned algos, protos;
    const char *says;
  } bad[] = {
      {"dgx-a100", 1u << RS_NCCL_NVLS, 0, "switch=nvls"},
      {"pcie,cc=80", 1u << RS_NCCL_NVLS, 0, "switch=nvls"},
      {"dgx-h100", 1u << RS_NCCL_NVLSTREE, 0, "across nodes only"},
      {"dgx-h100,nodes=2", 1u << RS_NCCL_NVLS, 0, "CollNet"},
      {"dgx-h100", 1u << RS_NCCL_NVLS, 1u << RS_PROTO_LL, "Simple only"},
      {"pcie,cc=80", 1u << RS_NCCL_RING, 1u << RS_PROTO_LL128,
       "LL128 needs NVLink"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    rs_nccl_system_t m = system_of(bad[i].spec);
    const rs_nccl_force_t f = {bad[i].algos, bad[i].protos, 0, 0};
    char err[RS_ERRMSG_MAX] = "";
    assert_int_equal(rs_nccl_choose(&m, &f, 1 << 20, &ch, err), RS_EINVAL);
    if (!strstr(err, bad[i].says))
      fail_msg("%s: said \"%s\", not \"%s\"", bad[i].spec, err, bad[i].says);
    assert_non_null(strstr(err, "NCCL_ALGO="));
    assert_null(strchr(err, '\n'));
  }
  /* pcie without cc= does not even make a system */
  rs_topo_t t;
  char err[RS_ERRMSG_MAX];
  assert_int_equal(rs_topo_parse("pcie", &t, err), RS_OK);
  assert_int_equal(rs_nccl_system_of(&t, &s, err), RS_EINVAL);
  /* and a mask with no algorithm of NCCL's, a negative count */
  s = system_of("dgx-h100");
  const rs_nccl_force_t odd = {1u << RS_NCCL_ALGOS, 0, 0, 0};
  assert_int_equal(rs_nccl_choose(&s, &odd, 8, &ch, err), RS_EINVAL);
  const rs_nccl_force_t negative = {0, 0, -1, 0};
  assert_int_equal(rs_nccl_choose(&s, &negative, 8, &ch, err), RS_EINVAL);
}

/* 13. Execution channels (connect.cc ncclTopoPostset: the search channels
 * twice; nvls.cc: 16 on SM90). */
static void test_execution_channels(void **state) {
  (void)state;
  /* H100, one node: 12 search channels, 24 */
  rs_nccl_system_t s = system_of("dgx-h100");
  assert_int_equal(rs_nccl_channels(&s, RS_NCCL_RING), 24);
  assert_int_equal(rs_nccl_channels(&s, RS_NCCL_TREE), 24);
  assert_int_equal(rs_nccl_channels(&s, RS_NCCL_NVLS), 16);
  /* two and four nodes: 8, so 16 (the extra doubling needs fewer than
   * 16); NVLSTree 16 */
  s = system_of("dgx-h100,nodes=2");
  assert_int_equal(rs_nccl_channels(&s, RS_NCCL_RING), 16);
  assert_int_equal(rs_nccl_channels(&s, RS_NCCL_NVLSTREE), 16);
  s = system_of("dgx-h100,nodes=4");
  assert_int_equal(rs_nccl_channels(&s, RS_NCCL_RING), 16);
  /* A100, one node: maxBw = totalBw = 240, speed 40 fits 6 (6 x 40 = 240
   * >= totalBw: done), duplicated (cc 80) to 12 x 20: 24, as a DGX A100's
   * log shows "Channel 23/24" (nccl-tests#100); no NVLS */
  s = system_of("dgx-a100");
  assert_int_equal(rs_nccl_channels(&s, RS_NCCL_RING), 24);
  assert_int_equal(rs_nccl_channels(&s, RS_NCCL_NVLS), 0);
  table_t c;
  rs_nccl_tune(&s, c);
  assert_int_equal(c[RS_NCCL_RING][RS_PROTO_SIMPLE].search_channels, 12);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].channel_gbs, 20.0);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].busbw_gbs, 240.0);
  assert_int_equal(c[RS_NCCL_NVLS][RS_PROTO_SIMPLE].available, 0);
  /* two DGX A100 (8 x 200G): maxBw min(24, 25) = 24; pre-Hopper inter
   * speeds 48, 30, 28, 24: 8 channels at 24 (one per NIC), 192, NVIDIA's
   * measured 192 GB/s (nccl#812); not duplicated (24 < 25): 16 */
  s = system_of("dgx-a100,nodes=2");
  rs_nccl_tune(&s, c);
  assert_int_equal(c[RS_NCCL_RING][RS_PROTO_SIMPLE].search_channels, 8);
  assert_near(c[RS_NCCL_RING][RS_PROTO_SIMPLE].busbw_gbs, 192.0);
  assert_int_equal(rs_nccl_channels(&s, RS_NCCL_RING), 16);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wire_bytes_odd_sizes),
      cmocka_unit_test(test_names),
      cmocka_unit_test(test_system_of_topologies),
      cmocka_unit_test(test_topo_items),
      cmocka_unit_test(test_h100_one_node_table),
      cmocka_unit_test(test_h100_two_nodes_table),
      cmocka_unit_test(test_h100_four_nodes_table),
      cmocka_unit_test(test_choice_one_node),
      cmocka_unit_test(test_choice_two_nodes),
      cmocka_unit_test(test_choice_four_nodes),
      cmocka_unit_test(test_ring_plateau),
      cmocka_unit_test(test_forcing),
      cmocka_unit_test(test_execution_channels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
