/* diff.c - `ringsim diff`: two configurations of one all-reduce on the same
 * gradients, compared element by element, and for the element that differs
 * most, each side's order of additions written out from its algorithm's
 * own schedule (rs_run_element_order): why NCCL, gloo and MPI disagree.
 *
 * The options that differ are given once with two comma-separated values
 * (--algo ring,rd); every other option applies to both sides. Two world
 * sizes (--workers 4,8) share one global batch: L contributions, each
 * worker of the smaller world folding its L/S of them locally first. Each side
 * is a real threaded run; worker 0's result of one is compared with worker 0's
 * result of the other (every worker holds the same bits).
 */
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ringsim/ringsim.h"

const char cli_diff_usage_text[] =
    "usage: ringsim diff --params MODEL.json [run options] OPTION A,B "
    "[OPTION A,B ...]\n"
    "\n"
    "Run two configurations of the all-reduce on the same gradients and\n"
    "compare their results element by element: how many differ, by how many\n"
    "ULPs and how much relatively, in which params and chunks; and for the\n"
    "element that differs most, each side's order of additions written out,\n"
    "from its algorithm's own schedule, with every partial sum.\n"
    "\n"
    "Options given with two values, A for the first side and B for the\n"
    "second (at least one):\n"
    "  --algo A,B          e.g. ring,rd (any name --algo accepts)\n"
    "  --average A,B       post,pre (with --op avg, the default)\n"
    "  --dtype A,B         f32, f16, bf16 or f64: the model's params as that\n"
    "                      dtype, the same gradients rounded to it\n"
    "                      (generated or inline grads)\n"
    "  --bucket-mb A,B     DDP bucket caps in MiB\n"
    "  -w, --workers A,B   two world sizes, one dividing the other, on one\n"
    "                      global batch: L = max(A,B) contributions c0..\n"
    "                      c{L-1} (the grads of L workers); each worker of\n"
    "                      the smaller world S first folds its L/S\n"
    "                      contiguous ones locally (op avg: their mean),\n"
    "                      then the S workers all-reduce\n"
    "  --segment-bytes A,B, --slots A,B, --loop A,B\n"
    "                      (these never change a sum: the sides agree)\n"
    "Every other run option (ringsim --help) applies to both sides: -p, -w,\n"
    "--init, --seed, --grads, --op, --net, --direct, --timeout, ... Both\n"
    "sides get the same gradients: --seed, --init, --grads, --params and\n"
    "--op take one value. --out, --print, --explain, --trace,\n"
    "--order-report and --inject do not apply (diff writes no trace).\n"
    "\n"
    "      --fail-on-diff  exit 1 when some element differs (as cmp does)\n"
    "      --json          print the comparison as one JSON object\n"
    "  -h, --help          this help\n"
    "\n"
    "The orders are written out for 1 to 8 workers.\n"
    "\n"
    "exit status: 0 compared (whether or not the sides differ); 1 with\n"
    "--fail-on-diff, some element differs, or a side's check failed; 2 bad\n"
    "usage or bad input (refused before anything runs); 3 a run failed;\n"
    "130, 143, 129: SIGINT, SIGTERM or SIGHUP stopped it\n";

/* The run options that take a value (the rest are flags). */
static const char *const value_options[] = {
    "params",  "workers",     "init",          "seed",  "grads",     "out",
    "op",      "slots",       "segment-bytes", "trace", "inject",    "net",
    "timeout", "link",        "straggler",     "algo",  "bucket-mb", "loop",
    "average", "reduce-rate", "dtype",         NULL};

/* May two sides differ in it? NULL: yes; else why not. */
static const char *why_not_two(const char *name) {
  static const struct {
    const char *name, *why;
  } fixed[] = {
      {"params", "both sides all-reduce one model's gradients"},
      {"seed", "the two sides would not get the same gradients"},
      {"init", "the two sides would not get the same gradients"},
      {"grads", "the two sides would not get the same gradients"},
      {"op", "the two sides would compute two different reductions, not "
             "one in two orders"},
  };
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    if (strcmp(name, fixed[i].name) == 0)
      return fixed[i].why;
  static const char *const two[] = {"algo",      "average",       "dtype",
                                    "bucket-mb", "segment-bytes", "slots",
                                    "loop",      "workers",       NULL};
  for (int i = 0; two[i]; i++)
    if (strcmp(name, two[i]) == 0)
      return NULL;
  return "";
}

/* The most contributions whose orders are written out in a comparison of
 * two world sizes (each worker's local fold expands into its own). */
enum { MAX_CONTRIBS_WRITTEN = 64 };

/* One side: its options, model and, after its run, its result. */
typedef struct diff_side {
  options_t opt;
  const char *dtype_name; /* --dtype's value, or NULL: the model's */
  rs_model_t *model;
  rs_config_t config; /* measured once (--algo auto), then reused */
  int use_inline;
  /* Two world sizes (--workers A,B): the larger one, L, is the number of
   * contributions c_0..c_{L-1} (the gradients ringsim gives L workers);
   * each of this side's workers first folds local of them, contiguous,
   * locally (1: its own contribution, as in every other comparison). */
  int contribs, local;
  size_t at;           /* the element whose contributions to keep, */
  double *at_contribs; /* there (NULL: none kept) */
  int status;
  void *result; /* worker 0's buffer, copied */
  char label[160];
} side_t;

/* The model of path, with every param's dtype set to dtype unless it is
 * NULL. Returns -1 to go on, or the exit status, having said why. */
