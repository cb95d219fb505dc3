/* grads.c - each worker's local gradients: generated, inline, or from files.
 *
 * Generated values depend only on (seed, worker, param, element), through a
 * counter-based hash (splitmix64), never on the order threads run in or on
 * the other params, so a run is reproducible from its seed.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "runstate.h"
#include "util.h"

#define FILL_THREADS_MAX 64

static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15u;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* A uniform double in (0, 1): never 0, so log() below is finite. */
static double unit_open(uint64_t bits) {
  return ((double)(bits >> 11) + 0.5) * 0x1.0p-53;
}

/* Generated value i of a param whose hash key is key: in double, the
 * precision of an f64 run; other runs round it to their dtype. */
static void fill_block(double *out, size_t first, size_t len, rs_init_t init,
                       uint64_t key, int exact_k) {
  switch (init) {
  case RS_INIT_UNIFORM:
    for (size_t i = 0; i < len; i++)
      out[i] = 2.0 * unit_open(mix64(key + first + i)) - 1.0;
    break;
  case RS_INIT_EXACT:
    /* k/16 with k in [-exact_k, exact_k] (128 unless the dtype is too
     * narrow for W of them: rs__exact_k): every partial sum is
     * representable, so every order of addition gives the exact sum
     * (nccl-tests' verifiable inputs do the same). */
    for (size_t i = 0; i < len; i++)
      out[i] = (double)((int)(mix64(key + first + i) %
                              (2u * (unsigned)exact_k + 1u)) -
                        exact_k) /
               16.0;
    break;
  case RS_INIT_NORMAL:
    /* Box-Muller: each pair of hashes gives two independent normals
     * (first is even, so pairs never straddle blocks). */
    for (size_t i = 0; i < len; i += 2) {
      size_t at = first + i;
      double radius = sqrt(-2.0 * log(unit_open(mix64(key + 2 * at))));
      double angle = 2.0 * M_PI * unit_open(mix64(key + 2 * at + 1));
      out[i] = radius * cos(angle);
      if (i + 1 < len)
        out[i + 1] = radius * sin(angle);
    }
    break;
  }
}

/* Store n values into a buffer of dtype at element offset: as they are
 * (f64), or rounded to float32 and then to the dtype. */
static void store(unsigned char *buf, rs_dtype_t dtype, size_t offset,
                  const double *values, size_t n) {
  if (dtype == RS_DTYPE_F64) {
    memcpy(buf + offset * sizeof(double), values, n * sizeof(double));
    return;
  }
  float *out = (float *)(void *)(buf + offset * sizeof(float));
  for (size_t i = 0; i < n; i++)
    out[i] = (float)values[i];
  rs_dtype_round_all(dtype, out, n);
}

#define FILL_BLOCK 4096 /* even: see fill_block */

static void fill_param(rs_run_t *run, unsigned char *buf, rs_dtype_t dtype,
                       const rs_param_t *param, rs_init_t init, uint64_t key,
                       int exact_k) {
  double values[FILL_BLOCK];
  for (size_t first = 0; first < param->elems; first += FILL_BLOCK) {
    if (first % (64 * FILL_BLOCK) == 0 && rs__run_stopped(run))
      return; /* interrupted: rs_run_fill says so */
    size_t len =
        param->elems - first < FILL_BLOCK ? param->elems - first : FILL_BLOCK;
    fill_block(values, first, len, init, key, exact_k);
    store(buf, dtype, param->elem_offset + first, values, len);
  }
}

typedef struct fill_job {
  rs_run_t *run;
  rs_init_t init;
  uint64_t seed;
  int first, stride; /* this thread fills workers first, first+stride, ... */
  int exact_k;       /* RS_INIT_EXACT's range: rs__exact_k */
} fill_job_t;

static void *fill_workers(void *arg) {
  const fill_job_t *job = arg;
  const rs_model_t *model = job->run->model;
  for (int w = job->first; w < job->run->config.workers; w += job->stride)
    for (size_t p = 0; p < rs_model_param_count(model); p++) {
      const rs_param_t *param = rs_model_param(model, p);
      uint64_t key = mix64(job->seed ^ mix64(((uint64_t)w << 32) | p));
      fill_param(job->run, job->run->bufs[w], job->run->dtype, param,
                 job->init, key, job->exact_k);
    }
  return NULL;
}

int rs_run_fill(rs_run_t *run, rs_init_t init, uint64_t seed) {
  if (init != RS_INIT_NORMAL && init != RS_INIT_UNIFORM &&
      init != RS_INIT_EXACT)
    return rs__run_fail(run, RS_EINVAL, "init: unknown kind %d", (int)init);
  /* Generating is pure per worker: spread the workers over the cores. The
   * values do not depend on which thread makes them. */
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int threads = run->config.workers < cores ? run->config.workers
                                            : (int)(cores > 0 ? cores : 1);
  if (threads > FILL_THREADS_MAX)
    threads = FILL_THREADS_MAX;
  /* Beyond what the dtype can keep exact, exact inputs keep the f32
   * range (the check then bounds them as any other). */
  int exact_k = rs__exact_k(run->dtype, run->config.workers);
  if (exact_k == 0)
    exact_k = 128;
  pthread_t tids[FILL_THREADS_MAX];
  fill_job_t jobs[FILL_THREADS_MAX];
  int created[FILL_THREADS_MAX] = {0};
  for (int t = 0; t < threads; t++) {
    jobs[t] = (fill_job_t){run, init, seed, t, threads, exact_k};
    if (t > 0)
      created[t] = pthread_create(&tids[t], NULL, fill_workers, &jobs[t]) == 0;
  }
  /* This thread takes job 0, and any job whose thread could not start. */
  for (int t = 0; t < threads; t++)
    if (!created[t])
      fill_workers(&jobs[t]);
  for (int t = 1; t < threads; t++)
    if (created[t])
      RS_PTHREAD_CHECK(pthread_join(tids[t], NULL));
  if (rs__run_stopped(run))
    return rs__run_take_interrupt(run);
  run->init = init;
  run->filled = 1;
  return RS_OK;
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
  for (int w = 0; w < have; w++) /* already rounded to the dtype */
    store(run->bufs[w], run->dtype, 0, rs_model_inline_grads(run->model, w),
          run->elems);
  run->init = RS_INIT_NORMAL; /* any input: check within the bound */
  run->filled = 1;
  return RS_OK;
}

int rs_grads_path(const char *pattern, int worker, char *out,
                  size_t out_size) {
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
  for (int w = 0; w < run->config.workers; w++) {
    char path[4096];
    char err[RS_ERRMSG_MAX];
    if (rs_grads_path(pattern, w, path, sizeof path))
      return rs__run_fail(run, RS_EINVAL, "--grads %.200s: path too long",
                          pattern);
    int rc = rs_safetensors_read(path, run->model, run->bufs[w], err);
    if (rc)
      return rs__run_fail(run, rc, "%s", err);
  }
  run->init = RS_INIT_NORMAL;
  run->filled = 1;
  return RS_OK;
}
