/* powersgd_run.c - `ringsim --hook powersgd:...[,q=FILE] [--iterations K]`:
 * K PowerSGD steps (ringsim/powersgd.h), the hook's state carried from
 * one to the next, each step's grads its own: --grads with {s} replaced
 * by the step (1, 2, ...: record_hook's DIR/step{s}), or generated from
 * --seed + s - 1, or the model's inline ones. Every input file is looked
 * for before the first step runs, so that a missing one is a usage error
 * (exit 2) and not a failure after minutes of steps.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ringsim/powersgd.h"

/* The trace's config for step s's runs: the command's, with
 * "powersgd_step": s, so that a trace of several steps tells their runs
 * apart. NULL when out of memory. */
static char *config_of_step(const char *config, int s) {
  json_t *c = config ? json_loads(config, 0, NULL) : json_object();
  char *text = NULL;
  if (json_is_object(c) &&
      json_object_set_new(c, "powersgd_step", json_integer(s)) == 0)
    text = json_dumps(c, JSON_COMPACT);
  json_decref(c);
  return text;
}

/* Does step s (1, 2, ...) of K draw its Qs? As rs_powersgd_draws_q will
 * say when it comes: compressed from step start + 1; drawn each time, or
 * only the first time with warm start. */
static int step_draws(const rs_config_t *c, int s) {
  if (s <= c->powersgd_start)
    return 0;
  return !c->powersgd_warm || s == c->powersgd_start + 1;
}

/* Every step's grads files and Q files there to read, before anything
 * runs. Returns -1 to go on, or EXIT_USAGE having said which is not. */
static int check_files(const options_t *o, int K, int compresses) {
  char path[4096], rank_path[4096];
  for (int s = 1; s <= K; s++) {
    if (o->grads && strstr(o->grads, "{s}"))
      for (int w = 0; w < o->config.workers; w++) {
        if (cli_step_path(o->grads, s, path, sizeof path) ||
            rs_grads_path(path, w, rank_path, sizeof rank_path))
          return cli_usage_error("--grads %.200s: path too long", o->grads);
        if (access(rank_path, R_OK))
          return cli_usage_error("--grads %.200s: step %d's %.300s: no such "
                                 "readable file",
                                 o->grads, s, rank_path);
      }
    if (o->powersgd_q && compresses && step_draws(&o->config, s)) {
      if (cli_step_path(o->powersgd_q, s, path, sizeof path))
        return cli_usage_error("--hook ...,q=%.200s: path too long",
                               o->powersgd_q);
      if (access(path, R_OK))
        return cli_usage_error("--hook powersgd:rank=%d,q=%.200s: %.300s: "
                               "cannot open it (step %d draws its Qs)",
                               o->config.powersgd_rank, o->powersgd_q, path, s);
    }
  }
  return -1;
}

/* Step s's grads into plain (a fresh run); source says where from. */
static int fill_step(const options_t *o, rs_run_t *plain, int use_inline, int s,
                     char *source, size_t size) {
  char pattern[4096];
  if (o->grads) {
    if (cli_step_path(o->grads, s, pattern, sizeof pattern))
      return RS_EINVAL;
    if (strstr(o->grads, "{s}"))
      snprintf(source, size, "read from %s, {s} the step", o->grads);
    else if (o->step.iterations > 1)
      snprintf(source, size, "read from %s, the same every step", o->grads);
    else
      snprintf(source, size, "read from %s", o->grads);
    return rs_run_load_grads(plain, pattern);
  }
  if (use_inline) {
    snprintf(source, size, "inline in %s%s", o->params,
             o->step.iterations > 1 ? ", the same every step" : "");
    return rs_run_fill_inline(plain);
  }
  snprintf(source, size, "generated: %s, seed %llu%s", cli_init_name(o->init),
           (unsigned long long)o->seed,
           o->step.iterations > 1 ? " + the step - 1" : "");
  return rs_run_fill(plain, o->init, o->seed + (uint64_t)(s - 1));
}

