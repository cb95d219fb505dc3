/* check.c - the direct-mean reference and the floating-point error bound.
 *
 * Before the ring runs, the reference is computed from every worker's
 * inputs in a wider precision than the ring's, as torch.stack(grads)
 * .mean(dim=0) would in float64: ref[i] = sum_w g_w[i] (/ W for avg).
 * Summing W floats in double is exact to within W * 2^-53 relative, far
 * below f32's rounding; an f64 run's reference sums in long double (x86's
 * 64-bit significand, or quad precision elsewhere) for the same reason, and
 * its bound adds what storing that sum as a double rounds away.
 *
 * The ring adds the W contributions of each element in f32, in an order
 * that depends on the element's chunk, so its result may differ from the
 * reference. The classic bound for a sum of W terms in any order
 * (Higham, Accuracy and Stability of Numerical Algorithms, 4.2) is
 *     |ring_sum - sum| <= theta(W-1) * sum_w |g_w[i]|,
 *     theta(n) = (1 + u)^n - 1,  u = 2^-24 (f32 unit roundoff; f64 2^-53):
 * each contribution goes through at most W-1 roundings. Higham writes it
 * as gamma(n) = n*u / (1 - n*u), which is larger and holds only while
 * n*u < 1; bf16 (u = 2^-8) passes that at 257 workers, theta never fails.
 * The division by W of avg adds at most u * |mean| more. Each element gets
 * its own bound, stored in the buffers' type rounded up; the check fails if
 * any element exceeds it. With exact inputs (multiples of 1/16 small enough
 * that every partial sum is representable) there is no rounding at all, and
 * the check demands the reference bit for bit.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "check/check.h"
#include "io/grads.h"
#include "io/model.h"
#include "core/mpi_run.h"
#include "base/parallel.h"
#include "base/reduce.h"
#include "core/runstate.h"
#include "base/util.h"

#define BLOCK RS_CHECK_BLOCK

/* The check's loops are compiled as well for AVX2 and AVX-512 (RS_CLONES,
 * util.h), as grads.c's generator: the same IEEE operations in every lane,
 * without fused multiply-adds (this file is compiled with
 * -ffp-contract=off), so every path gives the same bits. */

/* Element i of an array of the buffers' type (a buffer, bound, ref_exact,
 * fixed). */
static double array_at(const rs_run_t *run, const void *array, size_t i) {
  if (run->dtype == RS_DTYPE_F64)
    return ((const double *)array)[i];
  return ((const float *)array)[i];
}

/* Worker w's element i. */
static double value_at(const rs_run_t *run, int w, size_t i) {
  return array_at(run, run->bufs[w], i);
}

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

/* The direct mean (or op) on one thread, for float and for double, as
 * torch.stack(grads).mean(dim=0) computes it: out[i] = (sum_w grads[w][i])
 * / W, worker 0 first (or the plain sum, min, ... for the other ops). What
 * `ringsim bench` times as its "ref". Block by block so the W input
 * streams and the output stay in cache together: one pass over memory, as
 * fast as one thread can go. */
#define DEFINE_DIRECT_REDUCE(NAME, S, T)                                       \
  static void NAME(const T *const *grads, int workers, size_t elems,           \
                   rs_op_t op, T *out) {                                       \
    const T divisor = op == RS_OP_AVG ? (T)workers : (T)1;                     \
    for (size_t start = 0; start < elems; start += BLOCK) {                    \
      size_t len = elems - start < BLOCK ? elems - start : BLOCK;              \
      T *restrict acc = out + start;                                           \
      memcpy(acc, grads[0] + start, len * sizeof *acc);                        \
      for (int w = 1; w < workers; w++)                                        \
        rs__reduce_##S(acc, grads[w] + start, len, op);                        \
      if (op == RS_OP_AVG)                                                     \
        rs__scale_div_##S(acc, len, divisor);                                  \
    }                                                                          \
  }

DEFINE_DIRECT_REDUCE(direct_reduce_f32, f32, float)
DEFINE_DIRECT_REDUCE(direct_reduce_f64, f64, double)

