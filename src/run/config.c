/* config.c - a run's config: its defaults, and what rs_run_create refuses
 * before it allocates anything (each refusal one line saying why).
 */
#include <string.h>

#include "algo/list.h"
#include "base/util.h"
#include "ringsim/internal/command.h"
#include "run/run.h"

void rs_config_init(rs_config_t *c) {
  memset(c, 0, sizeof *c);
  c->workers = 4;
  c->segment_bytes = RS_DEFAULT_SEGMENT_BYTES;
  c->slots = RS_DEFAULT_SLOTS;
  c->timeout_s = RS_DEFAULT_TIMEOUT_S;
  c->op = RS_OP_AVG;
  c->collective = RS_COLL_ALLREDUCE;
  c->iterations = 1;
  c->bucket_bytes = RS_DEFAULT_BUCKET_BYTES;
  c->first_bucket_bytes = RS_DEFAULT_FIRST_BUCKET_BYTES;
  c->ref_reps = 1;
}

int rs_algo_fits(const rs_netmodel_t *net, rs_algorithm_t a, char *errmsg) {
  char scratch[RS_ERRMSG_MAX];
  const rs_algo_t *algo = rs__algo_get(a);
  const rs_topo_t *t = &net->topo;
  errmsg = errmsg ? errmsg : scratch;
  if (!algo)
    return rs__err(errmsg, RS_EINVAL, "%s is not implemented yet",
                   rs_algorithm_name(a));
  if ((algo->caps & RS__CAP_TOPOLOGY) && !t->enabled)
    return rs__err(errmsg, RS_EINVAL,
                   "%s is hierarchical and needs nodes: give a "
                   "topology (--topo nodes=N,gpus=G)",
                   algo->name);
  if (!(algo->caps & RS__CAP_NVLS))
    return RS_OK;
  const int across = (algo->caps & RS__CAP_TOPOLOGY) != 0; /* (nvlstree) */
  if (!(t->enabled && t->nvswitch == RS_TOPO_SWITCH_NVLS &&
        (across ? t->nodes > 1 : t->nodes == 1)))
    return rs__err(errmsg, RS_EINVAL,
                   "%s needs %s of GPUs on an NVLink switch that reduces "
                   "(--topo dgx-h100%s, or switch=nvls); %s",
                   algo->name, across ? "nodes" : "one node",
                   across ? ",nodes=N" : "",
                   !t->enabled ? "give --topo"
                   : t->nvswitch != RS_TOPO_SWITCH_NVLS
                       ? "this topology's switch does not reduce"
                   : across ? "on one node NCCL runs NVLS (--algo nvls)"
                            : "across nodes NCCL runs NVLSTree (--algo "
                              "nvlstree)");
  if (net->proto != RS_PROTOCOL_NONE && net->proto != RS_PROTOCOL_SIMPLE)
    return rs__err(errmsg, RS_EINVAL,
                   "%s moves only Simple's bytes (NCCL has no LL or LL128 "
                   "for NVLS: tuning.cc)",
                   algo->name);
  return RS_OK;
}

/* Why algorithm a cannot run under c's options (errmsg says it), or RS_OK:
 * what --algo NAME refuses and --algo auto leaves out, as a's row says
 * what it needs and offers (algo.h's caps). */
static int refusal(const rs_config_t *c, rs_algorithm_t a, char *errmsg) {
  const rs_algo_t *algo = rs__algo_get(a);
  char why[RS_ERRMSG_MAX];
  if (rs_algo_fits(&c->net, a, why))
    return rs__err(errmsg, RS_EINVAL, "algo: %s", why);
  if (!(algo->caps & RS__CAP_SLICES) && c->slices)
    return rs__err(errmsg, RS_EINVAL,
                   "loop: slices is NCCL's loop order for the ring, not for "
                   "%s",
                   algo->name);
  if (!(algo->caps & RS__CAP_REDUCE_SCATTER) &&
      c->collective != RS_COLL_ALLREDUCE)
    return rs__err(errmsg, RS_EINVAL,
                   "collective: a reduce-scatter alone is the ring's, not "
                   "%s's",
                   algo->name);
  if (c->net.channels > 1 && !(algo->caps & RS__CAP_CHANNELS))
    return rs__err(errmsg, RS_EINVAL,
                   "channels: %d are NCCL's channels, each a ring or a "
                   "tree of its own: the ring and the tree run on them, %s "
                   "runs one schedule",
                   c->net.channels, algo->name);
  if (algo->run_switch && c->mpi)
    return rs__err(errmsg, RS_EINVAL,
                   "algo: %s's NVLink switches are threads of one process: "
                   "it does not run over MPI",
                   algo->name);
  if (c->direct && c->workers > 1 &&
      algo->direct_slots(rs__shape_of(&c->net, c->workers), 1, 0) == 0)
    return rs__err(errmsg, RS_EINVAL,
                   "direct: the copy-free transport is not safe for %s: it "
                   "reduces into regions its peers may still be reading",
                   algo->name);
  return RS_OK;
}

