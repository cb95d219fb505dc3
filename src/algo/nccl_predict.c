/* algo/nccl_predict.c - ringsim's own prediction of an all-reduce run as
 * NCCL runs it (algo/nccl.h, rs_nccl_predict_ns): its channels' rings and
 * trees, NVLink SHARP, on the machine's ports and NICs, with NCCL's
 * protocols and buffers. Not NCCL's tuner formula (nccl_tune.c replays
 * that): here time comes from resources and pipelines.
 *
 * DESIGN.
 * - Data. C channels, each over a contiguous share of ceil(S/C) bytes
 *   (the largest share sets the time).
 * - Resources, each way: a GPU's NVLink port (sys->nvlink_gbs; PCIe when
 *   the GPUs have no NVLink), a GPU's PCIe path to its NIC (pci_gbs), a
 *   NIC (nic_gbs; GPU g of K NICs uses NIC g K / G). Each is shared
 *   equally by the hops of every channel that cross it; a hop goes at its
 *   share; a channel goes at the pace of its slowest hop.
 * - Protocols. A segment puts rs_proto_wire_bytes of its data on the wire;
 *   hop and collective latencies are NCCL's (src/graph/tuning.cc,
 *   ncclTunerConstantsDefaults: baseLatencies, hwLatencies); segment
 *   sizes and slots are NCCL's buffers (below).
 * - Pipelines: nccl_pipe.h's recurrences, exactly (a loop over steps and
 *   segments; ring channels whose nodes are alike are computed over one
 *   node's ranks, channels alike once).
 * - Ring: 2(W-1) steps of ceil(S/(C W)) bytes per channel.
 * - Tree: each channel a chain inside every node (NCCL's tree graph:
 *   the NIC's GPU first, then index+1, ...) and a double binary tree across
 *   nodes (algo/tree.h, NCCL's trees.cc): the first half of the channels
 *   tree 0, the second tree 1; reduce up then broadcast down, pipelined,
 *   along the deepest path; an interior node's NIC carries its children's
 *   and its parent's traffic.
 * - NVLS (one node): each GPU sends its data once to the switch and
 *   receives the reduced result once; the switch reduces at NCCL's NVLS
 *   graph bandwidth x nvlsEfficiency per GPU (NCCL's calibration: NVIDIA
 *   does not document the switch's rate).
 * - NVLSTree (several nodes): NVLS inside each node, then for each NVLS
 *   head (one per NIC-local GPU) a double binary tree across nodes of its
 *   S/heads share through its NIC; reduce and broadcast pipelined; the
 *   slower of the two stages sets the pace.
 * - Caps NCCL's tuner puts on rates the links would allow, taken here as
 *   limits of the machine (NVIDIA's calibrations, cited below): LL's
 *   busbw at most llMaxBws (the GPU's threads bound it, not the links);
 *   NVLSTree's busbw at most heads x perChMaxNVLSTreeBws.
 */
#include <math.h>
#include <stdlib.h>

#include "algo/nccl.h"
#include "algo/nccl_pipe.h"
#include "algo/tree.h"
#include "net/proto.h"

/* ---- NCCL's constants (v2.30.7-1) -------------------------------------- */

/* tuning.cc's baseLatencies and hwLatencies (us): net/proto.h's
 * rs__nccl_base_us and rs__nccl_hw_us, the one copy. Link types
 * NCCL_HW_NVLINK, _PCI, _NET. */
enum { HW_NVLINK = RS_HW_NVLINK, HW_PCI = RS_HW_PCI, HW_NET = RS_HW_NET };

/* The tuner's bandwidth caps that ringsim's model takes as limits of the
 * hardware (src/graph/tuning.cc, ncclTunerConstantsDefaults; rows Volta,
 * Ampere, Hopper, Blackwell; columns 1 node, 2 nodes, 3 or more, NCCL's
 * index2). Both are NVIDIA's calibrations, not figures ringsim derives:
 * - llMaxBws (GB/s of busbw): what LL reaches at most, whatever the links
 *   carry (each 8-byte store of 4 data bytes and a flag is the GPU's
 *   threads' work, polled by the receiver's: prims_ll.h). One node is
 *   indexed by the GPU, several by the host's CPU (ncclTopoTuneModel:
 *   "for multi-node, we look at CPU type"): ringsim assumes Intel, row 0,
 *   as nccl_tune.c does. NCCL caps Ring/LL and Tree/LL with it.
 * - perChMaxNVLSTreeBws (GB/s per NVLS graph channel, one per head):
 *   NVLSTree's per-head rate across nodes (v2.28 on). */
