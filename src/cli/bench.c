/* bench.c - `ringsim bench`: an nccl-tests style sweep (all_reduce_perf).
 *
 * For each W and each size, one run: the worker threads are created once,
 * run the all-reduce --warmup times and then -n timed times (the first
 * result is checked against the exact reference: #wrong), and the direct
 * mean over the same W buffers is timed on one thread as "ref". The ring
 * runs in NCCL's slice loop order unless --loop steps asks for the
 * textbook one that ringsim itself runs by default.
 *
 * nccl-tests' table: each row has an out-of-place and an in-place block.
 * ringsim's all-reduce is in place, so the two blocks are two runs of it,
 * one after the other, each with its own warm-up, timed iterations and
 * check: real times, which differ by the noise between runs. -J writes
 * nccl-tests' JSON file (its keys, whole at the end, by a rename).
 *
 * Without -n, a time budget keeps big rings from running for hours (W=4096
 * takes a minute per iteration): the warm-up stops once it has taken
 * BUDGET_WARMUP_S, and the timed iterations are cut to what fits in
 * BUDGET_TIMED_S at the warm-up's pace. A size that runs longer than a
 * second shows its progress on stderr.
 */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "option.h"

/* bench's checks across its options, once they are read. Returns -1 to
 * go on, or EXIT_USAGE having said why. */
static int check_bench(options_t *o) {
  int rc = cli_check_auto_mpi(o);
  if (rc >= 0)
    return rc;
  /* NCCL's slice loop is the ring's: the others run their own order. */
  if (!cli_algo_info(o->config.algo).slices && !o->given[OPT_LOOP])
    o->config.slices = 0;
  if (o->algo_all && o->config.direct)
    return cli_refuse(CLI_BENCH, "--direct is refused by rd and rhd (they "
                                 "reduce into regions their peers may still "
                                 "read); --algo all runs them");
  if (o->algo_all && o->given[OPT_LOOP] && o->config.slices)
    return cli_refuse(CLI_BENCH, "--loop slices is the ring's; --algo all "
                                 "runs the others too");
  if (o->bench.max_bytes < o->bench.min_bytes)
    return cli_refuse(CLI_BENCH, "--maxbytes is smaller than --minbytes");
  /* nccl-tests' flags: -g is W, -t one thread, -a one time, -J a file */
  if (o->given[OPT_NGPUS] && o->given[OPT_WORKERS])
    return cli_refuse(CLI_BENCH, "--ngpus (-g) and --workers (-w) both give "
                                 "W: give one");
  if (o->given[OPT_NGPUS])
    o->bench.worker_count = 1; /* (workers[0] holds it) */
  if (o->bench.nthreads != 1)
    return cli_refuse(CLI_BENCH,
                      "--nthreads %d: one process drives every worker here "
                      "(nccl-tests' -t 1); give the total as -g %d",
                      o->bench.nthreads,
                      o->bench.nthreads * o->bench.workers[0]);
  if (o->config.mpi && o->bench.rank_average != 0 &&
      o->given[OPT_RANK_AVERAGE])
    return cli_refuse(CLI_BENCH,
                      "--average %d: over --transport mpi the time is rank "
                      "0's (nccl-tests' -a 0); the processes' times are not "
                      "combined",
                      o->bench.rank_average);
  const char *file = o->bench.output_file;
  if (file) {
    const char *dot = strrchr(file, '.');
    if (!dot || strchr(dot, '/') || strcasecmp(dot, ".json") != 0)
      return cli_refuse(CLI_BENCH,
                        "--output_file '%.200s': nccl-tests writes JSON only "
                        "to a name ending .json",
                        file);
    if (o->bench.worker_count > 1)
      return cli_refuse(CLI_BENCH, "--output_file: nccl-tests' JSON holds one "
                                   "W; give one -w (or -g)");
  }
  return -1;
}

/* -J: nccl-tests' JSON file, written whole at the end: a temporary file
 * beside it, made before the sweep (so an unwritable place is refused
 * first), renamed over it. */
typedef struct json_file {
  char *tmp;     /* NULL: no -J */
  json_t *root;  /* the object, its "results" filled as rows come */
  json_t *results;
} json_file_t;

static int json_file_open(const options_t *o, json_file_t *j) {
  const char *path = o->bench.output_file;
  size_t len = strlen(path);
  j->tmp = malloc(len + 16);
  if (!j->tmp)
    abort();
  snprintf(j->tmp, len + 16, "%s.tmp.XXXXXX", path);
  int fd = mkstemp(j->tmp);
  if (fd < 0) {
    int e = errno;
    free(j->tmp);
    j->tmp = NULL;
    return cli_refuse(CLI_BENCH, "--output_file '%.200s': cannot write it: %s",
                      path, strerror(e));
  }
  fchmod(fd, 0644); /* (mkstemp makes 0600; an output is for sharing) */
  close(fd);
  return -1;
}

