/* dtype.c - the element types: f32 and f64, and f16 and bf16 as NCCL
 * reduces them.
 *
 * An f64 run's buffers hold double; every other run's hold float32. A
 * float16 or bfloat16 run keeps only values its dtype can represent, and
 * rounds to the dtype after every hop's float32 addition: exactly the
 * numbers NCCL's half-precision reduction (float32 accumulation per hop,
 * rounded when stored and sent) produces. The wire is counted at the
 * dtype's size, and a copying queue carries it at that size.
 */
#include <string.h>

#include "base/dtype.h"
#include "ringsim/ringsim.h"

const char *rs_dtype_name(rs_dtype_t dtype) {
  switch (dtype) {
  case RS_DTYPE_F16:
    return "f16";
  case RS_DTYPE_BF16:
    return "bf16";
  case RS_DTYPE_F64:
    return "f64";
  case RS_DTYPE_F32:
    break;
  }
  return "f32";
}

size_t rs_dtype_size(rs_dtype_t dtype) {
  return dtype == RS_DTYPE_F64 ? 8 : dtype == RS_DTYPE_F32 ? 4 : 2;
}

size_t rs_dtype_buffer_size(rs_dtype_t dtype) {
  return dtype == RS_DTYPE_F64 ? sizeof(double) : sizeof(float);
}

int rs_dtype_mantissa_bits(rs_dtype_t dtype) {
  switch (dtype) {
  case RS_DTYPE_F16:
    return 11;
  case RS_DTYPE_BF16:
    return 8;
  case RS_DTYPE_F64:
    return 53;
  case RS_DTYPE_F32:
    break;
  }
  return 24;
}

/* IEEE binary16 from binary32, rounding to nearest, ties to even; beyond the
 * range it is infinity, below half the smallest subnormal it is zero. */
uint16_t rs__f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t biased = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
  if (biased == 0xff) /* inf or NaN */
    return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t exp = (int32_t)biased - 127 + 15;
  if (exp >= 31)
    return (uint16_t)(sign | 0x7c00u);
  if (exp <= 0) { /* a subnormal half: units of 2^-24 */
    if (exp < -10)
      return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (h & 1)))
      h++;
    return (uint16_t)(sign | h);
  }
  uint32_t h = sign | ((uint32_t)exp << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
    h++; /* a carry into the exponent is right, up to infinity */
  return (uint16_t)h;
}

float rs__f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu, x;
  if (exp == 0) {
    float f = (float)mant * 0x1p-24f; /* zero or subnormal, exactly */
    return sign ? -f : f;
  }
  if (exp == 31)
    x = sign | 0x7f800000u | (mant << 13);
  else
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

/* bfloat16 is the top half of binary32: round the bottom half away. */
uint16_t rs__f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof x);
  if ((x & 0x7f800000u) == 0x7f800000u) /* inf or NaN: keep */
    return (uint16_t)((x >> 16) | ((x & 0xffffu) ? 0x40u : 0));
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

float rs__bf16_to_f32(uint16_t b) {
  uint32_t x = (uint32_t)b << 16;
  float f;
  memcpy(&f, &x, sizeof f);
  return f;
}

float rs_dtype_round(rs_dtype_t dtype, float x) {
  switch (dtype) {
  case RS_DTYPE_F16:
    return rs__f16_to_f32(rs__f32_to_f16(x));
  case RS_DTYPE_BF16:
    return rs__bf16_to_f32(rs__f32_to_bf16(x));
  case RS_DTYPE_F32:
  case RS_DTYPE_F64:
    break;
  }
  return x;
}

/* Round x to f16 in place, as rs_dtype_round does, but without branches so
 * the loop vectorizes: it runs after every hop of an f16 ring. Normal
 * halves round their float32 bits to 10 fraction bits, ties to even (a
 * carry into the exponent is right; past 65504 it is infinity); below
 * 2^-14, adding and taking away 0.5 rounds to a multiple of 2^-24, the
 * subnormal halves' spacing; inf and NaN stay (NaN made quiet). Each case
 * is computed for every element and the right one picked with masks
 * (all ones or zero): select() below. */
static inline int32_t select(int32_t mask, int32_t a, int32_t b) {
  return (a & mask) | (b & ~mask);
}

static void round_all_f16(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int32_t bits;
    memcpy(&bits, &x[i], sizeof bits);
    int32_t mag = bits & 0x7fffffff, sign = bits & (int32_t)0x80000000;
    /* (unsigned: for a NaN the sum passes 2^31, and its result is unused) */
    int32_t normal =
        (int32_t)(((uint32_t)mag + 0x0fffu + (((uint32_t)mag >> 13) & 1u)) &
                  ~0x1fffu);
    normal = select(-(normal > 0x477fe000 || normal < 0), 0x7f800000, normal);
    int32_t small_bits = select(-(mag < 0x38800000), mag, 0);
    float small;
    memcpy(&small, &small_bits, sizeof small);
    float rounded = (small + 0.5f) - 0.5f;
    int32_t subnormal;
    memcpy(&subnormal, &rounded, sizeof subnormal);
    int32_t special = select(-(mag > 0x7f800000), mag | 0x00400000, mag);
    int32_t r = select(-(mag >= 0x7f800000), special,
                       select(-(mag >= 0x38800000), normal, subnormal));
    r |= sign;
    memcpy(&x[i], &r, sizeof r);
  }
}

