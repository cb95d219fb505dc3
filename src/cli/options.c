/* options.c - a run's command line (and `ringsim model`'s, and each side
 * of `ringsim diff`'s): read through the option table (parse.c), then
 * checked option against option. Bad usage is refused here, before
 * anything runs, with one line and exit 2.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "../algo/nccl.h" /* --like nccl's algorithm names */
#include "option.h"

#define DEFAULT_TRACE "ringsim-trace.db"

/* --like ddp-gloo: PyTorch 1.13's DDP on the gloo backend, bit for bit
 * (docs/ddp.md): gloo's ring, the reducer's averaging, DDP's buckets (the
 * defaults: 25 MiB, the first 1 MiB), all set by the library
 * (rs_config_set's "like") when it was read. */
static int check_like(const options_t *o) {
  if (!o->given[OPT_LIKE] || o->mode == CLI_MODEL) /* (model: nccl's) */
    return -1;
  if (o->given[OPT_ALGO] || o->given[OPT_OP] || o->given[OPT_AVERAGE])
    return cli_refuse(o->mode, "--like ddp-gloo sets --algo gloo-ring, --op "
                               "avg and --average pre-mul; give none of them "
                               "with it");
  return -1;
}

/* ringsim model --like nccl (model.c): what it takes and what it
 * refuses, once read; the checks that need the machine (NVLS where the
 * switch does not reduce) are model.c's, before anything runs. */
static const cli_opt_t SWEEP[] = {OPT_MINBYTES, OPT_MAXBYTES, OPT_STEPFACTOR,
                                  OPT_STEPBYTES, OPT_DATATYPE, OPT_OP};
#define SWEEP_COUNT (sizeof SWEEP / sizeof *SWEEP)

/* --proto without --like nccl: the network model's protocol
 * (net/proto.h), which needs a model; auto is NCCL's tuner's. */
int cli_refuse_nccl_spelling(const options_t *o) {
  char lower[32];
  size_t i = 0;
  for (; o->nccl.algo_text[i] && i + 1 < sizeof lower; i++)
    lower[i] = (char)tolower((unsigned char)o->nccl.algo_text[i]);
  lower[i] = '\0';
  return cli_refuse(o->mode,
                    "--algo %s is NCCL_ALGO's spelling, which --like nccl "
                    "takes; ringsim's own schedule is --algo %s",
                    o->nccl.algo_text, lower);
}

static int check_proto(const options_t *o) {
  if (!o->given[OPT_PROTO] || o->nccl.on)
    return -1;
  if (o->nccl.proto < 0)
    return cli_refuse(o->mode, "--proto auto is NCCL's tuner's pick: give "
                               "--like nccl, or LL, LL128 or Simple");
  if (!o->config.net.enabled)
    return cli_refuse(o->mode,
                      "--proto %s: a protocol is how a network model moves "
                      "bytes: give --net or --topo",
                      rs_proto_name((rs_proto_t)o->nccl.proto));
  return -1;
}

static int check_nccl(const options_t *o) {
  if (o->mode != CLI_MODEL)
    return check_proto(o);
  if (!o->nccl.on) {
    for (size_t i = 0; i < SWEEP_COUNT; i++)
      if (o->given[SWEEP[i]])
        return cli_refuse(o->mode,
                          "--%s is nccl-tests' sweep's: give --like nccl "
                          "(without --params)",
                          cli_options[SWEEP[i]].name);
    const int rc = check_proto(o);
    if (rc >= 0)
      return rc;
    if (o->nccl.algo_foreign)
      return cli_refuse_nccl_spelling(o);
    return -1;
  }
  if (!o->config.net.topo.enabled)
    return cli_refuse(o->mode,
                      "--like nccl models NCCL on nodes of GPUs and their "
                      "NICs, as its topology detection sees them: give "
                      "--topo (dgx-h100,nodes=N, ...)%s",
                      o->config.net.enabled ? ", not a flat --net" : "");
  if (o->algo_all)
    return cli_refuse(o->mode, "--algo all with --like nccl: NCCL's tuner "
                               "picks one; give --algo ring, tree, nvls or "
                               "nvlstree to force it, or leave --algo out");
  if (o->given[OPT_ALGO] && o->nccl.algo < 0)
    return cli_refuse(o->mode,
                      "--algo %s is not one of NCCL's algorithms (ring, "
                      "tree, nvls, nvlstree): --like nccl models what NCCL "
                      "runs",
                      rs_algorithm_name(o->config.algo));
  if (o->rows.count > 1)
    return cli_refuse(o->mode, "--like nccl models one machine: give --topo "
                               "one count of nodes, not a list");
  static const cli_opt_t not_nccl[] = {OPT_LINK, OPT_STRAGGLER,
                                       OPT_REDUCE_RATE, OPT_SEGMENT_BYTES};
  for (size_t i = 0; i < sizeof not_nccl / sizeof *not_nccl; i++)
    if (o->given[not_nccl[i]])
      return cli_refuse(o->mode,
                        "--%s does not apply to --like nccl (NCCL's own "
                        "chunks, on the topology's links and NICs as they "
                        "are)",
                        cli_options[not_nccl[i]].name);
  if (o->params) {
    for (size_t i = 0; i < SWEEP_COUNT; i++)
      if (o->given[SWEEP[i]])
        return cli_refuse(o->mode,
                          "--%s is nccl-tests' sweep's: with --params the "
                          "model's buckets are the sizes (leave it out, or "
                          "--params)",
                          cli_options[SWEEP[i]].name);
    return -1;
  }
  if (o->given[OPT_BUCKET_MB])
    return cli_refuse(o->mode, "--bucket-mb cuts a model into buckets: "
                               "without --params each size is one buffer");
  if (o->bench.min_bytes > o->bench.max_bytes)
    return cli_refuse(o->mode,
                      "--minbytes %zu is larger than --maxbytes %zu: the "
                      "sweep would be empty",
                      o->bench.min_bytes, o->bench.max_bytes);
  return -1;
}

