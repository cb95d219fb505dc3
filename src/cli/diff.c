/* diff.c - `ringsim diff`: two configurations of one all-reduce on the same
 * gradients, compared element by element, and for the element that differs
 * most, each side's order of additions written out from its algorithm's
 * own schedule (rs_run_element_order): why NCCL, gloo and MPI disagree.
 *
 * The options that differ are given once with two comma-separated values
 * (--algo ring,rd); every other option applies to both sides. Two world
 * sizes (--workers 4,8) share one global batch: L contributions, each
 * worker of the smaller world folding its L/S of them locally first. Each
 * side is a real threaded run; worker 0's result of one is compared with
 * worker 0's result of the other (every worker holds the same bits).
 * More values (--workers 2,4,8,16; --algo ring,rd,rhd,tree) compare each
 * side after the first with the first, on the same L contributions, and
 * print one row per comparison (--json: each comparison's object).
 *
 * This file reads the command line (through the option table, which
 * splits the A,B values: parse.c) and readies the sides; the runs and
 * the comparison are diff_compare.c's, the report diff_report.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "diff_parts.h"
#include "option.h"

/* The command line: every side's options (A, B, ... up to CLI_DIFF_MAX),
 * and what the world sizes make of them. */
typedef struct diff_cmd {
  options_t opt[CLI_DIFF_MAX];
  char label[CLI_DIFF_MAX][160];
  int n;          /* sides: 2 compares A with B; more, each with A */
  int sizes, big; /* several world sizes; L, the largest */
  char workers_given[128], workers_words[128]; /* workers_text's */
} diff_cmd_t;

/* The world sizes as given ("4,8"), or in words ("2, 4 and 8"). */
static void workers_text(const diff_cmd_t *c, int words, char *buf,
                         size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int k = 0; k < c->n && len < size; k++)
    len += (size_t)snprintf(buf + len, size - len, "%s%d",
                            k == 0          ? ""
                            : !words        ? ","
                            : k == c->n - 1 ? " and "
                                            : ", ",
                            c->opt[k].config.workers);
}

/* Several world sizes: L contributions, the largest, which each divides;
 * the grads, if read, must give all L. Returns -1 to go on, or
 * EXIT_USAGE having said why. */
static int check_world_sizes(diff_cmd_t *c) {
  const char *given = c->workers_given;
  workers_text(c, 0, c->workers_given, sizeof c->workers_given);
  workers_text(c, 1, c->workers_words, sizeof c->workers_words);
  c->big = c->opt[0].config.workers;
  for (int k = 1; k < c->n; k++) {
    const int w = c->opt[k].config.workers;
    c->sizes |= w != c->opt[0].config.workers;
    c->big = w > c->big ? w : c->big;
  }
  const rs_topo_t *t = &c->opt[0].config.net.topo;
  if (c->sizes && t->enabled)
    return cli_refuse(CLI_DIFF,
                      "--workers %s with --topo: its %d node%s of %d GPUs "
                      "are %d workers, one number for every side (a "
                      "topology's W is nodes x gpus)",
                      given, t->nodes, t->nodes == 1 ? "" : "s", t->gpus,
                      t->nodes * t->gpus);
  for (int k = 0; c->sizes && k < c->n; k++)
    if (c->big % c->opt[k].config.workers)
      return cli_refuse(CLI_DIFF,
                        c->n == 2 ? "--workers %s: neither world size divides "
                                    "the other, so the smaller world's "
                                    "workers cannot each take an equal share "
                                    "of the %d contributions"
                                  : "--workers %s: %d does not divide the "
                                    "largest, %d, so its workers cannot each "
                                    "take an equal share of the contributions",
                        given, c->n == 2 ? c->big : c->opt[k].config.workers,
                        c->big);
  for (int r = 0; c->sizes && c->opt[0].grads && r < c->big; r++) {
    char path[4096];
    if (rs_grads_path(c->opt[0].grads, r, path, sizeof path) == RS_OK &&
        access(path, R_OK) == 0)
      continue;
    return cli_refuse(CLI_DIFF,
                      "--grads %.120s: no file for contribution %d (%.120s): "
                      "--workers %s needs %d, one per worker of the "
                      "largest world",
                      c->opt[0].grads, r, path, given, c->big);
  }
  return -1;
}

