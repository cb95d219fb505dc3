/* binding.c - what a language binding needs beyond the C API, in calls
 * that take and return only numbers, strings and opaque pointers: a
 * configuration set option by option by the command's option names, packed
 * half-precision values in and out of a run's buffers, and a run's facts as
 * JSON text. python/ringsim (over ctypes, with no compiler) is the user: it
 * never needs the layout of rs_config_t or rs_result_t, which may grow.
 *
 * DESIGN: nothing here keeps state; every function works on what its
 * caller passes, so two runs in one process stay apart as everywhere else.
 */
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dtype.h"
#include "base/parallel.h" /* RS_PARALLEL_MAX */
#include "hook/spec.h"
#include "net/proto.h"
#include "ringsim/internal/command.h" /* rs_one_line */
#include "ringsim/internal/config.h"  /* rs_config_t's fields */
#include "ringsim/ringsim.h"

/* rs_config_new's block: the config first (rs_config_free frees the
 * block through it), its test knobs beside it. */
typedef struct config_block {
  rs_config_t config;
  rs_test_knobs_t test;
} config_block_t;

rs_config_t *rs_config_new(void) {
  config_block_t *block = calloc(1, sizeof *block);
  if (!block)
    return NULL;
  rs_config_init(&block->config);
  block->config.test = &block->test;
  return &block->config;
}

void rs_config_free(rs_config_t *config) { free(config); }

/* "1", "true" or "0", "false". */
static int parse_flag(const char *text, int *out) {
  if (strcmp(text, "1") == 0 || strcmp(text, "true") == 0)
    *out = 1;
  else if (strcmp(text, "0") == 0 || strcmp(text, "false") == 0)
    *out = 0;
  else
    return -1;
  return 0;
}

int rs_fault_parse(const char *spec, rs_fault_t *f) {
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
  /* key=value pairs joined by single commas: strtok_r below would skip
   * an empty one ("crash:", "step=2,", "worker=1,,step=2") */
  size_t keys_len = strlen(keys);
  if (!keys_len || keys[0] == ',' || keys[keys_len - 1] == ',' ||
      strstr(keys, ",,"))
    return -1;
  char *save = NULL;
  unsigned given = 0; /* each key once: worker 1, step 2, ms 4 */
  for (char *kv = strtok_r(keys, ",", &save); kv;
       kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    long v;
    if (!eq || rs_read_int(eq + 1, 0, INT_MAX, &v))
      return -1;
    *eq = '\0';
    unsigned key = strcmp(kv, "worker") == 0                            ? 1u
                   : strcmp(kv, "step") == 0                            ? 2u
                   : strcmp(kv, "ms") == 0 && f->kind == RS_FAULT_STALL ? 4u
                                                                        : 0u;
    if (!key || (given & key))
      return -1;
    given |= key;
    if (key == 1)
      f->worker = (int)v;
    else if (key == 2)
      f->step = (int)v;
    else
      f->ms = (int)v;
  }
  if (f->kind == RS_FAULT_STALL && f->ms < 0)
    return -1;
  return 0;
}

/* "ring, rd, ... or auto": every name rs_algorithm_parse takes, in the
 * table's order (algo/list.c), so a new algorithm is listed by itself. */
static void algo_names(char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int a = 0; a <= RS_ALGO_COUNT && len < size; a++)
    len += (size_t)snprintf(buf + len, size - len, "%s%s",
                            a == 0               ? ""
                            : a == RS_ALGO_COUNT ? " or "
                                                 : ", ",
                            rs_algorithm_name(a == RS_ALGO_COUNT
                                                  ? RS_ALGO_AUTO
                                                  : (rs_algorithm_t)a));
}

/* The option's name with '_' for '-', so "bucket-mb" and "bucket_mb" are
 * one option. */
static int is_option(const char *option, const char *name) {
  for (; *option && *name; option++, name++)
    if (*option != *name && !(*option == '_' && *name == '-'))
      return 0;
  return *option == *name;
}