static void json_file_drop(json_file_t *j) {
  if (j->tmp) {
    unlink(j->tmp);
    free(j->tmp);
  }
  json_decref(j->root);
  *j = (json_file_t){0};
}

/* nccl-tests writes its booleans as the strings "true" and "false". */
static json_t *nccl_bool(int value) {
  return json_string(value ? "true" : "false");
}

static json_t *now_text(void) {
  char text[64];
  time_t now = time(NULL);
  strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", localtime(&now));
  return json_string(text);
}

extern char **environ;

/* The object up to its results: nccl-tests' version 3 file, for W. */
static void json_file_begin(const options_t *o, int W, int argc, char **argv,
                            json_file_t *j) {
  json_t *root = json_object(), *args = json_array(), *env = json_array();
  json_object_set_new(root, "version", json_integer(3));
  json_object_set_new(root, "start_time", now_text());
  json_array_append_new(args, json_string("ringsim"));
  for (int i = 0; i < argc; i++)
    json_array_append_new(args, json_string(argv[i]));
  json_object_set_new(root, "args", args);
  for (char **e = environ; e && *e; e++)
    json_array_append_new(env, json_string(*e));
  json_object_set_new(root, "env", env);
  json_object_set_new(root, "nccl_version", json_null()); /* (no NCCL) */
  json_object_set_new(root, "ringsim_version", json_string(RS_VERSION));
  json_t *c = json_object();
  json_object_set_new(c, "nthreads", json_integer(1));
  json_object_set_new(c, "ngpus", json_integer(W));
  json_object_set_new(c, "minimum_bytes",
                      json_integer((json_int_t)o->bench.min_bytes));
  json_object_set_new(c, "maximum_bytes",
                      json_integer((json_int_t)o->bench.max_bytes));
  if (o->bench.step_bytes)
    json_object_set_new(c, "step_bytes",
                        json_integer((json_int_t)o->bench.step_bytes));
  else
    json_object_set_new(c, "step_factor", json_integer(o->bench.factor));
  json_object_set_new(c, "warmup_iters", json_integer(o->bench.warmup));
  json_object_set_new(c, "iterations", json_integer(o->bench.iters));
  json_object_set_new(c, "aggregated_iterations", json_integer(1));
  json_object_set_new(c, "validation", json_integer(o->bench.check));
  json_object_set_new(c, "graph", json_integer(0));
  json_object_set_new(c, "blocking_collectives", nccl_bool(0));
  json_object_set_new(c, "per_iter_timing", nccl_bool(0));
  json_object_set_new(c, "per_iter_skip", json_integer(0));
  json_object_set_new(c, "parallel_init", nccl_bool(0));
  json_t *devices = json_array();
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  for (int r = 0; r < W; r++) {
    json_t *d = json_object();
    json_object_set_new(d, "rank", json_integer(r));
    json_object_set_new(d, "group", json_integer(0));
    /* (over MPI the workers of other processes are theirs) */
    json_object_set_new(d, "pid", o->config.mpi ? json_null()
                                                : json_integer(getpid()));
    json_object_set_new(d, "hostname",
                        o->config.mpi ? json_null() : json_string(host));
    json_object_set_new(d, "device", json_integer(r));
    json_object_set_new(d, "device_hex", json_string(""));
    json_object_set_new(d, "device_info",
                        json_string("ringsim worker thread"));
    json_array_append_new(devices, d);
  }
  json_object_set_new(c, "devices", devices);
  json_object_set_new(root, "config", c);
  j->results = json_array();
  json_object_set_new(root, "results", j->results);
  j->root = root;
}

/* A pthread call on a mutex or condition variable of ours cannot fail
 * unless the program is broken. */
#define PT_CHECK(call)                                                         \
  do {                                                                         \
    if ((call) != 0)                                                           \
      abort();                                                                 \
  } while (0)

/* The time budget per size when -n (or --warmup) is not given. */
#define BUDGET_WARMUP_S 1.0
#define BUDGET_TIMED_S 2.0

/* Progress of the running size on stderr: a ticker thread looks every
 * quarter second, and once the size has run for PROGRESS_AFTER_S it says
 * where it is: on a terminal one line redrawn in place each second, else a
 * line every PROGRESS_EVERY_S. The run's callback (main thread) updates the
 * counts. */
