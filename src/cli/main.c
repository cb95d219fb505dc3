/* main.c - the ringsim command: run what the command line (options.c) asks,
 * report.
 *
 * Exit codes: 0 all good; 1 the check failed; 2 bad usage or bad input
 * (refused before anything runs); 3 the run failed (timeout, abort, or
 * anything else once it started); 128 + the signal (130, 143, 129) when
 * SIGINT, SIGTERM or SIGHUP stopped it (signals.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ringsim/ringsim.h"

/* The run's configuration as the trace stores it: the options as given. */
static char *config_json(const options_t *o, int argc, char **argv) {
  json_t *args = json_array();
  for (int i = 1; i < argc; i++)
    json_array_append_new(args, json_string(argv[i]));
  /* avg divides before or after the sum; the other ops have no average */
  const char *average = o->config.op != RS_OP_AVG ? NULL
                        : o->config.hook != RS_HOOK_NONE
                            ? rs_average_name(RS_AVERAGE_PRE)
                            : rs_average_name(o->config.average);
  json_t *c = json_pack(
      "{s:s, s:i, s:s, s:s?, s:s?, s:s?, s:I, s:s, s:s, s:I, s:i, s:f, s:s, "
      "s:b, s:s, s:s, s:o}",
      "params", o->params, "workers", o->config.workers, "op",
      rs_op_name(o->config.op), "average", average, "grads", o->grads, "out",
      o->out, "seed", (json_int_t)o->seed, "init", cli_init_name(o->init),
      "collective", "all_reduce", "segment_bytes",
      (json_int_t)o->config.segment_bytes, "slots", o->config.slots,
      "timeout_s", o->config.timeout_s, "loop",
      o->config.slices ? "slices" : "steps", "direct", o->config.direct, "algo",
      rs_algorithm_name(o->config.algo), "hook", rs_hook_name(o->config.hook),
      "argv", args);
  char *text = c ? json_dumps(c, JSON_COMPACT) : NULL;
  json_decref(c);
  return text;
}

/* Over MPI the steps after each gate are collective: every process
 * reaches every gate (main pads the gates of one that stopped early), and
 * all go on only if every one can. Returns the largest status of all. */
#define MPI_GATES 3
static int mpi_gate(options_t *o, int rc) {
  if (!o->config.mpi)
    return rc;
  if (rc && !o->mpi_own_rc)
    o->mpi_own_rc = rc;
  o->mpi_gates++;
  int agreed = rs_mpi_agree(rc, NULL, 0);
  if (agreed && !o->mpi_own_rc)
    o->mpi_own_rc = -1; /* stopped for another process's failure */
  return agreed;
}

/* What the run will read and write, checked before it is created: the
 * model's inline grads (their count is W unless --workers says), --out,
 * and this machine measured for --algo auto without --net. Returns -1 to
 * go on, or the exit status, having said why. */
static int check_inputs(options_t *opt, const rs_model_t *model,
                        int *use_inline) {
  char err[RS_ERRMSG_MAX];
  int rc;
  int inline_workers = rs_model_inline_workers(model);
  *use_inline = inline_workers > 0 && !opt->grads;
  if (!opt->workers_given && *use_inline)
    opt->config.workers = inline_workers;
  if (*use_inline && (opt->init_given || opt->seed_given)) {
    fprintf(stderr,
            "ringsim: %s: the model gives inline grads; --init and "
            "--seed only apply to generated grads\n",
            opt->params);
    return EXIT_USAGE;
  }
  if (*use_inline && inline_workers != opt->config.workers) {
    fprintf(stderr, "ringsim: %s: grads has %d entries but --workers is %d\n",
            opt->params, inline_workers, opt->config.workers);
    return EXIT_USAGE;
  }
  if ((rc = cli_check_out(opt)) >= 0)
    return rc;
  opt->config.traced = opt->trace != NULL;
  /* --algo auto without --net: this machine, measured (tens of ms) */
  if (rs_config_measure_machine(&opt->config, err)) {
    fprintf(stderr, "ringsim: measuring this machine for --algo auto: %s\n",
            err);
    return EXIT_RUN;
  }
  return -1;
}

