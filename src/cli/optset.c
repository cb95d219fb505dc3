/* optset.c - how each option's value is read and where it is stored: the
 * setters the option table's rows name.
 *
 * The options the library reads too (--op, --slots, --timeout, --net, ...)
 * go through rs_config_set, as the Python package's do: one parser and one
 * message for both. The rest are read here, numbers by args.c's one
 * reader, so a bad value gives the same line in every mode.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algo/nccl.h" /* --like nccl's names: NCCL_ALGO, NCCL_PROTO */
#include "option.h"
#include "ringsim/step.h"

/* A flag: 1 at opt->field (an int). */
int cli_set_flag(const cli_option_t *opt, options_t *o, const char *value,
                 char *msg) {
  (void)value;
  (void)msg;
  *(int *)((char *)o + opt->field) = 1;
  return 0;
}

/* Text kept as given (a file name, a pattern): at opt->field. */
int cli_set_text(const cli_option_t *opt, options_t *o, const char *value,
                 char *msg) {
  (void)msg;
  *(const char **)((char *)o + opt->field) = value;
  return 0;
}

/* An integer in [opt->min, opt->max], into the int at opt->field. */
int cli_set_int(const cli_option_t *opt, options_t *o, const char *value,
                char *msg) {
  long v;
  char expected[64];
  if (rs_read_int(value, opt->min, opt->max, &v)) {
    cli_expect_int(opt->min, opt->max, expected, sizeof expected);
    return cli_bad_value(msg, opt, value, "%s", expected);
  }
  *(int *)((char *)o + opt->field) = (int)v;
  return 0;
}

/* A size in [opt->min, opt->max] bytes, into the size_t at opt->field. */
int cli_set_size(const cli_option_t *opt, options_t *o, const char *value,
                 char *msg) {
  size_t v;
  char expected[96];
  if (cli_read_size(value, (size_t)opt->min, (size_t)opt->max, &v)) {
    cli_expect_size((size_t)opt->min, (size_t)opt->max, expected,
                    sizeof expected);
    return cli_bad_value(msg, opt, value, "%s", expected);
  }
  *(size_t *)((char *)o + opt->field) = v;
  return 0;
}

/* An option the library reads (rs_config_set), into o->config; its
 * message names the option, and gets the "--" the library leaves out. */
int cli_set_config(const cli_option_t *opt, options_t *o, const char *value,
                   char *msg) {
  char err[RS_ERRMSG_MAX];
  if (rs_config_set(&o->config, opt->name, value, err) == RS_OK)
    return 0;
  snprintf(msg, RS_ERRMSG_MAX, "%s%.*s", strncmp(err, "--", 2) ? "--" : "",
           RS_ERRMSG_MAX - 8, err);
  return -1;
}

/* --hook: the library's names, and in a run powersgd's Qs from a file,
 * last (a file name may hold commas): powersgd:rank=R[,...],q=FILE (kept
 * as given, from argv). */
int cli_set_hook(const cli_option_t *opt, options_t *o, const char *value,
                 char *msg) {
  const char *q = strstr(value, ",q=");
  o->powersgd_q = NULL; /* (a hook given again: the last one's, whole) */
  if (!q || strncmp(value, "powersgd:", 9) != 0)
    return cli_set_config(opt, o, value, msg);
  if (o->mode != CLI_RUN)
    return cli_bad_value(msg, opt, value,
                         "a hook without q=FILE (the initial Qs are a run's "
                         "alone)");
  if (!q[3])
    return cli_bad_value(msg, opt, value,
                         "powersgd:rank=R,q=FILE (q= names no file)");
  char head[256];
  if ((size_t)(q - value) >= sizeof head)
    return cli_bad_value(msg, opt, value, "expected powersgd:rank=R,q=FILE");
  snprintf(head, sizeof head, "%.*s", (int)(q - value), value);
  if (cli_set_config(opt, o, head, msg))
    return -1;
  o->powersgd_q = (char *)q + 3;
  return 0;
}

/* --bucket-mb: the library's, or ringsim step's list of caps (1,5,25) or
 * sweep (the 8 caps of STEP_SWEEP); sweep is step's alone. */
static const int STEP_SWEEP[] = {1, 2, 5, 10, 25, 50, 100, 250};

