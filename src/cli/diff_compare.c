/* diff_compare.c - `ringsim diff`'s two runs and their comparison: each
 * side's gradients (the smaller of two world sizes folding the larger
 * one's contributions locally first), its run, worker 0's result copied,
 * and the results compared element by element, in ULPs of the coarser
 * dtype, per param and per region of each side's algorithm; and the order
 * of additions of the element that differs most, from each side's
 * algorithm's own schedule (rs_run_element_order).
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_parts.h"

int diff_load_model(const char *path, const char *dtype, rs_model_t **out) {
  char err[RS_ERRMSG_MAX];
  if (!dtype) {
    if (rs_model_load(path, out, err) == RS_OK)
      return -1;
    fprintf(stderr, "ringsim: %s\n", err);
    return EXIT_USAGE;
  }
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  json_t *params = root ? json_object_get(root, "params") : NULL;
  if (!params || !json_is_array(params)) {
    json_decref(root);
    /* the loader's message says what is wrong with it */
    if (rs_model_load(path, out, err) != RS_OK) {
      fprintf(stderr, "ringsim: %s\n", err);
      return EXIT_USAGE;
    }
    rs_model_free(*out);
    *out = NULL;
    fprintf(stderr, "ringsim: %s: no params\n", path);
    return EXIT_USAGE;
  }
  size_t i;
  json_t *p;
  json_array_foreach(params, i, p) if (json_is_object(p))
      json_object_set_new(p, "dtype", json_string(dtype));
  char *text = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  int rc =
      text ? rs_model_parse(text, strlen(text), path, out, err) : RS_ENOMEM;
  free(text);
  if (rc == RS_OK)
    return -1;
  fprintf(stderr, "ringsim: %s\n", text ? err : "out of memory");
  return EXIT_USAGE;
}

double diff_value_at(const void *buf, rs_dtype_t dtype, size_t i) {
  if (dtype == RS_DTYPE_F64)
    return ((const double *)buf)[i];
  return ((const float *)buf)[i];
}

/* The smallest normal exponent of each dtype. */
static int min_exponent(rs_dtype_t dtype) {
  return dtype == RS_DTYPE_F16 ? -14 : dtype == RS_DTYPE_F64 ? -1022 : -126;
}

double diff_ulps(double a, rs_dtype_t da, double b, rs_dtype_t db) {
  if (a == b)
    return 0;
  if (da == db) {
    return (double)rs_dtype_ulps(da, a, b);
  }
  rs_dtype_t dc =
      rs_dtype_mantissa_bits(db) < rs_dtype_mantissa_bits(da) ? db : da;
  int e = ilogb(fmax(fabs(a), fabs(b)));
  if (e < min_exponent(dc))
    e = min_exponent(dc);
  return fabs(a - b) / ldexp(1.0, e - (rs_dtype_mantissa_bits(dc) - 1));
}

double diff_relative(double a, double b) {
  double m = fmax(fabs(a), fabs(b));
  return m == 0 ? 0 : fabs(a - b) / m;
}

double diff_scale(const double *c, int n, rs_op_t op) {
  double scale = op == RS_OP_PROD ? 1 : 0;
  for (int j = 0; j < n; j++)
    scale = op == RS_OP_PROD ? scale * fmax(1, fabs(c[j])) : scale + fabs(c[j]);
  return op == RS_OP_AVG ? scale / n : scale;
}

const char *diff_ulps_caveat(double a, double b, double scale) {
  if ((a < 0 && b > 0) || (a > 0 && b < 0))
    return "sign change";
  if (fmin(fabs(a), fabs(b)) < DIFF_NEAR_ZERO * scale)
    return "near zero";
  return NULL;
}

double diff_scaled(double a, double b, double scale) {
  double err = fabs(a - b);
  return scale > 0 ? err / scale : err > 0 ? INFINITY : 0;
}

/* Each element's scale (diff_scale) of the n contributions in from's
 * buffers, into s->scale. On error, errmsg says why. */
static int keep_scale(side_t *s, rs_run_t *from, int n, char *errmsg) {
  const rs_dtype_t dtype = rs_model_dtype(s->model);
  const size_t elems = rs_model_elems(s->model);
  double *c = malloc((size_t)n * sizeof *c);
  s->scale = malloc((elems ? elems : 1) * sizeof *s->scale);
  if (!c || !s->scale) {
    free(c);
    snprintf(errmsg, RS_ERRMSG_MAX, "out of memory");
    return RS_ENOMEM;
  }
  for (size_t i = 0; i < elems; i++) {
    if (i % 65536 == 0 && cli_signal()) { /* (signals.c) */
      free(c);
      snprintf(errmsg, RS_ERRMSG_MAX, "interrupted by %s",
               cli_signal_name(cli_signal()));
      return RS_EINTERRUPTED;
    }
    for (int j = 0; j < n; j++)
      c[j] = diff_value_at(rs_run_buffer(from, j), dtype, i);
    s->scale[i] = (float)diff_scale(c, n, s->config.op);
  }
  free(c);
  return RS_OK;
}

