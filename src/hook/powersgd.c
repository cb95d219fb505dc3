/* hook/powersgd.c - PowerSGD steps (powersgd.h), above the runs: each
 * of a bucket's three all-reduces is a run of its own (rs_run_create), so
 * that it is the config's algorithm, checked and traced like any other.
 * The arithmetic around them is the hook's, in float32, worker by worker:
 * the matmuls P = M Q, Q = M^T P and P Q^T (dot products accumulated in
 * double, then rounded), Gram-Schmidt as _orthogonalize_gram_schmidt
 * writes it, the divisions by W. Beside it the same step in double, from
 * the same Q, with its sums in worker order: what float32 and the
 * algorithm's order of additions cost.
 *
 * DESIGN: the state PowerSGDState carries from one step to the next lives
 * here, in the order powerSGD_hook.py keeps it: the step count (iter,
 * counted once a step; below start_powerSGD_iter the step is the hook's
 * vanilla all-reduce, which touches no other state), the error-feedback
 * residuals (error_dict: added to the step's inputs first, the inputs
 * with it then minus the result kept for the next), and the warm-started
 * Qs (q_memory_dict: the step's all-reduced Q divided by W, orthogonalised
 * again at the next step instead of a fresh draw). ringsim keeps them per
 * element in the model's layout rather than per bucket buffer: the same
 * numbers, as the buckets do not change after DDP's rebuild.
 */
#include "ringsim/powersgd.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "hook/powersgd_int.h"

struct rs_powersgd {
  rs_config_t config;   /* its test knobs: test below */
  rs_test_knobs_t test; /* the caller's, copied: its runs get them */
  const rs_model_t *model;
  int workers;
  size_t elems;
  rs_bucket_t *buckets;
  rs_powersgd_bucket_t *bucket;
  size_t nbuckets;
  rs_powersgd_tensor_t *tensor; /* every param, bucket by bucket */
  size_t *first;                /* bucket b's first tensor */
  size_t *q_offset;             /* tensor t's Q in q (compressed ones) */
  rs_model_t *q_model;          /* NULL when nothing is compressed */
  float *q;
  float *inputs; /* W x elems: the grads; after the step, residuals */
  float *result; /* elems */
  rs_powersgd_report_t report;
  /* the state carried between steps */
  int iter;     /* steps done (PowerSGDState.iter) */
  float *error; /* W x elems: error_dict (feedback), else NULL */
  int have_error;
  float *q_next;                 /* the step's Q / W (warm start), else NULL */
  int have_q;                    /* q holds the step before's Q / W */
  rs_powersgd_report_t *history; /* each step's report, as it ended */
  int history_len, history_cap;
};

/* ---- the plan ----------------------------------------------------------- */

/* A param's matrix view, as the hook's tensor.view(tensor.shape[0], -1). */
static void matrix_of(const rs_param_t *p, int64_t *n, int64_t *m) {
  *n = p->ndim > 0 ? p->shape[0] : 1;
  *m = *n > 0 ? (int64_t)p->elems / *n : 0;
}

/* A param's rank in the hook: min(n, m, R) if it is compressed, the
 * hook's _should_compress with min_compression_rate 2; else 0. */
static int tensor_rank(const rs_param_t *p, int R, int64_t *n, int64_t *m) {
  matrix_of(p, n, m);
  int64_t r = *n < *m ? *n : *m;
  r = r < R ? r : R;
  return (*n + *m) * r * 2 < *n * *m ? (int)r : 0;
}

int rs_powersgd_split(const rs_model_t *model, const rs_bucket_t *buckets,
                      size_t count, int rank, size_t *elems) {
  if (rank < 1)
    return RS_EINVAL;
  for (size_t b = 0; b < count; b++) {
    size_t *e = elems + b * RS_PSGD_REDUCES;
    e[0] = e[1] = e[2] = 0;
    for (size_t j = 0; j < buckets[b].params; j++) {
      const rs_param_t *p = rs_model_param(
          model, rs_model_bucket_param(model, &buckets[b], b, j));
      int64_t n, m;
      const int r = tensor_rank(p, rank, &n, &m);
      if (!r)
        e[RS_PSGD_UNCOMPRESSED] += p->elems;
      e[RS_PSGD_P] += (size_t)n * (size_t)r;
      e[RS_PSGD_Q] += (size_t)m * (size_t)r;
    }
  }
  return RS_OK;
}

/* Bucket b's tensors in the hook's order: the uncompressed ones where
 * they are, the compressed ones grouped by (n, m), groups in the order
 * their first tensor comes (the hook's shape_to_tensors, a dict). Only
 * the compressed ones' order matters: their Ps and Qs are laid out in it. */
