/* test_tree.c - NCCL's double binary tree (algo/tree.h, algo/tree.c): the
 * trees' shape against NCCL's own guarantees and diagrams, the schedule's
 * arithmetic, and whole runs through the public API. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/list.h"
#include "algo/tree.h"
#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

enum { MAX_W = 64 };

/* Worker r's subtree in tree t, as a set (walking the children), into in[]
 * (in[x] = 1 for each descendant x, r included); returns its size. */
static int subtree(int W, int t, int r, int *in) {
  int children[2], size = 1;
  in[r] = 1;
  int n = rs__tree_children(W, t, r, children);
  for (int i = 0; i < n; i++)
    size += subtree(W, t, children[i], in);
  return size;
}

/* tree-1: for W = 1..MAX_W, each tree spans every rank exactly once from
 * its root, every node has at most 2 children, parent and child relations
 * agree, every parent is a rank of the tree, and walking up from any rank
 * reaches the root (no cycles). */
static void test_trees_span_all_ranks(void **state) {
  (void)state;
  for (int W = 1; W <= MAX_W; W++)
    for (int t = 0; t < 2; t++) {
      int seen[MAX_W] = {0};
      const int root = rs__tree_root(W, t);
      assert_int_equal(rs__tree_parent(W, t, root), -1);
      assert_int_equal(subtree(W, t, root, seen), W);
      for (int r = 0; r < W; r++) {
        if (!seen[r])
          fail_msg("W=%d tree %d: rank %d is not under the root %d", W, t, r,
                   root);
        int children[2];
        int n = rs__tree_children(W, t, r, children);
        assert_in_range(n, 0, 2);
        for (int i = 0; i < n; i++) {
          assert_in_range(children[i], 0, W - 1);
          if (rs__tree_parent(W, t, children[i]) != r)
            fail_msg("W=%d tree %d: %d lists child %d, whose parent is %d", W,
                     t, r, children[i], rs__tree_parent(W, t, children[i]));
        }
        int p = rs__tree_parent(W, t, r);
        if (r == root)
          continue;
        assert_in_range(p, 0, W - 1);
        int pc[2], found = 0;
        for (int i = 0; i < rs__tree_children(W, t, p, pc); i++)
          found |= pc[i] == r;
        if (!found)
          fail_msg("W=%d tree %d: %d's parent %d does not list it", W, t, r, p);
        int hops = 0; /* no cycles: the root within W hops */
        for (int x = r; x != root; x = rs__tree_parent(W, t, x))
          assert_true(++hops < W);
      }
    }
}

/* tree-2: the roots, as ncclGetDtree makes them: rank 0 for tree 0; for
 * tree 1, the rank playing btree rank 0: W-1 (mirror, W even) or 1 (shift,
 * W odd). Rank 0 has one child, the largest power of two below W. */
static void test_roots(void **state) {
  (void)state;
  for (int W = 2; W <= MAX_W; W++) {
    assert_int_equal(rs__tree_root(W, 0), 0);
    assert_int_equal(rs__tree_root(W, 1), W % 2 == 0 ? W - 1 : 1);
    int children[2], top = 1;
    while (top * 2 < W)
      top *= 2;
    assert_int_equal(rs__tree_children(W, 0, 0, children), 1);
    assert_int_equal(children[0], top);
  }
  assert_int_equal(rs__tree_root(1, 0), 0);
  assert_int_equal(rs__tree_root(1, 1), 0);
}

/* tree-3: what NCCL's double tree guarantees, exactly: for W >= 2 no rank
 * is a leaf in both trees. In tree 0 the leaves are the odd ranks. With W
 * even every rank is interior in exactly one tree; with W odd too, except
 * rank 0, which is interior in both (root of tree 0, and plays btree rank
 * W-1, even, in tree 1): the shift cannot make it otherwise. */
static void test_leaf_in_one_tree(void **state) {
  (void)state;
  for (int W = 2; W <= MAX_W; W++)
    for (int r = 0; r < W; r++) {
      int c[2];
      int interior0 = rs__tree_children(W, 0, r, c) > 0;
      int interior1 = rs__tree_children(W, 1, r, c) > 0;
      assert_int_equal(interior0, r % 2 == 0);
      if (!interior0 && !interior1)
        fail_msg("W=%d: rank %d is a leaf in both trees", W, r);
      int both = W % 2 == 1 && r == 0 && W > 1;
      if ((interior0 && interior1) != both)
        fail_msg("W=%d: rank %d interior in both trees: %d, expected %d", W, r,
                 interior0 && interior1, both);
    }
}