static int load_model(const char *path, const char *dtype, rs_model_t **out) {
  char err[RS_ERRMSG_MAX];
  if (!dtype) {
    if (rs_model_load(path, out, err) == RS_OK)
      return -1;
    fprintf(stderr, "ringsim: %s\n", err);
    return EXIT_USAGE;
  }
  json_error_t jerr;
  json_t *root = json_load_file(path, 0, &jerr);
  json_t *params = root ? json_object_get(root, "params") : NULL;
  if (!params || !json_is_array(params)) {
    json_decref(root);
    /* the loader's message says what is wrong with it */
    if (rs_model_load(path, out, err) != RS_OK) {
      fprintf(stderr, "ringsim: %s\n", err);
      return EXIT_USAGE;
    }
    rs_model_free(*out);
    *out = NULL;
    fprintf(stderr, "ringsim: %s: no params\n", path);
    return EXIT_USAGE;
  }
  size_t i;
  json_t *p;
  json_array_foreach(params, i, p) if (json_is_object(p))
      json_object_set_new(p, "dtype", json_string(dtype));
  char *text = json_dumps(root, JSON_COMPACT);
  json_decref(root);
  int rc =
      text ? rs_model_parse(text, strlen(text), path, out, err) : RS_ENOMEM;
  free(text);
  if (rc == RS_OK)
    return -1;
  fprintf(stderr, "ringsim: %s\n", text ? err : "out of memory");
  return EXIT_USAGE;
}

/* Room for the strings split_args makes from argv: every byte at most
 * three times, plus "--" and a NUL each. */
static size_t arena_size(int argc, char **argv) {
  size_t size = 1;
  for (int i = 0; i < argc; i++)
    size += 3 * strlen(argv[i]) + 8;
  return size;
}

/* A copy of len bytes of text, NUL-ended, taken from the arena at *pos. */
static char *arena_copy(char **pos, const char *text, size_t len) {
  char *copy = *pos;
  memcpy(copy, text, len);
  copy[len] = '\0';
  *pos += len + 1;
  return copy;
}

/* Split argv into the two sides' command lines, their strings in arena
 * (arena_size bytes). Returns -1 to go on, or the exit status. */
static int split_args(int argc, char **argv, char *arena, char **a, char **b,
                      side_t *s, int *fail_on_diff, int *two_given,
                      char *two_names, size_t names_size) {
  int n = 1;
  a[0] = b[0] = "ringsim";
  *two_given = 0;
  two_names[0] = '\0';
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--fail-on-diff") == 0) {
      *fail_on_diff = 1;
      continue;
    }
    /* --name, --name=value, -p, -pVALUE, -w, -wVALUE */
    char name[64] = "";
    const char *value = NULL;
    int takes_value = 0;
    if (strncmp(arg, "--", 2) == 0 && arg[2]) {
      const char *eq = strchr(arg, '=');
      size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
      if (len < sizeof name) {
        memcpy(name, arg + 2, len);
        name[len] = '\0';
      }
      for (int k = 0; value_options[k]; k++)
        takes_value |= strcmp(name, value_options[k]) == 0;
      if (takes_value)
        value = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
    } else if (arg[0] == '-' && (arg[1] == 'p' || arg[1] == 'w')) {
      snprintf(name, sizeof name, "%s", arg[1] == 'p' ? "params" : "workers");
      takes_value = 1;
      value = arg[2] ? arg + 2 : i + 1 < argc ? argv[++i] : NULL;
    }
    static const char *const refused[] = {"out",      "print",        "explain",
                                          "trace",    "order-report", "inject",
                                          "transport"};
    for (size_t k = 0; k < sizeof refused / sizeof *refused; k++)
      if (strcmp(name, refused[k]) == 0)
        return cli_usage_error("diff: --%s does not apply to a comparison",
                               name);
    if (!takes_value) { /* a flag, or what parse_args will refuse */
      a[n] = b[n] = (char *)arg;
      n++;
      continue;
    }
    if (!value) {
      char msg[128];
      snprintf(msg, sizeof msg, "diff: option '%s' needs a value", arg);
      return cli_usage_error("%s", msg);
    }
    const char *comma = strchr(value, ',');
    /* --net, --link and --straggler hold commas of their own */
    int splits = comma && why_not_two(name) && *why_not_two(name) == '\0'
                     ? 0
                     : comma != NULL;
    char *va = NULL, *vb = NULL;
    if (splits) {
      if (strchr(comma + 1, ',') || comma == value || !comma[1]) {
        char msg[256];
        snprintf(msg, sizeof msg,
                 "diff: --%s '%.100s': expected two values A,B", name, value);
        return cli_usage_error("%s", msg);
      }
      va = arena_copy(&arena, value, (size_t)(comma - value));
      vb = arena_copy(&arena, comma + 1, strlen(comma + 1));
      const char *why = why_not_two(name);
      if (why && strcmp(va, vb) != 0) {
        char msg[RS_ERRMSG_MAX];
        snprintf(msg, sizeof msg, "diff: --%s %.60s: %s", name, value, why);
        return cli_usage_error("%s", msg);
      }
      if (!why) {
        (*two_given)++;
        size_t len = strlen(two_names);
        snprintf(two_names + len, names_size - len, "%s--%s %s", len ? " " : "",
                 name, value);
      }
    } else {
      va = vb = arena_copy(&arena, value, strlen(value));
    }
    if (strcmp(name, "dtype") == 0) {
      s[0].dtype_name = va;
      s[1].dtype_name = vb;
      continue;
    }
    char opt[80];
    snprintf(opt, sizeof opt, "--%s", name);
    a[n] = b[n] = arena_copy(&arena, opt, strlen(opt));
    n++;
    a[n] = va;
    b[n] = vb;
    n++;
  }
  a[n] = b[n] = NULL;
  return -1 - n; /* < -1: the count, encoded */
}

/* Worker 0's value i of a result buffer, as a double. */
static double value_at(const void *buf, rs_dtype_t dtype, size_t i) {
  if (dtype == RS_DTYPE_F64)
    return ((const double *)buf)[i];
  return ((const float *)buf)[i];
}

/* The ordered integer of x's encoding in dtype: adjacent values of the
 * dtype differ by 1. */