#define FAIL(...)                                                              \
  do {                                                                         \
    snprintf(errmsg, RS_ERRMSG_MAX, __VA_ARGS__);                              \
    rs_one_line(errmsg);                                                       \
    return RS_EINVAL;                                                          \
  } while (0)

/* The options that are a flag (true, false, 1, 0): their field, or NULL. */
static int *flag_field(rs_config_t *c, const char *o) {
  return is_option(o, "checksum")       ? &c->checksum
         : is_option(o, "direct")       ? &c->direct
         : is_option(o, "order-report") ? &c->order_report
         : is_option(o, "traced")       ? &c->traced
         : is_option(o, "ddp-layout")   ? &c->ddp_layout
                                        : NULL;
}

/* The options that are a count: their field, and in *lo and *hi the
 * values rs_run_create takes; or NULL. */
static int *count_field(rs_config_t *c, const char *o, long *lo, long *hi) {
  *lo = 0;
  *hi = 1000000;
  if (is_option(o, "warmup"))
    return &c->warmup;
  *lo = 1;
  if (is_option(o, "iterations"))
    return &c->iterations;
  *hi = 1000;
  if (is_option(o, "ref-reps"))
    return &c->ref_reps;
  *lo = 0;
  *hi = RS_PARALLEL_MAX; /* 0: one per core, at most that */
  return is_option(o, "check-threads") ? &c->check_threads : NULL;
}

static const char *const collective_names[] = {"allreduce", "reduce-scatter"};

static int collective_parse(const char *name) {
  for (int c = 0; c < 2; c++)
    if (strcmp(name, collective_names[c]) == 0)
      return c;
  return -1;
}

/* rs_config_set's groups: RS_OK, RS_EINVAL (errmsg says why), or
 * NOT_MINE for an option the group does not hold. */
#define NOT_MINE 1

/* What runs: W, the op, the algorithm, the pipeline's sizes, the loop,
 * the flags and counts, the time limits, the transport. */