/* The command line into every side's options, checked: each side as a
 * run checks its own, then what the comparison needs of all. Returns -1
 * to go on, or the exit status, having said why (--help: 0). */
static int read_command(diff_cmd_t *c, int argc, char **argv, char *arena) {
  cli_two_t two = {.arena = arena};
  for (int k = 0; k < CLI_DIFF_MAX; k++) {
    cli_options_init(CLI_DIFF, &c->opt[k]);
    two.side[k] = &c->opt[k];
  }
  int rc = cli_walk(CLI_DIFF, argc, argv, &c->opt[0], &two);
  if (rc >= 0)
    return rc;
  if (two.count == 0)
    return cli_refuse(CLI_DIFF, "no option has two values: give the ones "
                                "the sides differ in as A,B, e.g. --algo "
                                "ring,rd");
  c->n = two.sides;
  for (int k = 0; k < c->n; k++) {
    memcpy(c->label[k], two.label[k], sizeof c->label[k]);
    if ((rc = cli_check_run(&c->opt[k])) >= 0)
      return rc;
  }
  for (int k = 1; k < c->n; k++)
    if (c->opt[0].grads && c->opt[0].dtype_name &&
        strcmp(c->opt[0].dtype_name, c->opt[k].dtype_name))
      return cli_refuse(CLI_DIFF, "--dtype A,B with --grads: a safetensors "
                                  "file holds one dtype; use generated or "
                                  "inline grads");
  return check_world_sizes(c);
}

/* Comparison d of side 0 and side k of the command line. */
static void pair_of(diff_t *d, const diff_cmd_t *c, int k) {
  const int from[2] = {0, k};
  d->sizes = c->sizes;
  d->big = c->big;
  d->workers_given = c->workers_given;
  d->workers_words = c->workers_words;
  for (int j = 0; j < 2; j++) {
    side_t *s = &d->s[j];
    s->opt = c->opt[from[j]];
    memcpy(s->label, c->label[from[j]], sizeof s->label);
    s->contribs = c->big;
    s->local = c->big / s->opt.config.workers;
    s->want_scale = j == 0; /* the same contributions on both sides */
  }
}

/* Side k's model, the grads it takes, and its config (this machine
 * measured for --algo auto, once). Returns -1 to go on, or the exit
 * status, having said why. */
static int ready_side(diff_t *d, int k) {
  side_t *side = &d->s[k];
  options_t *o = &side->opt;
  int rc = diff_load_model(o->params, o->dtype_name, &side->model);
  if (rc >= 0 || (rc = cli_check_model_buckets(o, side->model)) >= 0)
    return rc;
  int inline_workers = rs_model_inline_workers(side->model);
  side->use_inline = inline_workers > 0 && !o->grads;
  if (!o->workers_given && side->use_inline)
    o->config.workers = inline_workers;
  if (!d->sizes) /* one world size: a contribution per worker */
    d->big = side->contribs = o->config.workers;
  if (side->use_inline && (o->init_given || o->seed_given)) {
    fprintf(stderr,
            "ringsim: %s: the model gives inline grads; --init and --seed "
            "only apply to generated grads\n",
            o->params);
    return EXIT_USAGE;
  }
  if (side->use_inline && d->sizes && inline_workers != d->big) {
    fprintf(stderr,
            "ringsim: %s: grads has %d entries but --workers %s needs %d "
            "(one per worker of the largest world)\n",
            o->params, inline_workers, d->workers_given, d->big);
    return EXIT_USAGE;
  }
  if (side->use_inline && !d->sizes && inline_workers != o->config.workers) {
    fprintf(stderr, "ringsim: %s: grads has %d entries but --workers is %d\n",
            o->params, inline_workers, o->config.workers);
    return EXIT_USAGE;
  }
  side->config = o->config;
  side->config.traced = 0;
  char err[RS_ERRMSG_MAX];
  if (rs_config_measure_machine(&side->config, err)) {
    fprintf(stderr, "ringsim: measuring this machine for --algo auto: %s\n",
            err);
    return EXIT_RUN;
  }
  return -1;
}

