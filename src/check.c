/* check.c - the direct-mean reference and the floating-point error bound.
 *
 * Before the ring runs, the reference is computed from every worker's
 * inputs in double precision, as torch.stack(grads).mean(dim=0) would in
 * float64: ref[i] = sum_w g_w[i] (/ W for avg). Summing W floats in double
 * is exact to within W * 2^-53 relative, far below f32's rounding.
 *
 * The ring adds the W contributions of each element in f32, in an order
 * that depends on the element's chunk, so its result may differ from the
 * reference. The classic bound for a sum of W terms in any order
 * (Higham, Accuracy and Stability of Numerical Algorithms, 4.2) is
 *     |ring_sum - sum| <= gamma(W-1) * sum_w |g_w[i]|,
 *     gamma(n) = n*u / (1 - n*u),  u = 2^-24 (f32 unit roundoff),
 * and the division by W of avg adds at most u * |mean| more. Each element
 * gets its own bound, stored as a float rounded up; the check fails if any
 * element exceeds it. With exact inputs (multiples of 1/16 small enough
 * that every partial sum is representable) there is no rounding at all, and
 * the check demands the reference bit for bit.
 */
#include <math.h>
#include <string.h>

#include "reduce.h"
#include "run.h"
#include "util.h"

#define BLOCK 2048

