/* check_reference.c - the reference of one block and its error bound,
 * element by element: every worker's inputs (in their buffers, or made
 * again after the run) summed in a wider precision than the run's, double
 * for float inputs and long double for f64 (check_prepare.c says why, and
 * where the bound's constants come from); exact inputs' direct mean, bit
 * for bit what the run must produce, here and for the fill
 * (rs__check_fill_fold, rs__check_fill_finish).
 */
#include <float.h>
#include <math.h>
#include <string.h>

#include "base/reduce.h"
#include "base/util.h"
#include "check/check_internal.h"
#include "io/grads.h"
#include "io/model.h"

static int refuse_non_finite(const rs_run_t *run, size_t start, size_t len,
                             char *errmsg) {
  for (int w = run->first_local; w < run->local_end; w++)
    for (size_t i = start; i < start + len; i++)
      if (!isfinite(value_at(run, w, i))) {
        const rs_param_t *p =
            rs_model_param(run->model, rs__model_param_at(run->model, i));
        return rs__err(errmsg, RS_EINVAL,
                       "worker %d's gradient of \"%.100s\" holds %g at "
                       "element %zu: inputs must be finite",
                       w, p->name, value_at(run, w, i), i - p->elem_offset);
      }
  return RS_OK;
}

/* Store bound b (>= 0) at i in the buffers' type, rounded up so it stays a
 * bound: one step up from a value rounded down is the next representable
 * one (for a non-negative finite value, its bits plus one). */
static void store_bound(const rs_run_t *run, void *bounds, size_t i,
                        long double b) {
  if (run->dtype == RS_DTYPE_F64) {
    double d = (double)b;
    if ((long double)d < b) {
      uint64_t bits;
      memcpy(&bits, &d, sizeof bits);
      bits++;
      memcpy(&d, &bits, sizeof d);
    }
    ((double *)bounds)[i] = d;
    return;
  }
  float f = (float)b;
  if ((long double)f < b) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits++;
    memcpy(&f, &bits, sizeof f);
  }
  ((float *)bounds)[i] = f;
}

/* Accumulate one worker's values g (worker w of the run) into acc (and
 * amp) for op. sum and avg: acc the sum, amp the sum of |g|; min and max:
 * acc the extreme; prod: acc the product, amp the product of max(1, |g|).
 * Written once for float inputs summed in double and once for double
 * inputs (f64) summed in long double: the reference must be more precise
 * than what it checks. The switch sits outside the loops so each loop
 * vectorizes. */
#define DEFINE_ACCUMULATE(NAME, IN, ACC, FABS)                                 \
  RS_CLONES static void NAME(rs_op_t op, int w, const IN *restrict g,          \
                             ACC *restrict acc, ACC *restrict amp,             \
                             size_t len) {                                     \
    switch (op) {                                                              \
    case RS_OP_SUM:                                                            \
    case RS_OP_AVG:                                                            \
      for (size_t i = 0; i < len; i++) {                                       \
        acc[i] += (ACC)g[i];                                                   \
        amp[i] += FABS((ACC)g[i]);                                             \
      }                                                                        \
      break;                                                                   \
    case RS_OP_MIN:                                                            \
    case RS_OP_MAX:                                                            \
      for (size_t i = 0; i < len; i++) {                                       \
        ACC x = g[i];                                                          \
        int better = op == RS_OP_MIN ? x < acc[i] : x > acc[i];                \
        acc[i] = w == 0 || better ? x : acc[i];                                \
        amp[i] += FABS(x);                                                     \
      }                                                                        \
      break;                                                                   \
    case RS_OP_PROD:                                                           \
      for (size_t i = 0; i < len; i++) {                                       \
        ACC x = g[i], m = FABS(x) > 1 ? FABS(x) : 1;                           \
        acc[i] = w == 0 ? x : acc[i] * x;                                      \
        amp[i] = w == 0 ? m : amp[i] * m;                                      \
      }                                                                        \
      break;                                                                   \
    }                                                                          \
  }

DEFINE_ACCUMULATE(accumulate_f32, float, double, fabs)
DEFINE_ACCUMULATE(accumulate_f64, double, long double, fabsl)

