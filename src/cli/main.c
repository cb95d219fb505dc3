/* main.c - the ringsim command: parse the command line, run, report.
 *
 * Exit codes: 0 all good; 1 the check failed; 2 bad usage or bad input;
 * 3 the run failed (timeout, abort).
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ringsim/ringsim.h"

#define DEFAULT_TRACE "ringsim-trace.db"
/* `ringsim model` runs no threads, so it takes far bigger rings. */
#define MODEL_MAX_WORKERS (1 << 20)

/* Small models print their averaged values without --print. */
#define PRINT_VALUES_UP_TO 64

typedef struct options {
  rs_config_t config;
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
  int explain;
  int model_only;    /* `ringsim model`: the schedule's simulated time alone */
  const char *trace; /* NULL: --no-trace */
  int trace_given;
  int no_trace;
} options_t;

static const char usage_text[] =
    "usage: ringsim --params MODEL.json [options]\n"
    "       ringsim bench [options]   (nccl-tests style sweep; bench --help)\n"
    "\n"
    "Run a data-parallel gradient all-reduce as a real ring (reduce-scatter,\n"
    "then all-gather) on one thread per simulated worker, check every\n"
    "worker's result against the direct mean, and report.\n"
    "\n"
    "  -p, --params FILE       model.json: params, and optionally inline "
    "grads\n"
    "  -w, --workers N         number of workers W, 1..4096 (default: the\n"
    "                          number of inline grads, else 4)\n"
    "      --init KIND         generated grads: normal (default), uniform, or\n"
    "                          exact (sums exactly representable: the result\n"
    "                          must equal the reference bit for bit)\n"
    "      --seed N            seed of the generated grads (default 0)\n"
    "      --grads PATTERN     read worker r's grads from a safetensors file,\n"
    "                          {r} replaced by r: grads/worker{r}.safetensors\n"
    "      --out FILE          write the averaged grads as safetensors\n"
    "      --op sum|avg        all_reduce(SUM), or SUM / W (default avg)\n"
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
    "      --explain           narrate the ring step by step (W <= 8)\n"
    "      --direct            copy-free channels: receivers reduce straight\n"
    "                          from the sender's buffer (NCCL's direct mode)\n"
    "      --print             print the averaged values of every param\n"
    "      --json              print the report as one JSON object\n"
    "  -h, --help              this help\n"
    "  -V, --version           the version\n"
    "\n"
    "exit status: 0 all good; 1 the check failed; 2 bad usage or bad input;\n"
    "3 the run failed (a worker timed out, or the run was aborted)\n";

int cli_usage_error(const char *fmt, const char *arg) {
  fprintf(stderr, "ringsim: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (see ringsim --help)\n");
  return EXIT_USAGE;
}

int cli_parse_long(const char *text, long min, long max, long *out) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || end == text || *end || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

int cli_parse_bytes(const char *text, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || end == text || text[0] == '-')
    return -1;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10;
  else if (*end == 'M' || *end == 'm')
    shift = 20;
  else if (*end == 'G' || *end == 'g')
    shift = 30;
  if (shift)
    end++;
  if (*end || v > (1ull << 40) >> shift)
    return -1;
  *out = (size_t)(v << shift);
  return 0;
}

/* Can a file be created at path? (Checked before the run, so a bad --out
 * fails fast and nothing else is lost.) */
static int dir_writable(const char *path) {
  char copy[PATH_MAX];
  if (snprintf(copy, sizeof copy, "%s", path) >= (int)sizeof copy)
    return 0;
  return access(dirname(copy), W_OK) == 0;
}