/* The trace opened and the run's rows started in it, with its options as
 * given (over MPI, rank 0 writes the trace: every transfer of every
 * process). Returns -1 to go on, or the exit status, having said why. */
static int open_trace(const options_t *opt, rs_run_t *run, rs_trace_t **trace,
                      int argc, char **argv) {
  char err[RS_ERRMSG_MAX];
  if (!opt->trace || opt->mpi_rank != 0)
    return -1;
  int opened = cli_trace_open(opt->trace, trace, err);
  if (opened) { /* bad input (2), or its lock not had in time (3) */
    fprintf(stderr, "ringsim: %s\n", err);
    return cli_exit_code(opened);
  }
  char *config = config_json(opt, argc, argv);
  int set = rs_run_set_trace(run, *trace, config);
  free(config);
  if (set) {
    fprintf(stderr, "ringsim: %s\n", rs_run_errmsg(run));
    return EXIT_RUN;
  }
  return -1;
}

/* The workers' grads, from where the options say: read (--grads), the
 * model's inline ones, or generated; source says which, for the report.
 * Returns the fill's status. */
static int fill(const options_t *opt, rs_run_t *run, int use_inline,
                char *source, size_t size) {
  if (opt->grads) {
    snprintf(source, size, "read from %s", opt->grads);
    return rs_run_load_grads(run, opt->grads);
  }
  if (use_inline) {
    snprintf(source, size, "inline in %s", opt->params);
    return rs_run_fill_inline(run);
  }
  snprintf(source, size, "generated: %s, seed %llu", cli_init_name(opt->init),
           (unsigned long long)opt->seed);
  return rs_run_fill(run, opt->init, opt->seed);
}

/* The ring has run. A signal since, or an output that cannot be written,
 * fails the run after all: said before the report, so that the report,
 * --json and the trace's row say the same. Returns the run's status. */
static int after_ring(const options_t *opt, const rs_model_t *model,
                      rs_run_t *run, int status) {
  char err[RS_ERRMSG_MAX];
  int signo = cli_signal();
  if (signo && (status == RS_OK || status == RS_ECHECK)) {
    snprintf(err, sizeof err, "interrupted by %s", cli_signal_name(signo));
    status = rs_run_fail_after(run, RS_EINTERRUPTED, err);
  } else if (status == RS_OK && opt->out && opt->mpi_rank == 0) {
    /* (over MPI rank 0 hosts worker 0 and writes it, once) */
    int wrc = rs_safetensors_write_cancellable(
        opt->out, model, rs_run_buffer(run, 0), cli_signal_flag(), err);
    if (wrc)
      status = rs_run_fail_after(
          run, wrc == RS_EINTERRUPTED ? RS_EINTERRUPTED : RS_ESYS, err);
  }
  return status;
}

/* The report (rank 0's, over MPI, for every process), and what went wrong
 * on stderr: the run's error, a report nobody could read, where the
 * workers stopped, a trace not written. Returns the exit status. */