/* The reference and bound of a block of float inputs summed (or averaged)
 * in double: ref = acc / div, bound = sum_rel * amp + ref_rel * |ref| +
 * sum_tiny (k's constants, in double), as the general loop in
 * rs__check_block_reference computes them, but in
 * double (exact enough: the bound's (1 + u) margins dwarf double's
 * rounding) and without branches, so the loop vectorizes. The bound is
 * rounded up to float by adding one to its bits where the conversion
 * rounded down. Returns 0, having written nothing, if any input was not
 * finite. */
RS_CLONES
static int finish_sums_f32(size_t len, const double *restrict acc,
                           const double *restrict amp, const bound_k_t *k,
                           double *restrict ref, float *restrict bound) {
  const double div = (double)k->div, sum_rel = (double)k->sum_rel;
  const double ref_rel = (double)k->ref_rel, sum_tiny = (double)k->sum_tiny;
  int finite = 1;
  for (size_t i = 0; i < len; i++)
    finite &= amp[i] <= DBL_MAX; /* false for inf and NaN */
  if (!finite)
    return 0;
  for (size_t i = 0; i < len; i++) {
    double r = acc[i] / div;
    double b = sum_rel * amp[i] + ref_rel * fabs(r) + sum_tiny;
    float f = (float)b;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    bits += (double)f < b;
    memcpy(&f, &bits, sizeof f);
    ref[i] = r;
    bound[i] = f;
  }
  return 1;
}

/* Worker w's inputs at start .. start+len-1: in its buffer (before the
 * run), or made again (after it). */
static const void *inputs_of(const rs_run_t *run, const check_plan_t *plan,
                             scratch_t *s, int w, size_t start, size_t len) {
  if (!plan->stream)
    return run->bufs[w] + start * run->buf_elem_bytes;
  rs__grads_generate(run, w, start, len, s->inputs);
  return s->inputs;
}

/* Fold worker w's inputs g into the fixed order's result (as
 * prepare_fixed_order does). */
static void fold_fixed(const rs_run_t *run, const check_plan_t *plan,
                       scratch_t *s, int w, const void *g, size_t len) {
  const int W = run->config.workers;
  const size_t size = run->buf_elem_bytes;
  if (plan->k.pre) {
    memcpy(s->quotient, g, len * size);
    rs__pre_average(run->dtype, s->quotient, len, W, run->config.average);
    g = s->quotient;
  }
  if (w == 0)
    memcpy(s->fixed, g, len * size);
  else
    rs__fold(run->dtype, s->fixed, g, len, run->config.op,
             plan->k.post && w == W - 1 ? W : 0);
  if (plan->k.post && W == 1)
    rs__scale_div(run->dtype, s->fixed, len, W);
}

/* Exact inputs' reference, the direct mean as direct_reduce computes it
 * (check_prepare.c):
 * worker w's inputs g folded into exact (the first worker's copied), ... */
static void exact_fold(const rs_run_t *run, void *exact, int w, const void *g,
                       size_t len) {
  if (w == 0)
    memcpy(exact, g, len * run->buf_elem_bytes);
  else if (run->dtype == RS_DTYPE_F64)
    rs__reduce_f64(exact, g, len, run->config.op);
  else
    rs__reduce_f32(exact, g, len, run->config.op);
}

/* ... then divided for a mean. The exact float32 result, rounded once to
 * the dtype, is what the ring must produce (double rounding through
 * float32 is innocuous here). */
static void exact_finish(const rs_run_t *run, void *exact, size_t len) {
  const int f64 = run->dtype == RS_DTYPE_F64;
  if (run->config.op == RS_OP_AVG && f64)
    rs__scale_div_f64(exact, len, (double)run->config.workers);
  else if (run->config.op == RS_OP_AVG)
    rs__scale_div_f32(exact, len, (float)run->config.workers);
  if (!f64)
    rs_dtype_round_all(run->dtype, exact, len);
}

void rs__check_fill_fold(const rs_run_t *run, int w, size_t start, size_t len) {
  /* as rs__check_block_reference */
  const size_t size = run->buf_elem_bytes;
  exact_fold(run, (unsigned char *)run->ref_exact + start * size, w,
             run->bufs[w] + start * size, len);
}

void rs__check_fill_finish(const rs_run_t *run, size_t start, size_t len) {
  exact_finish(
      run, (unsigned char *)run->ref_exact + start * run->buf_elem_bytes, len);
}

