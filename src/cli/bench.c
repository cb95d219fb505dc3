/* bench.c - `ringsim bench`: an nccl-tests style sweep (all_reduce_perf).
 *
 * For each W and each size, one run: the worker threads are created once,
 * run the all-reduce --warmup times and then -n timed times (the first
 * result is checked against the exact reference: #wrong), and the direct
 * mean over the same W buffers is timed on one thread as "ref". The ring
 * runs in NCCL's slice loop order unless --loop steps asks for the
 * textbook one that ringsim itself runs by default.
 *
 * Without -n, a time budget keeps big rings from running for hours (W=4096
 * takes a minute per iteration): the warm-up stops once it has taken
 * BUDGET_WARMUP_S, and the timed iterations are cut to what fits in
 * BUDGET_TIMED_S at the warm-up's pace. A size that runs longer than a
 * second shows its progress on stderr.
 */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ringsim/ringsim.h"

static const char bench_usage[] =
    "usage: ringsim bench [options]\n"
    "\n"
    "Sweep all-reduce sizes as nccl-tests' all_reduce_perf does, on W\n"
    "worker threads created once per size, and print per size: size, count,\n"
    "type, redop, time, algbw, busbw, #wrong, and ref: the direct mean of\n"
    "the same W buffers on one thread, with the ratio time/ref.\n"
    "\n"
    "  -w, --workers LIST      W, or a list to sweep: 4 or 4,8,16 (default 4)\n"
    "  -b, --minbytes N        smallest size per worker (default 8)\n"
    "  -e, --maxbytes N        largest size per worker (default 64M)\n"
    "  -f, --stepfactor F      multiply the size by F each step (default 2)\n"
    "  -i, --stepbytes N       or add N bytes each step instead\n"
    "  -n, --iters N           timed iterations per size (default 20, fewer\n"
    "                          where they would take more than 2 s)\n"
    "      --warmup N          warm-up iterations per size (default 5, fewer\n"
    "                          where they would take more than 1 s)\n"
    "  -d, --datatype TYPE     float (default), double, half or bfloat16\n"
    "                          (nccl-tests' names for f32, f64, f16, bf16)\n"
    "      --op OP             sum (default, as nccl-tests), avg, min, max,\n"
    "                          prod\n"
    "      --segment-bytes N   largest message (default 256K)\n"
    "      --slots K           slots per channel (default 8)\n"
    "      --timeout SEC       per wait (default 60)\n"
    "      --direct            copy-free channels (NCCL's direct mode)\n"
    "      --algo NAME         ring (default), rd, rhd, linear or tree; all:\n"
    "                          each in turn, the fastest marked; auto: per\n"
    "                          size the one the alpha-beta model predicts\n"
    "                          fastest on this machine (measured once per\n"
    "                          W), named in the row\n"
    "      --loop ORDER        slices (default: NCCL's loop, all steps on one\n"
    "                          slice at a time) or steps (as ringsim runs\n"
    "                          by default: each step moves whole chunks)\n"
    "      --trace FILE        trace every run into FILE (off by default)\n"
    "      --json              one JSON object per size (JSON Lines)\n"
    "      --transport KIND    shm (default) or mpi: under mpirun, the\n"
    "                          workers spread over the processes, and per\n"
    "                          size MPI_Allreduce's time over the processes\n"
    "                          on the same buffers (column mpi; docs/mpi.md)\n"
    "  -h, --help              this help\n"
    "\n"
    "Sizes take K, M, G suffixes (powers of 1024). algbw = S/t, busbw =\n"
    "algbw x 2(W-1)/W, in GB/s (10^9). Inputs are exact (multiples of 1/16),\n"
    "so #wrong counts every element that differs from the reference (for\n"
    "half and bfloat16 their range narrows so they stay exact, up to 2048\n"
    "and 256 workers; beyond, #wrong counts elements outside the bound).\n"
    "exit status: 0 all good; 1 some #wrong; 2 bad usage; 3 a run failed;\n"
    "130, 143, 129: SIGINT, SIGTERM or SIGHUP stopped it\n";

