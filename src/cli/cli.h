/* cli.h - what the ringsim command's modes share: a run (`ringsim`),
 * `ringsim bench`, `ringsim model`, `ringsim diff` and `ringsim step`. Each
 * reads its command line through the one option table (optable.c,
 * parse.c). */
#ifndef RINGSIM_CLI_H
#define RINGSIM_CLI_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ringsim/explain.h"          /* --explain, diff's orders */
#include "ringsim/internal/command.h" /* the command's own calls */
#include "ringsim/internal/config.h"  /* rs_config_t's fields */
#include "ringsim/powersgd.h"         /* --hook powersgd */
#include "ringsim/ringsim.h"

/* `ringsim model` runs no worker threads, so it takes far bigger rings;
 * its lock-step simulation costs up to O(W^2 x segments) where no repeat
 * shortens it (docs/performance.md), so it stops there. */
#define MODEL_MAX_WORKERS 16384

/* The limits' digits for help texts ("4096"): each limit is #defined as a
 * plain number, so the preprocessor can spell it. */
#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)
#define CLI_MAX_WORKERS_TEXT CLI_STR(RS_MAX_WORKERS)
#define CLI_MODEL_MAX_WORKERS_TEXT CLI_STR(MODEL_MAX_WORKERS)

/* The command's modes. The option table says which of them take each
 * option (CLI_IN(mode) bits); a usage error in a mode other than the run
 * starts with its name ("bench: ") and points at its own --help. */
typedef enum cli_mode {
  CLI_RUN,
  CLI_BENCH,
  CLI_MODEL,
  CLI_DIFF,
  CLI_STEP,
  CLI_MODES
} cli_mode_t;
#define CLI_IN(mode) (1u << (mode))

/* Every option of the command, in the order the usage texts list them
 * (optable.c has each one's row: names, value, modes, help). */
typedef enum cli_opt {
  OPT_PARAMS,
  OPT_WORKERS,
  OPT_MINBYTES,
  OPT_MAXBYTES,
  OPT_STEPFACTOR,
  OPT_STEPBYTES,
  OPT_ITERS,
  OPT_WARMUP,
  OPT_DATATYPE,
  OPT_NGPUS,       /* bench: nccl-tests' -g, -t, -c, -a, -J */
  OPT_NTHREADS,
  OPT_CHECK,
  OPT_RANK_AVERAGE,
  OPT_OUTPUT_FILE,
  OPT_DTYPE,
  OPT_INIT,
  OPT_SEED,
  OPT_GRADS,
  OPT_OUT,
  OPT_OP,
  OPT_ORDER_REPORT,
  OPT_AVERAGE,
  OPT_LIKE,
  OPT_HOOK,
  OPT_SEGMENT_BYTES,
  OPT_SLOTS,
  OPT_TIMEOUT,
  OPT_TRACE,
  OPT_NO_TRACE,
  OPT_INJECT,
  OPT_CHECKSUM,
  OPT_NET,
  OPT_TOPO,
  OPT_REDUCE_RATE,
  OPT_LINK,
  OPT_STRAGGLER,
  OPT_EXPLAIN,
  OPT_BUCKET_MB,
  OPT_DIRECT,
  OPT_ALGO,
  OPT_PROTO,    /* model --like nccl: NCCL_PROTO, NCCL_*_NCHANNELS */
  OPT_CHANNELS,
  OPT_LOOP,
  OPT_PRINT,
  OPT_FAIL_ON_DIFF,
  OPT_JSON,
  OPT_TRANSPORT,
  OPT_COMPUTE,
  OPT_ITERATIONS,
  OPT_NO_THREADS,
  OPT_QUIET, /* no progress line on stderr */
  OPT_HELP,
  OPT_VERSION,
  OPT_COUNT
} cli_opt_t;