/* The reference of block blk (elements start .. start+len-1, at most
 * BLOCK): the direct mean into exact (exact inputs), or the
 * wider-precision reference into ref and its bound into bound; with a
 * streamed order report, the fixed order's result into s->fixed. On bad
 * inputs (not finite, or a product beyond the reference's range) returns
 * RS_EINVAL with the message in errmsg. */
int rs__check_block_reference(const rs_run_t *run, const check_plan_t *plan,
                              scratch_t *s, const check_block_t *blk,
                              char *errmsg) {
  const size_t start = blk->start, len = blk->len;
  double *ref = blk->ref, *ref_lo = blk->ref_lo;
  void *bound = blk->bound, *exact = blk->exact;
  const int W = run->config.workers;
  const rs_op_t op = run->config.op;
  const bound_k_t *k = &plan->k;
  const int f64 = k->f64;
  if (!plan->exact) {
    if (f64) {
      memset(s->acc_l, 0, len * sizeof *s->acc_l);
      memset(s->amp_l, 0, len * sizeof *s->amp_l);
    } else {
      memset(s->acc, 0, len * sizeof *s->acc);
      memset(s->amp, 0, len * sizeof *s->amp);
    }
  }
  /* this process's workers: every worker, or over MPI (inputs not
   * generated) its block, whose sums mpi/merge.c then sums over the
   * processes */
  const int from = plan->stream ? 0 : run->first_local;
  const int to = plan->stream ? W : run->local_end;
  for (int w = from; w < to; w++) {
    const void *g = inputs_of(run, plan, s, w, start, len);
    if (plan->exact) {
      exact_fold(run, exact, w, g, len);
    } else if (f64) {
      accumulate_f64(op, w - from, g, s->acc_l, s->amp_l, len);
    } else {
      accumulate_f32(op, w - from, g, s->acc, s->amp, len);
    }
    if (plan->fixed && plan->stream)
      fold_fixed(run, plan, s, w, g, len);
  }
  if (!plan->stream) /* (exact inputs are generated: streamed) */
    run->job->reduce_sums(run, f64 ? (void *)s->acc_l : (void *)s->acc,
                          f64 ? (void *)s->amp_l : (void *)s->amp, len, f64);
  if (plan->exact) {
    exact_finish(run, exact, len);
    return RS_OK;
  }
  /* The common case, float inputs summed or averaged, takes the fast
   * path; everything else (f64, min, max, prod, non-finite input) the
   * general one below. */
  if (!f64 && (op == RS_OP_SUM || op == RS_OP_AVG) &&
      finish_sums_f32(len, s->acc, s->amp, k, ref, bound))
    return RS_OK;
  for (size_t i = 0; i < len; i++) {
    long double sum = f64 ? s->acc_l[i] : s->acc[i];
    long double mag = f64 ? s->amp_l[i] : s->amp[i];
    if (!isfinite(mag) || !isfinite(sum)) {
      int rc =
          plan->stream ? RS_OK : refuse_non_finite(run, start, len, errmsg);
      if (rc)
        return rc;
      /* finite inputs, but a product beyond even the reference's range:
       * no bound can be stated, so no check; refuse */
      const rs_param_t *p =
          rs_model_param(run->model, rs__model_param_at(run->model, start + i));
      return rs__err(errmsg, RS_EINVAL,
                     "element %zu of \"%.100s\": the %s of the workers' "
                     "values overflows the check's reference",
                     start + i - p->elem_offset, p->name, rs_op_name(op));
    }
    long double r = sum / k->div, b;
    switch (op) {
    case RS_OP_MIN:
    case RS_OP_MAX:
      b = 0; /* the result is one of the inputs: exactly */
      break;
    case RS_OP_PROD:
      /* W-1 roundings of relative u, and underflow's absolute tiny/2
       * per product, grown at most by the later factors' magnitudes */
      b = k->prod_rel * fabsl(r) + k->prod_tiny * mag;
      break;
    default:
      b = k->sum_rel * mag + k->ref_rel * fabsl(r) + k->sum_tiny;
    }
    ref[i] = (double)r;
    if (ref_lo) /* (an inf ref, of a sum beyond double's range: none) */
      ref_lo[i] = isfinite(ref[i]) ? (double)(r - ref[i]) : 0.0;
    store_bound(run, bound, i, b);
  }
  return RS_OK;
}