typedef struct bench_opts {
  int workers[64];
  int worker_count;
  size_t min_bytes, max_bytes, step_bytes;
  long factor;
  int iters, warmup;
  int iters_given, warmup_given; /* no time budget for what is given */
  rs_op_t op;
  rs_dtype_t dtype;
  size_t segment_bytes;
  int slots;
  double timeout_s;
  const char *trace;
  int json;
  int direct;
  int slices;
  int loop_given;
  rs_algorithm_t algo;
  int all; /* --algo all: every algorithm at every size */
  int mpi; /* --transport mpi */
  int procs;
} bench_opts_t;

/* nccl-tests' names for the element types (its -d option). */
static const struct {
  const char *name;
  rs_dtype_t dtype;
} datatypes[] = {{"float", RS_DTYPE_F32},
                 {"double", RS_DTYPE_F64},
                 {"half", RS_DTYPE_F16},
                 {"bfloat16", RS_DTYPE_BF16}};

static const char *datatype_name(rs_dtype_t dtype) {
  for (size_t i = 0; i < sizeof datatypes / sizeof *datatypes; i++)
    if (datatypes[i].dtype == dtype)
      return datatypes[i].name;
  return "?";
}

/* The option getopt_long just returned, as the user wrote it: "-n",
 * "--iters" or an abbreviation such as "--warm", without any "=value". */
static const char *given_option(char **argv, int opt, char *buf, size_t size) {
  const char *word =
      optarg == argv[optind - 1] ? argv[optind - 2] : argv[optind - 1];
  if (strncmp(word, "--", 2) == 0)
    snprintf(buf, size, "%.*s", (int)strcspn(word, "="), word);
  else
    snprintf(buf, size, "-%c", opt);
  return buf;
}

/* "ringsim: bench: <option as given> '<value>': <expected> (see ...)". */
static int bad_value(char **argv, int opt, const char *expected) {
  char name[64], message[RS_ERRMSG_MAX];
  snprintf(message, sizeof message, "bench: %s '%s': %s",
           given_option(argv, opt, name, sizeof name), optarg, expected);
  return cli_usage_error("%s", message);
}

