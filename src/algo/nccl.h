/* algo/nccl.h - NCCL as it runs on a topology: the machine as NCCL's
 * topology detection sees it, its algorithms and protocols, its tuner's
 * cost model and choice (nccl_tune.c), the channels' rings (nccl_rings.c),
 * and ringsim's own prediction of an all-reduce run that way
 * (nccl_predict.c).
 *
 * Two models live here and are kept apart on purpose:
 * - NCCL's tuner (src/graph/tuning.cc, ncclTopoTuneModel and
 *   ncclTopoGetAlgoTime; src/enqueue.cc, topoGetAlgoInfo), replayed from
 *   its constants: what NCCL *would pick*. Its times are NCCL's estimate,
 *   not a measurement, and they miss by 10-57% in places.
 * - ringsim's prediction: the channels' rings and trees on the topology's
 *   ports and NICs, each resource shared by the channels that cross it,
 *   segments pipelined through NCCL_STEPS slots (docs/algorithms.md,
 *   "Pipelined links"), the protocols' wire bytes and hop latencies: what
 *   the run *takes*. docs/validation.md holds it to published nccl-tests
 *   measurements.
 *
 * Every constant cites its source (NCCL v2.30.7-1 unless said;
 * docs/nccl-reference.md gives the values and their history). */
#ifndef RINGSIM_NCCL_H
#define RINGSIM_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "ringsim/ringsim.h"

/* NCCL's all-reduce algorithms ringsim models, in NCCL's own index order
 * (src/include/device.h: NCCL_ALGO_TREE 0, NCCL_ALGO_RING 1, ...,
 * NCCL_ALGO_NVLS 4, NCCL_ALGO_NVLS_TREE 5): the tuner's argmin keeps the
 * first of equal times in this order. CollNet and PAT are left out
 * (CollNet needs SHARP-capable switches; PAT runs one GPU per node). */
typedef enum rs_nccl_algo {
  RS_NCCL_TREE,
  RS_NCCL_RING,
  RS_NCCL_NVLS,
  RS_NCCL_NVLSTREE,
  RS_NCCL_ALGOS
} rs_nccl_algo_t;

/* NCCL's protocols, in its index order (device.h: NCCL_PROTO_LL 0,
 * NCCL_PROTO_LL128 1, NCCL_PROTO_SIMPLE 2). */
typedef enum rs_proto {
  RS_PROTO_LL,
  RS_PROTO_LL128,
  RS_PROTO_SIMPLE,
  RS_PROTOS
} rs_proto_t;


/* Names in NCCL's own spelling, as its logs and tuning tables print them
 * (src/init.cc ncclAlgoStr and ncclProtoStr, declared in
 * src/include/device.h): rs_nccl_algo_name returns "Tree", "Ring", "NVLS",
 * "NVLSTree"; rs_proto_name "LL", "LL128", "Simple"; "?" for no such
 * value. The _from_name functions take them back in any case, as
 * NCCL_ALGO and NCCL_PROTO do (src/graph/tuning.cc parseList compares
 * with strcasecmp: "ring", "nvlstree"); -1: not one. */
const char *rs_nccl_algo_name(rs_nccl_algo_t a);
const char *rs_proto_name(rs_proto_t p);
int rs_nccl_algo_from_name(const char *name);
int rs_proto_from_name(const char *name);

/* The bytes a protocol puts on the wire for n data bytes
 * (src/device/prims_ll.h, prims_ll128.h, prims_simple.h; device.h's line
 * layouts): LL, 16-byte lines of 8 data bytes, ceil(n/8) x 16; LL128,
 * 128-byte lines of 120 data bytes, ceil(n/120) x 128; Simple, n. */
uint64_t rs_proto_wire_bytes(rs_proto_t p, uint64_t n);

/* The machine as NCCL's topology detection sees it (src/graph/topo.cc,
 * topo.h): what the tuner and the prediction read. Made from a --topo
 * (rs_nccl_system_of). Bandwidths in NCCL's GB/s (10^9 bytes/s), latencies
 * in microseconds, as tuning.cc has them. */
typedef struct rs_nccl_system {
  int nodes, gpus, nics; /* N nodes of G GPUs, K NICs each */
  int cc;                /* compute capability x 10: 80 A100, 90 H100 */
  int nvswitch;          /* the GPUs of a node meet at an NVLink switch */
  int nvls;              /* the switch reduces (NVLink SHARP: cc >= 90) */
  double nvlink_gbs;     /* one GPU's NVLink bandwidth each way: links x
                            SMxx_NVLINK_BW (topo.h; H100 18 x 20.6) */
  double pci_gbs;        /* GPU <-> NIC path (PCIe Gen5 x16: 48) */
  double nic_gbs;        /* one NIC (400 Gb/s: 50) */
  double net_latency_us; /* the NIC's own latency (IB: 0 in NCCL's graph) */
} rs_nccl_system_t;

/* The system of topology t (its preset's facts: dgx-h100, dgx-a100;
 * pcie has no switch). RS_OK, or RS_EINVAL with errmsg where t says
 * too little for NCCL's model (no compute capability known). */
int rs_nccl_system_of(const rs_topo_t *t, rs_nccl_system_t *sys,
                      char *errmsg);

/* ---- NCCL's tuner (nccl_tune.c) ----------------------------------------- */

