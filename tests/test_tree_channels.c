/* test_tree_channels.c - NCCL's double binary tree on NCCL's channels
 * (algo/tree.h, "on NCCL's channels"): each channel's chain head and
 * tree, as NCCL lays them out (a channel per NIC, rail-aligned across the
 * nodes, the two trees split between the channels); the data moved for
 * real along each channel's tree and checked (sum and avg); the threaded
 * run and the schedule simulation to the nanosecond; one channel the
 * pair of trees as it was. */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "algo/channels.h"
#include "algo/list.h"
#include "algo/nccl.h"
#include "algo/tree.h"
#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

/* A run's simulated time: the tree on net's channels over W workers, one
 * bucket of elems f32 elements of exact inputs, op op (the run checks
 * every worker's result against the direct result: status RS_OK). */
static uint64_t threaded(const rs_netmodel_t *net, int W, size_t elems,
                         size_t segment_bytes, rs_op_t op) {
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.algo = RS_ALGO_TREE;
  cfg.op = op;
  cfg.segment_bytes = segment_bytes;
  cfg.bucket_bytes = 0; /* one bucket */
  cfg.net = *net;
  return run_sim_ns(&cfg, W, net->channels, elems);
}

static uint64_t simulated(const rs_netmodel_t *net, int W, size_t elems,
                          size_t segment_bytes) {
  rs_bucket_t bucket = {.elem_offset = 0, .elems = elems, .params = 1};
  return rs_netmodel_simulate_algo(RS_ALGO_TREE, net, W, &bucket, 1,
                                   segment_bytes, 4);
}

/* The shape of a topology's workers on C channels, with their rings
 * (r: the caller frees them). */
static rs_shape_t shape_of(rs_netmodel_t *net, int C, rs_rings_t *r) {
  net->channels = C;
  const int W = net->topo.nodes * net->topo.gpus;
  assert_int_equal(rs__rings_make(r, net, W, 4), RS_OK);
  rs_shape_t shape = rs__shape_of(net, W);
  shape.rings = r;
  return shape;
}

/* (1) The layout, as NCCL's connect.cc and search.cc give it on two DGX
 * H100 nodes (8 NICs) on 4 channels: channel c's chain starts at GPU c
 * (NIC c's) in every node and goes up by index, c, c+1, ..., c-1; the
 * node's head links to the other node's GPU c alone (rail-aligned: its
 * NIC c); channels 0 and 1 run tree 0 (rooted at node 0), 2 and 3 tree 1
 * (rooted at node 1). */
static void test_layout_two_nodes(void **state) {
  (void)state;
  rs_netmodel_t net = topo_of("dgx-h100,nodes=2", NULL);
  rs_rings_t r;
  const rs_shape_t sh = shape_of(&net, 4, &r);
  for (int c = 0; c < 4; c++) {
    const int t = rs_nccl_tree_of(c, 4);
    assert_int_equal(t, c >= 2);
    assert_int_equal(rs__tree_ch_head(sh, c), c);
    assert_int_equal(rs__tree_ch_root(sh, c, t), t == 0 ? c : 8 + c);
    for (int n = 0; n < 2; n++)
      for (int i = 1; i < 8; i++) { /* the chain: up by index from c */
        const int x = n * 8 + (c + i) % 8, up = n * 8 + (c + i - 1) % 8;
        assert_int_equal(rs__tree_ch_parent(sh, c, t, x), up);
      }
    /* across: head to head, on GPU c's rail */
    assert_int_equal(rs__tree_ch_parent(sh, c, t, t == 0 ? 8 + c : c),
                     t == 0 ? c : 8 + c);
    int kids[RS_TREE_MAX_CHILDREN] = {-1, -1, -1};
    const int root = rs__tree_ch_root(sh, c, t);
    assert_int_equal(rs__tree_ch_children(sh, c, t, root, kids), 2);
    assert_int_equal(kids[0], root + 1 - (root % 8 == 7 ? 8 : 0));
    assert_int_equal(kids[1], t == 0 ? 8 + c : c);
    /* a chain's tail holds its positions' contributions, counted round
     * the channel's order: GPU c+6's message up holds c+6 and c+7 */
    int first, count;
    rs__tree_ch_contributors(sh, c, t, (c + 6) % 8, &first, &count);
    assert_int_equal(first, (c + 6) % 8);
    assert_int_equal(count, 2);
    assert_int_equal(rs__tree_ch_worker(sh, c, rs__tree_ch_pos(sh, c, 5)), 5);
  }
  rs__rings_free(&r);
}