/* Comparison d readied and run, its results compared (and, with explain,
 * explained). Returns -1 to go on, or the exit status. */
static int run_pair(diff_t *d, int explain) {
  int rc;
  for (int k = 0; k < 2; k++)
    if ((rc = ready_side(d, k)) >= 0)
      return rc;
  for (int k = 0; k < 2; k++)
    if ((rc = diff_run_side(&d->s[k], NULL)) >= 0)
      return rc;
  if ((rc = diff_compare(d)) >= 0 || (explain && (rc = diff_explain(d)) >= 0))
    return rc;
  /* A signal since the runs: no report (main exits 128 + it). */
  return cli_signal() ? EXIT_RUN : -1;
}

/* Whether side k's check failed (said), or, with --fail-on-diff, the
 * sides differ: the comparison's share of exit 1. */
static int pair_fails(const diff_t *d) {
  int failed = 0;
  for (int k = 0; k < 2; k++)
    if (d->s[k].status == RS_ECHECK) {
      fprintf(stderr, "ringsim: %s: the check failed\n", d->s[k].label);
      failed = 1;
    }
  return failed || (d->s[0].opt.fail_on_diff && d->differing);
}

static void diff_free(diff_t *d) {
  for (int k = 0; k < 2; k++) {
    rs_free(d->order[k]);
    free(d->region_counts[k]);
    rs_model_free(d->s[k].model);
    free(d->s[k].result);
    free(d->s[k].at_contribs);
    free(d->s[k].scale);
  }
  free(d->pd);
  free(d);
}

/* A with B: the comparison's report. B, C, ... each with A: a line each
 * as each comparison ends (--json: one object, each comparison's in it,
 * once all have run). One comparison's runs are held at a time. Returns
 * the exit status. */
static int compare(const diff_cmd_t *c) {
  const int json = c->opt[0].json, two = c->n == 2;
  json_t *all = json && !two ? json_array() : NULL;
  int rc = -1, fails = 0;
  for (int k = 1; k < c->n && rc < 0; k++) {
    diff_t *d = calloc(1, sizeof *d);
    if (!d) {
      fprintf(stderr, "ringsim: out of memory\n");
      rc = EXIT_RUN;
      break;
    }
    pair_of(d, c, k);
    /* (a line leaves out the orders of additions diff_explain writes) */
    if ((rc = run_pair(d, two || json)) < 0) {
      if (two && json)
        diff_report_json(d);
      else if (two)
        diff_report_text(d);
      else if (json)
        json_array_append_new(all, diff_json(d));
      else
        diff_report_line(d, k == 1, c->n);
      fflush(stdout);
      fails |= pair_fails(d);
      if (all && k == c->n - 1)
        diff_report_json_each(d, all);
    }
    diff_free(d);
  }
  json_decref(all);
  return rc >= 0 ? rc : fails ? EXIT_CHECK : 0;
}

int cli_diff(int argc, char **argv) {
  diff_cmd_t *c = calloc(1, sizeof *c);
  char *arena = malloc(cli_two_room(argc, argv));
  int rc = EXIT_RUN;
  if (c && arena) {
    rc = read_command(c, argc, argv, arena);
    if (rc < 0)
      rc = compare(c);
  } else {
    fprintf(stderr, "ringsim: out of memory\n");
  }
  free(c);
  free(arena);
  return rc;
}