/* Step s's Qs, if it draws them; q_source says where from. Returns RS_OK
 * or the read's error (said in err). */
static int fill_q(const options_t *o, rs_powersgd_t *ps, int s, char *q_source,
                  size_t size, char *err) {
  if (!rs_powersgd_draws_q(ps))
    return RS_OK;
  if (!o->powersgd_q) {
    rs_powersgd_random_q(ps, o->seed + (uint64_t)(s - 1));
    snprintf(q_source, size,
             "ringsim's normal stream, seed %llu%s (not torch's; q=FILE "
             "gives torch's)",
             (unsigned long long)o->seed,
             o->step.iterations > 1 ? " + the step - 1" : "");
    return RS_OK;
  }
  char path[4096];
  if (cli_step_path(o->powersgd_q, s, path, sizeof path)) {
    snprintf(err, RS_ERRMSG_MAX, "q=%.200s: path too long", o->powersgd_q);
    return RS_EINVAL;
  }
  snprintf(q_source, size, "read from %s%s", o->powersgd_q,
           strstr(o->powersgd_q, "{s}") ? ", {s} the step that draws" : "");
  int rc = rs_safetensors_read(path, rs_powersgd_q_model(ps), rs_powersgd_q(ps),
                               err);
  return rc;
}

/* The status after a step's output: the result written to --out (each
 * step's where {s} names it, else the last step's). */
static int write_out(const options_t *o, const rs_model_t *model,
                     const rs_powersgd_t *ps, int s, int K, char *err) {
  char path[4096];
  if (!o->out || (!strstr(o->out, "{s}") && s < K))
    return RS_OK;
  if (cli_step_path(o->out, s, path, sizeof path)) {
    snprintf(err, RS_ERRMSG_MAX, "--out %.200s: path too long", o->out);
    return RS_EINVAL;
  }
  int wrc = rs_safetensors_write_cancellable(
      path, model, rs_powersgd_result(ps), cli_signal_flag(), err);
  return wrc == RS_OK             ? RS_OK
         : wrc == RS_EINTERRUPTED ? RS_EINTERRUPTED
                                  : RS_ESYS;
}