/* The direct mean over the W buffers into out, in the buffers' type. */
static void direct_reduce(const rs_run_t *run, const void **grads, void *out) {
  if (run->dtype == RS_DTYPE_F64)
    direct_reduce_f64((const double *const *)grads, run->config.workers,
                      run->elems, run->config.op, out);
  else
    direct_reduce_f32((const float *const *)grads, run->config.workers,
                      run->elems, run->config.op, out);
}

/* Exact inputs: every partial sum is representable, so the direct mean in
 * float is the exact reference, rounded once, and it costs one buffer. */
static int prepare_exact(rs_run_t *run) {
  const int W = run->config.workers;
  const size_t n = run->elems;
  run->ref_exact = malloc((n ? n : 1) * run->buf_elem_bytes);
  const void **grads = malloc((size_t)W * sizeof *grads);
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
    direct_reduce(run, grads, run->ref_exact);
  uint64_t t0 = rs__now_ns();
  for (int rep = 0; rep < run->config.ref_reps; rep++)
    direct_reduce(run, grads, run->ref_exact);
  run->result.ref_ns = (rs__now_ns() - t0) / (uint64_t)run->config.ref_reps;
  /* The exact float32 result, rounded once to the dtype, is what the ring
   * must produce (double rounding through float32 is innocuous here). */
  if (run->dtype != RS_DTYPE_F64)
    rs_dtype_round_all(run->dtype, run->ref_exact, n);
  free(grads);
  return RS_OK;
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

/* The result as one thread computes it in a fixed order, in the buffers'
 * type: worker 0's value, then worker 1's folded in, and so on (a
 * pre-divided average divides each first). What the ring's chunk-dependent
 * order is compared with. */
static int prepare_fixed_order(rs_run_t *run) {
  const int W = run->config.workers;
  const size_t n = run->elems, size = run->buf_elem_bytes;
  const int pre = run->config.op == RS_OP_AVG && run->config.average_pre;
  const int post = run->config.op == RS_OP_AVG && !pre;
  run->fixed = malloc((n ? n : 1) * size);
  if (!run->fixed)
    return rs__run_fail(run, RS_ENOMEM,
                        "out of memory for the order report (%zu elements)", n);
  double quotient[BLOCK]; /* room for BLOCK elements of either type */
  for (size_t start = 0; start < n; start += BLOCK) {
    if (rs__run_stopped(run))
      return rs__run_take_interrupt(run);
    size_t len = n - start < BLOCK ? n - start : BLOCK;
    unsigned char *acc = (unsigned char *)run->fixed + start * size;
    /* Each fold as the ring does it (rs__fold): rounded to the dtype after
     * every hop; the last addition of a post-divided mean divides before
     * it rounds. */
    for (int w = 0; w < W; w++) {
      const void *g = run->bufs[w] + start * size;
      if (pre) {
        memcpy(quotient, g, len * size);
        rs__pre_average(run->dtype, quotient, len, W, run->config.average_pre);
        g = quotient;
      }
      if (w == 0)
        memcpy(acc, g, len * size);
      else
        rs__fold(run->dtype, acc, g, len, run->config.op,
                 post && w == W - 1 ? W : 0);
    }
    if (post && W == 1)
      rs__scale_div(run->dtype, acc, len, W);
  }
  return RS_OK;
}

/* Distance in units in the last place between two finite values of the
 * buffers' type. */
static uint64_t ulps_apart(const rs_run_t *run, double a, double b) {
  int64_t la, lb;
  if (run->dtype == RS_DTYPE_F64) {
    memcpy(&la, &a, sizeof la);
    memcpy(&lb, &b, sizeof lb);
  } else {
    float fa = (float)a, fb = (float)b;
    int32_t ia, ib;
    memcpy(&ia, &fa, sizeof ia);
    memcpy(&ib, &fb, sizeof ib);
    la = ia < 0 ? (int64_t)INT32_MIN - ia : ia;
    lb = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return (uint64_t)(la > lb ? la - lb : lb - la);
  }
  /* map sign-magnitude to a line where adjacent values are adjacent ints;
   * the distance fits in 64 unsigned bits */
  la = la < 0 ? INT64_MIN - la : la;
  lb = lb < 0 ? INT64_MIN - lb : lb;
  return la > lb ? (uint64_t)la - (uint64_t)lb : (uint64_t)lb - (uint64_t)la;
}

/* The reference and bound of a block of float inputs summed (or averaged)
 * in double: ref = acc / div, bound = sum_rel * amp + ref_rel * |ref| +
 * sum_tiny, as the general loop in prepare_reference computes them, but in
 * double (exact enough: the bound's (1 + u) margins dwarf double's
 * rounding) and without branches, so the loop vectorizes. The bound is
 * rounded up to float by adding one to its bits where the conversion
 * rounded down. Returns 0, having written nothing, if any input was not
 * finite. */
RS_CLONES
static int finish_sums_f32(size_t len, const double *restrict acc,
                           const double *restrict amp, double div,
                           double sum_rel, double ref_rel, double sum_tiny,
                           double *restrict ref, float *restrict bound) {
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

static void bound_constants(const rs_run_t *run, bound_k_t *k) {
  const int W = run->config.workers;
  const rs_op_t op = run->config.op;
  const int bits = rs_dtype_mantissa_bits(run->dtype);
  /* The ring's unit roundoff: f32 2^-24, f64 2^-53; f16 (2^-11) and bf16
   * (2^-8) round each hop's float32 sum to the dtype, and float32's own
   * rounding adds 2^-24. */
  const long double u =
      ldexpl(1.0L, -bits) +
      (run->dtype == RS_DTYPE_F16 || run->dtype == RS_DTYPE_BF16
           ? ldexpl(1.0L, -24)
           : 0.0L);
  /* theta(depth): the most roundings one contribution goes through in
   * the run's algorithm (the ring: W-1; with --algo auto, the worst of
   * those its buckets run). */
  const int depth = W > 1 ? run->depth : 0;
  const long double gamma = expm1l(depth * log1pl(u));
  /* The reference's own error: its sum (in double, or long double for
   * f64), and storing it as a double. */
  const long double slack =
      W * (run->dtype == RS_DTYPE_F64 ? LDBL_EPSILON : DBL_EPSILON);
  const long double store = ldexpl(1.0L, -53);
  /* The dtype's smallest subnormal: what underflow in a division or a
   * product can lose. */
  const long double tiny = ldexpl(1.0L, run->dtype == RS_DTYPE_F64    ? -1074
                                        : run->dtype == RS_DTYPE_F16  ? -24
                                        : run->dtype == RS_DTYPE_BF16 ? -133
                                                                      : -149);
  k->div = op == RS_OP_AVG ? W : 1;
  k->pre = op == RS_OP_AVG && run->config.average_pre;
  k->post = op == RS_OP_AVG && !k->pre;
  /* The bound is  sum_rel * sum|g| + ref_rel * |ref| + sum_tiny  for sums
   * and averages: the W-1 roundings of the ring's additions (with the
   * reference's own error, and (1 + u) for this arithmetic's), plus a
   * pre-divided average's extra rounding of each x/W, or a post-divided
   * one's of the quotient, plus what underflow can lose. Products:
   * prod_rel * |ref| + prod_tiny * prod max(1, |g|). */
  k->sum_rel = (gamma + slack) / k->div * (1 + u);
  k->ref_rel = store;
  k->sum_tiny = 0;
  if (k->pre) {
    k->sum_rel += u / k->div * (1 + u);
    /* pre-mul: x times 1/W rounded, one more rounding (of 1/W) */
    if (run->config.average_pre == RS_AVERAGE_PRE_MUL)
      k->sum_rel += u / k->div * (1 + u);
    k->sum_tiny = W * tiny;
  } else if (op == RS_OP_AVG) {
    k->ref_rel += u;
    k->sum_tiny = tiny;
  }
  /* A product's roundings do not stay with one contribution: each of the
   * W-1 multiplications rounds the whole product that passes through it,
   * so every algorithm's result carries all W-1 of them, whatever its
   * depth (a tree's or recursive doubling's is only log2 W). */
  const int products = W > 1 ? W - 1 : 0;
  k->prod_rel = (expm1l(products * log1pl(u)) + slack) * (1 + u) + store;
  k->prod_tiny = products * tiny;
  /* float inputs sum in double; f64 inputs in long double */
  k->f64 = run->dtype == RS_DTYPE_F64;
}

/* One thread's room for one block (BLOCK elements each). */
typedef struct scratch {
  unsigned char *inputs;   /* one worker's inputs, made again */
  unsigned char *quotient; /* a pre-divided average's x / W */
  double *ref;             /* the reference ... */
  double *ref_lo;          /* (f64: its low part, RUN's ref_lo) */
  unsigned char *bound;    /* ... its bound (buffer type) */
  unsigned char *exact;    /* exact inputs: the direct mean (buffer type) */
  unsigned char *fixed;    /* order_report: the fixed order's result */
  double *acc, *amp;
  long double *acc_l, *amp_l;
  void *memory;
} scratch_t;

static int scratch_alloc(scratch_t *s) {
  const size_t d = BLOCK * sizeof(double), l = BLOCK * sizeof(long double);
  unsigned char *m = malloc(9 * d + 2 * l);
  s->memory = m;
  if (!m)
    return RS_ENOMEM;
  s->inputs = m;
  s->quotient = m + d;
  s->ref = (double *)(void *)(m + 2 * d);
  s->bound = m + 3 * d;
  s->exact = m + 4 * d;
  s->fixed = m + 5 * d;
  s->acc = (double *)(void *)(m + 6 * d);
  s->amp = (double *)(void *)(m + 7 * d);
  s->ref_lo = (double *)(void *)(m + 8 * d);
  s->acc_l = (long double *)(void *)(m + 9 * d);
  s->amp_l = (long double *)(void *)(m + 9 * d + l);
  return RS_OK;
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
    rs__pre_average(run->dtype, s->quotient, len, W, run->config.average_pre);
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

/* The reference of elements start .. start+len-1 (at most BLOCK): the
 * direct mean into exact (exact inputs), or the wider-precision reference
 * into ref and its bound into bound; with a streamed order report, the
 * fixed order's result into s->fixed. On bad inputs (not finite, or a
 * product beyond the reference's range) returns RS_EINVAL with the
 * message in errmsg. */
/* Exact inputs' reference, the direct mean as direct_reduce computes it:
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

static int block_reference(const rs_run_t *run, const check_plan_t *plan,
                           scratch_t *s, size_t start, size_t len, double *ref,
                           double *ref_lo, void *bound, void *exact,
                           char *errmsg) {
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
   * generated) its block, whose sums mpi.c then sums over the processes */
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
  if (run->mpi && !plan->stream) /* (exact inputs are generated: streamed) */
    rs__mpi_reduce_sums(run, f64 ? (void *)s->acc_l : (void *)s->acc,
                        f64 ? (void *)s->amp_l : (void *)s->amp, len, f64);
  if (plan->exact) {
    exact_finish(run, exact, len);
    return RS_OK;
  }
  /* The common case, float inputs summed or averaged, takes the fast
   * path; everything else (f64, min, max, prod, non-finite input) the
   * general one below. */
  if (!f64 && (op == RS_OP_SUM || op == RS_OP_AVG) &&
      finish_sums_f32(len, s->acc, s->amp, (double)k->div, (double)k->sum_rel,
                      (double)k->ref_rel, (double)k->sum_tiny, ref, bound))
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

/* Merge one param's check b into a (the same rules as compare_block's). */
static void merge_check(rs_param_check_t *a, const rs_param_check_t *b) {
  if (!(b->max_abs_err <= a->max_abs_err))
    a->max_abs_err = b->max_abs_err;
  if (b->max_rel_err > a->max_rel_err)
    a->max_rel_err = b->max_rel_err;
  if (b->bound > a->bound)
    a->bound = b->bound;
  if (!(b->worst_ratio <= a->worst_ratio))
    a->worst_ratio = b->worst_ratio;
  a->differing += b->differing;
  a->wrong += b->wrong;
  a->order_differing += b->order_differing;
  if (b->order_max_ulps > a->order_max_ulps)
    a->order_max_ulps = b->order_max_ulps;
}

/* A double's bits. */
static inline uint64_t bits_of(double x) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  return bits;
}

#define INF_BITS 0x7ff0000000000000u /* +inf */
#define ONE_BITS 0x3ff0000000000000u /* 1.0 */

/* compare_block's loop for one param's elements of an f32 run without the
 * order report, the common case: got[j] against the reference ref_of[j]
 * of type REF (double, within bound_of[j]; or exact inputs' float,
 * bitwise). The same fields as the general loop, bit for bit, but
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
static void compare_block(const rs_run_t *run, size_t start, size_t len,
                          const double *ref_of, const double *ref_lo_of,
                          const void *bound_of, const void *exact_of,
                          const void *fixed_of, rs_param_check_t *checks) {
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
      uint64_t ulps = ulps_apart(run, got, array_at(run, fixed_of, j));
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
                          const void *ref0, uint64_t *counts,
                          rs_mismatch_t *list, size_t *listed) {
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
      counts[w]++;
      const size_t i = start + j;
      while (i >= rs_model_param(run->model, p)->elem_offset +
                      rs_model_param(run->model, p)->elems)
        p++;
      rs_mismatch_t m = {.worker = w,
                         .param = p,
                         .elem = i,
                         .value = array_at(run, got, j),
                         .worker0_value = array_at(run, want, j)};
      list_insert(list, listed, &m);
    }
  }
}

/* Elements a thread takes at a time (whole blocks). */
#define PIECE (32 * BLOCK)

/* The work every helper thread shares (parallel.h): the pieces of the
 * reference before the run, or of the check after it. */
typedef struct check_job {
  rs_run_t *run;
  const check_plan_t *plan;
  int after; /* the check after the run; else the reference before it */
  atomic_size_t next;
  atomic_int stop;    /* a thread failed: take no more pieces */
  pthread_mutex_t mu; /* guards what follows */
  rs_param_check_t *checks;
  int identical;
  int rc;            /* the failure of the lowest piece that failed */
  size_t fail_piece; /* (the same inputs give the same message) */
  char errmsg[RS_ERRMSG_MAX];
} check_job_t;

static void *check_pieces(void *arg) {
  check_job_t *job = arg;
  rs_run_t *run = job->run;
  const check_plan_t *plan = job->plan;
  const size_t n = run->elems, size = run->buf_elem_bytes;
  const size_t params = rs_model_param_count(run->model);
  scratch_t s = {0};
  rs_param_check_t *checks = calloc(params, sizeof *checks);
  /* workers that differ from worker 0 (one process; mpi.c's merge lists
   * them over MPI) */
  uint64_t *counts =
      job->after ? calloc((size_t)run->config.workers, sizeof *counts) : NULL;
  rs_mismatch_t list[RS_MISMATCH_LIST];
  size_t listed = 0;
  char errmsg[RS_ERRMSG_MAX];
  int rc = RS_OK, identical = 1;
  size_t piece = 0;
  if (!checks || (job->after && !counts) || scratch_alloc(&s)) {
    rc = rs__err(errmsg, RS_ENOMEM, "out of memory for the check");
    free(checks);
    checks = NULL;
    s.memory = NULL;
  }
  while (rc == RS_OK && !atomic_load(&job->stop) && !rs__run_stopped(run)) {
    piece = atomic_fetch_add(&job->next, 1);
    if (piece * PIECE >= n)
      break;
    size_t end = n - piece * PIECE < PIECE ? n : (piece + 1) * PIECE;
    for (size_t start = piece * PIECE; start < end && rc == RS_OK;
         start += BLOCK) {
      size_t len = end - start < BLOCK ? end - start : BLOCK;
      /* the reference of the block: kept whole from before the run, or
       * made now */
      int kept = !plan->stream;
      double *ref = kept && run->ref ? run->ref + start : s.ref;
      double *ref_lo = !plan->k.f64          ? NULL
                       : kept && run->ref_lo ? run->ref_lo + start
                                             : s.ref_lo;
      void *bound = kept && run->bound
                        ? (unsigned char *)run->bound + start * size
                        : s.bound;
      void *exact = kept && run->ref_exact
                        ? (unsigned char *)run->ref_exact + start * size
                        : s.exact;
      if (!job->after || plan->stream)
        rc = block_reference(run, plan, &s, start, len, ref, ref_lo, bound,
                             exact, errmsg);
      if (rc == RS_OK && job->after) {
        /* this process's workers (mpi.c compares the processes) */
        const int first = run->first_local;
        int same = 1;
        for (int w = first + 1; w < run->local_end && same; w++)
          same = memcmp(run->bufs[w] + start * size,
                        run->bufs[first] + start * size, len * size) == 0;
        identical &= same;
        if (!same && !run->mpi) /* (first is worker 0) */
          rs__check_list_block(run, start, len, run->bufs[0] + start * size,
                               counts, list, &listed);
        const void *fixed =
            !plan->fixed   ? NULL
            : plan->stream ? (const void *)s.fixed
                           : (const unsigned char *)run->fixed + start * size;
        compare_block(run, start, len, plan->exact ? NULL : ref,
                      plan->exact ? NULL : ref_lo, plan->exact ? NULL : bound,
                      exact, fixed, checks);
      }
      rs__progress_add(run, len);
    }
  }
  if (rc)
    atomic_store(&job->stop, 1);
  RS_PTHREAD_CHECK(pthread_mutex_lock(&job->mu));
  if (rc && (job->rc == RS_OK || piece < job->fail_piece)) {
    job->rc = rc;
    job->fail_piece = piece;
    memcpy(job->errmsg, errmsg, sizeof errmsg);
  }
  job->identical &= identical;
  for (size_t p = 0; checks && p < params; p++)
    merge_check(&job->checks[p], &checks[p]);
  for (int w = 0; counts && run->mismatches && w < run->config.workers; w++)
    run->mismatches[w] += counts[w];
  if (run->mismatches)
    rs__check_list_merge(run->first_mismatches, &run->mismatches_listed, list,
                         listed);
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&job->mu));
  free(counts);
  free(checks);
  free(s.memory);
  return NULL;
}