static int set_run(rs_config_t *config, const char *o, const char *value,
                   char *errmsg) {
  long v, lo, hi;
  double d;
  int *count;
  if (is_option(o, "workers")) {
    if (rs_read_int(value, 1, RS_MAX_WORKERS, &v))
      FAIL("%.64s '%.100s': expected an integer in 1..%d", o, value,
           RS_MAX_WORKERS);
    config->workers = (int)v;
  } else if (is_option(o, "op")) {
    int op = rs_op_parse(value);
    if (op < 0)
      FAIL("%.64s '%.100s': expected sum, avg, min, max or prod", o, value);
    config->op = (rs_op_t)op;
  } else if (is_option(o, "average")) {
    int average = rs_average_parse(value); /* rs_average_name's names */
    if (average < 0)
      FAIL("%.64s '%.100s': expected pre, post or pre-mul", o, value);
    config->average = (rs_average_t)average;
  } else if (is_option(o, "algo")) {
    int algo = rs_algorithm_parse(value);
    if (algo < 0) {
      char names[256];
      algo_names(names, sizeof names);
      FAIL("%.64s '%.100s': expected %s", o, value, names);
    }
    config->algo = (rs_algorithm_t)algo;
  } else if (is_option(o, "bucket-mb") || is_option(o, "first-bucket-mb")) {
    if (rs_read_real(value, &d) || !(d >= 0 && d <= 1048576))
      FAIL("%.64s '%.100s': expected MiB from 0 (one bucket) to 1048576", o,
           value);
    /* a positive cap is a cap: one of less than a byte (1e-300) is not
     * the 0 that makes one bucket; up to an element, it is one */
    if (d > 0 && d * 1048576.0 < 1)
      FAIL("%.64s '%.100s': less than a byte (0 alone makes one bucket)", o,
           value);
    size_t *cap = is_option(o, "bucket-mb") ? &config->bucket_bytes
                                            : &config->first_bucket_bytes;
    *cap = (size_t)(d * 1048576.0);
    if (d > 0 && *cap < sizeof(float))
      *cap = sizeof(float);
  } else if (is_option(o, "segment-bytes")) {
    if (rs_read_int(value, RS_MIN_SEGMENT_BYTES, (long)RS_MAX_SEGMENT_BYTES,
                    &v))
      FAIL("%.64s '%.100s': expected a number of bytes from %d to %ld", o,
           value, RS_MIN_SEGMENT_BYTES, (long)RS_MAX_SEGMENT_BYTES);
    config->segment_bytes = (size_t)v;
  } else if (is_option(o, "slots")) {
    if (rs_read_int(value, 1, RS_MAX_SLOTS, &v))
      FAIL("%.64s '%.100s': expected an integer in 1..%d", o, value,
           RS_MAX_SLOTS);
    /* the queues' slots, and the network model's (its pipelined links'
     * slot rule: the same NCCL_STEPS) */
    config->slots = config->net.slots = (int)v;
  } else if (is_option(o, "timeout")) {
    if (rs_read_real(value, &d) || !(d > 0 && d <= 1e6))
      FAIL("%.64s '%.100s': expected seconds in (0, 1e6]", o, value);
    if (d * 1e9 < 1) /* (a worker's clock counts ns: it would be 0) */
      FAIL("%.64s '%.100s': less than a nanosecond", o, value);
    config->timeout_s = d;
  } else if (is_option(o, "loop")) {
    if (strcmp(value, "steps") && strcmp(value, "slices"))
      FAIL("%.64s '%.100s': expected steps or slices", o, value);
    config->slices = strcmp(value, "slices") == 0;
  } else if (flag_field(config, o)) {
    int flag;
    if (parse_flag(value, &flag))
      FAIL("%.64s '%.100s': expected true or false", o, value);
    *flag_field(config, o) = flag;
  } else if ((count = count_field(config, o, &lo, &hi))) {
    if (rs_read_int(value, lo, hi, &v))
      FAIL("%.64s '%.100s': expected an integer in %ld..%ld", o, value, lo, hi);
    *count = (int)v;
  } else if (is_option(o, "warmup-budget") || is_option(o, "timed-budget")) {
    if (rs_read_real(value, &d) || !(d >= 0 && d <= 1e6))
      FAIL("%.64s '%.100s': expected seconds in [0, 1e6] (0: none)", o, value);
    *(is_option(o, "warmup-budget") ? &config->warmup_budget_s
                                    : &config->timed_budget_s) = d;
  } else if (is_option(o, "transport")) {
    if (strcmp(value, "shm") && strcmp(value, "mpi"))
      FAIL("%.64s '%.100s': expected shm or mpi", o, value);
    config->mpi = strcmp(value, "mpi") == 0;
  } else if (is_option(o, "collective")) {
    int c = collective_parse(value);
    if (c < 0)
      FAIL("%.64s '%.100s': expected allreduce or reduce-scatter", o, value);
    config->collective = (rs_collective_t)c;
  } else
    return NOT_MINE;
  return RS_OK;
}

