/* options.c - the ringsim command's options: its usage text and the parser
 * that turns a command line into options_t (for the command itself, and for
 * each side of `ringsim diff`). Bad usage is refused here, before anything
 * runs, with one line and exit 2.
 */
#include "cli.h"
#include "ringsim/ringsim.h"
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
    "                          hooks), after it (the default), or multiply\n"
    "                          by 1/W rounded before it (PyTorch 1.13's DDP\n"
    "                          reducer)\n"
    "      --like ddp-gloo     PyTorch 1.13 DDP on gloo, bit for bit: --algo\n"
    "                          gloo-ring --op avg --average pre-mul, and\n"
    "                          DDP's bucket order (the params reversed)\n"
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
    "run was aborted, or its output could not be written); 130, 143 or 129\n"
    "when SIGINT, SIGTERM or SIGHUP stopped it\n";

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
        return cli_usage_error("--seed '%s': expected an integer in "
                               "0..9223372036854775807",
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
    case OPT_OP:
    case OPT_AVERAGE:
    case OPT_SLOTS:
    case OPT_TIMEOUT:
    case OPT_LOOP:
    case OPT_BUCKET_MB:
    case OPT_INJECT:
    case OPT_NET:
    case OPT_LINK:
    case OPT_STRAGGLER:
    case OPT_REDUCE_RATE: {
      /* The library parses these, as it does the Python package's
       * options: one parser and one message for both. */
      char err[RS_ERRMSG_MAX];
      if (rs_config_set(&o->config, option_name(opt), optarg, err))
        return cli_usage_error(strncmp(err, "--", 2) ? "--%s" : "%s", err);
      o->average_given |= opt == OPT_AVERAGE;
      break;
    }
    case OPT_ORDER_REPORT:
      o->config.order_report = 1;
      break;
    case OPT_LIKE:
      if (strcmp(optarg, "ddp-gloo"))
        return cli_usage_error("--like '%s': expected ddp-gloo", optarg);
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
    case OPT_EXPLAIN:
      o->explain = 1;
      break;
    case OPT_TRANSPORT:
      if (strcmp(optarg, "shm") && strcmp(optarg, "mpi"))
        return cli_usage_error("--transport '%s': expected shm or mpi", optarg);
      o->config.mpi = strcmp(optarg, "mpi") == 0;
      break;
    case OPT_DIRECT:
      o->config.direct = 1;
      break;
    case OPT_CHECKSUM:
      o->config.checksum = 1;
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
  if (o->explain && o->json)
    return cli_usage_error("%s", "--explain narrates in text; --json prints "
                                 "one JSON object (give one of them)");
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
