/* main.c - the ringsim command: parse the command line, run, report.
 *
 * Exit codes: 0 all good; 1 the check failed; 2 bad usage or bad input
 * (refused before anything runs); 3 the run failed (timeout, abort, or
 * anything else once it started); 128 + the signal (130, 143) when SIGINT
 * or SIGTERM stopped it.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ringsim/ringsim.h"

#define DEFAULT_TRACE "ringsim-trace.db"

static const char usage_text[] =
    "usage: ringsim --params MODEL.json [options]\n"
    "       ringsim bench [options]   (nccl-tests style sweep; bench --help)\n"
    "       ringsim model --params MODEL.json --workers N --net SPEC "
    "[options]\n"
    "                                 (simulated time of the schedule alone,\n"
    "                                 up to " CLI_MODEL_MAX_WORKERS_TEXT
    " workers; model --help)\n"
    "       ringsim diff --params MODEL.json [options] OPTION A,B\n"
    "                                 (two configurations on the same "
    "gradients,\n"
    "                                 compared element by element; diff "
    "--help)\n"
    "\n"
    "Run a data-parallel gradient all-reduce as a real ring (reduce-scatter,\n"
    "then all-gather) on one thread per simulated worker, check every\n"
    "worker's result against the direct mean, and report.\n"
    "\n"
    "  -p, --params FILE       model.json: params, and optionally inline "
    "grads\n"
    "  -w, --workers N         number of workers W, 1.." CLI_MAX_WORKERS_TEXT
    " (default: the\n"
    "                          number of inline grads, else 4)\n"
    "      --init KIND         generated grads: normal (default), uniform, or\n"
    "                          exact (sums exactly representable: the result\n"
    "                          must equal the reference bit for bit)\n"
    "      --seed N            seed of the generated grads (default 0)\n"
    "      --grads PATTERN     read worker r's grads from a safetensors file,\n"
    "                          {r} replaced by r: grads/worker{r}.safetensors\n"
    "      --out FILE          write the averaged grads as safetensors\n"
    "      --op OP             sum, avg (SUM / W, the default), min, max, "
    "prod\n"
    "      --order-report      count how the ring's summation order changes\n"
    "                          the result against worker 0, 1, ... order\n"
    "      --average pre|post|pre-mul  avg: divide by W before the sum (DDP's\n"
    "                          hooks), after it, or multiply by 1/W rounded\n"
    "                          before it (PyTorch 1.13's DDP reducer)\n"
    "      --like ddp-gloo     PyTorch 1.13 DDP on gloo, bit for bit: --algo\n"
    "                          gloo-ring --op avg --average pre-mul\n"
    "                          or after it (default post)\n"
    "      --segment-bytes N   largest message through a channel (default\n"
    "                          256K; suffixes K, M, G are powers of 1024)\n"
    "      --slots K           slots per channel (default 8)\n"
    "      --timeout SEC       longest a worker waits for a neighbour\n"
    "                          (default 10)\n"
    "      --trace FILE        append the run to this SQLite trace (default\n"
    "                          ringsim-trace.db in the working directory)\n"
    "      --no-trace          do not write a trace\n"
    "      --inject SPEC       inject a fault (repeatable): crash, stall,\n"
    "                          corrupt, drop or dup, e.g. "
    "crash:worker=2,step=3\n"
    "                          stall:worker=1,step=2,ms=500 corrupt:worker=0\n"
    "                          (step: 0..W-2 reduce-scatter, then all-gather)\n"
    "      --checksum          checksum every segment (on with --inject)\n"
    "      --net SPEC          simulate the network: "
    "latency=5us,bandwidth=25GB/s\n"
    "                          (ns/us/ms/s; B/s, KB/s, MB/s, GB/s, GiB/s, "
    "Gbps)\n"
    "      --reduce-rate RATE  charge reductions, e.g. 20GB/s (needs --net)\n"
    "      --link SPEC         one slower link (repeatable): "
    "2-3:bandwidth=1GB/s\n"
    "      --straggler SPEC    a slow worker (repeatable): worker=1,us=200\n"
    "      --explain           narrate the all-reduce step by step (W <= 8)\n"
    "      --bucket-mb MB      DDP gradient buckets of MB MiB (default 25, "
    "the\n"
    "                          first 1 MiB; 0: one bucket for the whole "
    "model)\n"
    "      --direct            copy-free channels: receivers reduce straight\n"
    "                          from the sender's buffer (NCCL's direct mode)\n"
    "      --algo NAME         the all-reduce algorithm: ring (default), rd\n"
    "                          (recursive doubling), rhd (Rabenseifner),\n"
    "                          linear (reduce at worker 0, then broadcast),\n"
    "                          tree (NCCL's double binary tree), gloo-ring\n"
    "                          (gloo's ring, PyTorch's bits), or auto:\n"
    "                          per bucket the one the alpha-beta model\n"
    "                          predicts fastest on this machine (measured),\n"
    "                          or on --net's network\n"
    "      --loop ORDER        steps (default): each step moves whole chunks;\n"
    "                          slices: NCCL's loop, all steps on one slice of\n"
    "                          the buffer at a time (same sums, cache-warm)\n"
    "      --print             print the averaged values of every param\n"
    "      --json              print the report as one JSON object\n"
    "      --transport KIND    shm (default): one process; mpi: under mpirun,\n"
    "                          the workers spread over the MPI processes in\n"
    "                          blocks, one trace by rank 0 (docs/mpi.md)\n"
    "  -h, --help              this help\n"
    "  -V, --version           the version\n"
    "\n"
    "exit status: 0 all good; 1 the check failed; 2 bad usage or bad input\n"
    "(refused before anything runs); 3 the run failed (a worker timed out, "
    "the\n"
    "run was aborted, or its output could not be written); 130 or 143 when\n"
    "SIGINT or SIGTERM stopped it\n";

/* Can a file be created at path? (Checked before the run, so a bad --out
 * fails fast and nothing else is lost.) */