/* The test knobs, the DDP hook and --like. */
static int set_hook(rs_config_t *config, const char *o, const char *value,
                    char *errmsg) {
  char err[RS_ERRMSG_MAX];
  if (is_option(o, "test-flip") || is_option(o, "mpi-trace-batch")) {
    /* the test knobs, as text (rs_test_knobs_t says what they do) */
    if (!config->test)
      FAIL("%.64s: this config has no test knobs (rs_config_new's has)", o);
    int flip = is_option(o, "test-flip");
    char *to = flip ? config->test->flip : config->test->mpi_trace_batch;
    size_t size =
        flip ? sizeof config->test->flip : sizeof config->test->mpi_trace_batch;
    if (strlen(value) >= size)
      FAIL("%.64s '%.100s': longer than %zu bytes", o, value, size - 1);
    memcpy(to, value, strlen(value) + 1);
  } else if (is_option(o, "hook")) {
    /* rs_hook_name's names; powersgd with its state:
     * powersgd:rank=R[,start=S][,feedback=on|off][,warm=on|off] */
    int hook = rs_hook_parse(value);
    rs_config_t c = *config;
    if (hook < 0 && strncmp(value, "powersgd:", 9) == 0) {
      if (rs__powersgd_spec(value + 9, &c, err))
        FAIL("%.64s %.400s", o, err);
      hook = RS_HOOK_POWERSGD;
    } else if (hook == RS_HOOK_POWERSGD)
      FAIL("%.64s '%.100s': powersgd needs its rank: powersgd:rank=R", o,
           value);
    else
      c.powersgd_rank = c.powersgd_start = c.powersgd_feedback =
          c.powersgd_warm = 0;
    if (hook < 0)
      FAIL("%.64s '%.100s': expected none, allreduce, fp16, bf16 or "
           "powersgd:rank=R",
           o, value);
    *config = c;
    config->hook = (rs_hook_t)hook;
  } else if (is_option(o, "like")) {
    /* The command's --like ddp-gloo (docs/ddp.md). */
    if (strcmp(value, "ddp-gloo"))
      FAIL("%.64s '%.100s': expected ddp-gloo", o, value);
    config->algo = (rs_algorithm_t)rs_algorithm_parse("gloo-ring");
    config->op = RS_OP_AVG;
    config->average = RS_AVERAGE_PRE_MUL;
    config->ddp_layout = 1;
  } else
    return NOT_MINE;
  return RS_OK;
}

/* The simulated network and what runs on it: faults, --net/--link/
 * --straggler, --topo, the reduce rate, the protocol, the channels. */
static int set_net(rs_config_t *config, const char *o, const char *value,
                   char *errmsg) {
  long v;
  char err[RS_ERRMSG_MAX];
  if (is_option(o, "inject")) {
    if (config->fault_count == RS_MAX_FAULTS)
      FAIL("%.64s: at most %d faults", o, RS_MAX_FAULTS);
    rs_fault_t fault;
    if (rs_fault_parse(value, &fault))
      FAIL("%.64s '%.100s': expected KIND:worker=N,step=S[,ms=M] with KIND "
           "crash, stall (needs ms), corrupt, drop or dup",
           o, value);
    config->faults[config->fault_count++] = fault;
  } else if (is_option(o, "net") || is_option(o, "link") ||
             is_option(o, "straggler")) {
    rs_netmodel_t *net = &config->net;
    int rc = is_option(o, "net") ? rs_netmodel_parse(value, net, err)
             : is_option(o, "link")
                 ? rs_netmodel_parse_link(value, net, err)
                 : rs_netmodel_parse_straggler(value, net, err);
    if (rc)
      FAIL("%s", err);
  } else if (is_option(o, "topo")) {
    /* the message names --topo and the item (rs_topo_parse) */
    if (rs_topo_parse(value, &config->net.topo, err))
      FAIL("%s", err);
    config->net.enabled = 1;
  } else if (is_option(o, "reduce-rate")) {
    if (rs_netmodel_parse_rate(value, &config->net.reduce_rate, err))
      FAIL("%.64s %.400s", o, err);
  } else if (is_option(o, "proto")) { /* (net/proto.h) */
    rs_protocol_t p = RS_PROTOCOL_NONE;
    while (p <= RS_PROTOCOL_SIMPLE && strcmp(value, rs__proto_label(p)))
      p++;
    if (p > RS_PROTOCOL_SIMPLE)
      FAIL("proto '%.100s': expected LL, LL128, Simple or none", value);
    config->net.proto = p;
  } else if (is_option(o, "channels")) {
    if (rs_read_int(value, 1, RS_MAX_CHANNELS, &v))
      FAIL("%.64s '%.100s': expected an integer in 1..%d (NCCL's "
           "MAXCHANNELS)",
           o, value, RS_MAX_CHANNELS);
    /* NCCL's channels the ring runs (the network model times them) */
    config->net.channels = (int)v;
  } else
    return NOT_MINE;
  return RS_OK;
}