int cli_set_bucket_mb(const cli_option_t *opt, options_t *o, const char *value,
                      char *msg) {
  if (o->mode != CLI_STEP) {
    if (strcmp(value, "sweep") == 0 || strchr(value, ','))
      return cli_bad_value(msg, opt, value,
                           "one cap in MiB: only ringsim step sweeps bucket "
                           "sizes");
    return cli_set_config(opt, o, value, msg);
  }
  o->step.sweep = strcmp(value, "sweep") == 0;
  if (o->step.sweep) {
    o->step.cap_count = (int)(sizeof STEP_SWEEP / sizeof *STEP_SWEEP);
    for (int i = 0; i < o->step.cap_count; i++)
      o->step.caps[i] = (size_t)STEP_SWEEP[i] << 20;
    return 0;
  }
  int n = 0;
  for (const char *p = value;; p++) {
    const size_t len = strcspn(p, ",");
    char item[32];
    rs_config_t c;
    rs_config_init(&c);
    snprintf(item, sizeof item, "%.*s", (int)(len < 31 ? len : 31), p);
    if (n == CLI_STEP_MAX_CAPS || len == 0 || len > 30 ||
        rs_config_set(&c, "bucket-mb", item, msg))
      return cli_bad_value(msg, opt, value,
                           "a cap in MiB (0: one bucket), a list of at most "
                           "%d like 1,5,25, or sweep",
                           CLI_STEP_MAX_CAPS);
    o->step.caps[n++] = c.bucket_bytes;
    p += len;
    if (!*p)
      break;
  }
  o->step.cap_count = n;
  o->config.bucket_bytes = o->step.caps[0];
  return 0;
}

/* --straggler: the library's (worker=1,us=200), or in ringsim step a
 * slower compute (worker=1,compute=1.3: 30% slower), once. */
int cli_set_straggler(const cli_option_t *opt, options_t *o, const char *value,
                      char *msg) {
  long worker = -1;
  double factor = 0;
  if (!strstr(value, "compute="))
    return cli_set_config(opt, o, value, msg);
  if (o->mode != CLI_STEP)
    return cli_bad_value(msg, opt, value,
                         "worker=N,us=MICROSECONDS: a slower compute "
                         "(compute=) is ringsim step's");
  const char *comma = strchr(value, ',');
  char who[24];
  if (strncmp(value, "worker=", 7) == 0 && comma &&
      (size_t)(comma - value - 7) < sizeof who &&
      strncmp(comma, ",compute=", 9) == 0) {
    snprintf(who, sizeof who, "%.*s", (int)(comma - value - 7), value + 7);
    if (rs_read_int(who, 0, MODEL_MAX_WORKERS, &worker) ||
        rs_read_real(comma + 9, &factor))
      worker = -1;
  }
  if (worker < 0 || !(factor >= 1) || factor > 1000)
    return cli_bad_value(msg, opt, value,
                         "worker=N,compute=F: worker N computes F times as "
                         "long, F in 1..1000 (1.3: 30%% slower)");
  if (o->step.slow_worker >= 0)
    return cli_bad_value(msg, opt, value,
                         "one slower compute: worker %d's is given already",
                         o->step.slow_worker);
  o->step.slow_worker = (int)worker;
  o->step.slow = factor;
  return 0;
}

int cli_set_compute(const cli_option_t *opt, options_t *o, const char *value,
                    char *msg) {
  (void)opt;
  rs_compute_t c;
  if (rs_compute_parse(value, &c, msg))
    return -1;
  o->step.flops = c.flops;
  o->step.rows = c.rows;
  return 0;
}

/* A list of integers in 1..max, comma-separated, no item empty, at most
 * room of them, into out; how many, or -1 if value is not such a list. */
static int read_list(const char *value, int room, long max, int *out) {
  int n = 0;
  for (const char *p = value;; p++) {
    char item[24];
    long v;
    const size_t len = strcspn(p, ",");
    if (n == room || len == 0 || len >= sizeof item)
      return -1;
    snprintf(item, sizeof item, "%.*s", (int)len, p);
    if (rs_read_int(item, 1, max, &v))
      return -1;
    out[n++] = (int)v;
    p += len;
    if (!*p)
      return n;
  }
}