/* KIND:key=value,... with keys worker, step (default 0) and ms (stall). */
static int parse_fault(const char *spec, rs_fault_t *f) {
  static const struct {
    const char *name;
    rs_fault_kind_t kind;
  } kinds[] = {{"crash", RS_FAULT_CRASH},
               {"stall", RS_FAULT_STALL},
               {"corrupt", RS_FAULT_CORRUPT},
               {"drop", RS_FAULT_DROP},
               {"dup", RS_FAULT_DUP}};
  const char *colon = strchr(spec, ':');
  size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
  int found = 0;
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
    if (strlen(kinds[i].name) == name_len &&
        strncmp(spec, kinds[i].name, name_len) == 0) {
      f->kind = kinds[i].kind;
      found = 1;
    }
  if (!found)
    return -1;
  f->worker = 0;
  f->step = 0;
  f->ms = -1;
  char keys[256];
  if (!colon ||
      snprintf(keys, sizeof keys, "%s", colon + 1) >= (int)sizeof keys)
    return colon ? -1 : (f->kind == RS_FAULT_STALL ? -1 : 0);
  char *save = NULL;
  for (char *kv = strtok_r(keys, ",", &save); kv;
       kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    long v;
    if (!eq || cli_parse_long(eq + 1, 0, INT_MAX, &v))
      return -1;
    *eq = '\0';
    if (strcmp(kv, "worker") == 0)
      f->worker = (int)v;
    else if (strcmp(kv, "step") == 0)
      f->step = (int)v;
    else if (strcmp(kv, "ms") == 0 && f->kind == RS_FAULT_STALL)
      f->ms = (int)v;
    else
      return -1;
  }
  if (f->kind == RS_FAULT_STALL && f->ms < 0)
    return -1;
  return 0;
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
  OPT_NET,
  OPT_REDUCE_RATE,
  OPT_LINK,
  OPT_STRAGGLER,
  OPT_EXPLAIN,
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
    {"slots", required_argument, NULL, OPT_SLOTS},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"print", no_argument, NULL, OPT_PRINT},
    {"json", no_argument, NULL, OPT_JSON},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"no-trace", no_argument, NULL, OPT_NO_TRACE},
    {"inject", required_argument, NULL, OPT_INJECT},
    {"checksum", no_argument, NULL, OPT_CHECKSUM},
    {"direct", no_argument, NULL, OPT_DIRECT},
    {"net", required_argument, NULL, OPT_NET},
    {"reduce-rate", required_argument, NULL, OPT_REDUCE_RATE},
    {"link", required_argument, NULL, OPT_LINK},
    {"straggler", required_argument, NULL, OPT_STRAGGLER},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
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
static int parse_args(int argc, char **argv, options_t *o) {
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
      fputs(usage_text, stdout);
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
                                   ? "--workers '%s': expected an integer in "
                                     "1..1048576"
                                   : "--workers '%s': expected an integer in "
                                     "1..4096",
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
    case OPT_OP:
      if (strcmp(optarg, "sum") == 0)
        o->config.op = RS_OP_SUM;
      else if (strcmp(optarg, "avg") == 0)
        o->config.op = RS_OP_AVG;
      else
        return cli_usage_error("--op '%s': expected sum or avg", optarg);
      break;
    case OPT_SEGMENT_BYTES:
      if (cli_parse_bytes(optarg, &o->config.segment_bytes) ||
          o->config.segment_bytes < 4 || o->config.segment_bytes > (1u << 30))
        return cli_usage_error(
            "--segment-bytes '%s': expected a size from 4 to 1G", optarg);
      break;
    case OPT_SLOTS:
      if (cli_parse_long(optarg, 1, 1024, &v))
        return cli_usage_error("--slots '%s': expected an integer in 1..1024",
                               optarg);
      o->config.slots = (int)v;
      break;
    case OPT_TIMEOUT: {
      char *end;
      errno = 0;
      double t = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(t > 0 && t <= 1e6))
        return cli_usage_error("--timeout '%s': expected seconds in (0, 1e6]",
                               optarg);
      o->config.timeout_s = t;
      break;
    }
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
      if (parse_fault(optarg, &o->config.faults[o->config.fault_count]))
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
    case OPT_DIRECT:
      o->config.direct = 1;
      break;
    }
  }
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
  if (o->out && !dir_writable(o->out))
    return cli_usage_error("--out '%s': cannot create a file there", o->out);
  return -1;
}

/* Print x with the fewest digits that read back as the same float. */
static void format_float(float x, char *buf, size_t size) {
  for (int digits = 1; digits <= 9; digits++) {
    snprintf(buf, size, "%.*g", digits, (double)x);
    if (strtof(buf, NULL) == x)
      return;
  }
}

static void print_values(const rs_model_t *model, const float *values) {
  char num[32];
  for (size_t p = 0; p < rs_model_param_count(model); p++) {
    const rs_param_t *param = rs_model_param(model, p);
    printf("  %s: [", param->name);
    for (size_t i = 0; i < param->elems; i++) {
      format_float(values[param->elem_offset + i], num, sizeof num);
      printf("%s%s", i ? ", " : "", num);
    }
    printf("]\n");
  }
}

