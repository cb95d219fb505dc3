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
 *
 * This file reads the command line (through the option table, which
 * splits the A,B values: parse.c) and readies the two sides; the runs and
 * the comparison are diff_compare.c's, the report diff_report.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diff_parts.h"
#include "option.h"

/* Two world sizes: L contributions, grouped k = L/S to a worker on the
 * smaller side; the grads, if read, must give all L. Returns -1 to go on,
 * or EXIT_USAGE having said why. */
static int check_world_sizes(diff_t *d) {
  side_t *s = d->s;
  const int wa = s[0].opt.config.workers, wb = s[1].opt.config.workers;
  d->sizes = wa != wb;
  d->big = wa > wb ? wa : wb;
  const rs_topo_t *t = &s[0].opt.config.net.topo;
  if (d->sizes && t->enabled)
    return cli_refuse(CLI_DIFF,
                      "--workers %d,%d with --topo: its %d node%s of %d GPUs "
                      "are %d workers, one number for both sides (a "
                      "topology's W is nodes x gpus)",
                      wa, wb, t->nodes, t->nodes == 1 ? "" : "s", t->gpus,
                      t->nodes * t->gpus);
  if (d->sizes && d->big % (wa < wb ? wa : wb))
    return cli_refuse(CLI_DIFF,
                      "--workers %d,%d: neither world size divides the "
                      "other, so the smaller world's workers cannot each "
                      "take an equal share of the %d contributions",
                      wa, wb, d->big);
  for (int k = 0; k < 2; k++) {
    s[k].contribs = d->big;
    s[k].local = d->big / s[k].opt.config.workers;
  }
  for (int r = 0; d->sizes && s[0].opt.grads && r < d->big; r++) {
    char path[4096];
    if (rs_grads_path(s[0].opt.grads, r, path, sizeof path) == RS_OK &&
        access(path, R_OK) == 0)
      continue;
    return cli_refuse(CLI_DIFF,
                      "--grads %.120s: no file for contribution %d (%.120s): "
                      "--workers %d,%d needs %d, one per worker of the "
                      "larger world",
                      s[0].opt.grads, r, path, wa, wb, d->big);
  }
  return -1;
}

/* The command line into the two sides' options, checked: each side as a
 * run checks its own, then what the comparison needs of both. Returns -1
 * to go on, or the exit status, having said why (--help: 0). */
static int read_command(diff_t *d, int argc, char **argv, char *arena) {
  side_t *s = d->s;
  cli_two_t two = {.other = &s[1].opt, .arena = arena};
  for (int k = 0; k < 2; k++)
    cli_options_init(CLI_DIFF, &s[k].opt);
  int rc = cli_walk(CLI_DIFF, argc, argv, &s[0].opt, &two);
  if (rc >= 0)
    return rc;
  if (two.count == 0)
    return cli_refuse(CLI_DIFF, "no option has two values: give the ones "
                                "the sides differ in as A,B, e.g. --algo "
                                "ring,rd");
  for (int k = 0; k < 2; k++) {
    memcpy(s[k].label, two.label[k], sizeof s[k].label);
    if ((rc = cli_check_run(&s[k].opt)) >= 0)
      return rc;
  }
  if (s[0].opt.grads && s[0].opt.dtype_name &&
      strcmp(s[0].opt.dtype_name, s[1].opt.dtype_name))
    return cli_refuse(CLI_DIFF, "--dtype A,B with --grads: a safetensors "
                                "file holds one dtype; use generated or "
                                "inline grads");
  return check_world_sizes(d);
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
  const int wa = d->s[0].opt.config.workers, wb = d->s[1].opt.config.workers;
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
            "ringsim: %s: grads has %d entries but --workers %d,%d needs %d "
            "(one per worker of the larger world)\n",
            o->params, inline_workers, wa, wb, d->big);
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

/* The comparison, once its command line is read: the sides readied and
 * run, their results compared and explained, the report. Returns the exit
 * status. */
static int compare(diff_t *d) {
  int rc;
  for (int k = 0; k < 2; k++)
    if ((rc = ready_side(d, k)) >= 0)
      return rc;
  for (int k = 0; k < 2; k++)
    if ((rc = diff_run_side(&d->s[k], NULL)) >= 0)
      return rc;
  if ((rc = diff_compare(d)) >= 0 || (rc = diff_explain(d)) >= 0)
    return rc;
  /* A signal since the runs: no report (main exits 128 + it). */
  if (cli_signal())
    return EXIT_RUN;
  if (d->s[0].opt.json)
    diff_report_json(d);
  else
    diff_report_text(d);
  for (int k = 0; k < 2; k++)
    if (d->s[k].status == RS_ECHECK)
      fprintf(stderr, "ringsim: %s: the check failed\n", d->s[k].label);
  int check_failed = d->s[0].status == RS_ECHECK || d->s[1].status == RS_ECHECK;
  return check_failed || (d->s[0].opt.fail_on_diff && d->differing) ? EXIT_CHECK
                                                                    : 0;
}

static void diff_free(diff_t *d) {
  for (int k = 0; k < 2; k++) {
    rs_free(d->order[k]);
    free(d->region_counts[k]);
    rs_model_free(d->s[k].model);
    free(d->s[k].result);
    free(d->s[k].at_contribs);
  }
  free(d->pd);
  free(d);
}

int cli_diff(int argc, char **argv) {
  diff_t *d = calloc(1, sizeof *d);
  char *arena = malloc(cli_two_room(argc, argv));
  int rc = EXIT_RUN;
  if (d && arena) {
    rc = read_command(d, argc, argv, arena);
    if (rc < 0)
      rc = compare(d);
  } else {
    fprintf(stderr, "ringsim: out of memory\n");
  }
  if (d)
    diff_free(d);
  free(arena);
  return rc;
}