/* The algorithms --algo auto may choose under c: bit a for algorithm a. */
unsigned rs__run_eligible(const rs_config_t *c) {
  char scratch[RS_ERRMSG_MAX];
  unsigned mask = 0;
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    if (refusal(c, (rs_algorithm_t)a, scratch) == RS_OK)
      mask |= 1u << a;
  return mask;
}

/* Everything rs_run_create refuses in the config alone. */
int rs__run_check_config(const rs_config_t *c, char *errmsg) {
  if (c->workers < 1 || c->workers > RS_MAX_WORKERS)
    return rs__err(errmsg, RS_EINVAL, "workers: %d is not in 1..%d", c->workers,
                   RS_MAX_WORKERS);
  if (c->slots < 1 || c->slots > RS_MAX_SLOTS)
    return rs__err(errmsg, RS_EINVAL, "slots: %d is not in 1..%d", c->slots,
                   RS_MAX_SLOTS);
  if (c->net.channels < 0 || c->net.channels > RS_MAX_CHANNELS)
    return rs__err(errmsg, RS_EINVAL,
                   "channels: %d is not in 1..%d (NCCL's MAXCHANNELS)",
                   c->net.channels, RS_MAX_CHANNELS);
  if (c->net.channels > 1 && c->algo == RS_ALGO_AUTO)
    return rs__err(errmsg, RS_EINVAL,
                   "channels: %d are NCCL's channels, each a ring or a "
                   "tree of its own: give algo ring or tree, not auto (which "
                   "runs each algorithm on its own channels: the ring and "
                   "the tree on NCCL's count)",
                   c->net.channels);
  if (c->segment_bytes < RS_MIN_SEGMENT_BYTES ||
      c->segment_bytes > RS_MAX_SEGMENT_BYTES)
    return rs__err(errmsg, RS_EINVAL, "segment bytes: %zu is not in %d..%zu",
                   c->segment_bytes, RS_MIN_SEGMENT_BYTES,
                   RS_MAX_SEGMENT_BYTES);
  if (!(c->timeout_s > 0 && c->timeout_s <= 1e6))
    return rs__err(errmsg, RS_EINVAL, "timeout: %g s is not in (0, 1e6]",
                   c->timeout_s);
  if (c->op < RS_OP_SUM || c->op > RS_OP_PROD)
    return rs__err(errmsg, RS_EINVAL, "op: unknown op %d", (int)c->op);
  if (c->average < RS_AVERAGE_POST || c->average > RS_AVERAGE_PRE_MUL)
    return rs__err(errmsg, RS_EINVAL,
                   "average: %d is not post (0), pre (1) or pre-mul (2)",
                   c->average);
  if (c->hook < RS_HOOK_NONE || c->hook > RS_HOOK_POWERSGD)
    return rs__err(errmsg, RS_EINVAL,
                   "hook: %d is not none (0), allreduce (1), fp16 (2), bf16 "
                   "(3) or powersgd (4)",
                   (int)c->hook);
  if (c->hook == RS_HOOK_POWERSGD && c->powersgd_rank < 1)
    return rs__err(errmsg, RS_EINVAL,
                   "hook: powersgd's rank is %d; it needs a matrix "
                   "approximation rank of 1 or more (powersgd:rank=R)",
                   c->powersgd_rank);
  if (c->hook == RS_HOOK_POWERSGD &&
      (c->powersgd_start < 0 || (c->powersgd_feedback | c->powersgd_warm) >> 1))
    return rs__err(errmsg, RS_EINVAL,
                   "hook: powersgd's start is %d, feedback %d, warm %d: "
                   "start is 0 or more, feedback and warm 0 or 1",
                   c->powersgd_start, c->powersgd_feedback, c->powersgd_warm);
  /* PowerSGDState: DDP rebuilds its buckets after the first backward, so
   * state keyed by bucket index is kept from the third step on */
  if (c->hook == RS_HOOK_POWERSGD &&
      (c->powersgd_feedback || c->powersgd_warm) && c->powersgd_start < 2)
    return rs__err(errmsg, RS_EINVAL,
                   "hook: powersgd's %s needs start=2 or more (start is %d): "
                   "PyTorch's PowerSGDState refuses start_powerSGD_iter <= 1 "
                   "with error feedback or warm start",
                   c->powersgd_feedback ? "feedback=on" : "warm=on",
                   c->powersgd_start);
  if (c->hook != RS_HOOK_NONE && c->op != RS_OP_AVG)
    return rs__err(errmsg, RS_EINVAL,
                   "hook: %s averages (it divides each bucket by W, then "
                   "sums), so the op must be avg, not %s",
                   rs_hook_name(c->hook), rs_op_name(c->op));
  if (c->hook != RS_HOOK_NONE && c->collective != RS_COLL_ALLREDUCE)
    return rs__err(errmsg, RS_EINVAL,
                   "hook: %s is a DDP communication hook, which all-reduces; "
                   "not with a reduce-scatter alone",
                   rs_hook_name(c->hook));
  if (c->iterations < 1 || c->iterations > 1000000 || c->warmup < 0 ||
      c->warmup > 1000000)
    return rs__err(errmsg, RS_EINVAL,
                   "iterations: %d timed and %d warm-up; need 1.. and 0.. "
                   "(at most a million)",
                   c->iterations, c->warmup);
  int rc = rs_netmodel_check(&c->net, c->workers, errmsg);
  if (rc)
    return rc;
  if (c->algo == RS_ALGO_AUTO && c->fault_count > 0)
    return rs__err(errmsg, RS_EINVAL,
                   "inject: --algo auto chooses an algorithm per bucket, so "
                   "a step number names no one step; give --algo NAME");
  if (c->algo == RS_ALGO_AUTO && c->machine.enabled && !c->net.enabled &&
      (rc = rs_netmodel_check(&c->machine, c->workers, errmsg)))
    return rc;
  if (c->algo != RS_ALGO_AUTO && (rc = refusal(c, c->algo, errmsg)))
    return rc;
  /* (NULL for auto, which takes no --inject: refused above) */
  const rs_algo_t *algo = rs__algo_get(c->algo);
  if (c->ddp_layout && c->direct)
    return rs__err(errmsg, RS_EINVAL,
                   "direct: peers read a bucket in place, so it cannot be "
                   "laid out as DDP's (--like ddp-gloo) and back while they "
                   "do; use the copying transport");
  if (c->slices && c->net.enabled)
    return rs__err(errmsg, RS_EINVAL,
                   "loop: the network model simulates the step order; it "
                   "cannot time NCCL's slice order");
  if (c->ref_reps < 1 || c->ref_reps > 1000)
    return rs__err(errmsg, RS_EINVAL, "ref_reps: %d is not in 1..1000",
                   c->ref_reps);
  if (c->fault_count < 0 || c->fault_count > RS_MAX_FAULTS)
    return rs__err(errmsg, RS_EINVAL, "inject: at most %d faults",
                   RS_MAX_FAULTS);
  for (int i = 0; i < c->fault_count; i++) {
    const rs_fault_t *f = &c->faults[i];
    if (f->worker < 0 || f->worker >= c->workers)
      return rs__err(errmsg, RS_EINVAL,
                     "inject: worker %d does not exist (workers 0..%d)",
                     f->worker, c->workers - 1);
    if (c->workers == 1)
      return rs__err(errmsg, RS_EINVAL,
                     "inject: one worker has no ring steps to fault");
    const int steps =
        algo->steps(rs__shape_of(&c->net, c->workers), c->collective);
    if ((f->step < 0 || f->step > steps - 1) &&
        (algo->caps & RS__CAP_TEXTBOOK_RING))
      return rs__err(errmsg, RS_EINVAL,
                     "inject: step %d does not exist (steps 0..%d: "
                     "reduce-scatter 0..%d, all-gather %d..%d)",
                     f->step, 2 * (c->workers - 1) - 1, c->workers - 2,
                     c->workers - 1, 2 * (c->workers - 1) - 1);
    if (f->step < 0 || f->step > steps - 1)
      return rs__err(errmsg, RS_EINVAL,
                     "inject: step %d does not exist (%s at W=%d has steps "
                     "0..%d)",
                     f->step, algo->name, c->workers, steps - 1);
    if (f->kind == RS_FAULT_STALL && (f->ms < 0 || f->ms > 3600000))
      return rs__err(errmsg, RS_EINVAL,
                     "inject: stall of %d ms is not in 0..3600000", f->ms);
  }
  return RS_OK;
}