static int64_t ordered(rs_dtype_t dtype, double x) {
  if (dtype == RS_DTYPE_F64) {
    int64_t i;
    memcpy(&i, &x, sizeof i);
    return i < 0 ? INT64_MIN - i : i;
  }
  float f = (float)x;
  if (dtype == RS_DTYPE_F32) {
    int32_t i;
    memcpy(&i, &f, sizeof i);
    return i < 0 ? (int64_t)INT32_MIN - i : i;
  }
  uint16_t h;
  rs_dtype_pack(dtype, &h, &f, 1);
  int32_t i = h & 0x8000 ? -(int32_t)(h & 0x7fff) : (int32_t)h;
  return i;
}

/* The smallest normal exponent of each dtype. */
static int min_exponent(rs_dtype_t dtype) {
  return dtype == RS_DTYPE_F16 ? -14 : dtype == RS_DTYPE_F64 ? -1022 : -126;
}

/* How far a (of dtype da) is from b (of db), in ULPs of the coarser dtype:
 * the same dtype, the count of its values from one to the other; two
 * dtypes, |a - b| over the coarser one's spacing at max(|a|, |b|). */
static double ulps_between(double a, rs_dtype_t da, double b, rs_dtype_t db) {
  if (a == b)
    return 0;
  if (da == db) {
    /* unsigned: two f64 encodings can be more than INT64_MAX apart */
    int64_t oa = ordered(da, a), ob = ordered(da, b);
    return (double)(oa > ob ? (uint64_t)oa - (uint64_t)ob
                            : (uint64_t)ob - (uint64_t)oa);
  }
  rs_dtype_t dc =
      rs_dtype_mantissa_bits(db) < rs_dtype_mantissa_bits(da) ? db : da;
  int e = ilogb(fmax(fabs(a), fabs(b)));
  if (e < min_exponent(dc))
    e = min_exponent(dc);
  return fabs(a - b) / ldexp(1.0, e - (rs_dtype_mantissa_bits(dc) - 1));
}

/* A count of ULPs: whole, or with two decimals. */
static void ulps_text(double u, char *buf, size_t size) {
  snprintf(buf, size, u == floor(u) && u < 1e15 ? "%.0f" : "%.2f", u);
}

static double relative(double a, double b) {
  double m = fmax(fabs(a), fabs(b));
  return m == 0 ? 0 : fabs(a - b) / m;
}

/* The shortest decimal that reads back as v in dtype's buffer type. */
static void number(double v, rs_dtype_t dtype, char *buf, size_t size) {
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, size, "%.*g", digits, v);
    double back = strtod(buf, NULL);
    if (dtype == RS_DTYPE_F64 ? back == v : (float)back == (float)v)
      return;
  }
}

/* How many contributions node k holds. */
static int leaf_count(const rs_order_t *o, int k) {
  const rs_order_node_t *node = &o->nodes[k];
  return node->worker >= 0
             ? 1
             : leaf_count(o, node->left) + leaf_count(o, node->right);
}

/* A fold's operands in written order: a sum or product writes the larger
 * partial first, and of two as large the one received, so ((g3+g0)+g1)+g2
 * reads as the ring's chain; that changes no bit, as a + b and b + a are
 * the same float. min and max keep the receiver's own value first. */
static void operands(const rs_order_t *o, const rs_order_node_t *node,
                     int *first, int *second) {
  int swap = o->op != RS_OP_MIN && o->op != RS_OP_MAX &&
             leaf_count(o, node->right) >= leaf_count(o, node->left);
  *first = swap ? node->right : node->left;
  *second = swap ? node->left : node->right;
}

/* One worker's local fold of its k contributions c[0..k-1], left to right
 * in the dtype, as gradient accumulation adds into .grad: each fold in
 * float32 (f64: double), rounded to the dtype; for --op avg the last
 * addition is divided by k in the same fold (written (a+b)/k, as the
 * all-reduce's own mean). steps[j - 1] gets the value after folding c[j]
 * (steps may be NULL). min, max and prod fold with their op. */
static double local_fold(const double *c, int k, rs_op_t op, rs_dtype_t dtype,
                         double *steps) {
  if (dtype == RS_DTYPE_F64) {
    double acc = c[0];
    for (int j = 1; j < k; j++) {
      double v = c[j];
      acc = op == RS_OP_MIN                 ? (v < acc ? v : acc)
            : op == RS_OP_MAX               ? (v > acc ? v : acc)
            : op == RS_OP_PROD              ? acc * v
            : op == RS_OP_AVG && j == k - 1 ? (acc + v) / (double)k
                                            : acc + v;
      if (steps)
        steps[j - 1] = acc;
    }
    return acc;
  }
  float acc = (float)c[0];
  for (int j = 1; j < k; j++) {
    float v = (float)c[j];
    acc = op == RS_OP_MIN                 ? (v < acc ? v : acc)
          : op == RS_OP_MAX               ? (v > acc ? v : acc)
          : op == RS_OP_PROD              ? acc * v
          : op == RS_OP_AVG && j == k - 1 ? (acc + v) / (float)k
                                          : acc + v;
    acc = rs_dtype_round(dtype, acc);
    if (steps)
      steps[j - 1] = acc;
  }
  return acc;
}

/* How an order's leaves are written: worker R's gR; or, comparing two
 * world sizes, worker R's local fold of the contributions c_{Rk} ..
 * c_{Rk+k-1} (k = local; 1: the contribution cR itself), whose values are
 * contribs[]. */
typedef struct leaves {
  int local; /* 0: gR */
  const double *contribs;
} leaves_t;

/* Worker r's local fold up to its contribution upto (0..k-1) as text:
 * c0, then (c0+c1), ((c0+c1)+c2), ...; the last fold of --op avg is
 * (a+b)/k; top: without the outermost brackets of a sum. */
