/* grads.c - each worker's local gradients: generated (the values; fill.c
 * runs the generation on every core), inline, or from files.
 *
 * Generated values depend only on (seed, worker, param, element), through a
 * counter-based hash (splitmix64), never on the order threads run in or on
 * the other params, so a run is reproducible from its seed, and the check
 * can make any block of any worker's inputs again after the run
 * (rs__grads_generate) instead of keeping a copy. An f64 run's values
 * are made in double; every other run's in float32 (twice the lanes, and
 * shorter series: the check makes them twice), each rounded to its dtype.
 */
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "base/parallel.h"
#include "base/util.h"
#include "core/runstate.h"
#include "io/grads.h"
#include "io/model.h"

static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* The generator's helpers go inside each of its clones (RS_CLONES). */
#define RS_INLINE __attribute__((always_inline)) inline

/* Bits as a double, and back: the conversions below go through the bits
 * (exact for integers below 2^52), which SSE2 can do two at a time where
 * it has no 64-bit integer to double conversion. */
RS_INLINE static double as_double(uint64_t bits) {
  double d;
  memcpy(&d, &bits, sizeof d);
  return d;
}
RS_INLINE static uint64_t as_bits(double d) {
  uint64_t bits;
  memcpy(&bits, &d, sizeof bits);
  return bits;
}
#define TWO52 4503599627370496.0 /* 2^52: as_double(0x4330000000000000) */
/* An integer 0 <= k < 2^52 as a double, exactly. */
RS_INLINE static double small_int(uint64_t k) {
  return as_double(k | 0x4330000000000000u) - TWO52;
}

/* log(u) for 0 < u < 1, to about 1e-15 relative: u = m 2^e with m in
 * [sqrt(1/2), sqrt(2)), log m = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172,
 * by its series to s^17. Branch-free, so a loop of it vectorizes; the same
 * bits on every machine (no libm). */
RS_INLINE static double log_unit(double u) {
  /* the bits moved so that the exponent field splits at sqrt(2) (musl's
   * log does the same): integer steps, no branch */
  uint64_t bits = as_bits(u) + (0x3ff0000000000000u - 0x3fe6a09e667f3bcdu);
  double e = small_int(bits >> 52) - 1023.0;
  double m = as_double((bits & 0x000fffffffffffffu) + 0x3fe6a09e667f3bcdu);
  double s = (m - 1.0) / (m + 1.0), z = s * s;
  double p = 1.0 / 17;
  p = p * z + 1.0 / 15;
  p = p * z + 1.0 / 13;
  p = p * z + 1.0 / 11;
  p = p * z + 1.0 / 9;
  p = p * z + 1.0 / 7;
  p = p * z + 1.0 / 5;
  p = p * z + 1.0 / 3;
  p = p * z + 1.0;
  return e * 0.6931471805599453 + 2.0 * s * p;
}

/* cos and sin of 2 pi k / 2^32 for a 32-bit k, to about 1e-15: the top two
 * bits pick the quadrant, the rest an angle x in [-pi/4, pi/4) around its
 * middle, whose sine and cosine are Taylor polynomials (to x^15 and x^16),
 * turned by pi/4 and the quadrant. Branch-free, as log_unit. */