/* Run the reference (after == 0) or the check (after == 1) on the plan's
 * threads; returns the run's status. */
static int run_check_job(rs_run_t *run, int after) {
  check_job_t job = {.run = run,
                     .plan = run->check_plan,
                     .after = after,
                     .checks = run->checks,
                     .identical = 1};
  atomic_init(&job.next, 0);
  atomic_init(&job.stop, 0);
  RS_PTHREAD_CHECK(pthread_mutex_init(&job.mu, NULL));
  /* (between a pool's iterations the check interrupts the all-reduce's
   * stage, which then goes on) */
  int stage = atomic_load(&run->phase);
  size_t done = atomic_load(&run->phase_done);
  size_t total = atomic_load(&run->phase_total);
  rs__progress_begin(run, after ? RS_STAGE_CHECK : RS_STAGE_REFERENCE,
                     run->elems);
  rs__parallel(job.plan->threads, check_pieces, &job);
  rs__progress_begin(run, (rs_stage_t)stage, total);
  rs__progress_add(run, done);
  RS_PTHREAD_CHECK(pthread_mutex_destroy(&job.mu));
  run->result.identical = job.identical;
  if (job.rc)
    return rs__run_fail(run, job.rc, "%s", job.errmsg);
  if (rs__run_stopped(run))
    return rs__run_take_interrupt(run);
  return RS_OK;
}