static void local_text(const rs_order_t *o, const leaves_t *lv, int r, int upto,
                       int top, char *buf, size_t size) {
  const int k = lv->local, first = r * k;
  char prev[2048];
  snprintf(buf, size, "c%d", first);
  for (int j = 1; j <= upto; j++) {
    snprintf(prev, sizeof prev, "%s", buf);
    if (o->op == RS_OP_MIN || o->op == RS_OP_MAX)
      snprintf(buf, size, "%s(%s,c%d)", o->op == RS_OP_MIN ? "min" : "max",
               prev, first + j);
    else if (o->op == RS_OP_AVG && j == k - 1)
      snprintf(buf, size, "(%s+c%d)/%d", prev, first + j, k);
    else
      snprintf(buf, size, top && j == upto ? "%s%s%s%d" : "(%s%s%s%d)", prev,
               o->op == RS_OP_PROD ? "*" : "+", "c", first + j);
  }
}

/* Node k of an order as an expression over g0..g{W-1}, or with lv over
 * the contributions (lv may be NULL). */
static void expr_text(const rs_order_t *o, const leaves_t *lv, int k, int top,
                      char *buf, size_t size) {
  const rs_order_node_t *node = &o->nodes[k];
  if (node->worker >= 0) {
    char leaf[2048];
    if (lv && lv->local)
      local_text(o, lv, node->worker, lv->local - 1, 0, leaf, sizeof leaf);
    else
      snprintf(leaf, sizeof leaf, "g%d", node->worker);
    if (o->pre_divided)
      snprintf(buf, size, lv && lv->local > 1 ? "(%s)/%d" : "%s/%d", leaf,
               o->workers);
    else
      snprintf(buf, size, "%s", leaf);
    return;
  }
  size_t len = 2048;
  char *l = malloc(len), *r = malloc(len);
  if (!l || !r) {
    snprintf(buf, size, "?");
    free(l);
    free(r);
    return;
  }
  int first, second;
  operands(o, node, &first, &second);
  expr_text(o, lv, first, 0, l, len);
  expr_text(o, lv, second, 0, r, len);
  if (o->op == RS_OP_MIN || o->op == RS_OP_MAX)
    snprintf(buf, size, "%s(%s,%s)", o->op == RS_OP_MIN ? "min" : "max", l, r);
  else if (node->mean)
    snprintf(buf, size, "(%s+%s)/%d", l, r, o->workers);
  else
    snprintf(buf, size, top ? "%s%s%s" : "(%s%s%s)", l,
             o->op == RS_OP_PROD ? "*" : "+", r);
  free(l);
  free(r);
}

/* One fold's text and value, onto arr (JSON) or printed. */
static void partial(const char *text, double value, rs_dtype_t dtype,
                    json_t *arr, FILE *out) {
  char num[40];
  if (arr)
    json_array_append_new(
        arr, json_pack("{s:s, s:f}", "expr", text, "value", value));
  if (out) {
    number(value, dtype, num, sizeof num);
    fprintf(out, "      %s = %s\n", text, num);
  }
}

/* The folds under node k, in the order they are computed (children first;
 * with lv, a leaf's local folds too), onto arr (JSON) or printed. */
static void partials(const rs_order_t *o, const leaves_t *lv, int k,
                     json_t *arr, FILE *out) {
  const rs_order_node_t *node = &o->nodes[k];
  char text[4096];
  if (node->worker >= 0) {
    if (!lv || lv->local < 2)
      return;
    double steps[MAX_CONTRIBS_WRITTEN];
    local_fold(lv->contribs + (size_t)node->worker * (size_t)lv->local,
               lv->local, o->op, o->dtype, steps);
    for (int j = 1; j < lv->local; j++) {
      local_text(o, lv, node->worker, j, 1, text, sizeof text);
      partial(text, steps[j - 1], o->dtype, arr, out);
    }
    return;
  }
  int first, second;
  operands(o, node, &first, &second);
  partials(o, lv, first, arr, out);
  partials(o, lv, second, arr, out);
  expr_text(o, lv, k, 1, text, sizeof text);
  partial(text, node->value, o->dtype, arr, out);
}

typedef struct param_diff {
  uint64_t differing;
  double max_ulps, max_rel;
} param_diff_t;

/* Fill run's buffers as its config says (--grads, inline, generated). */
static int fill_plain(const side_t *s, rs_run_t *run) {
  if (s->opt.grads)
    return rs_run_load_grads(run, s->opt.grads);
  if (s->use_inline)
    return rs_run_fill_inline(run);
  return rs_run_fill(run, s->opt.init, s->opt.seed);
}

/* Fill side s's run: its own gradients; or, on the smaller of two world
 * sizes, the L contributions made in a run of L workers (never executed),
 * worker r given the local fold of c_{rk}..c_{rk+k-1}. The contributions
 * to element s->at are kept in s->at_contribs if it is set. On error,
 * errmsg says why. */
static int fill_side(side_t *s, rs_run_t *run, char *errmsg) {
  const rs_dtype_t dtype = rs_model_dtype(s->model);
  const size_t elems = rs_model_elems(s->model);
  rs_run_t *from = run;
  double *c = NULL;
  int status = RS_OK;
  if (s->local > 1) {
    rs_config_t config = s->config;
    config.workers = s->contribs;
    config.algo = RS_ALGO_RING; /* only its buffers are used */
    if ((status = rs_run_create(&config, s->model, &from, errmsg)) != RS_OK)
      return status;
    cli_signals_watch(from); /* a signal stops its fill */
  }
  if ((status = fill_plain(s, from)) != RS_OK) {
    snprintf(errmsg, RS_ERRMSG_MAX, "%s", rs_run_errmsg(from));
    goto done;
  }
  if (s->at_contribs)
    for (int i = 0; i < s->contribs; i++)
      s->at_contribs[i] = value_at(rs_run_buffer(from, i), dtype, s->at);
  if (s->local == 1)
    goto done;
  if (!(c = malloc((size_t)s->local * sizeof *c))) {
    snprintf(errmsg, RS_ERRMSG_MAX, "out of memory");
    status = RS_ENOMEM;
    goto done;
  }
  for (int r = 0; r < s->config.workers; r++) {
    void *dst = rs_run_buffer(run, r);
    for (size_t i = 0; i < elems; i++) {
      if (i % 65536 == 0 && cli_signal()) { /* (signals.c) */
        snprintf(errmsg, RS_ERRMSG_MAX, "interrupted by %s",
                 cli_signal_name(cli_signal()));
        status = RS_EINTERRUPTED;
        goto done;
      }
      for (int j = 0; j < s->local; j++)
        c[j] = value_at(rs_run_buffer(from, r * s->local + j), dtype, i);
      double v = local_fold(c, s->local, s->config.op, dtype, NULL);
      if (dtype == RS_DTYPE_F64)
        ((double *)dst)[i] = v;
      else
        ((float *)dst)[i] = (float)v;
    }
  }
  rs_run_mark_filled(run);
done:
  free(c);
  if (from != run) {
    cli_signals_watch(run);
    rs_run_free(from);
  }
  return status;
}

