/* step/step.c - the training step (step.h): each param's compute, the
 * buckets' ready times, and the step's timeline on the simulated clocks,
 * the buckets all-reduced through the algorithms' own schedule
 * simulation (algo.h's rs__algo_simulate_ready), or each as one
 * collective of a given time (step.h's allreduce_ns: NCCL's way). */
#include "ringsim/step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/list.h"
#include "base/util.h"
#include "hook/powersgd_int.h"
#include "net/netmodel.h"
#include "ringsim/powersgd.h"

/* ---- compute ------------------------------------------------------------ */

/* "312T": a rate in FLOP/s, a decimal (the one grammar: base/util.c)
 * with its suffix G, T or P required. */
static int read_flops(const char *text, size_t len, double *out) {
  char buf[64];
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy(buf, text, len);
  buf[len] = '\0';
  double v;
  const char *end;
  if (rs_read_decimal(buf, &v, &end))
    return -1;
  const double scale = strcmp(end, "G") == 0   ? 1e9
                       : strcmp(end, "T") == 0 ? 1e12
                       : strcmp(end, "P") == 0 ? 1e15
                                               : 0;
  if (scale == 0 || !(v > 0) || v * scale > 1e21)
    return -1;
  *out = v * scale;
  return 0;
}

/* "4096": the batch's rows, an integer in 1..10^13. */
static int read_rows(const char *text, size_t len, double *out) {
  char buf[24];
  long v;
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy(buf, text, len);
  buf[len] = '\0';
  if (rs_read_int(buf, 1, 10000000000000L, &v))
    return -1;
  *out = (double)v;
  return 0;
}

int rs_compute_parse(const char *spec, rs_compute_t *c, char *errmsg) {
  rs_compute_t got = {0};
  const char *p = spec;
  while (*p) {
    const char *comma = strchr(p, ',');
    const size_t len = comma ? (size_t)(comma - p) : strlen(p);
    if (len > 6 && strncmp(p, "flops=", 6) == 0) {
      if (got.flops || read_flops(p + 6, len - 6, &got.flops))
        return rs__err_at(errmsg, RS_EINVAL, "--compute", spec,
                          (size_t)(p - spec), len,
                          "flops= is a rate in FLOP/s with its unit G, T or "
                          "P, once (flops=312T)");
    } else if (len > 5 && strncmp(p, "rows=", 5) == 0) {
      if (got.rows || read_rows(p + 5, len - 5, &got.rows))
        return rs__err_at(errmsg, RS_EINVAL, "--compute", spec,
                          (size_t)(p - spec), len,
                          "rows= is the batch's rows (tokens or samples), a "
                          "whole number from 1 to 10^13, once");
    } else {
      return rs__err_at(errmsg, RS_EINVAL, "--compute", spec,
                        (size_t)(p - spec), len,
                        "expected flops=RATE,rows=R, e.g. "
                        "flops=312T,rows=4096");
    }
    p += len + (comma != NULL);
  }
  if (!got.flops || !got.rows)
    return rs__err_at(errmsg, RS_EINVAL, "--compute", spec, 0, 0,
                      "give both flops= and rows=, e.g. "
                      "flops=312T,rows=4096");
  *c = got;
  return RS_OK;
}

/* flops at rate, in ns rounded up: the product flops x 1e9 first, so an
 * exact quotient (1,998 FLOPs at 1 GFLOP/s: 1,998 ns) stays exact. */
static uint64_t flops_ns(double flops, double rate) {
  const double ns = ceil(flops * 1e9 / rate);
  return ns < 1.8e19 ? (uint64_t)ns : UINT64_MAX / 4;
}

int rs_step_compute(const rs_model_t *model, const rs_compute_t *c,
                    uint64_t *forward_ns, uint64_t *backward_ns, char *errmsg) {
  const size_t n = rs_model_param_count(model);
  for (size_t k = 0; k < n; k++) {
    const rs_param_t *p = rs_model_param(model, k);
    if (c && c->flops > 0) {
      const double work = c->rows * (double)p->elems;
      forward_ns[k] = flops_ns(2 * work, c->flops);
      backward_ns[k] = flops_ns(4 * work, c->flops);
      continue;
    }
    if (p->backward_us < 0)
      return rs__err(errmsg, RS_EINVAL,
                     "%s: param \"%.100s\" has no backward_us: a step needs "
                     "every param's (tools/torch_profile.py writes them), "
                     "or --compute flops=RATE,rows=R",
                     rs_model_name(model), p->name);
    forward_ns[k] =
        p->forward_us > 0 ? (uint64_t)llround(p->forward_us * 1e3) : 0;
    backward_ns[k] = (uint64_t)llround(p->backward_us * 1e3);
  }
  return RS_OK;
}