static int dir_writable(const char *path) {
  char copy[PATH_MAX];
  if (snprintf(copy, sizeof copy, "%s", path) >= (int)sizeof copy)
    return 0;
  return access(dirname(copy), W_OK) == 0;
}

/* Do paths a and b name one file? By device and inode when both exist (a
 * link, "./x" and "x" alike); else by the directory's device and inode and
 * the last name, as the file about to be created would be. */
static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  int has_a = stat(a, &sa) == 0, has_b = stat(b, &sb) == 0;
  if (has_a || has_b)
    return has_a && has_b && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  /* Neither exists yet: the same name in the same directory? (basename
   * and dirname may write to their argument: each gets its own copy.) */
  char da[PATH_MAX], db[PATH_MAX], na[PATH_MAX], nb[PATH_MAX];
  if (snprintf(da, sizeof da, "%s", a) >= (int)sizeof da ||
      snprintf(db, sizeof db, "%s", b) >= (int)sizeof db)
    return 0;
  memcpy(na, da, sizeof na);
  memcpy(nb, db, sizeof nb);
  return strcmp(basename(na), basename(nb)) == 0 &&
         stat(dirname(da), &sa) == 0 && stat(dirname(db), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Refuse, before anything runs, an --out that cannot be written or that
 * would overwrite an input or the trace: a directory, a device, the model,
 * a grads file, the trace or its -wal and -shm files. Returns -1 to go on,
 * or EXIT_USAGE having said why. */
static int check_out(const options_t *o, int workers) {
  if (!o->out)
    return -1;
  size_t len = strlen(o->out);
  if (len == 0)
    return cli_usage_error("--out '%s': an empty file name", o->out);
  if (o->out[len - 1] == '/')
    return cli_usage_error("--out '%s': names a directory, not a file", o->out);
  struct stat st;
  if (stat(o->out, &st) == 0 && S_ISDIR(st.st_mode))
    return cli_usage_error("--out '%s': is a directory", o->out);
  if (stat(o->out, &st) == 0 && !S_ISREG(st.st_mode))
    return cli_usage_error("--out '%s': not a regular file", o->out);
  if (!dir_writable(o->out))
    return cli_usage_error("--out '%s': cannot create a file there", o->out);
  char msg[3 * PATH_MAX];
  if (same_file(o->out, o->params)) {
    snprintf(msg, sizeof msg, "--out '%s' is the model file (--params '%s')",
             o->out, o->params);
    return cli_usage_error("%s: refusing to overwrite it", msg);
  }
  /* SQLite keeps -wal and -shm beside the file the trace's path resolves
   * to (through links): check beside both. */
  char real[PATH_MAX];
  const char *traces[2] = {o->trace, NULL};
  if (o->trace && realpath(o->trace, real))
    traces[1] = real;
  for (int t = 0; t < 2 && traces[t]; t++) {
    static const char *const sides[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
      char side[PATH_MAX];
      if (snprintf(side, sizeof side, "%s%s", traces[t], sides[i]) >=
          (int)sizeof side)
        continue;
      if (same_file(o->out, side)) {
        snprintf(msg, sizeof msg, "--out '%s' is the trace%s (--trace '%s')",
                 o->out,
                 i == 0   ? ""
                 : i == 1 ? "'s write-ahead log"
                          : "'s shared-memory index",
                 o->trace);
        return cli_usage_error("%s: refusing to overwrite it", msg);
      }
    }
  }
  for (int r = 0; o->grads && r < workers; r++) {
    char path[PATH_MAX];
    if (rs_grads_path(o->grads, r, path, sizeof path) == RS_OK &&
        same_file(o->out, path)) {
      snprintf(msg, sizeof msg,
               "--out '%s' is worker %d's grads file (--grads '%s')", o->out, r,
               o->grads);
      return cli_usage_error("%s: refusing to overwrite it", msg);
    }
  }
  return -1;
}

/* ---- signals -------------------------------------------------------------
 * SIGINT and SIGTERM are blocked in every thread and taken by one thread
 * with sigwait, which can then do what a signal handler may not: stop the
 * run (rs_run_interrupt locks mutexes). The main thread looks at signo
 * between its stages and hands it to the --out writer, which gives up and
 * removes its temporary file. A second signal ends the process at once. */
/* A pthread call that cannot fail unless the program is broken. */
#define PTHREAD_CHECK(call)                                                    \
  do {                                                                         \
    int pthread_rc = (call);                                                   \
    if (pthread_rc != 0) {                                                     \
      fprintf(stderr, "ringsim: %s failed (%d)\n", #call, pthread_rc);         \
      abort();                                                                 \
    }                                                                          \
  } while (0)

typedef struct sig_watch {
  pthread_t thread;
  int started;
  sigset_t set;
  atomic_int signo;    /* the first signal taken, or 0 */
  atomic_int stopping; /* main is done: the next signal stops the watcher */
  pthread_mutex_t mu;
  rs_run_t *run; /* the run to stop, while there is one; guarded by mu */
} sig_watch_t;

static const char *signal_name(int signo) {
  return signo == SIGINT ? "SIGINT" : "SIGTERM";
}

static void *watch_signals(void *arg) {
  sig_watch_t *s = arg;
  int signo;
  if (sigwait(&s->set, &signo) != 0 || atomic_load(&s->stopping))
    return NULL;
  atomic_store(&s->signo, signo);
  PTHREAD_CHECK(pthread_mutex_lock(&s->mu));
  if (s->run)
    rs_run_interrupt(s->run, signal_name(signo));
  PTHREAD_CHECK(pthread_mutex_unlock(&s->mu));
  if (sigwait(&s->set, &signo) == 0 && !atomic_load(&s->stopping)) {
    /* The first signal is being acted on (an output being abandoned, its
     * temporary file removed): give that a second, then stop at once. */
    for (int i = 0; i < 100 && !atomic_load(&s->stopping); i++)
      nanosleep(&(struct timespec){0, 10000000}, NULL);
    if (atomic_load(&s->stopping))
      return NULL;
    static const char msg[] = "ringsim: a second signal: stopping at once\n";
    if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
    }
    _exit(128 + signo);
  }
  return NULL;
}

static void watch_start(sig_watch_t *s) {
  sigemptyset(&s->set);
  sigaddset(&s->set, SIGINT);
  sigaddset(&s->set, SIGTERM);
  atomic_init(&s->signo, 0);
  atomic_init(&s->stopping, 0);
  PTHREAD_CHECK(pthread_mutex_init(&s->mu, NULL));
  PTHREAD_CHECK(pthread_sigmask(SIG_BLOCK, &s->set, NULL));
  s->started = pthread_create(&s->thread, NULL, watch_signals, s) == 0;
}

static void watch_run(sig_watch_t *s, rs_run_t *run) {
  PTHREAD_CHECK(pthread_mutex_lock(&s->mu));
  s->run = run;
  if (run && atomic_load(&s->signo)) /* it came before the run existed */
    rs_run_interrupt(run, signal_name(atomic_load(&s->signo)));
  PTHREAD_CHECK(pthread_mutex_unlock(&s->mu));
}

static void watch_stop(sig_watch_t *s) {
  if (s->started) {
    /* Wake the watcher with a signal it takes (no pthread_cancel: the
     * sanitizers' runtimes do not survive cancelling a thread in sigwait). */
    atomic_store(&s->stopping, 1);
    PTHREAD_CHECK(pthread_kill(s->thread, SIGTERM));
    PTHREAD_CHECK(pthread_join(s->thread, NULL));
  }
  PTHREAD_CHECK(pthread_mutex_destroy(&s->mu));
}

enum {
  OPT_INIT = 256,
  OPT_SEED,
  OPT_GRADS,
  OPT_OUT,
  OPT_OP,
  OPT_SEGMENT_BYTES,
  OPT_SLOTS,
  OPT_TIMEOUT,
  OPT_PRINT,
  OPT_JSON,
  OPT_TRACE,
  OPT_NO_TRACE,
  OPT_INJECT,
  OPT_CHECKSUM,
  OPT_DIRECT,
  OPT_LOOP,
  OPT_ALGO,
  OPT_BUCKET_MB,
  OPT_AVERAGE,
  OPT_ORDER_REPORT,
  OPT_NET,
  OPT_REDUCE_RATE,
  OPT_LINK,
  OPT_STRAGGLER,
  OPT_EXPLAIN,
  OPT_TRANSPORT,
  OPT_LIKE,
  OPT_MAX
};

static const struct option long_options[] = {
    {"params", required_argument, NULL, 'p'},
    {"workers", required_argument, NULL, 'w'},
    {"init", required_argument, NULL, OPT_INIT},
    {"seed", required_argument, NULL, OPT_SEED},
    {"grads", required_argument, NULL, OPT_GRADS},
    {"out", required_argument, NULL, OPT_OUT},
    {"op", required_argument, NULL, OPT_OP},
    {"segment-bytes", required_argument, NULL, OPT_SEGMENT_BYTES},
    {"like", required_argument, NULL, OPT_LIKE},
    {"slots", required_argument, NULL, OPT_SLOTS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"print", no_argument, NULL, OPT_PRINT},
    {"json", no_argument, NULL, OPT_JSON},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"no-trace", no_argument, NULL, OPT_NO_TRACE},
    {"inject", required_argument, NULL, OPT_INJECT},
    {"checksum", no_argument, NULL, OPT_CHECKSUM},
    {"direct", no_argument, NULL, OPT_DIRECT},
    {"loop", required_argument, NULL, OPT_LOOP},
    {"algo", required_argument, NULL, OPT_ALGO},
    {"bucket-mb", required_argument, NULL, OPT_BUCKET_MB},
    {"average", required_argument, NULL, OPT_AVERAGE},
    {"order-report", no_argument, NULL, OPT_ORDER_REPORT},
    {"net", required_argument, NULL, OPT_NET},
    {"reduce-rate", required_argument, NULL, OPT_REDUCE_RATE},
    {"link", required_argument, NULL, OPT_LINK},
    {"straggler", required_argument, NULL, OPT_STRAGGLER},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
    {"transport", required_argument, NULL, OPT_TRANSPORT},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {NULL, 0, NULL, 0}};