static int report_run(options_t *opt, rs_model_t *model, rs_run_t *run,
                      const char *source, int status) {
  int rc = cli_exit_code(status);
  report_t report = {opt, model, run, source, status, opt->trace};
  if (opt->json)
    cli_print_json(&report);
  else
    cli_print_text(&report);
  char lost[RS_ERRMSG_MAX];
  int report_lost = cli_stdout_lost("the report", lost, sizeof lost);
  if (status != RS_OK)
    fprintf(stderr, "ringsim: %s\n", rs_run_errmsg(run));
  if (status == RS_EINTERRUPTED)
    cli_signal_said();
  if (report_lost) {
    /* A run whose report nobody read has not done its job: exit 3, and
     * its trace row says so (one that had failed keeps its own error). */
    fprintf(stderr, "ringsim: %s\n", lost);
    rs_run_fail_after(run, RS_ESYS, lost);
    rc = EXIT_RUN;
  }
  if (rc == EXIT_RUN && !rs_run_result(run)->checked &&
      status != RS_ETRACE) /* the ring failed */
    cli_print_watchdog(run);
  if (rs_run_trace_error(run) && status != RS_ETRACE) {
    fprintf(stderr, "ringsim: %s\n", rs_run_trace_error(run));
    if (rc == 0)
      rc = EXIT_RUN;
  }
  return rc;
}

/* --hook powersgd: its steps (powersgd_run.c), the trace's config made
 * here, where the run's is. */
static int powersgd_main(options_t *opt, rs_model_t *model, int use_inline,
                         int argc, char **argv) {
  char *config = NULL;
  if (opt->trace && !(config = config_json(opt, argc, argv))) {
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  int rc = cli_powersgd_main(opt, model, use_inline, config);
  free(config);
  return rc;
}

/* The run's part of main: from the loaded model to the report. */
static int run_main(options_t *opt, rs_model_t *model, int argc, char **argv) {
  char err[RS_ERRMSG_MAX];
  rs_run_t *run = NULL;
  rs_trace_t *trace = NULL;
  cli_progress_t *progress = NULL;
  int use_inline, rc;
  if ((rc = check_inputs(opt, model, &use_inline)) >= 0 ||
      (rc = mpi_gate(opt, 0)))
    return rc;
  if (opt->config.hook == RS_HOOK_POWERSGD)
    return powersgd_main(opt, model, use_inline, argc, argv);
  if (rs_run_create(&opt->config, model, &run, err)) {
    fprintf(stderr, "ringsim: %s\n", err);
    return EXIT_USAGE;
  }
  cli_signals_watch(run);
  if (opt->explain && rs_explain_check(run, err) != RS_OK) {
    fprintf(stderr, "ringsim: %s\n", err);
    rc = EXIT_USAGE;
    goto done;
  }
  if ((rc = open_trace(opt, run, &trace, argc, argv)) >= 0)
    goto done;
  if ((rc = mpi_gate(opt, 0)))
    goto done;
  /* a line on stderr while a stage takes long (a terminal, not --json) */
  if (!opt->json && !opt->quiet)
    progress = cli_progress_start(run);
  char source[RS_ERRMSG_MAX];
  int status = fill(opt, run, use_inline, source, sizeof source);
  if (opt->config.mpi) {
    int agreed = mpi_gate(opt, status == RS_OK ? 0 : cli_exit_code(status));
    if (agreed && status == RS_OK) { /* another process could not fill */
      rc = agreed;
      goto done;
    }
  }
  if (status == RS_OK && opt->explain)
    rs_explain(stdout, run, err); /* checked above: it cannot fail */
  if (status == RS_OK)
    status = rs_run_execute(run);
  cli_progress_stop(progress);
  progress = NULL;
  if (cli_exit_code(status) == EXIT_USAGE) {
    /* Only input errors map here, and they stop a run before its ring. */
    fprintf(stderr, "ringsim: %s\n", rs_run_errmsg(run));
    rc = EXIT_USAGE;
    goto done;
  }
  status = after_ring(opt, model, run, status);
  rc = opt->mpi_rank != 0 ? cli_exit_code(status)
                          : report_run(opt, model, run, source, status);
done:
  cli_progress_stop(progress);
  cli_signals_watch(NULL);
  rs_run_free(run);
  rs_trace_close(trace);
  return rc;
}

/* --transport mpi on the command line, the last --transport given (before
 * it is parsed: MPI starts first, so that a usage error is said once). */
static int wants_mpi(int argc, char **argv) {
  int mpi = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0)
      break;
    if (strncmp(argv[i], "--transport=", 12) == 0)
      mpi = strcmp(argv[i] + 12, "mpi") == 0;
    else if (strcmp(argv[i], "--transport") == 0 && i + 1 < argc)
      mpi = strcmp(argv[++i], "mpi") == 0;
  }
  return mpi;
}