static const double ll_max_bws[4][3] = {{39.0, 39.0, 20.4},
                                        {87.7, 22.5, 19.0},
                                        {141.0, 45.0, 35.0},
                                        {282.0, 90.0, 70.0}};
static const double per_ch_max_nvlstree_bws[4][3] = {{26.5, 18.5, 10.0},
                                                     {24.0, 23.6, 17.8},
                                                     {0.0, 57.7, 45.5},
                                                     {0.0, 96.0, 80.0}};

/* Data bytes in one NCCL step (stepSize = buffSize / NCCL_STEPS,
 * src/init.cc's DEFAULT_*_BUFFSIZE; src/enqueue.cc calcCollChunking):
 * LL, 512 KiB / 8 of 16-byte lines, half of them data: 32 KiB; LL128,
 * 4,915,200 / 8 = 614,400 B of 128-byte lines, 15/16 data: 576,000 B;
 * Simple, 4 MiB / 8 = 512 KiB. */
static const uint64_t step_bytes[RS_PROTOS] = {32768, 576000, 524288};

/* Ring Simple moves slices of ALLREDUCE_SLICESTEPS = NCCL_STEPS/4 = 2
 * steps (src/include/collectives.h; src/device/all_reduce.h runs the ring
 * with ProtoSimple<CHUNKSTEPS/SLICESTEPS, SLICESTEPS>): 1 MiB, two slots
 * each. Everything else here moves one step at a time (ProtoSimple<1,1>,
 * LL, LL128). */
enum { RING_SIMPLE_SLICE_STEPS = 2 };

/* NVLS: NCCL_NVLS_CHUNKSIZE's default, 128 KiB (src/transport/nvls.cc);
 * NVLSTree's NCCL_NVLSTREE_MAX_CHUNKSIZE default, 64 KiB from 4 nodes on
 * (nvls.cc, ncclNvlsTuning). */
enum { NVLS_CHUNK = 131072, NVLSTREE_MAX_CHUNK_4N = 65536 };

/* src/graph/search.cc: the speeds the search tries (GB/s per channel),
 * one node (intra) and several (inter), SM90 and SM100. */