/* (2) Five DGX H100 nodes of 4 NICs (the validation's) on 16 channels:
 * the heads are the NICs' first GPUs, 0 2 4 6, four channels each, two
 * of tree 0 and two of tree 1; every link between nodes joins two GPUs
 * of one local index (one NIC each side); in each tree every node has a
 * parent or a child across. */
static void test_layout_five_nodes(void **state) {
  (void)state;
  rs_netmodel_t net = topo_of("dgx-h100,nodes=5,nics=4", NULL);
  rs_rings_t r;
  const rs_shape_t sh = shape_of(&net, 16, &r);
  int per_head[8][2];
  memset(per_head, 0, sizeof per_head);
  for (int c = 0; c < 16; c++) {
    const int t = rs_nccl_tree_of(c, 16), h = rs__tree_ch_head(sh, c);
    assert_int_equal(t, c >= 8);
    assert_int_equal(h, 2 * (c % 4));
    per_head[h][t]++;
    for (int x = 0; x < 40; x++) {
      const int p = rs__tree_ch_parent(sh, c, t, x);
      if (p >= 0 && p / 8 != x / 8) {
        assert_int_equal(x % 8, h);
        assert_int_equal(p % 8, h);
      }
    }
  }
  for (int h = 0; h < 8; h++)
    for (int t = 0; t < 2; t++)
      assert_int_equal(per_head[h][t], h % 2 ? 0 : 2);
  rs__rings_free(&r);
}

/* (3) The threaded run (each channel's part moved for real along its own
 * tree, every worker's result checked, sum and avg) and the schedule
 * simulation agree to the nanosecond for 1, 2, 3, 4 and 8 channels, on
 * --net (with a straggler: it computes at each step's start on every
 * channel), on two DGX H100 nodes and on three of 4 NICs; on the nodes
 * channels are faster than one (each crosses through its own NIC). */
static void test_threaded_is_simulated(void **state) {
  (void)state;
  static const char *const where[] = {"--net", "dgx-h100,nodes=2",
                                      "dgx-h100,nodes=3,nics=4"};
  static const size_t sizes[] = {5000, 3 * 16 * 4096 + 7, 300001};
  static const size_t seg_bytes[] = {1 << 18, 8192};
  static const int channels[] = {1, 2, 3, 4, 8};
  for (size_t wi = 0; wi < 3; wi++)
    for (size_t si = 0; si < 3; si++)
      for (size_t gi = 0; gi < 2; gi++) {
        if ((RS_TEST_SANITIZED && si == 2) || (wi == 2 && gi == 1))
          continue;
        uint64_t one = 0;
        for (size_t ci = 0; ci < 5; ci++) {
          rs_netmodel_t net =
              wi ? topo_of(where[wi], NULL)
                 : net_of("latency=2us,bandwidth=20GB/s", "80GB/s");
          if (!wi) {
            char err[RS_ERRMSG_MAX];
            assert_int_equal(
                rs_netmodel_parse_straggler("worker=1,us=30", &net, err),
                RS_OK);
          }
          const int W = wi ? net.topo.nodes * net.topo.gpus : 6;
          net.channels = channels[ci];
          const rs_op_t op = ci % 2 ? RS_OP_SUM : RS_OP_AVG;
          const uint64_t t = threaded(&net, W, sizes[si], seg_bytes[gi], op);
          const uint64_t s = simulated(&net, W, sizes[si], seg_bytes[gi]);
          if (t == 0 || t != s)
            fail_msg("%s C=%d n=%zu seg=%zu: threaded %llu, model %llu",
                     where[wi], channels[ci], sizes[si], seg_bytes[gi],
                     (unsigned long long)t, (unsigned long long)s);
          if (wi && si == 2 && channels[ci] > 1 && !(t < one))
            fail_msg("%s C=%d n=%zu: %llu, not faster than one channel's "
                     "%llu",
                     where[wi], channels[ci], sizes[si], (unsigned long long)t,
                     (unsigned long long)one);
          if (channels[ci] == 1)
            one = t;
        }
      }
}

