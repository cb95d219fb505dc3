/* test_topo.c - topologies (--topo): the grammar, its presets and its
 * refusals, and contention computed by hand: the transfers of one step
 * share the ports and NICs they cross (net/topo.h). */
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
  assert_int_equal(t.intra.bandwidth, 450000000000ull);
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
      {"dgx-a100", "unknown item 'dgx-a100'"},
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

/* The paces of n transfers src[i] -> dst[i] that cross together. */
static void paces(const rs_topo_t *t, int n, const int *src, const int *dst,
                  uint64_t *pace) {
  uint32_t count[64] = {0};
  assert_true(rs__topo_resources(t) <= 64);
  rs__topo_count(t, n, src, dst, count, 1);
  for (int i = 0; i < n; i++)
    pace[i] = rs__topo_pace(t, src[i], dst[i], count, NULL);
  rs__topo_count(t, n, src, dst, count, 0);
  for (int r = 0; r < 64; r++)
    assert_int_equal(count[r], 0);
}

/* 2 nodes of 4 GPUs, ports of 100 GB/s, NICs of 25 GB/s. */
static rs_topo_t two_by_four(int nics) {
  char spec[128];
  snprintf(spec, sizeof spec,
           "nodes=2,gpus=4,nics=%d,intra=1us/100GB/s,nic=5us/25GB/s", nics);
  return parsed(spec);
}

static void test_paths(void **state) {
  (void)state;
  rs_topo_t t = two_by_four(2);
  uint32_t res[4];
  /* within node 0: 1's port out (1), 2's port in (8 + 2) */
  assert_int_equal(rs__topo_path(&t, 1, 2, res), 2);
  assert_int_equal(res[0], 1);
  assert_int_equal(res[1], 10);
  /* 3 (node 0, GPU 3: NIC 1) -> 6 (node 1, GPU 2: NIC 0): port out 3,
   * node 0's NIC 1 sends (16 + 0*2 + 1), node 1's NIC 0 receives
   * (16 + 4 + 1*2 + 0), 6's port in (8 + 6) */
  assert_int_equal(rs__topo_path(&t, 3, 6, res), 4);
  assert_int_equal(res[0], 3);
  assert_int_equal(res[1], 17);
  assert_int_equal(res[2], 22);
  assert_int_equal(res[3], 14);
  assert_int_equal(rs__topo_resources(&t), 24);
  assert_ptr_equal(rs__topo_class(&t, 3, 6), &t.nic);
  assert_ptr_equal(rs__topo_class(&t, 4, 6), &t.intra);
}

/* rhd's longest exchange on 2 x 4 with one NIC per node (the worked
 * example of docs/algorithms.md): every worker r sends to r xor 4, on the
 * other node; node 0's one NIC sends 4 transfers at once and receives 4,
 * so each goes at 25 GB/s / 4 = 6.25 GB/s (its ports, 100 GB/s for one
 * transfer each, are not the limit). With 4 NICs per node each NIC
 * carries one: 25 GB/s. */
static void test_rhd_step(void **state) {
  (void)state;
  int src[8], dst[8];
  uint64_t pace[8];
  for (int r = 0; r < 8; r++) {
    src[r] = r;
    dst[r] = r ^ 4;
  }
  rs_topo_t one = two_by_four(1), four = two_by_four(4);
  paces(&one, 8, src, dst, pace);
  for (int r = 0; r < 8; r++)
    assert_int_equal(pace[r], 6250000000ull);
  paces(&four, 8, src, dst, pace);
  for (int r = 0; r < 8; r++)
    assert_int_equal(pace[r], 25000000000ull);
  /* its nearest exchange, r xor 1, stays in the node: ports alone */
  for (int r = 0; r < 8; r++)
    dst[r] = r ^ 1;
  paces(&one, 8, src, dst, pace);
  for (int r = 0; r < 8; r++)
    assert_int_equal(pace[r], 100000000000ull);
}

/* The ring on 2 x 4, r -> r + 1: 3 -> 4 and 7 -> 0 cross the nodes, one
 * per NIC side, at the NIC's 25 GB/s; the six others at the port's
 * 100 GB/s; the same with 4 NICs (3 -> 4 leaves on NIC 3, arrives on
 * NIC 0). rd's exchange r xor 2 stays in the node. */
static void test_ring_and_rd(void **state) {
  (void)state;
  int src[8], dst[8];
  uint64_t pace[8];
  for (int r = 0; r < 8; r++) {
    src[r] = r;
    dst[r] = (r + 1) % 8;
  }
  for (int nics = 1; nics <= 4; nics *= 4) {
    rs_topo_t t = two_by_four(nics);
    paces(&t, 8, src, dst, pace);
    for (int r = 0; r < 8; r++)
      assert_int_equal(pace[r],
                       r == 3 || r == 7 ? 25000000000ull : 100000000000ull);
  }
  /* rd, the step to r xor 2 */
  for (int r = 0; r < 8; r++)
    dst[r] = r ^ 2;
  rs_topo_t t = two_by_four(1);
  paces(&t, 8, src, dst, pace);
  for (int r = 0; r < 8; r++)
    assert_int_equal(pace[r], 100000000000ull);
  /* a port shared: 0, 1 and 2 all send to 3 (a gather's root): its port
   * in carries 3, 100/3 GB/s each */
  int gsrc[3] = {0, 1, 2}, gdst[3] = {3, 3, 3};
  paces(&t, 3, gsrc, gdst, pace);
  for (int i = 0; i < 3; i++)
    assert_int_equal(pace[i], 33333333333ull);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_grammar),     cmocka_unit_test(test_refused),
      cmocka_unit_test(test_paths),       cmocka_unit_test(test_rhd_step),
      cmocka_unit_test(test_ring_and_rd),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
