/* report.c - what the ringsim command prints of a run: the text summary
 * (the JSON report is the library's, rs_run_report_json; both read its
 * figures, rs_run_figures), the watchdog report of a failed
 * run, the exit status, and the helpers every mode's output uses. */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algo/nccl.h" /* whose rings the channels run on */
#include "report.h"

/* Element i of the values, whatever the model's buffer type. */
static double value_at(const rs_model_t *model, const void *values,
                       size_t i) {
  if (rs_model_dtype(model) == RS_DTYPE_F64)
    return ((const double *)values)[i];
  return ((const float *)values)[i];
}

/* Does the decimal text read back as x in the dtype? (f16 and bf16 values
 * live in floats; the text is read as a float, then rounded to the dtype.) */
static int reads_back(const char *text, double x, rs_dtype_t dtype) {
  if (dtype == RS_DTYPE_F64)
    return strtod(text, NULL) == x;
  float f = strtof(text, NULL);
  if (dtype != RS_DTYPE_F32)
    f = rs_dtype_round(dtype, f);
  return f == (float)x;
}

/* Print x as the shortest decimal that reads back as the same value of the
 * model's dtype, in one notation whatever the digits (as Python's repr):
 * positional from 1e-4 up to 1e16, scientific outside, e.g. -80, 0.25,
 * 0.33333334, 1e-05, 3e+20. */
static void format_value(double x, rs_dtype_t dtype, char *buf, size_t size) {
  if (!isfinite(x)) {
    snprintf(buf, size, "%s", isnan(x) ? "nan" : x < 0 ? "-inf" : "inf");
    return;
  }
  char sci[40];
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(sci, sizeof sci, "%.*e", digits - 1, x);
    if (reads_back(sci, x, dtype))
      break;
  }
  /* sci is [-]d[.ddd]e[+-]XX: take the digits and the exponent apart. */
  char mant[24];
  size_t n = 0;
  const char *p = sci;
  const char *sign = *p == '-' ? "-" : "";
  p += *sign != '\0';
  for (; *p != 'e'; p++)
    if (*p != '.' && n + 1 < sizeof mant)
      mant[n++] = *p;
  while (n > 1 && mant[n - 1] == '0')
    n--;
  mant[n] = '\0';
  int exp = atoi(p + 1);
  if (exp < -4 || exp >= 16) {
    snprintf(buf, size, "%s%c%s%se%c%02d", sign, mant[0], n > 1 ? "." : "",
             mant + 1, exp < 0 ? '-' : '+', abs(exp));
    return;
  }
  /* Positional: the digits, with the point moved exp places and zeros
   * filled in before (0.00ddd) or after (ddd00). */
  char text[48];
  size_t len = 0;
  if (exp < 0) {
    text[len++] = '0';
    text[len++] = '.';
    for (int z = 0; z < -exp - 1; z++)
      text[len++] = '0';
  }
  for (size_t i = 0; i < n || (exp >= 0 && i <= (size_t)exp); i++) {
    if (exp >= 0 && i == (size_t)exp + 1)
      text[len++] = '.';
    text[len++] = i < n ? mant[i] : '0';
  }
  text[len] = '\0';
  snprintf(buf, size, "%s%s", sign, text);
}

const char *cli_safe(const char *text, char *buf, size_t size) {
  if (snprintf(buf, size, "%s", text) >= (int)size && size > 4)
    memcpy(buf + size - 4, "...", 4);
  rs_one_line(buf);
  return buf;
}

static void print_values(const rs_model_t *model, const void *values) {
  const rs_dtype_t dtype = rs_model_dtype(model);
  char num[48], name[CLI_SAFE_MAX];
  for (size_t p = 0; p < rs_model_param_count(model); p++) {
    const rs_param_t *param = rs_model_param(model, p);
    printf("  %s: [", cli_safe(param->name, name, sizeof name));
    for (size_t i = 0; i < param->elems; i++) {
      format_value(value_at(model, values, param->elem_offset + i),
                   dtype, num, sizeof num);
      printf("%s%s", i ? ", " : "", num);
    }
    printf("]\n");
  }
}

int cli_stdout_lost(const char *what, char *err, size_t size) {
  errno = 0;
  int flushed = fflush(stdout) == 0;
  if (flushed && !ferror(stdout))
    return 0;
  /* fflush says why; a write that failed earlier, mid-report, left its
   * mark only in the stream's error flag. */
  snprintf(err, size, "%s was not delivered: stdout: %s", what,
           !flushed && errno ? strerror(errno) : "a write failed");
  clearerr(stdout); /* said once: a later check looks at later writes */
  return -1;
}

