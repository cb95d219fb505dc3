/* topo.h - a topology's simulated time (ringsim.h's rs_topo_t, --topo).
 *
 * The model. With net.topo.enabled (net.enabled is then 1 too; net.link
 * is unused), the W workers are N nodes x G GPUs: worker r is on node
 * r / G, GPU r % G, and GPU g uses NIC floor(g K / G) of its node: NIC k
 * is next to GPUs k G / K ... (k + 1) G / K - 1, as NCCL's topology model
 * places them (algo/nccl_rings.c; DGX A100 with 4 NICs, a NIC to two
 * GPUs), so NCCL's rings leave each node through the NICs NCCL means.
 * - A transfer within a node has latency topo.intra.latency_ns and
 *   bandwidth topo.intra.bandwidth, through the sender's outgoing port and
 *   the receiver's incoming port, which serialize exactly as --net's link
 *   and port do (netmodel.h's link_free and in_free). So a one-node
 *   topology whose intra link equals --net's link gives, to the
 *   nanosecond, what --net gives, for every algorithm.
 * - A transfer between nodes has latency topo.nic.latency_ns and
 *   bandwidth min(intra.bandwidth, nic.bandwidth / n), where n is the
 *   larger of: how many distinct GPUs send to another node through the
 *   sender's NIC in the same step, and how many distinct GPUs receive from
 *   another node through the receiver's NIC in that step. Each GPU counts
 *   once per step, whatever its number of segments or peers, since its own
 *   port serializes its transfers; it counts where the schedule has it
 *   send, whatever the size of the region (an empty one too). On NCCL's
 *   channels the schedule is the bucket's busy channels' (an idle channel
 *   has no schedule: algo/channels.h's rs__rings_busy_shape).
 * "Step" is the algorithm's global step within one bucket (the --inject
 * step: rs__xfer_step's global_step in the threaded run, one per
 * rs__simrun_step in the schedule simulation). This is "each resource's
 * bandwidth divided equally among the transfers crossing it at the same
 * moment; a transfer goes at the pace of its most loaded resource", with
 * the ports serializing rather than sharing.
 *
 * The counts come from the algorithm's schedule (rs_algo_t's sends: the
 * destinations of each worker in each step), once per run and per
 * schedule simulation, into a load (rs__topo_load): per step, the GPUs
 * crossing each NIC side, the steps whose counts are the same stored once
 * (a ring's 2(W-1) steps are one).
 *
 * This file also holds the readers of times and rates that --net, --link
 * and --topo share (the clocks in netmodel.c use the topology, so the
 * readers sit below both).
 */
#ifndef RINGSIM_TOPO_H
#define RINGSIM_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "ringsim/ringsim.h"

/* The first len bytes of text as a time ("5us": ns, us, ms, s) in ns, or
 * a rate ("25GB/s", "400Gbps", "800MiB/s": at least 1 B/s) in bytes per
 * second, as --net reads them; 0, or -1 if they are not one. */
int rs__net_read_time(const char *text, size_t len, uint64_t *ns);
int rs__net_read_rate(const char *text, size_t len, uint64_t *bytes_per_s);

/* Worker r's node, and its NIC among the N K of the cluster (node n's NIC
 * k is n K + k). */
static inline int rs__topo_node(const rs_topo_t *t, int r) {
  return r / t->gpus;
}
static inline int rs__topo_nic(const rs_topo_t *t, int r) {
  return r / t->gpus * t->nics +
         (int)((long long)(r % t->gpus) * t->nics / t->gpus);
}

/* The workers a schedule is cut for: W, and the GPUs of each node, G
 * (worker r on node r / G, as --topo places them: net/topo.h). Without a
 * topology, or on one node, G = W: one node, the flat shape. An
 * algorithm whose schedule follows the nodes reads gpus; the others only
 * workers. */
/* The C channels' rings over W workers (made by algo/channels.h's
 * rs__rings_make): worker order[c W + p] sits at position p of channel
 * c's ring, and worker r at position pos[c W + r]. identity: every ring
 * is 0, 1, ..., W-1 (order and pos NULL). nccl: the orders are NCCL's
 * (rs_nccl_ring_order). The trees' (the tree on channels, algo/tree.h):
 * tree_head[c], the local GPU that leads channel c's chain in every
 * node (rs_nccl_tree_head; NULL: GPU 0 for every channel). And what
 * cuts a bucket between them (rs__rings_part): its elements' bytes and
 * the protocol. */
typedef struct rs_rings {
  int channels, workers;
  int identity, nccl;
  int *order, *pos;
  int *tree_head;
  size_t elem_size;
  rs_protocol_t proto;
} rs_rings_t;

typedef struct rs_shape {
  int workers;
  int gpus;
  /* NCCL's channels the ring runs (rs_netmodel_t's channels; 0 reads as
   * 1), and their ring orders (algo/channels.h), which whoever runs or
   * simulates the schedule makes; NULL: every channel's ring is the
   * identity. Only the ring and the tree read them. */
  int channels;
  const rs_rings_t *rings;
} rs_shape_t;

static inline rs_shape_t rs__shape_flat(int workers) {
  rs_shape_t shape = {workers, workers, 1, NULL};
  return shape;
}