/* `ringsim bench --workers 4,8,16`: at most this many world sizes. */
#define CLI_BENCH_MAX_SIZES 64
/* ringsim step's bucket caps (--bucket-mb 1,5,25, or sweep's 8) */
#define CLI_STEP_MAX_CAPS 16
/* ringsim model's rows (--workers 8,64 or --topo ...,nodes=1,8,64) */
#define CLI_MODEL_MAX_ROWS 16

/* A command line, read (parse.c): a run's, `ringsim model`'s, bench's,
 * or one side of `ringsim diff`. */
typedef struct options {
  cli_mode_t mode;
  unsigned char given[OPT_COUNT]; /* how often each option was given */
  rs_config_t config;
  rs_test_knobs_t test; /* the environment's test knobs: config.test */
  int workers_given;
  const char *params;
  const char *grads;
  const char *out;
  uint64_t seed;
  int seed_given;
  rs_init_t init;
  int init_given;
  int print_values;
  int json;
  int quiet;    /* --quiet: no progress line (progress.c) */
  int algo_all; /* --algo all (model, bench) */
  int explain;
  int average_given;
  int model_only;    /* `ringsim model`: the schedule's simulated time alone */
  const char *trace; /* NULL: --no-trace */
  int trace_given;
  int no_trace;
  /* --transport mpi (config.mpi): this process's rank, the exit status of
   * its own first failure, and how many of run_main's gates it passed
   * (main.c: every process reaches every gate) */
  int mpi_rank;
  int mpi_own_rc; /* -1: stopped at a gate for another's failure */
  int mpi_gates;
  /* ringsim bench: the sweep */
  struct {
    int workers[CLI_BENCH_MAX_SIZES]; /* --workers 4,8,16 */
    int worker_count;
    size_t min_bytes, max_bytes, step_bytes;
    int factor;
    int iters, warmup;
    rs_dtype_t dtype; /* -d */
    /* nccl-tests' -t (1 only), -c (0: #wrong N/A), -a (0..3, one value
     * here) and -J FILE (its JSON; NULL: none) */
    int nthreads, check, rank_average;
    const char *output_file;
    int procs;        /* --transport mpi: the processes */
  } bench;
  /* ringsim model --like nccl (model.c): NCCL's tuner's pick, as
   * NCCL_ALGO, NCCL_PROTO and NCCL_MIN/MAX_NCHANNELS force it; without
   * --params, nccl-tests' sweep (bench's min_bytes, max_bytes, factor,
   * step_bytes, dtype) */
  struct {
    int on;           /* --like nccl */
    int algo;         /* --algo as NCCL's (rs_nccl_algo_t); -1: NCCL's pick
                         or not one of NCCL's */
    int algo_foreign; /* --algo named NCCL's as NCCL_ALGO spells it
                         ("NVLSTree"), not as ringsim does */
    const char *algo_text; /* --algo as given (messages name it) */
    int proto;        /* --proto (rs_proto_t); -1: auto */
    int channels;     /* --channels C; 0: NCCL's count */
  } nccl;
  const char *topo_spec; /* --topo as given (a report names it) */
  /* ringsim model: a row per size, from --workers 8,64,512 (with --net) or
   * --topo's nodes=1,8,64 (W = nodes x gpus each); count 0: one size, the
   * config's */
  struct {
    int workers[CLI_MODEL_MAX_ROWS];
    int nodes[CLI_MODEL_MAX_ROWS]; /* 0: not a topology's list */
    int count;
  } rows;
  /* ringsim step: the compute (--compute; flops 0: model.json's), the
   * iterations, the caps in bytes (count 0: the config's one), a slow
   * worker's factor (--straggler worker=R,compute=F; -1: none), and
   * whether the all-reduces run on threads */
  struct {
    double flops, rows;
    int iterations;
    size_t caps[CLI_STEP_MAX_CAPS];
    int cap_count;
    int sweep;
    int slow_worker;
    double slow;
    int no_threads;
  } step;
  /* --hook powersgd:rank=R,...,q=FILE: the Qs' safetensors file, {s} the
   * step that draws them (NULL: ringsim's own normal stream from --seed).
   * The run's --iterations K (its steps) is step.iterations. */
  char *powersgd_q;
  /* ringsim diff: --dtype's value for this side (NULL: the model's) */
  const char *dtype_name;
  int fail_on_diff;
} options_t;