int rs_config_set(rs_config_t *config, const char *option, const char *value,
                  char *errmsg) {
  int rc = set_run(config, option, value, errmsg);
  if (rc == NOT_MINE)
    rc = set_hook(config, option, value, errmsg);
  if (rc == NOT_MINE)
    rc = set_net(config, option, value, errmsg);
  if (rc == NOT_MINE)
    FAIL("unknown option '%.100s'", option);
  return rc;
}

/* rs_config_get's answer: text into value (size bytes), or RS_EINVAL
 * when it does not fit. */
static int answer(const char *o, const char *text, char *value, size_t size,
                  char *errmsg) {
  size_t len = strlen(text);
  if (!value || len >= size)
    FAIL("%.64s: its value takes %zu bytes and a NUL, the buffer has %zu", o,
         len, value ? size : 0);
  memcpy(value, text, len + 1);
  return RS_OK;
}

int rs_config_get(const rs_config_t *config, const char *option, char *value,
                  size_t size, char *errmsg) {
  /* (the field finders serve rs_config_set too; nothing here writes) */
  rs_config_t *c = (rs_config_t *)config;
  const char *o = option;
  char text[sizeof c->test->flip + 64];
  long lo, hi;
  const int *count = count_field(c, o, &lo, &hi);
  if (is_option(o, "workers") || count)
    snprintf(text, sizeof text, "%d", count ? *count : c->workers);
  else if (is_option(o, "op"))
    snprintf(text, sizeof text, "%s", rs_op_name(c->op));
  else if (is_option(o, "average"))
    snprintf(text, sizeof text, "%s", rs_average_name(c->average));
  else if (is_option(o, "algo"))
    snprintf(text, sizeof text, "%s", rs_algorithm_name(c->algo));
  else if (is_option(o, "hook") && c->hook == RS_HOOK_POWERSGD)
    snprintf(text, sizeof text, "powersgd:rank=%d,start=%d,feedback=%s,warm=%s",
             c->powersgd_rank, c->powersgd_start,
             c->powersgd_feedback ? "on" : "off",
             c->powersgd_warm ? "on" : "off");
  else if (is_option(o, "hook"))
    snprintf(text, sizeof text, "%s", rs_hook_name(c->hook));
  else if (is_option(o, "bucket-mb") || is_option(o, "first-bucket-mb"))
    snprintf(text, sizeof text, "%.17g",
             (double)(is_option(o, "bucket-mb") ? c->bucket_bytes
                                                : c->first_bucket_bytes) /
                 1048576.0);
  else if (is_option(o, "segment-bytes"))
    snprintf(text, sizeof text, "%zu", c->segment_bytes);
  else if (is_option(o, "slots"))
    snprintf(text, sizeof text, "%d", c->slots);
  else if (is_option(o, "channels"))
    snprintf(text, sizeof text, "%d", c->net.channels > 1 ? c->net.channels : 1);
  else if (is_option(o, "timeout") || is_option(o, "warmup-budget") ||
           is_option(o, "timed-budget"))
    snprintf(text, sizeof text, "%.17g",
             is_option(o, "timeout")         ? c->timeout_s
             : is_option(o, "warmup-budget") ? c->warmup_budget_s
                                             : c->timed_budget_s);
  else if (is_option(o, "loop"))
    snprintf(text, sizeof text, "%s", c->slices ? "slices" : "steps");
  else if (flag_field(c, o))
    snprintf(text, sizeof text, "%s", *flag_field(c, o) ? "true" : "false");
  else if (is_option(o, "transport"))
    snprintf(text, sizeof text, "%s", c->mpi ? "mpi" : "shm");
  else if (is_option(o, "collective"))
    snprintf(text, sizeof text, "%s",
             collective_names[c->collective == RS_COLL_REDUCE_SCATTER]);
  else if (is_option(o, "proto"))
    snprintf(text, sizeof text, "%s", rs__proto_label(c->net.proto));
  else if (is_option(o, "test-flip") || is_option(o, "mpi-trace-batch"))
    snprintf(text, sizeof text, "%s",
             !c->test                    ? ""
             : is_option(o, "test-flip") ? c->test->flip
                                         : c->test->mpi_trace_batch);
  else if (is_option(o, "like") || is_option(o, "inject") ||
           is_option(o, "net") || is_option(o, "link") ||
           is_option(o, "straggler") || is_option(o, "topo") ||
           is_option(o, "reduce-rate"))
    FAIL("%.64s: set only (it adds to or parses into several settings); "
         "a run's report says what it used",
         o);
  else
    FAIL("unknown option '%.100s'", o);
  return answer(o, text, value, size, errmsg);
}