/* tree-4: tree 1 is tree 0 renamed: x -> W-1-x (W even) or x -> x+1 mod W
 * (W odd), parents and children (in order) alike. */
static void test_mirror_and_shift(void **state) {
  (void)state;
  for (int W = 2; W <= MAX_W; W++)
    for (int x = 0; x < W; x++) {
      const int r = W % 2 == 0 ? W - 1 - x : (x + 1) % W;
      const int p0 = rs__tree_parent(W, 0, x), p1 = rs__tree_parent(W, 1, r);
      assert_int_equal(p1, p0 < 0       ? -1
                           : W % 2 == 0 ? W - 1 - p0
                                        : (p0 + 1) % W);
      int c0[2], c1[2];
      int n = rs__tree_children(W, 0, x, c0);
      assert_int_equal(rs__tree_children(W, 1, r, c1), n);
      for (int i = 0; i < n; i++)
        assert_int_equal(c1[i], W % 2 == 0 ? W - 1 - c0[i] : (c0[i] + 1) % W);
    }
}

/* Parent of every rank, -1 at the root, for a hand-written tree. */
static void expect_parents(int W, int t, const int *parent) {
  for (int r = 0; r < W; r++)
    if (rs__tree_parent(W, t, r) != parent[r])
      fail_msg("W=%d tree %d: rank %d's parent is %d, NCCL's diagram says %d",
               W, t, r, rs__tree_parent(W, t, r), parent[r]);
}

/* tree-5: the diagrams in NCCL's src/graph/trees.cc (ncclGetBtree's 14-rank
 * tree; ncclGetDtree's mirrored 12-rank and shifted 13-rank pairs), written
 * out by hand as parent tables. */
static void test_nccl_diagrams(void **state) {
  (void)state;
  /* 0-8, 8-{4,12}, 4-{2,6}, 12-{10,13}, 2-{1,3}, 6-{5,7}, 10-{9,11} */
  const int w14[] = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12};
  expect_parents(14, 0, w14);
  /* 0-8, 8-{4,10}, 4-{2,6}, 10-{9,11}, 2-{1,3}, 6-{5,7} */
  const int w12_0[] = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 8, 10};
  /* 11-3, 3-{1,7}, 1-{0,2}, 7-{5,9}, 5-{4,6}, 9-{8,10} */
  const int w12_1[] = {1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1};
  expect_parents(12, 0, w12_0);
  expect_parents(12, 1, w12_1);
  /* 0-8, 8-{4,12}, 4-{2,6}, 12-10, 2-{1,3}, 6-{5,7}, 10-{9,11} */
  const int w13_0[] = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8};
  /* 1-9, 9-{5,0}, 5-{3,7}, 0-11, 3-{2,4}, 7-{6,8}, 11-{10,12} */
  const int w13_1[] = {9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11};
  expect_parents(13, 0, w13_0);
  expect_parents(13, 1, w13_1);
  /* The reduce order is NCCL's down[0], down[1]: the btree's left child
   * first. 8 in tree 0 of 14 ranks: 4, then 12; its mirror 3 in tree 1 of
   * 12 ranks: mirror(4) = 7, then mirror(10) = 1. */
  int c[2];
  assert_int_equal(rs__tree_children(14, 0, 8, c), 2);
  assert_int_equal(c[0], 4);
  assert_int_equal(c[1], 12);
  assert_int_equal(rs__tree_children(12, 1, 3, c), 2);
  assert_int_equal(c[0], 7);
  assert_int_equal(c[1], 1);
}

/* tree-6: a reduce message's provenance (rs__tree_contributors) is exactly
 * the sender's subtree, as a range mod W. */
static void test_contributors_are_the_subtree(void **state) {
  (void)state;
  for (int W = 1; W <= MAX_W; W++)
    for (int t = 0; t < 2; t++)
      for (int r = 0; r < W; r++) {
        int in[MAX_W] = {0}, first, count;
        int size = subtree(W, t, r, in);
        rs__tree_contributors(W, t, r, &first, &count);
        assert_int_equal(count, size);
        for (int k = 0; k < count; k++)
          if (!in[(first + k) % W])
            fail_msg("W=%d tree %d: %d's range %d+%d holds %d, not under it", W,
                     t, r, first, count, (first + k) % W);
      }
}