#define PROGRESS_AFTER_S 1.0
#define PROGRESS_EVERY_S 5.0

typedef struct ticker {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  pthread_t thread;
  int started, stop, tty;
  /* The running size (running 0: none), under mu. */
  int running, W;
  size_t bytes;
  int done, warmup, iterations;
  double begin_s, printed_s; /* printed_s: last line, 0 if none yet */
} ticker_t;

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Print where the size is, if it is time to (mu held). */
static void ticker_print(ticker_t *t, double now) {
  if (!t->running || now - t->begin_s < PROGRESS_AFTER_S)
    return;
  if (t->printed_s > 0 &&
      now - t->printed_s < (t->tty ? 1.0 : PROGRESS_EVERY_S))
    return;
  int warm = t->done < t->warmup;
  fprintf(stderr,
          "%sringsim: bench: W=%d, %zu B: %d of %d %s iterations done, "
          "%.0f s so far%s",
          t->tty ? "\r" : "", t->W, t->bytes,
          warm ? t->done : t->done - t->warmup,
          warm ? t->warmup : t->iterations, warm ? "warm-up" : "timed",
          now - t->begin_s, t->tty ? "\033[K" : "\n");
  fflush(stderr);
  t->printed_s = now;
}

static void *ticker_main(void *arg) {
  ticker_t *t = arg;
  PT_CHECK(pthread_mutex_lock(&t->mu));
  while (!t->stop) {
    double now = mono_s();
    ticker_print(t, now);
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_nsec += 250000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&t->cond, &t->mu, &until);
  }
  PT_CHECK(pthread_mutex_unlock(&t->mu));
  return NULL;
}

static void ticker_start(ticker_t *t, int quiet) {
  pthread_condattr_t attr;
  *t = (ticker_t){.tty = isatty(STDERR_FILENO)};
  PT_CHECK(pthread_mutex_init(&t->mu, NULL));
  PT_CHECK(pthread_condattr_init(&attr));
  PT_CHECK(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC));
  PT_CHECK(pthread_cond_init(&t->cond, &attr));
  PT_CHECK(pthread_condattr_destroy(&attr));
  /* Without the thread (--quiet, or none could start) there is no
   * progress, but the sweep still runs. */
  t->started = !quiet && pthread_create(&t->thread, NULL, ticker_main, t) == 0;
}

static void ticker_stop(ticker_t *t) {
  PT_CHECK(pthread_mutex_lock(&t->mu));
  t->stop = 1;
  PT_CHECK(pthread_cond_signal(&t->cond));
  PT_CHECK(pthread_mutex_unlock(&t->mu));
  if (t->started)
    PT_CHECK(pthread_join(t->thread, NULL));
  PT_CHECK(pthread_cond_destroy(&t->cond));
  PT_CHECK(pthread_mutex_destroy(&t->mu));
}

/* A size starts (W > 0) or ends (W == 0; a line redrawn in place is
 * cleared). */
static void ticker_size(ticker_t *t, int W, size_t bytes, int warmup,
                        int iterations) {
  PT_CHECK(pthread_mutex_lock(&t->mu));
  if (!W && t->tty && t->printed_s > 0)
    fputs("\r\033[K", stderr);
  t->running = W > 0;
  t->W = W;
  t->bytes = bytes;
  t->done = 0;
  t->warmup = warmup;
  t->iterations = iterations;
  t->begin_s = mono_s();
  t->printed_s = 0;
  PT_CHECK(pthread_mutex_unlock(&t->mu));
}

/* rs_config_t's on_iteration. */
static void ticker_iteration(void *arg, int done, int warmup, int iterations) {
  ticker_t *t = arg;
  PT_CHECK(pthread_mutex_lock(&t->mu));
  t->done = done;
  t->warmup = warmup;
  t->iterations = iterations;
  PT_CHECK(pthread_mutex_unlock(&t->mu));
}

typedef struct bench_row {
  rs_algorithm_t algo;
  rs_algorithm_t chosen; /* --algo auto: the algorithm the run chose */
  int fastest;           /* --algo all: the fastest at its size */
  int workers;
  size_t bytes, count;
  double time_us, min_us, algbw, busbw, ref_us;
  uint64_t wrong;
  int warmup, iters; /* that ran */
  double mpi_us;     /* --transport mpi: MPI_Allreduce's time; -1: none */
} row_t;

/* What every run of the sweep on W workers shares: --algo auto's model
 * of this machine, measured for W (else NULL), the trace (or NULL) and
 * the progress line. */