void rs_config_set_ready(rs_config_t *config, const uint64_t *ready_ns) {
  config->ready_ns = ready_ns;
}

void rs_config_set_on_iteration(rs_config_t *config,
                                void (*fn)(void *arg, int done, int warmup,
                                           int iterations),
                                void *arg) {
  config->on_iteration = fn;
  config->on_iteration_arg = arg;
}

void rs_config_set_machine(rs_config_t *config, const rs_netmodel_t *machine) {
  if (machine)
    config->machine = *machine;
  else
    memset(&config->machine, 0, sizeof config->machine);
}

void rs_dtype_unpack(rs_dtype_t dtype, void *dst, const void *src, size_t n) {
  if (dtype == RS_DTYPE_F16)
    rs__unpack_f16(dst, src, n);
  else if (dtype == RS_DTYPE_BF16)
    rs__unpack_bf16(dst, src, n);
  else if (n)
    memcpy(dst, src, n * rs_dtype_size(dtype));
}

void rs_dtype_pack(rs_dtype_t dtype, void *dst, const void *src, size_t n) {
  if (dtype == RS_DTYPE_F16)
    rs__pack_f16(dst, src, n);
  else if (dtype == RS_DTYPE_BF16)
    rs__pack_bf16(dst, src, n);
  else if (n)
    memcpy(dst, src, n * rs_dtype_size(dtype));
}

/* JSON has no inf or NaN: such a value is null, as in the --json report. */
static json_t *real(double x) {
  return isfinite(x) ? json_real(x) : json_null();
}

static json_t *count(uint64_t x) { return json_integer((json_int_t)x); }

static json_t *config_facts(const rs_config_t *c) {
  return json_pack(
      "{s:i, s:s, s:s, s:b, s:s, s:b, s:b, s:b, s:b, s:I, s:i, s:f, s:I, s:I, "
      "s:i, s:b, s:b}",
      "workers", c->workers, "op", rs_op_name(c->op), "algo",
      rs_algorithm_name(c->algo), "average", c->average, "hook",
      rs_hook_name(c->hook), "slices", c->slices, "direct", c->direct,
      "checksum", c->checksum, "order_report", c->order_report, "segment_bytes",
      (json_int_t)c->segment_bytes, "slots", c->slots, "timeout_s",
      c->timeout_s, "bucket_bytes", (json_int_t)c->bucket_bytes,
      "first_bucket_bytes", (json_int_t)c->first_bucket_bytes, "fault_count",
      c->fault_count, "net_enabled", c->net.enabled, "topo_enabled",
      c->net.topo.enabled);
}