/* Exact inputs' reference: their direct mean, exact, rounded once to the
 * dtype; what the ring must produce bit for bit. */
static int exact_inputs(const rs_run_t *run) {
  const rs_op_t op = run->config.op;
  /* Exact inputs make sums, means (divided after), minima and maxima exact
   * in any order; a product or a pre-divided mean is not. ... and every
   * partial sum of W multiples of 1/16 must be representable (rs__exact_k:
   * the inputs' range shrinks for f16 and bf16 so that it is, up to 2048
   * and 256 workers). */
  return run->init == RS_INIT_EXACT &&
         rs__exact_k(run->dtype, run->config.workers) > 0 && op != RS_OP_PROD &&
         !(op == RS_OP_AVG && run->config.average_pre);
}

int rs__check_fills_reference(const rs_run_t *run) {
  return exact_inputs(run) && !run->mpi && !run->config.order_report &&
         run->config.check_threads != 1 && run->config.ref_reps == 1;
}

void rs__check_fill_fold(const rs_run_t *run, int w, size_t start, size_t len) {
  const size_t size = run->buf_elem_bytes; /* as block_reference */
  exact_fold(run, (unsigned char *)run->ref_exact + start * size, w,
             run->bufs[w] + start * size, len);
}

void rs__check_fill_finish(const rs_run_t *run, size_t start, size_t len) {
  exact_finish(
      run, (unsigned char *)run->ref_exact + start * run->buf_elem_bytes, len);
}