/* Everything a report needs to say about a finished run. */
typedef struct report {
  const options_t *opt;
  const rs_model_t *model;
  rs_run_t *run;
  const char *source; /* where the grads came from */
  int status;
  const char *trace; /* file, or NULL */
} report_t;

enum { EXIT_CHECK = 1, EXIT_USAGE = 2, EXIT_RUN = 3 };

/* args.c */
/* Print "ringsim: <message> (see ringsim --help)" on stderr, the message
 * made as printf makes it, on one line; returns EXIT_USAGE. A message
 * starting "bench: ", "model: " or "diff: " points at that mode's --help
 * instead. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "bench: ", "model: ", "diff: ", or "" for a run: how a mode's usage
 * errors start. */
const char *cli_mode_prefix(cli_mode_t mode);

/* The same, for a mode: "bench: " (cli_mode_prefix) before the message. */
int cli_refuse(cli_mode_t mode, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* options.c: --algo NVLSTree (NCCL_ALGO's spelling, as "Ring", "NVLS")
 * without --like nccl, refused, naming ringsim's spelling (exit 2). */
int cli_refuse_nccl_spelling(const options_t *o);

/* options.c: a run's command line (argv[0] the program), or `ringsim
 * model`'s (argv[0] "model") with o->model_only set, into o. Returns -1 to
 * go on, or the exit status, having said why (--help, --version: 0). */
int cli_parse_args(int argc, char **argv, options_t *o);
/* A model that lists its buckets (model.json's "buckets": a recorded
 * job's) beside --bucket-mb, refused (run, step, diff). Returns -1 to go
 * on, or EXIT_USAGE having said why. */
int cli_check_model_buckets(const options_t *o, const rs_model_t *model);
/* --channels C without --like nccl: refused (one line) unless the
 * algorithm is the ring, on one process; else the network model's
 * channels (rs_netmodel_t's, which a run, `model` and `step` read).
 * Returns -1 to go on, or EXIT_USAGE having said why. */
int cli_check_channels(options_t *o);

/* outcheck.c: --out refused, before anything runs, where a name it will
 * write (each {s} step's with --hook powersgd) cannot be written or is an
 * input: the model, a grads or Q file, the trace or its side files.
 * Returns -1 to go on, or the exit status having said why. */
int cli_check_out(const options_t *o);
/* pattern with each {s} replaced by step; 0, or -1 if out is too small. */
int cli_step_path(const char *pattern, int step, char *out, size_t size);

/* help.c: the mode's --help, on stdout, or on out. */
void cli_print_help(cli_mode_t mode);
void cli_write_help(cli_mode_t mode, FILE *out);
/* manpage.c: `ringsim help --man`, the man page (roff, section 1) made
 * from every mode's --help. 0, or -1 out of memory. */
int cli_write_man(FILE *out);
/* complete.c: `ringsim help --completion SHELL`, the completion script
 * for bash or zsh made from the option table. 0, or -1: no such shell. */
int cli_write_completion(const char *shell, FILE *out);

/* `ringsim bench ...`: argv[0] is "bench". Returns the exit status. */
int cli_bench(int argc, char **argv);

/* diff.c: `ringsim diff ...`: argv[0] is "diff". Returns the exit status. */
int cli_diff(int argc, char **argv);

/* step.c: `ringsim step ...`: argv[0] is "step". Returns the exit status. */
int cli_step(int argc, char **argv);

/* signals.c: the one taker of SIGINT, SIGTERM and SIGHUP (SIGHUP handled
 * as SIGTERM), for every mode. Start it first in main, before any thread:
 * the signals are blocked in every thread and taken by one of its own. */
void cli_signals_start(void);
/* The run a signal stops (rs_run_interrupt), or NULL: register a run
 * before it fills or executes, and NULL before freeing it. A signal that
 * came earlier stops it at once. */
void cli_signals_watch(rs_run_t *run);
/* The first signal taken, or 0: one atomic load, for long loops to poll. */
int cli_signal(void);
/* The same as the library's stop flag, for its cancellable loops (a
 * network model's stop, rs_safetensors_write_cancellable): signo's. */
const rs_stop_flag_t *cli_signal_flag(void);
const char *cli_signal_name(int signo); /* "SIGINT", "SIGTERM", "SIGHUP" */
/* A message naming the signal has been printed (a run's "interrupted by
 * SIGINT"): cli_signals_finish does not say it again. */
void cli_signal_said(void);
/* The command is done: stop the taker. If a signal came, say so (unless
 * said) and return 128 + its number (130, 143, 129); else rc. */
int cli_signals_finish(int rc);
/* The command ended with rc, said why, and the job's other processes know
 * (every rank agreed the MPI job ends): stop the taker and return rc. A
 * signal that came meanwhile is mpirun ending the job's other processes,
 * not a stop: it prints nothing and leaves rc as it is. */
int cli_signals_finish_ended(int rc);

/* progress.c */
/* A progress line on stderr for run, drawn by a thread of its own while a
 * stage takes more than a second; NULL (nothing drawn) unless stderr is a
 * terminal. Stop it (which clears the line) before printing anything. */
typedef struct cli_progress cli_progress_t;
cli_progress_t *cli_progress_start(rs_run_t *run);
/* The same for work counted in pieces (total of them, *done so far,
 * updated by other threads): "ringsim: <what>: 40%, 3 s". */
cli_progress_t *cli_progress_count(const char *what, const atomic_int *done,
                                   int total);
/* The same, counting the pieces by name: "ringsim: <what>: 3/9 <unit>,
 * 2 s" (ringsim model: "model: simulating", "algorithms"). */
cli_progress_t *cli_progress_pieces(const char *what, const char *unit,
                                    const atomic_int *done, int total);
void cli_progress_stop(cli_progress_t *progress); /* NULL: nothing */

/* report.c */
/* --hook powersgd:rank=R's step (powersgd.c), said in text or JSON. */
typedef struct cli_powersgd {
  const options_t *opt;
  const rs_model_t *model;
  const rs_powersgd_t *ps;
  const char *source;   /* where the grads came from */
  const char *q_source; /* and the initial Qs */
  const char *trace;    /* the trace's path, or NULL */
  const char *errmsg;   /* status's message */
  int status;
} cli_powersgd_t;
void cli_print_powersgd(const cli_powersgd_t *p);
/* powersgd_run.c: the run's --hook powersgd, --iterations K steps of it;
 * config the trace's config_json (NULL without a trace). Returns the exit
 * status, having said what went wrong. */
int cli_powersgd_main(options_t *opt, rs_model_t *model, int use_inline,
                      const char *config);

void cli_print_text(const report_t *r);
void cli_print_json(const report_t *r);
/* o (a jansson object), pretty-printed on stdout and freed: 0. */
struct json_t;
int cli_dump_json(struct json_t *o);
/* Where each worker stopped, on stderr, after a fault ended the run. */
void cli_print_watchdog(rs_run_t *run);
/* The exit status for a run's status code. */
int cli_exit_code(int status);
const char *cli_init_name(rs_init_t init);
/* "  network    latency ..., bandwidth ... per link[, reduce ...]", no
 * newline: the network model's line in a report. */
void cli_print_network(const rs_netmodel_t *net);
/* Algorithm a's row (rs_algo_info): what it needs and offers. For a value
 * that names no algorithm (auto) every flag is 0 and segment_bytes 0. */
static inline rs_algo_info_t cli_algo_info(rs_algorithm_t a) {
  rs_algo_info_t info = {0};
  (void)rs_algo_info(a, &info); /* (untouched when a is none) */
  return info;
}
/* Can algorithm a run under net (--algo all shows it)? As a run says
 * (rs_algo_fits): hier only on nodes, nvls only on one node whose switch
 * reduces. */
static inline int cli_algo_fits(const rs_netmodel_t *net, rs_algorithm_t a) {
  return (unsigned)a < RS_ALGO_COUNT && rs_algo_fits(net, a, NULL) == RS_OK;
}
/* How many algorithms --algo all shows under net, and the i-th of them
 * (0 <= i < cli_algos(net)), in the table's order. */
static inline int cli_algos(const rs_netmodel_t *net) {
  int n = 0;
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    n += cli_algo_fits(net, (rs_algorithm_t)a);
  return n;
}
static inline rs_algorithm_t cli_algo_nth(const rs_netmodel_t *net, int i) {
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    if (cli_algo_fits(net, (rs_algorithm_t)a) && i-- == 0)
      return (rs_algorithm_t)a;
  return RS_ALGO_COUNT; /* (past the last) */
}
/* text for a text report: a copy in buf (cut to size, ending "...") with
 * control characters replaced by '?' (rs_one_line, as error messages do),
 * so a name holding ESC, CR or LF cannot drive the terminal. Returns buf. */
#define CLI_SAFE_MAX 1024
const char *cli_safe(const char *text, char *buf, size_t size);
/* Has everything written to stdout reached it? Flushes stdout; returns 0
 * if so, else -1 with "<what> was not delivered: stdout: <reason>" in err
 * (a full disk, /dev/full, a closed descriptor), and the stream's error
 * flag cleared, so a loss is said once. A report that is lost must not
 * leave an exit status that says all went well. */
int cli_stdout_lost(const char *what, char *err, size_t size);
/* A job of several runs (ringsim step's threads, PowerSGD's all-reduces)
 * failed, or was interrupted, after some of its runs were written to
 * trace (NULL: none): their rows, still "ok", say so with error
 * (rs_trace_mark_written); if they cannot, stderr says that. */
void cli_trace_mark_job(rs_trace_t *trace, int interrupted,
                        const char *error);
/* rs_trace_open for the command: the trace at path (err RS_ERRMSG_MAX
 * bytes), its writer waiting for the lock RINGSIM_TRACE_WAIT seconds if
 * that is set (refused unless 0 to 1e6), else the library's 5 minutes. */
int cli_trace_open(const char *path, rs_trace_t **trace, char *err);
/* "1.50 MiB" */
void cli_human_bytes(double bytes, char *buf, size_t size);

/* model.c: `ringsim model`; returns the exit status. model is NULL for
 * --like nccl without --params (nccl-tests' sweep of single buffers). */
int cli_run_model(const options_t *opt, const rs_model_t *model);

/* bench.c: nccl-tests' table (src/common.cu writeResultHeader, its row
 * format and writeResultFooter), for bench and model --like nccl: the
 * three header lines, names and units appended to the column heads
 * (each starts with its own spacing); a row's five leading columns
 * (size, count, type, redop, root -1); one block (time, algbw, busbw,
 * #wrong: N/A unless checked), a row having two (out-of-place,
 * in-place); and the footer with the busbw averaged over every block. */
void cli_nccl_tests_head(const char *names, const char *units);
void cli_nccl_tests_lead(size_t bytes, size_t count, const char *type,
                         const char *redop);
void cli_nccl_tests_block(double time_us, double algbw, double busbw,
                          int checked, uint64_t wrong);
void cli_nccl_tests_foot(uint64_t wrong, double avg_busbw);

#endif /* RINGSIM_CLI_H */
