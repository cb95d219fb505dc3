/* test_algos.c - every algorithm besides the ring (and gloo's ring) against
 * its inputs.
 *
 *   test_algos ALGO W     the matrix for one algorithm and worker count
 *                         (algos-0.ALGO.W)
 *
 * For W workers, element counts 1, W-1, W, W+1 and 1000003 (30011 under
 * a sanitizer), exact and
 * normal inputs, ops avg and sum, f32 and f64: the test keeps its own copy
 * of the inputs and its own reference (long double), and demands exact
 * inputs bit for bit and normal ones within the algorithm's bound (its
 * depth: the most additions any contribution goes through, log2 W for
 * recursive doubling where the ring has W-1); every worker identical; and
 * the bytes each worker sent as the algorithm's shape says.
 */
#include "test.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/gloo_ring.h"
#include "algo/rd.h"
#include "algo/tree.h"
#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

static int matrix_workers;
static rs_algorithm_t matrix_algo;

/* The most additions any one contribution goes through. */
static int depth(rs_algorithm_t algo, int W) {
  const int P = rs__pof2(W);
  switch (algo) {
  case RS_ALGO_RD:
  case RS_ALGO_RHD:
    return rs__log2(P) + (W > P);
  case RS_ALGO_TREE: { /* two additions per level of the taller tree */
    int most = 0;
    for (int t = 0; t < 2; t++)
      for (int r = 0; r < W; r++) {
        int d = 0;
        for (int x = r; rs__tree_parent(W, t, x) >= 0;
             x = rs__tree_parent(W, t, x))
          d++;
        most = d > most ? d : most;
      }
    return 2 * most;
  }
  default:
    return W - 1;
  }
}

/* What worker w sends, in elements of an n-element bucket: the shape of
 * the algorithm (rhd's halves round, so it is checked within slack). */
static void expected_sent(rs_algorithm_t algo, int W, int w, size_t n,
                          size_t cap, double *lo, double *hi) {
  const int P = rs__pof2(W), E = W - P, k = rs__log2(P);
  double want = 0, slack = 0;
  switch (algo) {
  case RS_ALGO_RD:
    if (w < 2 * E)
      want = w % 2 ? (double)k * n + n : (double)n;
    else
      want = (double)k * n;
    break;
  case RS_ALGO_RHD:
    /* the halvings and doublings move (P-1)/P of the buffer each way */
    want = w < 2 * E && w % 2 ? 0 : 2.0 * (P - 1) / P * n;
    slack = w < 2 * E && w % 2 ? 0 : 2.0 * k;
    if (w < 2 * E) /* fold-in halves, the odd one's sum, the fold-out */
      want += w % 2 ? (double)(n / 2) + (n - n / 2) : (double)(n - n / 2) + n;
    break;
  case RS_ALGO_TREE: /* per tree's half: up to the parent, down to each
                        child */
    for (int t = 0; t < 2; t++) {
      int children[2];
      double half = (double)rs__chunk_elems(n, 2, t);
      want += half * (rs__tree_parent(W, t, w) >= 0) +
              half * rs__tree_children(W, t, w, children);
    }
    break;
  case RS_ALGO_GLOO_RING: { /* every chunk but its own, then every chunk
                               but its successor's (gloo's chunks) */
    const rs_gloo_layout_t l = rs__gloo_layout(n, W, cap);
    size_t off, own, next;
    rs__gloo_chunk(&l, n, w, &off, &own);
    rs__gloo_chunk(&l, n, (w + W - 1) % W, &off, &next);
    want = (double)(n - own) + (double)(n - next);
    break;
  }
  default: /* linear */
    want = w == 0 ? (double)(W - 1) * n : (double)n;
    break;
  }
  *lo = want - slack;
  *hi = want + slack;
}