/* tree-7: the two halves' segments tile the bucket in order, never larger
 * than the ring's segments (the run sizes queues for those). */
static void test_segments_tile_the_bucket(void **state) {
  (void)state;
  const size_t counts[] = {0, 1, 2, 3, 7, 64, 65, 1000, 100003};
  const int workers[] = {2, 3, 4, 5, 7, 8, 16, 33};
  const size_t segs_list[] = {1, 2, 5};
  for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
    for (size_t wi = 0; wi < sizeof workers / sizeof *workers; wi++)
      for (size_t si = 0; si < sizeof segs_list / sizeof *segs_list; si++) {
        const size_t n = counts[ci], segs = segs_list[si];
        const int W = workers[wi];
        const size_t ring_chunk = n / (size_t)W + (n % (size_t)W != 0);
        const size_t ring_seg = ring_chunk ? (ring_chunk + segs - 1) / segs : 0;
        size_t next = 0;
        for (int t = 0; t < 2; t++)
          for (size_t i = 0; i < rs__tree_segments(W, segs); i++) {
            const rs_tree_seg_t g = rs__tree_segment(n, W, segs, t, i);
            assert_int_equal(g.offset, next);
            assert_int_equal(g.chunk, t * rs__tree_chunks(W) + (int)(i / segs));
            assert_int_equal(g.segment, (int)(i % segs));
            assert_true(g.len <= ring_seg);
            assert_true(g.len <= rs__algo_tree.message_elems(rs__shape_flat(W),
                                                             0, 1, n, segs,
                                                             SIZE_MAX));
            next += g.len;
          }
        assert_int_equal(next, n);
      }
}

/* tree-8: the edges are each worker's tree neighbours, once each, the same
 * both ways; messages count one per child and one from the parent per
 * segment and tree. */
static void test_edges_and_messages(void **state) {
  (void)state;
  for (int W = 2; W <= MAX_W; W++)
    for (int r = 0; r < W; r++) {
      int peers[64];
      int n = rs__algo_tree.send_peers(rs__shape_flat(W), r, peers);
      assert_in_range(n, 1, 6);
      for (int i = 0; i < n; i++) {
        assert_int_not_equal(peers[i], r);
        for (int j = 0; j < i; j++)
          assert_int_not_equal(peers[i], peers[j]);
        int back[64], found = 0;
        int m = rs__algo_tree.recv_peers(rs__shape_flat(W), peers[i], back);
        for (int j = 0; j < m; j++)
          found |= back[j] == r;
        assert_true(found);
      }
      size_t per = 0;
      for (int t = 0; t < 2; t++) {
        int c[2];
        per += (size_t)rs__tree_children(W, t, r, c) +
               (rs__tree_parent(W, t, r) >= 0);
      }
      assert_int_equal(rs__algo_tree.messages(rs__shape_flat(W), r, 0, 3, 1,
                                              RS_COLL_ALLREDUCE),
                       per * 3 * (size_t)rs__tree_chunks(W));
    }
}

/* One run of the tree through the public API: exact inputs, so the result
 * is checked bit for bit against the reference. */
static void run_tree(int W, size_t n, rs_op_t op, int direct, int slots,
                     size_t segment_bytes, int average) {
  char text[256], err[RS_ERRMSG_MAX];
  snprintf(text, sizeof text,
           "{\"params\": [{\"name\": \"g\", \"shape\": [%zu]}]}", n);
  rs_model_t *m;
  if (rs_model_parse(text, strlen(text), "tree.json", &m, err))
    fail_msg("model: %s", err);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.algo = RS_ALGO_TREE;
  cfg.workers = W;
  cfg.op = op;
  cfg.direct = direct;
  cfg.slots = slots;
  cfg.segment_bytes = segment_bytes;
  cfg.average = average;
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err))
    fail_msg("W=%d n=%zu: create: %s", W, n, err);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 11 + (uint64_t)W), RS_OK);
  int rc = rs_run_execute(run);
  const rs_result_t *res = rs_run_result(run);
  if (rc != RS_OK || res->status != RS_OK || !res->identical)
    fail_msg("W=%d n=%zu op=%d direct=%d slots=%d seg=%zu pre=%d: %s (%s), "
             "identical %d",
             W, n, (int)op, direct, slots, segment_bytes, average,
             rs_errname(rc), rs_run_errmsg(run), res->identical);
  assert_true(res->checked);
  /* Exact inputs sum exactly; a pre-division by W is exact only when W is
   * a power of two. */
  if (!(average && (W & (W - 1))) && res->max_abs_err != 0.0)
    fail_msg("W=%d n=%zu: max error %g, want 0", W, n, res->max_abs_err);
  rs_run_free(run);
  rs_model_free(m);
}