static json_t *values_json(const rs_model_t *model, const float *values) {
  json_t *obj = json_object();
  for (size_t p = 0; p < rs_model_param_count(model); p++) {
    const rs_param_t *param = rs_model_param(model, p);
    json_t *list = json_array();
    for (size_t i = 0; i < param->elems; i++)
      json_array_append_new(list, json_real(values[param->elem_offset + i]));
    json_object_set_new(obj, param->name, list);
  }
  return obj;
}

static void human_bytes(double bytes, char *buf, size_t size) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    u++;
  }
  snprintf(buf, size, u ? "%.2f %s" : "%.0f %s", bytes, units[u]);
}

/* "3 elements", or "3-4 elements" when the sizes differ. */
static void range_text(uint64_t lo, uint64_t hi, const char *unit, char *buf,
                       size_t size) {
  if (lo == hi)
    snprintf(buf, size, "%llu %s%s", (unsigned long long)lo, unit,
             lo == 1 ? "" : "s");
  else
    snprintf(buf, size, "%llu-%llu %ss", (unsigned long long)lo,
             (unsigned long long)hi, unit);
}

static const char *init_name(rs_init_t init) {
  return init == RS_INIT_EXACT     ? "exact"
         : init == RS_INIT_UNIFORM ? "uniform"
                                   : "normal";
}

typedef struct report {
  const options_t *opt;
  const rs_model_t *model;
  rs_run_t *run;
  const char *source; /* where the grads came from */
  int status;
  const char *trace; /* file, or NULL */
} report_t;

/* When a fault ends a run, say where every worker stopped (in the spirit
 * of PyTorch's Flight Recorder), so a hang names its culprit. */
#define WATCHDOG_LINES 32

static void print_watchdog(rs_run_t *run) {
  const int W = rs_run_config(run)->workers;
  fprintf(stderr, "ringsim: watchdog: where each worker stopped:\n");
  for (int w = 0; w < W && w < WATCHDOG_LINES; w++) {
    rs_worker_state_t s;
    rs_run_worker_state(run, w, &s);
    fprintf(stderr, "  worker %-4d %-15s %s step %d", w, s.state,
            s.phase ? s.phase : "-", s.step);
    int sending = s.waiting && strcmp(s.waiting, "send") == 0;
    int blocked =
        strcmp(s.state, "timed_out") == 0 || strcmp(s.state, "aborted") == 0;
    if (s.waiting)
      fprintf(stderr, ", %s chunk %d %s worker %d",
              blocked ? (sending ? "waiting to send" : "waiting to receive")
                      : (sending ? "while sending" : "while receiving"),
              s.chunk, sending ? "to" : "from", s.peer);
    fputc('\n', stderr);
  }
  if (W > WATCHDOG_LINES)
    fprintf(stderr,
            "  ... and %d more workers (the trace's worker table has "
            "them all)\n",
            W - WATCHDOG_LINES);
}

static json_t *watchdog_json(rs_run_t *run) {
  json_t *list = json_array();
  for (int w = 0; w < rs_run_config(run)->workers; w++) {
    rs_worker_state_t s;
    rs_run_worker_state(run, w, &s);
    json_array_append_new(
        list, json_pack("{s:i, s:s, s:s?, s:i, s:i, s:s?, s:o}", "worker", w,
                        "state", s.state, "phase", s.phase, "step", s.step,
                        "chunk", s.chunk, "waiting", s.waiting, "peer",
                        s.waiting ? json_integer(s.peer) : json_null()));
  }
  return list;
}

static int exit_code(int status) {
  switch (status) {
  case RS_OK:
    return 0;
  case RS_ECHECK:
    return EXIT_CHECK;
  case RS_EINVAL:
  case RS_EPARSE:
  case RS_EIO:
    return EXIT_USAGE;
  default:
    return EXIT_RUN;
  }
}

static const char *status_name(int status) {
  return status == RS_OK       ? "ok"
         : status == RS_ECHECK ? "check_failed"
                               : "failed";
}

/* The figures every report shows, derived once. */
typedef struct figures {
  int workers;
  size_t elems;
  double bytes;       /* S: bytes per worker */
  double sent_theory; /* 2(W-1)/W x S */
  uint64_t sent_min, sent_max;
  double seconds, algbw, busbw;
} figures_t;

