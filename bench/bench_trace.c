/* bench_trace.c - what tracing costs: a traced against an untraced run, and
 * the trace writer's rows per second, measured in one process.
 *
 *   bench_trace [--quick] [DIR]     (DIR holds the scratch trace; /tmp)
 *
 * Runs alternate, traced and untraced, and the medians are compared, so a
 * noisy neighbour affects both sides alike. Prints ratios, asserts nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_u64);
  return v[n / 2];
}

static rs_model_t *model_of(size_t elems) {
  char text[128], err[RS_ERRMSG_MAX];
  snprintf(text, sizeof text,
           "{\"params\": [{\"name\": \"g\", \"shape\": [%zu]}]}", elems);
  rs_model_t *m;
  if (rs_model_parse(text, strlen(text), "bench", &m, err)) {
    fprintf(stderr, "%s\n", err);
    exit(1);
  }
  return m;
}

typedef struct sample {
  uint64_t ring_ns;  /* the ring's wall time */
  uint64_t total_ns; /* the ring plus writing the trace */
  uint64_t trace_ns, rows;
} sample_t;

static sample_t one_run(const rs_model_t *m, int workers, size_t seg_bytes,
                        rs_trace_t *trace) {
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = workers;
  cfg.segment_bytes = seg_bytes;
  cfg.timeout_s = 600;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err) || rs_run_fill(run, RS_INIT_EXACT, 1) ||
      (trace && rs_run_set_trace(run, trace, NULL))) {
    fprintf(stderr, "bench: %s\n", err);
    exit(1);
  }
  if (rs_run_execute(run) != RS_OK || rs_run_trace_error(run)) {
    fprintf(stderr, "bench: %s\n", rs_run_errmsg(run));
    exit(1);
  }
  const rs_result_t *res = rs_run_result(run);
  sample_t s = {res->wall_ns, res->wall_ns + res->trace_ns, res->trace_ns,
                res->trace_rows};
  rs_run_free(run);
  return s;
}

int main(int argc, char **argv) {
  int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
  const char *dir = argc > 1 + quick ? argv[1 + quick] : "/tmp";
  char path[4096];
  snprintf(path, sizeof path, "%s/bench_trace_%d.db", dir, (int)getpid());
  char err[RS_ERRMSG_MAX];
  rs_trace_t *trace;
  if (rs_trace_open(path, &trace, err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }

  /* 1. W=4, 64 MiB of f32 per worker: traced against untraced. */
  const int W = 4, reps = quick ? 3 : 7;
  const size_t elems = quick ? (1u << 20) : (16u << 20);
  rs_model_t *m = model_of(elems);
  uint64_t plain[16], traced_ring[16], traced_total[16];
  sample_t s = {0};
  one_run(m, W, RS_DEFAULT_SEGMENT_BYTES, NULL); /* warm up */
  for (int i = 0; i < reps; i++) {
    plain[i] = one_run(m, W, RS_DEFAULT_SEGMENT_BYTES, NULL).ring_ns;
    s = one_run(m, W, RS_DEFAULT_SEGMENT_BYTES, trace);
    traced_ring[i] = s.ring_ns;
    traced_total[i] = s.total_ns;
  }
  uint64_t p = median(plain, reps), tr = median(traced_ring, reps),
           tt = median(traced_total, reps);
  printf("tracing cost, W=%d, %zu MiB of f32 per worker, median of %d:\n", W,
         elems * 4 >> 20, reps);
  printf("  untraced ring            %10.3f ms\n", p / 1e6);
  printf("  traced ring              %10.3f ms   ratio %.3f\n", tr / 1e6,
         (double)tr / (double)p);
  printf("  traced ring + trace I/O  %10.3f ms   ratio %.3f  (%llu rows)\n",
         tt / 1e6, (double)tt / (double)p, (unsigned long long)s.rows);
  rs_model_free(m);

  /* 2. The writer: a run with about a million transfers. W=64 and one
   * element per segment: 64 x 2 x 63 x 124 = 999,936 rows. */
  const int W2 = 64;
  const size_t segs = quick ? 12 : 124;
  m = model_of((size_t)W2 * segs);
  s = one_run(m, W2, 4, trace);
  printf("trace writer: %llu rows in %.3f s = %.2f million rows/s\n",
         (unsigned long long)s.rows, s.trace_ns / 1e9,
         (double)s.rows / (s.trace_ns / 1e9) / 1e6);
  rs_model_free(m);
  rs_trace_close(trace);
  unlink(path);
  char side[4200];
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
  return 0;
}