/* One worker's local fold of its k contributions c[0..k-1], left to right
 * in the dtype, as gradient accumulation adds into .grad: each fold in
 * float32 (f64: double), rounded to the dtype; for --op avg the last
 * addition is divided by k in the same fold (written (a+b)/k, as the
 * all-reduce's own mean). steps[j - 1] gets the value after folding c[j]
 * (steps may be NULL). min, max and prod fold with their op. */
double diff_local_fold(const double *c, int k, rs_op_t op, rs_dtype_t dtype,
                       double *steps) {
  if (dtype == RS_DTYPE_F64) {
    double acc = c[0];
    for (int j = 1; j < k; j++) {
      double v = c[j];
      acc = op == RS_OP_MIN                 ? (v < acc ? v : acc)
            : op == RS_OP_MAX               ? (v > acc ? v : acc)
            : op == RS_OP_PROD              ? acc * v
            : op == RS_OP_AVG && j == k - 1 ? (acc + v) / (double)k
                                            : acc + v;
      if (steps)
        steps[j - 1] = acc;
    }
    return acc;
  }
  float acc = (float)c[0];
  for (int j = 1; j < k; j++) {
    float v = (float)c[j];
    acc = op == RS_OP_MIN                 ? (v < acc ? v : acc)
          : op == RS_OP_MAX               ? (v > acc ? v : acc)
          : op == RS_OP_PROD              ? acc * v
          : op == RS_OP_AVG && j == k - 1 ? (acc + v) / (float)k
                                          : acc + v;
    acc = rs_dtype_round(dtype, acc);
    if (steps)
      steps[j - 1] = acc;
  }
  return acc;
}

/* Fill run's buffers as its config says (--grads, inline, generated). */
static int fill_plain(const side_t *s, rs_run_t *run) {
  if (s->opt.grads)
    return rs_run_load_grads(run, s->opt.grads);
  if (s->use_inline)
    return rs_run_fill_inline(run);
  return rs_run_fill(run, s->opt.init, s->opt.seed);
}

/* Fill side s's run: its own gradients; or, on the smaller of two world
 * sizes, the L contributions made in a run of L workers (never executed),
 * worker r given the local fold of c_{rk}..c_{rk+k-1}. The contributions
 * to element s->at are kept in s->at_contribs if it is set. On error,
 * errmsg says why. */
static int fill_side(side_t *s, rs_run_t *run, char *errmsg) {
  const rs_dtype_t dtype = rs_model_dtype(s->model);
  const size_t elems = rs_model_elems(s->model);
  rs_run_t *from = run;
  double *c = NULL;
  int status = RS_OK;
  if (s->local > 1) {
    rs_config_t config = s->config;
    config.workers = s->contribs;
    /* the table's first (the ring, which runs anywhere): only its
     * buffers are used */
    config.algo = (rs_algorithm_t)0;
    if ((status = rs_run_create(&config, s->model, &from, errmsg)) != RS_OK)
      return status;
    cli_signals_watch(from); /* a signal stops its fill */
  }
  if ((status = fill_plain(s, from)) != RS_OK) {
    snprintf(errmsg, RS_ERRMSG_MAX, "%s", rs_run_errmsg(from));
    goto done;
  }
  if (s->want_scale && !s->scale &&
      (status = keep_scale(s, from, s->contribs, errmsg)) != RS_OK)
    goto done;
  if (s->at_contribs)
    for (int i = 0; i < s->contribs; i++)
      s->at_contribs[i] = diff_value_at(rs_run_buffer(from, i), dtype, s->at);
  if (s->local == 1)
    goto done;
  if (!(c = malloc((size_t)s->local * sizeof *c))) {
    snprintf(errmsg, RS_ERRMSG_MAX, "out of memory");
    status = RS_ENOMEM;
    goto done;
  }
  for (int r = 0; r < s->config.workers; r++) {
    void *dst = rs_run_buffer(run, r);
    for (size_t i = 0; i < elems; i++) {
      if (i % 65536 == 0 && cli_signal()) { /* (signals.c) */
        snprintf(errmsg, RS_ERRMSG_MAX, "interrupted by %s",
                 cli_signal_name(cli_signal()));
        status = RS_EINTERRUPTED;
        goto done;
      }
      for (int j = 0; j < s->local; j++)
        c[j] = diff_value_at(rs_run_buffer(from, r * s->local + j), dtype, i);
      double v = diff_local_fold(c, s->local, s->config.op, dtype, NULL);
      if (dtype == RS_DTYPE_F64)
        ((double *)dst)[i] = v;
      else
        ((float *)dst)[i] = (float)v;
    }
  }
  rs_run_mark_filled(run);
done:
  free(c);
  if (from != run) {
    cli_signals_watch(run);
    rs_run_free(from);
  }
  return status;
}