static figures_t compute_figures(const report_t *r) {
  figures_t f = {0};
  const rs_result_t *res = rs_run_result(r->run);
  f.workers = rs_run_config(r->run)->workers;
  f.elems = rs_model_elems(r->model);
  f.bytes = (double)f.elems * sizeof(float);
  f.sent_theory = 2.0 * (f.workers - 1) / f.workers * f.bytes;
  f.sent_min = UINT64_MAX;
  for (int w = 0; w < f.workers; w++) {
    uint64_t b = rs_run_worker_stats(r->run, w)->bytes_sent;
    f.sent_min = b < f.sent_min ? b : f.sent_min;
    f.sent_max = b > f.sent_max ? b : f.sent_max;
  }
  f.seconds = (double)res->wall_ns / 1e9;
  f.algbw = f.seconds > 0 ? f.bytes / f.seconds / 1e9 : 0;
  f.busbw = f.algbw * 2.0 * (f.workers - 1) / f.workers;
  return f;
}

/* Simulated, predicted and measured time side by side. */
static void print_sim_line(const rs_config_t *cfg, const rs_result_t *res,
                           double wall_s) {
  const rs_netmodel_t *net = &cfg->net;
  printf("  network    latency %.3f us, bandwidth %.3f GB/s per link",
         (double)net->link.latency_ns / 1e3, (double)net->link.bandwidth / 1e9);
  if (net->reduce_rate)
    printf(", reduce %.3f GB/s", (double)net->reduce_rate / 1e9);
  if (net->link_count || net->straggler_count)
    printf(", %d slower link%s, %d straggler%s", net->link_count,
           net->link_count == 1 ? "" : "s", net->straggler_count,
           net->straggler_count == 1 ? "" : "s");
  printf("\n  simulated  %.3f us   predicted 2(W-1) k (alpha + beta b) + (W-1) "
         "k gamma b = %.3f us%s   measured wall %.3f us\n",
         (double)res->sim_ns / 1e3, (double)res->predicted_ns / 1e3,
         net->link_count || net->straggler_count ? " (uniform ring)" : "",
         wall_s * 1e6);
}

static void print_text(const report_t *r) {
  const rs_result_t *res = rs_run_result(r->run);
  const rs_config_t *cfg = rs_run_config(r->run);
  figures_t f = compute_figures(r);
  int W = f.workers;
  char size[32], a[32];
  human_bytes(f.bytes, size, sizeof size);

  printf("ringsim %s: ring all-reduce (%s) of model \"%s\" on %d worker%s\n",
         RS_VERSION, cfg->op == RS_OP_AVG ? "avg" : "sum",
         rs_model_name(r->model), W, W == 1 ? "" : "s");
  printf("  model      %zu params, %zu elements, %s of f32 per worker\n",
         rs_model_param_count(r->model), f.elems, size);
  printf("  grads      %s\n", r->source);
  char chunk[64], sent[64];
  range_text(rs_chunk_elems(f.elems, W, W - 1), rs_chunk_elems(f.elems, W, 0),
             "element", chunk, sizeof chunk);
  printf("  chunks     %d of %s, %zu segment%s each (<= %zu elements), %d "
         "slots per channel\n",
         W, chunk, res->segs_per_chunk, res->segs_per_chunk == 1 ? "" : "s",
         res->seg_elems, cfg->slots);
  printf("  steps      %d reduce-scatter + %d all-gather\n", W - 1, W - 1);
  printf("  transfers  %llu (%llu per worker)\n",
         (unsigned long long)res->transfers,
         (unsigned long long)(res->transfers / (uint64_t)W));
  range_text(f.sent_min, f.sent_max, "byte", sent, sizeof sent);
  human_bytes((double)f.sent_max, a, sizeof a);
  printf("  sent       %s per worker (%s); theory 2(W-1)/W x S = %.0f bytes\n",
         sent, a, f.sent_theory);
  printf("  time       %.6f s wall   algbw %.3f GB/s   busbw %.3f GB/s   "
         "(direct mean in one thread: %.6f s)\n",
         f.seconds, f.algbw, f.busbw, (double)res->ref_ns / 1e9);
  if (cfg->net.enabled && r->status == RS_OK)
    print_sim_line(cfg, res, f.seconds);
  if (r->trace && rs_run_trace_id(r->run) && !rs_run_trace_error(r->run))
    printf("  trace      %s, run %lld\n", r->trace,
           (long long)rs_run_trace_id(r->run));
  if (r->status != RS_OK && r->status != RS_ECHECK) {
    printf("  status     FAILED: %s\n", rs_run_errmsg(r->run));
    return;
  }
  printf("  check      %s\n",
         res->identical ? (W == 1 ? "1 worker: the identity"
                                  : "all workers hold identical gradients")
                        : "workers DIFFER: not bitwise identical");
  if (res->exact)
    printf("             exact inputs: %s\n",
           res->worst_ratio == 0 ? "every element equals the reference bit "
                                   "for bit"
                                 : "elements DIFFER from the reference");
  else
    printf("             max abs err %.3g against the float64 reference, "
           "bound %.3g (worst err/bound %.3g)\n",
           res->max_abs_err, res->bound, res->worst_ratio);
  printf("  status     %s\n", r->status == RS_OK ? "ok" : "CHECK FAILED");
  if (r->opt->print_values || f.elems <= PRINT_VALUES_UP_TO) {
    printf("result (every worker holds):\n");
    print_values(r->model, rs_run_buffer(r->run, 0));
  }
}