static void run_case(int W, size_t n, int exact, rs_op_t op, rs_dtype_t dtype) {
  const rs_algorithm_t algo = matrix_algo;
  char text[256], err[RS_ERRMSG_MAX];
  snprintf(text, sizeof text,
           "{\"params\": [{\"name\": \"g\", \"shape\": [%zu], \"dtype\": "
           "\"%s\"}]}",
           n, rs_dtype_name(dtype));
  rs_model_t *m;
  if (rs_model_parse(text, strlen(text), "algos.json", &m, err))
    fail_msg("model: %s", err);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.op = op;
  cfg.algo = algo;
  cfg.segment_bytes = 4096 * 4; /* several segments at 1000003 */
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err))
    fail_msg("create: %s", err);
  assert_int_equal(rs_run_fill(run, exact ? RS_INIT_EXACT : RS_INIT_NORMAL, 5),
                   RS_OK);
  const int f64 = dtype == RS_DTYPE_F64;
  long double *sum = calloc(n, sizeof *sum), *abs_sum = calloc(n, sizeof *sum);
  assert_non_null(sum);
  assert_non_null(abs_sum);
  for (int w = 0; w < W; w++)
    for (size_t i = 0; i < n; i++) {
      long double x = f64 ? ((const double *)rs_run_buffer(run, w))[i]
                          : ((const float *)rs_run_buffer(run, w))[i];
      sum[i] += x;
      abs_sum[i] += fabsl(x);
    }
  int rc = rs_run_execute(run);
  if (rc != RS_OK)
    fail_msg("%s W=%d n=%zu: %s", rs_algorithm_name(algo), W, n,
             rs_run_errmsg(run));
  const rs_result_t *res = rs_run_result(run);
  assert_true(res->identical);
  const long double u = ldexpl(1.0L, f64 ? -53 : -24);
  const long double div = op == RS_OP_AVG ? W : 1;
  const long double tiny = ldexpl(1.0L, f64 ? -1074 : -149);
  const int d = depth(algo, W);
  for (int w = 0; w < W; w++)
    for (size_t i = 0; i < n; i++) {
      long double got = f64 ? ((const double *)rs_run_buffer(run, w))[i]
                            : ((const float *)rs_run_buffer(run, w))[i];
      long double want = sum[i] / div;
      if (exact) {
        if (got != (f64 ? (long double)(double)want : (long double)(float)want))
          fail_msg("%s W=%d n=%zu exact: worker %d element %zu is %.17Lg, "
                   "want %.17Lg",
                   rs_algorithm_name(algo), W, n, w, i, got, want);
      } else {
        long double bound =
            (d + 1) * u * abs_sum[i] / div + u * fabsl(want) + tiny;
        if (fabsl(got - want) > bound)
          fail_msg("%s W=%d n=%zu: worker %d element %zu is %.17Lg, want "
                   "%.17Lg +- %.3Lg",
                   rs_algorithm_name(algo), W, n, w, i, got, want, bound);
      }
    }
  /* The algorithm's shape: what each worker sent. */
  const size_t es = rs_dtype_size(dtype);
  uint64_t sent = 0, received = 0;
  for (int w = 0; w < W && W > 1; w++) {
    const rs_worker_stats_t *s = rs_run_worker_stats(run, w);
    double lo, hi, got = (double)s->bytes_sent / (double)es;
    expected_sent(algo, W, w, n, cfg.segment_bytes / es, &lo, &hi);
    if (got < lo || got > hi)
      fail_msg("%s W=%d n=%zu: worker %d sent %.0f elements, want %.1f..%.1f",
               rs_algorithm_name(algo), W, n, w, got, lo, hi);
    sent += s->bytes_sent;
    received += s->bytes_received;
  }
  assert_int_equal(sent, received); /* nothing lost, nothing left over */
  free(sum);
  free(abs_sum);
  rs_run_free(run);
  rs_model_free(m);
}

#define LARGE RS_TEST_LARGE(30011) /* several segments even then */

/* algos-0.ALGO.W: the matrix. */
static void test_matrix(void **state) {
  (void)state;
  const int W = matrix_workers;
  const size_t counts[] = {1, (size_t)W - 1, (size_t)W, (size_t)W + 1, LARGE};
  for (size_t c = 0; c < 5; c++) {
    if (counts[c] == 0)
      continue;
    for (int exact = 0; exact < 2; exact++) {
      run_case(W, counts[c], exact, RS_OP_AVG, RS_DTYPE_F32);
      run_case(W, counts[c], exact, RS_OP_SUM, RS_DTYPE_F32);
    }
    run_case(W, counts[c], (int)(c % 2), RS_OP_AVG, RS_DTYPE_F64);
  }
}

int main(int argc, char **argv) {
  if (argc != 3 || rs_algorithm_parse(argv[1]) < 0 || atoi(argv[2]) < 1) {
    fprintf(stderr, "usage: test_algos ALGO W\n");
    return 2;
  }
  matrix_algo = (rs_algorithm_t)rs_algorithm_parse(argv[1]);
  matrix_workers = atoi(argv[2]);
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_matrix)};
  char name[64];
  snprintf(name, sizeof name, "algos-0.%s.W%d", argv[1], matrix_workers);
  return cmocka_run_group_tests_name(name, tests, NULL, NULL);
}