int diff_run_side(side_t *s, rs_run_t **keep) {
  char err[RS_ERRMSG_MAX];
  rs_run_t *run = NULL;
  int rc = -1;
  if (rs_run_create(&s->config, s->model, &run, err)) {
    fprintf(stderr, "ringsim: %s: %s\n", s->label, err);
    return EXIT_USAGE;
  }
  cli_signals_watch(run); /* a signal stops it (signals.c) */
  int status = fill_side(s, run, err);
  if (status == RS_OK && keep) {
    cli_signals_watch(NULL); /* (it is not executed) */
    *keep = run;
    return -1;
  }
  if (status != RS_OK) {
    fprintf(stderr, "ringsim: %s: %s\n", s->label, err);
    rc = cli_exit_code(status);
    goto done;
  }
  status = rs_run_execute(run);
  s->status = status;
  if (status != RS_OK && status != RS_ECHECK) {
    fprintf(stderr, "ringsim: %s: %s\n", s->label, rs_run_errmsg(run));
    rc = cli_exit_code(status);
    goto done;
  }
  size_t bytes =
      rs_model_elems(s->model) * rs_dtype_buffer_size(rs_model_dtype(s->model));
  s->result = malloc(bytes ? bytes : 1);
  if (!s->result) {
    fprintf(stderr, "ringsim: out of memory\n");
    rc = EXIT_RUN;
    goto done;
  }
  /* (in parts: a signal stops a copy of gigabytes too) */
  const size_t part = (size_t)64 << 20;
  for (size_t at = 0; at < bytes; at += part) {
    if (cli_signal()) {
      rc = EXIT_RUN; /* main says which signal, and exits 128 + it */
      goto done;
    }
    memcpy((char *)s->result + at, (const char *)rs_run_buffer(run, 0) + at,
           bytes - at < part ? bytes - at : part);
  }
done:
  if (status == RS_EINTERRUPTED)
    cli_signal_said(); /* its message named the signal */
  cli_signals_watch(NULL);
  rs_run_free(run);
  return rc;
}