/* The same for bf16: the top half of the float32 bits, rounded to nearest,
 * ties to even (overflow carries into infinity); NaN stays NaN. */
static void round_all_bf16(float *x, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int32_t bits;
    memcpy(&bits, &x[i], sizeof bits);
    int32_t mag = bits & 0x7fffffff;
    int32_t rounded =
        (int32_t)(((uint32_t)bits + 0x7fffu + (((uint32_t)bits >> 16) & 1u)) &
                  0xffff0000u);
    int32_t quiet_nan = (bits | 0x00400000) & (int32_t)0xffff0000;
    int32_t r = select(-(mag > 0x7f800000), quiet_nan, rounded);
    memcpy(&x[i], &r, sizeof r);
  }
}

void rs_dtype_round_all(rs_dtype_t dtype, float *x, size_t n) {
  if (dtype == RS_DTYPE_F16)
    round_all_f16(x, n);
  else if (dtype == RS_DTYPE_BF16)
    round_all_bf16(x, n);
}

/* The half-precision wire: an f16 or bf16 buffer holds float values the
 * dtype represents exactly (or inf and NaN), so packing them to 2 bytes and
 * back needs no rounding. These loops say so without branches, so the
 * compiler vectorizes them; rs__f32_to_f16 and friends, which round, are
 * for values that may need it. */
void rs__pack_f16(void *dst, const void *src, size_t n) {
  uint16_t *out = dst;
  const float *in = src;
  for (size_t i = 0; i < n; i++) {
    int32_t x;
    memcpy(&x, &in[i], sizeof x);
    int32_t sign = (int32_t)(((uint32_t)x >> 16) & 0x8000u);
    int32_t mag = x & 0x7fffffff;
    /* normal halves: rebias the exponent (127 -> 15), keep 10 bits */
    int32_t normal = (mag - 0x38000000) >> 13;
    /* subnormal halves are k x 2^-24, k < 1024 */
    int32_t small_bits = select(-(mag < 0x38800000), mag, 0);
    float small;
    memcpy(&small, &small_bits, sizeof small);
    int32_t subnormal = (int32_t)(small * 0x1p24f);
    int32_t special = select(-(mag > 0x7f800000), 0x7e00, 0x7c00);
    int32_t h = select(-(mag >= 0x7f800000), special,
                       select(-(mag >= 0x38800000), normal, subnormal));
    out[i] = (uint16_t)(sign | h);
  }
}

void rs__pack_bf16(void *dst, const void *src, size_t n) {
  uint16_t *out = dst;
  const float *in = src;
  for (size_t i = 0; i < n; i++) { /* the top half is the whole value */
    uint32_t x;
    memcpy(&x, &in[i], sizeof x);
    out[i] = (uint16_t)(x >> 16);
  }
}

void rs__unpack_f16(float *dst, const void *src, size_t n) {
  const uint16_t *in = src;
  for (size_t i = 0; i < n; i++) {
    int32_t h = in[i], mag = h & 0x7fff;
    int32_t normal = (mag << 13) + 0x38000000;
    float sub = (float)mag * 0x1p-24f; /* exponent 0: exact */
    int32_t subnormal;
    memcpy(&subnormal, &sub, sizeof subnormal);
    int32_t special = 0x7f800000 | ((mag & 0x3ff) << 13);
    int32_t x = select(-(mag >= 0x7c00), special,
                       select(-(mag >= 0x400), normal, subnormal));
    x |= (int32_t)((uint32_t)(h & 0x8000) << 16);
    memcpy(&dst[i], &x, sizeof x);
  }
}

void rs__unpack_bf16(float *dst, const void *src, size_t n) {
  const uint16_t *in = src;
  for (size_t i = 0; i < n; i++) {
    uint32_t x = (uint32_t)in[i] << 16;
    memcpy(&dst[i], &x, sizeof x);
  }
}

/* x's encoding in dtype as a point on a line where adjacent values of the
 * dtype are adjacent integers (sign-magnitude mapped to two's order). */
static int64_t ordered(rs_dtype_t dtype, double x) {
  if (dtype == RS_DTYPE_F64) {
    int64_t i;
    memcpy(&i, &x, sizeof i);
    return i < 0 ? INT64_MIN - i : i;
  }
  const float f = (float)x;
  if (dtype == RS_DTYPE_F32) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? (int64_t)INT32_MIN - i : i;
  }
  const uint16_t h =
      dtype == RS_DTYPE_F16 ? rs__f32_to_f16(f) : rs__f32_to_bf16(f);
  return h & 0x8000 ? -(int64_t)(h & 0x7fff) : (int64_t)h;
}

uint64_t rs_dtype_ulps(rs_dtype_t dtype, double a, double b) {
  /* unsigned: two f64 encodings can be more than INT64_MAX apart */
  const int64_t oa = ordered(dtype, a), ob = ordered(dtype, b);
  return oa > ob ? (uint64_t)oa - (uint64_t)ob : (uint64_t)ob - (uint64_t)oa;
}
