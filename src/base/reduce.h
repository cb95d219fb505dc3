/* reduce.h - the elementwise kernels a receiver applies to a segment.
 *
 * Plain loops over restrict pointers: the compiler vectorizes them at -O2
 * and above. dst is the receiver's own buffer, src the queue slot. Each
 * kernel exists for float (suffix f32: the f32, f16 and bf16 runs) and for
 * double (f64); RS_DEFINE_KERNELS writes both from one text, so the two
 * families cannot drift apart. rs__fold and rs__scale_div pick the family for
 * a run's dtype.
 */
#ifndef RINGSIM_REDUCE_H
#define RINGSIM_REDUCE_H

#include <stddef.h>
#include <string.h>

#include "base/dtype.h" /* the half-precision wire's pack and unpack */
#include "ringsim/ringsim.h"

/* For element type T, with name suffix S:
 *   rs__reduce_sum_S      dst[i] += src[i]
 *   rs__reduce_sum_div_S  dst[i] = (dst[i] + src[i]) / divisor: the last
 *                        addition of an average. A true division (not a
 *                        multiply by 1/divisor) keeps the result the
 *                        correctly rounded quotient of the sum.
 *   rs__reduce_min_S/max_S  compare-and-select loops the compiler turns into
 *                        minps/maxps (inputs are finite: no NaN)
 *   rs__reduce_prod_S     dst[i] *= src[i]
 *   rs__scale_div_S       dst[i] /= divisor: the pre-division of an average
 *   rs__scale_mul_S       dst[i] *= factor: PyTorch DDP's pre-scaling, by
 *                        1/W rounded to the dtype (RS_AVERAGE_PRE_MUL)
 *   rs__reduce_S          fold src into dst with op (avg folds as sum) */
#define RS_DEFINE_KERNELS(S, T)                                                \
  static inline void rs__reduce_sum_##S(T *restrict dst,                       \
                                        const T *restrict src, size_t n) {     \
    for (size_t i = 0; i < n; i++)                                             \
      dst[i] += src[i];                                                        \
  }                                                                            \
  static inline void rs__reduce_sum_div_##S(                                   \
      T *restrict dst, const T *restrict src, size_t n, T divisor) {           \
    for (size_t i = 0; i < n; i++)                                             \
      dst[i] = (dst[i] + src[i]) / divisor;                                    \
  }                                                                            \
  static inline void rs__reduce_min_##S(T *restrict dst,                       \
                                        const T *restrict src, size_t n) {     \
    for (size_t i = 0; i < n; i++)                                             \
      dst[i] = src[i] < dst[i] ? src[i] : dst[i];                              \
  }                                                                            \
  static inline void rs__reduce_max_##S(T *restrict dst,                       \
                                        const T *restrict src, size_t n) {     \
    for (size_t i = 0; i < n; i++)                                             \
      dst[i] = src[i] > dst[i] ? src[i] : dst[i];                              \
  }                                                                            \
  static inline void rs__reduce_prod_##S(T *restrict dst,                      \
                                         const T *restrict src, size_t n) {    \
    for (size_t i = 0; i < n; i++)                                             \
      dst[i] *= src[i];                                                        \
  }                                                                            \
  static inline void rs__scale_div_##S(T *restrict dst, size_t n, T divisor) { \
    for (size_t i = 0; i < n; i++)                                             \
      dst[i] /= divisor;                                                       \
  }                                                                            \
  static inline void rs__scale_mul_##S(T *restrict dst, size_t n, T factor) {  \
    for (size_t i = 0; i < n; i++)                                             \
      dst[i] *= factor;                                                        \
  }                                                                            \
  static inline void rs__reduce_##S(T *restrict dst, const T *restrict src,    \
                                    size_t n, rs_op_t op) {                    \
    switch (op) {                                                              \
    case RS_OP_MIN:                                                            \
      rs__reduce_min_##S(dst, src, n);                                         \
      break;                                                                   \
    case RS_OP_MAX:                                                            \
      rs__reduce_max_##S(dst, src, n);                                         \
      break;                                                                   \
    case RS_OP_PROD:                                                           \
      rs__reduce_prod_##S(dst, src, n);                                        \
      break;                                                                   \
    case RS_OP_SUM:                                                            \
    case RS_OP_AVG:                                                            \
      rs__reduce_sum_##S(dst, src, n);                                         \
      break;                                                                   \
    }                                                                          \
  }

RS_DEFINE_KERNELS(f32, float)
RS_DEFINE_KERNELS(f64, double)

/* One hop's fold of n elements of src into dst, in the buffers' type for
 * dtype (double for f64, float otherwise): with op, or, when divisor > 0,
 * the sum divided by divisor (the last addition of a post-divided average).
 * f16 and bf16 then round the float32 result to the dtype, as NCCL does
 * when it stores and sends. */
static inline void rs__fold(rs_dtype_t dtype, void *dst, const void *src,
                            size_t n, rs_op_t op, int divisor) {
  if (dtype == RS_DTYPE_F64) {
    if (divisor > 0)
      rs__reduce_sum_div_f64(dst, src, n, (double)divisor);
    else
      rs__reduce_f64(dst, src, n, op);
    return;
  }
  if (divisor > 0)
    rs__reduce_sum_div_f32(dst, src, n, (float)divisor);
  else
    rs__reduce_f32(dst, src, n, op);
  rs_dtype_round_all(dtype, dst, n);
}

/* dst[i] /= divisor in dtype's buffer type, rounded to dtype: the
 * pre-division of an average. */
static inline void rs__scale_div(rs_dtype_t dtype, void *dst, size_t n,
                                 int divisor) {
  if (dtype == RS_DTYPE_F64) {
    rs__scale_div_f64(dst, n, (double)divisor);
    return;
  }
  rs__scale_div_f32(dst, n, (float)divisor);
  rs_dtype_round_all(dtype, dst, n);
}

/* The pre-averaging of each worker's own gradient, as mode
 * (rs_config_t.average) asks: RS_AVERAGE_PRE divides by W;
 * RS_AVERAGE_PRE_MUL multiplies by 1/W rounded to the dtype first, as
 * PyTorch 1.13's DDP reducer does (at::mul_out by the wrapped scalar
 * 1./div_factor, which the CPU kernel casts to the tensor's type: float16's
 * 1/3 is 0.33325, not float32's 0.33333334), in float32, then rounds to
 * dtype. */
static inline void rs__pre_average(rs_dtype_t dtype, void *dst, size_t n,
                                   int workers, int mode) {
  /* A compressing hook's cast (its inputs are float32); a no-op on values
   * already of the dtype. */
  if (dtype == RS_DTYPE_F16 || dtype == RS_DTYPE_BF16)
    rs_dtype_round_all(dtype, dst, n);
  if (mode != RS_AVERAGE_PRE_MUL) {
    rs__scale_div(dtype, dst, n, workers);
    return;
  }
  if (dtype == RS_DTYPE_F64) {
    rs__scale_mul_f64(dst, n, 1.0 / workers);
    return;
  }
  rs__scale_mul_f32(dst, n, rs_dtype_round(dtype, (float)(1.0 / workers)));
  rs_dtype_round_all(dtype, dst, n);
}

#endif /* RINGSIM_REDUCE_H */