/* tree-9: W in {1,2,3,4,5,7,8,16}, elements {1, W-1, W, W+1, 1000}, op avg
 * and sum: status OK, every worker bitwise identical, exact. */
static void test_runs(void **state) {
  (void)state;
  const int workers[] = {1, 2, 3, 4, 5, 7, 8, 16};
  for (size_t wi = 0; wi < sizeof workers / sizeof *workers; wi++) {
    const int W = workers[wi];
    const size_t counts[] = {1, (size_t)W - 1, (size_t)W, (size_t)W + 1, 1000};
    for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
      if (counts[ci] == 0)
        continue; /* a model needs an element */
      run_tree(W, counts[ci], RS_OP_AVG, 0, 4, 1 << 16, 0);
      run_tree(W, counts[ci], RS_OP_SUM, 0, 4, 1 << 16, 0);
    }
  }
}

/* tree-10: deep pipelines through the narrowest queues (one slot, one
 * element a segment), copying and direct, pre-divided average: no
 * deadlock, exact results. */
static void test_pipelined_one_slot(void **state) {
  (void)state;
  const int workers[] = {2, 3, 5, 6, 8, 13};
  for (size_t wi = 0; wi < sizeof workers / sizeof *workers; wi++)
    for (int direct = 0; direct < 2; direct++) {
      run_tree(workers[wi], 301, RS_OP_AVG, direct, 1, 4, 0);
      run_tree(workers[wi], 301, RS_OP_AVG, direct, 1, 8, 1);
      run_tree(workers[wi], 301, RS_OP_MAX, direct, 2, 12, 0);
    }
}

/* tree-11: the tree is an all-reduce only: reduce-scatter is refused. */
static void test_reduce_scatter_refused(void **state) {
  (void)state;
  const char text[] = "{\"params\": [{\"name\": \"g\", \"shape\": [8]}]}";
  char err[RS_ERRMSG_MAX];
  rs_model_t *m;
  assert_int_equal(rs_model_parse(text, strlen(text), "t", &m, err), RS_OK);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.algo = RS_ALGO_TREE;
  cfg.collective = RS_COLL_REDUCE_SCATTER;
  rs_run_t *run;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_EINVAL);
  assert_null(run);
  rs_model_free(m);
}

/* tree-12: the schedule on simulated clocks is finite, grows with the
 * bucket, and the formula is within 15% of it on a uniform network (an
 * estimate: exact where every interior node has one child, about 14% over
 * where a node folds two children's segments through its one incoming
 * port, which the formula charges in full while the trees' pipelines
 * partly hide it). */
static void test_simulate_and_predict(void **state) {
  (void)state;
  rs_netmodel_t net;
  memset(&net, 0, sizeof net);
  net.enabled = 1;
  net.link.latency_ns = 1000;
  net.link.bandwidth = 10000000000ull;
  net.reduce_rate = 40000000000ull;
  for (int W = 2; W <= 16; W++) {
    rs_bucket_t small = {.elem_offset = 0, .elems = 1 << 12};
    rs_bucket_t big = {.elem_offset = 0, .elems = 1 << 20};
    uint64_t a =
        rs__algo_simulate(
            &(rs_sim_job_t){&rs__algo_tree, &net, W, &small, 1, 1 << 14, 4});
    uint64_t b =
        rs__algo_simulate(
            &(rs_sim_job_t){&rs__algo_tree, &net, W, &big, 1, 1 << 14, 4});
    assert_true(a > 0 && a < b);
    size_t segs = rs_segs_per_chunk(big.elems, W, 1 << 14, 4);
    uint64_t p = rs__algo_tree.predict(&net, rs__shape_flat(W), big.elems, segs,
                                       SIZE_MAX, 4);
    if (100 * (p > b ? p - b : b - p) > 15 * b)
      fail_msg("W=%d: simulated %llu ns, predicted %llu ns", W,
               (unsigned long long)b, (unsigned long long)p);
  }
}

