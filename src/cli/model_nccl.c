/* model_nccl.c - `ringsim model --like nccl` (NCCL's tuner's pick per
 * all-reduce, timed by ringsim's prediction: nccl-tests' sweep, or a
 * model's buckets), and the line under --algo all's table that says what
 * NCCL would run (nccl_pick.h). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algo/nccl.h" /* --like nccl */
#include "cli.h"
#include "model_nccl.h"
#include "nccl_pick.h"
#include "option.h" /* cli_datatype_name */
#include "ringsim/ringsim.h"

/* What NCCL would do with the model's buckets on net's topology, beside
 * --algo all's table of ringsim's own schedules: its
 * tuner's pick per bucket, timed by ringsim's prediction, one after
 * another (model --like nccl --params). Into *ns and the pick of the
 * largest bucket; 0 if net's topology is not one NCCL's model knows. */
int cli_nccl_would(const options_t *opt, const rs_netmodel_t *net,
                      const rs_model_t *model, uint64_t *ns,
                      cli_nccl_pick_t *largest) {
  rs_nccl_system_t sys;
  char err[RS_ERRMSG_MAX];
  if (!net->topo.enabled || rs_nccl_system_of(&net->topo, &sys, err) != RS_OK)
    return 0;
  rs_bucket_t *buckets;
  size_t count;
  if (rs_model_buckets(model, opt->config.first_bucket_bytes,
                       opt->config.bucket_bytes, &buckets, &count))
    return 0;
  const rs_nccl_force_t none = {0};
  const size_t elem = rs_dtype_size(rs_model_dtype(model));
  cli_nccl_pick_t row = {0};
  *ns = 0;
  int ok = count > 0;
  for (size_t k = 0; k < count && ok; k++) {
    const uint64_t bytes = (uint64_t)buckets[k].elems * elem;
    if (!(k > 0 && bytes == row.bytes)) { /* (DDP's buckets repeat) */
      rs_nccl_choice_t pick = {0};
      ok = rs_nccl_choose(&sys, &none, bytes, &pick, err) == RS_OK;
      row = (cli_nccl_pick_t){.bytes = bytes, .pick = pick};
      row.ns = ok ? rs_nccl_predict_ns(&sys, pick.algo, pick.proto,
                                       pick.channels, opt->config.slots, bytes)
                  : UINT64_MAX;
      ok = ok && row.ns != UINT64_MAX;
    }
    *ns = *ns > UINT64_MAX - row.ns ? UINT64_MAX : *ns + row.ns;
    if (k == 0 || bytes >= largest->bytes)
      *largest = row;
  }
  free(buckets);
  return ok;
}

/* The line under --algo all's table that says it. */
void cli_print_nccl_would(const options_t *opt, const rs_netmodel_t *net,
                             const rs_model_t *model, int workers) {
  uint64_t ns;
  cli_nccl_pick_t big = {0};
  if (!cli_nccl_would(opt, net, model, &ns, &big))
    return;
  const double bytes = (double)rs_model_elems(model) *
                       (double)rs_dtype_size(rs_model_dtype(model));
  printf("  nccl       NCCL would run it as %s/%s on %d channels (its largest "
         "bucket's pick): %.3f us, busbw %.3f GB/s, ringsim's prediction "
         "(the table's are ringsim's own schedules: ringsim model --like "
         "nccl)\n",
         rs_nccl_algo_name(big.pick.algo), rs_proto_name(big.pick.proto),
         big.pick.channels, (double)ns / 1e3,
         ns ? rs_busbw(bytes / (double)ns, workers) : 0.0);
}

/* ---- --like nccl: NCCL's tuner's pick, timed by ringsim ----------------
 *
 * Per all-reduce (one buffer of nccl-tests' sweep, or one bucket of
 * --params): the (algorithm, protocol, channels) NCCL's tuner picks on
 * the topology (rs_nccl_choose: its cost model's argmin, forced as
 * NCCL_ALGO, NCCL_PROTO and NCCL_MIN/MAX_NCHANNELS force it), the time
 * ringsim predicts for that pick (rs_nccl_predict_ns), NCCL's own estimate
 * beside it, and the runner-up: the tuner's next best pair, forced alone
 * so that it runs on the channels NCCL would give it. Every row is
 * computed before any is printed, so bad input prints nothing on stdout. */

/* the sweep's largest number of sizes (-i 1 from 8 B to 8 GiB would make
 * billions of rows) */