/* --hook: a DDP communication hook averages as it does (it divides each
 * bucket by W before the sum), so --op and --average have nothing to
 * say; the library refuses the rest (a model of f64, MPI). */
static int check_hook(const options_t *o) {
  if (o->config.hook == RS_HOOK_NONE)
    return -1;
  const char *name = rs_hook_name(o->config.hook);
  if (o->config.hook == RS_HOOK_POWERSGD) {
    static const struct {
      cli_opt_t opt;
      const char *what;
    } alone[] = {{OPT_EXPLAIN, "narrates one all-reduce"},
                 {OPT_ORDER_REPORT, "counts one all-reduce's orders"},
                 {OPT_PRINT, "prints one all-reduce's values"}};
    for (size_t i = 0; i < sizeof alone / sizeof *alone; i++)
      if (o->given[alone[i].opt])
        return cli_refuse(o->mode,
                          "--%s %s; --hook powersgd runs three a bucket "
                          "(its report says what each moved)",
                          cli_options[alone[i].opt].name, alone[i].what);
    if (o->config.op != RS_OP_AVG)
      return cli_refuse(o->mode,
                        "--hook powersgd averages (it divides the uncompressed "
                        "sums and Q's by W): --op %s does not apply (give --op "
                        "avg, the default)",
                        rs_op_name(o->config.op));
  }
  if (o->config.op != RS_OP_AVG)
    return cli_refuse(o->mode,
                      "--hook %s averages (it divides each bucket by W, then "
                      "sums): --op %s does not apply (give --op avg, the "
                      "default)",
                      name, rs_op_name(o->config.op));
  if (o->given[OPT_AVERAGE] && o->config.hook == RS_HOOK_POWERSGD)
    return cli_refuse(o->mode, "--hook powersgd divides as the hook does (the "
                               "uncompressed sums and Q's by W): --average "
                               "does not apply");
  if (o->given[OPT_AVERAGE])
    return cli_refuse(o->mode,
                      "--hook %s divides each bucket by W before the sum, as "
                      "the hook does: --average does not apply",
                      name);
  return -1;
}

/* What --explain cannot narrate, refused before anything runs. */
static int check_explain(const options_t *o) {
  if (!o->explain)
    return -1;
  if (o->config.mpi)
    return cli_refuse(o->mode, "--explain narrates a run in one process; it "
                               "does not apply to --transport mpi");
  if (o->json)
    return cli_refuse(o->mode, "--explain narrates in text; --json prints "
                               "one JSON object (give one of them)");
  if (o->config.algo == RS_ALGO_AUTO)
    return cli_refuse(o->mode, "--explain narrates one algorithm; --algo "
                               "auto chooses one per bucket (give --algo "
                               "NAME)");
  return -1;
}

/* --algo auto without a network measures this process's threads: over
 * MPI each process would measure its own, and they could choose apart.
 * (bench has no --net: its message leaves it out.) */
int cli_check_auto_mpi(const options_t *o) {
  if (!o->config.mpi || o->config.algo != RS_ALGO_AUTO || o->config.net.enabled)
    return -1;
  int net = (cli_options[OPT_NET].modes & CLI_IN(o->mode)) != 0;
  return cli_refuse(o->mode,
                    "--algo auto%s measures this process's threads, which "
                    "differ between processes; over MPI give --algo NAME%s",
                    net ? " without --net" : "", net ? " or --net" : "");
}