/* tree-multinode: on N nodes of G GPUs the tree is NCCL's multi-node
 * shape, built here as NCCL's src/graph/connect.cc builds it for the tree
 * pattern NCCL_TOPO_PATTERN_TREE with each node's GPUs in rank order:
 * ncclTopoPreset chains each node (up = the previous local rank, down[0]
 * = the next), then connectTrees gives each node's head (local rank 0)
 * the parent node's head as up, and appends the child nodes' heads to its
 * first free down[] slots, from ncclGetDtree over the nodes (the flat
 * trees above, which test_nccl_diagrams checks against trees.cc). For N
 * = 1..16 nodes and G = 1..4 GPUs (one node keeps the flat tree), both
 * trees: the same parent and children in the same order, every subtree a
 * range of ranks that rs__tree_contributors_in names, and the depth. */
static void test_multinode_is_nccls(void **state) {
  (void)state;
  int up[MAX_W], down[MAX_W][RS_TREE_MAX_CHILDREN];
  for (int N = 2; N <= 16; N++)
    for (int G = 1; G <= 4; G++)
      for (int t = 0; t < 2; t++) {
        const int W = N * G;
        const rs_shape_t shape = {.workers = W, .gpus = G};
        for (int r = 0; r < W; r++) { /* ncclTopoPreset: the chains */
          up[r] = r % G ? r - 1 : -1;
          down[r][0] = r % G < G - 1 ? r + 1 : -1;
          down[r][1] = down[r][2] = -1;
        }
        for (int n = 0; n < N; n++) { /* connectTrees: the heads */
          int nodes[2];
          const int u = rs__tree_parent(N, t, n);
          if (u >= 0)
            up[n * G] = u * G;
          const int k = rs__tree_children(N, t, n, nodes);
          for (int j = 0; j < k; j++) {
            int x = 0;
            while (down[n * G][x] >= 0)
              x++;
            down[n * G][x] = nodes[j] * G;
          }
        }
        for (int r = 0; r < W; r++) {
          int children[RS_TREE_MAX_CHILDREN];
          const int k = rs__tree_children_in(shape, t, r, children);
          int want = 0;
          while (want < RS_TREE_MAX_CHILDREN && down[r][want] >= 0)
            want++;
          if (rs__tree_parent_in(shape, t, r) != up[r] || k != want)
            fail_msg("N=%d G=%d tree %d rank %d: parent %d (NCCL %d), %d "
                     "children (NCCL %d)",
                     N, G, t, r, rs__tree_parent_in(shape, t, r), up[r], k,
                     want);
          for (int j = 0; j < k; j++)
            assert_int_equal(children[j], down[r][j]);
          /* the subtree: r and everything below, a range mod W */
          int seen[MAX_W] = {0}, stack[MAX_W], top = 0, size = 0;
          stack[top++] = r;
          while (top) {
            const int x = stack[--top];
            seen[x] = 1;
            size++;
            for (int j = 0; j < RS_TREE_MAX_CHILDREN && down[x][j] >= 0; j++)
              stack[top++] = down[x][j];
          }
          int first, count;
          rs__tree_contributors_in(shape, t, r, &first, &count);
          assert_int_equal(count, size);
          for (int j = 0; j < count; j++)
            assert_true(seen[(first + j) % W]);
          int d = 0;
          for (int x = r; up[x] >= 0; x = up[x])
            d++;
          assert_int_equal(rs__tree_depth_in(shape, t, r), d);
        }
        assert_int_equal(rs__tree_root_in(shape, t), rs__tree_root(N, t) * G);
      }
  /* one node, or a flat network: the flat tree */
  for (int W = 2; W <= 16; W++) {
    const rs_shape_t one = rs__shape_flat(W);
    for (int r = 0; r < W; r++)
      assert_int_equal(rs__tree_parent_in(one, 0, r), rs__tree_parent(W, 0, r));
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_trees_span_all_ranks),
      cmocka_unit_test(test_roots),
      cmocka_unit_test(test_leaf_in_one_tree),
      cmocka_unit_test(test_mirror_and_shift),
      cmocka_unit_test(test_nccl_diagrams),
      cmocka_unit_test(test_contributors_are_the_subtree),
      cmocka_unit_test(test_segments_tile_the_bucket),
      cmocka_unit_test(test_edges_and_messages),
      cmocka_unit_test(test_runs),
      cmocka_unit_test(test_pipelined_one_slot),
      cmocka_unit_test(test_reduce_scatter_refused),
      cmocka_unit_test(test_simulate_and_predict),
      cmocka_unit_test(test_multinode_is_nccls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