#define NCCL_MAX_SIZES 4096

/* One all-reduce of bytes (nccl_pick.h). */
typedef cli_nccl_pick_t nccl_row_t;

/* One all-reduce of bytes: 0, or the exit status (said). */
static int nccl_row(const options_t *opt, const rs_nccl_system_t *sys,
                    const rs_nccl_force_t *force, uint64_t bytes,
                    nccl_row_t *row) {
  return cli_nccl_pick(opt, sys, force, opt->config.slots, bytes, row);
}

static json_t *nccl_topology_json(const options_t *opt,
                                  const rs_nccl_system_t *sys) {
  return json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:b, s:b, s:f, s:f, s:f}",
                   "spec", opt->topo_spec ? opt->topo_spec : "", "nodes",
                   sys->nodes, "gpus", sys->gpus, "nics", sys->nics, "ranks",
                   sys->nodes * sys->gpus, "cc", sys->cc, "nvswitch",
                   sys->nvswitch, "nvls", sys->nvls, "nvlink_gbs",
                   sys->nvlink_gbs, "pci_gbs", sys->pci_gbs, "nic_gbs",
                   sys->nic_gbs);
}

/* A row's keys: its bytes' prediction and NCCL's pick. */
static json_t *nccl_row_json(const nccl_row_t *r, int ranks) {
  const double algbw = r->ns ? (double)r->bytes / (double)r->ns : 0;
  json_t *o = json_pack(
      "{s:I, s:f, s:f, s:f, s:s, s:s, s:i, s:f}", "bytes",
      (json_int_t)r->bytes, "time_us", (double)r->ns / 1e3, "algbw_gbs",
      algbw, "busbw_gbs", rs_busbw(algbw, ranks), "algo",
      rs_nccl_algo_name(r->pick.algo), "proto", rs_proto_name(r->pick.proto),
      "channels", r->pick.channels, "nccl_time_us", r->pick.time_us);
  json_object_set_new(
      o, "runner_up",
      r->has_runner
          ? json_pack("{s:s, s:s, s:i, s:f, s:f}", "algo",
                      rs_nccl_algo_name(r->runner.algo), "proto",
                      rs_proto_name(r->runner.proto), "channels",
                      r->runner.channels, "time_us",
                      (double)r->runner_ns / 1e3, "nccl_time_us",
                      r->pick.runner_time_us)
          : json_null());
  return o;
}

/* "# ..." lines: the machine as NCCL sees it, and what time means. */
static void nccl_says(const options_t *opt, const rs_nccl_system_t *sys,
                      const char *lead) {
  cli_nccl_print_system(lead, opt, sys);
  printf("%stime       ringsim's prediction (its channels' rings and trees "
         "on the topology's links and NICs, %d slots a connection) of the "
         "algorithm, protocol and channels NCCL's tuner picks (its cost "
         "model's argmin: src/graph/tuning.cc, src/enqueue.cc)%s; nccl: "
         "NCCL's own estimate of the same pick\n",
         lead, opt->config.slots,
         opt->nccl.algo >= 0 || opt->nccl.proto >= 0 || opt->nccl.channels
             ? ", among what --algo, --proto and --channels leave it"
             : "");
}

