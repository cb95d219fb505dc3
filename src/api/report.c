/* report.c - a run's report, built once for every reader: its figures
 * (rs_run_figures: the bytes S per worker, algbw and busbw, the
 * 2(W-1)/W x S theory, the ring's planned transfers, a hook's overflow
 * figures) and the whole report as JSON (rs_run_report_json: the
 * command's --json, docs/cli.md lists its fields; the Python package's
 * report). The command's text report formats the same figures.
 */
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "ringsim/internal/config.h" /* rs_run_config's fields */
#include "ringsim/ringsim.h"

/* What the report is built from. */
typedef struct report_ctx {
  rs_run_t *run;
  const rs_model_t *model;
  const rs_report_opts_t *opts;
  rs_run_figures_t f;
} report_ctx_t;

/* Element i of the values, whatever the model's buffer type. */
static double value_at(const rs_model_t *model, const void *values, size_t i) {
  if (rs_model_dtype(model) == RS_DTYPE_F64)
    return ((const double *)values)[i];
  return ((const float *)values)[i];
}

/* Did the run fail once it had started (the command's exit 3), its ring
 * not completed (a trace that could not be written came after it)? Then
 * the report says where each worker stopped. */
static int failed_running(int status) {
  return status != RS_OK && status != RS_ECHECK && status != RS_EINVAL &&
         status != RS_EPARSE && status != RS_EIO && status != RS_ETRACE;
}

void rs_run_figures(const rs_run_t *run, const rs_model_t *model,
                    rs_run_figures_t *f) {
  const rs_result_t *res = rs_run_result(run);
  const rs_config_t *cfg = rs_run_config(run);
  rs_algo_info_t algo;
  *f = (rs_run_figures_t){0};
  f->workers = cfg->workers;
  f->elems = rs_model_elems(model);
  const rs_dtype_t dtype = rs_model_dtype(model);
  f->hook_dtype = rs_hook_dtype(cfg->hook, dtype);
  f->model_bytes = (double)f->elems * (double)rs_dtype_size(dtype);
  f->bytes = (double)f->elems * (double)rs_dtype_size(f->hook_dtype);
  f->sent_theory = rs_busbw_factor(f->workers) * f->bytes;
  f->sent_min = f->transfers_min = UINT64_MAX;
  for (int w = 0; w < f->workers; w++) {
    const rs_worker_stats_t *s = rs_run_worker_stats(run, w);
    f->sent_min = s->bytes_sent < f->sent_min ? s->bytes_sent : f->sent_min;
    f->sent_max = s->bytes_sent > f->sent_max ? s->bytes_sent : f->sent_max;
    const uint64_t t = s->transfers_sent;
    f->transfers_min = t < f->transfers_min ? t : f->transfers_min;
    f->transfers_max = t > f->transfers_max ? t : f->transfers_max;
  }
  /* the ring's plan; other algorithms' counts vary by worker and step */
  f->planned = rs_algo_info(cfg->algo, &algo) == RS_OK && algo.textbook_ring
                   ? 2 * (uint64_t)(f->workers - 1) * (uint64_t)f->workers *
                         res->segs_per_chunk /* summed over the buckets */
                   : 0;
  f->seconds = (double)res->wall_ns / 1e9;
  f->algbw = f->seconds > 0 ? f->bytes / f->seconds / 1e9 : 0;
  f->busbw = rs_busbw(f->algbw, f->workers);
  /* a hook's: float16's largest is 65504 and 65520 rounds to inf;
   * bfloat16's (2 - 2^-7) 2^127, and (2 - 2^-8) 2^127 rounds to inf */
  f->hook_overflow_at =
      f->hook_dtype == RS_DTYPE_F16 ? 65520.0 : ldexp(2 - 0x1p-8, 127);
  for (size_t p = 0; p < rs_model_param_count(model); p++) {
    const rs_param_check_t *c = rs_run_param_check(run, p);
    f->hook_sum_overflow += c->sum_overflow;
    f->hook_saved += c->sum_overflow_saved;
    f->hook_max_abs_mean = c->max_abs_ref > f->hook_max_abs_mean
                               ? c->max_abs_ref
                               : f->hook_max_abs_mean;
  }
  f->hook_overflow_workers =
      f->hook_max_abs_mean > 0 ? ceil(f->hook_overflow_at / f->hook_max_abs_mean)
                               : 0;
}

/* JSON has no inf or NaN: such a value (an overflowed f16 sum, say) is
 * null. */