int rs__check_prepare(rs_run_t *run) {
  const int W = run->config.workers;
  const rs_op_t op = run->config.op;
  const size_t n = run->elems;
  check_plan_t *plan = calloc(1, sizeof *plan);
  if (!plan)
    return rs__run_fail(run, RS_ENOMEM, "out of memory");
  run->check_plan = plan;
  bound_constants(run, &plan->k);
  plan->fixed = run->config.order_report;
  const int cores = rs__cores();
  plan->threads = run->config.check_threads > 0 ? run->config.check_threads
                  : cores < RS_PARALLEL_MAX     ? cores
                                                : RS_PARALLEL_MAX;
  plan->exact = exact_inputs(run);
  /* Exact inputs generated in one process: rs_run_fill made the reference
   * as it filled the buffers, and the check keeps it (one buffer). Unless
   * the caller took a buffer since, and may have changed the inputs. */
  if (run->ref_exact && !run->generated) {
    free(run->ref_exact);
    run->ref_exact = NULL;
  }
  if (run->ref_exact)
    return RS_OK;
  /* Generated inputs can be made again after the run, block by block, so
   * the check keeps no copy of the reference: the W buffers are all the
   * memory a run needs. A product is the exception: its reference may
   * overflow, which must refuse the run before it starts. A timed
   * reference (one thread, or repetitions: bench's ref) is made before
   * the run, to be timed on its own. */
  plan->stream = run->generated && op != RS_OP_PROD &&
                 run->config.check_threads != 1 && run->config.ref_reps == 1;
  if (plan->stream)
    return RS_OK;
  /* Over MPI each process holds only its own workers' inputs: each sums
   * its block's, block by block on one thread, and an MPI reduction sums
   * the processes' (mpi.c). The order report's fixed order needs every
   * input in one place. */
  if (run->mpi && plan->fixed)
    return rs__run_fail(run, RS_EINVAL,
                        "transport mpi: --order-report needs generated "
                        "grads over MPI (its fixed order needs every "
                        "worker's inputs in one process)");
  if (run->mpi && plan->exact) /* (the CLI's exact inputs stream) */
    return rs__run_fail(run, RS_EINVAL,
                        "transport mpi: a reference timed before the run "
                        "(check_threads 1, ref_reps > 1) is not made over "
                        "MPI");
  int rc = plan->fixed ? prepare_fixed_order(run) : RS_OK;
  if (rc)
    return rc;
  /* Inputs not generated: the reference is kept whole from before the
   * run, 12 bytes an element (4 for exact inputs; 24 for f64: ref_lo)
   * beyond the buffers. */
  const int lo = !plan->exact && plan->k.f64;
  double need = (double)n * (plan->exact ? (double)run->buf_elem_bytes
                                         : (1 + lo) * sizeof(double) +
                                               run->buf_elem_bytes) +
                (double)W * (double)n * (double)run->buf_elem_bytes;
  double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  if (have > 0 && need > 0.9 * have)
    return rs__run_fail(run, RS_ENOMEM,
                        "the check's reference needs about %.1f GiB more "
                        "(%zu elements; inputs that are not generated are "
                        "kept whole), more than this machine's %.1f GiB",
                        (need - (double)W * (double)n * run->buf_elem_bytes) /
                            (1 << 30),
                        n, have / (1 << 30));
  if (plan->exact && (plan->threads == 1 || run->config.ref_reps > 1))
    return prepare_exact(run); /* on one thread, timed over ref_reps */
  if (plan->exact)
    run->ref_exact = malloc((n ? n : 1) * run->buf_elem_bytes);
  else {
    run->ref = malloc((n ? n : 1) * sizeof *run->ref);
    run->ref_lo = lo ? malloc((n ? n : 1) * sizeof *run->ref_lo) : NULL;
    run->bound = malloc((n ? n : 1) * run->buf_elem_bytes);
  }
  if (plan->exact ? !run->ref_exact
                  : !run->ref || !run->bound || (lo && !run->ref_lo))
    return rs__run_fail(run, RS_ENOMEM,
                        "out of memory for the reference (%zu elements)", n);
  uint64_t t0 = rs__now_ns();
  int threads = plan->threads;
  if (run->mpi) /* one thread: the reductions in the same order everywhere */
    plan->threads = 1;
  rc = run_check_job(run, 0);
  plan->threads = threads;
  run->result.ref_ns = rs__now_ns() - t0;
  return rc;
}