/* The param holding flat element i (params are sorted by offset). */
static size_t param_of(const rs_model_t *model, size_t i) {
  size_t lo = 0, hi = rs_model_param_count(model) - 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (rs_model_param(model, mid)->elem_offset <= i)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

static int refuse_non_finite(rs_run_t *run, size_t start, size_t len) {
  for (int w = 0; w < run->config.workers; w++)
    for (size_t i = start; i < start + len; i++)
      if (!isfinite(run->bufs[w][i])) {
        const rs_param_t *p =
            rs_model_param(run->model, param_of(run->model, i));
        return rs__run_fail(run, RS_EINVAL,
                            "worker %d's gradient of \"%.100s\" holds %g at "
                            "element %zu: inputs must be finite",
                            w, p->name, (double)run->bufs[w][i],
                            i - p->elem_offset);
      }
  return RS_OK;
}

static float round_up_to_float(double x) {
  float f = (float)x;
  if ((double)f < x)
    f = nextafterf(f, INFINITY);
  return f;
}

/* Exact inputs: every partial sum is representable, so the direct mean in
 * float is the exact reference, rounded once, and it costs one buffer. */
static int prepare_exact(rs_run_t *run) {
  const int W = run->config.workers;
  const size_t n = run->elems;
  run->ref_exact = malloc((n ? n : 1) * sizeof *run->ref_exact);
  const float **grads = malloc((size_t)W * sizeof *grads);
  if (!run->ref_exact || !grads) {
    free(grads);
    return rs__run_fail(run, RS_ENOMEM,
                        "out of memory for the reference (%zu elements)", n);
  }
  for (int w = 0; w < W; w++)
    grads[w] = run->bufs[w];
  /* When timing over repetitions, first touch the output's pages untimed:
   * the ring's buffers were touched when they were filled. */
  if (run->config.ref_reps > 1)
    rs_direct_reduce(grads, W, n, run->config.op, run->ref_exact);
  uint64_t t0 = rs__now_ns();
  for (int rep = 0; rep < run->config.ref_reps; rep++)
    rs_direct_reduce(grads, W, n, run->config.op, run->ref_exact);
  run->result.ref_ns = (rs__now_ns() - t0) / (uint64_t)run->config.ref_reps;
  /* The exact float32 result, rounded once to the dtype, is what the ring
   * must produce (double rounding through float32 is innocuous here). */
  rs_dtype_round_all(run->dtype, run->ref_exact, n);
  free(grads);
  return RS_OK;
}

/* Accumulate worker w's values g into acc (and amp) for op. sum and avg:
 * acc the sum, amp the sum of |g|; min and max: acc the extreme; prod: acc
 * the product, amp the product of max(1, |g|). All in double. */
static void accumulate(rs_op_t op, int w, const float *g, double *acc,
                       double *amp, size_t len) {
  for (size_t i = 0; i < len; i++) {
    double x = g[i];
    switch (op) {
    case RS_OP_SUM:
    case RS_OP_AVG:
      acc[i] += x;
      amp[i] += fabs(x);
      break;
    case RS_OP_MIN:
      acc[i] = w == 0 || x < acc[i] ? x : acc[i];
      amp[i] += fabs(x);
      break;
    case RS_OP_MAX:
      acc[i] = w == 0 || x > acc[i] ? x : acc[i];
      amp[i] += fabs(x);
      break;
    case RS_OP_PROD:
      acc[i] = w == 0 ? x : acc[i] * x;
      amp[i] = (w == 0 ? 1.0 : amp[i]) * (fabs(x) > 1 ? fabs(x) : 1.0);
      break;
    }
  }
}

/* The result as one thread computes it in a fixed order, in float: worker
 * 0's value, then worker 1's folded in, and so on (a pre-divided average
 * divides each first). What the ring's chunk-dependent order is compared
 * with. */
static int prepare_fixed_order(rs_run_t *run) {
  const int W = run->config.workers;
  const size_t n = run->elems;
  const int pre = run->config.op == RS_OP_AVG && run->config.average_pre;
  run->fixed = malloc((n ? n : 1) * sizeof *run->fixed);
  if (!run->fixed)
    return rs__run_fail(run, RS_ENOMEM,
                        "out of memory for the order report (%zu elements)", n);
  const float divisor = (float)W;
  const int post = run->config.op == RS_OP_AVG && !pre;
  for (size_t start = 0; start < n; start += BLOCK) {
    size_t len = n - start < BLOCK ? n - start : BLOCK;
    float *acc = run->fixed + start;
    float quotient[BLOCK];
    /* Each fold as the ring does it: in float32, rounded to the dtype after
     * every hop; the last addition of a post-divided mean divides before
     * it rounds. */
    for (int w = 0; w < W; w++) {
      const float *g = run->bufs[w] + start;
      if (pre) {
        for (size_t i = 0; i < len; i++)
          quotient[i] = g[i] / divisor;
        rs_dtype_round_all(run->dtype, quotient, len);
        g = quotient;
      }
      if (w == 0)
        memcpy(acc, g, len * sizeof *acc);
      else if (post && w == W - 1)
        rs_reduce_sum_div_f32(acc, g, len, divisor);
      else
        rs_reduce_f32(acc, g, len, run->config.op);
      if (w > 0)
        rs_dtype_round_all(run->dtype, acc, len);
    }
    if (post && W == 1)
      rs_scale_div_f32(acc, len, divisor);
  }
  return RS_OK;
}

/* Distance in units in the last place between two finite floats. */
static uint64_t ulps_apart(float a, float b) {
  int32_t ia, ib;
  memcpy(&ia, &a, sizeof ia);
  memcpy(&ib, &b, sizeof ib);
  /* map sign-magnitude to a line where adjacent floats are adjacent ints */
  int64_t la = ia < 0 ? (int64_t)INT32_MIN - ia : ia;
  int64_t lb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
  return (uint64_t)(la > lb ? la - lb : lb - la);
}

static int prepare_reference(rs_run_t *run);

int rs__check_prepare(rs_run_t *run) {
  int rc = run->config.order_report ? prepare_fixed_order(run) : RS_OK;
  return rc ? rc : prepare_reference(run);
}

static int prepare_reference(rs_run_t *run) {
  const int W = run->config.workers;
  const size_t n = run->elems;
  const rs_op_t op = run->config.op;
  /* Exact inputs make sums, means (divided after), minima and maxima exact
   * in any order; a product or a pre-divided mean is not. */
  /* ... and every partial sum of W multiples of 1/16 in [-8, 8] needs
   * log2(128 W) + 1 significant bits, which f16 and bf16 may not have. */
  int bits = rs_dtype_mantissa_bits(run->dtype);
  int fits = (double)W * 128.0 <= ldexp(1.0, bits - 1);
  if (run->init == RS_INIT_EXACT && fits && op != RS_OP_PROD &&
      !(op == RS_OP_AVG && run->config.average_pre))
    return prepare_exact(run);
  run->ref = malloc((n ? n : 1) * sizeof *run->ref);
  run->bound = malloc((n ? n : 1) * sizeof *run->bound);
  if (!run->ref || !run->bound)
    return rs__run_fail(run, RS_ENOMEM,
                        "out of memory for the reference (%zu elements)", n);

  /* The dtype's unit roundoff (f16 2^-11, bf16 2^-8): each hop rounds the
   * float32 sum to it; float32's own rounding, far smaller, is folded in. */
  const double u =
      ldexp(1.0, -rs_dtype_mantissa_bits(run->dtype)) + ldexp(1.0, -24);
  const double gamma = (W - 1) * u / (1.0 - (W - 1) * u);
  const double slack64 = W * ldexp(1.0, -52); /* the double ops' own error */
  const double tiny = ldexp(1.0, -149);       /* underflow of a division */
  const double div = op == RS_OP_AVG ? W : 1.0;
  const int pre = op == RS_OP_AVG && run->config.average_pre;
  double acc[BLOCK], amp[BLOCK];

  uint64_t t0 = rs__now_ns();
  for (size_t start = 0; start < n; start += BLOCK) {
    size_t len = n - start < BLOCK ? n - start : BLOCK;
    memset(acc, 0, len * sizeof *acc);
    memset(amp, 0, len * sizeof *amp);
    for (int w = 0; w < W; w++)
      accumulate(op, w, run->bufs[w] + start, acc, amp, len);
    for (size_t i = 0; i < len; i++) {
      if (!isfinite(amp[i]))
        return refuse_non_finite(run, start, len);
      double ref = acc[i] / div, b;
      switch (op) {
      case RS_OP_MIN:
      case RS_OP_MAX:
        b = 0; /* the result is one of the inputs: exactly */
        break;
      case RS_OP_PROD:
        /* W-1 roundings of relative u, and underflow's absolute 2^-150
         * per product, grown at most by the later factors' magnitudes */
        b = (gamma + slack64) * fabs(ref) * (1 + u) +
            (W - 1) * ldexp(1.0, -150) * amp[i];
        break;
      default:
        b = (gamma + slack64) * amp[i] / div * (1 + u);
        if (pre) /* each worker's x/W rounds once more */
          b += u * amp[i] / div * (1 + u) + W * tiny;
        else if (op == RS_OP_AVG)
          b += u * fabs(ref) + tiny;
      }
      run->ref[start + i] = ref;
      run->bound[start + i] = round_up_to_float(b);
    }
  }
  run->result.ref_ns = rs__now_ns() - t0;
  return RS_OK;
}

static uint64_t wrong_total(const rs_run_t *run) {
  uint64_t total = 0;
  for (size_t p = 0; p < rs_model_param_count(run->model); p++)
    total += run->checks[p].wrong;
  return total;
}

void rs__check_result(rs_run_t *run) {
  const int W = run->config.workers;
  const size_t n = run->elems;
  rs_result_t *res = &run->result;
  res->identical = 1;
  for (int w = 1; w < W; w++)
    if (n && memcmp(run->bufs[w], run->bufs[0], n * sizeof(float)) != 0)
      res->identical = 0;

  const float *got = run->bufs[0];
  res->exact = run->ref_exact != NULL; /* bitwise check, not a bound */
  for (size_t p = 0; p < rs_model_param_count(run->model); p++) {
    const rs_param_t *param = rs_model_param(run->model, p);
    rs_param_check_t *c = &run->checks[p];
    memset(c, 0, sizeof *c);
    for (size_t i = param->elem_offset; i < param->elem_offset + param->elems;
         i++) {
      double ref = run->ref ? run->ref[i] : run->ref_exact[i];
      float want = rs_dtype_round(run->dtype, (float)ref);
      double err = fabs((double)got[i] - ref);
      int differs = memcmp(&got[i], &want, sizeof want) != 0;
      double bound = run->bound ? run->bound[i] : 0.0;
      double ratio;
      if (!run->bound) /* exact inputs: only the rounded reference passes */
        ratio = differs ? INFINITY : 0.0;
      else
        ratio = err == 0 ? 0.0 : bound > 0 ? err / bound : INFINITY;
      c->differing += (uint64_t)differs;
      c->wrong += (uint64_t)(ratio > 1.0);
      if (run->fixed) {
        uint64_t ulps = ulps_apart(got[i], run->fixed[i]);
        c->order_differing += ulps != 0;
        c->order_max_ulps = ulps > c->order_max_ulps ? ulps : c->order_max_ulps;
      }
      if (!(err <= c->max_abs_err))
        c->max_abs_err = err;
      if (ref != 0 && err / fabs(ref) > c->max_rel_err)
        c->max_rel_err = err / fabs(ref);
      if (bound > c->bound)
        c->bound = bound;
      if (!(ratio <= c->worst_ratio))
        c->worst_ratio = ratio;
    }
    if (!(c->max_abs_err <= res->max_abs_err))
      res->max_abs_err = c->max_abs_err;
    if (c->bound > res->bound)
      res->bound = c->bound;
    if (!(c->worst_ratio <= res->worst_ratio))
      res->worst_ratio = c->worst_ratio;
  }
  run->checked = 1;
  /* rs__run_fail sets the status with its message */
  if (!res->identical)
    rs__run_fail(run, RS_ECHECK,
                 "workers do not hold identical results (worst error/bound "
                 "%g)",
                 res->worst_ratio);
  else if (!(res->worst_ratio <= 1.0))
    rs__run_fail(run, RS_ECHECK,
                 "%llu element(s) outside the error bound (worst "
                 "error/bound %g)",
                 (unsigned long long)wrong_total(run), res->worst_ratio);
}

void rs_direct_reduce(const float *const *grads, int workers, size_t elems,
                      rs_op_t op, float *out) {
  /* Block by block so the W input streams and the output stay in cache
   * together: one pass over memory, as fast as one thread can go. */
  const float divisor = op == RS_OP_AVG ? (float)workers : 1.0f;
  for (size_t start = 0; start < elems; start += BLOCK) {
    size_t len = elems - start < BLOCK ? elems - start : BLOCK;
    float *restrict acc = out + start;
    memcpy(acc, grads[0] + start, len * sizeof *acc);
    for (int w = 1; w < workers; w++)
      rs_reduce_f32(acc, grads[w] + start, len, op);
    if (op == RS_OP_AVG)
      for (size_t i = 0; i < len; i++)
        acc[i] /= divisor;
  }
}
