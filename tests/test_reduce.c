/* test_reduce.c - the elementwise kernels, at every length and alignment
 * the vectorized loops have to handle. */
#include "test.h"

#include <math.h>
#include <string.h>

#include "base/dtype.h"
#include "base/reduce.h"
#include "ringsim/ringsim.h"

#define N 67

/* reduce-1: sum, sum-then-divide and product match a scalar computation for
 * lengths 0..N at offsets 0..3 (so both aligned and unaligned heads), and
 * never touch the element after the end. */
static void test_kernels_match_scalar(void **state) {
  (void)state;
  float dst[N + 8], src[N + 8], want[N + 8];
  for (int kernel = 0; kernel < 3; kernel++)
    for (size_t start = 0; start < 4; start++)
      for (size_t len = 0; len <= N; len++) {
        for (size_t i = 0; i < N + 8; i++) {
          dst[i] = want[i] = (float)i * 0.5f - 3.0f;
          src[i] = (float)(i * 7 % 11) - 5.25f;
        }
        for (size_t i = start; i < start + len; i++)
          want[i] = kernel == 0   ? dst[i] + src[i]
                    : kernel == 1 ? (dst[i] + src[i]) / 3.0f
                                  : dst[i] * src[i];
        if (kernel == 0)
          rs__reduce_sum_f32(dst + start, src + start, len);
        else if (kernel == 1)
          rs__reduce_sum_div_f32(dst + start, src + start, len, 3.0f);
        else
          rs__fold(RS_DTYPE_F32, dst + start, src + start, len, RS_OP_PROD, 0);
        for (size_t i = 0; i < N + 8; i++)
          assert_memory_equal(&dst[i], &want[i], sizeof(float));
      }
}

/* reduce-2: the average divides (correctly rounded), it does not multiply
 * by a rounded reciprocal: (1 + 2) / 3 is exactly 1, and 0.1f+0.2f over 3
 * equals the correctly rounded quotient. */
/* reduce-1b: the double family, through rs__fold as the ring calls it for
 * f64: every op at every length and offset equals the scalar double
 * computation, bit for bit, and leaves the neighbours alone. */
static void test_f64_fold_matches_scalar(void **state) {
  (void)state;
  const rs_op_t ops[] = {RS_OP_SUM, RS_OP_MIN, RS_OP_MAX, RS_OP_PROD,
                         RS_OP_AVG};
  double dst[N + 8], src[N + 8], want[N + 8];
  for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
    for (size_t start = 0; start < 4; start++)
      for (size_t len = 0; len <= N; len++) {
        for (size_t i = 0; i < N + 8; i++) {
          dst[i] = want[i] = (double)i * 0.1 - 3.0;
          src[i] = (double)(i * 7 % 11) / 3.0 - 1.75;
        }
        for (size_t i = start; i < start + len; i++) {
          double a = dst[i], b = src[i];
          want[i] = ops[k] == RS_OP_MIN    ? (b < a ? b : a)
                    : ops[k] == RS_OP_MAX  ? (b > a ? b : a)
                    : ops[k] == RS_OP_PROD ? a * b
                    : ops[k] == RS_OP_AVG  ? (a + b) / 5.0
                                           : a + b;
        }
        /* avg: the last hop of a post-divided mean of 5 workers */
        rs__fold(RS_DTYPE_F64, dst + start, src + start, len, ops[k],
                 ops[k] == RS_OP_AVG ? 5 : 0);
        for (size_t i = 0; i < N + 8; i++)
          if (memcmp(&dst[i], &want[i], sizeof(double)) != 0)
            fail_msg("op %d start %zu len %zu: element %zu is %.17g, want "
                     "%.17g",
                     (int)ops[k], start, len, i, dst[i], want[i]);
      }
}

static void test_average_is_a_true_division(void **state) {
  (void)state;
  float dst[2] = {1.0f, 0.1f}, src[2] = {2.0f, 0.2f};
  float want = (0.1f + 0.2f) / 3.0f;
  rs__reduce_sum_div_f32(dst, src, 2, 3.0f);
  assert_true(dst[0] == 1.0f);
  assert_memory_equal(&dst[1], &want, sizeof want);
}

/* reduce-3: the f16 and bf16 conversions round to nearest, ties to even,
 * overflow to infinity, and keep subnormals; every f16 value round-trips. */