/* For a result outside its bound: the inputs are finite (refused
 * otherwise), so a result that is not finite is an arithmetic overflow,
 * of a partial sum (or product) or of the exact one itself. Names the
 * first such element in text (": the sum overflowed to inf in f16, ..."),
 * or leaves text empty if every element is finite. */
static void name_overflow(const rs_run_t *run, char *text, size_t size) {
  text[0] = '\0';
  const size_t n = rs_model_elems(run->model);
  size_t i = 0, count = 0;
  for (size_t k = 0; k < n; k++)
    if (!isfinite(value_at(run, run->first_local, k)) && !count++)
      i = k;
  if (!count)
    return;
  const rs_param_t *param =
      rs_model_param(run->model, rs__model_param_at(run->model, i));
  double got = value_at(run, run->first_local, i);
  const rs_config_t *c = &run->config;
  int post_avg = c->op == RS_OP_AVG && c->average_pre == RS_AVERAGE_POST;
  snprintf(text, size,
           ": the %s overflowed to %s in %s, at %zu element(s), the first "
           "\"%.100s\"[%zu] (element %zu)%s",
           c->op == RS_OP_PROD ? "product" : "sum",
           isnan(got) ? "nan (inf - inf)" : got < 0 ? "-inf" : "inf",
           rs_dtype_name(run->dtype), count, param->name,
           i - param->elem_offset, i,
           post_avg ? "; --average pre divides each gradient by the worker "
                      "count before the sum"
                    : "");
}

