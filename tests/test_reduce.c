/* test_reduce.c - the elementwise kernels, at every length and alignment
 * the vectorized loops have to handle. */
#include "test.h"

#include "reduce.h"

#define N 67

/* reduce-1: sum, sum-then-divide and copy match a scalar computation for
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
                                  : src[i];
        if (kernel == 0)
          rs_reduce_sum_f32(dst + start, src + start, len);
        else if (kernel == 1)
          rs_reduce_sum_div_f32(dst + start, src + start, len, 3.0f);
        else
          rs_copy_f32(dst + start, src + start, len);
        for (size_t i = 0; i < N + 8; i++)
          assert_memory_equal(&dst[i], &want[i], sizeof(float));
      }
}

/* reduce-2: the average divides (correctly rounded), it does not multiply
 * by a rounded reciprocal: (1 + 2) / 3 is exactly 1, and 0.1f+0.2f over 3
 * equals the correctly rounded quotient. */
static void test_average_is_a_true_division(void **state) {
  (void)state;
  float dst[2] = {1.0f, 0.1f}, src[2] = {2.0f, 0.2f};
  float want = (0.1f + 0.2f) / 3.0f;
  rs_reduce_sum_div_f32(dst, src, 2, 3.0f);
  assert_true(dst[0] == 1.0f);
  assert_memory_equal(&dst[1], &want, sizeof want);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_kernels_match_scalar),
      cmocka_unit_test(test_average_is_a_true_division),
  };
  return cmocka_run_group_tests_name("reduce", tests, NULL, NULL);
}