/* (4) Several buckets in a row (the bucket repeats of the simulation)
 * on channels: the same time as played bucket by bucket. */
static void test_buckets_are_exact(void **state) {
  (void)state;
  static const char *const specs[] = {"dgx-h100,nodes=4", "dgx-a100,nodes=3",
                                      "pcie,nodes=2"};
  for (size_t ti = 0; ti < 3; ti++)
    for (int C = 2; C <= 16; C *= 4) {
      rs_netmodel_t net = topo_of(specs[ti], NULL);
      net.channels = C;
      const int W = net.topo.nodes * net.topo.gpus;
      rs_bucket_t b[3] = {{.elems = 200003, .params = 1},
                          {.elems = 200003, .params = 1},
                          {.elems = 200003, .params = 1}};
      const rs_sim_job_t job = {rs__algo_get(RS_ALGO_TREE), &net, W, b, 3,
                                1 << 16, 4};
      const uint64_t fast = rs__algo_simulate(&job),
                     plain = rs__algo_simulate_plain(&job);
      if (fast != plain || fast == 0 || fast == UINT64_MAX)
        fail_msg("%s C=%d: with repeats %llu, played %llu", specs[ti], C,
                 (unsigned long long)fast, (unsigned long long)plain);
    }
}

/* (5) The split (tree.c's channels_split: each channel's reduce and
 * broadcast at once, NCCL's runTreeSplit) on buckets whose segments
 * cross an edge within a tick: the schedule simulation, whose runs of
 * like ticks are certified repeats and whose channels are images of one
 * another, to the nanosecond of the plain simulation, which plays every
 * tick of every channel; on 5 DGX H100 nodes of 4 NICs (the validation's,
 * 16 channels), 2 nodes and 6 workers on --net with a straggler, two
 * buckets in a row. */
static void test_split_repeats_are_exact(void **state) {
  (void)state;
  static const char *const specs[] = {"dgx-h100,nodes=5,nics=4",
                                      "dgx-h100,nodes=2", "--net"};
  static const int channels[] = {16, 4, 3};
  for (size_t ti = 0; ti < 3; ti++) {
    rs_netmodel_t net = ti < 2 ? topo_of(specs[ti], NULL)
                               : net_of("latency=2us,bandwidth=20GB/s", NULL);
    if (ti == 2) {
      char err[RS_ERRMSG_MAX];
      assert_int_equal(
          rs_netmodel_parse_straggler("worker=1,us=30", &net, err), RS_OK);
    }
    net.channels = channels[ti];
    const int W = ti < 2 ? net.topo.nodes * net.topo.gpus : 6;
    rs_bucket_t b[2] = {{.elems = (size_t)1 << 24, .params = 1},
                        {.elems = 3000001, .params = 1}};
    const rs_sim_job_t job = {rs__algo_get(RS_ALGO_TREE), &net, W, b, 2,
                              1 << 18, 4};
    const uint64_t fast = rs__algo_simulate(&job),
                   plain = rs__algo_simulate_plain(&job);
    if (fast != plain || fast == 0 || fast == UINT64_MAX)
      fail_msg("%s C=%d: with repeats %llu, played %llu", specs[ti],
               channels[ti], (unsigned long long)fast,
               (unsigned long long)plain);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_two_nodes),
      cmocka_unit_test(test_layout_five_nodes),
      cmocka_unit_test(test_threaded_is_simulated),
      cmocka_unit_test(test_buckets_are_exact),
      cmocka_unit_test(test_split_repeats_are_exact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
