/* test_schedule.c - the chunk and segment layout the ring walks. */
#include "test.h"

#include "ring.h"

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
        assert_int_equal(rs_chunk_offset(n, W, c), next);
        size_t len = rs_chunk_elems(n, W, c);
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
      rs_worker_t w = {
          .workers = 5, .elems = counts[ci], .segs_per_chunk = segs_list[si]};
      for (int c = 0; c < w.workers; c++) {
        size_t next = rs_chunk_offset(w.elems, w.workers, c);
        size_t lo = SIZE_MAX, hi = 0;
        for (size_t s = 0; s < w.segs_per_chunk; s++) {
          size_t off, len;
          rs_ring_segment(&w, c, s, &off, &len);
          assert_int_equal(off, next);
          next += len;
          lo = len < lo ? len : lo;
          hi = len > hi ? len : hi;
        }
        assert_int_equal(next, rs_chunk_offset(w.elems, w.workers, c) +
                                   rs_chunk_elems(w.elems, w.workers, c));
        assert_true(hi - lo <= 1);
      }
    }
}

/* schedule-3: the example from docs/algorithm.md: 10 elements on 4
 * workers are chunks of 3, 3, 2, 2 starting at 0, 3, 6, 8. */
static void test_documented_example(void **state) {
  (void)state;
  const size_t off[] = {0, 3, 6, 8}, len[] = {3, 3, 2, 2};
  for (int c = 0; c < 4; c++) {
    assert_int_equal(rs_chunk_offset(10, 4, c), off[c]);
    assert_int_equal(rs_chunk_elems(10, 4, c), len[c]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_chunks_tile_the_buffer),
      cmocka_unit_test(test_segments_tile_each_chunk),
      cmocka_unit_test(test_documented_example),
  };
  return cmocka_run_group_tests_name("schedule", tests, NULL, NULL);
}