RS_INLINE static void cos_sin_turn(uint64_t k, double *c_out, double *s_out) {
  uint64_t quadrant = k >> 30;
  double x =
      (small_int(k & 0x3fffffffu) * 0x1.0p-30 - 0.5) * 1.5707963267948966;
  double z = x * x;
  double sp = -1.0 / 1307674368000.0;
  sp = sp * z + 1.0 / 6227020800.0;
  sp = sp * z - 1.0 / 39916800.0;
  sp = sp * z + 1.0 / 362880.0;
  sp = sp * z - 1.0 / 5040.0;
  sp = sp * z + 1.0 / 120.0;
  sp = sp * z - 1.0 / 6.0;
  double sx = x + x * z * sp;
  double cp = 1.0 / 20922789888000.0;
  cp = cp * z - 1.0 / 87178291200.0;
  cp = cp * z + 1.0 / 479001600.0;
  cp = cp * z - 1.0 / 3628800.0;
  cp = cp * z + 1.0 / 40320.0;
  cp = cp * z - 1.0 / 720.0;
  cp = cp * z + 1.0 / 24.0;
  cp = cp * z - 0.5;
  double cx = 1.0 + z * cp;
  /* the angle is quadrant pi/2 + pi/4 + x */
  const double r = 0.7071067811865476;
  double c = r * (cx - sx), s = r * (cx + sx);
  /* odd quadrants swap them (cos, sin) -> (-sin, cos), the upper half
   * negates both: as bit operations, so the loop has no branch */
  uint64_t swap = 0 - (quadrant & 1), flip = (quadrant >> 1) << 63;
  uint64_t cb = as_bits(c), sb = as_bits(s);
  uint64_t c1 = (cb & ~swap) | ((sb ^ 0x8000000000000000u) & swap);
  uint64_t s1 = (sb & ~swap) | (cb & swap);
  *c_out = as_double(c1 ^ flip);
  *s_out = as_double(s1 ^ flip);
}

/* The generator's loops are compiled as well for AVX2 and AVX-512
 * (RS_CLONES, util.h): 4 to 16 lanes at once where SSE2 has 2 to 4. The
 * values are the same bits on every path: each lane does the IEEE
 * operations of the scalar code (this file is compiled with
 * -ffp-contract=off, so no path fuses a multiply and an add). */

/* The hash of element i of a param keyed by key (the low 32 bits of the
 * element's index; rs__grads_generate folds the rest into the key):
 * murmur3's 32-bit finaliser of a Weyl sequence. 32-bit lanes, so four
 * (SSE2) or eight (AVX2) at once; two such hashes per pair of normals. */
RS_INLINE static uint32_t hash32(uint64_t key, uint32_t i) {
  uint32_t x = (i * 0x9e3779b9u + (uint32_t)key) ^ (uint32_t)(key >> 32);
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  return x ^ (x >> 16);
}

/* A 32-bit hash as a uniform in (0, 1): the middle of its 2^-32 step. */
RS_INLINE static double unit_open(uint32_t h) {
  return (small_int(h) + 0.5) * 0x1.0p-32;
}

/* count pairs of normals from pair first_pair of a param on: element 2j's
 * hash gives the radius, 2j+1's the angle. */
RS_INLINE static void normal_pairs(double *restrict out, size_t count,
                                   uint64_t key, uint32_t first_pair) {
  for (size_t j = 0; j < count; j++) {
    uint32_t at = 2 * (first_pair + (uint32_t)j);
    double radius = sqrt(-2.0 * log_unit(unit_open(hash32(key, at)))), c, s;
    cos_sin_turn(hash32(key, at + 1), &c, &s);
    out[2 * j] = radius * c;
    out[2 * j + 1] = radius * s;
  }
}

/* len normals from element first of a param on, by PAIRS (normal_pairs
 * or normal_pairs_f): a range that starts or ends inside a pair takes its
 * half. */
#define DEFINE_NORMAL_RANGE(NAME, T, PAIRS)                                    \
  RS_INLINE static void NAME(T *restrict out, uint32_t first, size_t len,      \
                             uint64_t key) {                                   \
    T pair[2];                                                                 \
    size_t i = 0;                                                              \
    if (first % 2 == 1) {                                                      \
      PAIRS(pair, 1, key, first / 2);                                          \
      out[i++] = pair[1];                                                      \
    }                                                                          \
    size_t pairs = (len - i) / 2;                                              \
    PAIRS(out + i, pairs, key, (uint32_t)((first + i) / 2));                   \
    i += 2 * pairs;                                                            \
    if (i < len) {                                                             \
      PAIRS(pair, 1, key, (uint32_t)((first + i) / 2));                        \
      out[i] = pair[0];                                                        \
    }                                                                          \
  }