/* ---- the timeline ------------------------------------------------------- */

/* A worker's compute of t ns, `slow` times slower when it is the slow one. */
static uint64_t scaled(const rs_step_config_t *cfg, int r, uint64_t t) {
  if (r != cfg->slow_worker || cfg->slow == 1)
    return t;
  const double v = ceil((double)t * cfg->slow);
  return v < 1.8e19 ? (uint64_t)v : UINT64_MAX / 4;
}

/* Worker r's forward end, and each param's gradient time into grad[]. */
static uint64_t worker_grads(const rs_model_t *model,
                             const rs_step_config_t *cfg, int r,
                             uint64_t *grad) {
  const size_t n = rs_model_param_count(model);
  uint64_t t = 0;
  for (size_t k = 0; k < n; k++)
    t = rs__sat_add(t, scaled(cfg, r, cfg->forward_ns[k]));
  const uint64_t forward = t;
  for (size_t k = n; k-- > 0;) {
    t = rs__sat_add(t, scaled(cfg, r, cfg->backward_ns[k]));
    grad[k] = t;
  }
  return forward;
}

/* What the step's all-reduces run on: count buckets (each of the
 * model's, or a powersgd all-reduce's part of one) and when each is
 * ready on each worker, ready[b W + r]; both allocated. */
typedef struct timeline {
  rs_bucket_t *buckets;
  size_t count;
  uint64_t *ready;
} timeline_t;

static void timeline_free(timeline_t *tl) {
  free(tl->buckets);
  free(tl->ready);
  memset(tl, 0, sizeof *tl);
}

/* rs_step_ready into *tl, and each worker's forward end and last
 * gradient into forward[r] and last_grad[r] (either NULL: not wanted). */
static int step_ready(const rs_model_t *model, const rs_step_config_t *cfg,
                      timeline_t *tl, uint64_t *forward, uint64_t *last_grad) {
  const size_t n = rs_model_param_count(model), W = (size_t)cfg->workers;
  memset(tl, 0, sizeof *tl);
  if (rs_model_buckets(model, cfg->first_bucket_bytes, cfg->bucket_bytes,
                       &tl->buckets, &tl->count))
    return RS_ENOMEM;
  uint64_t *grad = malloc(n * sizeof *grad);
  tl->ready = malloc(tl->count * W * sizeof *tl->ready);
  if (!grad || !tl->ready) {
    free(grad);
    timeline_free(tl);
    return RS_ENOMEM;
  }
  for (size_t r = 0; r < W; r++) {
    const uint64_t f = worker_grads(model, cfg, (int)r, grad);
    if (forward)
      forward[r] = f;
    if (last_grad)
      last_grad[r] = grad[0]; /* (the first param's comes last) */
    /* a bucket's params are consecutive; its first is produced last */
    for (size_t b = 0; b < tl->count; b++)
      tl->ready[b * W + r] = grad[tl->buckets[b].first_param];
  }
  free(grad);
  return RS_OK;
}

int rs_step_ready(const rs_model_t *model, const rs_step_config_t *cfg,
                  uint64_t **ready, rs_bucket_t **buckets, size_t *count) {
  timeline_t tl;
  const int rc = step_ready(model, cfg, &tl, NULL, NULL);
  *ready = tl.ready;
  *buckets = tl.buckets;
  *count = tl.count;
  return rc;
}

void rs_step_time_free(rs_step_time_t *t) {
  free(t->buckets);
  free(t->worker_start);
  free(t->worker_end);
  free(t->worker_forward);
  free(t->worker_last_grad);
  memset(t, 0, sizeof *t);
}

/* Each bucket's part of the step: its params, its ready time, start and
 * end over the workers (the latest of each), and its exposed part; and
 * the step's communication and exposed time. */
