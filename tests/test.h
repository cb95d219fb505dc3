/* test.h - cmocka needs these headers first, in this order. */
#ifndef RINGSIM_TEST_H
#define RINGSIM_TEST_H

// clang-format off
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
// clang-format on

/* The matrices' large element count: a million and three, or, under a
 * sanitizer (ten to twenty times slower; the threads and memory it checks
 * are the same at any size), the smaller count the test names. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define RS_TEST_LARGE(sanitized) (sanitized)
#else
#define RS_TEST_LARGE(sanitized) 1000003
#endif

#endif /* RINGSIM_TEST_H */