static const char *option_name(int opt) {
  for (const struct option *o = long_options; o->name; o++)
    if (o->val == opt)
      return o->name;
  return "?";
}

/* Returns -1 to go on, or an exit status. */
int cli_parse_args(int argc, char **argv, options_t *o) {
  unsigned char seen[OPT_MAX] = {0};
  long v;
  int opt;
  rs_config_init(&o->config);
  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":p:w:hV", long_options, NULL)) != -1) {
    if (opt == '?')
      return cli_usage_error("unknown option '%s'", argv[optind - 1]);
    if (opt == ':')
      return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
    int repeatable =
        opt == OPT_INJECT || opt == OPT_LINK || opt == OPT_STRAGGLER;
    if (opt < OPT_MAX && !repeatable && seen[opt]++)
      return cli_usage_error("--%s is given more than once", option_name(opt));
    switch (opt) {
    case 'h':
      fputs(o->model_only ? cli_model_usage_text : usage_text, stdout);
      return 0;
    case 'V':
      printf("ringsim %s\n", RS_VERSION);
      return 0;
    case 'p':
      o->params = optarg;
      break;
    case 'w':
      if (cli_parse_long(optarg, 1,
                         o->model_only ? MODEL_MAX_WORKERS : RS_MAX_WORKERS,
                         &v))
        return cli_usage_error(o->model_only
                                   ? "model: --workers '%s': expected an "
                                     "integer in "
                                     "1.." CLI_MODEL_MAX_WORKERS_TEXT
                                   : "--workers '%s': expected an integer in "
                                     "1.." CLI_MAX_WORKERS_TEXT,
                               optarg);
      o->config.workers = (int)v;
      o->workers_given = 1;
      break;
    case OPT_INIT:
      if (strcmp(optarg, "normal") == 0)
        o->init = RS_INIT_NORMAL;
      else if (strcmp(optarg, "uniform") == 0)
        o->init = RS_INIT_UNIFORM;
      else if (strcmp(optarg, "exact") == 0)
        o->init = RS_INIT_EXACT;
      else
        return cli_usage_error("--init '%s': expected normal, uniform or exact",
                               optarg);
      o->init_given = 1;
      break;
    case OPT_SEED:
      if (cli_parse_long(optarg, 0, LONG_MAX, &v))
        return cli_usage_error("--seed '%s': expected a non-negative integer",
                               optarg);
      o->seed = (uint64_t)v;
      o->seed_given = 1;
      break;
    case OPT_GRADS:
      o->grads = optarg;
      break;
    case OPT_OUT:
      o->out = optarg;
      break;
    case OPT_OP: {
      int op = rs_op_parse(optarg);
      if (op < 0)
        return cli_usage_error("--op '%s': expected sum, avg, min, max or "
                               "prod",
                               optarg);
      o->config.op = (rs_op_t)op;
      break;
    }
    case OPT_ORDER_REPORT:
      o->config.order_report = 1;
      break;
    case OPT_LIKE:
      if (strcmp(optarg, "ddp-gloo"))
        return cli_usage_error("--like '%s': expected ddp-gloo", optarg);
      break;
    case OPT_AVERAGE:
      if (strcmp(optarg, "pre") && strcmp(optarg, "post") &&
          strcmp(optarg, "pre-mul"))
        return cli_usage_error("--average '%s': expected pre, post or "
                               "pre-mul",
                               optarg);
      o->config.average_pre = strcmp(optarg, "pre") == 0 ? RS_AVERAGE_PRE
                              : strcmp(optarg, "pre-mul") == 0
                                  ? RS_AVERAGE_PRE_MUL
                                  : RS_AVERAGE_POST;
      o->average_given = 1;
      break;
    case OPT_SEGMENT_BYTES:
      if (cli_parse_bytes(optarg, &o->config.segment_bytes) ||
          o->config.segment_bytes < RS_MIN_SEGMENT_BYTES ||
          o->config.segment_bytes > RS_MAX_SEGMENT_BYTES)
        return cli_usage_error(
            "--segment-bytes '%s': expected a size from " CLI_MIN_SEGMENT_TEXT
            " to 1G",
            optarg);
      break;
    case OPT_SLOTS:
      if (cli_parse_long(optarg, 1, RS_MAX_SLOTS, &v))
        return cli_usage_error(
            "--slots '%s': expected an integer in 1.." CLI_MAX_SLOTS_TEXT,
            optarg);
      o->config.slots = (int)v;
      break;
    case OPT_TIMEOUT:
      if (cli_parse_seconds(optarg, &o->config.timeout_s))
        return cli_usage_error("--timeout '%s': expected seconds in (0, 1e6]",
                               optarg);
      break;
    case OPT_PRINT:
      o->print_values = 1;
      break;
    case OPT_JSON:
      o->json = 1;
      break;
    case OPT_TRACE:
      o->trace = optarg;
      break;
    case OPT_NO_TRACE:
      o->no_trace = 1;
      break;
    case OPT_INJECT:
      if (o->config.fault_count == RS_MAX_FAULTS)
        return cli_usage_error("--inject: at most %s faults", "16");
      if (rs_fault_parse(optarg, &o->config.faults[o->config.fault_count]))
        return cli_usage_error(
            "--inject '%s': expected KIND:worker=N,step=S[,ms=M] "
            "with KIND crash, stall (needs ms), corrupt, drop "
            "or dup",
            optarg);
      o->config.fault_count++;
      break;
    case OPT_CHECKSUM:
      o->config.checksum = 1;
      break;
    case OPT_NET:
    case OPT_LINK:
    case OPT_STRAGGLER: {
      char err[RS_ERRMSG_MAX];
      rs_netmodel_t *net = &o->config.net;
      int rc = opt == OPT_NET ? rs_netmodel_parse(optarg, net, err)
               : opt == OPT_LINK
                   ? rs_netmodel_parse_link(optarg, net, err)
                   : rs_netmodel_parse_straggler(optarg, net, err);
      if (rc)
        return cli_usage_error("%s", err);
      break;
    }
    case OPT_REDUCE_RATE: {
      char err[RS_ERRMSG_MAX];
      if (rs_netmodel_parse_rate(optarg, &o->config.net.reduce_rate, err))
        return cli_usage_error("--reduce-rate %s", err);
      break;
    }
    case OPT_EXPLAIN:
      o->explain = 1;
      break;
    case OPT_TRANSPORT:
      if (strcmp(optarg, "shm") && strcmp(optarg, "mpi"))
        return cli_usage_error("--transport '%s': expected shm or mpi", optarg);
      o->config.mpi = strcmp(optarg, "mpi") == 0;
      break;
    case OPT_BUCKET_MB: {
      char *end;
      errno = 0;
      double mb = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(mb >= 0 && mb <= 1048576))
        return cli_usage_error("--bucket-mb '%s': expected MiB from 0 (one "
                               "bucket) to 1048576",
                               optarg);
      o->config.bucket_bytes = (size_t)(mb * 1048576.0);
      if (mb > 0 && o->config.bucket_bytes < sizeof(float))
        o->config.bucket_bytes = sizeof(float);
      break;
    }
    case OPT_DIRECT:
      o->config.direct = 1;
      break;
    case OPT_LOOP:
      if (cli_parse_loop(optarg, &o->config.slices))
        return cli_usage_error("--loop '%s': expected steps or slices", optarg);
      break;
    case OPT_ALGO: {
      int algo = rs_algorithm_parse(optarg);
      o->algo_all = strcmp(optarg, "all") == 0;
      if (algo == RS_ALGO_AUTO && o->model_only)
        return cli_usage_error("model: --algo %s chooses per bucket, on "
                               "this machine; --algo all prints every "
                               "algorithm and the crossovers",
                               optarg);
      if (algo < 0 && !(o->algo_all && o->model_only))
        return cli_usage_error(o->model_only
                                   ? "--algo '%s': expected ring, rd, rhd, "
                                     "linear, tree, gloo-ring or all"
                                   : "--algo '%s': expected ring, rd, rhd, "
                                     "linear, tree, gloo-ring or auto",
                               optarg);
      o->config.algo = algo < 0 ? RS_ALGO_RING : (rs_algorithm_t)algo;
      break;
    }
    }
  }
  if (o->model_only) {
    /* `ringsim model` simulates the schedule alone: an option about data,
     * threads or the trace would be silently ignored, so it is refused. */
    static const int model_options[] = {
        'p',           'w',           OPT_JSON,        OPT_NET,
        OPT_LINK,      OPT_STRAGGLER, OPT_REDUCE_RATE, OPT_SEGMENT_BYTES,
        OPT_BUCKET_MB, OPT_ALGO};
    if (o->config.fault_count)
      seen[OPT_INJECT] = 1;
    for (const struct option *lo = long_options; lo->name; lo++) {
      int allowed = 0;
      for (size_t i = 0; i < sizeof model_options / sizeof *model_options; i++)
        allowed |= model_options[i] == lo->val;
      if (!allowed && lo->val < OPT_MAX && seen[lo->val])
        return cli_usage_error("model: --%s does not apply to the schedule "
                               "alone",
                               lo->name);
    }
  }
  /* --like ddp-gloo: PyTorch 1.13's DDP on the gloo backend, bit for bit
   * (docs/ddp.md): gloo's ring, the reducer's averaging, DDP's buckets
   * (the defaults: 25 MiB, the first 1 MiB). */
  if (seen[OPT_LIKE]) {
    if (seen[OPT_ALGO] || seen[OPT_OP] || seen[OPT_AVERAGE])
      return cli_usage_error("%s", "--like ddp-gloo sets --algo gloo-ring, "
                                   "--op avg and --average pre-mul; give "
                                   "none of them with it");
    o->config.algo = RS_ALGO_GLOO_RING;
    o->config.op = RS_OP_AVG;
    o->config.average_pre = RS_AVERAGE_PRE_MUL;
    o->config.ddp_layout = 1;
  }
  /* gloo's ring cuts segments of at most gloo's own maximum, unless told */
  if (o->config.algo == RS_ALGO_GLOO_RING && !seen[OPT_SEGMENT_BYTES])
    o->config.segment_bytes = RS_GLOO_SEGMENT_BYTES;
  if (o->config.mpi && o->config.algo == RS_ALGO_AUTO && !o->config.net.enabled)
    return cli_usage_error("%s", "--algo auto without --net measures this "
                                 "process's threads, which differ between "
                                 "processes; over MPI give --algo NAME or "
                                 "--net");
  if (o->explain && o->config.mpi)
    return cli_usage_error("%s", "--explain narrates a run in one process; "
                                 "it does not apply to --transport mpi");
  if (o->explain && o->config.algo == RS_ALGO_AUTO)
    return cli_usage_error("%s", "--explain narrates one algorithm; --algo "
                                 "auto chooses one per bucket (give --algo "
                                 "NAME)");
  if (o->average_given && o->config.op != RS_OP_AVG)
    return cli_usage_error("%s", "--average applies to --op avg only");
  if (o->trace && o->no_trace)
    return cli_usage_error("%s",
                           "--trace and --no-trace contradict each other");
  if (!o->trace && !o->no_trace)
    o->trace = DEFAULT_TRACE;
  if (optind < argc)
    return cli_usage_error("unexpected argument '%s'", argv[optind]);
  if (!o->params)
    return cli_usage_error("%s", "--params MODEL.json is required");
  if (o->grads && (o->init_given || o->seed_given))
    return cli_usage_error("%s",
                           "--init and --seed generate grads; they cannot "
                           "be used with --grads");
  return -1;
}