typedef struct bench_sweep {
  const rs_netmodel_t *machine;
  rs_trace_t *trace;
  ticker_t *ticker;
} sweep_t;

/* One size on W workers (MPI_Allreduce timed too: time_mpi): returns 0,
 * or the failed run's exit status. */
static int bench_one(const options_t *o, const sweep_t *sw, int W, size_t count,
                     int time_mpi, row_t *row) {
  const rs_netmodel_t *machine = sw->machine;
  rs_trace_t *trace = sw->trace;
  ticker_t *ticker = sw->ticker;
  char text[128], err[RS_ERRMSG_MAX];
  snprintf(text, sizeof text,
           "{\"name\": \"bench\", \"params\": [{\"name\": \"g\", \"shape\": "
           "[%zu], \"dtype\": \"%s\"}]}",
           count, rs_dtype_name(o->bench.dtype));
  rs_model_t *m;
  rs_run_t *run = NULL;
  int status = 0;
  if (rs_model_parse(text, strlen(text), "bench", &m, err)) {
    fprintf(stderr, "ringsim: bench: %s\n", err);
    return EXIT_RUN;
  }
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  /* (the test knobs: the environment's, as for every run) */
  cfg.test = o->config.test;
  cfg.op = o->config.op;
  cfg.segment_bytes = o->config.segment_bytes;
  cfg.slots = o->config.slots;
  cfg.timeout_s = o->config.timeout_s;
  cfg.warmup = o->bench.warmup;
  cfg.iterations = o->bench.iters;
  /* (over MPI every process runs the same iterations: no time budget) */
  if (!o->given[OPT_ITERS] && o->bench.warmup > 0 && !o->config.mpi) {
    cfg.timed_budget_s = BUDGET_TIMED_S;
    cfg.warmup_budget_s = o->given[OPT_WARMUP] ? 0 : BUDGET_WARMUP_S;
  }
  cfg.traced = trace != NULL;
  cfg.on_iteration = ticker_iteration;
  cfg.on_iteration_arg = ticker;
  cfg.direct = o->config.direct;
  cfg.slices = o->config.slices;
  cfg.algo = o->config.algo;
  if (machine)
    cfg.machine = *machine;
  /* ref: the run's own reference, the direct mean of the same buffers on
   * one thread (exact inputs), timed over as many repetitions as the ring
   * gets, at most 20. */
  cfg.ref_reps = o->bench.iters < 20 ? o->bench.iters : 20;
  cfg.check_threads = 1; /* ... on one thread, before the run */
  if (o->config.mpi) { /* each process checks its own workers, after the run */
    cfg.mpi = 1;
    cfg.ref_reps = 1;
    cfg.check_threads = 0;
  }
  if (rs_run_create(&cfg, m, &run, err)) {
    fprintf(stderr, "ringsim: bench: W=%d, %zu elements: %s\n", W, count, err);
    status = EXIT_USAGE;
    goto done;
  }
  cli_signals_watch(run); /* a signal stops it (signals.c) */
  rs_run_fill(run, RS_INIT_EXACT, 0);
  if (trace)
    rs_run_set_trace(run, trace, NULL);

  ticker_size(ticker, W, count * rs_dtype_size(o->bench.dtype), o->bench.warmup,
              o->bench.iters);
  int rc = rs_run_execute(run);
  ticker_size(ticker, 0, 0, 0, 0);
  if (rc != RS_OK && rc != RS_ECHECK) {
    fprintf(stderr, "ringsim: bench: W=%d, %zu bytes: %s\n", W,
            count * rs_dtype_size(o->bench.dtype), rs_run_errmsg(run));
    if (rc == RS_EINTERRUPTED)
      cli_signal_said();
    status = EXIT_RUN;
    goto done;
  }
  const rs_result_t *res = rs_run_result(run);
  row->workers = W;
  row->chosen = rs_run_bucket_algo(run, 0);
  row->count = count;
  row->bytes = count * rs_dtype_size(o->bench.dtype);
  row->time_us = (double)res->wall_ns / 1e3;
  row->min_us = (double)res->wall_min_ns / 1e3;
  row->algbw = (double)row->bytes / (double)res->wall_ns; /* B/ns = GB/s */
  row->busbw = rs_busbw(row->algbw, W);
  row->ref_us = (double)res->ref_ns / 1e3;
  row->warmup = res->warmup;
  row->iters = res->iterations;
  row->wrong = rs_run_param_check(run, 0)->wrong;
  if (!res->identical)
    row->wrong = row->wrong ? row->wrong : 1;
  row->mpi_us = -1;
  uint64_t mpi_ns;
  if (o->config.mpi && time_mpi &&
      rs_run_time_mpi_allreduce(run, o->bench.warmup, res->iterations, &mpi_ns,
                                err) == RS_OK)
    row->mpi_us = (double)mpi_ns / 1e3;
  if (rs_run_trace_error(run)) {
    fprintf(stderr, "ringsim: bench: %s\n", rs_run_trace_error(run));
    status = EXIT_RUN;
  }
done:
  cli_signals_watch(NULL);
  rs_run_free(run);
  rs_model_free(m);
  return status;
}

