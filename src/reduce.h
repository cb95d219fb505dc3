/* reduce.h - the elementwise kernels a receiver applies to a segment.
 *
 * Plain loops over restrict pointers: the compiler vectorizes them at -O2
 * and above. dst is the receiver's own buffer, src the channel slot.
 */
#ifndef RINGSIM_REDUCE_H
#define RINGSIM_REDUCE_H

#include <stddef.h>
#include <string.h>

#include "ringsim/ringsim.h"

/* dst[i] += src[i] */
static inline void rs_reduce_sum_f32(float *restrict dst,
                                     const float *restrict src, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] += src[i];
}

/* dst[i] = (dst[i] + src[i]) / divisor: the last addition of an average. A
 * true division (not a multiply by 1/divisor) keeps the result the correctly
 * rounded quotient of the sum. */
static inline void rs_reduce_sum_div_f32(float *restrict dst,
                                         const float *restrict src, size_t n,
                                         float divisor) {
  for (size_t i = 0; i < n; i++)
    dst[i] = (dst[i] + src[i]) / divisor;
}

/* dst[i] = min(dst[i], src[i]) and max: compare-and-select loops the
 * compiler turns into minps/maxps. Inputs are finite (no NaN). */
static inline void rs_reduce_min_f32(float *restrict dst,
                                     const float *restrict src, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = src[i] < dst[i] ? src[i] : dst[i];
}

static inline void rs_reduce_max_f32(float *restrict dst,
                                     const float *restrict src, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] = src[i] > dst[i] ? src[i] : dst[i];
}

static inline void rs_reduce_prod_f32(float *restrict dst,
                                      const float *restrict src, size_t n) {
  for (size_t i = 0; i < n; i++)
    dst[i] *= src[i];
}

/* dst[i] /= divisor: the pre-division of an average. */
static inline void rs_scale_div_f32(float *restrict dst, size_t n,
                                    float divisor) {
  for (size_t i = 0; i < n; i++)
    dst[i] /= divisor;
}

/* Fold src into dst with op (sum, min, max, prod; avg folds as sum). */
static inline void rs_reduce_f32(float *restrict dst, const float *restrict src,
                                 size_t n, rs_op_t op) {
  switch (op) {
  case RS_OP_MIN:
    rs_reduce_min_f32(dst, src, n);
    break;
  case RS_OP_MAX:
    rs_reduce_max_f32(dst, src, n);
    break;
  case RS_OP_PROD:
    rs_reduce_prod_f32(dst, src, n);
    break;
  case RS_OP_SUM:
  case RS_OP_AVG:
    rs_reduce_sum_f32(dst, src, n);
    break;
  }
}

static inline void rs_copy_f32(float *restrict dst, const float *restrict src,
                               size_t n) {
  if (n)
    memcpy(dst, src, n * sizeof(float));
}

#endif /* RINGSIM_REDUCE_H */
