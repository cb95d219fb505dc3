/* bench.c - `ringsim bench`: an nccl-tests style sweep (all_reduce_perf).
 *
 * For each W and each size, one run: the worker threads are created once,
 * run the all-reduce --warmup times and then -n timed times (the first
 * result is checked against the exact reference: #wrong), and the direct
 * mean over the same W buffers is timed on one thread as "ref". The ring
 * runs in NCCL's slice loop order unless --loop steps asks for the
 * textbook one that ringsim itself runs by default.
 */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    "  -n, --iters N           timed iterations per size (default 20)\n"
    "      --warmup N          warm-up iterations per size (default 5)\n"
    "  -d, --datatype TYPE     float (default), double, half or bfloat16\n"
    "                          (nccl-tests' names for f32, f64, f16, bf16)\n"
    "      --op OP             sum (default, as nccl-tests), avg, min, max,\n"
    "                          prod\n"
    "      --segment-bytes N   largest message (default 256K)\n"
    "      --slots K           slots per channel (default 8)\n"
    "      --timeout SEC       per wait (default 60)\n"
    "      --direct            copy-free channels (NCCL's direct mode)\n"
    "      --loop ORDER        slices (default: NCCL's loop, all steps on one\n"
    "                          slice at a time) or steps (as ringsim runs\n"
    "                          by default: each step moves whole chunks)\n"
    "      --trace FILE        trace every run into FILE (off by default)\n"
    "      --json              one JSON object per size (JSON Lines)\n"
    "  -h, --help              this help\n"
    "\n"
    "Sizes take K, M, G suffixes (powers of 1024). algbw = S/t, busbw =\n"
    "algbw x 2(W-1)/W, in GB/s (10^9). Inputs are exact (multiples of 1/16),\n"
    "so #wrong counts every element that differs from the reference (for\n"
    "half and bfloat16 their range narrows so they stay exact, up to 2048\n"
    "and 256 workers; beyond, #wrong counts elements outside the bound).\n"
    "exit status: 0 all good; 1 some #wrong; 2 bad usage; 3 a run failed\n";

typedef struct bench_opts {
  int workers[64];
  int worker_count;
  size_t min_bytes, max_bytes, step_bytes;
  long factor;
  int iters, warmup;
  rs_op_t op;
  rs_dtype_t dtype;
  size_t segment_bytes;
  int slots;
  double timeout_s;
  const char *trace;
  int json;
  int direct;
  int slices;
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
    O_LOOP
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
        return cli_usage_error("bench: --workers '%s': expected W or a list "
                               "like 4,8,16, each in 1..4096",
                               optarg);
      break;
    case 'b':
    case 'e':
    case 'i': {
      size_t bytes;
      if (cli_parse_bytes(optarg, &bytes) || (opt != 'i' && bytes < 4))
        return cli_usage_error("bench: size '%s': expected bytes (4 or more; "
                               "K, M, G suffixes)",
                               optarg);
      *(opt == 'b'   ? &o->min_bytes
        : opt == 'e' ? &o->max_bytes
                     : &o->step_bytes) = bytes;
      break;
    }
    case 'f':
      if (cli_parse_long(optarg, 2, 1024, &o->factor))
        return cli_usage_error("bench: --stepfactor '%s': expected 2..1024",
                               optarg);
      break;
    case 'n':
    case O_WARMUP:
      if (cli_parse_long(optarg, opt == 'n' ? 1 : 0, 1000000, &v))
        return cli_usage_error("bench: iterations '%s': expected a count "
                               "up to 1000000",
                               optarg);
      *(opt == 'n' ? &o->iters : &o->warmup) = (int)v;
      break;
    case O_OP: {
      int op = rs_op_parse(optarg);
      if (op < 0)
        return cli_usage_error("bench: --op '%s': expected sum, avg, min, "
                               "max or prod",
                               optarg);
      o->op = (rs_op_t)op;
      break;
    }
    case 'd': {
      size_t i = 0, n = sizeof datatypes / sizeof *datatypes;
      while (i < n && strcmp(optarg, datatypes[i].name) != 0)
        i++;
      if (i == n)
        return cli_usage_error("bench: --datatype '%s': expected float, "
                               "double, half or bfloat16",
                               optarg);
      o->dtype = datatypes[i].dtype;
      break;
    }
    case O_SEG:
      if (cli_parse_bytes(optarg, &o->segment_bytes) || o->segment_bytes < 4 ||
          o->segment_bytes > (1u << 30))
        return cli_usage_error("bench: --segment-bytes '%s': expected 4..1G",
                               optarg);
      break;
    case O_SLOTS:
      if (cli_parse_long(optarg, 1, 1024, &v))
        return cli_usage_error("bench: --slots '%s': expected 1..1024", optarg);
      o->slots = (int)v;
      break;
    case O_TIMEOUT:
      if (cli_parse_seconds(optarg, &o->timeout_s))
        return cli_usage_error("bench: --timeout '%s': expected seconds in "
                               "(0, 1e6]",
                               optarg);
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
        return cli_usage_error("bench: --loop '%s': expected steps or slices",
                               optarg);
      break;
    }
  }
  if (optind < argc)
    return cli_usage_error("bench: unexpected argument '%s'", argv[optind]);
  if (o->max_bytes < o->min_bytes)
    return cli_usage_error("bench: %s", "-e is smaller than -b");
  return -1;
}

typedef struct row {
  int workers;
  size_t bytes, count;
  double time_us, min_us, algbw, busbw, ref_us;
  uint64_t wrong;
} row_t;