/* nccl-tests' all_reduce_perf, one buffer a size: the rows. */
static int nccl_sweep(const options_t *opt, const rs_nccl_system_t *sys,
                      const rs_nccl_force_t *force) {
  const size_t elem = rs_dtype_size(opt->bench.dtype);
  const int ranks = sys->nodes * sys->gpus;
  size_t count = 0;
  for (size_t b = opt->bench.min_bytes; b <= opt->bench.max_bytes;) {
    if (++count > NCCL_MAX_SIZES)
      return cli_usage_error("model: --like nccl: the sweep from %zu to %zu "
                             "bytes has more than %d sizes: give a larger "
                             "--stepbytes or --stepfactor",
                             opt->bench.min_bytes, opt->bench.max_bytes,
                             NCCL_MAX_SIZES);
    const size_t next = opt->bench.step_bytes ? b + opt->bench.step_bytes
                                              : b * (size_t)opt->bench.factor;
    if (next <= b)
      break;
    b = next;
  }
  nccl_row_t *rows = calloc(count, sizeof *rows);
  if (!rows) {
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  size_t b = opt->bench.min_bytes;
  for (size_t i = 0; i < count; i++) {
    /* (nccl-tests: count = size / the type's size, then that many) */
    const int rc = nccl_row(opt, sys, force, (uint64_t)(b / elem * elem),
                            &rows[i]);
    if (rc) {
      free(rows);
      return rc;
    }
    b = opt->bench.step_bytes ? b + opt->bench.step_bytes
                              : b * (size_t)opt->bench.factor;
  }
  const char *type = cli_datatype_name(opt->bench.dtype);
  const char *redop = rs_op_name(opt->config.op);
  double busbw_sum = 0;
  if (opt->json) {
    json_t *sizes = json_array();
    for (size_t i = 0; i < count; i++) {
      json_t *r = nccl_row_json(&rows[i], ranks);
      json_object_set_new(r, "count",
                          json_integer((json_int_t)(rows[i].bytes / elem)));
      busbw_sum += json_real_value(json_object_get(r, "busbw_gbs"));
      json_array_append_new(sizes, r);
    }
    json_t *forced = cli_nccl_forced_json(opt);
    json_t *o = json_pack(
        "{s:s, s:o, s:s, s:s, s:i, s:o, s:o, s:f}", "schema",
        "ringsim.model.sweep/1", "topology", nccl_topology_json(opt, sys),
        "type", type, "redop", redop, "slots", opt->config.slots, "forced",
        forced, "sizes", sizes, "avg_busbw_gbs",
        count ? busbw_sum / (double)count : 0.0);
    free(rows);
    return cli_dump_json(o);
  }
  printf("# ringsim model --like nccl: nccl-tests' all_reduce_perf as NCCL "
         "would run it, predicted: no GPU, no thread, no data\n");
  nccl_says(opt, sys, "# ");
  printf("# out-of-place and in-place: one prediction each row (a model has "
         "no buffers to place); #wrong N/A: a model checks nothing\n#\n");
  printf("# nThread 1 nGpus %d minBytes %zu maxBytes %zu step: %zu(%s) "
         "warmup iters: 0 iters: 0 agg iters: 1 validation: 0 graph: 0\n#\n",
         ranks, opt->bench.min_bytes, opt->bench.max_bytes,
         opt->bench.step_bytes ? opt->bench.step_bytes
                               : (size_t)opt->bench.factor,
         opt->bench.step_bytes ? "bytes" : "factor");
  char names[96], units[96];
  snprintf(names, sizeof names, "  %8s  %-8s  %-6s  %8s", "nccl", "algo",
           "proto", "channels");
  snprintf(units, sizeof units, "  %8s", "(us)");
  cli_nccl_tests_head(names, units);
  for (size_t i = 0; i < count; i++) {
    const nccl_row_t *r = &rows[i];
    const double us = (double)r->ns / 1e3;
    const double algbw = r->ns ? (double)r->bytes / (double)r->ns : 0;
    const double busbw = rs_busbw(algbw, ranks);
    busbw_sum += busbw;
    cli_nccl_tests_lead((size_t)r->bytes, (size_t)(r->bytes / elem), type,
                        redop);
    cli_nccl_tests_block(us, algbw, busbw, 0, 0);
    cli_nccl_tests_block(us, algbw, busbw, 0, 0);
    printf("  %8.2f  %-8s  %-6s  %8d\n", r->pick.time_us,
           rs_nccl_algo_name(r->pick.algo), rs_proto_name(r->pick.proto),
           r->pick.channels);
  }
  cli_nccl_tests_foot(0, count ? busbw_sum / (double)count : 0.0);
  free(rows);
  return 0;
}

/* --params: each bucket's pick, the buckets one after another. */
static int nccl_buckets(const options_t *opt, const rs_model_t *model,
                        const rs_nccl_system_t *sys,
                        const rs_nccl_force_t *force) {
  rs_bucket_t *buckets;
  size_t bucket_count;
  if (rs_model_buckets(model, opt->config.first_bucket_bytes,
                       opt->config.bucket_bytes, &buckets, &bucket_count)) {
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  const size_t elem = rs_dtype_size(rs_model_dtype(model));
  const int ranks = sys->nodes * sys->gpus;
  nccl_row_t *rows = calloc(bucket_count ? bucket_count : 1, sizeof *rows);
  if (!rows) {
    free(buckets);
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  uint64_t total_ns = 0;
  double nccl_us = 0;
  for (size_t k = 0; k < bucket_count; k++) {
    const uint64_t bytes = (uint64_t)buckets[k].elems * elem;
    int rc = 0;
    if (k > 0 && bytes == rows[k - 1].bytes) /* (DDP's buckets repeat) */
      rows[k] = rows[k - 1];
    else
      rc = nccl_row(opt, sys, force, bytes, &rows[k]);
    if (rc) {
      free(rows);
      free(buckets);
      return rc;
    }
    total_ns =
        total_ns > UINT64_MAX - rows[k].ns ? UINT64_MAX : total_ns + rows[k].ns;
    nccl_us += rows[k].pick.time_us;
  }
  free(buckets);
  const double bytes =
      (double)rs_model_elems(model) * (double)rs_dtype_size(rs_model_dtype(model));
  const double algbw = total_ns ? bytes / (double)total_ns : 0;
  if (opt->json) {
    json_t *list = json_array();
    for (size_t k = 0; k < bucket_count; k++) {
      json_t *r = nccl_row_json(&rows[k], ranks);
      json_object_set_new(r, "bucket", json_integer((json_int_t)k));
      json_array_append_new(list, r);
    }
    free(rows);
    return cli_dump_json(json_pack(
        "{s:s, s:s, s:o, s:i, s:I, s:o, s:f, s:f, s:f, s:f}", "schema",
        "ringsim.model.nccl/1", "model", rs_model_name(model), "topology",
        nccl_topology_json(opt, sys), "workers", ranks, "bytes",
        (json_int_t)bytes, "buckets", list, "time_us",
        (double)total_ns / 1e3, "algbw_gbs", algbw, "busbw_gbs",
        rs_busbw(algbw, ranks), "nccl_time_us", nccl_us));
  }
  char size[32], name[CLI_SAFE_MAX];
  cli_human_bytes(bytes, size, sizeof size);
  printf("ringsim model --like nccl: \"%s\" on %d GPUs, %s per GPU in %zu "
         "bucket%s, each all-reduced as NCCL picks (predicted: no threads, "
         "no data)\n",
         cli_safe(rs_model_name(model), name, sizeof name), ranks, size,
         bucket_count, bucket_count == 1 ? "" : "s");
  nccl_says(opt, sys, "  ");
  printf("\n  %6s %12s  %-8s  %-6s %8s %12s %12s  %-16s %12s\n", "bucket",
         "bytes", "algo", "proto", "channels", "time us", "nccl us",
         "runner-up", "its time us");
  for (size_t k = 0; k < bucket_count; k++) {
    const nccl_row_t *r = &rows[k];
    char runner[40] = "-", runner_us[32] = "-";
    if (r->has_runner) {
      snprintf(runner, sizeof runner, "%s/%s",
               rs_nccl_algo_name(r->runner.algo),
               rs_proto_name(r->runner.proto));
      snprintf(runner_us, sizeof runner_us, "%.3f",
               (double)r->runner_ns / 1e3);
    }
    printf("  %6zu %12llu  %-8s  %-6s %8d %12.3f %12.3f  %-16s %12s\n", k,
           (unsigned long long)r->bytes, rs_nccl_algo_name(r->pick.algo),
           rs_proto_name(r->pick.proto), r->pick.channels,
           (double)r->ns / 1e3, r->pick.time_us, runner, runner_us);
  }
  printf("\n  total      %.3f us (the buckets one after another)   algbw "
         "%.3f GB/s   busbw %.3f GB/s   nccl %.3f us\n",
         (double)total_ns / 1e3, algbw, rs_busbw(algbw, ranks), nccl_us);
  free(rows);
  return 0;
}

int cli_model_nccl(const options_t *opt, const rs_model_t *model) {
  int rc;
  rs_nccl_system_t sys;
  char err[RS_ERRMSG_MAX] = "";
  if (rs_nccl_system_of(&opt->config.net.topo, &sys, err) != RS_OK)
    return cli_usage_error("model: --like nccl%s%s: --topo %s: %s",
                           opt->nccl.algo >= 0 ? " --algo " : "",
                           opt->nccl.algo >= 0 ? opt->nccl.algo_text : "",
                           opt->topo_spec ? opt->topo_spec : "", err);
  if ((rc = cli_nccl_check_force(opt, &sys)) >= 0)
    return rc;
  const rs_nccl_force_t force = cli_nccl_force(opt);
  return model ? nccl_buckets(opt, model, &sys, &force)
               : nccl_sweep(opt, &sys, &force);
}