static void time_buckets(rs_step_time_t *out, const timeline_t *tl,
                         uint64_t last_grad) {
  const size_t W = (size_t)out->workers;
  const rs_bucket_t *buckets = tl->buckets;
  const uint64_t *ready = tl->ready;
  uint64_t before = 0; /* the bucket before's end */
  for (size_t b = 0; b < out->bucket_count; b++) {
    rs_step_bucket_t *o = &out->buckets[b];
    o->first_param = buckets[b].first_param;
    o->params = buckets[b].params;
    o->elems = buckets[b].elems;
    if (!o->reduce_elems[0] && !o->reduce_elems[1] && !o->reduce_elems[2])
      o->reduce_elems[0] = o->elems; /* one all-reduce of the bucket */
    for (size_t r = 0; r < W; r++) {
      const size_t i = b * W + r;
      o->ready_ns = ready[i] > o->ready_ns ? ready[i] : o->ready_ns;
      o->start_ns = out->worker_start[i] > o->start_ns ? out->worker_start[i]
                                                       : o->start_ns;
      o->end_ns =
          out->worker_end[i] > o->end_ns ? out->worker_end[i] : o->end_ns;
    }
    const uint64_t hidden_until = last_grad > before ? last_grad : before;
    o->exposed_ns = o->end_ns > hidden_until ? o->end_ns - hidden_until : 0;
    out->comm_ns += o->end_ns - o->start_ns;
    out->exposed_ns += o->exposed_ns;
    before = o->end_ns > before ? o->end_ns : before;
  }
}

/* The powersgd hook's all-reduces: each bucket's three (uncompressed, P,
 * Q) as buckets of their own, ready when the bucket is, so that the
 * simulation runs them back to back on the bucket's stream, as the hook
 * issues each from the one before's callback; their counts into out's
 * buckets' reduce_elems. parts is allocated (timeline_free). */
static int powersgd_parts(const rs_model_t *model, const rs_step_config_t *cfg,
                          const timeline_t *tl, rs_step_time_t *out,
                          timeline_t *parts) {
  const size_t W = (size_t)cfg->workers, K = RS_PSGD_REDUCES;
  const size_t count = tl->count;
  size_t *elems = malloc(count * K * sizeof *elems + 1);
  parts->count = count * K;
  parts->buckets = calloc(count * K + 1, sizeof *parts->buckets);
  parts->ready = malloc(count * K * W * sizeof *parts->ready + 1);
  if (!elems || !parts->buckets || !parts->ready ||
      rs_powersgd_split(model, tl->buckets, count, cfg->powersgd_rank, elems)) {
    free(elems);
    timeline_free(parts);
    return RS_ENOMEM;
  }
  for (size_t b = 0; b < count; b++)
    for (size_t k = 0; k < K; k++) {
      rs_bucket_t *p = &parts->buckets[b * K + k];
      *p = tl->buckets[b];
      p->elems = elems[b * K + k];
      out->buckets[b].reduce_elems[k] = p->elems;
      for (size_t r = 0; r < W; r++)
        parts->ready[(b * K + k) * W + r] = tl->ready[b * W + r];
    }
  free(elems);
  return RS_OK;
}

/* The parts' spans folded into their buckets': from the first part's
 * start to the last's end, worker by worker. */
static void fold_parts(rs_step_time_t *out, size_t count, const uint64_t *start,
                       const uint64_t *end) {
  const size_t W = (size_t)out->workers, K = RS_PSGD_REDUCES;
  for (size_t b = 0; b < count; b++)
    for (size_t r = 0; r < W; r++) {
      out->worker_start[b * W + r] = start[b * K * W + r];
      out->worker_end[b * W + r] = end[(b * K + K - 1) * W + r];
    }
}

/* Each bucket as one collective of cfg->allreduce_ns's time (as NCCL
 * runs them): it starts once it is ready on every worker and the bucket
 * before has ended (one stream; a collective ends only when every rank
 * has joined), and ends its time later, on every worker alike. RS_OK, or
 * RS_EINVAL (errmsg) where allreduce_ns has no time for a bucket. */
static int collective_spans(const rs_step_config_t *cfg, const timeline_t *tl,
                            size_t elem_size, rs_step_time_t *out,
                            char *errmsg) {
  const size_t W = (size_t)cfg->workers, count = tl->count;
  const rs_bucket_t *buckets = tl->buckets;
  const uint64_t *ready = tl->ready;
  uint64_t before = 0; /* the bucket before's end */
  for (size_t b = 0; b < count; b++) {
    uint64_t start = before;
    for (size_t r = 0; r < W; r++)
      start = ready[b * W + r] > start ? ready[b * W + r] : start;
    const uint64_t bytes = (uint64_t)buckets[b].elems * elem_size;
    const uint64_t ns = cfg->allreduce_ns(cfg->allreduce_ctx, bytes);
    if (ns == UINT64_MAX)
      return rs__err(errmsg, RS_EINVAL,
                     "step: bucket %zu's all-reduce of %llu bytes has no "
                     "time (allreduce_ns)",
                     b, (unsigned long long)bytes);
    const uint64_t end = rs__sat_add(start, ns);
    for (size_t r = 0; r < W; r++) {
      out->worker_start[b * W + r] = start;
      out->worker_end[b * W + r] = end;
    }
    before = end;
  }
  return RS_OK;
}

