/* test_topo.c - topologies (--topo): the grammar, its presets and its
 * refusals, and contention computed by hand: the GPUs that cross a NIC
 * side in one step share its bandwidth (net/topo.h). */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "net/topo.h"
#include "ringsim/ringsim.h"

static rs_topo_t parsed(const char *spec) {
  rs_topo_t t;
  char err[RS_ERRMSG_MAX];
  if (rs_topo_parse(spec, &t, err))
    fail_msg("%s: %s", spec, err);
  return t;
}

static void test_grammar(void **state) {
  (void)state;
  rs_topo_t t =
      parsed("nodes=2,gpus=4,nics=1,intra=1us/100GB/s,nic=5us/25GB/s");
  assert_int_equal(t.enabled, 1);
  assert_int_equal(t.nodes, 2);
  assert_int_equal(t.gpus, 4);
  assert_int_equal(t.nics, 1);
  assert_int_equal(t.intra.latency_ns, 1000);
  assert_int_equal(t.intra.bandwidth, 100000000000ull);
  assert_int_equal(t.nic.latency_ns, 5000);
  assert_int_equal(t.nic.bandwidth, 25000000000ull);
  /* a preset, and a preset overridden */
  t = parsed("dgx-h100");
  assert_int_equal(t.nodes, 1);
  assert_int_equal(t.gpus, 8);
  assert_int_equal(t.nics, 8);
  assert_int_equal(t.intra.bandwidth, 370800000000ull); /* NCCL's 18 x 20.6 */
  assert_int_equal(t.nic.bandwidth, 50000000000ull); /* 400 Gb/s */
  assert_int_equal(t.intra.latency_ns, 600);
  assert_int_equal(t.nic.latency_ns, 2700);
  t = parsed("dgx-h100,nodes=64,nics=2");
  assert_int_equal(t.nodes, 64);
  assert_int_equal(t.nics, 2);
  assert_int_equal(t.gpus, 8);
  t = parsed("pcie,nodes=2,nic=5us/200Gbps");
  assert_int_equal(t.nics, 1);
  assert_int_equal(t.nic.bandwidth, 25000000000ull);
  /* nics defaults to 1, nodes to 1 */
  t = parsed("gpus=2,intra=1us/10GB/s,nic=1us/1GB/s");
  assert_int_equal(t.nodes, 1);
  assert_int_equal(t.nics, 1);
}

static void test_refused(void **state) {
  (void)state;
  static const struct {
    const char *spec;
    const char *says;
  } bad[] = {
      {"dgx-b200", "unknown item 'dgx-b200'"},
      {"dgx-h100,speed=3", "unknown item 'speed=3'"},
      {"dgx-h100,gpus=0", "'gpus=0': expected gpus=a number of GPUs"},
      {"dgx-h100,nodes=-2", "'nodes=-2': expected nodes="},
      {"dgx-h100,nodes=2x", "'nodes=2x'"},
      {"dgx-h100,nics=9", "nics=9 is more NICs than the node's 8 GPUs"},
      {"dgx-h100,nic=5us/0GB/s", "'nic=5us/0GB/s': expected nic=LATENCY"},
      {"dgx-h100,nic=5us/-1GB/s", "'nic=5us/-1GB/s'"},
      {"dgx-h100,intra=1us/450", "'intra=1us/450': expected intra="},
      {"dgx-h100,intra=450GB/s", "'intra=450GB/s'"},
      {"dgx-h100,,nodes=2", "an empty item"},
      {"dgx-h100,", "an empty item"},
      {"", "an empty item"},
      {"nodes=2,gpus=4", "give intra= and nic="},
      {"nodes=2,dgx-h100", "unknown item 'dgx-h100'"},
      {"dgx-h100,nodes", "'nodes': expected nodes="},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    rs_topo_t t = {0};
    char err[RS_ERRMSG_MAX] = "";
    if (rs_topo_parse(bad[i].spec, &t, err) != RS_EINVAL)
      fail_msg("'%s' was taken", bad[i].spec);
    if (!strstr(err, bad[i].says))
      fail_msg("'%s': said \"%s\", not \"%s\"", bad[i].spec, err, bad[i].says);
    assert_null(strchr(err, '\n'));
    assert_int_equal(t.enabled, 0); /* untouched */
  }
  /* W must be N x G, and the message names both */
  rs_topo_t t = parsed("dgx-h100,nodes=2");
  char err[RS_ERRMSG_MAX];
  assert_int_equal(rs_topo_check(&t, 16, err), RS_OK);
  assert_int_equal(rs_topo_check(&t, 12, err), RS_EINVAL);
  assert_non_null(strstr(err, "2 nodes of 8 GPUs are 16 workers, and "
                              "--workers is 12"));
}

