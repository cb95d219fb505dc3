/* powersgd.c - the report of `ringsim --hook powersgd:rank=R,...` (its
 * PowerSGD steps, ringsim/powersgd.h; docs/hooks.md), in text or JSON:
 * a line a step when there are several, and the last step in full. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ringsim/powersgd.h"

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
  int count;
  const rs_powersgd_report_t *history = rs_powersgd_steps(p->ps, &count);
  for (int s = 0; K > 1 && s < count; s++)
    print_step(&history[s]);
  if (K > 1 && count)
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
  int checked = count > 0;
  for (int s = 0; s < count; s++)
    checked &= history[s].checked;
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
  const int K = p->opt->step.iterations > 1 ? p->opt->step.iterations : 1;
  char *text = rs_powersgd_json(p->ps, K, p->status, p->errmsg, p->q_source);
  if (text)
    printf("%s\n", text);
  else
    fprintf(stderr, "ringsim: the report: out of memory\n");
  rs_free(text);
}

void cli_print_powersgd(const cli_powersgd_t *p) {
  if (p->opt->json)
    print_json(p);
  else
    print_text(p);
}
