/* check_prepare.c - the check planned before the run (rs__check_prepare):
 * where its reference comes from, the floating-point error bound's
 * constants, a reference kept whole or timed on one thread, the order
 * report's fixed order.
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/parallel.h"
#include "base/reduce.h"
#include "base/util.h"
#include "check/check_internal.h"

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

/* The result as one thread computes it in a fixed order, in the buffers'
 * type: worker 0's value, then worker 1's folded in, and so on (a
 * pre-divided average divides each first). What the ring's chunk-dependent
 * order is compared with. */
static int prepare_fixed_order(rs_run_t *run) {
  const int W = run->config.workers;
  const size_t n = run->elems, size = run->buf_elem_bytes;
  const int pre = run->config.op == RS_OP_AVG && run->config.average;
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
        rs__pre_average(run->dtype, quotient, len, W, run->config.average);
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
  k->pre = op == RS_OP_AVG && run->config.average;
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
    /* pre-mul: x times 1/W rounded, one more rounding (of 1/W); a
     * compressing hook's cast of x to its dtype, one more, and what the
     * cast flushes to zero: at most tiny / 2 an input, tiny over the W
     * after the division */
    if (run->config.average == RS_AVERAGE_PRE_MUL || run->hook_cast)
      k->sum_rel += u / k->div * (1 + u);
    k->sum_tiny = (W + run->hook_cast) * tiny;
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
         !(op == RS_OP_AVG && run->config.average);
}

int rs__check_fills_reference(const rs_run_t *run) {
  return exact_inputs(run) && run->job->all_here &&
         !run->config.order_report &&
         run->config.check_threads != 1 && run->config.ref_reps == 1;
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
   * the processes' (mpi/merge.c). The order report's fixed order needs every
   * input in one place. */
  if (!run->job->all_here && plan->fixed)
    return rs__run_fail(run, RS_EINVAL,
                        "transport mpi: --order-report needs generated "
                        "grads over MPI (its fixed order needs every "
                        "worker's inputs in one process)");
  /* (the CLI's exact inputs stream) */
  if (!run->job->all_here && plan->exact)
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
  /* one thread: the reductions in the same order everywhere */
  if (run->job->ordered_check)
    plan->threads = 1;
  rc = rs__check_run_job(run, 0);
  plan->threads = threads;
  run->result.ref_ns = rs__now_ns() - t0;
  return rc;
}
