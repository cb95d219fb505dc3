/* test_schedule.c - the chunk and segment layout, and the ring's schedule
 * (algo/ring.h): the pure functions the ring, the trace, --explain and
 * `ringsim model` share. */
#include "test.h"

#include "algo/algo.h"
#include "algo/ring.h"
#include "base/schedule.h"

static const size_t counts[] = {0, 1, 2, 3, 7, 8, 9, 63, 64, 65, 1000, 1000003};
static const int worker_counts[] = {1, 2, 3, 4, 5, 7, 8, 16, 33, 64, 1024};

/* schedule-1: the W chunks tile [0, n) in order, and their sizes differ by
 * at most one element (fewer elements than workers leaves some empty). */
static void test_chunks_tile_the_buffer(void **state) {
  (void)state;
  for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
    for (size_t wi = 0; wi < sizeof worker_counts / sizeof *worker_counts;
         wi++) {
      size_t n = counts[ci];
      int W = worker_counts[wi];
      size_t next = 0, lo = SIZE_MAX, hi = 0;
      for (int c = 0; c < W; c++) {
        assert_int_equal(rs__chunk_offset(n, W, c), next);
        size_t len = rs__chunk_elems(n, W, c);
        next += len;
        lo = len < lo ? len : lo;
        hi = len > hi ? len : hi;
      }
      assert_int_equal(next, n);
      assert_true(hi - lo <= 1);
    }
}

/* schedule-2: every chunk is cut into the same number of segments, which
 * tile the chunk and differ by at most one element. */
static void test_segments_tile_each_chunk(void **state) {
  (void)state;
  const size_t segs_list[] = {1, 2, 3, 7, 100};
  for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
    for (size_t si = 0; si < sizeof segs_list / sizeof *segs_list; si++) {
      const int W = 5;
      const size_t n = counts[ci], segs = segs_list[si];
      for (int c = 0; c < W; c++) {
        size_t next = rs__chunk_offset(n, W, c);
        size_t lo = SIZE_MAX, hi = 0;
        for (size_t s = 0; s < segs; s++) {
          size_t off, len;
          rs__segment(n, W, segs, c, s, &off, &len);
          assert_int_equal(off, next);
          next += len;
          lo = len < lo ? len : lo;
          hi = len > hi ? len : hi;
        }
        assert_int_equal(next,
                         rs__chunk_offset(n, W, c) + rs__chunk_elems(n, W, c));
        assert_true(hi - lo <= 1);
      }
    }
}

/* schedule-3: the example from docs/ring-walkthrough.md: 10 elements on 4
 * workers are chunks of 3, 3, 2, 2 starting at 0, 3, 6, 8. */
static void test_documented_example(void **state) {
  (void)state;
  const size_t off[] = {0, 3, 6, 8}, len[] = {3, 3, 2, 2};
  for (int c = 0; c < 4; c++) {
    assert_int_equal(rs__chunk_offset(10, 4, c), off[c]);
    assert_int_equal(rs__chunk_elems(10, 4, c), len[c]);
  }
}

/* schedule-4: the ring's schedule is consistent with itself: what worker
 * r sends in a step is what r+1 expects, every reduce-scatter message
 * holds one contribution more than the one its sender received in the step
 * before (its own added), each chunk's sum completes at the worker the
 * all-gather starts it from, and the all-gather delivers every chunk to
 * every worker. */
static void test_ring_schedule(void **state) {
  (void)state;
  const rs_phase_t RS = RS_PHASE_REDUCE_SCATTER, AG = RS_PHASE_ALL_GATHER;
  for (size_t wi = 0; wi < sizeof worker_counts / sizeof *worker_counts; wi++) {
    const int W = worker_counts[wi];
    if (W < 2 || W > 64)
      continue;
    for (int r = 0; r < W; r++) {
      const int next = rs__ring_next(W, r), prev = rs__ring_prev(W, r);
      assert_int_equal(rs__ring_prev(W, next), r);
      int got[64] = {0}; /* all-gather: chunks received by r */
      for (int s = 0; s < W - 1; s++) {
        for (int ph = 0; ph < 2; ph++)
          assert_int_equal(rs__ring_send_chunk(W, r, (rs_phase_t)ph, s),
                           rs__ring_recv_chunk(W, next, (rs_phase_t)ph, s));
        int first, count, pfirst, pcount;
        rs__ring_contributors(W, r, RS, s, &first, &count);
        assert_int_equal(count, s + 1);
        if (s > 0) { /* r sends what it received from prev, plus its own */
          rs__ring_contributors(W, prev, RS, s - 1, &pfirst, &pcount);
          assert_int_equal(rs__ring_send_chunk(W, r, RS, s),
                           rs__ring_recv_chunk(W, r, RS, s - 1));
          assert_int_equal(pcount + 1, count);
          assert_int_equal(pfirst, first);
          assert_int_equal(rs__mod(first + count - 1, W), r);
        }
        rs__ring_contributors(W, r, AG, s, &first, &count);
        assert_int_equal(count, W);
        got[rs__ring_recv_chunk(W, r, AG, s)]++;
      }
      /* After reduce-scatter r holds chunk r+1 whole, and sends it first. */
      assert_int_equal(rs__ring_recv_chunk(W, r, RS, W - 2), next);
      assert_int_equal(rs__ring_send_chunk(W, r, AG, 0), next);
      for (int c = 0; c < W; c++)
        assert_int_equal(got[c], c == next ? 0 : 1);
    }
  }
}

/* schedule-5: every algorithm's edges agree: r sends to p exactly when p
 * receives from r, nobody is its own peer, and the ring's are r -> r+1. */
static int has(const int *peers, int n, int p) {
  for (int i = 0; i < n; i++)
    if (peers[i] == p)
      return 1;
  return 0;
}

static void test_edges_agree(void **state) {
  (void)state;
  const rs_algo_t *algos[] = {&rs__algo_ring, &rs__algo_rd, &rs__algo_rhd,
                              &rs__algo_linear, &rs__algo_tree};
  for (size_t a = 0; a < sizeof algos / sizeof *algos; a++)
    for (int W = 2; W <= 17; W++)
      for (int r = 0; r < W; r++) {
        int out[17], in[17], back[17];
        int n_out = algos[a]->send_peers(rs__shape_flat(W), r, out);
        int n_in = algos[a]->recv_peers(rs__shape_flat(W), r, in);
        for (int i = 0; i < n_out; i++) {
          assert_true(out[i] != r && out[i] >= 0 && out[i] < W);
          int n = algos[a]->recv_peers(rs__shape_flat(W), out[i], back);
          assert_true(has(back, n, r));
        }
        for (int i = 0; i < n_in; i++) {
          int n = algos[a]->send_peers(rs__shape_flat(W), in[i], back);
          assert_true(has(back, n, r));
        }
        if (algos[a] == &rs__algo_ring) {
          assert_int_equal(n_out, 1);
          assert_int_equal(out[0], (r + 1) % W);
        }
      }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chunks_tile_the_buffer),
      cmocka_unit_test(test_segments_tile_each_chunk),
      cmocka_unit_test(test_documented_example),
      cmocka_unit_test(test_ring_schedule),
      cmocka_unit_test(test_edges_agree),
  };
  return cmocka_run_group_tests_name("schedule", tests, NULL, NULL);
}
