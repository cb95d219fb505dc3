/* powersgd.c - the report of `ringsim --hook powersgd:rank=R,...` (its
 * PowerSGD steps, ringsim/powersgd.h; docs/hooks.md), in text or JSON:
 * a line a step when there are several, and the last step in full. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ringsim/powersgd.h"

static const char *const REDUCE_NAMES[RS_PSGD_REDUCES] = {"uncompressed", "P",
                                                          "Q"};

/* The text lists this many compressed params, --json all. */
#define COMPRESSED_SHOWN 8

/* A step's line: what it did, its bytes and errors. */
static void print_step(const rs_powersgd_report_t *r) {
  char label[32];
  snprintf(label, sizeof label, "step %d", r->step);
  if (r->vanilla) {
    printf("  %-10s vanilla all-reduce (allreduce_hook's, before start): "
           "sent %" PRIu64 " bytes; error max %.6g, relative %.6g\n",
           label, r->bytes, r->max_abs_err, r->rel_err);
    return;
  }
  printf("  %-10s PowerSGD, Q %s, %s: sent %" PRIu64 " bytes (%.4f of "
         "plain); error max %.6g, relative %.6g; residual up to %.6g\n",
         label, r->q_warm ? "warm (the step before's)" : "drawn",
         r->error_added ? "error fed back" : "no error carried in", r->bytes,
         r->plain_bytes ? (double)r->bytes / r->plain_bytes : 0.0,
         r->max_abs_err, r->rel_err, r->residual_rel);
}

static void print_text(const cli_powersgd_t *p) {
  const options_t *o = p->opt;
  const rs_config_t *cfg = &o->config;
  const rs_powersgd_report_t *r = rs_powersgd_report(p->ps);
  const int W = cfg->workers;
  const int K = o->step.iterations > 1 ? o->step.iterations : 1;
  char name[CLI_SAFE_MAX], size[32], steps[32] = "step";
  if (K > 1)
    snprintf(steps, sizeof steps, "%d steps", K);
  printf("ringsim %s: PowerSGD %s (rank %d) of model \"%s\" on %d "
         "worker%s, each all-reduce %s\n",
         RS_VERSION, steps, cfg->powersgd_rank,
         cli_safe(rs_model_name(p->model), name, sizeof name), W,
         W == 1 ? "" : "s", rs_algorithm_name(cfg->algo));
  if (!cfg->powersgd_start && !cfg->powersgd_feedback && !cfg->powersgd_warm)
    printf("  hook       powersgd:rank=%d (PyTorch's powerSGD_hook from fresh "
           "state, start_powerSGD_iter 0, no error carried in)\n",
           cfg->powersgd_rank);
  else
    printf("  hook       powersgd:rank=%d,start=%d,feedback=%s,warm=%s "
           "(PyTorch's powerSGD_hook: steps 1-%d its vanilla all-reduce, then "
           "PowerSGD%s%s)\n",
           cfg->powersgd_rank, cfg->powersgd_start,
           cfg->powersgd_feedback ? "on" : "off",
           cfg->powersgd_warm ? "on" : "off", cfg->powersgd_start,
           cfg->powersgd_feedback ? ", its residuals fed back" : "",
           cfg->powersgd_warm ? ", Q warm-started" : "");
  printf("  initial Q  %s%s\n", p->q_source,
         rs_powersgd_q_model(p->ps) && strcmp(p->q_source, "none drawn")
             ? ", orthogonalised"
             : "");
  cli_human_bytes((double)rs_model_elems(p->model) * 4, size, sizeof size);
  printf("  model      %zu param%s, %zu element%s, %s of f32 per worker, %zu "
         "bucket%s\n",
         rs_model_param_count(p->model),
         rs_model_param_count(p->model) == 1 ? "" : "s",
         rs_model_elems(p->model), rs_model_elems(p->model) == 1 ? "" : "s",
         size, r->buckets, r->buckets == 1 ? "" : "s");
  printf("  grads      %s\n", p->source);
  for (size_t b = 0; b < r->buckets; b++) {
    const rs_powersgd_bucket_t *pb = &r->bucket[b];
    printf("  bucket %-3zu %zu of %zu params compressed; all-reduced "
           "elements: %zu uncompressed, %zu P, %zu Q (of %zu)\n",
           b, pb->compressed, pb->compressed + pb->uncompressed,
           pb->reduce_elems[0], pb->reduce_elems[1], pb->reduce_elems[2],
           pb->elems);
  }
  size_t shown = 0;
  for (size_t t = 0; t < r->tensors; t++) {
    const rs_powersgd_tensor_t *x = &r->tensor[t];
    if (x->rank && shown++ < COMPRESSED_SHOWN)
      printf(
          "  compressed %s (bucket %zu): %" PRId64 " x %" PRId64
          " as P %" PRId64 " x %d and Q %" PRId64 " x %d\n",
          cli_safe(rs_model_param(p->model, x->param)->name, name, sizeof name),
          x->bucket, x->n, x->m, x->n, x->rank, x->m, x->rank);
  }
  if (shown > COMPRESSED_SHOWN)
    printf("             and %zu more compressed (--json lists every param)\n",
           shown - COMPRESSED_SHOWN);
  for (int s = 0; K > 1 && s < p->step_count; s++)
    print_step(&p->steps[s]);
  if (K > 1 && p->step_count)
    printf("  step %-5d in full:\n", r->step);
  printf("  sent       %" PRIu64 " bytes by all workers, %.4f of the plain "
         "all-reduce's %" PRIu64 "\n",
         r->bytes, r->plain_bytes ? (double)r->bytes / r->plain_bytes : 0.0,
         r->plain_bytes);
  if (cfg->net.enabled && !r->vanilla)
    printf("  simulated  %.3f us for the %zu all-reduces one after another, "
           "against %.3f us plain\n",
           r->sim_ns / 1e3, 3 * r->buckets, r->plain_sim_ns / 1e3);
  else if (cfg->net.enabled)
    printf("  simulated  %.3f us: the vanilla all-reduce\n", r->sim_ns / 1e3);
  if (p->status != RS_OK && p->status != RS_ECHECK)
    return;
  printf("  error      against the exact mean: max %.6g, relative "
         "(Frobenius) %.6g\n",
         r->max_abs_err, r->rel_err);
  if (r->vanilla) {
    printf("             (step %d is before start=%d: the hook's vanilla "
           "all-reduce, no residual kept)\n",
           r->step, cfg->powersgd_start);
  } else {
    printf("             against PowerSGD in float64 from the same Q: max "
           "%.3g\n",
           r->f64_max_abs);
    printf("  residual   error feedback keeps e_w = g_w - result: "
           "|e_w|/|g_w| up to %.6g (worker %d)\n",
           r->residual_rel, r->residual_worker);
  }
  int checked = p->step_count > 0;
  for (int s = 0; s < p->step_count; s++)
    checked &= p->steps[s].checked;
  printf("  check      %s: each all-reduce against its exact sum%s\n",
         checked ? "PASS" : "FAIL", K > 1 ? ", every step" : "");
  if (o->out && p->status == RS_OK)
    printf("  out        %s (the result, every worker's%s)\n", o->out,
           K == 1                  ? ""
           : strstr(o->out, "{s}") ? "; {s} each step"
                                   : "; the last step's");
  if (p->trace && p->status == RS_OK && !r->vanilla)
    printf("  trace      %s: %zu runs%s, an all-reduce each (run ids %" PRId64
           " to %" PRId64 ")\n",
           p->trace, 3 * r->buckets, K > 1 ? " a compressed step" : "",
           r->bucket[0].trace_id[0],
           r->bucket[r->buckets - 1].trace_id[RS_PSGD_REDUCES - 1]);
}