static void print_header(const options_t *o, int W) {
  printf("# ringsim bench: %s all-reduce on %d worker threads, %d warm-up + "
         "%d timed iterations per size\n",
         o->algo_all ? "every algorithm's" : rs_algorithm_name(o->config.algo),
         W, o->bench.warmup, o->bench.iters);
  if (!o->given[OPT_ITERS] && o->bench.warmup > 0)
    printf("# time budget per size: %s%g s of timed iterations at the "
           "warm-up's pace; fewer iterations where they would take longer, "
           "as noted (-n fixes the count)\n",
           o->given[OPT_WARMUP] ? "" : "1 s of warm-up, ", BUDGET_TIMED_S);
  printf("# segment %zu B, %d slots per queue%s, %s queues, %s loop; "
         "ref = the direct mean of the same %d buffers on one thread\n",
         o->config.segment_bytes, o->config.slots,
         o->config.direct ? " (fewer where a sent region would be overwritten "
                            "before its release)"
                          : "",
         o->config.direct ? "direct (copy-free)" : "copying",
         o->algo_all ? "the ring in NCCL's slice, the others in their own"
         : o->config.slices ? "NCCL's slice"
                            : "step",
         W);
  if (o->config.mpi)
    printf("# over MPI: %d workers in blocks on %d processes; mpi = "
           "MPI_Allreduce over the %d processes, on the same buffers and "
           "communicator, in the same run (ref not timed)\n",
           W, o->bench.procs, o->bench.procs);
  printf("#\n");
  if (o->algo_all)
    printf("# every algorithm at every size; * marks the fastest\n");
  if (o->config.algo == RS_ALGO_AUTO)
    printf("# auto: per size the algorithm the alpha-beta model predicts "
           "fastest (algo: the one it ran)\n");
  printf("# out-of-place, in-place: two runs of ringsim's in-place "
         "all-reduce, one after the other, each with its own warm-up, timed "
         "iterations and check (no copy to another buffer)%s\n",
         o->bench.check ? "" : "; -c 0: #wrong not reported (N/A)");
  printf("#\n");
  /* nccl-tests' three lines (writeResultHeader), then ringsim's columns */
  char names[64], units[64];
  snprintf(names, sizeof names, "  %10s  %8s%s%s", "ref", "time/ref",
           o->config.mpi ? "         mpi" : "",
           o->algo_all || o->config.algo == RS_ALGO_AUTO ? "  algo" : "");
  snprintf(units, sizeof units, "  %10s  %8s%s", "(us)", "",
           o->config.mpi ? "        (us)" : "");
  cli_nccl_tests_head(names, units);
}

void cli_nccl_tests_head(const char *names, const char *units) {
  printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                 "
         "      in-place          \n",
         "", "", "", "", "");
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
         "%6s%s\n",
         "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
         "#wrong", "time", "algbw", "busbw", "#wrong", names);
  printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
         "%6s%s\n",
         "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
         "(us)", "(GB/s)", "(GB/s)", "", units);
}

/* value in width characters, as nccl-tests prints its times and
 * bandwidths: 2 decimals, else 1, else none, else an exponent. */
static void fit(double value, int width, char *text, size_t size) {
  static const char *const forms[] = {"%*.2f", "%*.1f", "%*.0f"};
  for (int i = 0; i < 3; i++)
    if (snprintf(text, size, forms[i], width, value) <= width)
      return;
  snprintf(text, size, width >= 7 ? "%*.1e" : "%*.0e", width, value);
}

/* One block of a row: time, algbw, busbw, #wrong (N/A unchecked). */
void cli_nccl_tests_block(double time_us, double algbw, double busbw,
                          int checked, uint64_t wrong) {
  char t[32], alg[32], bus[32];
  fit(time_us, 7, t, sizeof t);
  fit(algbw, 6, alg, sizeof alg);
  fit(busbw, 6, bus, sizeof bus);
  printf("  %7s  %6s  %6s", t, alg, bus);
  if (checked)
    printf("  %6g", (double)wrong);
  else
    printf("  %6s", "N/A");
}

