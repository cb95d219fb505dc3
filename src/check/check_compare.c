/* check_compare.c - one block's result compared with its reference:
 * every param's error, bound, worst ratio and counts, in vectorised loops
 * for f32 (the common case) or the general loop; and the workers that
 * differ from worker 0 (rs_run_mismatches' listing).
 */
#include <math.h>
#include <string.h>

#include "base/dtype.h"
#include "base/util.h"
#include "check/check_internal.h"
#include "io/model.h"

/* A double's bits. */
static inline uint64_t bits_of(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  return bits;
}

#define INF_BITS 0x7ff0000000000000u /* +inf */
#define ONE_BITS 0x3ff0000000000000u /* 1.0 */

/* rs__check_compare_block's loop for one param's elements of an f32 run
 * without the order report, the common case: got[j] against the reference
 * ref_of[j] of type REF (double, within bound_of[j]; or exact inputs'
 * float, bitwise). The same fields as the general loop, bit for bit, but
 * branch-free so that it vectorizes. The general loop's error is
 * |got - ref| in long double, rounded to double; here it is got - ref in
 * double, the same value wherever that subtraction is exact, which
 * TwoSum's error term tells (almost always: a result near its reference is
 * within a factor of two of it, where Sterbenz's lemma makes the
 * subtraction exact). Where one is not, or any value is not finite,
 * returns 0 having changed nothing, and the general loop takes the
 * elements. Every value compared or maximised is >= 0, and
 * not NaN (such an element makes the whole call fall back), so its bits
 * order as the values do: the selections, counts and maxima are integer
 * operations on bits, which vectorize where a double's, for NaN's sake,
 * do not. Both quotients are computed for every element and the right
 * one kept, so the loop has no branch. */
#define DEFINE_COMPARE_F32(NAME, REF, BOUNDED)                                 \
  RS_CLONES static int NAME(                                                   \
      const float *restrict got, const REF *restrict ref_of,                   \
      const float *restrict bound_of, size_t len, rs_param_check_t *c) {       \
    uint64_t differing = 0, wrong = 0, inexact = 0;                            \
    uint64_t max_abs = 0, max_rel = 0, max_bound = 0, worst = 0;               \
    for (size_t j = 0; j < len; j++) {                                         \
      double g = got[j], ref = ref_of[j];                                      \
      double want = (float)ref;                                                \
      uint64_t differs = bits_of(g) != bits_of(want);                          \
      /* TwoSum of g and -ref: d is exact iff its error e is 0 (e is NaN       \
       * where a value is not finite) */                                       \
      double d = g - ref, back = d - g;                                        \
      double e = (g - (d - back)) + (-ref - back);                             \
      inexact |= e != 0;                                                       \
      double err = fabs(d);                                                    \
      double bound = BOUNDED ? (double)bound_of[j] : 0.0;                      \
      uint64_t ratio;                                                          \
      if (BOUNDED) { /* err == 0 ? 0 : bound > 0 ? err / bound : inf */        \
        uint64_t nonzero = 0 - (uint64_t)(err != 0);                           \
        uint64_t positive = 0 - (uint64_t)(bound > 0);                         \
        ratio = nonzero &                                                      \
                ((bits_of(err / bound) & positive) | (INF_BITS & ~positive));  \
      } else { /* only the rounded reference passes */                         \
        ratio = (0 - differs) & INF_BITS;                                      \
      }                                                                        \
      uint64_t rel = bits_of(err / fabs(ref)) & (0 - (uint64_t)(ref != 0));    \
      uint64_t abs_bits = bits_of(err), bound_bits = bits_of(bound);           \
      differing += differs;                                                    \
      wrong += ratio > ONE_BITS;                                               \
      max_abs = abs_bits > max_abs ? abs_bits : max_abs;                       \
      max_rel = rel > max_rel ? rel : max_rel;                                 \
      max_bound = bound_bits > max_bound ? bound_bits : max_bound;             \
      worst = ratio > worst ? ratio : worst;                                   \
    }                                                                          \
    if (inexact || !len)                                                       \
      return !inexact;                                                         \
    uint64_t maxima[4] = {max_abs, max_rel, max_bound, worst};                 \
    merge_maxima(c, differing, wrong, maxima);                                 \
    return 1;                                                                  \
  }