/* The shape of W workers under net: its topology's nodes when it has
 * several, else flat; its channels (without their orders). */
static inline rs_shape_t rs__shape_of(const rs_netmodel_t *net, int workers) {
  rs_shape_t shape = rs__shape_flat(workers);
  if (net && net->topo.enabled && net->topo.gpus > 0 &&
      net->topo.gpus < workers && workers % net->topo.gpus == 0)
    shape.gpus = net->topo.gpus;
  if (net && net->channels > 1)
    shape.channels = net->channels;
  return shape;
}

/* The destinations worker rank sends to in global step `step` of an
 * algorithm over the shape's workers, into dst (room for max); returns how
 * many (rs_algo_t's sends). */
typedef int (*rs_topo_sends_t)(rs_shape_t shape, int step, int rank, int *dst,
                               int max);
/* The most destinations one worker has in one step (the tree's: two
 * children in each tree). */
#define RS_TOPO_MAX_SENDS 8

/* A schedule's load on a topology's NICs: per step, how many GPUs cross
 * each NIC side. NIC side: NIC i's send side is i, its receive side
 * N K + i. */
typedef struct rs_topo_load {
  rs_topo_t topo;
  int steps;
  int placed;        /* steps 0..placed-1 have their pattern */
  uint32_t *pattern; /* per step: its counts' index */
  uint32_t patterns; /* distinct counts */
  uint32_t *first;   /* per pattern p: its entries first[p]..first[p+1]-1 */
  uint32_t *side;    /* entries: a NIC side, ascending within a pattern */
  uint32_t *count;   /* and the GPUs that cross it */
  /* A pattern that crosses at least one side in 8 also has its counts
   * per side, every side's (2 N K), at dense + dense_at[p] (UINT32_MAX:
   * none): looked up at once, where the list is searched. */
  uint32_t *dense_at;
  uint32_t *dense;
  size_t dense_len, dense_cap;
  /* The scratch that places the steps still to place (NULL once all
   * are). */
  struct rs_topo_builder *builder;
} rs_topo_load_t;

/* The load of the steps 0..steps-1 of the schedule `sends` on t (W =
 * N G workers; with a NIC for every GPU, nics = gpus, none: every share
 * is 1), every step placed: a threaded run's, which its workers
 * then only read. RS_OK or RS_ENOMEM (l then holds nothing). */
int rs__topo_load(rs_topo_load_t *l, const rs_topo_t *t, int steps,
                  rs_topo_sends_t sends);
/* The same with no step placed yet: a schedule simulation places each
 * step as it comes to it (rs__topo_load_step), so one that stops early
 * (rs_simrun_t's bound) counts only the steps it ran. */
int rs__topo_load_lazy(rs_topo_load_t *l, const rs_topo_t *t, int steps,
                       rs_topo_sends_t sends);
/* The same two for a schedule whose sends read more of the shape than
 * its workers and GPUs (the ring's channels): shape is what sends is
 * asked with. */
int rs__topo_load_shape(rs_topo_load_t *l, const rs_topo_t *t,
                        rs_shape_t shape, int steps, rs_topo_sends_t sends);
int rs__topo_load_shape_lazy(rs_topo_load_t *l, const rs_topo_t *t,
                             rs_shape_t shape, int steps,
                             rs_topo_sends_t sends);
/* Place the steps up to `step` (in order; those placed stay). RS_OK or
 * RS_ENOMEM. */
int rs__topo_load_step(rs_topo_load_t *l, int step);
/* Steps step+1 .. step+count have step's counts, which the caller knows
 * from the schedule (the ring's sends do not depend on the step): placed
 * without counting. step must be the last placed. RS_OK or RS_ENOMEM. */
int rs__topo_load_repeat(rs_topo_load_t *l, int step, int count);
void rs__topo_unload(rs_topo_load_t *l);
/* Do steps first..last load every NIC side as they load its image
 * under perm (a permutation of the workers, each kept on its node: the
 * worker perm[r] stands where r stood)? Then a transfer src -> dst in
 * those steps shares its NIC as perm[src] -> perm[dst] does. 0 where perm
 * moves a NIC's GPUs to different NICs, a step is not placed, or memory
 * runs out: not known alike. */
int rs__topo_load_alike(const rs_topo_load_t *l, const int *perm, int first,
                        int last);
/* The n of a transfer src -> dst in step (the larger count of the
 * sender's NIC's send side and the receiver's NIC's receive side, at
 * least 1; 1 for a step not placed); 0 within a node. */
uint32_t rs__topo_sharing(const rs_topo_load_t *l, int src, int dst, int step);
/* The time on the wire of bytes sent between nodes by a GPU whose NIC
 * side is shared by n (rs__topo_sharing): at the pace min(intra bandwidth,
 * NIC bandwidth / n), that is the larger of bytes at the port's rate and
 * n x bytes at the NIC's, rounded up to a nanosecond (exact: the shared
 * rate is never rounded). */
uint64_t rs__topo_wire_ns(const rs_topo_t *t, uint32_t n, size_t bytes);

#endif /* RINGSIM_TOPO_H */