static void print_block(const options_t *o, const row_t *r) {
  cli_nccl_tests_block(r->time_us, r->algbw, r->busbw, o->bench.check,
                       r->wrong);
}

void cli_nccl_tests_lead(size_t bytes, size_t count, const char *type,
                         const char *redop) {
  printf("%12zu  %12zu  %8s  %6s  %6d", bytes, count, type, redop, -1);
}

void cli_nccl_tests_foot(uint64_t wrong, double avg_busbw) {
  printf("# %-20s : %llu %s\n", "Out of bounds values",
         (unsigned long long)wrong, wrong ? "FAILED" : "OK");
  printf("# %-20s : %g \n", "Avg bus bandwidth", avg_busbw);
  printf("#\n# Collective test concluded: all_reduce_perf\n");
}

/* A block of -J's row, and --json's out_of_place: nccl-tests' keys. */
static json_t *nccl_block(const options_t *o, const row_t *r) {
  json_t *b = json_object();
  json_object_set_new(b, "time", json_real(r->time_us));
  json_object_set_new(b, "alg_bw", json_real(r->algbw));
  json_object_set_new(b, "bus_bw", json_real(r->busbw));
  json_object_set_new(b, "nwrong", o->bench.check
                                       ? json_real((double)r->wrong)
                                       : json_null());
  return b;
}

static void print_row(const options_t *o, const row_t *oop, const row_t *r) {
  const char *op = rs_op_name(o->config.op);
  if (o->json) {
    json_t *j = json_pack(
        "{s:s, s:s, s:i, s:I, s:I, s:s, s:s, s:f, s:f, s:f, s:f, s:I, s:f, "
        "s:f, s:i, s:i, s:b, s:s}",
        "schema", "ringsim.bench/1", "algo", rs_algorithm_name(r->algo),
        "workers", r->workers, "size", (json_int_t)r->bytes, "count",
        (json_int_t)r->count, "type", cli_datatype_name(o->bench.dtype),
        "redop", op, "time_us", r->time_us, "min_time_us", r->min_us,
        "algbw_gbs", r->algbw, "busbw_gbs", r->busbw, "wrong",
        (json_int_t)r->wrong, "ref_us", r->ref_us, "time_over_ref",
        r->ref_us > 0 ? r->time_us / r->ref_us : 0.0, "warmup", r->warmup,
        "iters", r->iters, "fastest", r->fastest, "chosen",
        rs_algorithm_name(r->chosen));
    json_object_set_new(j, "root", json_integer(-1));
    if (!o->bench.check)
      json_object_set_new(j, "wrong", json_null());
    json_t *b = json_object(); /* the first run's (the table's first block) */
    json_object_set_new(b, "time_us", json_real(oop->time_us));
    json_object_set_new(b, "min_time_us", json_real(oop->min_us));
    json_object_set_new(b, "algbw_gbs", json_real(oop->algbw));
    json_object_set_new(b, "busbw_gbs", json_real(oop->busbw));
    json_object_set_new(b, "wrong", o->bench.check
                                        ? json_integer((json_int_t)oop->wrong)
                                        : json_null());
    json_object_set_new(b, "warmup", json_integer(oop->warmup));
    json_object_set_new(b, "iters", json_integer(oop->iters));
    json_object_set_new(j, "out_of_place", b);
    if (o->config.mpi) {
      json_object_set_new(j, "procs", json_integer(o->bench.procs));
      json_object_set_new(j, "ref_us", json_null()); /* (not timed) */
      json_object_set_new(j, "time_over_ref", json_null());
      json_object_set_new(j, "mpi_allreduce_us",
                          r->mpi_us >= 0 ? json_real(r->mpi_us) : json_null());
    }
    char *line = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
    puts(line);
    free(line);
    json_decref(j);
  } else {
    if (r->warmup != o->bench.warmup || r->iters != o->bench.iters ||
        oop->warmup != o->bench.warmup || oop->iters != o->bench.iters)
      printf("# %zu B: out-of-place %d warm-up + %d, in-place %d warm-up + %d "
             "timed iterations (the time budget)\n",
             r->bytes, oop->warmup, oop->iters, r->warmup, r->iters);
    cli_nccl_tests_lead(r->bytes, r->count, cli_datatype_name(o->bench.dtype),
                        op);
    print_block(o, oop);
    print_block(o, r);
    if (o->config.mpi) /* (no ref over MPI: nothing was timed, docs/mpi.md) */
      printf("  %10s  %8s", "-", "-");
    else
      printf("  %10.2f  %8.2f", r->ref_us,
             r->ref_us > 0 ? r->time_us / r->ref_us : 0.0);
    if (o->config.mpi && r->mpi_us >= 0)
      printf("  %10.2f", r->mpi_us);
    else if (o->config.mpi)
      printf("  %10s", "-");
    if (o->algo_all)
      printf("  %s%s", rs_algorithm_name(r->algo), r->fastest ? " *" : "");
    else if (o->config.algo == RS_ALGO_AUTO)
      printf("  auto: %s", rs_algorithm_name(r->chosen));
    printf("\n");
  }
  fflush(stdout);
}