DEFINE_NORMAL_RANGE(normal_range, double, normal_pairs)

/* Generated values first .. first+len-1 of a param whose hash key is key
 * (all of them in one 2^32 run of indices), in double: an f64 run's
 * (fill_block_f32 below makes the others'). Every value is a
 * function of (key, index) alone, and each loop is branch-free so that it
 * vectorizes. */
RS_CLONES
static void fill_block(double *restrict out, uint32_t first, size_t len,
                       rs_init_t init, uint64_t key, int exact_k) {
  switch (init) {
  case RS_INIT_UNIFORM:
    /* (-1, 1), in steps of 2^-31 */
    for (size_t i = 0; i < len; i++)
      out[i] = 2.0 * unit_open(hash32(key, first + (uint32_t)i)) - 1.0;
    break;
  case RS_INIT_EXACT: {
    /* k/16 with k in [-exact_k, exact_k] (128 unless the dtype is too
     * narrow for W of them: rs__exact_k): every partial sum is
     * representable, so every order of addition gives the exact sum
     * (nccl-tests' verifiable inputs do the same). k is the hash scaled
     * to the range (Lemire's multiply-shift, no division). */
    const uint64_t range = 2u * (uint64_t)exact_k + 1u;
    const double offset = exact_k;
    for (size_t i = 0; i < len; i++) {
      uint64_t k = (uint64_t)hash32(key, first + (uint32_t)i) * range >> 32;
      out[i] = (small_int(k) - offset) * 0.0625;
    }
    break;
  }
  case RS_INIT_NORMAL:
    /* Box-Muller: elements 2j and 2j+1 of the param are the pair
     * sqrt(-2 log u) (cos, sin)(2 pi k / 2^32), two independent normals,
     * u and k the two elements' hashes (|x| < 6.8: u is at least 2^-33). */
    normal_range(out, first, len, key);
    break;
  }
}

/* ---- float32 lanes: the generator of every run but f64's ------------ */

/* Bits as a float, and back. */
RS_INLINE static float as_float(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}
RS_INLINE static uint32_t as_bits_f(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return bits;
}

/* log(u) for 0 < u < 1 in float, to about 1e-7 relative: log_unit's
 * method (u = m 2^e, m in [sqrt(1/2), sqrt(2)), log m = 2 atanh(s)) with
 * the series to s^9, enough for float's 24 bits (|s| < 0.172). */
RS_INLINE static float log_unit_f(float u) {
  uint32_t bits = as_bits_f(u) + (0x3f800000u - 0x3f3504f3u);
  float e = (float)((int32_t)(bits >> 23) - 127);
  float m = as_float((bits & 0x007fffffu) + 0x3f3504f3u);
  float s = (m - 1.0f) / (m + 1.0f), z = s * s;
  float p = 1.0f / 9;
  p = p * z + 1.0f / 7;
  p = p * z + 1.0f / 5;
  p = p * z + 1.0f / 3;
  p = p * z + 1.0f;
  return e * 0.693147181f + 2.0f * s * p;
}

/* cos and sin of an angle made of a 24-bit k, in float: the top two bits
 * pick the quadrant q, the rest an angle x in [-pi/4, pi/4) (its steps'
 * middles), and the angle is q pi/2 + x: uniform on the circle as k is,
 * and no turn by pi/4 (cos_sin_turn's) is needed. Taylor
 * polynomials to x^9 and x^10; branch-free, as log_unit. */