/* --workers: N (run, diff: 1..RS_MAX_WORKERS; model: 1..MODEL_MAX_WORKERS)
 * or, for bench, a list of them to sweep, and for model a list of rows. */
int cli_set_workers(const cli_option_t *opt, options_t *o, const char *value,
                    char *msg) {
  long v;
  if (o->mode == CLI_MODEL && strchr(value, ',')) { /* a row each */
    int n = read_list(value, CLI_MODEL_MAX_ROWS, MODEL_MAX_WORKERS,
                      o->rows.workers);
    if (n < 0)
      return cli_bad_value(msg, opt, value,
                           "W or a list like 8,64,512 (at most %d), each in "
                           "1..%d",
                           CLI_MODEL_MAX_ROWS, MODEL_MAX_WORKERS);
    o->rows.count = n;
    o->config.workers = o->rows.workers[0];
    o->workers_given = 1;
    return 0;
  }
  if (o->mode == CLI_MODEL && o->rows.count && !o->rows.nodes[0])
    o->rows.count = 0; /* (a list of --workers given before: this one) */
  if (o->mode != CLI_BENCH) {
    long max = o->mode == CLI_MODEL || o->mode == CLI_STEP ? MODEL_MAX_WORKERS
                                                           : RS_MAX_WORKERS;
    if (rs_read_int(value, 1, max, &v))
      return cli_bad_value(msg, opt, value, "an integer in 1..%ld", max);
    o->config.workers = (int)v;
    o->workers_given = 1;
    return 0;
  }
  int n =
      read_list(value, CLI_BENCH_MAX_SIZES, RS_MAX_WORKERS, o->bench.workers);
  if (n < 0)
    return cli_bad_value(msg, opt, value,
                         "W or a list like 4,8,16, each in 1..%d",
                         RS_MAX_WORKERS);
  o->bench.worker_count = n;
  return 0;
}

/* ringsim model's --topo: nodes= may be followed by more counts
 * (dgx-h100,nodes=1,8,64), a row each; the library reads them
 * (rs_topo_parse_rows), so its messages quote the spec as given.
 * Elsewhere the spec goes to the library as it is (which refuses a bare
 * count). */
int cli_set_topo(const cli_option_t *opt, options_t *o, const char *value,
                 char *msg) {
  o->topo_spec = value;
  if (o->mode != CLI_MODEL)
    return cli_set_config(opt, o, value, msg);
  int n = 0;
  rs_topo_t topo;
  if (rs_topo_parse_rows(value, &topo, o->rows.nodes, CLI_MODEL_MAX_ROWS, &n,
                         msg))
    return -1;
  o->config.net.topo = topo; /* as rs_config_set does */
  o->config.net.enabled = 1;
  if (n > 1) {
    o->rows.count = n;
    for (int i = 0; i < n; i++)
      o->rows.workers[i] = o->rows.nodes[i] * topo.gpus;
  } else if (o->rows.nodes[0]) { /* (a list of nodes given before) */
    o->rows.count = 0;
    o->rows.nodes[0] = 0;
  }
  return 0;
}

int cli_set_seed(const cli_option_t *opt, options_t *o, const char *value,
                 char *msg) {
  long v;
  if (rs_read_int(value, 0, opt->max, &v))
    return cli_bad_value(msg, opt, value, "an integer in 0..%ld", opt->max);
  o->seed = (uint64_t)v;
  o->seed_given = 1;
  return 0;
}