static void print_json(const cli_powersgd_t *p) {
  const rs_config_t *cfg = &p->opt->config;
  const rs_powersgd_report_t *r = rs_powersgd_report(p->ps);
  const int ok = p->status == RS_OK || p->status == RS_ECHECK;
  json_t *buckets = json_array(), *tensors = json_array();
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
  for (size_t t = 0; t < r->tensors; t++) {
    const rs_powersgd_tensor_t *x = &r->tensor[t];
    json_array_append_new(
        tensors, json_pack("{s:s, s:I, s:I, s:I, s:i}", "name",
                           rs_model_param(p->model, x->param)->name, "bucket",
                           (json_int_t)x->bucket, "n", (json_int_t)x->n, "m",
                           (json_int_t)x->m, "rank", x->rank));
  }
  json_t *steps = json_array();
  int checked = p->step_count > 0;
  for (int s = 0; s < p->step_count; s++) {
    const rs_powersgd_report_t *x = &p->steps[s];
    checked &= x->checked;
    json_array_append_new(
        steps,
        json_pack("{s:i, s:b, s:s?, s:b, s:I, s:I, s:f, s:f, s:f, s:f, s:i, "
                  "s:b}",
                  "step", x->step, "vanilla", x->vanilla, "q",
                  x->vanilla || !rs_powersgd_q_model(p->ps) ? NULL
                  : x->q_warm                               ? "warm"
                                                            : "drawn",
                  "error_added", x->error_added, "bytes", (json_int_t)x->bytes,
                  "plain_bytes", (json_int_t)x->plain_bytes, "max_abs_err",
                  x->max_abs_err, "rel_err", x->rel_err, "f64_max_abs",
                  x->f64_max_abs, "residual_rel", x->residual_rel,
                  "residual_worker", x->residual_worker, "checked",
                  x->checked));
  }
  json_t *o = json_pack(
      "{s:s, s:s, s:i, s:i, s:i, s:b, s:b, s:i, s:s, s:s, s:o, s:o, s:o, s:I, "
      "s:I, s:b, s:s?}",
      "mode", "powersgd", "model", rs_model_name(p->model), "workers",
      cfg->workers, "rank", cfg->powersgd_rank, "start", cfg->powersgd_start,
      "feedback", cfg->powersgd_feedback, "warm", cfg->powersgd_warm,
      "iterations", p->opt->step.iterations > 1 ? p->opt->step.iterations : 1,
      "algo", rs_algorithm_name(cfg->algo), "initial_q", p->q_source, "buckets",
      buckets, "tensors", tensors, "steps", steps, "bytes",
      (json_int_t)r->bytes, "plain_bytes", (json_int_t)r->plain_bytes, "passed",
      ok && checked && p->status == RS_OK, "error",
      p->status == RS_OK ? NULL : p->errmsg);
  if (ok) {
    json_object_set_new(o, "max_abs_err", json_real(r->max_abs_err));
    json_object_set_new(o, "rel_err", json_real(r->rel_err));
    json_object_set_new(o, "f64_max_abs", json_real(r->f64_max_abs));
    json_object_set_new(o, "residual_rel", json_real(r->residual_rel));
    json_object_set_new(o, "residual_worker", json_integer(r->residual_worker));
  }
  if (cfg->net.enabled) {
    json_object_set_new(o, "sim_ns", json_integer((json_int_t)r->sim_ns));
    json_object_set_new(o, "plain_sim_ns",
                        json_integer((json_int_t)r->plain_sim_ns));
  }
  char *text = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(17));
  if (text)
    printf("%s\n", text);
  free(text);
  json_decref(o);
}

void cli_print_powersgd(const cli_powersgd_t *p) {
  if (p->opt->json)
    print_json(p);
  else
    print_text(p);
}
