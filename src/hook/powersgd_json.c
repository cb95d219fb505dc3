/* powersgd_json.c - the report of PowerSGD steps as JSON
 * (rs_powersgd_json): one text for the command's --json and the Python
 * API's report, so that the two cannot drift apart. */
#include <jansson.h>
#include <stdlib.h>

#include "hook/powersgd_int.h"
#include "ringsim/powersgd.h"

static const char *const REDUCE_NAMES[RS_PSGD_REDUCES] = {"uncompressed", "P",
                                                          "Q"};

static json_t *buckets_json(const rs_powersgd_report_t *r) {
  json_t *buckets = json_array();
  for (size_t b = 0; b < r->buckets; b++) {
    const rs_powersgd_bucket_t *pb = &r->bucket[b];
    json_t *reduces = json_array();
    for (int k = 0; k < RS_PSGD_REDUCES; k++)
      json_array_append_new(
          reduces, json_pack("{s:s, s:I, s:I, s:I}", "name", REDUCE_NAMES[k],
                             "elems", (json_int_t)pb->reduce_elems[k], "bytes",
                             (json_int_t)pb->bytes[k], "trace_run_id",
                             (json_int_t)pb->trace_id[k]));
    json_array_append_new(
        buckets,
        json_pack("{s:I, s:I, s:I, s:I, s:o}", "index", (json_int_t)b, "elems",
                  (json_int_t)pb->elems, "compressed",
                  (json_int_t)pb->compressed, "uncompressed",
                  (json_int_t)pb->uncompressed, "allreduces", reduces));
  }
  return buckets;
}

static json_t *tensors_json(const rs_powersgd_report_t *r,
                            const rs_model_t *model) {
  json_t *tensors = json_array();
  for (size_t t = 0; t < r->tensors; t++) {
    const rs_powersgd_tensor_t *x = &r->tensor[t];
    json_array_append_new(
        tensors, json_pack("{s:s, s:I, s:I, s:I, s:i}", "name",
                           rs_model_param(model, x->param)->name, "bucket",
                           (json_int_t)x->bucket, "n", (json_int_t)x->n, "m",
                           (json_int_t)x->m, "rank", x->rank));
  }
  return tensors;
}

/* Each step's figures; *checked: every step passed its checks. */
static json_t *steps_json(const rs_powersgd_t *ps, int *checked) {
  int count;
  const rs_powersgd_report_t *step = rs_powersgd_steps(ps, &count);
  json_t *steps = json_array();
  *checked = count > 0;
  for (int s = 0; s < count; s++) {
    const rs_powersgd_report_t *x = &step[s];
    *checked &= x->checked;
    json_array_append_new(
        steps,
        json_pack("{s:i, s:b, s:s?, s:b, s:I, s:I, s:f, s:f, s:f, s:f, s:i, "
                  "s:b}",
                  "step", x->step, "vanilla", x->vanilla, "q",
                  x->vanilla || !rs_powersgd_q_model(ps) ? NULL
                  : x->q_warm                            ? "warm"
                                                         : "drawn",
                  "error_added", x->error_added, "bytes", (json_int_t)x->bytes,
                  "plain_bytes", (json_int_t)x->plain_bytes, "max_abs_err",
                  x->max_abs_err, "rel_err", x->rel_err, "f64_max_abs",
                  x->f64_max_abs, "residual_rel", x->residual_rel,
                  "residual_worker", x->residual_worker, "checked",
                  x->checked));
  }
  return steps;
}

char *rs_powersgd_json(const rs_powersgd_t *ps, int iterations, int status,
                       const char *errmsg, const char *initial_q) {
  const rs_config_t *cfg = rs__powersgd_config(ps);
  const rs_model_t *model = rs__powersgd_model(ps);
  const rs_powersgd_report_t *r = rs_powersgd_report(ps);
  const int ok = status == RS_OK || status == RS_ECHECK;
  int checked;
  json_t *steps = steps_json(ps, &checked);
  json_t *o = json_pack(
      "{s:s, s:s, s:s, s:i, s:i, s:i, s:b, s:b, s:i, s:s, s:s, s:o, s:o, s:o, "
      "s:I, s:I, s:b, s:s?}",
      "schema", "ringsim.powersgd/1", "mode", "powersgd", "model",
      rs_model_name(model), "workers", cfg->workers, "rank", cfg->powersgd_rank,
      "start", cfg->powersgd_start, "feedback", cfg->powersgd_feedback, "warm",
      cfg->powersgd_warm, "iterations", iterations, "algo",
      rs_algorithm_name(cfg->algo), "initial_q", initial_q, "buckets",
      buckets_json(r), "tensors", tensors_json(r, model), "steps", steps,
      "bytes", (json_int_t)r->bytes, "plain_bytes", (json_int_t)r->plain_bytes,
      "passed", ok && checked && status == RS_OK, "error",
      status == RS_OK ? NULL : errmsg);
  if (o && ok) {
    json_object_set_new(o, "max_abs_err", json_real(r->max_abs_err));
    json_object_set_new(o, "rel_err", json_real(r->rel_err));
    json_object_set_new(o, "f64_max_abs", json_real(r->f64_max_abs));
    json_object_set_new(o, "residual_rel", json_real(r->residual_rel));
    json_object_set_new(o, "residual_worker", json_integer(r->residual_worker));
  }
  if (o && cfg->net.enabled) {
    json_object_set_new(o, "sim_ns", json_integer((json_int_t)r->sim_ns));
    json_object_set_new(o, "plain_sim_ns",
                        json_integer((json_int_t)r->plain_sim_ns));
  }
  char *text =
      o ? json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
  json_decref(o);
  return text;
}