/* Over MPI, rank 0 alone speaks: the others' stdout is dropped and their
 * stderr kept in a temporary file, whose last line is their message if
 * the job fails for a reason of theirs (mpi_finish says it once). */
typedef struct mpi_cli {
  int on;
  int rank;
  FILE *err; /* the kept stderr of a rank other than 0 */
} mpi_cli_t;

static int mpi_begin(mpi_cli_t *m, int argc, char **argv) {
  char err[RS_ERRMSG_MAX];
  int procs;
  if (!wants_mpi(argc, argv)) { /* (under mpirun: so were the others?) */
    if (rs_mpi_check_alone(err) == RS_OK)
      return -1;
    if (err[0])
      fprintf(stderr, "ringsim: %s\n", err);
    return EXIT_USAGE;
  }
  if (rs_mpi_init(&m->rank, &procs, err)) {
    /* Without MPI there is no rank to ask: mpirun's says who speaks. */
    const char *rank = getenv("OMPI_COMM_WORLD_RANK");
    if (!rank)
      rank = getenv("PMIX_RANK");
    if (!rank || strcmp(rank, "0") == 0)
      fprintf(stderr, "ringsim: %s\n", err);
    return EXIT_USAGE;
  }
  m->on = 1;
  if (m->rank != 0) {
    fflush(NULL);
    int null = open("/dev/null", O_WRONLY);
    m->err = tmpfile();
    if (null >= 0)
      dup2(null, STDOUT_FILENO);
    if (null >= 0)
      close(null);
    if (m->err)
      dup2(fileno(m->err), STDERR_FILENO);
  }
  return -1;
}

/* Agree on the exit status (the largest of every process's); rank 0 says
 * the failure of another process, once, when it did not fail so itself. */
static int mpi_finish(mpi_cli_t *m, const options_t *opt, int rc) {
  if (!m->on)
    return rc;
  char msg[RS_ERRMSG_MAX] = "";
  if (m->err) { /* this rank's last line on stderr */
    fflush(stderr);
    char line[RS_ERRMSG_MAX];
    rewind(m->err);
    while (fgets(line, sizeof line, m->err))
      if (line[0] && line[0] != '\n')
        memcpy(msg, line, sizeof msg);
    msg[strcspn(msg, "\n")] = '\0';
  }
  int own = opt->mpi_own_rc < 0 ? 0 : opt->mpi_own_rc ? opt->mpi_own_rc : rc;
  int agreed = rs_mpi_agree(own, msg, sizeof msg);
  if (m->rank == 0 && own != agreed && msg[0])
    fprintf(stderr, "%s\n", msg);
  rs_mpi_finalize();
  return agreed > rc ? agreed : rc;
}

/* `ringsim help` is `ringsim --help`, `ringsim help COMMAND` is `ringsim
 * COMMAND --help`; `ringsim help --man` the man page and `ringsim help
 * --completion bash|zsh` a completion script, all from the option table
 * (manpage.c, complete.c); another COMMAND, or more after it, is
 * refused. */