/* The hand-made schedule the cases below read, one pattern a step, on
 * 2 nodes of 4 GPUs (workers 0-3 on node 0, 4-7 on node 1):
 *   0: r -> r xor 4 (rhd's longest exchange, every transfer between nodes)
 *   1: r -> r xor 1 (its nearest, within the node)
 *   2: r -> r + 1 (the ring: 3 -> 4 and 7 -> 0 cross)
 *   3: r -> r xor 2 (rd's step at distance 2, within the node)
 *   4: 4, 5 and 6 -> 3 (a gather across the nodes)
 *   5: 0 -> 4, 0 -> 5 and 1 -> 4 (a GPU with two peers counts once)
 *   6: the same as step 0 */
static int hand_sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  assert_int_equal(shape.workers, 8);
  assert_int_equal(shape.gpus, 4);
  assert_true(max >= RS_TOPO_MAX_SENDS);
  switch (step) {
  case 0:
  case 6:
    dst[0] = rank ^ 4;
    return 1;
  case 1:
    dst[0] = rank ^ 1;
    return 1;
  case 2:
    dst[0] = (rank + 1) % 8;
    return 1;
  case 3:
    dst[0] = rank ^ 2;
    return 1;
  case 4:
    return rank >= 4 && rank <= 6 ? (dst[0] = 3, 1) : 0;
  default:
    if (rank == 0) {
      dst[0] = 4;
      dst[1] = 5;
      return 2;
    }
    return rank == 1 ? (dst[0] = 4, 1) : 0;
  }
}

/* 2 nodes of 4 GPUs, ports of 100 GB/s, NICs of 25 GB/s. */
static rs_topo_t two_by_four(int nics) {
  char spec[128];
  snprintf(spec, sizeof spec,
           "nodes=2,gpus=4,nics=%d,intra=1us/100GB/s,nic=5us/25GB/s", nics);
  return parsed(spec);
}

/* The pace of src -> dst in step, in B/s: a million bytes over their
 * time on the wire (within a node the port's rate; between nodes
 * rs__topo_wire_ns's, exact, rounded down here to a whole B/s). */
static uint64_t pace(const rs_topo_load_t *l, int src, int dst, int step) {
  const uint32_t n = rs__topo_sharing(l, src, dst, step);
  const uint64_t wire =
      n ? rs__topo_wire_ns(&l->topo, n, 1000000)
        : (1000000ull * 1000000000ull + l->topo.intra.bandwidth - 1) /
              l->topo.intra.bandwidth;
  return 1000000ull * 1000000000ull / wire;
}

static void test_nodes_and_nics(void **state) {
  (void)state;
  rs_topo_t t = two_by_four(2);
  /* GPU g on NIC floor(g K / G) (NCCL's placement: NIC k next to GPUs
   * 2k and 2k+1 here). 3: node 0, GPU 3, NIC 1 of node 0 (NIC 1 of 4);
   * 6: node 1, GPU 2, NIC 1 of node 1 (NIC 3 of 4); 5: node 1, GPU 1,
   * NIC 0 of node 1 (NIC 2 of 4); 1: node 0, GPU 1, NIC 0 */
  assert_int_equal(rs__topo_node(&t, 3), 0);
  assert_int_equal(rs__topo_nic(&t, 3), 1);
  assert_int_equal(rs__topo_node(&t, 6), 1);
  assert_int_equal(rs__topo_nic(&t, 6), 3);
  assert_int_equal(rs__topo_nic(&t, 5), 2);
  assert_int_equal(rs__topo_nic(&t, 1), 0);
}

/* rhd's longest exchange on 2 x 4 with one NIC per node (the worked
 * example of docs/algorithms.md): every worker r sends to r xor 4, on the
 * other node; node 0's one NIC sends for 4 GPUs at once and receives for
 * 4, so n = 4 and each goes at 25 GB/s / 4 = 6.25 GB/s (below the port's
 * 100 GB/s). With 4 NICs per node each NIC side carries one GPU: n = 1,
 * min(100, 25) = 25 GB/s; with 2, n = 2: 12.5 GB/s. Its nearest
 * exchange, r xor 1, stays in the node: the port's 100 GB/s. */
static void test_rhd_step(void **state) {
  (void)state;
  static const uint64_t want[5] = {0, 6250000000ull, 12500000000ull, 0,
                                   25000000000ull};
  for (int nics = 1; nics <= 4; nics *= 2) {
    rs_topo_t t = two_by_four(nics);
    rs_topo_load_t l;
    assert_int_equal(rs__topo_load(&l, &t, 7, hand_sends), RS_OK);
    for (int r = 0; r < 8; r++) {
      assert_int_equal(rs__topo_sharing(&l, r, r ^ 4, 0), 4 / nics);
      assert_int_equal(pace(&l, r, r ^ 4, 0), want[nics]);
      assert_int_equal(pace(&l, r, r ^ 4, 6), want[nics]);
      assert_int_equal(rs__topo_sharing(&l, r, r ^ 1, 1), 0);
      assert_int_equal(pace(&l, r, r ^ 1, 1), 100000000000ull);
    }
    if (nics == t.gpus) {
      /* a NIC for every GPU: nothing to count, every share 1 */
      assert_int_equal(l.steps, 0);
      assert_int_equal(l.patterns, 0);
    } else {
      /* steps 0 and 6 are one pattern; 1 and 3 cross nothing, as one */
      assert_int_equal(l.pattern[0], l.pattern[6]);
      assert_int_equal(l.pattern[1], l.pattern[3]);
      assert_int_equal(l.patterns, 5);
    }
    rs__topo_unload(&l);
  }
}