int cli_powersgd_main(options_t *opt, rs_model_t *model, int use_inline,
                      const char *config) {
  char err[RS_ERRMSG_MAX] = "", q_source[RS_ERRMSG_MAX + 128] = "";
  char source[RS_ERRMSG_MAX + 64] = "";
  const int K = opt->step.iterations > 0 ? opt->step.iterations : 1;
  rs_powersgd_t *ps = NULL;
  rs_trace_t *trace = NULL;
  int rc = -1, status = RS_OK;
  if (rs_powersgd_create(&opt->config, model, &ps, err)) {
    fprintf(stderr, "ringsim: --%s\n", err);
    return EXIT_USAGE;
  }
  const rs_model_t *qm = rs_powersgd_q_model(ps);
  if (opt->powersgd_q && !qm) {
    fprintf(stderr,
            "ringsim: --hook powersgd:rank=%d,q=%s: no param of %s is "
            "compressed at rank %d, so there is no Q to read\n",
            opt->config.powersgd_rank, opt->powersgd_q, opt->params,
            opt->config.powersgd_rank);
    rc = EXIT_USAGE;
  } else {
    rc = check_files(opt, K, qm != NULL);
  }
  if (rc < 0 && opt->trace) {
    int opened = cli_trace_open(opt->trace, &trace, err);
    if (opened) {
      fprintf(stderr, "ringsim: %s\n", err);
      rc = cli_exit_code(opened);
    }
  }
  if (rc >= 0)
    goto out;
  /* the hook's vanilla all-reduce, allreduce_hook: also the plain bytes */
  rs_config_t plain_config = opt->config;
  plain_config.hook = RS_HOOK_ALLREDUCE;
  plain_config.powersgd_rank = plain_config.powersgd_start = 0;
  plain_config.powersgd_feedback = plain_config.powersgd_warm = 0;
  for (int s = 1; s <= K && status == RS_OK; s++) {
    rs_run_t *plain = NULL;
    /* A step before start is the hook's vanilla all-reduce: the plain run
     * itself, traced as the compressed steps' all-reduces are. */
    plain_config.traced = trace && !rs_powersgd_compresses(ps);
    char *step_config = trace ? config_of_step(config, s) : NULL;
    if (trace && !step_config) {
      fprintf(stderr, "ringsim: out of memory\n");
      rc = EXIT_RUN;
      goto out;
    }
    if (rs_run_create(&plain_config, model, &plain, err) ||
        (plain_config.traced &&
         rs_run_set_trace(plain, trace, step_config) != RS_OK)) {
      fprintf(stderr, "ringsim: %s\n", plain ? rs_run_errmsg(plain) : err);
      rs_run_free(plain);
      free(step_config);
      /* (bad input before the first step; after it, the job has run) */
      rc = s == 1 ? EXIT_USAGE : EXIT_RUN;
      goto out;
    }
    cli_signals_watch(plain);
    status = fill_step(opt, plain, use_inline, s, source, sizeof source);
    cli_signals_watch(NULL);
    if (status != RS_OK)
      snprintf(err, sizeof err, "%s", rs_run_errmsg(plain));
    else if ((status = fill_q(opt, ps, s, q_source, sizeof q_source, err))) {
      char what[RS_ERRMSG_MAX];
      snprintf(what, sizeof what, "--hook powersgd:rank=%d,q=%.200s: %.280s",
               opt->config.powersgd_rank, opt->powersgd_q, err);
      snprintf(err, sizeof err, "%s", what);
    } else {
      const rs_powersgd_io_t io = {trace, step_config, cli_signals_watch,
                                   cli_signal_flag()};
      status = rs_powersgd_execute(ps, plain, &io, err);
    }
    rs_run_free(plain);
    free(step_config);
    if (status == RS_OK || status == RS_ECHECK) {
      int signo = cli_signal();
      if (signo) {
        status = RS_EINTERRUPTED;
        snprintf(err, sizeof err, "interrupted by %s", cli_signal_name(signo));
      } else if (status == RS_OK) {
        status = write_out(opt, model, ps, s, K, err);
      } else {
        break; /* a step failed its check: the state is no one's */
      }
    }
  }
  if (cli_exit_code(status) == EXIT_USAGE) {
    fprintf(stderr, "ringsim: %s\n", err);
    rc = EXIT_USAGE;
    goto out;
  }
  if (!q_source[0]) /* no step drew its Qs */
    snprintf(q_source, sizeof q_source, "none drawn");
  cli_powersgd_t report = {opt,      model,      ps,  source,
                           q_source, opt->trace, err, status};
  cli_print_powersgd(&report);
  rc = cli_exit_code(status);
  char lost[RS_ERRMSG_MAX];
  const int report_lost = cli_stdout_lost("the report", lost, sizeof lost);
  if (report_lost) {
    fprintf(stderr, "ringsim: %s\n", lost);
    rc = EXIT_RUN;
  }
  if (status != RS_OK)
    fprintf(stderr, "ringsim: %s\n", err);
  /* The steps are one job: a failure after some of their all-reduces were
   * traced leaves none of those rows ok (a failed check marks its own). */
  if (status != RS_OK && status != RS_ECHECK)
    cli_trace_mark_job(trace, status == RS_EINTERRUPTED, err);
  else if (report_lost)
    cli_trace_mark_job(trace, 0, lost);
  if (status == RS_EINTERRUPTED)
    cli_signal_said();
out:
  rs_trace_close(trace);
  rs_powersgd_free(ps);
  return rc;
}