static void order_bucket(rs_powersgd_tensor_t *t, size_t count) {
  size_t done = 0;
  rs_powersgd_tensor_t *tmp = t + count; /* scratch past the end */
  for (size_t i = 0; i < count; i++)
    if (!t[i].rank)
      tmp[done++] = t[i];
  for (size_t i = 0; i < count; i++) {
    if (!t[i].rank)
      continue;
    int seen = 0;
    for (size_t k = 0; k < i && !seen; k++)
      seen = t[k].rank && t[k].n == t[i].n && t[k].m == t[i].m;
    if (seen)
      continue;
    for (size_t k = i; k < count; k++)
      if (t[k].rank && t[k].n == t[i].n && t[k].m == t[i].m)
        tmp[done++] = t[k];
  }
  memcpy(t, tmp, count * sizeof *t);
}

/* The initial Qs' model: each compressed param, m x r, in the hook's
 * order. */
static int make_q_model(rs_powersgd_t *ps, char *errmsg) {
  json_t *params = json_array();
  for (size_t i = 0; params && i < rs_model_param_count(ps->model); i++) {
    const rs_powersgd_tensor_t *t = &ps->tensor[i];
    if (t->rank &&
        json_array_append_new(
            params, json_pack("{s:s, s:[I, i]}", "name",
                              rs_model_param(ps->model, t->param)->name,
                              "shape", (json_int_t)t->m, t->rank)))
      json_decref(params), params = NULL;
  }
  if (params && json_array_size(params) == 0) { /* nothing compressed */
    json_decref(params);
    return RS_OK;
  }
  json_t *j = params ? json_pack("{s:s, s:o}", "name", "powersgd Q", "params",
                                 params)
                     : NULL;
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  if (!text)
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  int rc = rs_model_parse(text, strlen(text), "powersgd's Qs", &ps->q_model,
                          errmsg);
  free(text);
  return rc;
}

int rs__powersgd_check_rank(const rs_model_t *model, int R, char *errmsg) {
  int64_t best = 0; /* the largest min(n, m) */
  size_t best_param = 0;
  const size_t params = rs_model_param_count(model);
  for (size_t i = 0; i < params; i++) {
    int64_t n, m;
    matrix_of(rs_model_param(model, i), &n, &m);
    if ((n < m ? n : m) > best)
      best = n < m ? n : m, best_param = i;
  }
  if (R > best) {
    const rs_param_t *p = rs_model_param(model, best_param);
    int64_t n, m;
    matrix_of(p, &n, &m);
    return rs__err(errmsg, RS_EINVAL,
                   "hook: powersgd:rank=%d is above min(n, m) of every "
                   "param's matrix (the largest is %lld: %s, %lld x %lld)",
                   R, (long long)best, p->name, (long long)n, (long long)m);
  }
  return RS_OK;
}

int rs_powersgd_create(const rs_config_t *config, const rs_model_t *model,
                       rs_powersgd_t **out, char *errmsg) {
  *out = NULL;
  if (config->hook != RS_HOOK_POWERSGD || config->powersgd_rank < 1)
    return rs__err(errmsg, RS_EINVAL,
                   "hook: powersgd needs config.hook RS_HOOK_POWERSGD and a "
                   "rank of 1 or more");
  if (config->mpi)
    return rs__err(errmsg, RS_EINVAL,
                   "hook: powersgd runs on threads, not over MPI");
  if (rs_model_dtype(model) != RS_DTYPE_F32)
    return rs__err(errmsg, RS_EINVAL,
                   "hook: powersgd:rank=%d computes in float32, as the hook "
                   "does on float32 grads; the model is %s",
                   config->powersgd_rank, rs_dtype_name(rs_model_dtype(model)));
  const int R = config->powersgd_rank;
  const size_t params = rs_model_param_count(model);
  if (rs__powersgd_check_rank(model, R, errmsg) != RS_OK)
    return RS_EINVAL;
  rs_powersgd_t *ps = calloc(1, sizeof *ps);
  if (!ps)
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  ps->config = *config;
  if (config->test)
    ps->test = *config->test;
  ps->config.test = &ps->test;
  ps->model = model;
  ps->workers = config->workers;
  ps->elems = rs_model_elems(model);
  int rc = RS_ENOMEM;
  if (rs_model_buckets(model, config->first_bucket_bytes, config->bucket_bytes,
                       &ps->buckets, &ps->nbuckets))
    goto fail;
  ps->bucket = calloc(ps->nbuckets, sizeof *ps->bucket);
  ps->tensor = calloc(2 * params, sizeof *ps->tensor); /* + scratch */
  ps->first = calloc(ps->nbuckets + 1, sizeof *ps->first);
  ps->q_offset = calloc(params, sizeof *ps->q_offset);
  if (!ps->bucket || !ps->tensor || !ps->first || !ps->q_offset)
    goto fail;
  size_t t = 0, q = 0;
  for (size_t b = 0; b < ps->nbuckets; b++) {
    rs_powersgd_bucket_t *pb = &ps->bucket[b];
    pb->elems = ps->buckets[b].elems;
    ps->first[b] = t;
    for (size_t j = 0; j < ps->buckets[b].params; j++) {
      rs_powersgd_tensor_t *x = &ps->tensor[t + j];
      x->param = rs_model_bucket_param(model, &ps->buckets[b], b, j);
      x->bucket = b;
      x->rank = tensor_rank(rs_model_param(model, x->param), R, &x->n, &x->m);
    }
    order_bucket(&ps->tensor[t], ps->buckets[b].params);
    for (size_t j = 0; j < ps->buckets[b].params; j++, t++) {
      const rs_powersgd_tensor_t *x = &ps->tensor[t];
      if (x->rank) {
        ps->q_offset[t] = q;
        q += (size_t)x->m * (size_t)x->rank;
        pb->compressed++;
        pb->reduce_elems[RS_PSGD_P] += (size_t)x->n * (size_t)x->rank;
        pb->reduce_elems[RS_PSGD_Q] += (size_t)x->m * (size_t)x->rank;
      } else {
        pb->uncompressed++;
        pb->reduce_elems[RS_PSGD_UNCOMPRESSED] += (size_t)(x->n * x->m);
      }
    }
    ps->report.compressed += pb->compressed;
  }
  ps->first[ps->nbuckets] = t;
  if ((rc = make_q_model(ps, errmsg)) != RS_OK)
    goto fail;
  ps->q = calloc(q ? q : 1, sizeof *ps->q);
  ps->result = calloc(ps->elems ? ps->elems : 1, sizeof *ps->result);
  ps->inputs = malloc((size_t)ps->workers * (ps->elems ? ps->elems : 1) *
                      sizeof *ps->inputs);
  if (config->powersgd_feedback)
    ps->error = malloc((size_t)ps->workers * (ps->elems ? ps->elems : 1) *
                       sizeof *ps->error);
  if (config->powersgd_warm)
    ps->q_next = calloc(q ? q : 1, sizeof *ps->q_next);
  if (!ps->q || !ps->result || !ps->inputs ||
      (config->powersgd_feedback && !ps->error) ||
      (config->powersgd_warm && !ps->q_next)) {
    rc = rs__err(errmsg, RS_ENOMEM, "out of memory");
    goto fail;
  }
  ps->report.buckets = ps->nbuckets;
  ps->report.bucket = ps->bucket;
  ps->report.tensors = params;
  ps->report.tensor = ps->tensor;
  *out = ps;
  return RS_OK;
fail:
  if (rc == RS_ENOMEM)
    rs__err(errmsg, RS_ENOMEM, "out of memory");
  rs_powersgd_free(ps);
  return rc;
}

