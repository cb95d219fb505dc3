/* optable.c - the ringsim command's options, each once: its names, the
 * modes that take it, how its value is read and where it is stored, and
 * its line in each mode's usage text (optable.h says what a row holds).
 *
 * The options the library reads too (--op, --slots, --timeout, --net, ...)
 * go through rs_config_set, as the Python package's do: one parser and one
 * message for both. The rest are read here, numbers by args.c's one
 * reader, so a bad value gives the same line in every mode.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "optable.h"

#define FIELD(name) offsetof(options_t, name)

/* A flag: 1 at opt->field (an int). */
static int set_flag(const cli_option_t *opt, options_t *o, const char *value,
                    char *msg) {
  (void)value;
  (void)msg;
  *(int *)((char *)o + opt->field) = 1;
  return 0;
}

/* Text kept as given (a file name, a pattern): at opt->field. */
static int set_text(const cli_option_t *opt, options_t *o, const char *value,
                    char *msg) {
  (void)msg;
  *(const char **)((char *)o + opt->field) = value;
  return 0;
}

/* An integer in [opt->min, opt->max], into the int at opt->field. */
static int set_int(const cli_option_t *opt, options_t *o, const char *value,
                   char *msg) {
  long v;
  char expected[64];
  if (cli_read_int(value, opt->min, opt->max, &v)) {
    cli_expect_int(opt->min, opt->max, expected, sizeof expected);
    return cli_bad_value(msg, opt, value, "%s", expected);
  }
  *(int *)((char *)o + opt->field) = (int)v;
  return 0;
}