static void test_half_precision_conversions(void **state) {
  (void)state;
  const struct {
    float in;
    uint16_t f16;
  } cases[] = {{1.0f, 0x3c00},     {-2.0f, 0xc000},    {65504.0f, 0x7bff},
               {65519.0f, 0x7bff}, {65520.0f, 0x7c00}, {1e9f, 0x7c00},
               {0x1p-24f, 0x0001}, {0x1p-25f, 0x0000}, {0x1.8p-25f, 0x0001},
               {0x1p-14f, 0x0400}, {2049.0f, 0x6800},  {2051.0f, 0x6802},
               {0.1f, 0x2e66},     {-0.0f, 0x8000}};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uint16_t got = rs__f32_to_f16(cases[i].in);
    if (got != cases[i].f16)
      fail_msg("f16(%a) = 0x%04x, want 0x%04x", (double)cases[i].in, got,
               cases[i].f16);
  }
  for (uint32_t h = 0; h < 0x10000; h++) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff))
      continue; /* NaN */
    assert_int_equal(rs__f32_to_f16(rs__f16_to_f32((uint16_t)h)), h);
    assert_int_equal(rs__f32_to_bf16(rs__bf16_to_f32((uint16_t)h)), h);
  }
  /* bf16 keeps 8 significant bits: 1 + 2^-8 ties to 1, 1 + 3 * 2^-8 to
   * 1 + 2^-6 */
  assert_int_equal(rs__f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  assert_int_equal(rs__f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  assert_true(rs_dtype_round(RS_DTYPE_F16, 1e6f) == INFINITY);
  assert_true(rs_dtype_round(RS_DTYPE_F32, 0.1f) == 0.1f);
}

/* reduce-4: the vectorized f16/bf16 rounding (rs_dtype_round_all) equals
 * the scalar rs_dtype_round on a million float bit patterns spread over all
 * of them (every 4099th, plus the neighbours of every f16 and bf16 value's
 * rounding boundaries), NaN for NaN; and the 2-byte wire's pack and unpack
 * agree with the scalar encoders on every one of the 65,536 halves. (The
 * development machine checked all 2^32 floats once.) */
static void test_vector_rounding_and_packing_match_scalar(void **state) {
  (void)state;
  enum { BATCH = 4096 };
  static float in[BATCH], got[BATCH];
  const rs_dtype_t dtypes[2] = {RS_DTYPE_F16, RS_DTYPE_BF16};
  uint64_t pattern = 0;
  for (int round = 0; pattern < (1ull << 32); round++) {
    for (int i = 0; i < BATCH; i++) {
      uint32_t b = (uint32_t)pattern;
      /* half the batch: the stride; the other half: next to a boundary */
      if (i % 2 == 0)
        pattern += 4099;
      else
        b = ((uint32_t)(i * 2654435761u + (unsigned)round) & 0xffffe000u) +
            0x0fffu + (uint32_t)(i % 3);
      memcpy(&in[i], &b, sizeof b);
    }
    for (int d = 0; d < 2; d++) {
      memcpy(got, in, sizeof got);
      rs_dtype_round_all(dtypes[d], got, BATCH);
      for (int i = 0; i < BATCH; i++) {
        float want = rs_dtype_round(dtypes[d], in[i]);
        if (isnan(want) && isnan(got[i]))
          continue;
        if (memcmp(&want, &got[i], sizeof want) != 0)
          fail_msg("%s: %a rounds to %a, want %a", rs_dtype_name(dtypes[d]),
                   (double)in[i], (double)got[i], (double)want);
      }
    }
  }
  for (uint32_t h = 0; h < 65536; h++) {
    uint16_t half = (uint16_t)h, back;
    float f;
    rs__unpack_f16(&f, &half, 1);
    float want = rs__f16_to_f32(half);
    assert_memory_equal(&f, &want, sizeof f);
    rs__pack_f16(&back, &want, 1);
    int nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu);
    if (!nan)
      assert_int_equal(back, half);
    rs__unpack_bf16(&f, &half, 1);
    want = rs__bf16_to_f32(half);
    assert_memory_equal(&f, &want, sizeof f);
    rs__pack_bf16(&back, &want, 1);
    assert_int_equal(back, half);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_match_scalar),
      cmocka_unit_test(test_f64_fold_matches_scalar),
      cmocka_unit_test(test_average_is_a_true_division),
      cmocka_unit_test(test_half_precision_conversions),
      cmocka_unit_test(test_vector_rounding_and_packing_match_scalar),
  };
  return cmocka_run_group_tests_name("reduce", tests, NULL, NULL);
}