void rs_powersgd_free(rs_powersgd_t *ps) {
  if (!ps)
    return;
  free(ps->buckets);
  free(ps->bucket);
  free(ps->tensor);
  free(ps->first);
  free(ps->q_offset);
  rs_model_free(ps->q_model);
  free(ps->q);
  free(ps->inputs);
  free(ps->result);
  free(ps->error);
  free(ps->q_next);
  free(ps->history);
  free(ps);
}

const rs_model_t *rs_powersgd_q_model(const rs_powersgd_t *ps) {
  return ps->q_model;
}

float *rs_powersgd_q(rs_powersgd_t *ps) { return ps->q; }

int rs_powersgd_steps_done(const rs_powersgd_t *ps) { return ps->iter; }

const rs_powersgd_report_t *rs_powersgd_steps(const rs_powersgd_t *ps,
                                              int *count) {
  *count = ps->history_len;
  return ps->history;
}

const rs_config_t *rs__powersgd_config(const rs_powersgd_t *ps) {
  return &ps->config;
}

const rs_model_t *rs__powersgd_model(const rs_powersgd_t *ps) {
  return ps->model;
}

/* The step's report kept in the history (RS_ENOMEM if it cannot be). */
static int keep(rs_powersgd_t *ps, char *errmsg) {
  if (ps->history_len == ps->history_cap) {
    const int cap = ps->history_cap ? 2 * ps->history_cap : 8;
    rs_powersgd_report_t *h =
        realloc(ps->history, (size_t)cap * sizeof *ps->history);
    if (!h)
      return rs__err(errmsg, RS_ENOMEM, "out of memory");
    ps->history = h;
    ps->history_cap = cap;
  }
  ps->history[ps->history_len++] = ps->report;
  return RS_OK;
}

int rs_powersgd_compresses(const rs_powersgd_t *ps) {
  return ps->iter >= ps->config.powersgd_start;
}