static json_t *result_facts(const rs_result_t *r) {
  json_t *o = json_object();
  json_object_set_new(o, "status", json_integer(r->status));
  json_object_set_new(o, "checked", json_boolean(r->checked));
  json_object_set_new(o, "identical", json_boolean(r->identical));
  json_object_set_new(o, "exact", json_boolean(r->exact));
  json_object_set_new(o, "max_abs_err", real(r->max_abs_err));
  json_object_set_new(o, "bound", real(r->bound));
  json_object_set_new(o, "worst_ratio", real(r->worst_ratio));
  json_object_set_new(o, "wall_ns", count(r->wall_ns));
  json_object_set_new(o, "wall_min_ns", count(r->wall_min_ns));
  json_object_set_new(o, "warmup", json_integer(r->warmup));
  json_object_set_new(o, "iterations", json_integer(r->iterations));
  json_object_set_new(o, "fill_ns", count(r->fill_ns));
  json_object_set_new(o, "ref_ns", count(r->ref_ns));
  json_object_set_new(o, "check_ns", count(r->check_ns));
  json_object_set_new(o, "check_threads", json_integer(r->check_threads));
  json_object_set_new(o, "transfers", count(r->transfers));
  json_object_set_new(o, "buckets", count(r->buckets));
  json_object_set_new(o, "sim_ns", count(r->sim_ns));
  json_object_set_new(o, "predicted_ns", count(r->predicted_ns));
  json_object_set_new(o, "trace_ns", count(r->trace_ns));
  json_object_set_new(o, "trace_rows", count(r->trace_rows));
  json_object_set_new(o, "segs_per_chunk", count(r->segs_per_chunk));
  json_object_set_new(o, "steps", json_integer(r->steps));
  json_object_set_new(o, "seg_elems", count(r->seg_elems));
  json_object_set_new(o, "slots", json_integer(r->slots));
  json_object_set_new(o, "hook_cast_overflow", count(r->hook_cast_overflow));
  json_object_set_new(o, "hook_cast_flushed", count(r->hook_cast_flushed));
  json_object_set_new(o, "hook_div_flushed", count(r->hook_div_flushed));
  json_object_set_new(o, "hook_max_abs", real(r->hook_max_abs));
  return o;
}

static json_t *worker_facts(const rs_run_t *run, int w) {
  const rs_worker_stats_t *s = rs_run_worker_stats(run, w);
  rs_worker_state_t st;
  rs_run_worker_state(run, w, &st);
  return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:s, s:s?, s:i, s:i, "
                   "s:s?, s:i, s:i}",
                   "transfers_sent", count(s->transfers_sent), "bytes_sent",
                   count(s->bytes_sent), "bytes_received",
                   count(s->bytes_received), "bytes_sent_off_node",
                   count(s->bytes_sent_off_node), "bytes_received_off_node",
                   count(s->bytes_received_off_node), "wait_ns",
                   count(s->wait_ns), "state", st.state, "phase", st.phase,
                   "step", st.step, "chunk", st.chunk, "waiting", st.waiting,
                   "peer", st.peer, "stall_ms", st.stall_ms);
}

static json_t *param_facts(const rs_param_t *p, const rs_param_check_t *c) {
  return json_pack(
      "{s:s, s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, "
      "s:o, s:o, s:o}",
      "name", p->name, "elem_offset", (json_int_t)p->elem_offset, "elems",
      (json_int_t)p->elems, "max_abs_err", real(c->max_abs_err), "max_rel_err",
      real(c->max_rel_err), "bound", real(c->bound), "worst_ratio",
      real(c->worst_ratio), "differing", count(c->differing), "wrong",
      count(c->wrong), "order_differing", count(c->order_differing),
      "order_max_ulps", count(c->order_max_ulps), "sum_overflow",
      count(c->sum_overflow), "sum_overflow_saved",
      count(c->sum_overflow_saved), "max_abs_ref", real(c->max_abs_ref));
}

/* --algo auto: the model it chose by, and per bucket the algorithm it ran
 * and every algorithm's predicted time (null: not eligible). */