int cli_topo_workers(options_t *o) {
  const rs_topo_t *t = &o->config.net.topo;
  const int many = o->mode == CLI_MODEL || o->mode == CLI_STEP;
  const long most = many ? MODEL_MAX_WORKERS : RS_MAX_WORKERS;
  for (int i = 0; t->enabled && !o->workers_given && i < 1 + o->rows.count;
       i++) {
    const long nodes = i ? o->rows.nodes[i - 1] : t->nodes;
    if (nodes * t->gpus > most)
      return cli_refuse(o->mode,
                        "--topo: %ld nodes of %d GPUs are %ld workers, more "
                        "than the %ld %s takes",
                        nodes, t->gpus, nodes * t->gpus, most,
                        o->mode == CLI_MODEL  ? "ringsim model"
                        : o->mode == CLI_STEP ? "ringsim step"
                                              : "a run");
  }
  if (t->enabled && !o->workers_given)
    o->config.workers = t->nodes * t->gpus;
  return -1;
}

int cli_check_model_buckets(const options_t *o, const rs_model_t *model) {
  if (!rs_model_fixed_buckets(model) || !o->given[OPT_BUCKET_MB])
    return -1;
  return cli_refuse(o->mode,
                    "%s lists its buckets (a recorded job's): --bucket-mb "
                    "does not apply",
                    o->params);
}

/* The run's --iterations K: --hook powersgd's steps, its state carried;
 * any other run is one all-reduce. */
static int check_iterations(const options_t *o) {
  if (!o->given[OPT_ITERATIONS] || o->config.hook == RS_HOOK_POWERSGD)
    return -1;
  return cli_refuse(o->mode,
                    "--iterations %d: a run's steps are --hook powersgd's "
                    "(its state carried from one to the next); any other run "
                    "is one all-reduce (ringsim step times several)",
                    o->step.iterations);
}

/* --channels C without --like nccl: the ring or the tree on C of NCCL's
 * channels (rs_netmodel_t's channels), which they alone run. With --like
 * nccl it forces NCCL's count (nccl.channels) instead. */
int cli_check_channels(options_t *o) {
  if (!o->given[OPT_CHANNELS] || o->nccl.on)
    return -1;
  const int C = o->nccl.channels;
  if (o->algo_all || o->config.algo == RS_ALGO_AUTO ||
      !cli_algo_info(o->config.algo).channels)
    return cli_refuse(o->mode,
                      "--channels %d: NCCL's channels are rings or trees, "
                      "each on its part of a bucket; --algo %s %s (give "
                      "--algo ring or tree)",
                      C,
                      o->algo_all ? "all" : rs_algorithm_name(o->config.algo),
                      o->algo_all ? "runs each algorithm on its own channels "
                                    "(the ring and the tree on NCCL's count)"
                      : o->config.algo == RS_ALGO_AUTO
                          ? "runs each algorithm on its own channels (the "
                            "ring and the tree on NCCL's count)"
                          : "runs on no channels");
  o->config.net.channels = C;
  return -1;
}

int cli_check_run(options_t *o) {
  int rc;
  if ((rc = check_like(o)) >= 0 || (rc = check_nccl(o)) >= 0 ||
      (rc = cli_check_channels(o)) >= 0 ||
      (rc = check_hook(o)) >= 0 ||
      (rc = check_iterations(o)) >= 0)
    return rc;
  /* an algorithm with a segment size of its own (gloo's ring: gloo's
   * maximum) cuts segments of it, unless told */
  const size_t own = cli_algo_info(o->config.algo).segment_bytes;
  if (own && !o->given[OPT_SEGMENT_BYTES])
    o->config.segment_bytes = own;
  if ((rc = cli_check_auto_mpi(o)) >= 0 || (rc = check_explain(o)) >= 0)
    return rc;
  if ((rc = cli_topo_workers(o)) >= 0)
    return rc;
  if (o->given[OPT_AVERAGE] && o->config.op != RS_OP_AVG)
    return cli_refuse(o->mode, "--average applies to --op avg only");
  if (o->trace && o->no_trace)
    return cli_refuse(o->mode, "--trace and --no-trace contradict each other");
  if (!o->trace && !o->no_trace)
    o->trace = DEFAULT_TRACE;
  if (!o->params && !(o->mode == CLI_MODEL && o->nccl.on))
    return cli_refuse(o->mode, "--params MODEL.json is required%s",
                      o->mode == CLI_MODEL
                          ? " (or --like nccl: nccl-tests' sweep of buffers)"
                          : "");
  if (o->grads && (o->init_given || o->seed_given))
    return cli_refuse(o->mode, "--init and --seed generate grads; they "
                               "cannot be used with --grads");
  return -1;
}

int cli_parse_args(int argc, char **argv, options_t *o) {
  cli_mode_t mode = o->model_only ? CLI_MODEL : CLI_RUN;
  cli_options_init(mode, o);
  int rc = cli_walk(mode, argc, argv, o, NULL);
  return rc >= 0 ? rc : cli_check_run(o);
}