int cli_set_init(const cli_option_t *opt, options_t *o, const char *value,
                 char *msg) {
  static const char *const names[] = {[RS_INIT_NORMAL] = "normal",
                                      [RS_INIT_UNIFORM] = "uniform",
                                      [RS_INIT_EXACT] = "exact"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (strcmp(value, names[i]) == 0) {
      o->init = (rs_init_t)i;
      o->init_given = 1;
      return 0;
    }
  return cli_bad_value(msg, opt, value, "normal, uniform or exact");
}

/* bench -d: nccl-tests' names for the element types. */
static const struct {
  const char *name;
  rs_dtype_t dtype;
} datatypes[] = {{"float", RS_DTYPE_F32},
                 {"double", RS_DTYPE_F64},
                 {"half", RS_DTYPE_F16},
                 {"bfloat16", RS_DTYPE_BF16}};

const char *cli_datatype_name(rs_dtype_t dtype) {
  for (size_t i = 0; i < sizeof datatypes / sizeof *datatypes; i++)
    if (datatypes[i].dtype == dtype)
      return datatypes[i].name;
  return "?";
}

int cli_set_datatype(const cli_option_t *opt, options_t *o, const char *value,
                     char *msg) {
  for (size_t i = 0; i < sizeof datatypes / sizeof *datatypes; i++)
    if (strcmp(value, datatypes[i].name) == 0) {
      o->bench.dtype = datatypes[i].dtype;
      return 0;
    }
  return cli_bad_value(msg, opt, value, "float, double, half or bfloat16");
}

/* diff --dtype: one of the library's dtype names, kept as given. */
int cli_set_dtype(const cli_option_t *opt, options_t *o, const char *value,
                  char *msg) {
  char names[64] = "";
  size_t len = 0;
  for (int d = RS_DTYPE_F32; d <= RS_DTYPE_F64; d++) {
    const char *name = rs_dtype_name((rs_dtype_t)d);
    if (strcmp(value, name) == 0) {
      o->dtype_name = value;
      return 0;
    }
    len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
                            d == RS_DTYPE_F32   ? ""
                            : d == RS_DTYPE_F64 ? " or "
                                                : ", ",
                            name);
  }
  return cli_bad_value(msg, opt, value, "%s", names);
}

int cli_set_algo(const cli_option_t *opt, options_t *o, const char *value,
                 char *msg) {
  int algo = rs_algorithm_parse(value);
  int all = strcmp(value, "all") == 0 && cli_algo_takes_all(o->mode);
  /* model and step: NCCL's names too, for --like nccl (as NCCL_ALGO
   * spells them: ring, tree, nvls, nvlstree); options.c (step_nccl.c for
   * step) refuses the ones that are NCCL's alone without it, and the ones
   * that are not NCCL's with it */
  const int takes_nccl = o->mode == CLI_MODEL || o->mode == CLI_STEP;
  const int nccl = takes_nccl ? rs_nccl_algo_from_name(value) : -1;
  if (takes_nccl) {
    o->nccl.algo = nccl;
    o->nccl.algo_text = value;
    o->nccl.algo_foreign = algo < 0 && nccl >= 0;
    if (o->nccl.algo_foreign) {
      o->algo_all = 0;
      return 0;
    }
  }
  if (algo == RS_ALGO_AUTO && !cli_algo_takes_auto(o->mode)) {
    snprintf(msg, RS_ERRMSG_MAX,
             o->mode == CLI_STEP
                 ? "--algo %s chooses an algorithm per bucket of a run; "
                   "--algo all times the step with each"
                 : "--algo %s chooses an algorithm per bucket of a run; "
                   "--algo all prints every algorithm and the crossovers it "
                   "chooses by",
             value);
    return -1;
  }
  if (algo < 0 && !all) {
    char names[256];
    cli_algo_names(o->mode, 0, names, sizeof names);
    return cli_bad_value(msg, opt, value, "%s%s", names,
                         takes_nccl ? " (with --like nccl: ring, tree, nvls "
                                      "or nvlstree)"
                                    : "");
  }
  o->algo_all = all;
  if (!all) /* (all: the default stays until each is set in turn) */
    o->config.algo = (rs_algorithm_t)algo;
  return 0;
}

/* --like: model's and step's nccl (NCCL's tuner's pick, model.c and
 * step_nccl.c), or the library's (ddp-gloo, a run's and diff's). */
int cli_set_like(const cli_option_t *opt, options_t *o, const char *value,
                 char *msg) {
  if (o->mode != CLI_MODEL && o->mode != CLI_STEP) {
    if (strcmp(value, "nccl") == 0) /* (not yet on threads: issue 48) */
      return cli_bad_value(msg, opt, value,
                           "ddp-gloo (a run's threads have no NCCL channels "
                           "or NVLS yet: ringsim model --like nccl, or "
                           "ringsim step --like nccl, predict NCCL's run)");
    return cli_set_config(opt, o, value, msg);
  }
  if (strcmp(value, "nccl") != 0)
    return cli_bad_value(msg, opt, value,
                         "nccl (ringsim %s's only --like: ddp-gloo is a "
                         "run's)",
                         o->mode == CLI_MODEL ? "model" : "step");
  o->nccl.on = 1;
  return 0;
}