static void print_json(const report_t *r) {
  const rs_result_t *res = rs_run_result(r->run);
  const rs_config_t *cfg = rs_run_config(r->run);
  figures_t f = compute_figures(r);
  json_t *sent = json_array();
  for (int w = 0; w < f.workers; w++)
    json_array_append_new(
        sent,
        json_integer((json_int_t)rs_run_worker_stats(r->run, w)->bytes_sent));
  json_t *params = json_array();
  for (size_t p = 0; p < rs_model_param_count(r->model); p++) {
    const rs_param_t *param = rs_model_param(r->model, p);
    const rs_param_check_t *c = rs_run_param_check(r->run, p);
    json_array_append_new(
        params,
        json_pack("{s:s, s:I, s:I, s:f, s:f, s:f, s:I}", "name", param->name,
                  "elem_offset", (json_int_t)param->elem_offset, "elems",
                  (json_int_t)param->elems, "max_abs_err", c->max_abs_err,
                  "max_rel_err", c->max_rel_err, "bound", c->bound, "differing",
                  (json_int_t)c->differing));
  }
  json_t *o = json_object();
  json_object_set_new(o, "version", json_string(RS_VERSION));
  json_object_set_new(o, "model", json_string(rs_model_name(r->model)));
  json_object_set_new(o, "workers", json_integer(f.workers));
  json_object_set_new(o, "op",
                      json_string(cfg->op == RS_OP_AVG ? "avg" : "sum"));
  json_object_set_new(o, "grads", json_string(r->source));
  json_object_set_new(o, "params",
                      json_integer((json_int_t)rs_model_param_count(r->model)));
  json_object_set_new(o, "elems", json_integer((json_int_t)f.elems));
  json_object_set_new(o, "bytes", json_integer((json_int_t)f.bytes));
  json_object_set_new(o, "segs_per_chunk",
                      json_integer((json_int_t)res->segs_per_chunk));
  json_object_set_new(o, "segment_elems",
                      json_integer((json_int_t)res->seg_elems));
  json_object_set_new(o, "slots", json_integer(cfg->slots));
  json_object_set_new(o, "transfers", json_integer((json_int_t)res->transfers));
  json_object_set_new(o, "bytes_sent", sent);
  json_object_set_new(o, "bytes_sent_theory", json_real(f.sent_theory));
  json_object_set_new(o, "identical", json_boolean(res->identical));
  json_object_set_new(o, "exact", json_boolean(res->exact));
  json_object_set_new(o, "max_abs_err", json_real(res->max_abs_err));
  json_object_set_new(o, "bound", json_real(res->bound));
  json_object_set_new(o, "worst_ratio",
                      isfinite(res->worst_ratio) ? json_real(res->worst_ratio)
                                                 : json_null());
  json_object_set_new(o, "param_checks", params);
  json_object_set_new(o, "wall_ns", json_integer((json_int_t)res->wall_ns));
  if (cfg->net.enabled) {
    json_object_set_new(o, "sim_ns", json_integer((json_int_t)res->sim_ns));
    json_object_set_new(o, "predicted_ns",
                        json_integer((json_int_t)res->predicted_ns));
  }
  json_object_set_new(o, "ref_ns", json_integer((json_int_t)res->ref_ns));
  json_object_set_new(o, "algbw_gbs", json_real(f.algbw));
  json_object_set_new(o, "busbw_gbs", json_real(f.busbw));
  int traced =
      r->trace && rs_run_trace_id(r->run) && !rs_run_trace_error(r->run);
  json_object_set_new(o, "trace", traced ? json_string(r->trace) : json_null());
  json_object_set_new(o, "run_id",
                      traced ? json_integer(rs_run_trace_id(r->run))
                             : json_null());
  json_object_set_new(o, "status", json_string(status_name(r->status)));
  if (exit_code(r->status) == EXIT_RUN)
    json_object_set_new(o, "watchdog", watchdog_json(r->run));
  json_object_set_new(
      o, "error", r->status ? json_string(rs_run_errmsg(r->run)) : json_null());
  if (r->opt->print_values || f.elems <= PRINT_VALUES_UP_TO)
    json_object_set_new(o, "result",
                        values_json(r->model, rs_run_buffer(r->run, 0)));
  json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
  putchar('\n');
  json_decref(o);
}

