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

#endif /* RINGSIM_TEST_H */