/* -J's row: nccl-tests' keys (root as its "%6i" text). */
static json_t *nccl_row(const options_t *o, const row_t *oop, const row_t *r) {
  json_t *j = json_object();
  json_object_set_new(j, "size", json_integer((json_int_t)r->bytes));
  json_object_set_new(j, "count", json_integer((json_int_t)r->count));
  json_object_set_new(j, "type",
                      json_string(cli_datatype_name(o->bench.dtype)));
  json_object_set_new(j, "redop", json_string(rs_op_name(o->config.op)));
  json_object_set_new(j, "root", json_string("    -1"));
  json_object_set_new(j, "out_of_place", nccl_block(o, oop));
  json_object_set_new(j, "in_place", nccl_block(o, r));
  json_object_set_new(j, "actual_iterations", json_integer(r->iters));
  /* (nccl-tests': ""; here the algorithm where the table names it) */
  json_object_set_new(
      j, "experiment_name",
      json_string(o->algo_all ? rs_algorithm_name(r->algo)
                  : o->config.algo == RS_ALGO_AUTO
                      ? rs_algorithm_name(r->chosen)
                      : ""));
  return j;
}

/* -J's closing keys, the file written and renamed over its name: 0, or
 * -1 having said why. */
static int json_file_finish(const options_t *o, json_file_t *j,
                            uint64_t wrong, double avg) {
  json_t *bounds = json_object(), *bw = json_object();
  json_object_set_new(bounds, "count", json_integer((json_int_t)wrong));
  json_object_set_new(bounds, "okay", nccl_bool(wrong == 0));
  json_object_set_new(j->root, "out_of_bounds", bounds);
  json_object_set_new(bw, "bandwidth", json_real(avg));
  json_object_set_new(bw, "okay", json_string("unchecked"));
  json_object_set_new(j->root, "average_bus_bandwidth", bw);
  json_object_set_new(j->root, "errors", json_array());
  json_object_set_new(j->root, "end_time", now_text());
  FILE *f = fopen(j->tmp, "w");
  int ok = f && json_dumpf(j->root, f, JSON_PRESERVE_ORDER |
                                           JSON_REAL_PRECISION(9)) == 0;
  ok = f && fputc('\n', f) != EOF && ok;
  ok = f && fclose(f) == 0 && ok;
  if (ok && rename(j->tmp, o->bench.output_file) == 0) {
    free(j->tmp);
    j->tmp = NULL; /* (renamed: nothing to remove) */
    return 0;
  }
  fprintf(stderr, "ringsim: bench: --output_file '%s': %s\n",
          o->bench.output_file, strerror(errno));
  return -1;
}