int rs_powersgd_draws_q(const rs_powersgd_t *ps) {
  return ps->q_model && rs_powersgd_compresses(ps) &&
         !(ps->config.powersgd_warm && ps->have_q);
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void rs_powersgd_random_q(rs_powersgd_t *ps, uint64_t seed) {
  const size_t n = ps->q_model ? rs_model_elems(ps->q_model) : 0;
  uint64_t s = seed;
  for (size_t i = 0; i < n; i += 2) { /* Box-Muller, two at a time */
    double u1 = ((double)(splitmix64(&s) >> 11) + 1.0) / 9007199254740993.0;
    double u2 = (double)(splitmix64(&s) >> 11) / 9007199254740992.0;
    double r = sqrt(-2.0 * log(u1));
    ps->q[i] = (float)(r * cos(6.283185307179586 * u2));
    if (i + 1 < n)
      ps->q[i + 1] = (float)(r * sin(6.283185307179586 * u2));
  }
}

/* ---- the arithmetic, in float (F) and in double (D) --------------------- */

/* Gram-Schmidt on the columns of a rows x cols matrix (row-major), as
 * _orthogonalize_gram_schmidt with epsilon 0: each column divided by its
 * norm, then its projection taken from the columns after it. A column of
 * zeros stays zeros (torch's division gives NaN there: the hook's except
 * ZeroDivisionError never fires for a tensor). */
#define GRAM_SCHMIDT(NAME, T)                                                  \
  static void NAME(T *a, size_t rows, size_t cols) {                           \
    for (size_t i = 0; i < cols; i++) {                                        \
      double ss = 0;                                                           \
      for (size_t r = 0; r < rows; r++)                                        \
        ss += (double)a[r * cols + i] * a[r * cols + i];                       \
      const T norm = (T)sqrt(ss);                                              \
      for (size_t r = 0; r < rows; r++)                                        \
        a[r * cols + i] = norm > 0 ? a[r * cols + i] / norm : 0;               \
      for (size_t k = i + 1; k < cols; k++) {                                  \
        double dot = 0;                                                        \
        for (size_t r = 0; r < rows; r++)                                      \
          dot += (double)a[r * cols + i] * a[r * cols + k];                    \
        const T d = (T)dot;                                                    \
        for (size_t r = 0; r < rows; r++)                                      \
          a[r * cols + k] -= (T)(d * a[r * cols + i]);                         \
      }                                                                        \
    }                                                                          \
  }
GRAM_SCHMIDT(orth_f, float)
GRAM_SCHMIDT(orth_d, double)

/* p (n x r) = M q, M n x m; q m x r. */
#define LEFT(NAME, T, MT)                                                      \
  static void NAME(const MT *M, const T *q, T *p, size_t n, size_t m,          \
                   size_t r) {                                                 \
    for (size_t i = 0; i < n; i++)                                             \
      for (size_t k = 0; k < r; k++) {                                         \
        double s = 0;                                                          \
        for (size_t j = 0; j < m; j++)                                         \
          s += (double)M[i * m + j] * q[j * r + k];                            \
        p[i * r + k] = (T)s;                                                   \
      }                                                                        \
  }
/* q (m x r) = M^T p. */
#define RIGHT(NAME, T, MT)                                                     \
  static void NAME(const MT *M, const T *p, T *q, size_t n, size_t m,          \
                   size_t r) {                                                 \
    for (size_t j = 0; j < m; j++)                                             \
      for (size_t k = 0; k < r; k++) {                                         \
        double s = 0;                                                          \
        for (size_t i = 0; i < n; i++)                                         \
          s += (double)M[i * m + j] * p[i * r + k];                            \
        q[j * r + k] = (T)s;                                                   \
      }                                                                        \
  }
/* M (n x m) = p q^T. */
#define OUTER(NAME, T)                                                         \
  static void NAME(const T *p, const T *q, T *M, size_t n, size_t m,           \
                   size_t r) {                                                 \
    for (size_t i = 0; i < n; i++)                                             \
      for (size_t j = 0; j < m; j++) {                                         \
        double s = 0;                                                          \
        for (size_t k = 0; k < r; k++)                                         \
          s += (double)p[i * r + k] * q[j * r + k];                            \
        M[i * m + j] = (T)s;                                                   \
      }                                                                        \
  }
LEFT(left_f, float, float)
LEFT(left_d, double, float)
RIGHT(right_f, float, float)
RIGHT(right_d, double, float)
OUTER(outer_f, float)
OUTER(outer_d, double)

/* ---- the runs ----------------------------------------------------------- */

/* One all-reduce (op sum) of count elements a worker, each worker's from
 * fill(arg, w, buf), through a run of its own; sums (count floats,
 * worker 0's result) out. */
typedef void fill_fn(void *arg, int w, float *buf);

/* What a step's all-reduces share: the plan, where they are traced (trace
 * NULL: nowhere) with which config, who watches each run (a signal's
 * taker), the stop flag, and the message buffer. */
typedef struct step_io {
  rs_powersgd_t *ps;
  rs_trace_t *trace;
  const char *config_json;
  rs_powersgd_watch_t watch;
  const rs_stop_flag_t *stop;
  char *errmsg;
} step_io_t;

/* All-reduce `which` of bucket b (its reduce_elems[which] elements). */
static int allreduce(const step_io_t *io, size_t b, int which, fill_fn *fill,
                     void *arg, float *sums) {
  rs_powersgd_t *ps = io->ps;
  const size_t count = ps->bucket[b].reduce_elems[which];
  rs_trace_t *trace = io->trace;
  const char *config_json = io->config_json;
  const rs_powersgd_watch_t watch = io->watch;
  const rs_stop_flag_t *stop = io->stop;
  char *errmsg = io->errmsg;
  static const char *const names[] = {"uncompressed", "P", "Q"};
  if (stop && __atomic_load_n(stop, __ATOMIC_SEQ_CST))
    return rs__err(errmsg, RS_EINTERRUPTED, "interrupted");
  /* a model of one param: "MODEL: powersgd step 2 bucket 0 P", bucket0.P
   * (the step, so that a trace of several tells them apart) */
  char name[RS_ERRMSG_MAX], param[64];
  snprintf(name, sizeof name, "%.200s: powersgd step %d bucket %zu %s",
           rs_model_name(ps->model), ps->iter + 1, b, names[which]);
  snprintf(param, sizeof param, "bucket%zu.%s", b, names[which]);
  json_t *j = json_pack("{s:s, s:[{s:s, s:[I]}]}", "name", name, "params",
                        "name", param, "shape", (json_int_t)count);
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  rs_model_t *model = NULL;
  rs_run_t *run = NULL;
  char err[RS_ERRMSG_MAX] = "out of memory";
  int rc = text ? rs_model_parse(text, strlen(text), "powersgd", &model, err)
                : RS_ENOMEM;
  free(text);
  rs_config_t c = ps->config;
  c.hook = RS_HOOK_NONE;
  c.powersgd_rank = 0;
  c.op = RS_OP_SUM;
  c.average = RS_AVERAGE_POST;
  c.bucket_bytes = 0; /* the hook's one flat buffer: one all-reduce */
  c.ddp_layout = 0;
  c.ready_ns = NULL;
  c.warmup = 0;
  c.iterations = 1;
  c.order_report = 0;
  c.traced = trace != NULL;
  if (rc == RS_OK)
    rc = rs_run_create(&c, model, &run, err);
  if (rc == RS_OK && trace)
    rc = rs_run_set_trace(run, trace, config_json);
  if (rc == RS_OK) {
    for (int w = 0; w < ps->workers; w++)
      fill(arg, w, rs_run_buffer(run, w));
    rs_run_mark_filled(run);
    if (watch)
      watch(run);
    rc = rs_run_execute(run);
    if (watch)
      watch(NULL);
    const rs_result_t *res = rs_run_result(run);
    rs_powersgd_bucket_t *pb = &ps->bucket[b];
    pb->trace_id[which] = trace ? rs_run_trace_id(run) : -1;
    pb->sim_ns[which] = res->sim_ns;
    for (int w = 0; w < ps->workers; w++)
      pb->bytes[which] += rs_run_worker_stats(run, w)->bytes_sent;
    if (rc == RS_OK || rc == RS_ECHECK)
      memcpy(sums, rs_run_buffer(run, 0), count * sizeof *sums);
    if (rc != RS_OK)
      snprintf(err, sizeof err, "%s", rs_run_errmsg(run));
  }
  if (rc != RS_OK)
    rs__err(errmsg, rc, "powersgd bucket %zu, the %s all-reduce: %s", b,
            names[which], err);
  rs_run_free(run);
  rs_model_free(model);
  return rc;
}

/* What each all-reduce's fill reads: bucket b's tensors, on every worker,
 * and the Qs or Ps already orthogonalised. */
typedef struct bucket_job {
  rs_powersgd_t *ps;
  size_t b;
  const float *qhat; /* the bucket's Qs, orthogonalised (q's layout) */
  const float *phat; /* the bucket's Ps, summed and orthogonalised */
} bucket_job_t;

static const float *grad_of(const rs_powersgd_t *ps, int w, size_t param) {
  return ps->inputs + (size_t)w * ps->elems +
         rs_model_param(ps->model, param)->elem_offset;
}

static void fill_uncompressed(void *arg, int w, float *buf) {
  const bucket_job_t *j = arg;
  const rs_powersgd_t *ps = j->ps;
  for (size_t t = ps->first[j->b]; t < ps->first[j->b + 1]; t++)
    if (!ps->tensor[t].rank) {
      const size_t param = ps->tensor[t].param;
      const size_t elems = rs_model_param(ps->model, param)->elems;
      memcpy(buf, grad_of(ps, w, param), elems * sizeof *buf);
      buf += elems;
    }
}

static void fill_p(void *arg, int w, float *buf) {
  const bucket_job_t *j = arg;
  const rs_powersgd_t *ps = j->ps;
  const float *q = j->qhat;
  for (size_t t = ps->first[j->b]; t < ps->first[j->b + 1]; t++) {
    const rs_powersgd_tensor_t *x = &ps->tensor[t];
    if (!x->rank)
      continue;
    const size_t n = (size_t)x->n, m = (size_t)x->m, r = (size_t)x->rank;
    left_f(grad_of(ps, w, x->param), q, buf, n, m, r);
    q += m * r;
    buf += n * r;
  }
}

static void fill_q(void *arg, int w, float *buf) {
  const bucket_job_t *j = arg;
  const rs_powersgd_t *ps = j->ps;
  const float *p = j->phat;
  for (size_t t = ps->first[j->b]; t < ps->first[j->b + 1]; t++) {
    const rs_powersgd_tensor_t *x = &ps->tensor[t];
    if (!x->rank)
      continue;
    const size_t n = (size_t)x->n, m = (size_t)x->m, r = (size_t)x->rank;
    right_f(grad_of(ps, w, x->param), p, buf, n, m, r);
    p += n * r;
    buf += m * r;
  }
}

/* Bucket b's step: its three all-reduces, and its result in ps->result. */
static int step_bucket(const step_io_t *io, size_t b, float *scratch) {
  rs_powersgd_t *ps = io->ps;
  const rs_powersgd_bucket_t *pb = &ps->bucket[b];
  const size_t nu = pb->reduce_elems[RS_PSGD_UNCOMPRESSED];
  const size_t np = pb->reduce_elems[RS_PSGD_P];
  const size_t nq = pb->reduce_elems[RS_PSGD_Q];
  float *u = scratch, *p = u + nu, *qhat = p + np, *q = qhat + nq;
  bucket_job_t job = {ps, b, qhat, p};
  const float W = (float)ps->workers;
  /* Q orthogonalised, as the hook does right after filling it */
  for (size_t t = ps->first[b], at = 0; t < ps->first[b + 1]; t++) {
    const rs_powersgd_tensor_t *x = &ps->tensor[t];
    if (!x->rank)
      continue;
    const size_t mr = (size_t)x->m * (size_t)x->rank;
    memcpy(qhat + at, ps->q + ps->q_offset[t], mr * sizeof *qhat);
    orth_f(qhat + at, (size_t)x->m, (size_t)x->rank);
    at += mr;
  }
  int rc = allreduce(io, b, RS_PSGD_UNCOMPRESSED, fill_uncompressed, &job, u);
  int checked = rc == RS_OK;
  if (rc == RS_OK || rc == RS_ECHECK) {
    int prc = allreduce(io, b, RS_PSGD_P, fill_p, &job, p);
    checked &= prc == RS_OK;
    rc = rc == RS_OK ? prc : rc == RS_ECHECK && prc != RS_OK ? prc : rc;
  }
  if (rc == RS_OK || rc == RS_ECHECK) {
    for (size_t t = ps->first[b], at = 0; t < ps->first[b + 1]; t++) {
      const rs_powersgd_tensor_t *x = &ps->tensor[t];
      if (x->rank) {
        orth_f(p + at, (size_t)x->n, (size_t)x->rank);
        at += (size_t)x->n * (size_t)x->rank;
      }
    }
    int qrc = allreduce(io, b, RS_PSGD_Q, fill_q, &job, q);
    checked &= qrc == RS_OK;
    rc = rc == RS_OK ? qrc : rc == RS_ECHECK && qrc != RS_OK ? qrc : rc;
  }
  if (rc != RS_OK && rc != RS_ECHECK)
    return rc;
  /* the uncompressed ones divided by W; the rest P Q^T, Q divided */
  for (size_t i = 0; i < nq; i++)
    q[i] /= W;
  if (ps->q_next) /* q_memory_dict: what the next step starts from */
    for (size_t t = ps->first[b], at = 0; t < ps->first[b + 1]; t++) {
      const rs_powersgd_tensor_t *x = &ps->tensor[t];
      if (!x->rank)
        continue;
      const size_t mr = (size_t)x->m * (size_t)x->rank;
      memcpy(ps->q_next + ps->q_offset[t], q + at, mr * sizeof *q);
      at += mr;
    }
  const float *pp = p, *qq = q, *uu = u;
  for (size_t t = ps->first[b]; t < ps->first[b + 1]; t++) {
    const rs_powersgd_tensor_t *x = &ps->tensor[t];
    const rs_param_t *prm = rs_model_param(ps->model, x->param);
    float *out = ps->result + prm->elem_offset;
    if (!x->rank) {
      for (size_t i = 0; i < prm->elems; i++)
        out[i] = uu[i] / W;
      uu += prm->elems;
      continue;
    }
    const size_t n = (size_t)x->n, m = (size_t)x->m, r = (size_t)x->rank;
    outer_f(pp, qq, out, n, m, r);
    pp += n * r;
    qq += m * r;
  }
  return checked ? RS_OK : RS_ECHECK;
}

/* The same step in double from the same Q, its sums in worker order: the
 * largest |difference| from the result. */
static double step_in_double(const rs_powersgd_t *ps) {
  double worst = 0;
  const int W = ps->workers;
  for (size_t t = 0; t < rs_model_param_count(ps->model); t++) {
    const rs_powersgd_tensor_t *x = &ps->tensor[t];
    const rs_param_t *prm = rs_model_param(ps->model, x->param);
    const float *got = ps->result + prm->elem_offset;
    if (!x->rank) {
      for (size_t i = 0; i < prm->elems; i++) {
        double s = 0;
        for (int w = 0; w < W; w++)
          s += grad_of(ps, w, x->param)[i];
        worst = fmax(worst, fabs(s / W - got[i]));
      }
      continue;
    }
    const size_t n = (size_t)x->n, m = (size_t)x->m, r = (size_t)x->rank;
    double *q = calloc(m * r, sizeof *q), *p = calloc(n * r, sizeof *p);
    double *part = calloc((n > m ? n : m) * r, sizeof *part);
    double *M = calloc(n * m, sizeof *M);
    if (!q || !p || !part || !M) {
      free(q), free(p), free(part), free(M);
      return NAN;
    }
    for (size_t i = 0; i < m * r; i++)
      q[i] = ps->q[ps->q_offset[t] + i];
    orth_d(q, m, r);
    for (int w = 0; w < W; w++) {
      left_d(grad_of(ps, w, x->param), q, part, n, m, r);
      for (size_t i = 0; i < n * r; i++)
        p[i] += part[i];
    }
    orth_d(p, n, r);
    memset(q, 0, m * r * sizeof *q);
    for (int w = 0; w < W; w++) {
      right_d(grad_of(ps, w, x->param), p, part, n, m, r);
      for (size_t i = 0; i < m * r; i++)
        q[i] += part[i];
    }
    for (size_t i = 0; i < m * r; i++)
      q[i] /= W;
    outer_d(p, q, M, n, m, r);
    for (size_t i = 0; i < n * m; i++)
      worst = fmax(worst, fabs(M[i] - got[i]));
    free(q), free(p), free(part), free(M);
  }
  return worst;
}

/* The result against the exact mean of the step's inputs (in double). */
static void against_mean(rs_powersgd_t *ps) {
  rs_powersgd_report_t *r = &ps->report;
  const int W = ps->workers;
  double diff2 = 0, mean2 = 0;
  r->max_abs_err = 0;
  for (size_t i = 0; i < ps->elems; i++) {
    double s = 0;
    for (int w = 0; w < W; w++)
      s += ps->inputs[(size_t)w * ps->elems + i];
    const double mean = s / W, d = ps->result[i] - mean;
    r->max_abs_err = fmax(r->max_abs_err, fabs(d));
    diff2 += d * d;
    mean2 += mean * mean;
  }
  r->rel_err = mean2 > 0 ? sqrt(diff2 / mean2) : sqrt(diff2);
}

/* The inputs made the residuals e_w = input_w - result, in float as the
 * hook's input_tensor_cp - input_tensor (error feedback keeps them). */
static void residuals(rs_powersgd_t *ps) {
  rs_powersgd_report_t *r = &ps->report;
  r->residual_rel = 0;
  r->residual_worker = 0;
  for (int w = 0; w < ps->workers; w++) {
    float *g = ps->inputs + (size_t)w * ps->elems;
    double e2 = 0, g2 = 0;
    for (size_t i = 0; i < ps->elems; i++) {
      g2 += (double)g[i] * g[i];
      g[i] -= ps->result[i];
      e2 += (double)g[i] * g[i];
    }
    const double rel = g2 > 0 ? sqrt(e2 / g2) : sqrt(e2);
    if (rel > r->residual_rel)
      r->residual_rel = rel, r->residual_worker = w;
  }
}

/* The three all-reduces of every bucket, the result in ps->result. */
static int compress(rs_powersgd_t *ps, const rs_powersgd_io_t *told,
                    char *errmsg) {
  size_t most = 1;
  for (size_t b = 0; b < ps->nbuckets; b++) {
    const size_t *e = ps->bucket[b].reduce_elems;
    size_t need = e[0] + e[1] + 2 * e[2];
    most = need > most ? need : most;
  }
  float *scratch = malloc(most * sizeof *scratch);
  if (!scratch)
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  int checked = 1, rc = RS_OK;
  for (size_t b = 0; b < ps->nbuckets && (rc == RS_OK || rc == RS_ECHECK);
       b++) {
    const step_io_t io = {ps,          told->trace, told->config_json,
                          told->watch, told->stop,  errmsg};
    int brc = step_bucket(&io, b, scratch);
    checked &= brc == RS_OK;
    rc = brc == RS_OK ? rc : brc;
  }
  free(scratch);
  if (rc != RS_OK && rc != RS_ECHECK)
    return rc;
  return checked ? RS_OK : RS_ECHECK;
}

/* The Qs the caller filled (a file's): finite, or refused as non-finite
 * gradients are. Gram-Schmidt would zero a column of NaN silently where
 * torch carries the NaN into every result. */
static int check_q_finite(const rs_powersgd_t *ps, char *errmsg) {
  const size_t params = rs_model_param_count(ps->q_model);
  for (size_t p = 0; p < params; p++) {
    const rs_param_t *q = rs_model_param(ps->q_model, p);
    for (size_t i = 0; i < q->elems; i++) {
      const float v = ps->q[q->elem_offset + i];
      if (!isfinite(v))
        return rs__err(errmsg, RS_EINVAL,
                       "powersgd: the initial Q of \"%.200s\" holds %s at "
                       "element %zu: Qs must be finite",
                       q->name, isnan(v) ? "nan" : v > 0 ? "inf" : "-inf", i);
    }
  }
  return RS_OK;
}

int rs_powersgd_execute(rs_powersgd_t *ps, rs_run_t *plain,
                        const rs_powersgd_io_t *io, char *errmsg) {
  static const rs_powersgd_io_t none = {0};
  const rs_powersgd_io_t *told = io ? io : &none;
  const rs_powersgd_watch_t watch = told->watch;
  const rs_config_t *pc = rs_run_config(plain);
  if (pc->workers != ps->workers || pc->hook != RS_HOOK_ALLREDUCE ||
      rs_model_elems(ps->model) != ps->elems)
    return rs__err(errmsg, RS_EINVAL,
                   "powersgd: the plain run must have the step's workers "
                   "and model, with the allreduce hook");
  const int vanilla = !rs_powersgd_compresses(ps);
  if (!vanilla && ps->q_model && rs_powersgd_draws_q(ps)) {
    int rc = check_q_finite(ps, errmsg);
    if (rc != RS_OK)
      return rc;
  }
  for (int w = 0; w < ps->workers; w++)
    memcpy(ps->inputs + (size_t)w * ps->elems, rs_run_buffer(plain, w),
           ps->elems * sizeof *ps->inputs);
  rs_powersgd_report_t *r = &ps->report;
  r->step = ps->iter + 1;
  r->vanilla = vanilla;
  r->q_warm = !vanilla && ps->q_model && !rs_powersgd_draws_q(ps);
  r->error_added = !vanilla && ps->error && ps->have_error;
  if (r->error_added) /* error_dict, added to the bucket first */
    for (size_t i = 0; i < (size_t)ps->workers * ps->elems; i++)
      ps->inputs[i] += ps->error[i];
  if (watch)
    watch(plain);
  int rc = rs_run_execute(plain);
  if (watch)
    watch(NULL);
  if (rc != RS_OK && rc != RS_ECHECK)
    return rs__err(errmsg, rc, "powersgd: the plain all-reduce: %s",
                   rs_run_errmsg(plain));
  r->plain_bytes = 0;
  for (int w = 0; w < ps->workers; w++)
    r->plain_bytes += rs_run_worker_stats(plain, w)->bytes_sent;
  r->plain_sim_ns = rs_run_result(plain)->sim_ns;
  for (size_t b = 0; b < ps->nbuckets; b++) {
    memset(ps->bucket[b].bytes, 0, sizeof ps->bucket[b].bytes);
    memset(ps->bucket[b].sim_ns, 0, sizeof ps->bucket[b].sim_ns);
    for (int k = 0; k < RS_PSGD_REDUCES; k++)
      ps->bucket[b].trace_id[k] = -1;
  }
  if (vanilla) {
    /* before start_powerSGD_iter the hook is allreduce_hook: the plain
     * run is it, and no state changes but the step count */
    memcpy(ps->result, rs_run_buffer(plain, 0), ps->elems * sizeof *ps->result);
    r->bytes = r->plain_bytes;
    r->sim_ns = r->plain_sim_ns;
    r->checked = rc == RS_OK;
    against_mean(ps);
    r->f64_max_abs = r->max_abs_err;
    r->residual_rel = 0;
    r->residual_worker = 0;
    ps->iter++;
    if (rc == RS_ECHECK)
      rs__err(errmsg, rc, "powersgd step %d, the vanilla all-reduce: %s",
              r->step, rs_run_errmsg(plain));
    return keep(ps, errmsg) ? RS_ENOMEM : rc;
  }
  rc = compress(ps, told, errmsg);
  if (rc != RS_OK && rc != RS_ECHECK)
    return rc;
  r->bytes = r->sim_ns = 0;
  for (size_t b = 0; b < ps->nbuckets; b++)
    for (int k = 0; k < RS_PSGD_REDUCES; k++) {
      r->bytes += ps->bucket[b].bytes[k];
      r->sim_ns += ps->bucket[b].sim_ns[k];
    }
  r->checked = rc == RS_OK;
  against_mean(ps);
  r->f64_max_abs = step_in_double(ps); /* from this step's q, before it moves */
  residuals(ps);
  if (ps->error) {
    memcpy(ps->error, ps->inputs,
           (size_t)ps->workers * ps->elems * sizeof *ps->error);
    ps->have_error = 1;
  }
  if (ps->q_next && ps->q_model) {
    memcpy(ps->q, ps->q_next, rs_model_elems(ps->q_model) * sizeof *ps->q);
    ps->have_q = 1;
  }
  ps->iter++;
  return keep(ps, errmsg) ? RS_ENOMEM : rc;
}

const float *rs_powersgd_result(const rs_powersgd_t *ps) { return ps->result; }

const float *rs_powersgd_residual(const rs_powersgd_t *ps, int worker) {
  return ps->inputs + (size_t)worker * ps->elems;
}

const rs_powersgd_report_t *rs_powersgd_report(const rs_powersgd_t *ps) {
  return &ps->report;
}