/* One side's run: model, fill, execute; its worker 0's result copied.
 * Returns -1 to go on, or the exit status. keep: do not execute, leave the
 * filled run in *keep (for the order). */
static int run_side(side_t *s, rs_run_t **keep) {
  char err[RS_ERRMSG_MAX];
  rs_run_t *run = NULL;
  int rc = -1;
  if (rs_run_create(&s->config, s->model, &run, err)) {
    fprintf(stderr, "ringsim: %s: %s\n", s->label, err);
    return EXIT_USAGE;
  }
  cli_signals_watch(run); /* a signal stops it (signals.c) */
  int status = fill_side(s, run, err);
  if (status == RS_OK && keep) {
    cli_signals_watch(NULL); /* (it is not executed) */
    *keep = run;
    return -1;
  }
  if (status != RS_OK) {
    fprintf(stderr, "ringsim: %s: %s\n", s->label, err);
    rc = cli_exit_code(status);
    goto done;
  }
  status = rs_run_execute(run);
  s->status = status;
  if (status != RS_OK && status != RS_ECHECK) {
    fprintf(stderr, "ringsim: %s: %s\n", s->label, rs_run_errmsg(run));
    rc = cli_exit_code(status);
    goto done;
  }
  size_t bytes =
      rs_model_elems(s->model) * rs_dtype_buffer_size(rs_model_dtype(s->model));
  s->result = malloc(bytes ? bytes : 1);
  if (!s->result) {
    fprintf(stderr, "ringsim: out of memory\n");
    rc = EXIT_RUN;
    goto done;
  }
  /* (in parts: a signal stops a copy of gigabytes too) */
  const size_t part = (size_t)64 << 20;
  for (size_t at = 0; at < bytes; at += part) {
    if (cli_signal()) {
      rc = EXIT_RUN; /* main says which signal, and exits 128 + it */
      goto done;
    }
    memcpy((char *)s->result + at, (const char *)rs_run_buffer(run, 0) + at,
           bytes - at < part ? bytes - at : part);
  }
done:
  if (status == RS_EINTERRUPTED)
    cli_signal_said(); /* its message named the signal */
  cli_signals_watch(NULL);
  rs_run_free(run);
  return rc;
}

/* Side k's settings in words, "A: --algo ring": the options given with two
 * values (split_args gave each side its own copy; one value is shared). */
static void side_label(side_t *s, int k, char ***av) {
  size_t len =
      (size_t)snprintf(s[k].label, sizeof s[k].label, "%c:", k ? 'B' : 'A');
  for (int i = 1; av[k][i] && av[k][i + 1]; i++)
    if (strncmp(av[k][i], "--", 2) == 0 && av[0][i + 1] != av[1][i + 1] &&
        why_not_two(av[k][i] + 2) == NULL && len < sizeof s[k].label)
      len += (size_t)snprintf(s[k].label + len, sizeof s[k].label - len,
                              " %s %s", av[k][i], av[k][i + 1]);
  if (s[k].dtype_name && s[0].dtype_name != s[1].dtype_name &&
      len < sizeof s[k].label)
    snprintf(s[k].label + len, sizeof s[k].label - len, " --dtype %s",
             s[k].dtype_name);
}