/* --proto: NCCL's protocol as NCCL_PROTO names it, or auto (the tuner's
 * pick). */
int cli_set_proto(const cli_option_t *opt, options_t *o, const char *value,
                  char *msg) {
  const int proto = rs_proto_from_name(value);
  if (proto < 0 && strcmp(value, "auto") != 0)
    return cli_bad_value(msg, opt, value, "LL, LL128, Simple or auto");
  o->nccl.proto = proto;
  /* (without --like nccl, the network model's protocol: net/proto.h;
   * rs_protocol_t counts from none, NCCL's index from LL) */
  o->config.net.proto =
      proto < 0 ? RS_PROTOCOL_NONE : (rs_protocol_t)(proto + RS_PROTOCOL_LL);
  return 0;
}

int cli_set_transport(const cli_option_t *opt, options_t *o, const char *value,
                      char *msg) {
  if (strcmp(value, "shm") && strcmp(value, "mpi"))
    return cli_bad_value(msg, opt, value, "shm or mpi");
  o->config.mpi = strcmp(value, "mpi") == 0;
  return 0;
}

int cli_test_knobs(rs_config_t *config, char *msg) {
  struct {
    const char *name;
    char *to;
    size_t size;
  } knobs[] = {
      {"RINGSIM_TEST_FLIP", config->test->flip, sizeof config->test->flip},
      {"RINGSIM_MPI_TRACE_BATCH", config->test->mpi_trace_batch,
       sizeof config->test->mpi_trace_batch}};
  for (size_t i = 0; i < sizeof knobs / sizeof *knobs; i++) {
    const char *value = getenv(knobs[i].name);
    if (!value)
      continue;
    if (strlen(value) >= knobs[i].size) {
      snprintf(msg, RS_ERRMSG_MAX, "%s '%.100s': longer than %zu bytes",
               knobs[i].name, value, knobs[i].size - 1);
      return -1;
    }
    memcpy(knobs[i].to, value, strlen(value) + 1);
  }
  return 0;
}

int cli_trace_open(const char *path, rs_trace_t **trace, char *err) {
  const char *text = getenv("RINGSIM_TRACE_WAIT");
  double wait_s = -1; /* the library's default */
  if (text &&
      (rs_read_real(text, &wait_s) || !(wait_s >= 0 && wait_s <= 1e6))) {
    snprintf(err, RS_ERRMSG_MAX,
             "RINGSIM_TRACE_WAIT '%.100s': expected seconds in [0, 1e6]", text);
    rs_one_line(err);
    return RS_EINVAL;
  }
  return rs_trace_open_waiting(path, wait_s, trace, err);
}

void cli_options_init(cli_mode_t mode, options_t *o) {
  o->mode = mode;
  memset(o->given, 0, sizeof o->given);
  rs_config_init(&o->config);
  o->config.test = &o->test; /* (cli_test_knobs fills them) */
  if (mode == CLI_STEP) {
    o->step.iterations = 2; /* the first, and one on rebuilt buckets */
    o->step.slow_worker = -1;
    o->step.slow = 1;
  }
  o->nccl.algo = -1;
  o->nccl.proto = -1;
  if (mode != CLI_BENCH && mode != CLI_MODEL)
    return;
  /* nccl-tests' defaults: sum, its sizes (bench's, and model --like
   * nccl's sweep), and NCCL's slice loop */
  o->config.op = RS_OP_SUM;
  o->bench.min_bytes = 8;
  o->bench.max_bytes = (size_t)64 << 20;
  o->bench.factor = 2;
  o->bench.dtype = RS_DTYPE_F32;
  if (mode == CLI_MODEL)
    return;
  o->config.timeout_s = 60;
  o->config.slices = 1;
  o->bench.workers[0] = 4;
  o->bench.worker_count = 1;
  o->bench.iters = 20;
  o->bench.warmup = 5;
  o->bench.nthreads = 1;
  o->bench.check = 1;
  o->bench.rank_average = 1; /* (nccl-tests' default) */
}