static json_t *auto_json(const rs_run_t *run) {
  int measured = 0;
  const rs_netmodel_t *m = rs_run_auto_model(run, &measured);
  if (!m)
    return NULL;
  json_t *list = json_array();
  for (size_t b = 0; b < rs_run_result(run)->buckets; b++) {
    json_t *pred = json_object();
    for (int a = 0; a < RS_ALGO_COUNT; a++) {
      uint64_t ns = rs_run_bucket_predicted(run, b, (rs_algorithm_t)a);
      json_object_set_new(pred, rs_algorithm_name((rs_algorithm_t)a),
                          ns == UINT64_MAX ? json_null()
                                           : json_integer((json_int_t)ns));
    }
    json_array_append_new(
        list, json_pack("{s:I, s:I, s:s, s:o}", "bucket", (json_int_t)b,
                        "elems", (json_int_t)rs_run_bucket(run, b)->elems,
                        "algo", rs_algorithm_name(rs_run_bucket_algo(run, b)),
                        "predicted_ns", pred));
  }
  return json_pack("{s:s, s:I, s:I, s:I, s:o}", "model",
                   measured          ? "measured"
                   : m->topo.enabled ? "topo"
                                     : "net",
                   "latency_ns", (json_int_t)m->link.latency_ns,
                   "bandwidth_Bps", (json_int_t)m->link.bandwidth, "reduce_Bps",
                   (json_int_t)m->reduce_rate, "buckets", list);
}

char *rs_run_auto_json(const rs_run_t *run) {
  json_t *o = auto_json(run);
  char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return text;
}

char *rs_run_facts_json(const rs_run_t *run, const rs_model_t *model) {
  const rs_result_t *res = rs_run_result(run);
  const rs_config_t *cfg = rs_run_config(run);
  json_t *o = json_object();
  if (!o)
    return NULL;
  json_object_set_new(o, "version", json_string(RS_VERSION));
  json_object_set_new(o, "status_name",
                      json_string(rs_status_name(res->status)));
  json_object_set_new(
      o, "error", res->status ? json_string(rs_run_errmsg(run)) : json_null());
  json_object_set_new(o, "run_id", json_integer(rs_run_trace_id(run)));
  const char *trace_error = rs_run_trace_error(run);
  json_object_set_new(o, "trace_error",
                      trace_error ? json_string(trace_error) : json_null());
  json_object_set_new(o, "config", config_facts(cfg));
  json_object_set_new(o, "result", result_facts(res));
  json_t *workers = json_array();
  for (int w = 0; w < cfg->workers; w++)
    json_array_append_new(workers, worker_facts(run, w));
  json_object_set_new(o, "workers", workers);
  json_t *params = json_array();
  for (size_t p = 0; p < rs_model_param_count(model); p++)
    json_array_append_new(params, param_facts(rs_model_param(model, p),
                                              rs_run_param_check(run, p)));
  json_object_set_new(o, "params", params);
  /* workers that differ from worker 0 (rs_run_mismatches) */
  json_t *counts = json_array(), *first_list = json_array();
  for (int w = 0; w < cfg->workers; w++)
    json_array_append_new(counts, count(rs_run_worker_mismatches(run, w)));
  const rs_mismatch_t *first;
  size_t listed = rs_run_mismatches(run, &first);
  for (size_t k = 0; k < listed; k++)
    json_array_append_new(
        first_list,
        json_pack("{s:i, s:I, s:I, s:o, s:o}", "worker", first[k].worker,
                  "param", (json_int_t)first[k].param, "elem",
                  (json_int_t)first[k].elem, "value", real(first[k].value),
                  "worker0_value", real(first[k].worker0_value)));
  json_object_set_new(
      o, "mismatches",
      json_pack("{s:o, s:o}", "workers", counts, "first", first_list));
  json_t *buckets = json_array();
  for (size_t b = 0; b < res->buckets; b++) {
    const rs_bucket_t *k = rs_run_bucket(run, b);
    json_array_append_new(
        buckets,
        json_pack("{s:I, s:I, s:I, s:I, s:s}", "elem_offset",
                  (json_int_t)k->elem_offset, "elems", (json_int_t)k->elems,
                  "first_param", (json_int_t)k->first_param, "params",
                  (json_int_t)k->params, "algo",
                  rs_algorithm_name(rs_run_bucket_algo(run, b))));
  }
  json_object_set_new(o, "buckets", buckets);
  json_t *choice = auto_json(run);
  json_object_set_new(o, "auto", choice ? choice : json_null());
  /* 17 significant digits: every double reads back as itself */
  char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17));
  json_decref(o);
  return text;
}

void rs_free(void *p) { free(p); }