int diff_compare(diff_t *d) {
  const rs_model_t *m = d->s[0].model;
  d->da = rs_model_dtype(d->s[0].model);
  d->db = rs_model_dtype(d->s[1].model);
  d->coarse = rs_dtype_mantissa_bits(d->db) < rs_dtype_mantissa_bits(d->da)
                  ? d->db
                  : d->da;
  d->elems = rs_model_elems(m);
  d->params = rs_model_param_count(m);
  d->pd = calloc(d->params ? d->params : 1, sizeof *d->pd);
  d->worst = SIZE_MAX;
  if (!d->pd) {
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  const void *ra = d->s[0].result, *rb = d->s[1].result;
  for (size_t p = 0; p < d->params; p++) {
    const rs_param_t *param = rs_model_param(m, p);
    param_diff_t *pd = &d->pd[p];
    for (size_t i = param->elem_offset; i < param->elem_offset + param->elems;
         i++) {
      if (i % 65536 == 0 && cli_signal())
        break; /* (said by the caller) */
      double a = diff_value_at(ra, d->da, i), b = diff_value_at(rb, d->db, i);
      if (a == b)
        continue;
      double u = diff_ulps(a, d->da, b, d->db), rel = diff_relative(a, b);
      double scale = d->s[0].scale[i], scaled = diff_scaled(a, b, scale);
      const char *caveat = diff_ulps_caveat(a, b, scale);
      d->differing++;
      pd->differing++;
      d->sign_changes += caveat && caveat[0] == 's';
      d->near_zero += caveat && caveat[0] == 'n';
      pd->max_ulps = fmax(pd->max_ulps, u);
      pd->max_rel = fmax(pd->max_rel, rel);
      pd->max_scaled = fmax(pd->max_scaled, scaled);
      d->max_rel = fmax(d->max_rel, rel);
      d->max_scaled = fmax(d->max_scaled, scaled);
      if (u > d->max_ulps || d->worst == SIZE_MAX) {
        d->max_ulps = fmax(d->max_ulps, u);
        d->worst = i;
        d->worst_param = p;
      }
    }
  }
  return -1;
}

/* How many of elements [lo, hi) of the flat buffer differ. */
static uint64_t differing_in(const diff_t *d, size_t lo, size_t hi) {
  uint64_t n = 0;
  for (size_t i = lo; i < hi && !(i % 65536 == 0 && cli_signal()); i++)
    n += diff_value_at(d->s[0].result, d->da, i) !=
         diff_value_at(d->s[1].result, d->db, i);
  return n;
}

/* Into side k's counts, the differing elements of bucket bk's regions
 * at offsets off[0..count] from its start, called word. */
static void add_regions(diff_t *d, int k, const rs_bucket_t *bk,
                        const size_t *off, int count, const char *word) {
  d->region_word[k] = word;
  d->region_n[k] = count > d->region_n[k] ? count : d->region_n[k];
  for (int c = 0; c < count; c++)
    d->region_counts[k][c] += differing_in(d, bk->elem_offset + off[c],
                                           bk->elem_offset + off[c + 1]);
}

/* Bucket bk's (index bi) counts on NCCL's channels, which cut each
 * channel's part into the algorithm's regions: the ring's chunk c of
 * every channel's part counts as chunk c; a channel's tree carries its
 * part whole, which counts as the channel's. Returns 0 off channels. */
static int count_channels(diff_t *d, int k, rs_run_t *fresh, size_t bi,
                          size_t *off) {
  const rs_bucket_t *bk = rs_run_bucket(fresh, bi);
  const char *word;
  int C = 1;
  for (int ch = 0; ch < C; ch++) {
    int count = rs_run_bucket_channel_regions(fresh, bi, ch, off, &word, &C);
    if (C < 2)
      return 0;
    if (count == 0)
      continue; /* idle */
    if (!word) { /* (the tree: the part is the channel's region) */
      d->region_word[k] = "channel";
      d->region_n[k] = ch + 1 > d->region_n[k] ? ch + 1 : d->region_n[k];
      d->region_counts[k][ch] += differing_in(
          d, bk->elem_offset + off[0], bk->elem_offset + off[count]);
      continue;
    }
    add_regions(d, k, bk, off, count, word);
  }
  d->region_channels[k] = 1;
  return 1;
}

/* How many elements differ in each region (chunk, part, half) side k's
 * algorithm cuts its buckets into (on NCCL's channels, its channels'
 * parts: count_channels), over the buckets of its run fresh. Returns -1,
 * or the exit status. */
static int count_regions(diff_t *d, int k, rs_run_t *fresh) {
  const int W = d->s[k].config.workers;
  const size_t n = (size_t)(W > RS_MAX_CHANNELS ? W : RS_MAX_CHANNELS);
  size_t *off = malloc((n + 1) * sizeof *off);
  d->region_counts[k] = calloc(n, sizeof(uint64_t));
  if (!off || !d->region_counts[k]) {
    free(off);
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  const rs_bucket_t *bk;
  for (size_t bi = 0; (bk = rs_run_bucket(fresh, bi)) != NULL; bi++) {
    if (count_channels(d, k, fresh, bi, off))
      continue;
    const char *word;
    int count = rs_run_bucket_regions(fresh, bi, off, &word);
    if (!word)
      continue;
    add_regions(d, k, bk, off, count, word);
  }
  free(off);
  return -1;
}

/* Side k's regions and order, from a fresh run of it. */
static int explain_side(diff_t *d, int k) {
  side_t *s = &d->s[k];
  if (d->sizes && d->big <= MAX_CONTRIBS_WRITTEN) {
    s->at = d->worst;
    s->at_contribs = calloc((size_t)d->big, sizeof(double));
    if (!s->at_contribs) {
      fprintf(stderr, "ringsim: out of memory\n");
      return EXIT_RUN;
    }
    d->lv[k].local = s->local;
    d->lv[k].contribs = s->at_contribs;
  }
  rs_run_t *fresh = NULL;
  int rc = diff_run_side(s, &fresh);
  if (rc >= 0)
    return rc;
  rc = count_regions(d, k, fresh);
  if (rc < 0 && s->config.workers > 8) /* --explain's replay: 1..8 */
    snprintf(d->order_err[k], sizeof d->order_err[k],
             "the orders are written out for 1 to 8 workers, not %d",
             s->config.workers);
  else if (rc < 0 && d->sizes && d->big > MAX_CONTRIBS_WRITTEN)
    snprintf(d->order_err[k], sizeof d->order_err[k],
             "the orders are written out for up to %d contributions, not %d",
             MAX_CONTRIBS_WRITTEN, d->big);
  else if (rc < 0)
    rs_run_element_order(fresh, d->worst, &d->order[k], d->order_err[k]);
  rs_run_free(fresh);
  return rc;
}

int diff_explain(diff_t *d) {
  for (int k = 0; k < 2 && d->differing && !cli_signal(); k++) {
    int rc = explain_side(d, k);
    if (rc >= 0)
      return rc;
  }
  return -1;
}