static int parse_workers(const char *text, bench_opts_t *o) {
  char copy[512];
  if (snprintf(copy, sizeof copy, "%s", text) >= (int)sizeof copy)
    return -1;
  char *save = NULL;
  o->worker_count = 0;
  for (char *t = strtok_r(copy, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    long v;
    if (o->worker_count == 64 || cli_parse_long(t, 1, RS_MAX_WORKERS, &v))
      return -1;
    o->workers[o->worker_count++] = (int)v;
  }
  return o->worker_count ? 0 : -1;
}

static int parse_bench_args(int argc, char **argv, bench_opts_t *o) {
  enum {
    O_WARMUP = 256,
    O_OP,
    O_SEG,
    O_SLOTS,
    O_TIMEOUT,
    O_TRACE,
    O_JSON,
    O_DIRECT,
    O_LOOP,
    O_ALGO,
    O_TRANSPORT
  };
  static const struct option opts[] = {
      {"workers", required_argument, NULL, 'w'},
      {"minbytes", required_argument, NULL, 'b'},
      {"maxbytes", required_argument, NULL, 'e'},
      {"stepfactor", required_argument, NULL, 'f'},
      {"stepbytes", required_argument, NULL, 'i'},
      {"iters", required_argument, NULL, 'n'},
      {"warmup", required_argument, NULL, O_WARMUP},
      {"op", required_argument, NULL, O_OP},
      {"datatype", required_argument, NULL, 'd'},
      {"segment-bytes", required_argument, NULL, O_SEG},
      {"slots", required_argument, NULL, O_SLOTS},
      {"timeout", required_argument, NULL, O_TIMEOUT},
      {"trace", required_argument, NULL, O_TRACE},
      {"json", no_argument, NULL, O_JSON},
      {"direct", no_argument, NULL, O_DIRECT},
      {"loop", required_argument, NULL, O_LOOP},
      {"algo", required_argument, NULL, O_ALGO},
      {"transport", required_argument, NULL, O_TRANSPORT},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  *o = (bench_opts_t){.workers = {4},
                      .worker_count = 1,
                      .min_bytes = 8,
                      .max_bytes = 64u << 20,
                      .factor = 2,
                      .iters = 20,
                      .warmup = 5,
                      .op = RS_OP_SUM,
                      .dtype = RS_DTYPE_F32,
                      .segment_bytes = RS_DEFAULT_SEGMENT_BYTES,
                      .slots = RS_DEFAULT_SLOTS,
                      .timeout_s = 60,
                      .slices = 1};
  long v;
  int opt;
  optind = 1;
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":w:b:e:f:i:n:d:h", opts, NULL)) !=
         -1) {
    switch (opt) {
    case '?':
      return cli_usage_error("bench: unknown option '%s'", argv[optind - 1]);
    case ':':
      return cli_usage_error("bench: option '%s' needs a value",
                             argv[optind - 1]);
    case 'h':
      fputs(bench_usage, stdout);
      return 0;
    case 'w':
      if (parse_workers(optarg, o))
        return bad_value(argv, opt,
                         "expected W or a list like 4,8,16, each in "
                         "1.." CLI_MAX_WORKERS_TEXT);
      break;
    case 'b':
    case 'e':
    case 'i': {
      size_t bytes;
      if (cli_parse_bytes(optarg, &bytes) || (opt != 'i' && bytes < 4))
        return bad_value(argv, opt,
                         opt == 'i' ? "expected bytes (K, M, G suffixes)"
                                    : "expected bytes, 4 or more (K, M, G "
                                      "suffixes)");
      *(opt == 'b'   ? &o->min_bytes
        : opt == 'e' ? &o->max_bytes
                     : &o->step_bytes) = bytes;
      break;
    }
    case 'f':
      if (cli_parse_long(optarg, 2, 1024, &o->factor))
        return bad_value(argv, opt, "expected 2..1024");
      break;
    case 'n':
    case O_WARMUP:
      if (cli_parse_long(optarg, opt == 'n' ? 1 : 0, 1000000, &v))
        return bad_value(argv, opt,
                         opt == 'n' ? "expected a count in 1..1000000"
                                    : "expected a count in 0..1000000");
      *(opt == 'n' ? &o->iters : &o->warmup) = (int)v;
      *(opt == 'n' ? &o->iters_given : &o->warmup_given) = 1;
      break;
    case O_OP: {
      int op = rs_op_parse(optarg);
      if (op < 0)
        return bad_value(argv, opt, "expected sum, avg, min, max or prod");
      o->op = (rs_op_t)op;
      break;
    }
    case 'd': {
      size_t i = 0, n = sizeof datatypes / sizeof *datatypes;
      while (i < n && strcmp(optarg, datatypes[i].name) != 0)
        i++;
      if (i == n)
        return bad_value(argv, opt, "expected float, double, half or bfloat16");
      o->dtype = datatypes[i].dtype;
      break;
    }
    case O_SEG:
      if (cli_parse_bytes(optarg, &o->segment_bytes) ||
          o->segment_bytes < RS_MIN_SEGMENT_BYTES ||
          o->segment_bytes > RS_MAX_SEGMENT_BYTES)
        return bad_value(argv, opt, "expected " CLI_MIN_SEGMENT_TEXT "..1G");
      break;
    case O_SLOTS:
      if (cli_parse_long(optarg, 1, RS_MAX_SLOTS, &v))
        return bad_value(argv, opt, "expected 1.." CLI_MAX_SLOTS_TEXT);
      o->slots = (int)v;
      break;
    case O_TIMEOUT:
      if (cli_parse_seconds(optarg, &o->timeout_s))
        return bad_value(argv, opt, "expected seconds in (0, 1e6]");
      break;
    case O_TRACE:
      o->trace = optarg;
      break;
    case O_JSON:
      o->json = 1;
      break;
    case O_DIRECT:
      o->direct = 1;
      break;
    case O_LOOP:
      if (cli_parse_loop(optarg, &o->slices))
        return bad_value(argv, opt, "expected steps or slices");
      o->loop_given = 1;
      break;
    case O_ALGO: {
      int algo = rs_algorithm_parse(optarg);
      o->all = strcmp(optarg, "all") == 0;
      if (algo < 0 && !o->all)
        return bad_value(
            argv, opt,
            "expected ring, rd, rhd, linear, tree, gloo-ring, auto or all");
      o->algo = o->all ? RS_ALGO_RING : (rs_algorithm_t)algo;
      break;
    }
    case O_TRANSPORT:
      if (strcmp(optarg, "shm") && strcmp(optarg, "mpi"))
        return bad_value(argv, opt, "expected shm or mpi");
      o->mpi = strcmp(optarg, "mpi") == 0;
      break;
    }
  }
  if (o->mpi && o->algo == RS_ALGO_AUTO)
    return cli_usage_error("%s", "bench: --algo auto measures this "
                                 "process's threads, which differ between "
                                 "processes; over MPI give --algo NAME");
  /* NCCL's slice loop is the ring's: the others run their own order. */
  if (o->algo != RS_ALGO_RING && !o->loop_given)
    o->slices = 0;
  if (o->all && o->direct)
    return cli_usage_error("%s", "bench: --direct is refused by rd and rhd "
                                 "(they reduce into regions their peers may "
                                 "still read); --algo all runs them");
  if (o->all && o->loop_given && o->slices)
    return cli_usage_error("%s", "bench: --loop slices is the ring's; "
                                 "--algo all runs the others too");
  if (optind < argc)
    return cli_usage_error("bench: unexpected argument '%s'", argv[optind]);
  if (o->max_bytes < o->min_bytes)
    return cli_usage_error("bench: %s", "-e is smaller than -b");
  return -1;
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