/* The comparison, once its command lines are made. */
static int diff_main(int argc, char **argv, char *arena, char ***av) {
  side_t s[2];
  memset(s, 0, sizeof s);
  int fail_on_diff = 0, two = 0, rc;
  char two_names[512];
  rc = split_args(argc, argv, arena, av[0], av[1], s, &fail_on_diff, &two,
                  two_names, sizeof two_names);
  if (rc >= 0)
    return rc;
  int n = -1 - rc;
  if (two == 0)
    return cli_usage_error("%s", "diff: no option has two values: give the "
                                 "ones the sides differ in as A,B, e.g. "
                                 "--algo ring,rd");
  for (int k = 0; k < 2; k++) {
    optind = 0; /* getopt starts over */
    if ((rc = cli_parse_args(n, av[k], &s[k].opt)) >= 0)
      return rc;
  }
  for (int k = 0; k < 2; k++)
    if (s[k].dtype_name && strcmp(s[k].dtype_name, "f32") &&
        strcmp(s[k].dtype_name, "f16") && strcmp(s[k].dtype_name, "bf16") &&
        strcmp(s[k].dtype_name, "f64"))
      return cli_usage_error("diff: --dtype '%s': expected f32, f16, bf16 or "
                             "f64",
                             s[k].dtype_name);
  if (s[0].opt.grads && s[0].dtype_name &&
      strcmp(s[0].dtype_name, s[1].dtype_name))
    return cli_usage_error("%s", "diff: --dtype A,B with --grads: a "
                                 "safetensors file holds one dtype; use "
                                 "generated or inline grads");
  /* Two world sizes: L contributions, grouped k = L/S to a worker on the
   * smaller side. */
  const int wa = s[0].opt.config.workers, wb = s[1].opt.config.workers;
  const int sizes = wa != wb, big = wa > wb ? wa : wb;
  char msg[RS_ERRMSG_MAX];
  if (sizes && big % (wa < wb ? wa : wb)) {
    snprintf(msg, sizeof msg,
             "diff: --workers %d,%d: neither world size divides the other, so "
             "the smaller world's workers cannot each take an equal share of "
             "the %d contributions",
             wa, wb, big);
    return cli_usage_error("%s", msg);
  }
  for (int k = 0; k < 2; k++) {
    s[k].contribs = big;
    s[k].local = big / s[k].opt.config.workers;
  }
  if (sizes && s[0].opt.grads)
    for (int r = 0; r < big; r++) {
      char path[4096];
      if (rs_grads_path(s[0].opt.grads, r, path, sizeof path) == RS_OK &&
          access(path, R_OK) == 0)
        continue;
      snprintf(msg, sizeof msg,
               "diff: --grads %.120s: no file for contribution %d (%.120s): "
               "--workers %d,%d needs %d, one per worker of the larger world",
               s[0].opt.grads, r, path, wa, wb, big);
      return cli_usage_error("%s", msg);
    }
  const int json = s[0].opt.json;
  /* The models, then each side's run. */
  for (int k = 0; k < 2; k++) {
    side_label(s, k, av);
    if ((rc = load_model(s[k].opt.params, s[k].dtype_name, &s[k].model)) >= 0)
      goto done;
    options_t *o = &s[k].opt;
    int inline_workers = rs_model_inline_workers(s[k].model);
    s[k].use_inline = inline_workers > 0 && !o->grads;
    if (!o->workers_given && s[k].use_inline)
      o->config.workers = inline_workers;
    if (s[k].use_inline && (o->init_given || o->seed_given)) {
      fprintf(stderr,
              "ringsim: %s: the model gives inline grads; --init and "
              "--seed only apply to generated grads\n",
              o->params);
      rc = EXIT_USAGE;
      goto done;
    }
    if (s[k].use_inline && sizes && inline_workers != big) {
      fprintf(stderr,
              "ringsim: %s: grads has %d entries but --workers %d,%d needs %d "
              "(one per worker of the larger world)\n",
              o->params, inline_workers, wa, wb, big);
      rc = EXIT_USAGE;
      goto done;
    }
    if (s[k].use_inline && !sizes && inline_workers != o->config.workers) {
      fprintf(stderr, "ringsim: %s: grads has %d entries but --workers is %d\n",
              o->params, inline_workers, o->config.workers);
      rc = EXIT_USAGE;
      goto done;
    }
    s[k].config = o->config;
    s[k].config.traced = 0;
    char err[RS_ERRMSG_MAX];
    if (rs_config_measure_machine(&s[k].config, err)) {
      fprintf(stderr, "ringsim: measuring this machine for --algo auto: %s\n",
              err);
      rc = EXIT_RUN;
      goto done;
    }
  }
  for (int k = 0; k < 2; k++)
    if ((rc = run_side(&s[k], NULL)) >= 0)
      goto done;

  /* The comparison, param by param. */
  const rs_model_t *m = s[0].model;
  const rs_dtype_t da = rs_model_dtype(s[0].model),
                   db = rs_model_dtype(s[1].model);
  const rs_dtype_t coarse =
      rs_dtype_mantissa_bits(db) < rs_dtype_mantissa_bits(da) ? db : da;
  const size_t elems = rs_model_elems(m), params = rs_model_param_count(m);
  param_diff_t *pd = calloc(params ? params : 1, sizeof *pd);
  uint64_t differing = 0;
  double max_ulps = 0, max_rel = 0;
  size_t worst = SIZE_MAX;
  if (!pd) {
    fprintf(stderr, "ringsim: out of memory\n");
    rc = EXIT_RUN;
    goto done;
  }
  for (size_t p = 0; p < params; p++) {
    const rs_param_t *param = rs_model_param(m, p);
    for (size_t i = param->elem_offset; i < param->elem_offset + param->elems;
         i++) {
      if (i % 65536 == 0 && cli_signal())
        break; /* (said below) */
      double a = value_at(s[0].result, da, i), b = value_at(s[1].result, db, i);
      if (a == b)
        continue;
      double u = ulps_between(a, da, b, db), rel = relative(a, b);
      differing++;
      pd[p].differing++;
      pd[p].max_ulps = fmax(pd[p].max_ulps, u);
      pd[p].max_rel = fmax(pd[p].max_rel, rel);
      max_rel = fmax(max_rel, rel);
      if (u > max_ulps || worst == SIZE_MAX) {
        max_ulps = fmax(max_ulps, u);
        worst = i;
      }
    }
  }
  /* Per region (chunk, part, half) of each side's algorithm, and the order
   * of the element that differs most: a fresh run of each side, filled, not
   * executed, one at a time. */
  rs_run_t *fresh[2] = {NULL, NULL};
  uint64_t *region_counts[2] = {NULL, NULL};
  int region_n[2] = {0, 0};
  const char *region_word[2] = {NULL, NULL};
  rs_order_t *order[2] = {NULL, NULL};
  char order_err[2][RS_ERRMSG_MAX] = {"", ""};
  leaves_t lv[2] = {{0, NULL}, {0, NULL}};
  for (int k = 0; k < 2 && differing && !cli_signal(); k++) {
    if (sizes && big <= MAX_CONTRIBS_WRITTEN) {
      s[k].at = worst;
      s[k].at_contribs = calloc((size_t)big, sizeof(double));
      if (!s[k].at_contribs) {
        fprintf(stderr, "ringsim: out of memory\n");
        rc = EXIT_RUN;
        goto free_fresh;
      }
      lv[k].local = s[k].local;
      lv[k].contribs = s[k].at_contribs;
    }
    if ((rc = run_side(&s[k], &fresh[k])) >= 0)
      goto free_fresh;
    const int W = s[k].config.workers;
    size_t *off = malloc(((size_t)W + 1) * sizeof *off);
    region_counts[k] = calloc((size_t)W, sizeof(uint64_t));
    if (!off || !region_counts[k]) {
      free(off);
      fprintf(stderr, "ringsim: out of memory\n");
      rc = EXIT_RUN;
      goto free_fresh;
    }
    const rs_bucket_t *bk;
    for (size_t bi = 0; (bk = rs_run_bucket(fresh[k], bi)) != NULL; bi++) {
      const char *word;
      int count = rs_run_bucket_regions(fresh[k], bi, off, &word);
      if (!word)
        continue;
      region_word[k] = word;
      region_n[k] = count > region_n[k] ? count : region_n[k];
      for (int c = 0; c < count; c++)
        for (size_t i = bk->elem_offset + off[c];
             i < bk->elem_offset + off[c + 1] && !(i % 65536 == 0 && cli_signal());
             i++)
          region_counts[k][c] +=
              value_at(s[0].result, da, i) != value_at(s[1].result, db, i);
    }
    free(off);
    if (s[k].config.workers > 8) /* --explain's replay: 1..8 workers */
      snprintf(order_err[k], sizeof order_err[k],
               "the orders are written out for 1 to 8 workers, not %d",
               s[k].config.workers);
    else if (sizes && big > MAX_CONTRIBS_WRITTEN)
      snprintf(order_err[k], sizeof order_err[k],
               "the orders are written out for up to %d contributions, not %d",
               MAX_CONTRIBS_WRITTEN, big);
    else
      rs_run_element_order(fresh[k], worst, &order[k], order_err[k]);
    rs_run_free(fresh[k]);
    fresh[k] = NULL;
  }

  /* A signal since the runs: no report (main exits 128 + it). */
  if (cli_signal()) {
    rc = EXIT_RUN;
    goto free_fresh;
  }
  /* The report. */
  size_t worst_param = 0;
  for (size_t p = 0; worst != SIZE_MAX && p < params; p++) {
    const rs_param_t *param = rs_model_param(m, p);
    if (worst >= param->elem_offset &&
        worst < param->elem_offset + param->elems)
      worst_param = p;
  }
  const double pct = elems ? 100.0 * (double)differing / (double)elems : 0;
  if (json) {
    json_t *j = json_object(), *sides = json_array(), *jp = json_array();
    for (int k = 0; k < 2; k++) {
      const rs_config_t *c = &s[k].config;
      json_array_append_new(
          sides,
          json_pack("{s:s, s:s, s:s, s:i, s:s, s:s?, s:s}", "label", s[k].label,
                    "algo", rs_algorithm_name(c->algo), "dtype",
                    rs_dtype_name(rs_model_dtype(s[k].model)), "workers",
                    c->workers, "op", rs_op_name(c->op), "average",
                    c->op == RS_OP_AVG ? (c->average_pre ? "pre" : "post")
                                       : NULL,
                    "status", rs_status_name(s[k].status)));
    }
    for (size_t p = 0; p < params; p++) {
      const rs_param_t *param = rs_model_param(m, p);
      json_array_append_new(
          jp, json_pack("{s:s, s:I, s:I, s:f, s:f}", "name", param->name,
                        "elems", (json_int_t)param->elems, "differing",
                        (json_int_t)pd[p].differing, "max_ulps", pd[p].max_ulps,
                        "max_rel", pd[p].max_rel));
    }
    json_object_set_new(j, "sides", sides);
    json_object_set_new(j, "contributions", json_integer(big));
    json_object_set_new(j, "compared", json_integer((json_int_t)elems));
    json_object_set_new(j, "differing", json_integer((json_int_t)differing));
    json_object_set_new(j, "differing_pct", json_real(pct));
    json_object_set_new(j, "identical", json_boolean(differing == 0));
    json_object_set_new(j, "max_ulps", json_real(max_ulps));
    json_object_set_new(j, "ulps_of", json_string(rs_dtype_name(coarse)));
    json_object_set_new(j, "max_rel", json_real(max_rel));
    json_object_set_new(j, "params", jp);
    json_t *regions = json_array();
    for (int k = 0; k < 2; k++) {
      if (!region_word[k])
        continue;
      json_t *counts = json_array();
      for (int c = 0; c < region_n[k]; c++)
        json_array_append_new(counts,
                              json_integer((json_int_t)region_counts[k][c]));
      json_array_append_new(regions,
                            json_pack("{s:i, s:s, s:o}", "side", k, "region",
                                      region_word[k], "differing", counts));
    }
    json_object_set_new(j, "regions", regions);
    json_t *el = json_null();
    if (worst != SIZE_MAX) {
      const rs_param_t *param = rs_model_param(m, worst_param);
      double a = value_at(s[0].result, da, worst),
             b = value_at(s[1].result, db, worst);
      json_t *orders = json_array();
      for (int k = 0; k < 2; k++) {
        const rs_order_t *o = order[k];
        if (!o) {
          json_array_append_new(orders, json_pack("{s:i, s:s}", "side", k,
                                                  "error", order_err[k]));
          continue;
        }
        char text[4096];
        expr_text(o, &lv[k], o->root, 1, text, sizeof text);
        json_t *inputs = json_array(), *parts = json_array();
        for (int r = 0; r < (lv[k].local ? big : o->workers); r++)
          json_array_append_new(
              inputs,
              json_real(lv[k].local ? lv[k].contribs[r] : o->nodes[r].input));
        partials(o, &lv[k], o->root, parts, NULL);
        json_t *jo =
            json_pack("{s:i, s:s, s:s, s:f, s:o, s:o, s:I, s:s?, s:i}", "side",
                      k, "algo", rs_algorithm_name(o->algo), "expr", text,
                      "value", o->nodes[o->root].value, "inputs", inputs,
                      "partials", parts, "bucket", (json_int_t)o->bucket,
                      "region_word", o->region_word, "region", o->region);
        if (lv[k].local)
          json_object_set_new(jo, "local", json_integer(lv[k].local));
        json_array_append_new(orders, jo);
      }
      el = json_pack("{s:I, s:s, s:I, s:f, s:f, s:f, s:f, s:o}", "index",
                     (json_int_t)worst, "param", param->name, "param_index",
                     (json_int_t)(worst - param->elem_offset), "a", a, "b", b,
                     "ulps", ulps_between(a, da, b, db), "rel", relative(a, b),
                     "orders", orders);
    }
    json_object_set_new(j, "element", el);
    char *text = json_dumps(j, JSON_COMPACT);
    if (text)
      puts(text);
    free(text);
    json_decref(j);
  } else {
    char name[CLI_SAFE_MAX], num[40];
    printf("diff: %s", cli_safe(rs_model_name(m), name, sizeof name));
    if (sizes)
      printf(", %d contributions on %d and %d workers, %s\n", big,
             s[0].config.workers, s[1].config.workers,
             rs_op_name(s[0].config.op));
    else
      printf(", %d workers, %s\n", s[0].config.workers,
             rs_op_name(s[0].config.op));
    for (int k = 0; k < 2; k++)
      printf("  %s  (%s, %s)\n", cli_safe(s[k].label, name, sizeof name),
             rs_algorithm_name(s[k].config.algo),
             rs_dtype_name(rs_model_dtype(s[k].model)));
    printf("compared   %zu elements\n", elems);
    printf("differing  %" PRIu64 " (%.2f%%)%s\n", differing, pct,
           differing ? "" : ": identical, bit for bit");
    if (differing) {
      ulps_text(max_ulps, num, sizeof num);
      printf("largest    %s ULPs (of %s), relative %.3g\n", num,
             rs_dtype_name(coarse), max_rel);
      printf("per param\n");
      for (size_t p = 0; p < params; p++) {
        if (!pd[p].differing)
          continue;
        const rs_param_t *param = rs_model_param(m, p);
        ulps_text(pd[p].max_ulps, num, sizeof num);
        printf("  %-24s %" PRIu64 " of %zu differ, largest %s ULPs\n",
               cli_safe(param->name, name, sizeof name), pd[p].differing,
               param->elems, num);
      }
      for (int k = 0; k < 2; k++) {
        if (!region_word[k])
          continue;
        printf("per %s of side %c's buckets (%s):", region_word[k],
               k == 0 ? 'A' : 'B', rs_algorithm_name(s[k].config.algo));
        for (int c = 0; c < region_n[k]; c++)
          printf(" %d: %" PRIu64 "%s", c, region_counts[k][c],
                 c + 1 < region_n[k] ? "," : "\n");
      }
      const rs_param_t *param = rs_model_param(m, worst_param);
      double a = value_at(s[0].result, da, worst),
             b = value_at(s[1].result, db, worst);
      ulps_text(ulps_between(a, da, b, db), num, sizeof num);
      printf("element %zu (%s[%zu]) differs most: %s ULPs\n", worst,
             cli_safe(param->name, name, sizeof name),
             worst - param->elem_offset, num);
      for (int k = 0; k < 2; k++) {
        const rs_order_t *o = order[k];
        if (!o) {
          printf("  side %c: %s\n", k == 0 ? 'A' : 'B', order_err[k]);
          continue;
        }
        char text[4096];
        expr_text(o, &lv[k], o->root, 1, text, sizeof text);
        number(o->nodes[o->root].value, o->dtype, num, sizeof num);
        printf("  side %c (%s", k == 0 ? 'A' : 'B', rs_algorithm_name(o->algo));
        if (o->region_word)
          printf(", %s %d of bucket %zu", o->region_word, o->region, o->bucket);
        else
          printf(", bucket %zu", o->bucket);
        printf("): %s = %s\n", text, num);
        printf("    with");
        const int n_in = lv[k].local ? big : o->workers;
        for (int r = 0; r < n_in; r++) {
          number(lv[k].local ? lv[k].contribs[r] : o->nodes[r].input, o->dtype,
                 num, sizeof num);
          printf(" %c%d = %s%s", lv[k].local ? 'c' : 'g', r, num,
                 r + 1 < n_in ? "," : "\n");
        }
        partials(o, &lv[k], o->root, NULL, stdout);
      }
    }
  }
  for (int k = 0; k < 2; k++)
    if (s[k].status == RS_ECHECK)
      fprintf(stderr, "ringsim: %s: the check failed\n", s[k].label);
  rc = s[0].status == RS_ECHECK || s[1].status == RS_ECHECK ? EXIT_CHECK
       : fail_on_diff && differing                          ? EXIT_CHECK
                                                            : 0;
free_fresh:
  for (int k = 0; k < 2; k++) {
    rs_free(order[k]);
    rs_run_free(fresh[k]);
    free(region_counts[k]);
  }
  free(pd);
done:
  for (int k = 0; k < 2; k++) {
    rs_model_free(s[k].model);
    free(s[k].result);
    free(s[k].at_contribs);
  }
  return rc;
}

int cli_diff(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
      fputs(cli_diff_usage_text, stdout);
      return 0;
    }
  char **av[2];
  av[0] = calloc((size_t)argc * 2 + 2, sizeof(char *));
  av[1] = calloc((size_t)argc * 2 + 2, sizeof(char *));
  char *arena = malloc(arena_size(argc, argv));
  int rc = EXIT_RUN;
  if (av[0] && av[1] && arena)
    rc = diff_main(argc, argv, arena, av);
  else
    fprintf(stderr, "ringsim: out of memory\n");
  free(arena);
  free(av[0]);
  free(av[1]);
  return rc;
}
