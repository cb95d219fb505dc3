/* test_soak.c - 1,000 back-to-back all-reduces in one process, with W and
 * sizes varying, must leave no thread behind and not grow the memory. */
#include "test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1 /* the sanitizers' own bookkeeping grows the RSS */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static long status_field(const char *name) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long value = -1;
  size_t len = strlen(name);
  while (f && fgets(line, sizeof line, f))
    if (strncmp(line, name, len) == 0 && line[len] == ':')
      value = atol(line + len + 1);
  if (f)
    fclose(f);
  return value;
}

static void one_run(int i) {
  int W = 1 + i % 9;
  size_t n = 1 + (size_t)(i * 7919) % 20000;
  char err[RS_ERRMSG_MAX];
  rs_model_t *m = model_of(n);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.segment_bytes = 256 + (size_t)(i % 5) * 1024;
  cfg.slots = 1 + i % 8;
  rs_run_t *run;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, (uint64_t)i), RS_OK);
  int rc = rs_run_execute(run);
  if (rc != RS_OK)
    fail_msg("run %d (W=%d, n=%zu): %s", i, W, n, rs_run_errmsg(run));
  rs_run_free(run);
  rs_model_free(m);
}

/* soak-1: no thread is left behind (the count after 1000 runs is the count
 * after the first 100), and the resident set stays put (within 4 MiB after
 * the first 100 runs have warmed the allocator). Under TSan, 400 runs:
 * every mix of W (9), slots (8) and segment size (5) still comes round. */
static void test_thousand_runs(void **state) {
  (void)state;
  const int runs = RS_TEST_TSAN ? 400 : 1000;
  for (int i = 0; i < 100; i++)
    one_run(i);
  /* Counted after warm-up: a sanitizer may start a thread of its own. */
  long threads_before = status_field("Threads");
  long rss_warm = status_field("VmRSS");
  for (int i = 100; i < runs; i++)
    one_run(i);
  long rss_end = status_field("VmRSS"), threads_end = status_field("Threads");
  printf("soak: threads %ld -> %ld, VmRSS %ld kB after 100 runs, %ld kB after "
         "%d\n",
         threads_before, threads_end, rss_warm, rss_end, runs);
  assert_int_equal(threads_end, threads_before);
  if (!SANITIZED && rss_end - rss_warm > 4096)
    fail_msg("VmRSS grew by %ld kB over %d runs", rss_end - rss_warm,
             runs - 100);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_thousand_runs),
  };
  return cmocka_run_group_tests_name("soak", tests, NULL, NULL);
}
