/* step_nccl.c - `ringsim step --like nccl`: each bucket's all-reduce as
 * NCCL would run it (docs/step.md, "As NCCL runs it").
 *
 * Per bucket, the (algorithm, protocol, channels) NCCL's tuner picks for
 * the bytes the bucket moves (rs_nccl_choose: its cost model's argmin,
 * forced as NCCL_ALGO, NCCL_PROTO and NCCL_MIN/MAX_NCHANNELS force it),
 * timed by ringsim's prediction (rs_nccl_predict_ns), and the runner-up,
 * forced alone so that it runs on the channels NCCL would give it: as
 * `ringsim model --like nccl --params` does per bucket. The step then
 * runs each bucket as one collective of that time (step.h's
 * allreduce_ns). Every pick is made before anything runs, so bad input
 * prints nothing on stdout.
 */
#include "step_nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- refusals ----------------------------------------------------------- */

/* Without --like nccl: what forces NCCL alone. */
static int check_without(const options_t *o) {
  if (o->given[OPT_PROTO])
    return cli_refuse(CLI_STEP,
                      "--proto forces NCCL's protocol, which only --like "
                      "nccl models: give --like nccl --topo SPEC");
  if (o->nccl.algo_foreign)
    return cli_refuse_nccl_spelling(o);
  return -1;
}

int step_nccl_check(const options_t *o) {
  if (!o->nccl.on)
    return check_without(o);
  if (!o->config.net.topo.enabled)
    return cli_refuse(CLI_STEP,
                      "--like nccl models NCCL on nodes of GPUs and their "
                      "NICs, as its topology detection sees them: give "
                      "--topo (dgx-h100,nodes=N, ...), not a flat --net");
  rs_nccl_system_t sys;
  char err[RS_ERRMSG_MAX] = "";
  if (rs_nccl_system_of(&o->config.net.topo, &sys, err) != RS_OK)
    return cli_refuse(CLI_STEP, "--like nccl: --topo %s: %s",
                      o->topo_spec ? o->topo_spec : "", err);
  if (o->config.hook == RS_HOOK_POWERSGD)
    return cli_refuse(CLI_STEP,
                      "--hook powersgd with --like nccl is not supported "
                      "yet (its three all-reduces a bucket as NCCL would "
                      "pick them): give --hook fp16, bf16 or none, or leave "
                      "--like nccl out");
  if (o->algo_all)
    return cli_refuse(CLI_STEP, "--algo all with --like nccl: NCCL's tuner "
                                "picks one per bucket; give --algo ring, "
                                "tree, nvls or nvlstree to force it, or "
                                "leave --algo out");
  if (o->given[OPT_ALGO] && o->nccl.algo < 0)
    return cli_refuse(CLI_STEP,
                      "--algo %s is not one of NCCL's algorithms (ring, "
                      "tree, nvls, nvlstree): --like nccl models what NCCL "
                      "runs",
                      o->nccl.algo_text);
  if (o->trace)
    return cli_refuse(CLI_STEP,
                      "--trace records the threads' runs, and the threaded "
                      "run has no NCCL algorithms yet: --like nccl's step "
                      "is the schedule alone (leave --trace out)");
  static const cli_opt_t not_nccl[] = {OPT_REDUCE_RATE, OPT_SEGMENT_BYTES};
  for (size_t i = 0; i < sizeof not_nccl / sizeof *not_nccl; i++)
    if (o->given[not_nccl[i]])
      return cli_refuse(CLI_STEP,
                        "--%s does not apply to --like nccl (NCCL's own "
                        "chunks, on the topology's links and NICs as they "
                        "are)",
                        cli_options[not_nccl[i]].name);
  if (o->config.net.straggler_count)
    return cli_refuse(CLI_STEP,
                      "--straggler worker=R,us=... delays a worker's "
                      "messages in ringsim's schedules, not in NCCL's "
                      "prediction: with --like nccl give "
                      "worker=R,compute=F (a slower compute)");
  return cli_nccl_check_force(o, &sys);
}

/* ---- the picks ---------------------------------------------------------- */