RS_INLINE static void cos_sin_f(uint32_t k, float *c_out, float *s_out) {
  uint32_t quadrant = k >> 22;
  float x = ((float)(int32_t)(k & 0x3fffffu) - 2097151.5f) *
            (1.57079633f * 0x1.0p-22f);
  float z = x * x;
  float sp = 1.0f / 362880;
  sp = sp * z - 1.0f / 5040;
  sp = sp * z + 1.0f / 120;
  sp = sp * z - 1.0f / 6;
  float s = x + x * z * sp;
  float cp = -1.0f / 3628800;
  cp = cp * z + 1.0f / 40320;
  cp = cp * z - 1.0f / 720;
  cp = cp * z + 1.0f / 24;
  cp = cp * z - 0.5f;
  float c = 1.0f + z * cp;
  /* odd quadrants swap them (cos, sin) -> (-sin, cos), the upper half
   * negates both */
  uint32_t swap = 0 - (quadrant & 1), flip = (quadrant >> 1) << 31;
  uint32_t cb = as_bits_f(c), sb = as_bits_f(s);
  uint32_t c1 = (cb & ~swap) | ((sb ^ 0x80000000u) & swap);
  uint32_t s1 = (sb & ~swap) | (cb & swap);
  *c_out = as_float(c1 ^ flip);
  *s_out = as_float(s1 ^ flip);
}

/* normal_pairs in float: u the top 24 bits of element 2j's hash (the
 * middle of its 2^-24 step, so |x| < 5.9), the angle element 2j+1's. */
RS_INLINE static void normal_pairs_f(float *restrict out, size_t count,
                                     uint64_t key, uint32_t first_pair) {
  for (size_t j = 0; j < count; j++) {
    uint32_t at = 2 * (first_pair + (uint32_t)j);
    float u = ((float)(int32_t)(hash32(key, at) >> 8) + 0.5f) * 0x1.0p-24f;
    float radius = sqrtf(-2.0f * log_unit_f(u)), c, s;
    cos_sin_f(hash32(key, at + 1) >> 8, &c, &s);
    out[2 * j] = radius * c;
    out[2 * j + 1] = radius * s;
  }
}

DEFINE_NORMAL_RANGE(normal_range_f, float, normal_pairs_f)

/* fill_block for a float buffer (f32, f16 and bf16 runs): uniform and
 * exact values are fill_block's, rounded to float; normal ones come from
 * float arithmetic, twice the lanes of double's and fewer terms. */
RS_CLONES
static void fill_block_f32(float *restrict out, uint32_t first, size_t len,
                           rs_init_t init, uint64_t key, int exact_k) {
  switch (init) {
  case RS_INIT_UNIFORM:
    for (size_t i = 0; i < len; i++)
      out[i] = (float)(2.0 * unit_open(hash32(key, first + (uint32_t)i)) - 1.0);
    break;
  case RS_INIT_EXACT: {
    /* fill_block's k = h range >> 32 in 32-bit lanes: with h = hi 2^16 +
     * lo and range < 2^16, it is (hi range + (lo range >> 16)) >> 16,
     * exactly (floor((a + x) / n) = floor((a + floor x) / n)), and no
     * product reaches 2^32 */
    const uint32_t range = 2u * (uint32_t)exact_k + 1u;
    const float offset = (float)exact_k;
    for (size_t i = 0; i < len; i++) {
      uint32_t h = hash32(key, first + (uint32_t)i);
      uint32_t k = ((h >> 16) * range + ((h & 0xffffu) * range >> 16)) >> 16;
      out[i] = ((float)(int32_t)k - offset) * 0.0625f; /* exact */
    }
    break;
  }
  case RS_INIT_NORMAL:
    normal_range_f(out, first, len, key);
    break;
  }
}