/* Merge one fast loop's counts and maxima (as bits: abs, rel, bound, ratio)
 * into c, as the general loop would have met them one by one. */
static void merge_maxima(rs_param_check_t *c, uint64_t differing,
                         uint64_t wrong, const uint64_t maxima[4]) {
  double v[4];
  memcpy(v, maxima, sizeof v);
  c->differing += differing;
  c->wrong += wrong;
  if (!(v[0] <= c->max_abs_err))
    c->max_abs_err = v[0];
  if (v[1] > c->max_rel_err)
    c->max_rel_err = v[1];
  if (v[2] > c->bound)
    c->bound = v[2];
  if (!(v[3] <= c->worst_ratio))
    c->worst_ratio = v[3];
}

DEFINE_COMPARE_F32(compare_f32_bound, double, 1)
DEFINE_COMPARE_F32(compare_f32_exact, float, 0)

/* Compare this process's first worker's result (worker 0's, but over MPI)
 * at start .. start+len-1 with the block's
 * reference (ref and bound, with ref_lo for f64, or exact; fixed for the
 * order report, each indexed from start), into checks (one per param).
 * The error is measured against the reference itself: an f64 run's long
 * double ref + ref_lo, not its rounding to double. */
void rs__check_compare_block(const rs_run_t *run, const check_block_t *blk,
                             rs_param_check_t *checks) {
  const size_t start = blk->start, len = blk->len;
  const double *ref_of = blk->ref, *ref_lo_of = blk->ref_lo;
  const void *bound_of = blk->bound, *exact_of = blk->exact;
  const void *fixed_of = blk->fixed;
  const rs_model_t *model = run->model;
  size_t p = rs__model_param_at(model, start);
  size_t j = 0;
  if (run->dtype == RS_DTYPE_F32 && !fixed_of && !run->check_general) {
    const float *got = (const float *)(const void *)run->bufs[run->first_local];
    for (; j < len; p++) {
      const rs_param_t *param = rs_model_param(model, p);
      size_t end = param->elem_offset + param->elems - start;
      end = end < len ? end : len;
      int fast = bound_of ? compare_f32_bound(got + start + j, ref_of + j,
                                              (const float *)bound_of + j,
                                              end - j, &checks[p])
                          : compare_f32_exact(got + start + j,
                                              (const float *)exact_of + j, NULL,
                                              end - j, &checks[p]);
      if (!fast)
        break; /* this param's elements go through the loop below */
      j = end;
    }
  }
  for (; j < len; j++) {
    size_t i = start + j;
    while (i >= rs_model_param(model, p)->elem_offset +
                    rs_model_param(model, p)->elems)
      p++;
    rs_param_check_t *c = &checks[p];
    double got = value_at(run, run->first_local, i);
    double ref = ref_of ? ref_of[j] : array_at(run, exact_of, j);
    double want = run->dtype == RS_DTYPE_F64
                      ? ref
                      : rs_dtype_round(run->dtype, (float)ref);
    /* (a reference beyond the dtype's range is inf, as IEEE rounding
     * makes it; a result of that same inf is exact) */
    long double full = (long double)ref + (ref_lo_of ? ref_lo_of[j] : 0.0);
    double err = got == full ? 0.0 : (double)fabsl((long double)got - full);
    int differs = memcmp(&got, &want, sizeof want) != 0;
    double bound = bound_of ? array_at(run, bound_of, j) : 0.0;
    double ratio;
    if (!bound_of) /* exact inputs: only the rounded reference passes */
      ratio = differs ? INFINITY : 0.0;
    else
      ratio = err == 0 ? 0.0 : bound > 0 ? err / bound : INFINITY;
    /* The inputs are finite (refused otherwise): a result that is not
     * overflowed, even where the exact value is beyond the dtype's range
     * too (an f64 reference, then inf, that it would equal). Never
     * within a bound; name_overflow says where. */
    if (isnan(ratio) || !isfinite(got))
      ratio = INFINITY;
    c->differing += (uint64_t)differs;
    c->wrong += (uint64_t)(ratio > 1.0);
    if (fixed_of) {
      uint64_t ulps = rs_dtype_ulps(run->dtype, got, array_at(run, fixed_of, j));
      c->order_differing += ulps != 0;
      c->order_max_ulps = ulps > c->order_max_ulps ? ulps : c->order_max_ulps;
    }
    if (!(err <= c->max_abs_err))
      c->max_abs_err = err;
    if (ref != 0 && err / fabs(ref) > c->max_rel_err)
      c->max_rel_err = err / fabs(ref);
    if (bound > c->bound)
      c->bound = bound;
    /* a compressing hook: would the sum, divided after, overflow? */
    if (run->hook_cast) {
      int over =
          isinf(rs_dtype_round(run->dtype, (float)(ref * run->config.workers)));
      c->sum_overflow += (uint64_t)over;
      c->sum_overflow_saved += (uint64_t)(over && isfinite(got));
      c->max_abs_ref = fabs(ref) > c->max_abs_ref ? fabs(ref) : c->max_abs_ref;
    }
    if (!(ratio <= c->worst_ratio))
      c->worst_ratio = ratio;
  }
}