/* The ring on 2 x 4, r -> r + 1: 3 -> 4 and 7 -> 0 cross the nodes, one
 * GPU on each NIC side, at min(port, NIC) = 25 GB/s; the six others at
 * the port's 100 GB/s; the same with 4 NICs (3 -> 4 leaves on NIC 3,
 * arrives on NIC 0). rd's exchange r xor 2 stays in the node. */
static void test_ring_and_rd(void **state) {
  (void)state;
  for (int nics = 1; nics <= 4; nics *= 4) {
    rs_topo_t t = two_by_four(nics);
    rs_topo_load_t l;
    assert_int_equal(rs__topo_load(&l, &t, 7, hand_sends), RS_OK);
    for (int r = 0; r < 8; r++) {
      assert_int_equal(pace(&l, r, (r + 1) % 8, 2),
                       r == 3 || r == 7 ? 25000000000ull : 100000000000ull);
      assert_int_equal(pace(&l, r, r ^ 2, 3), 100000000000ull);
    }
    rs__topo_unload(&l);
  }
}

/* Each GPU counts once per step on a NIC side. The gather 4, 5, 6 -> 3
 * with one NIC: node 1's NIC sends for three GPUs (n = 3: 25/3 GB/s),
 * though node 0's receives for one (3's port serializes the three, which
 * the clocks do, not the count); with 4 NICs, 4, 5 and 6 leave on NICs 0,
 * 1, 2 and arrive on NIC 3: n = 1, 25 GB/s. Step 5: 0 sends to 4 and 5,
 * 1 to 4; with one NIC node 0's sends for 2 GPUs (0 once), node 1's
 * receives for 2 (4 once): 12.5 GB/s each. */
static void test_each_gpu_once(void **state) {
  (void)state;
  rs_topo_t one = two_by_four(1), four = two_by_four(4);
  rs_topo_load_t l;
  assert_int_equal(rs__topo_load(&l, &one, 7, hand_sends), RS_OK);
  for (int r = 4; r < 7; r++)
    assert_int_equal(pace(&l, r, 3, 4), 8333333333ull);
  assert_int_equal(pace(&l, 0, 4, 5), 12500000000ull);
  assert_int_equal(pace(&l, 0, 5, 5), 12500000000ull);
  assert_int_equal(pace(&l, 1, 4, 5), 12500000000ull);
  rs__topo_unload(&l);
  assert_int_equal(rs__topo_load(&l, &four, 7, hand_sends), RS_OK);
  for (int r = 4; r < 7; r++)
    assert_int_equal(pace(&l, r, 3, 4), 25000000000ull);
  /* 0 (NIC 0) and 1 (NIC 1) send; 4 (NIC 0) and 5 (NIC 1) receive */
  assert_int_equal(pace(&l, 0, 4, 5), 25000000000ull);
  /* a step the schedule does not have: no one else counted */
  assert_int_equal(rs__topo_sharing(&l, 0, 4, 9), 1);
  rs__topo_unload(&l);
}

/* A ring's steps are one pattern, however many: its load holds one list,
 * of 2 entries per node boundary, for 512 nodes of 8 GPUs (4096
 * workers, 8190 steps). A slow NIC's share is exact, however small. */
static int ring_sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  (void)step, (void)max;
  dst[0] = (rank + 1) % shape.workers;
  return 1;
}

static void test_ring_load_is_small(void **state) {
  (void)state;
  rs_topo_t t = parsed("nodes=512,gpus=8,nics=1,intra=1us/100GB/s,nic=1us/"
                       "1B/s");
  rs_topo_load_t l;
  assert_int_equal(rs__topo_load(&l, &t, 2 * 4095, ring_sends), RS_OK);
  assert_int_equal(l.patterns, 1);
  assert_int_equal(l.first[1], 2 * 512);
  assert_int_equal(pace(&l, 7, 8, 100), 1);
  /* shared by 4, 3 B/s is 0.75 B/s: 4 bytes take 5.33 s, not 4 */
  rs_topo_t slow = parsed("nodes=2,gpus=4,nics=1,intra=1us/100GB/s,nic=1us/"
                          "3B/s");
  assert_int_equal(rs__topo_wire_ns(&slow, 4, 4), 5333333334ull);
  assert_int_equal(rs__topo_wire_ns(&slow, 1, 4), 1333333334ull);
  rs__topo_unload(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grammar),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_nodes_and_nics),
      cmocka_unit_test(test_rhd_step),
      cmocka_unit_test(test_ring_and_rd),
      cmocka_unit_test(test_each_gpu_once),
      cmocka_unit_test(test_ring_load_is_small),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