static int help_command(int argc, char **argv) {
  static const struct {
    const char *name;
    cli_mode_t mode;
  } modes[] = {{"bench", CLI_BENCH},
               {"model", CLI_MODEL},
               {"diff", CLI_DIFF},
               {"step", CLI_STEP}};
  if (argc > 2 && strcmp(argv[2], "--completion") == 0) {
    if (argc < 4)
      return cli_usage_error("help: --completion needs a shell: bash or zsh");
    if (argc > 4)
      return cli_usage_error("help: unexpected argument '%s'", argv[4]);
    if (cli_write_completion(argv[3], stdout))
      return cli_usage_error("help: --completion '%s': expected bash or zsh",
                             argv[3]);
    return 0;
  }
  if (argc > 3)
    return cli_usage_error("help: unexpected argument '%s'", argv[3]);
  if (argc == 3 && strcmp(argv[2], "--man") == 0) {
    if (cli_write_man(stdout) == 0)
      return 0;
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  if (argc < 3) {
    cli_print_help(CLI_RUN);
    return 0;
  }
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (strcmp(argv[2], modes[i].name) == 0) {
      cli_print_help(modes[i].mode);
      return 0;
    }
  return cli_usage_error("help: unknown command '%s': expected bench, model, "
                         "diff or step",
                         argv[2]);
}

static int command(int argc, char **argv) {
  /* A file size limit (ulimit -f) makes a write fail with EFBIG, which is
   * reported, instead of killing the process halfway through a file. */
  signal(SIGXFSZ, SIG_IGN);
  /* SIGINT, SIGTERM and SIGHUP stop every mode the same way (signals.c):
   * taken before any thread exists, MPI's included. */
  cli_signals_start();
  if (argc > 1 && strcmp(argv[1], "help") == 0)
    return cli_signals_finish(help_command(argc, argv));
  if (argc > 1 && strcmp(argv[1], "diff") == 0)
    return cli_signals_finish(cli_diff(argc - 1, argv + 1));
  if (argc > 1 && strcmp(argv[1], "step") == 0)
    return cli_signals_finish(cli_step(argc - 1, argv + 1));
  options_t opt = {0};
  int model_only = argc > 1 && strcmp(argv[1], "model") == 0;
  opt.model_only = model_only;
  mpi_cli_t mpi = {0};
  int rc = model_only ? -1 : mpi_begin(&mpi, argc, argv);
  if (rc >= 0) /* every rank agreed the job ends, and one said why */
    return cli_signals_finish_ended(rc);
  if (argc > 1 && strcmp(argv[1], "bench") == 0)
    return mpi_finish(&mpi, &opt,
                      cli_signals_finish(cli_bench(argc - 1, argv + 1)));
  opt.mpi_rank = mpi.rank;
  rc = cli_parse_args(argc - model_only, argv + model_only, &opt);
  if (rc >= 0)
    return mpi_finish(&mpi, &opt, cli_signals_finish(rc));

  char err[RS_ERRMSG_MAX];
  rs_model_t *model = NULL;
  if (opt.model_only && !opt.params) { /* model --like nccl's sweep */
    rc = cli_run_model(&opt, NULL);
  } else if (rs_model_load(opt.params, &model, err)) {
    fprintf(stderr, "ringsim: %s\n", err);
    rc = EXIT_USAGE;
  } else if ((rc = cli_check_model_buckets(&opt, model)) >= 0) {
    /* (said) */
  } else if (opt.model_only) {
    rc = cli_run_model(&opt, model);
  } else {
    rc = run_main(&opt, model, argc, argv);
  }
  while (opt.config.mpi && opt.mpi_gates < MPI_GATES)
    mpi_gate(&opt, rc ? rc : EXIT_RUN); /* (stopped before a gate) */
  rs_model_free(model);
  return mpi_finish(&mpi, &opt, cli_signals_finish(rc));
}

int main(int argc, char **argv) {
  int rc = command(argc, argv);
  /* Whatever the command printed (a report, model's, bench's or diff's
   * table, --help) must have reached stdout: else exit 3, said on stderr.
   * A failure that is already worse (usage, a signal) keeps its status. */
  char lost[RS_ERRMSG_MAX];
  if (cli_stdout_lost("the output", lost, sizeof lost)) {
    fprintf(stderr, "ringsim: %s\n", lost);
    if (rc < EXIT_RUN)
      rc = EXIT_RUN;
  }
  return rc;
}