/* The run's configuration as the trace stores it: the options as given. */
static char *config_json(const options_t *o, int argc, char **argv) {
  json_t *args = json_array();
  for (int i = 1; i < argc; i++)
    json_array_append_new(args, json_string(argv[i]));
  /* avg divides before or after the sum; the other ops have no average */
  const char *average = o->config.op != RS_OP_AVG ? NULL
                        : o->config.average_pre == RS_AVERAGE_PRE_MUL
                            ? "pre-mul"
                        : o->config.average_pre ? "pre"
                                                : "post";
  json_t *c = json_pack(
      "{s:s, s:i, s:s, s:s?, s:s?, s:s?, s:I, s:s, s:s, s:I, s:i, s:f, s:s, "
      "s:b, s:s, s:o}",
      "params", o->params, "workers", o->config.workers, "op",
      rs_op_name(o->config.op), "average", average, "grads", o->grads, "out",
      o->out, "seed", (json_int_t)o->seed, "init", cli_init_name(o->init),
      "collective", "all_reduce", "segment_bytes",
      (json_int_t)o->config.segment_bytes, "slots", o->config.slots,
      "timeout_s", o->config.timeout_s, "loop",
      o->config.slices ? "slices" : "steps", "direct", o->config.direct, "algo",
      rs_algorithm_name(o->config.algo), "argv", args);
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

/* The run's part of main: from the loaded model to the report. */
static int run_main(options_t *opt, rs_model_t *model, sig_watch_t *watch,
                    int argc, char **argv) {
  char err[RS_ERRMSG_MAX];
  rs_run_t *run = NULL;
  rs_trace_t *trace = NULL;
  cli_progress_t *progress = NULL;
  int rc;
  int inline_workers = rs_model_inline_workers(model);
  int use_inline = inline_workers > 0 && !opt->grads;
  if (!opt->workers_given && use_inline)
    opt->config.workers = inline_workers;
  if (use_inline && (opt->init_given || opt->seed_given)) {
    fprintf(stderr,
            "ringsim: %s: the model gives inline grads; --init and "
            "--seed only apply to generated grads\n",
            opt->params);
    return EXIT_USAGE;
  }
  if (use_inline && inline_workers != opt->config.workers) {
    fprintf(stderr, "ringsim: %s: grads has %d entries but --workers is %d\n",
            opt->params, inline_workers, opt->config.workers);
    return EXIT_USAGE;
  }
  if ((rc = check_out(opt, opt->config.workers)) >= 0)
    return rc;
  opt->config.traced = opt->trace != NULL;
  /* --algo auto without --net: this machine, measured (tens of ms) */
  if (rs_config_measure_machine(&opt->config, err)) {
    fprintf(stderr, "ringsim: measuring this machine for --algo auto: %s\n",
            err);
    return EXIT_RUN;
  }
  if ((rc = mpi_gate(opt, 0)))
    return rc;
  if (rs_run_create(&opt->config, model, &run, err)) {
    fprintf(stderr, "ringsim: %s\n", err);
    return EXIT_USAGE;
  }
  watch_run(watch, run);
  if (opt->explain && rs_explain_check(run, err) != RS_OK) {
    fprintf(stderr, "ringsim: %s\n", err);
    rc = EXIT_USAGE;
    goto done;
  }

  /* over MPI, rank 0 writes the trace: every transfer of every process */
  if (opt->trace && opt->mpi_rank == 0) {
    if (rs_trace_open(opt->trace, &trace, err)) {
      fprintf(stderr, "ringsim: %s\n", err);
      rc = EXIT_USAGE;
      goto done;
    }
    char *config = config_json(opt, argc, argv);
    int set = rs_run_set_trace(run, trace, config);
    free(config);
    if (set) {
      fprintf(stderr, "ringsim: %s\n", rs_run_errmsg(run));
      rc = EXIT_RUN;
      goto done;
    }
  }

  if ((rc = mpi_gate(opt, 0)))
    goto done;
  /* a line on stderr while a stage takes long (a terminal, not --json) */
  if (!opt->json)
    progress = cli_progress_start(run);
  char source[RS_ERRMSG_MAX];
  int status;
  if (opt->grads) {
    status = rs_run_load_grads(run, opt->grads);
    snprintf(source, sizeof source, "read from %s", opt->grads);
  } else if (use_inline) {
    status = rs_run_fill_inline(run);
    snprintf(source, sizeof source, "inline in %s", opt->params);
  } else {
    status = rs_run_fill(run, opt->init, opt->seed);
    snprintf(source, sizeof source, "generated: %s, seed %llu",
             cli_init_name(opt->init), (unsigned long long)opt->seed);
  }
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
  /* The ring has run. A signal since, or an output that cannot be written,
   * fails the run after all: said before the report, so that the report,
   * --json and the trace's row say the same. */
  int signo = atomic_load(&watch->signo);
  if (signo && (status == RS_OK || status == RS_ECHECK)) {
    snprintf(err, sizeof err, "interrupted by %s", signal_name(signo));
    status = rs_run_fail_after(run, RS_EINTERRUPTED, err);
  } else if (status == RS_OK && opt->out && opt->mpi_rank == 0) {
    /* (over MPI rank 0 hosts worker 0 and writes it, once) */
    int wrc = rs_safetensors_write_cancellable(
        opt->out, model, rs_run_buffer(run, 0), &watch->signo, err);
    if (wrc)
      status = rs_run_fail_after(
          run, wrc == RS_EINTERRUPTED ? RS_EINTERRUPTED : RS_ESYS, err);
  }
  rc = cli_exit_code(status);
  if (opt->mpi_rank != 0) /* over MPI rank 0 reports, for every process */
    goto done;
  report_t report = {opt, model, run, source, status, opt->trace};
  if (opt->json)
    cli_print_json(&report);
  else
    cli_print_text(&report);
  fflush(stdout);
  if (status != RS_OK)
    fprintf(stderr, "ringsim: %s\n", rs_run_errmsg(run));
  if (rc == EXIT_RUN && !rs_run_result(run)->checked &&
      status != RS_ETRACE) /* the ring failed */
    cli_print_watchdog(run);
  if (rs_run_trace_error(run) && status != RS_ETRACE) {
    fprintf(stderr, "ringsim: %s\n", rs_run_trace_error(run));
    if (rc == 0)
      rc = EXIT_RUN;
  }
done:
  cli_progress_stop(progress);
  watch_run(watch, NULL);
  rs_run_free(run);
  rs_trace_close(trace);
  return rc;
}

/* --transport mpi on the command line (before it is parsed: MPI starts
 * first, so that a usage error is said once). */
static int wants_mpi(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--") == 0)
      break;
    if (strcmp(argv[i], "--transport=mpi") == 0 ||
        (strcmp(argv[i], "--transport") == 0 && i + 1 < argc &&
         strcmp(argv[i + 1], "mpi") == 0))
      return 1;
  }
  return 0;
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
  if (!wants_mpi(argc, argv))
    return -1;
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

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "diff") == 0)
    return cli_diff(argc - 1, argv + 1);
  options_t opt = {0};
  int model_only = argc > 1 && strcmp(argv[1], "model") == 0;
  opt.model_only = model_only;
  mpi_cli_t mpi = {0};
  int rc = model_only ? -1 : mpi_begin(&mpi, argc, argv);
  if (rc >= 0)
    return rc;
  if (argc > 1 && strcmp(argv[1], "bench") == 0)
    return mpi_finish(&mpi, &opt, cli_bench(argc - 1, argv + 1));
  opt.mpi_rank = mpi.rank;
  rc = cli_parse_args(argc - model_only, argv + model_only, &opt);
  if (rc >= 0)
    return mpi_finish(&mpi, &opt, rc);

  /* A file size limit (ulimit -f) makes a write fail with EFBIG, which is
   * reported, instead of killing the process halfway through a file. */
  signal(SIGXFSZ, SIG_IGN);
  sig_watch_t watch;
  watch_start(&watch);
  char err[RS_ERRMSG_MAX];
  rs_model_t *model = NULL;
  if (rs_model_load(opt.params, &model, err)) {
    fprintf(stderr, "ringsim: %s\n", err);
    rc = EXIT_USAGE;
  } else if (opt.model_only) {
    rc = cli_run_model(&opt, model);
  } else {
    rc = run_main(&opt, model, &watch, argc, argv);
  }
  while (opt.config.mpi && opt.mpi_gates < MPI_GATES)
    mpi_gate(&opt, rc ? rc : EXIT_RUN); /* (stopped before a gate) */
  rs_model_free(model);
  int signo = atomic_load(&watch.signo);
  watch_stop(&watch);
  if (signo) {
    /* Said already if it stopped the run (the run's error). */
    if (rc != EXIT_RUN)
      fprintf(stderr, "ringsim: interrupted by %s\n", signal_name(signo));
    rc = 128 + signo;
  }
  return mpi_finish(&mpi, &opt, rc);
}