void cli_trace_mark_job(rs_trace_t *trace, int interrupted,
                        const char *error) {
  char err[RS_ERRMSG_MAX];
  if (trace && rs_trace_mark_written(trace,
                                     interrupted ? "interrupted" : "failed",
                                     error, err) != RS_OK)
    fprintf(stderr, "ringsim: %s\n", err);
}

void cli_human_bytes(double bytes, char *buf, size_t size) {
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

const char *cli_init_name(rs_init_t init) {
  return init == RS_INIT_EXACT     ? "exact"
         : init == RS_INIT_UNIFORM ? "uniform"
                                   : "normal";
}

/* When a fault ends a run, say where every worker stopped (in the spirit
 * of PyTorch's Flight Recorder), so a hang names its culprit. */
#define WATCHDOG_LINES 32

/* Participant p as the watchdog names it: worker p, or node n's NVLink
 * switch, participant W + n (docs/trace-schema.md): "switch n
 * (participant W+n)", as the run's messages name it. */
static const char *who(int p, int W, char *buf, size_t size) {
  if (p >= W)
    snprintf(buf, size, "switch %d (participant %d)", p - W, p);
  else
    snprintf(buf, size, "worker %d", p);
  return buf;
}

/* Participant p's line: its name, its state and where it stopped. */
static void print_stopped(rs_run_t *run, int p, int W) {
  char name[48], peer[48];
  rs_worker_state_t s;
  rs_run_worker_state(run, p, &s);
  if (p >= W) /* (a switch's name is longer than the column: it pushes) */
    fprintf(stderr, "  %s %-15s", who(p, W, name, sizeof name), s.state);
  else
    fprintf(stderr, "  worker %-4d %-15s", p, s.state);
  if (s.phase)
    fprintf(stderr, " %s step %d", s.phase, s.step);
  int sending = s.waiting && strcmp(s.waiting, "send") == 0;
  int blocked =
      s.wstate == RS_WSTATE_TIMED_OUT || s.wstate == RS_WSTATE_ABORTED;
  if (s.waiting && strcmp(s.waiting, "finish") == 0)
    fprintf(stderr, ", its steps done, %s %s's end of stream",
            blocked ? "waiting for" : "checking",
            who(s.peer, W, peer, sizeof peer));
  else if (s.waiting)
    fprintf(stderr, ", %s chunk %d %s %s",
            blocked ? (sending ? "waiting to send" : "waiting to receive")
                    : (sending ? "while sending" : "while receiving"),
            s.chunk, sending ? "to" : "from",
            who(s.peer, W, peer, sizeof peer));
  else if (s.wstate == RS_WSTATE_STALLED)
    fprintf(stderr, ", sleeping in an injected stall of %d ms", s.stall_ms);
  else if (s.wstate == RS_WSTATE_CRASHED)
    fprintf(stderr, ", stopped there (injected crash)");
  fputc('\n', stderr);
}

/* Every GPU's line, then every NVLink switch's (nvls, nvlstree: a
 * participant of its own, which a GPU may wait on), each list cut at
 * WATCHDOG_LINES. */
void cli_print_watchdog(rs_run_t *run) {
  const int W = rs_run_config(run)->workers;
  const int S = rs_run_switches(run);
  fprintf(stderr, "ringsim: watchdog: where each worker stopped:\n");
  for (int w = 0; w < W && w < WATCHDOG_LINES; w++)
    print_stopped(run, w, W);
  if (W > WATCHDOG_LINES)
    fprintf(stderr,
            "  ... and %d more workers (the trace's worker table has "
            "them all)\n",
            W - WATCHDOG_LINES);
  for (int n = 0; n < S && n < WATCHDOG_LINES; n++)
    print_stopped(run, W + n, W);
  if (S > WATCHDOG_LINES)
    fprintf(stderr, "  ... and %d more switches\n", S - WATCHDOG_LINES);
}

int cli_exit_code(int status) {
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

void cli_print_network(const rs_netmodel_t *net) {
  const rs_topo_t *t = &net->topo;
  if (t->enabled) {
    char nodes[32] = "each row's nodes"; /* nodes 0: ringsim model's rows */
    if (t->nodes)
      snprintf(nodes, sizeof nodes, "%d node%s", t->nodes,
               t->nodes == 1 ? "" : "s");
    printf("  network    %s x %d GPU%s, %d NIC%s per node: intra "
           "%.3f us, %.3f GB/s per GPU port; nic %.3f us, %.3f GB/s per NIC",
           nodes, t->gpus, t->gpus == 1 ? "" : "s", t->nics,
           t->nics == 1 ? "" : "s", (double)t->intra.latency_ns / 1e3,
           (double)t->intra.bandwidth / 1e9, (double)t->nic.latency_ns / 1e3,
           (double)t->nic.bandwidth / 1e9);
  } else {
    printf("  network    latency %.3f us, bandwidth %.3f GB/s per link",
           (double)net->link.latency_ns / 1e3,
           (double)net->link.bandwidth / 1e9);
  }
  if (net->reduce_rate)
    printf(", reduce %.3f GB/s", (double)net->reduce_rate / 1e9);
  static const char *const protos[] = {"", "LL", "LL128", "Simple"};
  if (net->proto > RS_PROTOCOL_NONE && net->proto <= RS_PROTOCOL_SIMPLE)
    printf(", protocol %s (NCCL's wire bytes and latencies%s)",
           protos[net->proto],
           t->enabled && t->cc > 0 ? "" : "; the links' own hops");
  /* (every mode's line: ringsim step's and model's took them too, and
   * did not say so) */
  if (net->link_count || net->straggler_count)
    printf(", %d slower link%s, %d straggler%s", net->link_count,
           net->link_count == 1 ? "" : "s", net->straggler_count,
           net->straggler_count == 1 ? "" : "s");
}

/* Simulated, predicted and measured time side by side. */
static void print_sim_line(const rs_config_t *cfg, const rs_result_t *res,
                           double wall_s) {
  const rs_netmodel_t *net = &cfg->net;
  const int ring = cli_algo_info(cfg->algo).textbook_ring;
  cli_print_network(net);
  printf("\n  simulated  %.3f us   predicted %s%s = %.3f us%s   measured "
         "wall %.3f us\n",
         (double)res->sim_ns / 1e3,
         net->topo.enabled ? "by each bucket's schedule alone (a topology "
                             "has no closed formula)"
         : ring            ? RS_NETMODEL_FORMULA
         : cfg->algo == RS_ALGO_AUTO ? "by each bucket's chosen algorithm's "
                                       "cost formula"
                                     : "by the cost formula of ",
         net->topo.enabled || ring || cfg->algo == RS_ALGO_AUTO
             ? ""
             : rs_algorithm_name(cfg->algo),
         (double)res->predicted_ns / 1e3,
         net->link_count || net->straggler_count ? " (uniform ring)" : "",
         wall_s * 1e6);
}

/* The buckets, in the order they are all-reduced (DDP's): size and params. */
#define BUCKET_LINES 8

static void print_buckets(const report_t *r) {
  const rs_result_t *res = rs_run_result(r->run);
  const rs_config_t *cfg = rs_run_config(r->run);
  char cap[32], first[32], size[32];
  cli_human_bytes((double)cfg->bucket_bytes, cap, sizeof cap);
  cli_human_bytes((double)cfg->first_bucket_bytes, first, sizeof first);
  if (rs_model_fixed_buckets(r->model))
    printf("  buckets    %zu, as the model lists them (a recorded job's "
           "DDP):\n",
           res->buckets);
  else
    printf("  buckets    %zu, in DDP's order (last params first; cap %s, "
           "first bucket %s):\n",
           res->buckets, cap, first);
  for (size_t b = 0; b < res->buckets && b < BUCKET_LINES; b++) {
    const rs_bucket_t *k = rs_run_bucket(r->run, b);
    /* its first and last param in its layout's order */
    const rs_param_t *lo = rs_model_param(
        r->model, rs_model_bucket_param(r->model, k, b, k->params - 1));
    const rs_param_t *hi =
        rs_model_param(r->model, rs_model_bucket_param(r->model, k, b, 0));
    cli_human_bytes((double)k->elems *
                        (double)rs_dtype_size(rs_model_dtype(r->model)),
                    size, sizeof size);
    char hi_name[CLI_SAFE_MAX], lo_name[CLI_SAFE_MAX];
    printf("             %zu: %s, %zu param%s (%s%s%s)\n", b, size, k->params,
           k->params == 1 ? "" : "s",
           cli_safe(hi->name, hi_name, sizeof hi_name),
           k->params > 1 ? " .. " : "",
           k->params > 1 ? cli_safe(lo->name, lo_name, sizeof lo_name) : "");
  }
  if (res->buckets > BUCKET_LINES)
    printf("             ... and %zu more\n", res->buckets - BUCKET_LINES);
}

/* At most this many lines of auto's choices, one per distinct bucket size. */
#define AUTO_LINES 6

/* --algo auto: the model it chose by, its choice per bucket size with every
 * algorithm's prediction, and how many buckets each algorithm ran. */
static void print_auto(const report_t *r) {
  int measured = 0;
  const rs_netmodel_t *m = rs_run_auto_model(r->run, &measured);
  const size_t buckets = rs_run_result(r->run)->buckets;
  const size_t elem_size = rs_dtype_size(rs_model_dtype(r->model));
  if (!m)
    return;
  if (m->topo.enabled)
    printf("  auto       by --topo's topology (each bucket's schedule "
           "simulated alone), reduce %.3f GB/s\n",
           (double)m->reduce_rate / 1e9);
  else
    printf("  auto       by %s: latency %.3f us, bandwidth %.3f GB/s, reduce "
           "%.3f GB/s\n",
           measured ? "this machine, measured" : "--net's network",
           (double)m->link.latency_ns / 1e3, (double)m->link.bandwidth / 1e9,
           (double)m->reduce_rate / 1e9);
  printf("             %-12s", "bucket size");
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    if (cli_algo_fits(m, (rs_algorithm_t)a))
      printf(" %9s", rs_algorithm_name((rs_algorithm_t)a));
  printf("   predicted us, chosen\n");
  size_t lines = 0, sizes = 0;
  for (size_t b = 0; b < buckets; b++) {
    const size_t elems = rs_run_bucket(r->run, b)->elems;
    size_t first = 0, count = 0;
    while (rs_run_bucket(r->run, first)->elems != elems)
      first++;
    if (first != b)
      continue; /* this size was printed */
    sizes++;
    for (size_t k = b; k < buckets; k++)
      count += rs_run_bucket(r->run, k)->elems == elems;
    if (lines == AUTO_LINES)
      continue;
    lines++;
    char size[32];
    cli_human_bytes((double)elems * (double)elem_size, size, sizeof size);
    printf("             %-12s", size);
    for (int a = 0; a < RS_ALGO_COUNT; a++) {
      uint64_t ns = rs_run_bucket_predicted(r->run, b, (rs_algorithm_t)a);
      if (!cli_algo_fits(m, (rs_algorithm_t)a))
        continue;
      if (ns == UINT64_MAX)
        printf(" %9s", "-");
      else
        printf(" %9.1f", (double)ns / 1e3);
    }
    printf("   %s (%zu bucket%s)\n",
           rs_algorithm_name(rs_run_bucket_algo(r->run, b)), count,
           count == 1 ? "" : "s");
  }
  if (sizes > lines)
    printf("             ... and %zu more sizes (--json lists every bucket)\n",
           sizes - lines);
  printf("             buckets run:");
  for (int a = 0, any = 0; a < RS_ALGO_COUNT; a++) {
    size_t n = 0;
    for (size_t b = 0; b < buckets; b++)
      n += rs_run_bucket_algo(r->run, b) == (rs_algorithm_t)a;
    if (n)
      printf("%s %s %zu", any++ ? "," : "",
             rs_algorithm_name((rs_algorithm_t)a), n);
  }
  printf("\n");
}

/* How the ring's summation order changed the result, per param, against a
 * fixed worker-0-first order. */
/* Workers that are not identical: how many elements of each differ from
 * worker 0's, and the first of them (rs_run_mismatches). */
static void print_mismatches(const report_t *r, int W) {
  const rs_mismatch_t *first;
  size_t listed = rs_run_mismatches(r->run, &first);
  const char *fmt = rs_model_dtype(r->model) == RS_DTYPE_F64 ? "%.17g" : "%.9g";
  printf("  differ     from worker 0's bits:");
  int shown = 0;
  for (int w = 1; w < W; w++) {
    uint64_t n = rs_run_worker_mismatches(r->run, w);
    if (n)
      printf("%s worker %d (%llu element%s)", shown++ ? "," : "", w,
             (unsigned long long)n, n == 1 ? "" : "s");
  }
  printf("%s\n", shown ? "" : " (not listed)");
  for (size_t k = 0; k < listed; k++) {
    const rs_mismatch_t *m = &first[k];
    const rs_param_t *p = rs_model_param(r->model, m->param);
    char name[128], value[32], value0[32];
    snprintf(value, sizeof value, fmt, m->value);
    snprintf(value0, sizeof value0, fmt, m->worker0_value);
    printf("             %s[%zu] (element %zu): worker %d holds %s, worker 0 "
           "%s\n",
           cli_safe(p->name, name, sizeof name), m->elem - p->elem_offset,
           m->elem, m->worker, value, value0);
  }
}

static void print_order_report(const report_t *r) {
  /* the dtype the sums are written in: the model's, or a compressing
   * hook's (whose ULPs the check counts) */
  const rs_dtype_t d =
      rs_hook_dtype(rs_run_config(r->run)->hook, rs_model_dtype(r->model));
  const int half = d == RS_DTYPE_F16 || d == RS_DTYPE_BF16;
  printf("  order      against a fixed order (worker 0, 1, ... in %s%s): "
         "elements that differ, largest difference%s%s\n",
         d == RS_DTYPE_F64 ? "double" : "float",
         half ? ", rounded to the dtype" : "", half ? " in ULPs of " : "",
         half ? rs_dtype_name(d) : "");
  for (size_t p = 0; p < rs_model_param_count(r->model); p++) {
    const rs_param_t *param = rs_model_param(r->model, p);
    const rs_param_check_t *c = rs_run_param_check(r->run, p);
    char name[CLI_SAFE_MAX];
    printf(
        "             %s: %llu of %zu differ (%.1f%%), by up to %llu ulp%s\n",
        cli_safe(param->name, name, sizeof name),
        (unsigned long long)c->order_differing, param->elems,
        param->elems ? 100.0 * (double)c->order_differing / (double)param->elems
                     : 0.0,
        (unsigned long long)c->order_max_ulps,
        c->order_max_ulps == 1 ? "" : "s");
  }
}

/* Transfers: as planned when the run finished; a failed run's per worker,
 * as many as each really sent, beside the plan. */
#define TRANSFER_LIST_WORKERS 16

static void print_transfers(const report_t *r, const rs_run_figures_t *f) {
  const rs_result_t *res = rs_run_result(r->run);
  const int W = f->workers;
  if (res->checked) { /* the all-reduce completed */
    if (f->transfers_min == f->transfers_max)
      printf("  transfers  %llu (%llu per worker)\n",
             (unsigned long long)res->transfers,
             (unsigned long long)f->transfers_min);
    else
      printf("  transfers  %llu (%llu-%llu per worker)\n",
             (unsigned long long)res->transfers,
             (unsigned long long)f->transfers_min,
             (unsigned long long)f->transfers_max);
    return;
  }
  if (f->planned)
    printf("  transfers  %llu sent of %llu planned (per worker:",
           (unsigned long long)res->transfers, (unsigned long long)f->planned);
  else
    printf("  transfers  %llu sent (per worker:",
           (unsigned long long)res->transfers);
  for (int w = 0; w < W && w < TRANSFER_LIST_WORKERS; w++)
    printf("%s%llu", w ? ", " : " ",
           (unsigned long long)rs_run_worker_stats(r->run, w)->transfers_sent);
  printf("%s)\n", W > TRANSFER_LIST_WORKERS ? ", ..." : "");
}

/* --hook: what the hook does to each bucket (docs/hooks.md). */
static void print_hook_head(const rs_config_t *cfg, rs_dtype_t model, int W) {
  const rs_dtype_t d = rs_hook_dtype(cfg->hook, model);
  const char *dn = d == RS_DTYPE_F16 ? "float16" : "bfloat16";
  switch (cfg->hook) {
  case RS_HOOK_NONE:
  case RS_HOOK_POWERSGD: /* its own report (powersgd.c) */
    return;
  case RS_HOOK_ALLREDUCE:
    printf("  hook       allreduce (PyTorch's allreduce_hook): each bucket "
           "divided by %d, then summed by %s\n",
           W, rs_algorithm_name(cfg->algo));
    return;
  case RS_HOOK_FP16:
  case RS_HOOK_BF16:
    printf("  hook       %s (PyTorch's %s): each bucket cast to %s, divided "
           "by %d in %s, summed in %s by %s, cast back to %s\n",
           rs_hook_name(cfg->hook),
           cfg->hook == RS_HOOK_FP16 ? "fp16_compress_hook"
                                     : "bf16_compress_hook's arithmetic",
           dn, W, dn, dn, rs_algorithm_name(cfg->algo), rs_dtype_name(model));
    return;
  }
}

/* A compressing hook's losses, once checked: what its cast and its
 * division flushed or overflowed, and what summing first would have
 * overflowed (docs/hooks.md). */
static void print_hook_check(const rs_config_t *cfg, const rs_result_t *res,
                             const rs_run_figures_t *f) {
  if (cfg->hook != RS_HOOK_FP16 && cfg->hook != RS_HOOK_BF16)
    return;
  const int W = f->workers;
  printf("  %-10s cast: %" PRIu64 " overflowed to inf, %" PRIu64
         " flushed to zero; dividing by %d: %" PRIu64
         " more flushed to zero (of %zu elements over the %d workers; "
         "largest |value| %.6g)\n",
         f->hook_dtype == RS_DTYPE_F16 ? "float16" : "bfloat16",
         res->hook_cast_overflow, res->hook_cast_flushed, W,
         res->hook_div_flushed, f->elems * (size_t)W, W, res->hook_max_abs);
  char from[128] = "";
  if (f->hook_overflow_workers > 0)
    snprintf(from, sizeof from,
             f->hook_overflow_workers < 1e9
                 ? "; W gradients the size of the largest |mean| (%.6g) "
                   "overflow from W = %.0f"
                 : "; W gradients the size of the largest |mean| (%.6g) "
                   "overflow from W = %.3g",
             f->hook_max_abs_mean, f->hook_overflow_workers);
  printf("             summed first, divided after: %" PRIu64 " element%s%s\n",
         f->hook_sum_overflow, f->hook_sum_overflow == 1 ? " overflows" : "s overflow",
         from);
  if (f->hook_saved)
    printf("             dividing first saved %" PRIu64 " of them from "
           "overflow\n",
           f->hook_saved);
  else
    printf("             dividing first saved none here\n");
}

/* The text report's parts, in order: what ran (its header, the model,
 * the grads), how the algorithm cut it (chunks or messages, steps, the
 * loop), what it moved and how long it took, and the check. Each gets the
 * report, its run's config and result, and the figures. */
static void print_head(const report_t *r, const rs_config_t *cfg,
                       const rs_result_t *res, const rs_run_figures_t *f) {
  const int W = f->workers;
  char size[32], name[CLI_SAFE_MAX];
  cli_human_bytes(f->bytes, size, sizeof size);
  /* an average says when it divides: "avg" after the sum, else how */
  const char *average =
      cfg->op == RS_OP_AVG ? rs_average_name(cfg->average) : NULL;
  int divides_first = average && strcmp(average, "post") != 0;
  printf("ringsim %s: %s all-reduce (%s%s%s) of model \"%s\" on %d worker%s\n",
         RS_VERSION, rs_algorithm_name(cfg->algo), rs_op_name(cfg->op),
         divides_first ? ", " : "", divides_first ? average : "",
         cli_safe(rs_model_name(r->model), name, sizeof name), W,
         W == 1 ? "" : "s");
  if (cfg->ddp_layout) { /* --like ddp-gloo (docs/ddp.md) */
    char cap[32], first[32];
    cli_human_bytes((double)cfg->bucket_bytes, cap, sizeof cap);
    cli_human_bytes((double)cfg->first_bucket_bytes, first, sizeof first);
    printf("  like       PyTorch 1.13 DDP on gloo (--like ddp-gloo): gloo's "
           "ring, %s\n",
           cfg->hook != RS_HOOK_NONE
               ? "the hook's averaging (the reducer's 1/W multiply is off)"
               : "pre-mul (each gradient times 1/W in its dtype, then the "
                 "sum)");
    if (rs_model_fixed_buckets(r->model))
      printf("             %zu bucket%s as the model lists them, each laid "
             "out in its listed order\n",
             res->buckets, res->buckets == 1 ? "" : "s");
    else
      printf("             %zu bucket%s (cap %s, first %s), each laid out as "
             "DDP's rebuilt buckets (params last to first)\n",
             res->buckets, res->buckets == 1 ? "" : "s", cap, first);
  }
  /* (after --like ddp-gloo's lines, which say what the run is) */
  if (cfg->algo != RS_ALGO_AUTO && !cli_algo_info(cfg->algo).in_nccl)
    printf("  nccl       %s is not in NCCL (it runs ring and tree, and nvls, "
           "nvlstree: ringsim model --like nccl)\n",
           rs_algorithm_name(cfg->algo));
  print_hook_head(cfg, rs_model_dtype(r->model), W);
  if (cfg->mpi) /* (docs/mpi.md) */
    printf("  transport  mpi, %d process%s\n", rs_run_procs(r->run),
           rs_run_procs(r->run) == 1 ? "" : "es");
  cli_human_bytes(f->model_bytes, size, sizeof size);
  printf("  model      %zu param%s, %zu element%s, %s of %s per worker\n",
         rs_model_param_count(r->model),
         rs_model_param_count(r->model) == 1 ? "" : "s", f->elems,
         f->elems == 1 ? "" : "s", size,
         rs_dtype_name(rs_model_dtype(r->model)));
  printf("  grads      %s\n", cli_safe(r->source, name, sizeof name));
}

/* --channels C: the ring on C of NCCL's channels, and whose rings. */
static void print_channels(const rs_config_t *cfg, int W) {
  rs_nccl_system_t sys;
  char err[RS_ERRMSG_MAX];
  const rs_topo_t *t = &cfg->net.topo;
  const int nccl = t->enabled && (long long)t->nodes * t->gpus == W &&
                   rs_nccl_system_of(t, &sys, err) == RS_OK;
  /* (on channels: the ring, DESIGN.md's textbook ring, or the tree) */
  if (!cli_algo_info(cfg->algo).textbook_ring) {
    printf("  channels   %d of NCCL's: each bucket cut between them as NCCL "
           "cuts it, each one of the two trees on its part (the first half "
           "tree 0), %s\n",
           cfg->net.channels,
           nccl ? "its chain through each node from its NIC's GPU "
                  "(docs/algorithms.md, the channels' trees)"
                : "every channel's tree alike (they share every link)");
    return;
  }
  printf("  channels   %d of NCCL's: each bucket cut between them as NCCL "
         "cuts it, each a ring on its part (the chunks above are the "
         "bucket's; each channel's are its part's), %s\n",
         cfg->net.channels,
         nccl ? "on NCCL's rings (docs/algorithms.md, the channels' rings)"
              : "every one on the ring 0, 1, ..., W-1 (they share every "
                "link)");
}

static void print_schedule(const report_t *r, const rs_config_t *cfg,
                           const rs_result_t *res, const rs_run_figures_t *f) {
  const int W = f->workers;
  char chunk[64];
  if (!cli_algo_info(cfg->algo).textbook_ring) {
    if (res->buckets > 1)
      print_buckets(r);
    printf("  messages   <= %zu element%s each, %d slot%s per queue\n",
           res->seg_elems, res->seg_elems == 1 ? "" : "s", res->slots,
           res->slots == 1 ? "" : "s");
    if (cfg->algo == RS_ALGO_AUTO)
      printf("  steps      at most %d per bucket (the chosen algorithms')\n",
             res->steps);
    else
      printf("  steps      %d per bucket (%s)\n", res->steps,
             rs_algorithm_name(cfg->algo));
    print_auto(r);
  } else if (res->buckets == 1) {
    /* the smallest chunk and the largest (sizes differ by at most one) */
    range_text(f->elems / (size_t)W,
               f->elems / (size_t)W + (f->elems % (size_t)W != 0), "element",
               chunk, sizeof chunk);
    printf("  chunks     %d of %s, %zu segment%s each (<= %zu element%s), %d "
           "slot%s per queue\n",
           W, chunk, res->segs_per_chunk, res->segs_per_chunk == 1 ? "" : "s",
           res->seg_elems, res->seg_elems == 1 ? "" : "s", res->slots,
           res->slots == 1 ? "" : "s");
    printf("  steps      %d reduce-scatter + %d all-gather\n", W - 1, W - 1);
  } else {
    print_buckets(r);
    printf("  chunks     %d per bucket, %zu segment%s per chunk over the "
           "buckets (<= %zu element%s each), %d slot%s per queue\n",
           W, res->segs_per_chunk, res->segs_per_chunk == 1 ? "" : "s",
           res->seg_elems, res->seg_elems == 1 ? "" : "s", res->slots,
           res->slots == 1 ? "" : "s");
    printf("  steps      %zu buckets x (%d reduce-scatter + %d all-gather)\n",
           res->buckets, W - 1, W - 1);
  }
  if (cfg->slices)
    printf("  loop       NCCL's: all %d steps on one slice (a segment of each "
           "chunk), then the next; %zu slices\n",
           2 * (W - 1), res->segs_per_chunk);
  if (cfg->net.channels > 1)
    print_channels(cfg, W);
}

/* On a topology of several nodes: what each worker sent to other nodes,
 * and the NIC that carried the most (its GPUs' bytes out, or in). */
static void print_off_node(const report_t *r, const rs_topo_t *t, int W) {
  uint64_t lo = UINT64_MAX, hi = 0, most = 0;
  int busiest = 0, out = 1;
  const int nics = t->nodes * t->nics;
  for (int w = 0; w < W; w++) {
    const uint64_t b = rs_run_worker_stats(r->run, w)->bytes_sent_off_node;
    lo = b < lo ? b : lo;
    hi = b > hi ? b : hi;
  }
  uint64_t shared_ns = 0, sharing = 0;
  for (int k = 0; k < nics; k++)
    for (int side = 0; side < 2; side++) {
      /* NIC k: node k / K, its GPUs g with floor(g K / G) = k mod K
       * (net/topo.h); the time it was shared is its GPUs' longest (they
       * shared it at the same steps) */
      uint64_t sum = 0, ns = 0, n = 0;
      for (int g = 0; g < t->gpus; g++) {
        const int w = k / t->nics * t->gpus + g;
        if ((long long)g * t->nics / t->gpus != k % t->nics)
          continue;
        const rs_worker_stats_t *st = rs_run_worker_stats(r->run, w);
        sum += side ? st->bytes_received_off_node : st->bytes_sent_off_node;
        const uint64_t g_ns =
            side ? st->received_shared_ns : st->sent_shared_ns;
        ns = g_ns > ns ? g_ns : ns;
        n = st->most_sharing > n ? st->most_sharing : n;
      }
      if (sum > most) {
        most = sum;
        busiest = k;
        out = !side;
        shared_ns = ns;
        sharing = n;
      }
    }
  char range[64], size[32], shared[96] = "";
  range_text(lo, hi, "byte", range, sizeof range);
  cli_human_bytes((double)most, size, sizeof size);
  if (shared_ns)
    snprintf(shared, sizeof shared,
             ", shared (by up to %" PRIu64 " GPUs) for %.3f us", sharing,
             (double)shared_ns / 1e3);
  printf("  off node   %s per worker through the NICs; busiest NIC: node "
         "%d's NIC %d, %" PRIu64 " bytes %s (%s)%s\n",
         range, busiest / t->nics, busiest % t->nics, most, out ? "out" : "in",
         size, shared);
}

static void print_traffic(const report_t *r, const rs_config_t *cfg,
                          const rs_result_t *res, const rs_run_figures_t *f) {
  const int finished = res->checked; /* the all-reduce completed */
  char sent[64], a[32], name[CLI_SAFE_MAX];
  print_transfers(r, f);
  range_text(f->sent_min, f->sent_max, "byte", sent, sizeof sent);
  cli_human_bytes((double)f->sent_max, a, sizeof a);
  if (cli_algo_info(cfg->algo).textbook_ring)
    printf("  sent       %s per worker (%s); theory 2(W-1)/W x S = %.0f "
           "bytes\n",
           sent, a, f->sent_theory);
  else
    printf("  sent       %s per worker (%s)\n", sent, a);
  if (f->bytes != f->model_bytes) { /* a compressing hook */
    const double k = f->model_bytes / f->bytes;
    range_text((uint64_t)((double)f->sent_min * k),
               (uint64_t)((double)f->sent_max * k), "byte", sent, sizeof sent);
    printf("             %.2f of the %s all-reduce's %s (the same elements in "
           "%s)\n",
           f->bytes / f->model_bytes, rs_dtype_name(rs_model_dtype(r->model)),
           sent, rs_dtype_name(rs_model_dtype(r->model)));
  }
  if (cfg->net.topo.enabled && cfg->net.topo.nodes > 1)
    print_off_node(r, &cfg->net.topo, f->workers);
  /* With exact inputs the reference is the direct mean itself; otherwise
   * it is the wider-precision sum with a bound per element, slower. */
  if (finished)
    printf("  time       %.6f s wall   algbw %.3f GB/s   busbw %.3f GB/s   "
           "(%s on %d thread%s: %.6f s)\n",
           f->seconds, f->algbw, f->busbw,
           res->exact ? "direct mean and check" : "reference, bounds and check",
           res->check_threads, res->check_threads == 1 ? "" : "s",
           (double)(res->ref_ns + res->check_ns) / 1e9);
  else
    printf("  time       %.6f s wall until the run stopped (no algbw or "
           "busbw: it did not finish)\n",
           f->seconds);
  if (cfg->net.enabled && r->status == RS_OK)
    print_sim_line(cfg, res, f->seconds);
  if (r->trace && rs_run_trace_id(r->run))
    printf("  trace      %s, run %lld%s\n",
           cli_safe(r->trace, name, sizeof name),
           (long long)rs_run_trace_id(r->run),
           rs_run_trace_error(r->run) ? ": its rows were NOT written" : "");
}

static void print_check(const report_t *r, const rs_config_t *cfg,
                        const rs_result_t *res, const rs_run_figures_t *f) {
  const int W = f->workers;
  if (!res->checked || (r->status != RS_OK && r->status != RS_ECHECK)) {
    if (!res->checked)
      printf("  check      not checked: the run failed\n");
    printf("  status     FAILED: %s\n", rs_run_errmsg(r->run));
    return;
  }
  printf("  check      %s\n",
         res->identical ? (W == 1 ? "1 worker: the identity"
                                  : "all workers hold identical gradients")
                        : "workers DIFFER: not bitwise identical");
  if (!res->identical)
    print_mismatches(r, W);
  if (res->exact)
    printf("             exact inputs: %s\n",
           res->worst_ratio == 0 ? "every element equals the reference bit "
                                   "for bit"
                                 : "elements DIFFER from the reference");
  else
    printf("             max abs err %.3g against the %s reference%s, "
           "bound %.3g (worst err/bound %.3g)\n",
           res->max_abs_err,
           rs_model_dtype(r->model) == RS_DTYPE_F64 ? "long double" : "float64",
           cfg->hook == RS_HOOK_FP16 || cfg->hook == RS_HOOK_BF16
               ? " (the exact mean of the grads before the cast)"
               : "",
           res->bound, res->worst_ratio);
  if (cfg->order_report)
    print_order_report(r);
  print_hook_check(cfg, res, f);
  printf("  status     %s\n", r->status == RS_OK ? "ok" : "CHECK FAILED");
  if (r->opt->print_values || f->elems <= RS_REPORT_VALUES_UP_TO) {
    printf("result (every worker holds):\n");
    print_values(r->model, rs_run_buffer(r->run, 0));
  }
}

void cli_print_text(const report_t *r) {
  const rs_result_t *res = rs_run_result(r->run);
  const rs_config_t *cfg = rs_run_config(r->run);
  rs_run_figures_t f;
  rs_run_figures(r->run, r->model, &f);
  print_head(r, cfg, res, &f);
  print_schedule(r, cfg, res, &f);
  print_traffic(r, cfg, res, &f);
  print_check(r, cfg, res, &f);
}