/* ---- workers that differ from worker 0 ------------------------------- */

static int mismatch_before(const rs_mismatch_t *a, const rs_mismatch_t *b) {
  return a->elem < b->elem || (a->elem == b->elem && a->worker < b->worker);
}

/* Keep m if it is among the first RS_MISMATCH_LIST (list stays sorted). */
static void list_insert(rs_mismatch_t *list, size_t *listed,
                        const rs_mismatch_t *m) {
  size_t at = *listed;
  while (at > 0 && mismatch_before(m, &list[at - 1]))
    at--;
  if (at == RS_MISMATCH_LIST)
    return;
  size_t end = *listed < RS_MISMATCH_LIST ? *listed : RS_MISMATCH_LIST - 1;
  memmove(&list[at + 1], &list[at], (end - at) * sizeof *list);
  list[at] = *m;
  if (*listed < RS_MISMATCH_LIST)
    (*listed)++;
}

void rs__check_list_merge(rs_mismatch_t *list, size_t *listed,
                          const rs_mismatch_t *from, size_t n) {
  for (size_t k = 0; k < n; k++)
    list_insert(list, listed, &from[k]);
}

void rs__check_list_block(const rs_run_t *run, size_t start, size_t len,
                          const void *ref0, const mismatch_tally_t *tally) {
  const size_t size = run->buf_elem_bytes;
  const unsigned char *want = ref0;
  for (int w = run->first_local > 0 ? run->first_local : 1; w < run->local_end;
       w++) {
    const unsigned char *got = run->bufs[w] + start * size;
    if (memcmp(got, want, len * size) == 0)
      continue;
    size_t p = rs__model_param_at(run->model, start);
    for (size_t j = 0; j < len; j++) {
      if (memcmp(got + j * size, want + j * size, size) == 0)
        continue;
      tally->counts[w]++;
      const size_t i = start + j;
      while (i >= rs_model_param(run->model, p)->elem_offset +
                      rs_model_param(run->model, p)->elems)
        p++;
      rs_mismatch_t m = {.worker = w,
                         .param = p,
                         .elem = i,
                         .value = array_at(run, got, j),
                         .worker0_value = array_at(run, want, j)};
      list_insert(tally->list, tally->listed, &m);
    }
  }
}