/* The run's configuration as the trace stores it: the options as given. */
static char *config_json(const options_t *o, int argc, char **argv) {
  json_t *args = json_array();
  for (int i = 1; i < argc; i++)
    json_array_append_new(args, json_string(argv[i]));
  json_t *c = json_pack(
      "{s:s, s:i, s:s, s:s?, s:s?, s:I, s:s, s:s, s:I, s:i, s:f, s:o}",
      "params", o->params, "workers", o->config.workers, "op",
      o->config.op == RS_OP_AVG ? "avg" : "sum", "grads", o->grads, "out",
      o->out, "seed", (json_int_t)o->seed, "init", init_name(o->init),
      "collective", "all_reduce", "segment_bytes",
      (json_int_t)o->config.segment_bytes, "slots", o->config.slots,
      "timeout_s", o->config.timeout_s, "argv", args);
  char *text = c ? json_dumps(c, JSON_COMPACT) : NULL;
  json_decref(c);
  return text;
}

/* `ringsim model`: the schedule's simulated time alone, no threads or
 * data, for rings far larger than the machine. */
static int run_model(const options_t *opt, const rs_model_t *model) {
  char err[RS_ERRMSG_MAX];
  const rs_netmodel_t *net = &opt->config.net;
  const int W = opt->config.workers;
  if (!net->enabled)
    return cli_usage_error("%s", "model: --net latency=...,bandwidth=... is "
                                 "required");
  if (rs_netmodel_check(net, W, err))
    return cli_usage_error("%s", err);
  size_t elems = rs_model_elems(model);
  size_t segs = rs_segs_per_chunk(elems, W, opt->config.segment_bytes);
  uint64_t sim = rs_netmodel_simulate(net, W, elems, segs);
  uint64_t predicted = rs_netmodel_predict(net, W, elems, segs);
  double bytes = (double)elems * sizeof(float);
  double algbw = sim ? bytes / (double)sim : 0; /* bytes per ns = GB/s */
  double busbw = W > 1 ? algbw * 2.0 * (W - 1) / W : 0;
  if (opt->json) {
    json_t *o = json_pack("{s:s, s:i, s:I, s:f, s:I, s:I, s:I, s:f, s:f}",
                          "model", rs_model_name(model), "workers", W, "elems",
                          (json_int_t)elems, "bytes", bytes, "segs_per_chunk",
                          (json_int_t)segs, "sim_ns", (json_int_t)sim,
                          "predicted_ns", (json_int_t)predicted, "algbw_gbs",
                          algbw, "busbw_gbs", busbw);
    json_dumpf(o, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(o);
    return 0;
  }
  char size[32];
  human_bytes(bytes, size, sizeof size);
  printf("ringsim model: ring all-reduce of \"%s\" on %d workers, %s per "
         "worker (the schedule alone: no threads, no data)\n",
         rs_model_name(model), W, size);
  printf("  network    latency %.3f us, bandwidth %.3f GB/s per link",
         (double)net->link.latency_ns / 1e3, (double)net->link.bandwidth / 1e9);
  if (net->reduce_rate)
    printf(", reduce %.3f GB/s", (double)net->reduce_rate / 1e9);
  printf("\n  schedule   %d steps, %zu segment%s per chunk\n",
         W > 1 ? 2 * (W - 1) : 0, segs, segs == 1 ? "" : "s");
  printf("  simulated  %.3f us   algbw %.3f GB/s   busbw %.3f GB/s\n",
         (double)sim / 1e3, algbw, busbw);
  printf("  predicted  %.3f us   2(W-1) k (alpha + b/beta) + (W-1) k b/gamma"
         "%s\n",
         (double)predicted / 1e3,
         net->link_count || net->straggler_count
             ? " (for a uniform ring: the overrides are not in it)"
             : "");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "bench") == 0)
    return cli_bench(argc - 1, argv + 1);
  options_t opt = {0};
  int model_only = argc > 1 && strcmp(argv[1], "model") == 0;
  opt.model_only = model_only;
  int rc = parse_args(argc - model_only, argv + model_only, &opt);
  if (rc >= 0)
    return rc;

  char err[RS_ERRMSG_MAX];
  rs_model_t *model = NULL;
  rs_run_t *run = NULL;
  rs_trace_t *trace = NULL;
  if (rs_model_load(opt.params, &model, err)) {
    fprintf(stderr, "ringsim: %s\n", err);
    return EXIT_USAGE;
  }
  if (opt.model_only) {
    rc = run_model(&opt, model);
    goto done;
  }
  int inline_workers = rs_model_inline_workers(model);
  int use_inline = inline_workers > 0 && !opt.grads;
  if (!opt.workers_given && use_inline)
    opt.config.workers = inline_workers;
  if (use_inline && (opt.init_given || opt.seed_given)) {
    fprintf(stderr,
            "ringsim: %s: the model gives inline grads; --init and "
            "--seed only apply to generated grads\n",
            opt.params);
    rc = EXIT_USAGE;
    goto done;
  }
  if (use_inline && inline_workers != opt.config.workers) {
    fprintf(stderr, "ringsim: %s: grads has %d entries but --workers is %d\n",
            opt.params, inline_workers, opt.config.workers);
    rc = EXIT_USAGE;
    goto done;
  }
  if (rs_run_create(&opt.config, model, &run, err)) {
    fprintf(stderr, "ringsim: %s\n", err);
    rc = EXIT_USAGE;
    goto done;
  }
  if (opt.explain && rs_explain(stdout, model, opt.config.workers,
                                opt.config.op, err) != RS_OK) {
    fprintf(stderr, "ringsim: %s\n", err);
    rc = EXIT_USAGE;
    goto done;
  }

  if (opt.trace) {
    if (rs_trace_open(opt.trace, &trace, err)) {
      fprintf(stderr, "ringsim: %s\n", err);
      rc = EXIT_USAGE;
      goto done;
    }
    char *config = config_json(&opt, argc, argv);
    int set = rs_run_set_trace(run, trace, config);
    free(config);
    if (set) {
      fprintf(stderr, "ringsim: %s\n", rs_run_errmsg(run));
      rc = EXIT_RUN;
      goto done;
    }
  }

  char source[RS_ERRMSG_MAX];
  int status;
  if (opt.grads) {
    status = rs_run_load_grads(run, opt.grads);
    snprintf(source, sizeof source, "read from %s", opt.grads);
  } else if (use_inline) {
    status = rs_run_fill_inline(run);
    snprintf(source, sizeof source, "inline in %s", opt.params);
  } else {
    status = rs_run_fill(run, opt.init, opt.seed);
    snprintf(source, sizeof source, "generated: %s, seed %llu",
             init_name(opt.init), (unsigned long long)opt.seed);
  }
  if (status == RS_OK)
    status = rs_run_execute(run);
  if (exit_code(status) == EXIT_USAGE) {
    /* Only input errors map here, and they stop a run before its ring. */
    fprintf(stderr, "ringsim: %s\n", rs_run_errmsg(run));
    rc = EXIT_USAGE;
    goto done;
  }
  report_t report = {&opt, model, run, source, status, opt.trace};
  if (opt.json)
    print_json(&report);
  else
    print_text(&report);
  fflush(stdout);
  if (status != RS_OK)
    fprintf(stderr, "ringsim: %s\n", rs_run_errmsg(run));
  rc = exit_code(status);
  if (rc == EXIT_RUN)
    print_watchdog(run);
  if (rs_run_trace_error(run)) {
    fprintf(stderr, "ringsim: %s\n", rs_run_trace_error(run));
    if (rc == 0)
      rc = EXIT_RUN;
  }
  if (rc == 0 && opt.out &&
      rs_safetensors_write(opt.out, model, rs_run_buffer(run, 0), err)) {
    fprintf(stderr, "ringsim: %s\n", err);
    rc = EXIT_USAGE;
  }
done:
  rs_run_free(run);
  rs_trace_close(trace);
  rs_model_free(model);
  return rc;
}
