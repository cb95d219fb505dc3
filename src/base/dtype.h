/* dtype.h - dtype.c's internals: the 16-bit encodings of f16 and bf16, and
 * the half-precision wire of the copying queues. */
#ifndef RINGSIM_DTYPE_H
#define RINGSIM_DTYPE_H

#include <stddef.h>
#include <stdint.h>

/* The 16-bit encodings, for files: binary16 and bfloat16 from float,
 * rounding to nearest, ties to even (beyond the range: infinity), and back
 * (exact). */
uint16_t rs__f32_to_f16(float f);
float rs__f16_to_f32(uint16_t h);
uint16_t rs__f32_to_bf16(float f);
float rs__bf16_to_f32(uint16_t b);

/* The half-precision wire: float values of an f16 or bf16 buffer, which
 * the dtype represents exactly, packed into 2-byte elements for a queue,
 * and unpacked back. */
void rs__pack_f16(void *dst, const void *src, size_t n);
void rs__pack_bf16(void *dst, const void *src, size_t n);
void rs__unpack_f16(float *dst, const void *src, size_t n);
void rs__unpack_bf16(float *dst, const void *src, size_t n);

#endif /* RINGSIM_DTYPE_H */