/* One (algorithm, protocol) of NCCL's cost table for all-reduce, as
 * ncclTopoTuneModel fills comm->latencies and comm->bandwidths. */
typedef struct rs_nccl_cost {
  int available;        /* 0: NCCL skips it here (time -1) */
  double latency_us;    /* lat */
  double busbw_gbs;     /* the model's busBw, before the algBw ratio */
  double algbw_gbs;     /* bandwidths[]: busBw x ratio */
  int search_channels;  /* the search graph's nChannels */
  double channel_gbs;   /* its per-channel bw (bwIntra or bwInter) */
} rs_nccl_cost_t;

/* The whole table for sys. */
void rs_nccl_tune(const rs_nccl_system_t *sys,
                  rs_nccl_cost_t cost[RS_NCCL_ALGOS][RS_PROTOS]);

/* ncclTopoGetAlgoTime for one all-reduce of bytes: lat + bytes / (1000
 * bw), with the tree correction and the ring plateau factor; -1 when not
 * available. */
double rs_nccl_time_us(const rs_nccl_system_t *sys,
                       const rs_nccl_cost_t cost[RS_NCCL_ALGOS][RS_PROTOS],
                       rs_nccl_algo_t a, rs_proto_t p, uint64_t bytes);

/* What the user forces, as NCCL's environment does: algos and protos are
 * masks of allowed ones (1u << RS_NCCL_RING; 0: all), NCCL_ALGO and
 * NCCL_PROTO; min_channels, max_channels as NCCL_MIN_NCHANNELS and
 * NCCL_MAX_NCHANNELS (0: NCCL's own). */
typedef struct rs_nccl_force {
  unsigned algos, protos;
  int min_channels, max_channels;
} rs_nccl_force_t;

/* The tuner's pick for one all-reduce of bytes (topoGetAlgoInfo): the
 * argmin over the allowed (algorithm, protocol), ties to the first in
 * index order; the execution channels it runs on (comm->nChannels, or
 * nvlsChannels for NVLS and NVLSTree, cut for small messages by the
 * thread thresholds); and the runner-up (the next best time of another
 * pair; runner_time_us -1: none). */
typedef struct rs_nccl_choice {
  rs_nccl_algo_t algo;
  rs_proto_t proto;
  int channels;
  double time_us; /* NCCL's estimate, not ringsim's prediction */
  rs_nccl_algo_t runner_algo;
  rs_proto_t runner_proto;
  double runner_time_us;
} rs_nccl_choice_t;

/* RS_OK, or RS_EINVAL with errmsg when force leaves nothing available
 * (say NVLS on a machine without a switch). */
int rs_nccl_choose(const rs_nccl_system_t *sys, const rs_nccl_force_t *force,
                   uint64_t bytes, rs_nccl_choice_t *choice, char *errmsg);

/* NCCL's execution channel counts for sys (ncclTopoPostset; nvls.cc's
 * nvlsChannels): for a ring or tree, and for NVLS/NVLSTree. */
int rs_nccl_channels(const rs_nccl_system_t *sys, rs_nccl_algo_t a);

/* ---- the channels' rings (nccl_rings.c) --------------------------------- */

/* Channel c's ring over the N x G ranks (rank = node G + local GPU), as
 * NCCL's graph search builds them on a machine with an NVLink switch and
 * a NIC for every GPU or fewer (src/graph/search.cc ncclTopoSearchRecNet,
 * ncclTopoSearchNextGpuSort, ncclTopoSearchCheckNet; connect.cc
 * ncclTopoPostset and connectRings): order[0..W-1], the ranks in ring
 * order starting at order[0]. */
void rs_nccl_ring_order(const rs_nccl_system_t *sys, int channel, int *order);

/* ---- the channels' trees (nccl_rings.c) --------------------------------- */

/* Which tree of NCCL's double binary tree channel c of `channels` runs:
 * the first half of the channels tree 0, the rest tree 1
 * (src/graph/connect.cc, connectTrees: channel c gets tree 0 and its copy
 * c + nChannels tree 1). */
int rs_nccl_tree_of(int channel, int channels);

/* The local GPU at the head of channel c's chain in every node: the
 * GPU its tree enters and leaves the node by, through that GPU's NIC
 * (the tree graph's search channel c mod K starts at NIC c mod K,
 * search.cc's ncclTopoSearchRecNet, entering at its localGpu, and the
 * TREE pattern leaves by the NIC it entered by: ncclTopoSearchCheckNet,
 * "Trees are symmetric"); 0 on one node or without an NVLink switch. The
 * chain then goes up by index (ncclTopoSearchNextGpuSort offers the TREE
 * pattern index+1 alone). */
int rs_nccl_tree_head(const rs_nccl_system_t *sys, int channel);

/* ---- ringsim's prediction (nccl_predict.c) ------------------------------ */

/* How long one all-reduce of bytes takes on sys run as NCCL runs it with
 * algorithm a, protocol p, on `channels` channels, slots segments in
 * flight per connection (NCCL_STEPS, 8): ringsim's model, in ns.
 * UINT64_MAX where a cannot run on sys. */
uint64_t rs_nccl_predict_ns(const rs_nccl_system_t *sys, rs_nccl_algo_t a,
                            rs_proto_t p, int channels, int slots,
                            uint64_t bytes);

#endif /* RINGSIM_NCCL_H */
