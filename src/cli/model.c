/* model.c - `ringsim model`: the simulated time of the ring's schedule
 * alone, without threads or data, for rings far larger than the machine. */
#include <jansson.h>
#include <stdio.h>

#include "cli.h"
#include "ringsim/ringsim.h"

const char cli_model_usage_text[] =
    "usage: ringsim model --params MODEL.json --workers N --net SPEC "
    "[options]\n"
    "\n"
    "The simulated time of the ring all-reduce's schedule for the model's\n"
    "size under the alpha-beta network model, with no threads and no data,\n"
    "so W can reach " CLI_MODEL_MAX_WORKERS_TEXT
    ". It runs the same clock code as `ringsim --net`\n"
    "and agrees with it to the nanosecond. Prints the simulated time, algbw\n"
    "and busbw, and the cost formula's prediction\n"
    "  " RS_NETMODEL_FORMULA "\n"
    "(k segments per chunk of b bytes; alpha the latency, beta the bandwidth,\n"
    "gamma the reduce rate).\n"
    "\n"
    "  -p, --params FILE       model.json: the params' names, shapes, dtype\n"
    "  -w, --workers N         number of workers W, "
    "1.." CLI_MODEL_MAX_WORKERS_TEXT " (default 4)\n"
    "      --net SPEC          the network (required): "
    "latency=5us,bandwidth=25GB/s\n"
    "                          (ns/us/ms/s; B/s, KB/s, MB/s, GB/s, GiB/s, "
    "Gbps)\n"
    "      --reduce-rate RATE  charge reductions, e.g. 20GB/s\n"
    "      --link SPEC         one slower link (repeatable): "
    "2-3:bandwidth=1GB/s\n"
    "      --straggler SPEC    a slow worker (repeatable): worker=1,us=200\n"
    "      --segment-bytes N   largest message (default 256K)\n"
    "      --bucket-mb MB      DDP gradient buckets of MB MiB (default 25; 0:\n"
    "                          one bucket)\n"
    "      --json              print the result as one JSON object\n"
    "  -h, --help              this help\n"
    "\n"
    "exit status: 0 ok; 2 bad usage or bad input; 3 out of memory\n";

/* `ringsim model`: the schedule's simulated time alone, no threads or
 * data, for rings far larger than the machine. */
int cli_run_model(const options_t *opt, const rs_model_t *model) {
  char err[RS_ERRMSG_MAX];
  const rs_netmodel_t *net = &opt->config.net;
  const int W = opt->config.workers;
  if (!net->enabled)
    return cli_usage_error("model: %s",
                           "--net latency=...,bandwidth=... is required");
  if (rs_netmodel_check(net, W, err))
    return cli_usage_error("model: %s", err);
  size_t elems = rs_model_elems(model);
  rs_bucket_t *buckets;
  size_t bucket_count;
  if (rs_model_buckets(model, opt->config.first_bucket_bytes,
                       opt->config.bucket_bytes, &buckets, &bucket_count)) {
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  const size_t seg_bytes = opt->config.segment_bytes;
  const size_t elem_size = rs_dtype_size(rs_model_dtype(model));
  uint64_t sim =
      rs_netmodel_simulate(net, W, buckets, bucket_count, seg_bytes, elem_size);
  uint64_t predicted = 0;
  size_t segs = 0;
  for (size_t b = 0; b < bucket_count; b++) {
    size_t k = rs_segs_per_chunk(buckets[b].elems, W, seg_bytes, elem_size);
    predicted += rs_netmodel_predict(net, W, buckets[b].elems, k, elem_size);
    segs += k;
  }
  free(buckets);
  double bytes = (double)elems * (double)elem_size;
  double algbw = sim ? bytes / (double)sim : 0; /* bytes per ns = GB/s */
  double busbw = rs_busbw(algbw, W); /* algbw is finite: 0 for one worker */
  if (opt->json) {
    json_t *o = json_pack(
        "{s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}", "model",
        rs_model_name(model), "workers", W, "elems", (json_int_t)elems, "bytes",
        (json_int_t)(elems * elem_size), "buckets", (json_int_t)bucket_count,
        "segs_per_chunk", (json_int_t)segs, "sim_ns", (json_int_t)sim,
        "predicted_ns", (json_int_t)predicted, "algbw_gbs", algbw, "busbw_gbs",
        busbw);
    json_dumpf(o, stdout, JSON_INDENT(2));
    putchar('\n');
    json_decref(o);
    return 0;
  }
  char size[32], name[CLI_SAFE_MAX];
  cli_human_bytes(bytes, size, sizeof size);
  printf("ringsim model: ring all-reduce of \"%s\" on %d workers, %s per "
         "worker (the schedule alone: no threads, no data)\n",
         cli_safe(rs_model_name(model), name, sizeof name), W, size);
  cli_print_network(net);
  printf("\n  schedule   %zu bucket%s x %d steps, %zu segment%s per chunk "
         "over the buckets\n",
         bucket_count, bucket_count == 1 ? "" : "s", W > 1 ? 2 * (W - 1) : 0,
         segs, segs == 1 ? "" : "s");
  printf("  simulated  %.3f us   algbw %.3f GB/s   busbw %.3f GB/s\n",
         (double)sim / 1e3, algbw, busbw);
  printf("  predicted  %.3f us   %s%s\n", (double)predicted / 1e3,
         RS_NETMODEL_FORMULA,
         net->link_count || net->straggler_count
             ? " (for a uniform ring: the overrides are not in it)"
             : "");
  return 0;
}