static void ticker_start(ticker_t *t) {
  pthread_condattr_t attr;
  *t = (ticker_t){.tty = isatty(STDERR_FILENO)};
  PT_CHECK(pthread_mutex_init(&t->mu, NULL));
  PT_CHECK(pthread_condattr_init(&attr));
  PT_CHECK(pthread_condattr_setclock(&attr, CLOCK_MONOTONIC));
  PT_CHECK(pthread_cond_init(&t->cond, &attr));
  PT_CHECK(pthread_condattr_destroy(&attr));
  /* Without the thread there is no progress, but the sweep still runs. */
  t->started = pthread_create(&t->thread, NULL, ticker_main, t) == 0;
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

typedef struct row {
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

/* One size on W workers: returns 0, or the failed run's exit status. */
static int bench_one(const bench_opts_t *o, int W, size_t count,
                     const rs_netmodel_t *machine, rs_trace_t *trace,
                     ticker_t *ticker, row_t *row) {
  char text[128], err[RS_ERRMSG_MAX];
  snprintf(text, sizeof text,
           "{\"name\": \"bench\", \"params\": [{\"name\": \"g\", \"shape\": "
           "[%zu], \"dtype\": \"%s\"}]}",
           count, rs_dtype_name(o->dtype));
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
  cfg.op = o->op;
  cfg.segment_bytes = o->segment_bytes;
  cfg.slots = o->slots;
  cfg.timeout_s = o->timeout_s;
  cfg.warmup = o->warmup;
  cfg.iterations = o->iters;
  /* (over MPI every process runs the same iterations: no time budget) */
  if (!o->iters_given && o->warmup > 0 && !o->mpi) {
    cfg.timed_budget_s = BUDGET_TIMED_S;
    cfg.warmup_budget_s = o->warmup_given ? 0 : BUDGET_WARMUP_S;
  }
  cfg.traced = trace != NULL;
  cfg.on_iteration = ticker_iteration;
  cfg.on_iteration_arg = ticker;
  cfg.direct = o->direct;
  cfg.slices = o->slices;
  cfg.algo = o->algo;
  if (machine)
    cfg.machine = *machine;
  /* ref: the run's own reference, the direct mean of the same buffers on
   * one thread (exact inputs), timed over as many repetitions as the ring
   * gets, at most 20. */
  cfg.ref_reps = o->iters < 20 ? o->iters : 20;
  cfg.check_threads = 1; /* ... on one thread, before the run */
  if (o->mpi) { /* each process checks its own workers, after the run */
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

  ticker_size(ticker, W, count * rs_dtype_size(o->dtype), o->warmup, o->iters);
  int rc = rs_run_execute(run);
  ticker_size(ticker, 0, 0, 0, 0);
  if (rc != RS_OK && rc != RS_ECHECK) {
    fprintf(stderr, "ringsim: bench: W=%d, %zu bytes: %s\n", W,
            count * rs_dtype_size(o->dtype), rs_run_errmsg(run));
    if (rc == RS_EINTERRUPTED)
      cli_signal_said();
    status = EXIT_RUN;
    goto done;
  }
  const rs_result_t *res = rs_run_result(run);
  row->workers = W;
  row->chosen = rs_run_bucket_algo(run, 0);
  row->count = count;
  row->bytes = count * rs_dtype_size(o->dtype);
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
  if (o->mpi && rs_run_time_mpi_allreduce(run, o->warmup, res->iterations,
                                          &mpi_ns, err) == RS_OK)
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

static void print_header(const bench_opts_t *o, int W) {
  printf("# ringsim bench: %s all-reduce on %d worker threads, %d warm-up + "
         "%d timed iterations per size\n",
         o->all ? "every algorithm's" : rs_algorithm_name(o->algo), W,
         o->warmup, o->iters);
  if (!o->iters_given && o->warmup > 0)
    printf("# time budget per size: %s%g s of timed iterations at the "
           "warm-up's pace; fewer iterations where they would take longer, "
           "as noted (-n fixes the count)\n",
           o->warmup_given ? "" : "1 s of warm-up, ", BUDGET_TIMED_S);
  printf("# segment %zu B, %d slots per channel%s, %s channels, %s loop; "
         "ref = the direct mean of the same %d buffers on one thread\n",
         o->segment_bytes, o->slots,
         o->direct ? " (fewer where a sent region would be overwritten "
                     "before its release)"
                   : "",
         o->direct ? "direct (copy-free)" : "copying",
         o->all      ? "the ring in NCCL's slice, the others in their own"
         : o->slices ? "NCCL's slice"
                     : "step",
         W);
  if (o->mpi)
    printf("# over MPI: %d workers in blocks on %d processes; mpi = "
           "MPI_Allreduce over the %d processes, on the same buffers and "
           "communicator, in the same run (ref not timed)\n",
           W, o->procs, o->procs);
  printf("#\n");
  if (o->all)
    printf("# every algorithm at every size; * marks the fastest\n");
  if (o->algo == RS_ALGO_AUTO)
    printf("# auto: per size the algorithm the alpha-beta model predicts "
           "fastest (algo: the one it ran)\n");
  printf("# %12s %12s %6s %6s %10s %8s %8s %7s %10s %8s%s%s\n", "size", "count",
         "type", "redop", "time", "algbw", "busbw", "#wrong", "ref", "time/ref",
         o->mpi ? "        mpi" : "",
         o->all || o->algo == RS_ALGO_AUTO ? "  algo" : "");
  printf("# %12s %12s %6s %6s %10s %8s %8s %7s %10s %8s%s\n", "(B)",
         "(elements)", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "",
         o->mpi ? "       (us)" : "");
}

static void print_row(const bench_opts_t *o, const row_t *r) {
  const char *op = rs_op_name(o->op);
  if (o->json) {
    json_t *j = json_pack(
        "{s:s, s:i, s:I, s:I, s:s, s:s, s:f, s:f, s:f, s:f, s:I, s:f, s:f, "
        "s:i, s:i, s:b, s:s}",
        "algo", rs_algorithm_name(r->algo), "workers", r->workers, "size",
        (json_int_t)r->bytes, "count", (json_int_t)r->count, "type",
        datatype_name(o->dtype), "redop", op, "time_us", r->time_us,
        "min_time_us", r->min_us, "algbw_gbs", r->algbw, "busbw_gbs", r->busbw,
        "wrong", (json_int_t)r->wrong, "ref_us", r->ref_us, "time_over_ref",
        r->ref_us > 0 ? r->time_us / r->ref_us : 0.0, "warmup", r->warmup,
        "iters", r->iters, "fastest", r->fastest, "chosen",
        rs_algorithm_name(r->chosen));
    if (o->mpi) {
      json_object_set_new(j, "procs", json_integer(o->procs));
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
    if (r->warmup != o->warmup || r->iters != o->iters)
      printf("# %zu B: %d warm-up + %d timed iterations (the time budget)\n",
             r->bytes, r->warmup, r->iters);
    printf("  %12zu %12zu %6s %6s %10.2f %8.3f %8.3f %7llu", r->bytes, r->count,
           datatype_name(o->dtype), op, r->time_us, r->algbw, r->busbw,
           (unsigned long long)r->wrong);
    if (o->mpi) /* (no ref over MPI: nothing was timed, docs/mpi.md) */
      printf(" %10s %8s", "-", "-");
    else
      printf(" %10.2f %8.2f", r->ref_us,
             r->ref_us > 0 ? r->time_us / r->ref_us : 0.0);
    if (o->mpi && r->mpi_us >= 0)
      printf(" %10.2f", r->mpi_us);
    else if (o->mpi)
      printf(" %10s", "-");
    if (o->all)
      printf("  %s%s", rs_algorithm_name(r->algo), r->fastest ? " *" : "");
    else if (o->algo == RS_ALGO_AUTO)
      printf("  auto: %s", rs_algorithm_name(r->chosen));
    printf("\n");
  }
  fflush(stdout);
}

int cli_bench(int argc, char **argv) {
  bench_opts_t o;
  int rc = parse_bench_args(argc, argv, &o);
  if (rc >= 0)
    return rc;
  rs_trace_t *trace = NULL;
  char err[RS_ERRMSG_MAX];
  int rank = 0;
  if (o.mpi && rs_mpi_init(&rank, &o.procs, err)) {
    fprintf(stderr, "ringsim: bench: %s\n", err);
    return EXIT_USAGE;
  }
  /* over MPI rank 0 writes the trace, every process's transfers */
  int opened = o.trace && rank == 0 ? rs_trace_open(o.trace, &trace, err) : 0;
  if (opened) { /* bad input (2), or its lock not had in time (3) */
    fprintf(stderr, "ringsim: %s\n", err);
    return cli_exit_code(opened);
  }
  ticker_t ticker;
  ticker_start(&ticker);
  int status = 0;
  uint64_t wrong = 0;
  double busbw_sum = 0; /* for nccl-tests' closing average */
  int rows = 0;
  /* A signal stops the sweep between runs too (main exits 128 + it). */
  for (int k = 0; k < o.worker_count && status == 0 && !cli_signal(); k++) {
    int W = o.workers[k];
    if (!o.json)
      print_header(&o, W);
    /* auto: this machine measured once for W, used at every size */
    rs_netmodel_t machine;
    if (o.algo == RS_ALGO_AUTO &&
        rs_machine_measure(W, o.segment_bytes, o.slots, o.direct, &machine,
                           err)) {
      fprintf(stderr, "ringsim: bench: W=%d: %s\n", W, err);
      status = EXIT_RUN;
      break;
    }
    if (o.algo == RS_ALGO_AUTO && !o.json)
      printf("# auto, W=%d: this machine measured: latency %.3f us, "
             "bandwidth %.3f GB/s, reduce %.3f GB/s\n",
             W, (double)machine.link.latency_ns / 1e3,
             (double)machine.link.bandwidth / 1e9,
             (double)machine.reduce_rate / 1e9);
    for (size_t bytes = o.min_bytes;
         bytes <= o.max_bytes && status == 0 && !cli_signal();) {
      size_t count = bytes / rs_dtype_size(o.dtype);
      /* One algorithm, or (--algo all) each in turn, the fastest marked. */
      row_t size_rows[RS_ALGO_COUNT] = {{0}};
      int n = 0, best = 0;
      for (int a = 0; a <= RS_ALGO_AUTO && status == 0 && !cli_signal(); a++) {
        if (!o.all && a != (int)o.algo)
          continue;
        if (o.all && a == RS_ALGO_AUTO)
          continue;
        bench_opts_t one = o;
        one.algo = (rs_algorithm_t)a;
        one.slices = a == RS_ALGO_RING || !o.all ? o.slices : 0;
        size_rows[n].algo = one.algo;
        status = bench_one(&one, W, count ? count : 1,
                           o.algo == RS_ALGO_AUTO ? &machine : NULL, trace,
                           &ticker, &size_rows[n]);
        if (status == 0 && size_rows[n].time_us < size_rows[best].time_us)
          best = n;
        n += status == 0;
      }
      size_rows[best].fastest = o.all && n > 0;
      for (int i = 0; i < n; i++) {
        print_row(&o, &size_rows[i]);
        wrong += size_rows[i].wrong;
        busbw_sum += size_rows[i].busbw;
        rows++;
      }
      size_t next =
          o.step_bytes ? bytes + o.step_bytes : bytes * (size_t)o.factor;
      if (next <= bytes)
        break;
      bytes = next;
    }
    if (!o.json && k + 1 < o.worker_count)
      printf("\n");
  }
  if (!o.json && status == 0 && !cli_signal()) {
    printf("# Out of bounds values : %llu %s\n", (unsigned long long)wrong,
           wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n", rows ? busbw_sum / rows : 0.0);
  }
  ticker_stop(&ticker);
  rs_trace_close(trace);
  return status ? status : wrong ? EXIT_CHECK : 0;
}