int cli_bench(int argc, char **argv) {
  options_t o = {0};
  cli_options_init(CLI_BENCH, &o);
  int rc = cli_walk(CLI_BENCH, argc, argv, &o, NULL);
  if (rc < 0)
    rc = check_bench(&o);
  if (rc >= 0)
    return rc;
  json_file_t jfile = {0};
  rs_trace_t *trace = NULL;
  char err[RS_ERRMSG_MAX];
  int rank = 0;
  if (o.config.mpi && rs_mpi_init(&rank, &o.bench.procs, err)) {
    fprintf(stderr, "ringsim: bench: %s\n", err);
    return EXIT_USAGE;
  }
  /* over MPI rank 0 writes the trace, every process's transfers */
  int opened = o.trace && rank == 0 ? cli_trace_open(o.trace, &trace, err) : 0;
  if (opened) { /* bad input (2), or its lock not had in time (3) */
    fprintf(stderr, "ringsim: %s\n", err);
    return cli_exit_code(opened);
  }
  if (o.bench.output_file && rank == 0 &&
      (rc = json_file_open(&o, &jfile)) >= 0) {
    rs_trace_close(trace);
    return rc;
  }
  ticker_t ticker;
  ticker_start(&ticker, o.quiet);
  int status = 0;
  uint64_t wrong = 0;
  double busbw_sum = 0; /* for nccl-tests' closing average: over both */
  int rows = 0;          /* blocks of every row */
  /* A signal stops the sweep between runs too (main exits 128 + it). */
  for (int k = 0; k < o.bench.worker_count && status == 0 && !cli_signal();
       k++) {
    int W = o.bench.workers[k];
    if (jfile.tmp)
      json_file_begin(&o, W, argc, argv, &jfile);
    if (!o.json && jfile.tmp && k == 0)
      printf("# Writing JSON output to %s (whole, at the end)\n",
             o.bench.output_file);
    if (!o.json)
      print_header(&o, W);
    /* auto: this machine measured once for W, used at every size */
    rs_netmodel_t machine;
    if (o.config.algo == RS_ALGO_AUTO &&
        rs_machine_measure(W, o.config.segment_bytes, o.config.slots,
                           o.config.direct, &machine, err)) {
      fprintf(stderr, "ringsim: bench: W=%d: %s\n", W, err);
      status = EXIT_RUN;
      break;
    }
    if (o.config.algo == RS_ALGO_AUTO && !o.json)
      printf("# auto, W=%d: this machine measured: latency %.3f us, "
             "bandwidth %.3f GB/s, reduce %.3f GB/s\n",
             W, (double)machine.link.latency_ns / 1e3,
             (double)machine.link.bandwidth / 1e9,
             (double)machine.reduce_rate / 1e9);
    const sweep_t sweep = {o.config.algo == RS_ALGO_AUTO ? &machine : NULL,
                           trace, &ticker};
    for (size_t bytes = o.bench.min_bytes;
         bytes <= o.bench.max_bytes && status == 0 && !cli_signal();) {
      size_t count = bytes / rs_dtype_size(o.bench.dtype);
      /* One algorithm, or (--algo all) each in turn, the fastest marked. */
      row_t size_rows[RS_ALGO_COUNT] = {{0}}, oop_rows[RS_ALGO_COUNT] = {{0}};
      int n = 0, best = 0;
      const int first = o.algo_all ? 0 : (int)o.config.algo;
      const int last = o.algo_all ? RS_ALGO_COUNT - 1 : (int)o.config.algo;
      for (int a = first; a <= last && status == 0 && !cli_signal(); a++) {
        if (o.algo_all && !cli_algo_fits(&o.config.net, (rs_algorithm_t)a))
          continue;
        options_t one = o;
        one.config.algo = (rs_algorithm_t)a;
        one.config.slices =
            cli_algo_info((rs_algorithm_t)a).slices || !o.algo_all
                ? o.config.slices
                : 0;
        size_rows[n].algo = oop_rows[n].algo = one.config.algo;
        /* out-of-place, then in-place: two runs (MPI timed in the second) */
        status = bench_one(&one, &sweep, W, count ? count : 1, 0, &oop_rows[n]);
        if (status == 0 && !cli_signal())
          status =
              bench_one(&one, &sweep, W, count ? count : 1, 1, &size_rows[n]);
        else if (status == 0)
          break;
        if (status == 0 && size_rows[n].time_us < size_rows[best].time_us)
          best = n;
        n += status == 0;
      }
      size_rows[best].fastest = o.algo_all && n > 0;
      for (int i = 0; i < n; i++) {
        print_row(&o, &oop_rows[i], &size_rows[i]);
        if (o.bench.check)
          wrong += oop_rows[i].wrong + size_rows[i].wrong;
        busbw_sum += oop_rows[i].busbw + size_rows[i].busbw;
        rows += 2;
        if (jfile.tmp)
          json_array_append_new(jfile.results,
                                nccl_row(&o, &oop_rows[i], &size_rows[i]));
      }
      size_t next = o.bench.step_bytes ? bytes + o.bench.step_bytes
                                       : bytes * (size_t)o.bench.factor;
      if (next <= bytes)
        break;
      bytes = next;
    }
    if (!o.json && k + 1 < o.bench.worker_count)
      printf("\n");
  }
  double avg = rows ? busbw_sum / rows : 0.0;
  if (!o.json && status == 0 && !cli_signal()) /* (writeResultFooter's) */
    cli_nccl_tests_foot(wrong, avg);
  ticker_stop(&ticker);
  rs_trace_close(trace);
  if (jfile.tmp && status == 0 && !cli_signal() &&
      json_file_finish(&o, &jfile, wrong, avg))
    status = EXIT_RUN;
  json_file_drop(&jfile);
  return status ? status : wrong ? EXIT_CHECK : 0;
}