/* A size in [opt->min, opt->max] bytes, into the size_t at opt->field. */
static int set_size(const cli_option_t *opt, options_t *o, const char *value,
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
static int set_config(const cli_option_t *opt, options_t *o, const char *value,
                      char *msg) {
  char err[RS_ERRMSG_MAX];
  if (rs_config_set(&o->config, opt->name, value, err) == RS_OK)
    return 0;
  snprintf(msg, RS_ERRMSG_MAX, "%s%.*s", strncmp(err, "--", 2) ? "--" : "",
           RS_ERRMSG_MAX - 8, err);
  return -1;
}

/* --workers: N (run, diff: 1..RS_MAX_WORKERS; model: 1..MODEL_MAX_WORKERS)
 * or, for bench, a list of them to sweep. */
static int set_workers(const cli_option_t *opt, options_t *o, const char *value,
                       char *msg) {
  long v;
  if (o->mode != CLI_BENCH) {
    long max = o->mode == CLI_MODEL ? MODEL_MAX_WORKERS : RS_MAX_WORKERS;
    if (cli_read_int(value, 1, max, &v))
      return cli_bad_value(msg, opt, value, "an integer in 1..%ld", max);
    o->config.workers = (int)v;
    o->workers_given = 1;
    return 0;
  }
  char copy[512];
  int n = 0, ok = snprintf(copy, sizeof copy, "%s", value) < (int)sizeof copy;
  char *save = NULL;
  for (char *t = ok ? strtok_r(copy, ",", &save) : NULL; t && ok;
       t = strtok_r(NULL, ",", &save)) {
    ok = n < CLI_BENCH_MAX_SIZES && !cli_read_int(t, 1, RS_MAX_WORKERS, &v);
    if (ok)
      o->bench.workers[n++] = (int)v;
  }
  if (!ok || n == 0)
    return cli_bad_value(msg, opt, value,
                         "W or a list like 4,8,16, each in 1..%d",
                         RS_MAX_WORKERS);
  o->bench.worker_count = n;
  return 0;
}

static int set_seed(const cli_option_t *opt, options_t *o, const char *value,
                    char *msg) {
  long v;
  if (cli_read_int(value, 0, opt->max, &v))
    return cli_bad_value(msg, opt, value, "an integer in 0..%ld", opt->max);
  o->seed = (uint64_t)v;
  o->seed_given = 1;
  return 0;
}

static int set_init(const cli_option_t *opt, options_t *o, const char *value,
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

static int set_datatype(const cli_option_t *opt, options_t *o,
                        const char *value, char *msg) {
  for (size_t i = 0; i < sizeof datatypes / sizeof *datatypes; i++)
    if (strcmp(value, datatypes[i].name) == 0) {
      o->bench.dtype = datatypes[i].dtype;
      return 0;
    }
  return cli_bad_value(msg, opt, value, "float, double, half or bfloat16");
}

/* diff --dtype: one of the library's dtype names, kept as given. */
static int set_dtype(const cli_option_t *opt, options_t *o, const char *value,
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

static int set_algo(const cli_option_t *opt, options_t *o, const char *value,
                    char *msg) {
  int algo = rs_algorithm_parse(value);
  int all = strcmp(value, "all") == 0 && cli_algo_takes_all(o->mode);
  if (algo == RS_ALGO_AUTO && !cli_algo_takes_auto(o->mode)) {
    snprintf(msg, RS_ERRMSG_MAX,
             "--algo %s chooses per bucket, on this machine; --algo all "
             "prints every algorithm and the crossovers",
             value);
    return -1;
  }
  if (algo < 0 && !all) {
    char names[256];
    cli_algo_names(o->mode, 0, names, sizeof names);
    return cli_bad_value(msg, opt, value, "%s", names);
  }
  o->algo_all = all;
  o->config.algo = all ? RS_ALGO_RING : (rs_algorithm_t)algo;
  return 0;
}

static int set_transport(const cli_option_t *opt, options_t *o,
                         const char *value, char *msg) {
  if (strcmp(value, "shm") && strcmp(value, "mpi"))
    return cli_bad_value(msg, opt, value, "shm or mpi");
  o->config.mpi = strcmp(value, "mpi") == 0;
  return 0;
}

void cli_options_init(cli_mode_t mode, options_t *o) {
  o->mode = mode;
  memset(o->given, 0, sizeof o->given);
  rs_config_init(&o->config);
  if (mode != CLI_BENCH)
    return;
  /* nccl-tests' defaults: sum, its sizes, and NCCL's slice loop */
  o->config.op = RS_OP_SUM;
  o->config.timeout_s = 60;
  o->config.slices = 1;
  o->bench.workers[0] = 4;
  o->bench.worker_count = 1;
  o->bench.min_bytes = 8;
  o->bench.max_bytes = (size_t)64 << 20;
  o->bench.factor = 2;
  o->bench.iters = 20;
  o->bench.warmup = 5;
  o->bench.dtype = RS_DTYPE_F32;
}

#define RUN CLI_IN(CLI_RUN)
#define BENCH CLI_IN(CLI_BENCH)
#define MODEL CLI_IN(CLI_MODEL)
#define DIFF CLI_IN(CLI_DIFF)
#define ALL (RUN | BENCH | MODEL | DIFF)
/* A help line of a mode, with the option's own metavar. */
#define H(text)                                                                \
  { NULL, text }
/* diff's line for an option that never changes a sum */
#define SAME_SUMS H("never changes a sum: the sides agree")
#define SAME_GRADS "the two sides would not get the same gradients"

const cli_option_t cli_options[OPT_COUNT] = {
    [OPT_PARAMS] = {"params",
                    'p',
                    RUN | MODEL | DIFF,
                    CLI_DIFF_SAME,
                    "FILE",
                    set_text,
                    FIELD(params),
                    0,
                    0,
                    "both sides all-reduce one model's gradients",
                    {[CLI_RUN] =
                         H("model.json: params, and optionally inline grads"),
                     [CLI_MODEL] =
                         H("model.json: the params' names, shapes, dtype")}},
    [OPT_WORKERS] =
        {"workers",
         'w',
         ALL,
         CLI_DIFF_TWO,
         "N",
         set_workers,
         0,
         0,
         0,
         NULL,
         {[CLI_RUN] = H("number of workers W, 1.." CLI_MAX_WORKERS_TEXT
                        " (default: the\nnumber of inline grads, else 4)"),
          [CLI_BENCH] = {"LIST", "W, or a list to sweep: 4 or 4,8,16 "
                                 "(default 4)"},
          [CLI_MODEL] = H("number of workers W, 1.." CLI_MODEL_MAX_WORKERS_TEXT
                          " (default 4)"),
          [CLI_DIFF] = H("two world sizes, one dividing the other, on one\n"
                         "global batch: L = max(A,B) contributions c0..\n"
                         "c{L-1} (the grads of L workers); each worker of\n"
                         "the smaller world S first folds its L/S\n"
                         "contiguous ones locally (op avg: their mean),\n"
                         "then the S workers all-reduce")}},
    [OPT_MINBYTES] = {"minbytes",
                      'b',
                      BENCH,
                      0,
                      "N",
                      set_size,
                      FIELD(bench.min_bytes),
                      4,
                      1L << 40,
                      NULL,
                      {[CLI_BENCH] = H("smallest size per worker (default "
                                       "8)")}},
    [OPT_MAXBYTES] = {"maxbytes",
                      'e',
                      BENCH,
                      0,
                      "N",
                      set_size,
                      FIELD(bench.max_bytes),
                      4,
                      1L << 40,
                      NULL,
                      {[CLI_BENCH] = H("largest size per worker (default "
                                       "64M)")}},
    [OPT_STEPFACTOR] = {"stepfactor",
                        'f',
                        BENCH,
                        0,
                        "F",
                        set_int,
                        FIELD(bench.factor),
                        2,
                        1024,
                        NULL,
                        {[CLI_BENCH] = H("multiply the size by F each step "
                                         "(default 2)")}},
    [OPT_STEPBYTES] = {"stepbytes",
                       'i',
                       BENCH,
                       0,
                       "N",
                       set_size,
                       FIELD(bench.step_bytes),
                       0,
                       1L << 40,
                       NULL,
                       {[CLI_BENCH] = H("or add N bytes each step instead")}},
    [OPT_ITERS] = {"iters",
                   'n',
                   BENCH,
                   0,
                   "N",
                   set_int,
                   FIELD(bench.iters),
                   1,
                   1000000,
                   NULL,
                   {[CLI_BENCH] = H("timed iterations per size (default 20, "
                                    "fewer\nwhere they would take more than "
                                    "2 s)")}},
    [OPT_WARMUP] = {"warmup",
                    0,
                    BENCH,
                    0,
                    "N",
                    set_int,
                    FIELD(bench.warmup),
                    0,
                    1000000,
                    NULL,
                    {[CLI_BENCH] = H("warm-up iterations per size (default "
                                     "5, fewer\nwhere they would take more "
                                     "than 1 s)")}},
    [OPT_DATATYPE] = {"datatype",
                      'd',
                      BENCH,
                      0,
                      "TYPE",
                      set_datatype,
                      0,
                      0,
                      0,
                      NULL,
                      {[CLI_BENCH] = H("float (default), double, half or "
                                       "bfloat16\n(nccl-tests' names for "
                                       "f32, f64, f16, bf16)")}},
    [OPT_DTYPE] = {"dtype",
                   0,
                   DIFF,
                   CLI_DIFF_TWO,
                   "DTYPE",
                   set_dtype,
                   0,
                   0,
                   0,
                   NULL,
                   {[CLI_DIFF] = H("f32, f16, bf16 or f64: the model's "
                                   "params as that\ndtype, the same "
                                   "gradients rounded to it\n(generated or "
                                   "inline grads)")}},
    [OPT_INIT] = {"init",
                  0,
                  RUN | DIFF,
                  CLI_DIFF_SAME,
                  "KIND",
                  set_init,
                  0,
                  0,
                  0,
                  SAME_GRADS,
                  {[CLI_RUN] = H("generated grads: normal (default), "
                                 "uniform, or\nexact (sums exactly "
                                 "representable: the result\nmust equal the "
                                 "reference bit for bit)")}},
    [OPT_SEED] = {"seed",
                  0,
                  RUN | DIFF,
                  CLI_DIFF_SAME,
                  "N",
                  set_seed,
                  0,
                  0,
                  9223372036854775807L,
                  SAME_GRADS,
                  {[CLI_RUN] = H("seed of the generated grads (default 0)")}},
    [OPT_GRADS] = {"grads",
                   0,
                   RUN | DIFF,
                   CLI_DIFF_SAME,
                   "PATTERN",
                   set_text,
                   FIELD(grads),
                   0,
                   0,
                   SAME_GRADS,
                   {[CLI_RUN] = H("read worker r's grads from a safetensors "
                                  "file,\n{r} replaced by r: "
                                  "grads/worker{r}.safetensors")}},
    [OPT_OUT] = {"out",
                 0,
                 RUN,
                 0,
                 "FILE",
                 set_text,
                 FIELD(out),
                 0,
                 0,
                 NULL,
                 {[CLI_RUN] = H("write the averaged grads as safetensors")}},
    [OPT_OP] = {"op",
                0,
                RUN | BENCH | DIFF,
                CLI_DIFF_SAME,
                "OP",
                set_config,
                0,
                0,
                0,
                "the two sides would compute two different reductions, not "
                "one in two orders",
                {[CLI_RUN] = H("sum, avg (SUM / W, the default), min, max, "
                               "prod"),
                 [CLI_BENCH] = H("sum (default, as nccl-tests), avg, min, "
                                 "max,\nprod")}},
    [OPT_ORDER_REPORT] =
        {"order-report",
         0,
         RUN,
         0,
         NULL,
         set_flag,
         FIELD(config.order_report),
         0,
         0,
         NULL,
         {[CLI_RUN] = H("count how the ring's summation order changes\nthe "
                        "result against worker 0, 1, ... order")}},
    [OPT_AVERAGE] = {"average",
                     0,
                     RUN | DIFF,
                     CLI_DIFF_TWO,
                     "pre|post|pre-mul",
                     set_config,
                     0,
                     0,
                     0,
                     NULL,
                     {[CLI_RUN] = H("avg: divide by W before the sum "
                                    "(DDP's\nhooks), after it (the "
                                    "default), or multiply\nby 1/W rounded "
                                    "before it (PyTorch 1.13's DDP\n"
                                    "reducer)"),
                      [CLI_DIFF] = H("post,pre (with --op avg, the "
                                     "default)")}},
    [OPT_LIKE] = {"like",
                  0,
                  RUN | DIFF,
                  0,
                  "ddp-gloo",
                  set_config,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("PyTorch 1.13 DDP on gloo, bit for bit: "
                                 "--algo\ngloo-ring --op avg --average "
                                 "pre-mul, and\nDDP's bucket order (the "
                                 "params reversed)")}},
    [OPT_SEGMENT_BYTES] =
        {"segment-bytes",
         0,
         ALL,
         CLI_DIFF_TWO,
         "N",
         set_size,
         FIELD(config.segment_bytes),
         RS_MIN_SEGMENT_BYTES,
         (long)RS_MAX_SEGMENT_BYTES,
         NULL,
         {[CLI_RUN] = H("largest message through a channel (default\n256K; "
                        "suffixes K, M, G are powers of 1024)"),
          [CLI_BENCH] = H("largest message (default 256K)"),
          [CLI_MODEL] = H("largest message (default 256K)"),
          [CLI_DIFF] = SAME_SUMS}},
    [OPT_SLOTS] = {"slots",
                   0,
                   RUN | BENCH | DIFF,
                   CLI_DIFF_TWO,
                   "K",
                   set_config,
                   0,
                   0,
                   0,
                   NULL,
                   {[CLI_RUN] = H("slots per channel (default 8)"),
                    [CLI_BENCH] = H("slots per channel (default 8)"),
                    [CLI_DIFF] = SAME_SUMS}},
    [OPT_TIMEOUT] = {"timeout",
                     0,
                     RUN | BENCH | DIFF,
                     0,
                     "SEC",
                     set_config,
                     0,
                     0,
                     0,
                     NULL,
                     {[CLI_RUN] = H("longest a worker waits for a "
                                    "neighbour\n(default 10)"),
                      [CLI_BENCH] = H("per wait (default 60)")}},
    [OPT_TRACE] = {"trace",
                   0,
                   RUN | BENCH,
                   0,
                   "FILE",
                   set_text,
                   FIELD(trace),
                   0,
                   0,
                   NULL,
                   {[CLI_RUN] = H("append the run to this SQLite trace "
                                  "(default\nringsim-trace.db in the working "
                                  "directory)"),
                    [CLI_BENCH] = H("trace every run into FILE (off by "
                                    "default)")}},
    [OPT_NO_TRACE] = {"no-trace",
                      0,
                      RUN,
                      0,
                      NULL,
                      set_flag,
                      FIELD(no_trace),
                      0,
                      0,
                      NULL,
                      {[CLI_RUN] = H("do not write a trace")}},
    [OPT_INJECT] = {"inject",
                    0,
                    RUN,
                    CLI_REPEAT,
                    "SPEC",
                    set_config,
                    0,
                    0,
                    0,
                    NULL,
                    {[CLI_RUN] = H("inject a fault (repeatable): crash, "
                                   "stall,\ncorrupt, drop or dup, e.g. "
                                   "crash:worker=2,step=3\n"
                                   "stall:worker=1,step=2,ms=500 "
                                   "corrupt:worker=0\n(step: 0..W-2 "
                                   "reduce-scatter, then all-gather)")}},
    [OPT_CHECKSUM] = {"checksum",
                      0,
                      RUN | DIFF,
                      0,
                      NULL,
                      set_flag,
                      FIELD(config.checksum),
                      0,
                      0,
                      NULL,
                      {[CLI_RUN] = H("checksum every segment (on with "
                                     "--inject)")}},
    [OPT_NET] = {"net",
                 0,
                 RUN | MODEL | DIFF,
                 0,
                 "SPEC",
                 set_config,
                 0,
                 0,
                 0,
                 NULL,
                 {[CLI_RUN] = H("simulate the network: "
                                "latency=5us,bandwidth=25GB/s\n(ns/us/ms/s; "
                                "B/s, KB/s, MB/s, GB/s, GiB/s, Gbps)"),
                  [CLI_MODEL] = H("the network (required): "
                                  "latency=5us,bandwidth=25GB/s\n"
                                  "(ns/us/ms/s; B/s, KB/s, MB/s, GB/s, "
                                  "GiB/s, Gbps)")}},
    [OPT_REDUCE_RATE] = {"reduce-rate",
                         0,
                         RUN | MODEL | DIFF,
                         0,
                         "RATE",
                         set_config,
                         0,
                         0,
                         0,
                         NULL,
                         {[CLI_RUN] =
                              H("charge reductions, e.g. 20GB/s (needs --net)"),
                          [CLI_MODEL] = H("charge reductions, e.g. 20GB/s")}},
    [OPT_LINK] = {"link",
                  0,
                  RUN | MODEL | DIFF,
                  CLI_REPEAT,
                  "SPEC",
                  set_config,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("one slower link (repeatable): "
                                 "2-3:bandwidth=1GB/s"),
                   [CLI_MODEL] = H("one slower link (repeatable): "
                                   "2-3:bandwidth=1GB/s")}},
    [OPT_STRAGGLER] = {"straggler",
                       0,
                       RUN | MODEL | DIFF,
                       CLI_REPEAT,
                       "SPEC",
                       set_config,
                       0,
                       0,
                       0,
                       NULL,
                       {[CLI_RUN] = H("a slow worker (repeatable): "
                                      "worker=1,us=200"),
                        [CLI_MODEL] = H("a slow worker (repeatable): "
                                        "worker=1,us=200")}},
    [OPT_EXPLAIN] = {"explain",
                     0,
                     RUN,
                     0,
                     NULL,
                     set_flag,
                     FIELD(explain),
                     0,
                     0,
                     NULL,
                     {[CLI_RUN] = H("narrate the all-reduce step by step "
                                    "(W <= 8)")}},
    [OPT_BUCKET_MB] = {"bucket-mb",
                       0,
                       RUN | MODEL | DIFF,
                       CLI_DIFF_TWO,
                       "MB",
                       set_config,
                       0,
                       0,
                       0,
                       NULL,
                       {[CLI_RUN] = H("DDP gradient buckets of MB MiB "
                                      "(default 25, the\nfirst 1 MiB; 0: "
                                      "one bucket for the whole model)"),
                        [CLI_MODEL] = H("DDP gradient buckets of MB MiB "
                                        "(default 25; 0:\none bucket)"),
                        [CLI_DIFF] = H("DDP bucket caps in MiB")}},
    [OPT_DIRECT] = {"direct",
                    0,
                    RUN | BENCH | DIFF,
                    0,
                    NULL,
                    set_flag,
                    FIELD(config.direct),
                    0,
                    0,
                    NULL,
                    {[CLI_RUN] = H("copy-free channels: receivers reduce "
                                   "straight\nfrom the sender's buffer "
                                   "(NCCL's direct mode)"),
                     [CLI_BENCH] = H("copy-free channels (NCCL's direct "
                                     "mode)")}},
    [OPT_ALGO] =
        {"algo",
         0,
         ALL,
         CLI_DIFF_TWO,
         "NAME",
         set_algo,
         0,
         0,
         0,
         NULL,
         {[CLI_RUN] = H("the all-reduce algorithm: {algos} (docs/"
                        "algorithms.md), or auto: per bucket the one the "
                        "alpha-beta model predicts fastest on this machine "
                        "(measured), or on --net's network"),
          [CLI_BENCH] = H("{algos}; all: each in turn, the fastest marked; "
                          "auto: per size the one the alpha-beta model "
                          "predicts fastest on this machine (measured once "
                          "per W), named in the row"),
          [CLI_MODEL] = H("{algos}, or all: every algorithm, the fastest "
                          "marked, and the crossovers: the sizes where the "
                          "best one by the predictions (--algo auto's pick) "
                          "changes"),
          [CLI_DIFF] = H("e.g. ring,rd (any name --algo accepts)")}},
    [OPT_LOOP] = {"loop",
                  0,
                  RUN | BENCH | DIFF,
                  CLI_DIFF_TWO,
                  "ORDER",
                  set_config,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("steps (default): each step moves whole "
                                 "chunks;\nslices: NCCL's loop, all steps "
                                 "on one slice of\nthe buffer at a time "
                                 "(same sums, cache-warm)"),
                   [CLI_BENCH] = H("slices (default: NCCL's loop, all "
                                   "steps on one\nslice at a time) or "
                                   "steps (as ringsim runs\nby default: "
                                   "each step moves whole chunks)"),
                   [CLI_DIFF] = SAME_SUMS}},
    [OPT_PRINT] = {"print",
                   0,
                   RUN,
                   0,
                   NULL,
                   set_flag,
                   FIELD(print_values),
                   0,
                   0,
                   NULL,
                   {[CLI_RUN] = H("print the averaged values of every "
                                  "param")}},
    [OPT_JSON] = {"json",
                  0,
                  ALL,
                  0,
                  NULL,
                  set_flag,
                  FIELD(json),
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("print the report as one JSON object"),
                   [CLI_BENCH] = H("one JSON object per size (JSON Lines)"),
                   [CLI_MODEL] = H("print the result as one JSON object"),
                   [CLI_DIFF] = H("print the comparison as one JSON "
                                  "object")}},
    [OPT_FAIL_ON_DIFF] = {"fail-on-diff",
                          0,
                          DIFF,
                          0,
                          NULL,
                          set_flag,
                          FIELD(fail_on_diff),
                          0,
                          0,
                          NULL,
                          {[CLI_DIFF] = H("exit 1 when some element differs "
                                          "(as cmp does)")}},
    [OPT_TRANSPORT] = {"transport",
                       0,
                       RUN | BENCH,
                       0,
                       "KIND",
                       set_transport,
                       0,
                       0,
                       0,
                       NULL,
                       {[CLI_RUN] = H("shm (default): one process; mpi: "
                                      "under mpirun,\nthe workers spread "
                                      "over the MPI processes in\nblocks, "
                                      "one trace by rank 0 (docs/mpi.md)"),
                        [CLI_BENCH] = H("shm (default) or mpi: under "
                                        "mpirun, the\nworkers spread over "
                                        "the processes, and per\nsize "
                                        "MPI_Allreduce's time over the "
                                        "processes\non the same buffers "
                                        "(column mpi; docs/mpi.md)")}},
    /* --help and --version are answered by parse.c, which prints them */
    [OPT_HELP] = {"help",
                  'h',
                  ALL,
                  0,
                  NULL,
                  NULL,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("this help"),
                   [CLI_BENCH] = H("this help"),
                   [CLI_MODEL] = H("this help"),
                   [CLI_DIFF] = H("this help")}},
    [OPT_VERSION] = {"version",
                     'V',
                     ALL,
                     0,
                     NULL,
                     NULL,
                     0,
                     0,
                     0,
                     NULL,
                     {[CLI_RUN] = H("the version"),
                      [CLI_BENCH] = H("the version"),
                      [CLI_MODEL] = H("the version"),
                      [CLI_DIFF] = H("the version")}},
};
