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

/* Under TSan (5-20x slower, more per thread), the tests whose subject is
 * not a race run a smaller case; RS_TEST_TSAN says so. */
#if defined(__SANITIZE_THREAD__)
#define RS_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RS_TEST_TSAN 1
#endif
#endif
#ifndef RS_TEST_TSAN
#define RS_TEST_TSAN 0
#endif

#endif /* RINGSIM_TEST_H */