int rs_step_simulate(const rs_model_t *model, const rs_step_config_t *cfg,
                     rs_step_time_t *out, char *errmsg) {
  memset(out, 0, sizeof *out);
  const int given = cfg->allreduce_ns != NULL; /* each bucket's time */
  const rs_algo_t *a = given ? NULL : rs__algo_get(cfg->algo);
  if (!given && !a)
    return rs__err(errmsg, RS_EINVAL,
                   "step: an algorithm of its own for every bucket "
                   "(not auto)");
  if (given && cfg->hook == RS_HOOK_POWERSGD)
    return rs__err(errmsg, RS_EINVAL,
                   "step: the powersgd hook's three all-reduces a bucket "
                   "with given times (allreduce_ns): not supported yet");
  if (cfg->hook == RS_HOOK_POWERSGD) {
    int rc = rs__powersgd_check_rank(model, cfg->powersgd_rank, errmsg);
    if (rc != RS_OK)
      return rc;
  }
  timeline_t tl = {0}, parts = {0};
  const size_t W = (size_t)cfg->workers;
  out->workers = cfg->workers;
  out->worker_forward = malloc(W * sizeof *out->worker_forward);
  out->worker_last_grad = malloc(W * sizeof *out->worker_last_grad);
  int rc = out->worker_forward && out->worker_last_grad
               ? step_ready(model, cfg, &tl, out->worker_forward,
                            out->worker_last_grad)
               : RS_ENOMEM;
  rs_sim_spans_t spans = {0};
  const int psgd = cfg->hook == RS_HOOK_POWERSGD;
  const size_t count = tl.count;
  if (rc == RS_OK) {
    out->buckets = calloc(count, sizeof *out->buckets);
    out->worker_start = malloc(count * W * sizeof *out->worker_start);
    out->worker_end = malloc(count * W * sizeof *out->worker_end);
    if (!out->buckets || !out->worker_start || !out->worker_end)
      rc = RS_ENOMEM;
  }
  if (rc == RS_OK && psgd)
    rc = powersgd_parts(model, cfg, &tl, out, &parts);
  int failed = 0; /* rc is an error errmsg holds already */
  if (rc == RS_OK && given) {
    rc = collective_spans(
        cfg, &tl,
        rs_dtype_size(rs_hook_dtype(cfg->hook, rs_model_dtype(model))), out,
        errmsg);
    failed = rc != RS_OK;
  } else if (rc == RS_OK) {
    const timeline_t *run = psgd ? &parts : &tl;
    const size_t n = run->count;
    spans.worker_start = psgd ? malloc(n * W * sizeof *spans.worker_start + 1)
                              : out->worker_start;
    spans.worker_end =
        psgd ? malloc(n * W * sizeof *spans.worker_end + 1) : out->worker_end;
    const rs_sim_job_t job = {
        a,
        &cfg->net,
        cfg->workers,
        run->buckets,
        n,
        cfg->segment_bytes,
        rs_dtype_size(rs_hook_dtype(cfg->hook, rs_model_dtype(model)))};
    rc = spans.worker_start && spans.worker_end
             ? rs__algo_simulate_ready(&job, run->ready, &spans)
             : RS_ENOMEM;
    if (rc == RS_OK && psgd)
      fold_parts(out, count, spans.worker_start, spans.worker_end);
    if (psgd) {
      free(spans.worker_start);
      free(spans.worker_end);
    }
  }
  timeline_free(&parts);
  if (rc == RS_OK) {
    out->bucket_count = count;
    /* the slowest worker's compute: the one whose last gradient is last */
    uint64_t last_grad = 0;
    for (size_t r = 0; r < W; r++)
      if (out->worker_last_grad[r] > last_grad) {
        last_grad = out->worker_last_grad[r];
        out->forward_ns = out->worker_forward[r];
      }
    out->backward_ns = last_grad - out->forward_ns;
    time_buckets(out, &tl, last_grad);
    const uint64_t comm_end = count ? out->buckets[count - 1].end_ns : 0;
    out->step_ns = comm_end > last_grad ? comm_end : last_grad;
  } else {
    rs_step_time_free(out);
  }
  timeline_free(&tl);
  if (failed)
    return rc;
  return rc ? rs__err(errmsg, rc, "step: out of memory") : RS_OK;
}