static const double sm90_intra[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
static const double sm90_inter[] = {48, 45, 42, 40, 30,  24,  22,   20,  17.5,
                                    15, 12, 6,  3,  2.4, 1.2, 0.24, 0.12};
static const double sm100_intra[] = {90, 80, 70, 60, 50, 45,
                                     40, 30, 24, 20, 19, 18};
static const double sm100_inter[] = {96, 86, 80,  48,  45.1, 42,  40,
                                     30, 24, 22,  20,  17.5, 15,  12,
                                     6,  3,  2.4, 1.2, 0.24, 0.12};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- the pipelines (nccl_pipe.h) ---------------------------------------- */

static double max2(double x, double y) { return x > y ? x : y; }

double rs__nccl_ring_pipe_ns(const rs__nccl_ring_pipe_t *p) {
  const int P = p->ranks, m = p->segs, slots = p->slots;
  if (p->steps <= 0 || m <= 0 || P <= 0)
    return 0;
  /* arrivals of the previous and this step, per hop and segment; per hop
   * the last `slots` arrivals (segment q's at q mod slots) and the time
   * its port frees */
  double *prev = calloc((size_t)P * m, sizeof *prev);
  double *cur = calloc((size_t)P * m, sizeof *cur);
  double *slot = calloc((size_t)P * slots, sizeof *slot);
  double *port = calloc((size_t)P, sizeof *port);
  double end = -1;
  if (!prev || !cur || !slot || !port)
    goto done;
  for (int s = 0; s < p->steps; s++) {
    for (int k = 0; k < m; k++) {
      const double w = k == m - 1 ? p->last_ns : p->seg_ns;
      const long q = (long)s * m + k;
      for (int r = 0; r < P; r++) {
        double t = port[r];
        if (s > 0) /* forwarding what came in from rank r-1 */
          t = max2(t, prev[(size_t)((r - 1 + P) % P) * m + k]);
        double *held = &slot[(size_t)r * slots + q % slots];
        if (q >= slots) /* segment q - slots' slot */
          t = max2(t, *held);
        port[r] = t + w;
        *held = cur[(size_t)r * m + k] = t + w + p->hop_ns[r];
      }
    }
    double *swap = prev;
    prev = cur;
    cur = swap;
  }
  end = 0;
  for (int r = 0; r < P; r++) /* a hop's arrivals are in order */
    end = max2(end, prev[(size_t)r * m + m - 1]);
done:
  free(prev);
  free(cur);
  free(slot);
  free(port);
  return end;
}

double rs__nccl_chain_pipe_ns(const rs__nccl_chain_pipe_t *p) {
  const int hops_n = p->hops, m = p->segs, slots = p->slots;
  if (hops_n <= 0 || m <= 0)
    return 0;
  double *slot = calloc((size_t)hops_n * slots, sizeof *slot);
  double *port = calloc((size_t)hops_n, sizeof *port);
  double end = -1;
  if (!slot || !port)
    goto done;
  for (int k = 0; k < m; k++) {
    const double scale = k == m - 1 ? p->last_scale : 1.0;
    double t_in = 0; /* segment k is at hop 0's sender from the start */
    for (int h = 0; h < hops_n; h++) {
      const double w = p->seg_ns[h] * scale;
      double t = max2(t_in, port[h]);
      double *held = &slot[(size_t)h * slots + k % slots];
      if (k >= slots)
        t = max2(t, *held);
      port[h] = t + w;
      *held = t_in = t + w + p->hop_ns[h];
    }
    end = t_in;
  }
done:
  free(slot);
  free(port);
  return end;
}

/* ---- the machine -------------------------------------------------------- */

/* A prediction's inputs, checked and derived once. */
typedef struct nccl_machine {
  const rs_nccl_system_t *sys;
  int N, G, K, W;
  double port_gbs; /* a GPU's intra-node port, each way */
  int intra_hw;    /* HW_NVLINK or HW_PCI */
} nccl_machine_t;

/* 0, or -1 where sys is no machine this model can run on. */
static int machine_of(const rs_nccl_system_t *sys, nccl_machine_t *mc) {
  if (!sys || sys->nodes < 1 || sys->gpus < 1)
    return -1;
  mc->sys = sys;
  mc->N = sys->nodes;
  mc->G = sys->gpus;
  mc->K = sys->nics;
  mc->W = sys->nodes * sys->gpus;
  mc->intra_hw = sys->nvlink_gbs > 0 ? HW_NVLINK : HW_PCI;
  mc->port_gbs = sys->nvlink_gbs > 0 ? sys->nvlink_gbs : sys->pci_gbs;
  if (mc->G > 1 && !(mc->port_gbs > 0))
    return -1;
  if (mc->N > 1 && (mc->K < 1 || !(sys->pci_gbs > 0) || !(sys->nic_gbs > 0)))
    return -1;
  return 0;
}

/* tuning.cc's compCapIndex and index2 for the caps above. */
static int cc_row(const nccl_machine_t *mc) {
  const int cc = mc->sys->cc;
  return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}
static int nodes_col(const nccl_machine_t *mc) {
  return mc->N <= 2 ? mc->N - 1 : 2;
}

/* llMaxBws for this machine: the GPU's row on one node, the (Intel)
 * host's, row 0, on several. */
static double ll_max_gbs(const nccl_machine_t *mc) {
  return ll_max_bws[mc->N == 1 ? cc_row(mc) : 0][nodes_col(mc)];
}

/* The NIC GPU g uses (NIC j's GPU, its localGpu, the first GPU that uses
 * it: src/graph/topo.cc ncclTopoGetLocalGpu, is nccl_rings.c's). */
static int nic_of(const nccl_machine_t *mc, int g) {
  return (int)((long)g * mc->K / mc->G);
}

/* A NET hop's latency (ns) for algorithm a, protocol p: hwLatencies' NET
 * row plus the NIC's own latency, twice for Simple (ncclTopoTuneModel:
 * "flush extra latency"); with one GPU per node the Tree row ("latencies
 * are fully exposed"). */
static double net_hop_ns(const nccl_machine_t *mc, rs_nccl_algo_t a,
                         rs_proto_t p) {
  const rs_nccl_algo_t lat_row = mc->G == 1 ? RS_NCCL_TREE : a;
  double us = rs__nccl_hw_us(HW_NET, lat_row, p) + mc->sys->net_latency_us;
  if (p == RS_PROTO_SIMPLE)
    us += mc->sys->net_latency_us;
  return 1000.0 * us;
}

static double intra_hop_ns(const nccl_machine_t *mc, rs_nccl_algo_t a,
                           rs_proto_t p) {
  return 1000.0 * rs__nccl_hw_us(mc->intra_hw, a, p);
}

/* How many hops cross each resource, each way. */
typedef struct nic_load {
  int *port_out, *port_in; /* [W]: GPU ports */
  int *pci_out, *pci_in;   /* [W]: GPU <-> NIC paths */
  int *nic_out, *nic_in;   /* [N K] */
  int *all;
} load_t;

static int load_init(const nccl_machine_t *mc, load_t *ld) {
  const size_t W = (size_t)mc->W, NK = (size_t)mc->N * (mc->K > 0 ? mc->K : 1);
  ld->all = calloc(4 * W + 2 * NK, sizeof *ld->all);
  if (!ld->all)
    return -1;
  ld->port_out = ld->all;
  ld->port_in = ld->port_out + W;
  ld->pci_out = ld->port_in + W;
  ld->pci_in = ld->pci_out + W;
  ld->nic_out = ld->pci_in + W;
  ld->nic_in = ld->nic_out + NK;
  return 0;
}

/* Rank r's NIC, as an index of nic_out/nic_in. */
static int nic_slot(const nccl_machine_t *mc, int r) {
  return (r / mc->G) * mc->K + nic_of(mc, r % mc->G);
}

/* Count (add = 1) one hop src -> dst, or give its pace (add = 0): the
 * ns per wire byte at the share of its most loaded resource. */
static double hop(const nccl_machine_t *mc, load_t *ld, int src, int dst,
                  int add) {
  if (src / mc->G == dst / mc->G) {
    ld->port_out[src] += add;
    ld->port_in[dst] += add;
    return (double)(ld->port_out[src] > ld->port_in[dst] ? ld->port_out[src]
                                                         : ld->port_in[dst]) /
           mc->port_gbs;
  }
  const int ns = nic_slot(mc, src), nd = nic_slot(mc, dst);
  ld->pci_out[src] += add;
  ld->pci_in[dst] += add;
  ld->nic_out[ns] += add;
  ld->nic_in[nd] += add;
  const int pci =
      ld->pci_out[src] > ld->pci_in[dst] ? ld->pci_out[src] : ld->pci_in[dst];
  const int nic =
      ld->nic_out[ns] > ld->nic_in[nd] ? ld->nic_out[ns] : ld->nic_in[nd];
  return max2(pci / mc->sys->pci_gbs, nic / mc->sys->nic_gbs);
}

/* Segments of data bytes into segs of seg bytes, and the last one's. */
static void segment(uint64_t data, uint64_t seg, int *segs, uint64_t *last) {
  if (data == 0)
    data = 1;
  const uint64_t m = (data + seg - 1) / seg;
  *segs = (int)m;
  *last = data - (m - 1) * seg;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

/* ---- ring --------------------------------------------------------------- */

/* The ring's segment for a step of `step` bytes per channel. LL and
 * LL128: one NCCL step. Simple: a chunk of ALLREDUCE_CHUNKSTEPS = 4 steps
 * (2 MiB) moves in SlicePerChunk = 2 slices of half of it, none below
 * 1/32 of a full slice (src/device/prims_simple.h, genericOp: sliceSize =
 * max(divUp(nelem, 16 SlicePerChunk) 16, sliceSize / 32)); a step of
 * 2 MiB or more is whole chunks of two 1 MiB slices. */
static uint64_t ring_segment(rs_proto_t p, uint64_t step) {
  if (p != RS_PROTO_SIMPLE)
    return step_bytes[p];
  const uint64_t slice = step_bytes[p] * RING_SIMPLE_SLICE_STEPS;
  if (step >= 2 * slice)
    return slice;
  const uint64_t half = (step + 1) / 2;
  return half > slice / 32 ? half : slice / 32;
}

static double ring_ns(const nccl_machine_t *mc, rs_proto_t p, int C, int slots,
                      uint64_t bytes) {
  const int W = mc->W;
  if (W == 1)
    return 0;
  load_t ld = {0};
  int *order = malloc((size_t)C * W * sizeof *order);
  double *pace = malloc((size_t)C * sizeof *pace);
  double *hop_ns = malloc((size_t)W * sizeof *hop_ns);
  double end = -1;
  if (!order || !pace || !hop_ns || load_init(mc, &ld))
    goto done;
  for (int c = 0; c < C; c++) {
    int *o = order + (size_t)c * W;
    rs_nccl_ring_order(mc->sys, c, o);
    for (int i = 0; i < W; i++)
      hop(mc, &ld, o[i], o[(i + 1) % W], 1);
  }
  /* the slowest channel finishes last (every channel's ring crosses the
   * nodes the same way: G-1 hops inside, one out) */
  int slow = 0;
  for (int c = 0; c < C; c++) {
    const int *o = order + (size_t)c * W;
    pace[c] = 0;
    for (int i = 0; i < W; i++)
      pace[c] = max2(pace[c], hop(mc, &ld, o[i], o[(i + 1) % W], 0));
    if (pace[c] > pace[slow])
      slow = c;
  }
  /* LL: the C channels together carry at most llMaxBws of busbw, about
   * C times a channel's data rate for a ring: a channel's data at most
   * llMaxBws / C, its wire bytes (twice the data) at most twice that */
  if (p == RS_PROTO_LL)
    pace[slow] = max2(pace[slow], (double)C / (2 * ll_max_gbs(mc)));
  const int *o = order + (size_t)slow * W;
  for (int i = 0; i < W; i++)
    hop_ns[i] = o[i] / mc->G == o[(i + 1) % W] / mc->G
                    ? intra_hop_ns(mc, RS_NCCL_RING, p)
                    : net_hop_ns(mc, RS_NCCL_RING, p);
  /* nodes alike: the hops repeat every G ranks (every hop alike: 1) */
  int period = W;
  for (int P = 1; P < W; P++) {
    if (W % P)
      continue;
    int same = 1;
    for (int i = P; i < W && same; i++)
      same = hop_ns[i] == hop_ns[i - P];
    if (same) {
      period = P;
      break;
    }
  }
  const uint64_t step = ceil_div(ceil_div(bytes, (uint64_t)C), (uint64_t)W);
  const int seg_steps = p == RS_PROTO_SIMPLE ? RING_SIMPLE_SLICE_STEPS : 1;
  const uint64_t seg = ring_segment(p, step);
  int segs;
  uint64_t last;
  segment(step, seg, &segs, &last);
  const rs__nccl_ring_pipe_t pipe = {
      .ranks = period,
      .steps = 2 * (W - 1),
      .segs = segs,
      .slots = slots / seg_steps > 0 ? slots / seg_steps : 1,
      .seg_ns = (double)rs_proto_wire_bytes(p, seg) * pace[slow],
      .last_ns = (double)rs_proto_wire_bytes(p, last) * pace[slow],
      .hop_ns = hop_ns,
  };
  end = rs__nccl_ring_pipe_ns(&pipe);
done:
  free(ld.all);
  free(order);
  free(pace);
  free(hop_ns);
  return end;
}

/* ---- tree --------------------------------------------------------------- */

/* Channel c's tree: the first half of the channels tree 0, the rest tree
 * 1 (connect.cc: channel c and c + nChannels get the two trees). */
static int tree_of(int c, int C) { return rs_nccl_tree_of(c, C); }

/* Channel c's chain inside a node starts at its NIC's GPU and goes up by
 * index (the tree graph's pattern TREE on H100: ncclTopoSearchNextGpuSort
 * offers only index+1); on one node, or without a switch, 0 1 ... G-1
 * (nccl_rings.c: the threaded tree on channels runs the same). */
static int chain_head(const nccl_machine_t *mc, int c) {
  return rs_nccl_tree_head(mc->sys, c);
}

/* Count (add = 1) or pace (add = 0) every hop of channel c: its chain up
 * and down in every node, its node's NIC to the parent and children. */
static double tree_channel(const nccl_machine_t *mc, load_t *ld, int c, int C,
                           int add) {
  const int G = mc->G, N = mc->N, t = tree_of(c, C), h = chain_head(mc, c);
  double pace = 0;
  for (int v = 0; v < N; v++) {
    for (int i = 1; i < G; i++) {
      const int lo = v * G + (h + i - 1) % G, hi = v * G + (h + i) % G;
      pace = max2(pace, hop(mc, ld, hi, lo, add)); /* reduce, up */
      pace = max2(pace, hop(mc, ld, lo, hi, add)); /* broadcast, down */
    }
    /* between nodes, head to head: each node counts its children's
     * edges, down to the child and up from it */
    int kids[2];
    const int nk = rs__tree_children(N, t, v, kids);
    for (int i = 0; i < nk; i++) {
      pace = max2(pace, hop(mc, ld, v * G + h, kids[i] * G + h, add));
      pace = max2(pace, hop(mc, ld, kids[i] * G + h, v * G + h, add));
    }
  }
  return pace;
}

/* NCCL's chunk for Tree LL128 (enqueue.cc, calcCollChunking): halved
 * while a channel would get too few steps for the tree's depth. */
static uint64_t tree_ll128_chunk(const nccl_machine_t *mc, int C,
                                 uint64_t bytes) {
  int log2n = 0;
  while ((2 << log2n) <= mc->N)
    log2n++;
  const double ppn = (double)mc->G;
  const double nsteps = 1 + log2n + 0.1 * ppn;
  uint64_t chunk = step_bytes[RS_PROTO_LL128];
  while ((double)(bytes / ((uint64_t)C * chunk)) < nsteps * 64 / ppn &&
         chunk > 131072)
    chunk /= 2;
  while ((double)(bytes / ((uint64_t)C * chunk)) < nsteps * 16 / ppn &&
         chunk > 32768)
    chunk /= 2;
  return chunk;
}

static double tree_ns(const nccl_machine_t *mc, rs_proto_t p, int C, int slots,
                      uint64_t bytes) {
  const int G = mc->G, N = mc->N;
  if (mc->W == 1)
    return 0;
  load_t ld;
  double end = -1;
  double *seg_ns = NULL, *hop_ns = NULL;
  if (load_init(mc, &ld))
    return -1;
  for (int c = 0; c < C; c++)
    tree_channel(mc, &ld, c, C, 1);
  double pace[2] = {0, 0};
  for (int c = 0; c < C; c++) {
    const int t = tree_of(c, C);
    pace[t] = max2(pace[t], tree_channel(mc, &ld, c, C, 0));
  }
  /* LL: busbw at most llMaxBws; a tree's busbw is about 2 C times a
   * channel's data rate (each channel's S/C goes up and comes down
   * pipelined, and busbw counts 2(W-1)/W of S), so a channel's data at
   * most llMaxBws / 2C, its wire bytes at most llMaxBws / C. The bound is
   * on the channel's throughput, as NCCL charges it (S / bw, once), not
   * on every hop: a stage of its own ahead of the chain (cap_ns a wire
   * byte, no latency), which a segment crosses once. */
  const int capped = p == RS_PROTO_LL;
  const double cap_ns = capped ? (double)C / ll_max_gbs(mc) : 0;
  const uint64_t share = ceil_div(bytes, (uint64_t)C);
  const uint64_t seg =
      p == RS_PROTO_LL128 ? tree_ll128_chunk(mc, C, bytes) : step_bytes[p];
  int segs;
  uint64_t last;
  segment(share, seg, &segs, &last);
  const int max_hops = 2 * (G - 1 + N) + capped;
  seg_ns = malloc((size_t)max_hops * sizeof *seg_ns);
  hop_ns = malloc((size_t)max_hops * sizeof *hop_ns);
  if (!seg_ns || !hop_ns)
    goto done;
  end = 0;
  for (int t = 0; t < 2 && t < C; t++) {
    /* the deepest node's chain up, the tree up and down, its chain down */
    int depth = 0;
    for (int v = 0; v < N; v++) {
      const int d = rs__tree_depth(N, t, v);
      depth = d > depth ? d : depth;
    }
    const int hops_n = 2 * (G - 1 + depth);
    const double seg_wire = (double)rs_proto_wire_bytes(p, seg);
    if (capped) {
      seg_ns[0] = seg_wire * cap_ns;
      hop_ns[0] = 0;
    }
    for (int i = 0; i < hops_n; i++) {
      const int net = i >= G - 1 && i < G - 1 + 2 * depth;
      hop_ns[capped + i] = net ? net_hop_ns(mc, RS_NCCL_TREE, p)
                               : intra_hop_ns(mc, RS_NCCL_TREE, p);
      seg_ns[capped + i] = seg_wire * pace[t];
    }
    const rs__nccl_chain_pipe_t pipe = {
        .hops = capped + hops_n,
        .segs = segs,
        .slots = slots,
        .last_scale = (double)rs_proto_wire_bytes(p, last) /
                      (double)rs_proto_wire_bytes(p, seg),
        .seg_ns = seg_ns,
        .hop_ns = hop_ns,
    };
    const double t_ns = rs__nccl_chain_pipe_ns(&pipe);
    if (t_ns < 0) {
      end = -1;
      break;
    }
    end = max2(end, t_ns);
  }
done:
  free(ld.all);
  free(seg_ns);
  free(hop_ns);
  return end;
}

/* ---- NVLS and NVLSTree -------------------------------------------------- */

/* The switch's reduction rate per GPU (GB/s of data): NCCL's NVLS graph
 * bandwidth, nChannels x bwIntra, times nvlsEfficiency (tuning.cc; 0.85
 * on Hopper, 0.74 on Blackwell). NVIDIA does not document the switch's
 * rate: this is NCCL's own calibration. The graph has one channel per
 * head (ncclTopoCompute: maxChannels = GPUs on one node; one per
 * NIC-local GPU on several, ncclTopoSearchRecNet), and its bwIntra is the
 * first search speed that fits a GPU's NVLink when every channel takes it
 * from each GPU and twice from its head (ncclTopoSearchTryNvls):
 * (heads + 1) x speed <= nvlink. DGX H100: 9 x 40 <= 370.8, so
 * 8 x 40 x 0.85 = 272 GB/s (docs/nccl-reference.md 4.3). */
static double nvls_switch_gbs(const nccl_machine_t *mc, int heads) {
  const rs_nccl_system_t *sys = mc->sys;
  const double eff = sys->cc >= 100 ? 0.74 : sys->cc >= 90 ? 0.85 : 0;
  const int multi = mc->N > 1, sm100 = sys->cc >= 100;
  const double *speeds = sm100 ? (multi ? sm100_inter : sm100_intra)
                               : (multi ? sm90_inter : sm90_intra);
  const int n = sm100 ? (multi ? COUNT(sm100_inter) : COUNT(sm100_intra))
                      : (multi ? COUNT(sm90_inter) : COUNT(sm90_intra));
  const double max_bw =
      multi ? (sys->pci_gbs < sys->nic_gbs ? sys->pci_gbs : sys->nic_gbs)
            : sys->nvlink_gbs;
  for (int i = 0; i < n; i++)
    if (speeds[i] <= max_bw && (heads + 1) * speeds[i] <= sys->nvlink_gbs)
      return heads * speeds[i] * eff;
  return 0;
}

/* NCCL's NVLS chunk (enqueue.cc, calcCollChunking): 128 KiB, smaller when
 * the channels x heads concurrent operations would get few of them. */
static uint64_t nvls_chunk(uint64_t bytes, int C, int heads) {
  const uint64_t ops = (uint64_t)C * heads;
  uint64_t chunk = NVLS_CHUNK;
  if (bytes < 64 * ops * chunk && chunk > 65536)
    chunk = 65536;
  if (bytes < 8 * ops * chunk && chunk > 32768)
    chunk = 32768;
  if (bytes < 2 * ops * chunk && chunk > 16384)
    chunk = 16384;
  return chunk;
}

static uint64_t nvlstree_chunk(const nccl_machine_t *mc, uint64_t bytes, int C,
                               int heads) {
  const uint64_t ops = (uint64_t)C * heads;
  uint64_t chunk = mc->N >= 4 ? NVLSTREE_MAX_CHUNK_4N : NVLS_CHUNK;
  if (bytes < 32 * ops * chunk && chunk > 262144)
    chunk = 262144;
  if (bytes < 16 * ops * chunk && chunk > 131072)
    chunk = 131072;
  if (bytes < 4 * ops * chunk && chunk > 65536)
    chunk = 65536;
  if (bytes < 1 * ops * chunk && chunk > 32768)
    chunk = 32768;
  return chunk;
}

/* The stages of a pipeline, hop after hop (hops of them): total_ns[i],
 * the whole stage's time for all S bytes at its rate; lat_ns[i], its
 * hop's latency; seg_ns, room for hops segment times. */
typedef struct stages {
  int hops;
  const double *total_ns, *lat_ns;
  double *seg_ns;
} stages_t;

/* The stages as a chain for one channel, each stage's total time spread
 * over the channel's segments of chunk bytes. */
static double stages_ns(int C, int slots, uint64_t bytes, uint64_t chunk,
                        const stages_t *st) {
  const int hops_n = st->hops;
  const double *total_ns = st->total_ns, *lat_ns = st->lat_ns;
  double *seg_ns = st->seg_ns;
  const uint64_t share = ceil_div(bytes, (uint64_t)C);
  int segs;
  uint64_t last;
  segment(share, chunk, &segs, &last);
  for (int i = 0; i < hops_n; i++) /* a channel's share of the stage's rate */
    seg_ns[i] = total_ns[i] * (double)chunk * C / (double)bytes;
  const rs__nccl_chain_pipe_t pipe = {
      .hops = hops_n,
      .segs = segs,
      .slots = slots,
      .last_scale = (double)last / (double)chunk,
      .seg_ns = seg_ns,
      .hop_ns = lat_ns,
  };
  return rs__nccl_chain_pipe_ns(&pipe);
}

static double nvls_ns(const nccl_machine_t *mc, int C, int slots,
                      uint64_t bytes) {
  const int heads = mc->G;
  const double sw = nvls_switch_gbs(mc, heads);
  if (!(sw > 0))
    return -2;
  /* up: each GPU's data through its port and the switch's reduction;
   * down: the reduced result into each GPU's port */
  const double up_gbs = sw < mc->port_gbs ? sw : mc->port_gbs;
  const double total[2] = {bytes / up_gbs, bytes / mc->port_gbs};
  const double lat[2] = {intra_hop_ns(mc, RS_NCCL_NVLS, RS_PROTO_SIMPLE), 0};
  double seg[2];
  return stages_ns(C, slots, bytes, nvls_chunk(bytes, C, heads),
                   &(stages_t){2, total, lat, seg});
}

static double nvlstree_ns(const nccl_machine_t *mc, int C, int slots,
                          uint64_t bytes) {
  const int N = mc->N;
  const int heads = mc->K < mc->G ? mc->K : mc->G; /* NIC-local GPUs */
  const double sw = nvls_switch_gbs(mc, heads);
  if (!(sw > 0) || heads < 1)
    return -2;
  const double nvls_gbs = sw < mc->port_gbs ? sw : mc->port_gbs;
  const double nic_gbs =
      mc->sys->pci_gbs < mc->sys->nic_gbs ? mc->sys->pci_gbs : mc->sys->nic_gbs;
  /* the busiest NIC: per tree (half of the head's share) a stream to the
   * parent and one to each child; on 2 nodes a plain exchange, from 3 on
   * an interior node of one tree (3) that is a leaf of the other (1) */
  int busiest = 0, depth = 0;
  for (int v = 0; v < N; v++) {
    int streams = 0, kids[2];
    for (int t = 0; t < 2; t++) {
      streams += rs__tree_children(N, t, v, kids);
      streams += rs__tree_parent(N, t, v) >= 0;
      const int d = rs__tree_depth(N, t, v);
      depth = d > depth ? d : depth;
    }
    busiest = streams > busiest ? streams : busiest;
  }
  const double inter_ns = bytes / (double)heads * busiest / 2 / nic_gbs;
  const double nvls_ns_total = bytes / nvls_gbs;
  /* NCCL's per-head rate across nodes, perChMaxNVLSTreeBws: busbw at most
   * heads x that, so S takes at least S 2(W-1)/W over it */
  const double cap_gbs =
      heads * per_ch_max_nvlstree_bws[cc_row(mc)][nodes_col(mc)];
  const double cap_ns =
      cap_gbs > 0 ? bytes * 2.0 * (mc->W - 1) / mc->W / cap_gbs : 0;
  /* the slowest of the stages and the cap sets the pace of every hop */
  const double pace = max2(max2(inter_ns, nvls_ns_total), cap_ns);
  const int hops_n = 2 + 2 * depth;
  double *total = malloc((size_t)3 * hops_n * sizeof *total);
  if (!total)
    return -1;
  double *lat = total + hops_n, *seg = lat + hops_n;
  for (int i = 0; i < hops_n; i++) {
    total[i] = pace;
    lat[i] = net_hop_ns(mc, RS_NCCL_NVLSTREE, RS_PROTO_SIMPLE);
  }
  lat[0] = intra_hop_ns(mc, RS_NCCL_NVLSTREE, RS_PROTO_SIMPLE);
  lat[hops_n - 1] = 0;
  const double end =
      stages_ns(C, slots, bytes, nvlstree_chunk(mc, bytes, C, heads),
                &(stages_t){hops_n, total, lat, seg});
  free(total);
  return end;
}

/* ---- the prediction ----------------------------------------------------- */

uint64_t rs_nccl_predict_ns(const rs_nccl_system_t *sys, rs_nccl_algo_t a,
                            rs_proto_t p, int channels, int slots,
                            uint64_t bytes) {
  nccl_machine_t mc;
  if (machine_of(sys, &mc) || channels < 1 || slots < 1 || (int)a < 0 ||
      a >= RS_NCCL_ALGOS || (int)p < 0 || p >= RS_PROTOS)
    return UINT64_MAX;
  if (a == RS_NCCL_NVLS || a == RS_NCCL_NVLSTREE) {
    /* NVLink SHARP: a switch that reduces, Simple only; NVLS on one node
     * (several need CollNet), NVLSTree on several (tuning.cc disables it
     * on one) */
    if (!sys->nvls || !sys->nvswitch || p != RS_PROTO_SIMPLE)
      return UINT64_MAX;
    if ((a == RS_NCCL_NVLS) != (mc.N == 1))
      return UINT64_MAX;
  }
  if (bytes == 0)
    return 0;
  double ns;
  switch (a) {
  case RS_NCCL_RING:
    ns = ring_ns(&mc, p, channels, slots, bytes);
    break;
  case RS_NCCL_TREE:
    ns = tree_ns(&mc, p, channels, slots, bytes);
    break;
  case RS_NCCL_NVLS:
    ns = nvls_ns(&mc, channels, slots, bytes);
    break;
  default:
    ns = nvlstree_ns(&mc, channels, slots, bytes);
    break;
  }
  if (ns < 0) /* no memory, or no NVLS graph on this switch */
    return UINT64_MAX;
  return (uint64_t)llround(ns + 1000.0 * rs__nccl_base_us(a, p));
}