static uint64_t wrong_total(const rs_run_t *run) {
  uint64_t total = 0;
  for (size_t p = 0; p < rs_model_param_count(run->model); p++)
    total += run->checks[p].wrong;
  return total;
}

void rs__check_result(rs_run_t *run) {
  const check_plan_t *plan = run->check_plan;
  rs_result_t *res = &run->result;
  memset(run->checks, 0,
         rs_model_param_count(run->model) * sizeof *run->checks);
  res->exact = plan->exact; /* bitwise check, not a bound */
  res->check_threads = plan->threads;
  const size_t W = (size_t)run->config.workers;
  if (!run->mismatches)
    run->mismatches = calloc(W, sizeof *run->mismatches);
  else
    memset(run->mismatches, 0, W * sizeof *run->mismatches);
  run->mismatches_listed = 0; /* (out of memory: no listing) */
  uint64_t t0 = rs__now_ns();
  int rc = run_check_job(run, 1);
  if (run->mpi) { /* every process checked its own workers: merge */
    if (!rs__mpi_all(run, rc == RS_OK))
      return; /* interrupted somewhere: not checked */
    rs__mpi_check_merge(run, &res->identical);
  } else if (rc != RS_OK) {
    return; /* interrupted: not checked */
  }
  res->check_ns = rs__now_ns() - t0;
  for (size_t p = 0; p < rs_model_param_count(run->model); p++) {
    const rs_param_check_t *c = &run->checks[p];
    if (!(c->max_abs_err <= res->max_abs_err))
      res->max_abs_err = c->max_abs_err;
    if (c->bound > res->bound)
      res->bound = c->bound;
    if (!(c->worst_ratio <= res->worst_ratio))
      res->worst_ratio = c->worst_ratio;
  }
  run->checked = 1;
  run->result.checked = 1;
  /* rs__run_fail sets the status with its message */
  if (!res->identical)
    rs__run_fail(run, RS_ECHECK,
                 "workers do not hold identical results (worst error/bound "
                 "%g)",
                 res->worst_ratio);
  else if (!(res->worst_ratio <= 1.0)) {
    char overflow[RS_ERRMSG_MAX];
    name_overflow(run, overflow, sizeof overflow);
    rs__run_fail(run, RS_ECHECK,
                 "%llu element(s) outside the error bound (worst "
                 "error/bound %g)%s",
                 (unsigned long long)wrong_total(run), res->worst_ratio,
                 overflow);
  }
}