/* One size on W workers: returns 0, or the failed run's exit status. */
static int bench_one(const bench_opts_t *o, int W, size_t count,
                     rs_trace_t *trace, row_t *row) {
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
  cfg.direct = o->direct;
  cfg.slices = o->slices;
  /* ref: the run's own reference, the direct mean of the same buffers on
   * one thread (exact inputs), timed over as many repetitions as the ring
   * gets, at most 20. */
  cfg.ref_reps = o->iters < 20 ? o->iters : 20;
  if (rs_run_create(&cfg, m, &run, err)) {
    fprintf(stderr, "ringsim: bench: W=%d, %zu elements: %s\n", W, count, err);
    status = EXIT_USAGE;
    goto done;
  }
  rs_run_fill(run, RS_INIT_EXACT, 0);
  if (trace)
    rs_run_set_trace(run, trace, NULL);

  int rc = rs_run_execute(run);
  if (rc != RS_OK && rc != RS_ECHECK) {
    fprintf(stderr, "ringsim: bench: W=%d, %zu bytes: %s\n", W,
            count * rs_dtype_size(o->dtype), rs_run_errmsg(run));
    status = EXIT_RUN;
    goto done;
  }
  const rs_result_t *res = rs_run_result(run);
  row->workers = W;
  row->count = count;
  row->bytes = count * rs_dtype_size(o->dtype);
  row->time_us = (double)res->wall_ns / 1e3;
  row->min_us = (double)res->wall_min_ns / 1e3;
  row->algbw = (double)row->bytes / (double)res->wall_ns; /* B/ns = GB/s */
  row->busbw = row->algbw * 2.0 * (W - 1) / W;
  row->ref_us = (double)res->ref_ns / 1e3;
  row->wrong = rs_run_param_check(run, 0)->wrong;
  if (!res->identical)
    row->wrong = row->wrong ? row->wrong : 1;
  if (rs_run_trace_error(run)) {
    fprintf(stderr, "ringsim: bench: %s\n", rs_run_trace_error(run));
    status = EXIT_RUN;
  }
done:
  rs_run_free(run);
  rs_model_free(m);
  return status;
}

static void print_header(const bench_opts_t *o, int W) {
  printf("# ringsim bench: ring all-reduce on %d worker threads, %d warm-up + "
         "%d timed iterations per size\n",
         W, o->warmup, o->iters);
  printf("# segment %zu B, %d slots per channel%s, %s channels, %s loop; "
         "ref = the direct mean of the same %d buffers on one thread\n",
         o->segment_bytes, o->slots,
         o->direct ? " (fewer where a sent region would be overwritten "
                     "before its release)"
                   : "",
         o->direct ? "direct (copy-free)" : "copying",
         o->slices ? "NCCL's slice" : "step", W);
  printf("#\n");
  printf("# %12s %12s %6s %6s %10s %8s %8s %7s %10s %8s\n", "size", "count",
         "type", "redop", "time", "algbw", "busbw", "#wrong", "ref",
         "time/ref");
  printf("# %12s %12s %6s %6s %10s %8s %8s %7s %10s %8s\n", "(B)", "(elements)",
         "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "");
}

static void print_row(const bench_opts_t *o, const row_t *r) {
  const char *op = rs_op_name(o->op);
  if (o->json) {
    json_t *j = json_pack(
        "{s:i, s:I, s:I, s:s, s:s, s:f, s:f, s:f, s:f, s:I, s:f, s:f}",
        "workers", r->workers, "size", (json_int_t)r->bytes, "count",
        (json_int_t)r->count, "type", datatype_name(o->dtype), "redop", op,
        "time_us", r->time_us, "min_time_us", r->min_us, "algbw_gbs", r->algbw,
        "busbw_gbs", r->busbw, "wrong", (json_int_t)r->wrong, "ref_us",
        r->ref_us, "time_over_ref",
        r->ref_us > 0 ? r->time_us / r->ref_us : 0.0);
    char *line = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(6));
    puts(line);
    free(line);
    json_decref(j);
  } else {
    printf("  %12zu %12zu %6s %6s %10.2f %8.3f %8.3f %7llu %10.2f %8.2f\n",
           r->bytes, r->count, datatype_name(o->dtype), op, r->time_us,
           r->algbw, r->busbw, (unsigned long long)r->wrong, r->ref_us,
           r->ref_us > 0 ? r->time_us / r->ref_us : 0.0);
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
  if (o.trace && rs_trace_open(o.trace, &trace, err)) {
    fprintf(stderr, "ringsim: %s\n", err);
    return EXIT_USAGE;
  }
  int status = 0;
  uint64_t wrong = 0;
  double busbw_sum = 0; /* for nccl-tests' closing average */
  int rows = 0;
  for (int k = 0; k < o.worker_count && status == 0; k++) {
    int W = o.workers[k];
    if (!o.json)
      print_header(&o, W);
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes && status == 0;) {
      size_t count = bytes / rs_dtype_size(o.dtype);
      row_t row = {0};
      status = bench_one(&o, W, count ? count : 1, trace, &row);
      if (status == 0) {
        print_row(&o, &row);
        wrong += row.wrong;
        busbw_sum += row.busbw;
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
  if (!o.json && status == 0) {
    printf("# Out of bounds values : %llu %s\n", (unsigned long long)wrong,
           wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g \n", rows ? busbw_sum / rows : 0.0);
  }
  rs_trace_close(trace);
  return status ? status : wrong ? EXIT_CHECK : 0;
}