static int by_bytes(const void *a, const void *b) {
  const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* One all-reduce of bytes: 0, or EXIT_USAGE having said why. */
static int pick(const options_t *o, const step_nccl_t *n, uint64_t bytes,
                step_nccl_pick_t *p) {
  return cli_nccl_pick(o, &n->sys, &n->force, n->slots, bytes, p);
}

/* The bytes each bucket of cap moves, appended to *sizes (grown). */
static int add_sizes(const options_t *o, const rs_model_t *model, size_t cap,
                     size_t move_size, uint64_t **sizes, size_t *count) {
  rs_bucket_t *buckets;
  size_t n;
  if (rs_model_buckets(model, o->config.first_bucket_bytes, cap, &buckets, &n))
    return -1;
  uint64_t *grown = realloc(*sizes, (*count + n + 1) * sizeof *grown);
  if (!grown) {
    free(buckets);
    return -1;
  }
  *sizes = grown;
  for (size_t b = 0; b < n; b++)
    grown[(*count)++] = (uint64_t)buckets[b].elems * move_size;
  free(buckets);
  return 0;
}

int step_nccl_prepare(const options_t *o, const rs_model_t *model,
                      step_nccl_t *n) {
  memset(n, 0, sizeof *n);
  char err[RS_ERRMSG_MAX] = "";
  if (rs_nccl_system_of(&o->config.net.topo, &n->sys, err) != RS_OK)
    return cli_refuse(CLI_STEP, "--like nccl: --topo %s: %s",
                      o->topo_spec ? o->topo_spec : "", err);
  n->force = cli_nccl_force(o);
  n->slots = o->config.slots;
  /* every bucket of every row: step 1's one (cap 0), each cap's */
  const size_t move_size =
      rs_dtype_size(rs_hook_dtype(o->config.hook, rs_model_dtype(model)));
  uint64_t *sizes = NULL;
  size_t count = 0;
  int bad = add_sizes(o, model, 0, move_size, &sizes, &count);
  const int caps = o->step.cap_count ? o->step.cap_count : 1;
  for (int k = 0; k < caps && !bad; k++)
    bad = add_sizes(
        o, model, o->step.cap_count ? o->step.caps[k] : o->config.bucket_bytes,
        move_size, &sizes, &count);
  if (!bad) {
    qsort(sizes, count, sizeof *sizes, by_bytes);
    n->picks = calloc(count + 1, sizeof *n->picks);
    bad = !n->picks;
  }
  if (bad) {
    free(sizes);
    step_nccl_free(n);
    fprintf(stderr, "ringsim: step: out of memory\n");
    return EXIT_RUN;
  }
  int rc = 0;
  for (size_t i = 0; i < count && !rc; i++)
    if (n->count == 0 || sizes[i] != n->picks[n->count - 1].bytes)
      rc = pick(o, n, sizes[i], &n->picks[n->count++]);
  free(sizes);
  if (rc)
    step_nccl_free(n);
  return rc;
}

void step_nccl_free(step_nccl_t *n) {
  free(n->picks);
  n->picks = NULL;
  n->count = 0;
}

const step_nccl_pick_t *step_nccl_find(const step_nccl_t *n, uint64_t bytes) {
  size_t lo = 0, hi = n->count;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (n->picks[mid].bytes < bytes)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n->count && n->picks[lo].bytes == bytes ? &n->picks[lo] : NULL;
}

uint64_t step_nccl_ns(void *ctx, uint64_t bytes) {
  const step_nccl_pick_t *p = step_nccl_find(ctx, bytes);
  return p ? p->ns : UINT64_MAX;
}

/* ---- the report --------------------------------------------------------- */

void step_nccl_print_head(const options_t *o, const step_nccl_t *n) {
  const rs_nccl_system_t *sys = &n->sys;
  cli_nccl_print_system("  ", o, sys);
  printf("  nccl       each bucket's all-reduce is the algorithm, protocol "
         "and channels NCCL's tuner picks for the bytes it moves%s, for the "
         "time ringsim predicts (%d slots a connection); one stream runs "
         "them one after another, each once every worker has joined: a "
         "bucket starts at the latest of its ready times and the bucket "
         "before's end, and ends its time later on every worker\n",
         o->nccl.algo >= 0 || o->nccl.proto >= 0 || o->nccl.channels
             ? " (among what --algo, --proto and --channels leave it)"
             : "",
         n->slots);
}

void step_nccl_columns(const step_nccl_pick_t *p, char *buf, size_t size) {
  if (!p) {
    snprintf(buf, size, "  %-8s  %-6s %8s  %-16s %12s", "algo", "proto",
             "channels", "runner-up", "its time us");
    return;
  }
  char runner[40] = "-", runner_us[32] = "-";
  if (p->has_runner) {
    snprintf(runner, sizeof runner, "%s/%s", rs_nccl_algo_name(p->runner.algo),
             rs_proto_name(p->runner.proto));
    snprintf(runner_us, sizeof runner_us, "%llu.%03llu",
             (unsigned long long)(p->runner_ns / 1000),
             (unsigned long long)(p->runner_ns % 1000));
  }
  snprintf(buf, size, "  %-8s  %-6s %8d  %-16s %12s",
           rs_nccl_algo_name(p->pick.algo), rs_proto_name(p->pick.proto),
           p->pick.channels, runner, runner_us);
}

json_t *step_nccl_json(const options_t *o, const step_nccl_t *n) {
  const rs_nccl_system_t *sys = &n->sys;
  json_t *topology = json_pack(
      "{s:s, s:i, s:i, s:i, s:i, s:i, s:b, s:b, s:f, s:f, s:f}", "spec",
      o->topo_spec ? o->topo_spec : "", "nodes", sys->nodes, "gpus", sys->gpus,
      "nics", sys->nics, "ranks", sys->nodes * sys->gpus, "cc", sys->cc,
      "nvswitch", sys->nvswitch, "nvls", sys->nvls, "nvlink_gbs",
      sys->nvlink_gbs, "pci_gbs", sys->pci_gbs, "nic_gbs", sys->nic_gbs);
  json_t *forced = cli_nccl_forced_json(o);
  return json_pack("{s:o, s:i, s:o}", "topology", topology, "slots", n->slots,
                   "forced", forced);
}

json_t *step_nccl_pick_json(const step_nccl_pick_t *p) {
  if (!p)
    return json_null();
  json_t *o =
      json_pack("{s:I, s:s, s:s, s:i, s:I, s:f}", "bytes", (json_int_t)p->bytes,
                "algo", rs_nccl_algo_name(p->pick.algo), "proto",
                rs_proto_name(p->pick.proto), "channels", p->pick.channels,
                "time_ns", (json_int_t)p->ns, "nccl_time_us", p->pick.time_us);
  if (o)
    json_object_set_new(o, "runner_up",
                        p->has_runner
                            ? json_pack("{s:s, s:s, s:i, s:I, s:f}", "algo",
                                        rs_nccl_algo_name(p->runner.algo),
                                        "proto", rs_proto_name(p->runner.proto),
                                        "channels", p->runner.channels,
                                        "time_ns", (json_int_t)p->runner_ns,
                                        "nccl_time_us", p->pick.runner_time_us)
                            : json_null());
  return o;
}