void rs__grads_generate(const rs_run_t *run, int worker, size_t first,
                        size_t len, void *out) {
  const rs_model_t *model = run->model;
  const int f64 = run->in_dtype == RS_DTYPE_F64;
  size_t p = len ? rs__model_param_at(model, first) : 0;
  for (size_t done = 0; done < len;) {
    const rs_param_t *param = rs_model_param(model, p);
    size_t at = first + done - param->elem_offset; /* within the param */
    size_t n = param->elems - at;
    n = n < len - done ? n : len - done;
    /* within one 2^32 run of indices, whose number joins the key */
    size_t run_left = ((size_t)1 << 32) - (at & 0xffffffffu);
    n = n < run_left ? n : run_left;
    uint64_t key = mix64(run->seed ^ mix64(((uint64_t)worker << 32) | p) ^
                         mix64(at >> 32));
    if (f64) {
      fill_block((double *)out + done, (uint32_t)at, n, run->init, key,
                 run->exact_k);
    } else {
      float *values = (float *)out + done;
      fill_block_f32(values, (uint32_t)at, n, run->init, key, run->exact_k);
      rs_dtype_round_all(run->in_dtype, values, n);
    }
    done += n;
    if (at + n == param->elems)
      p++;
  }
}

/* Store n values into a buffer of dtype: as they are (f64), or rounded to
 * float32 and then to the dtype. */
static void store(unsigned char *buf, rs_dtype_t dtype, const double *values,
                  size_t n) {
  if (dtype == RS_DTYPE_F64) {
    memcpy(buf, values, n * sizeof(double));
    return;
  }
  float *out = (float *)(void *)buf;
  for (size_t i = 0; i < n; i++)
    out[i] = (float)values[i];
  rs_dtype_round_all(dtype, out, n);
}

int rs_run_fill_inline(rs_run_t *run) {
  int have = rs_model_inline_workers(run->model);
  if (have == 0)
    return rs__run_fail(run, RS_EINVAL, "the model gives no inline grads");
  if (have != run->config.workers)
    return rs__run_fail(run, RS_EINVAL,
                        "the model's grads are for %d workers, but the run "
                        "has %d",
                        have, run->config.workers);
  uint64_t t0 = rs__now_ns();
  for (int w = run->first_local; w < run->local_end; w++) /* rounded */
    store(run->bufs[w], run->in_dtype, rs_model_inline_grads(run->model, w),
          run->elems);
  run->result.fill_ns = rs__now_ns() - t0;
  run->init = RS_INIT_NORMAL; /* any input: check within the bound */
  run->generated = 0;
  run->filled = 1;
  return RS_OK;
}

int rs_grads_path(const char *pattern, int worker, char *out, size_t out_size) {
  size_t len = 0;
  char rank[16];
  int rank_len = snprintf(rank, sizeof rank, "%d", worker);
  for (const char *c = pattern; *c; c++) {
    const char *piece = c;
    size_t piece_len = 1;
    if (strncmp(c, "{r}", 3) == 0) {
      piece = rank;
      piece_len = (size_t)rank_len;
      c += 2;
    }
    if (len + piece_len >= out_size)
      return RS_EINVAL;
    memcpy(out + len, piece, piece_len);
    len += piece_len;
  }
  out[len] = '\0';
  return RS_OK;
}

int rs_run_load_grads(rs_run_t *run, const char *pattern) {
  if (run->config.workers > 1 && !strstr(pattern, "{r}"))
    return rs__run_fail(run, RS_EINVAL,
                        "--grads %s: the pattern must contain {r}, replaced "
                        "by each worker's rank",
                        pattern);
  uint64_t t0 = rs__now_ns();
  for (int w = run->first_local; w < run->local_end; w++) {
    char path[4096];
    char err[RS_ERRMSG_MAX];
    if (rs_grads_path(pattern, w, path, sizeof path))
      return rs__run_fail(run, RS_EINVAL, "--grads %.200s: path too long",
                          pattern);
    int rc = rs_safetensors_read(path, run->model, run->bufs[w], err);
    if (rc)
      return rs__run_fail(run, rc, "%s", err);
  }
  run->result.fill_ns = rs__now_ns() - t0;
  run->init = RS_INIT_NORMAL;
  run->generated = 0;
  run->filled = 1;
  return RS_OK;
}