static json_t *real_or_null(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

static json_t *values_json(const rs_model_t *model, const void *values) {
  json_t *obj = json_object();
  for (size_t p = 0; p < rs_model_param_count(model); p++) {
    const rs_param_t *param = rs_model_param(model, p);
    json_t *list = json_array();
    for (size_t i = 0; i < param->elems; i++)
      json_array_append_new(list, real_or_null(value_at(
                                      model, values, param->elem_offset + i)));
    json_object_set_new(obj, param->name, list);
  }
  return obj;
}

static json_t *watchdog_json(rs_run_t *run) {
  json_t *list = json_array();
  for (int w = 0; w < rs_run_config(run)->workers; w++) {
    rs_worker_state_t s;
    rs_run_worker_state(run, w, &s);
    json_array_append_new(
        list, json_pack("{s:i, s:s, s:s?, s:i, s:i, s:s?, s:o}", "worker", w,
                        "state", s.state, "phase", s.phase, "step", s.step,
                        "chunk", s.chunk, "waiting", s.waiting, "peer",
                        s.waiting ? json_integer(s.peer) : json_null()));
  }
  return list;
}

static json_t *buckets_json(const report_ctx_t *r) {
  json_t *list = json_array();
  const rs_result_t *res = rs_run_result(r->run);
  for (size_t b = 0; b < res->buckets; b++) {
    const rs_bucket_t *k = rs_run_bucket(r->run, b);
    json_t *names = json_array();
    for (size_t j = 0; j < k->params; j++) /* its layout's order */
      json_array_append_new(
          names, json_string(rs_model_param(r->model, rs_model_bucket_param(
                                                          r->model, k, b, j))
                                 ->name));
    json_array_append_new(
        list,
        json_pack(
            "{s:I, s:I, s:I, s:s, s:o}", "elem_offset",
            (json_int_t)k->elem_offset, "elems", (json_int_t)k->elems, "bytes",
            (json_int_t)(k->elems * rs_dtype_size(rs_model_dtype(r->model))),
            "algo", rs_algorithm_name(rs_run_bucket_algo(r->run, b)), "params",
            names));
  }
  return list;
}

/* --algo auto's choices (the library's rs_run_auto_json), or null. */
static json_t *auto_json(const report_ctx_t *r) {
  char *text = rs_run_auto_json(r->run);
  json_t *o = text ? json_loads(text, 0, NULL) : NULL;
  rs_free(text);
  return o ? o : json_null();
}

/* The same, for --json: null when every worker is identical. */
static json_t *mismatches_json(const report_ctx_t *r, int W) {
  const rs_mismatch_t *first;
  size_t listed = rs_run_mismatches(r->run, &first);
  json_t *workers = json_array(), *list = json_array();
  for (int w = 1; w < W; w++) {
    uint64_t n = rs_run_worker_mismatches(r->run, w);
    if (n)
      json_array_append_new(workers, json_pack("{s:i, s:I}", "worker", w,
                                               "elements", (json_int_t)n));
  }
  for (size_t k = 0; k < listed; k++) {
    const rs_mismatch_t *m = &first[k];
    const rs_param_t *p = rs_model_param(r->model, m->param);
    json_array_append_new(
        list, json_pack("{s:i, s:s, s:I, s:I, s:o, s:o}", "worker", m->worker,
                        "param", p->name, "index",
                        (json_int_t)(m->elem - p->elem_offset), "elem",
                        (json_int_t)m->elem, "value", real_or_null(m->value),
                        "worker0_value", real_or_null(m->worker0_value)));
  }
  return json_pack("{s:o, s:o}", "workers", workers, "first", list);
}

/* Each worker's transfers sent (bytes 0) or bytes sent (bytes 1). */
static json_t *per_worker_json(const report_ctx_t *r, int workers, int bytes) {
  json_t *list = json_array();
  for (int w = 0; w < workers; w++) {
    const rs_worker_stats_t *st = rs_run_worker_stats(r->run, w);
    json_array_append_new(
        list, json_integer(
                  (json_int_t)(bytes ? st->bytes_sent : st->transfers_sent)));
  }
  return list;
}

/* Per param, its check; a run that did not complete was not checked: its
 * check fields are null (as the trace stores NULL), not zeros that read as
 * a pass. */
static json_t *param_checks_json(const report_ctx_t *r, const rs_config_t *cfg,
                                 int checked) {
  json_t *params = json_array();
  for (size_t p = 0; p < rs_model_param_count(r->model); p++) {
    const rs_param_t *param = rs_model_param(r->model, p);
    const rs_param_check_t *c = rs_run_param_check(r->run, p);
    json_array_append_new(
        params,
        json_pack(
            "{s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "name", param->name,
            "elem_offset", (json_int_t)param->elem_offset, "elems",
            (json_int_t)param->elems, "max_abs_err",
            checked ? real_or_null(c->max_abs_err) : json_null(), "max_rel_err",
            checked ? real_or_null(c->max_rel_err) : json_null(), "bound",
            checked ? real_or_null(c->bound) : json_null(), "differing",
            checked ? json_integer((json_int_t)c->differing) : json_null(),
            "wrong",
            checked ? json_integer((json_int_t)c->wrong) : json_null()));
    if (cfg->order_report) {
      json_t *last = json_array_get(params, json_array_size(params) - 1);
      json_object_set_new(last, "order_differing",
                          checked ? json_integer((json_int_t)c->order_differing)
                                  : json_null());
      json_object_set_new(last, "order_max_ulps",
                          checked ? json_integer((json_int_t)c->order_max_ulps)
                                  : json_null());
    }
  }
  return params;
}

/* --hook (docs/hooks.md): its name, the dtype it sums in, its bytes against
 * the model dtype's; a compressing hook's losses once checked. */
static json_t *hook_json(const report_ctx_t *r, const rs_config_t *cfg,
                         const rs_result_t *res, int checked) {
  if (cfg->hook == RS_HOOK_NONE)
    return json_null();
  const rs_run_figures_t *h = &r->f;
  /* (the bytes' ratio is the dtypes': also for a model of no elements) */
  json_t *o = json_pack("{s:s, s:s, s:f}", "name", rs_hook_name(cfg->hook),
                        "dtype", rs_dtype_name(h->hook_dtype), "bytes_ratio",
                        (double)rs_dtype_size(h->hook_dtype) /
                            (double)rs_dtype_size(rs_model_dtype(r->model)));
  if (cfg->hook == RS_HOOK_ALLREDUCE || !checked)
    return o;
  json_object_update_new(
      o, json_pack("{s:I, s:I, s:I, s:o, s:I, s:I, s:o, s:o}",
                   "cast_overflowed", (json_int_t)res->hook_cast_overflow,
                   "cast_flushed", (json_int_t)res->hook_cast_flushed,
                   "div_flushed", (json_int_t)res->hook_div_flushed,
                   "max_abs_input", real_or_null(res->hook_max_abs),
                   "sum_first_overflows", (json_int_t)h->hook_sum_overflow,
                   "saved_by_dividing_first", (json_int_t)h->hook_saved,
                   "max_abs_mean", real_or_null(h->hook_max_abs_mean),
                   "sum_first_overflows_from_workers",
                   h->hook_overflow_workers > 0 ? json_real(h->hook_overflow_workers)
                                          : json_null()));
  return o;
}

/* What ran: the model, the run's shape and its algorithm. */
static void shape_json(json_t *o, const report_ctx_t *r, const rs_config_t *cfg,
                       const rs_result_t *res, const rs_run_figures_t *f) {
  json_object_set_new(o, "schema", json_string("ringsim.run/1"));
  json_object_set_new(o, "version", json_string(RS_VERSION));
  json_object_set_new(o, "model", json_string(rs_model_name(r->model)));
  json_object_set_new(o, "workers", json_integer(f->workers));
  json_object_set_new(o, "transport", json_string(cfg->mpi ? "mpi" : "shm"));
  json_object_set_new(o, "processes", json_integer(rs_run_procs(r->run)));
  json_object_set_new(o, "op", json_string(rs_op_name(cfg->op)));
  json_object_set_new(o, "grads", json_string(r->opts->grads_source ? r->opts->grads_source : ""));
  json_object_set_new(o, "params",
                      json_integer((json_int_t)rs_model_param_count(r->model)));
  json_object_set_new(o, "dtype",
                      json_string(rs_dtype_name(rs_model_dtype(r->model))));
  json_object_set_new(o, "elems", json_integer((json_int_t)f->elems));
  json_object_set_new(o, "bytes", json_integer((json_int_t)f->bytes));
  json_object_set_new(o, "buckets", buckets_json(r));
  json_object_set_new(o, "segs_per_chunk",
                      json_integer((json_int_t)res->segs_per_chunk));
  json_object_set_new(o, "segment_elems",
                      json_integer((json_int_t)res->seg_elems));
  json_object_set_new(o, "slots", json_integer(res->slots));
  json_object_set_new(o, "loop", json_string(cfg->slices ? "slices" : "steps"));
  json_object_set_new(o, "direct", json_boolean(cfg->direct));
  json_object_set_new(o, "algo", json_string(rs_algorithm_name(cfg->algo)));
  json_object_set_new(o, "channels", /* (NCCL's, the ring's: --channels) */
                      json_integer(cfg->net.channels > 1 ? cfg->net.channels
                                                         : 1));
  json_object_set_new(o, "steps", json_integer(res->steps));
  json_object_set_new(o, "auto", auto_json(r));
}

/* Where the run is recorded, how it ended, and its result. */
static void outcome_json(json_t *o, const report_ctx_t *r, const rs_run_figures_t *f) {
  /* run_id: the run's row, if one was written; trace_error: why the
   * run's rows are not in the trace (the row says "failed", or, if even
   * that could not be written, "running"). */
  const char *trace_error = rs_run_trace_error(r->run);
  json_object_set_new(o, "trace", r->opts->trace
                                      ? json_string(r->opts->trace)
                                      : json_null());
  json_object_set_new(o, "run_id",
                      r->opts->trace && rs_run_trace_id(r->run)
                          ? json_integer(rs_run_trace_id(r->run))
                          : json_null());
  json_object_set_new(o, "trace_error",
                      trace_error ? json_string(trace_error) : json_null());
  json_object_set_new(o, "status", json_string(rs_status_name(r->opts->status)));
  if (failed_running(r->opts->status))
    json_object_set_new(o, "watchdog", watchdog_json(r->run));
  json_object_set_new(
      o, "error",
      r->opts->status ? json_string(rs_run_errmsg(r->run)) : json_null());
  if (r->opts->print_values || f->elems <= RS_REPORT_VALUES_UP_TO)
    json_object_set_new(o, "result",
                        values_json(r->model, rs_run_buffer(r->run, 0)));
}

char *rs_run_report_json(rs_run_t *run, const rs_model_t *model,
                         const rs_report_opts_t *opts) {
  report_ctx_t ctx = {run, model, opts, {0}};
  const report_ctx_t *r = &ctx;
  rs_run_figures(run, model, &ctx.f);
  const rs_result_t *res = rs_run_result(r->run);
  const rs_config_t *cfg = rs_run_config(r->run);
  const int checked = res->checked;
  json_t *o = json_object();
  shape_json(o, r, cfg, res, &r->f);
  json_object_set_new(o, "transfers", json_integer((json_int_t)res->transfers));
  json_object_set_new(o, "transfers_planned",
                      r->f.planned ? json_integer((json_int_t)r->f.planned)
                                : json_null());
  json_object_set_new(o, "transfers_sent", per_worker_json(r, r->f.workers, 0));
  json_object_set_new(o, "bytes_sent", per_worker_json(r, r->f.workers, 1));
  json_object_set_new(o, "bytes_sent_theory", json_real(r->f.sent_theory));
  if (cfg->net.topo.enabled) { /* through the NICs, each worker's */
    json_t *out = json_array(), *in = json_array();
    for (int w = 0; w < r->f.workers; w++) {
      const rs_worker_stats_t *st = rs_run_worker_stats(r->run, w);
      json_array_append_new(out,
                            json_integer((json_int_t)st->bytes_sent_off_node));
      json_array_append_new(
          in, json_integer((json_int_t)st->bytes_received_off_node));
    }
    json_object_set_new(o, "bytes_sent_off_node", out);
    json_object_set_new(o, "bytes_received_off_node", in);
  }
  json_object_set_new(o, "checked", json_boolean(checked));
  json_object_set_new(o, "identical",
                      checked ? json_boolean(res->identical) : json_null());
  json_object_set_new(o, "mismatches",
                      checked && !res->identical ? mismatches_json(r, r->f.workers)
                                                 : json_null());
  json_object_set_new(o, "exact", json_boolean(res->exact));
  json_object_set_new(o, "max_abs_err",
                      checked ? real_or_null(res->max_abs_err) : json_null());
  json_object_set_new(o, "bound",
                      checked ? real_or_null(res->bound) : json_null());
  json_object_set_new(o, "worst_ratio",
                      checked ? real_or_null(res->worst_ratio) : json_null());
  json_object_set_new(o, "param_checks", param_checks_json(r, cfg, checked));
  json_object_set_new(o, "hook", hook_json(r, cfg, res, checked));
  json_object_set_new(o, "wall_ns", json_integer((json_int_t)res->wall_ns));
  if (cfg->net.enabled) { /* null for a run that did not complete */
    json_object_set_new(o, "sim_ns",
                        checked ? json_integer((json_int_t)res->sim_ns)
                                : json_null());
    json_object_set_new(o, "predicted_ns",
                        checked ? json_integer((json_int_t)res->predicted_ns)
                                : json_null());
  }
  json_object_set_new(o, "fill_ns", json_integer((json_int_t)res->fill_ns));
  json_object_set_new(o, "ref_ns", json_integer((json_int_t)res->ref_ns));
  json_object_set_new(o, "check_ns", json_integer((json_int_t)res->check_ns));
  json_object_set_new(o, "check_threads", json_integer(res->check_threads));
  json_object_set_new(o, "algbw_gbs",
                      checked ? json_real(r->f.algbw) : json_null());
  json_object_set_new(o, "busbw_gbs",
                      checked ? json_real(r->f.busbw) : json_null());
  outcome_json(o, r, &r->f);
  /* 9 significant digits read back as the same float; a double needs 17 */
  char *text = json_dumps(
      o, JSON_INDENT(2) | JSON_REAL_PRECISION(
                              rs_model_dtype(r->model) == RS_DTYPE_F64 ? 17 : 9));
  json_decref(o);
  return text;
}
