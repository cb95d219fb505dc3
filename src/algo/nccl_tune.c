/* algo/nccl_tune.c - NCCL's tuner for all-reduce, replayed: the search
 * graphs NCCL's topology search would find on a machine, its cost table
 * (latency and bandwidth per algorithm and protocol), the time it
 * estimates for a size, and what it picks (algo/nccl.h).
 *
 * DESIGN. Three steps, each a function of the one before, as NCCL runs
 * them when a communicator is made and when an all-reduce is enqueued:
 * 1. The graphs (src/graph/search.cc ncclTopoCompute; init.cc
 *    initTransportsRank). NCCL searches channels recursively over its
 *    graph of GPUs, NVSwitch, PCIe switches and NICs. ringsim replays the
 *    search's outer rules exactly (its speed arrays, maxBw and totalBw,
 *    the first pass that lowers the speed while a next one is worth .49
 *    of the best, its stop conditions, ncclTopoDupChannels, the second
 *    pass that raises it again, ncclTopoCompareGraphs), and replaces the
 *    recursion by what it finds on the machines ringsim describes: how
 *    many channels of a given bandwidth the links hold (fits_*: each
 *    channel subtracts its bandwidth from every link it crosses, as
 *    followPath does). That is docs/nccl-reference.md section 3.2's
 *    derivation, written for any node count, GPUs, NICs and bandwidths.
 * 2. The cost table (src/graph/tuning.cc ncclTopoTuneModel): from each
 *    graph's channels and per-channel bandwidth, the protocol factors and
 *    caps, to a bus bandwidth, an algorithm bandwidth and a latency.
 * 3. The choice (src/enqueue.cc topoGetAlgoInfo, tuning.cc
 *    ncclTopoGetAlgoTime): the argmin of time over what is allowed, then
 *    the channels it runs on.
 *
 * What ringsim assumes where NCCL would look at the machine: an Intel x86
 * host, as DGX H100's Xeons (tuning.cc getNetOverhead 1 us, llMaxBws row
 * 0 across nodes, the PCIe P2P overhead through the CPU; a DGX A100's AMD
 * EPYC would get 2 us and row 1, which rs_nccl_system_t cannot say);
 * InfiniBand (the NIC's latency 0); CUDA 12 (LL128 on ring all-reduce of
 * 2 ranks stays on); each NIC on a PCIe switch with its GPU(s), GPU g's
 * NIC g mod K, and on NVSwitch machines rings that close within the
 * NIC's switch (LL128 stays on: typeInter <= PXB); no CollNet (SHARP in
 * the IB switches), no tuner plugin, no NCCL_* setting but those
 * rs_nccl_force_t carries. NCCL computes in float, ringsim in double: the
 * times agree to about 1e-6 relative. The times are NCCL's estimate, not
 * a measurement. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "algo/nccl.h"
#include "net/proto.h"
#include "base/util.h"

/* ---- constants ----------------------------------------------------------
 * Indexed by ringsim's algorithms (Tree, Ring, NVLS, NVLSTree: NCCL's 0, 1,
 * 4, 5) and protocols (LL, LL128, Simple). */

/* tuning.cc's baseLatencies and hwLatencies: net/proto.h's
 * rs__nccl_base_us and rs__nccl_hw_us, the one copy. */
#define HW_NVLINK RS_HW_NVLINK
#define HW_PCI RS_HW_PCI
#define HW_NET RS_HW_NET

/* tuning.cc ncclTopoTuneModel's compCapIndex: Volta, Ampere, Hopper */
static int cc_index(int cc) { return cc >= 90 ? 2 : cc >= 80 ? 1 : 0; }

/* tuning.cc ncclTunerConstantsDefaults.llMaxBws[index1][index2] (GB/s):
 * one node by GPU (Volta, Ampere, Hopper), several by CPU (row 0 Intel,
 * row 1 AMD); columns 1 node, 2 nodes, 3 or more. */
static const double ll_max_bws[3][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}};
/* tuning.cc perChMaxRingLL128Bws, perChMaxTreeLL128Bws, perChMaxTreeBws,
 * perChMaxNVLSTreeBws [compCapIndex][index2] (GB/s per channel) */
static const double per_ch_max_ring_ll128[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
static const double per_ch_max_tree_ll128[3][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
static const double per_ch_max_tree[3][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
static const double per_ch_max_nvls_tree[3][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}};
/* tuning.cc nvlsEfficiency[compCapIndex] */
static const double nvls_efficiency[3] = {0.0, 0.0, 0.85};

/* tuning.cc treeCorrectionFactor[proto][log2i(nBytes >> 6)], for powers of
 * two from 64 B up (ncclTopoGetAlgoTime applies indexes 0..22) */
// clang-format off
static const double tree_correction[RS_PROTOS][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};
// clang-format on

/* tuning.cc getNetOverhead: Intel x86, 1 us (x 3 for Simple in the ring's
 * latency) */
#define NET_OVERHEAD_US 1.0
/* topo.h PCI_BW (GB/s): a ring at or below it gets 256 Simple threads */
#define PCI_BW 12.0
/* topo.h LOC_BW: one GPU alone */
#define LOC_BW 5000.0
/* topo.h INTEL_P2P_OVERHEAD(bw) = bw * 6 / 5: what a GPU-to-GPU path
 * through an Intel CPU costs its PCIe links (search.cc followPath) */
#define INTEL_P2P_OVERHEAD 1.2
/* device.h MAXCHANNELS; init.cc: the ring search's maxChannels is half */
#define MAXCHANNELS 64
/* graph.h NCCL_MAX_NVLS_ARITY: at most so many NVLS heads */
#define NCCL_MAX_NVLS_ARITY 32
/* nvls.cc NVLS_NCHANNELS_SM90: NVLS's execution channels on Hopper */
#define NVLS_NCHANNELS_SM90 16
/* device.h thread counts: NCCL_MAX_NTHREADS 640, NCCL_SIMPLE_MAX_NTHREADS
 * 512, NCCL_LL_MAX_NTHREADS 512, NCCL_LL128_MAX_NTHREADS 640 */
#define NCCL_MAX_NTHREADS 640
#define NCCL_SIMPLE_MAX_NTHREADS 512
#define NCCL_LL_MAX_NTHREADS 512
#define NCCL_LL128_MAX_NTHREADS 640
/* comm.h NCCL_LL_THREAD_THRESHOLD 8, NCCL_LL128_THREAD_THRESHOLD 8,
 * NCCL_SIMPLE_THREAD_THRESHOLD 64: bytes per thread before the tuner adds
 * channels (the ring's LL one is times nRanks: ncclTopoTuneModel) */
static const int thread_threshold[RS_PROTOS] = {8, 8, 64};

/* search.cc: the per-channel bandwidths the search tries, highest first
 * (sm90SpeedArrayIntra/Inter from cc 90, speedArrayIntra/Inter below) */
static const double sm90_speed_intra[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0,
                                          15.0, 12.0, 11.0, 6.0,  3.0};
static const double sm90_speed_inter[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0,
                                          22.0, 20.0, 17.5, 15.0, 12.0, 6.0,
                                          3.0,  2.4,  1.2,  0.24, 0.12};
static const double speed_intra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0,
                                     9.0,  7.0,  6.0,  5.0,  4.0,  3.0};
static const double speed_inter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0,
                                     12.0, 10.0, 9.0,  7.0,  6.0,  5.0,  4.0,
                                     3.0,  2.4,  1.2,  0.24, 0.12};
#define COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

/* graph.h NCCL_TOPO_PATTERN_*: the shapes of a search graph's channels */
enum {
  PATTERN_BALANCED_TREE = 1, /* to the NIC from the first two GPUs */
  PATTERN_TREE = 3,          /* to and from the NIC through one GPU */
  PATTERN_RING = 4,
  PATTERN_NVLS = 5
};

/* ---- the search graphs (search.cc ncclTopoCompute) --------------------- */

typedef struct graph {
  int pattern;
  int channels;
  double bw_intra, bw_inter; /* per channel, GB/s */
} graph_t;

/* How many channels of each GB/s a link of cap GB/s carries, as
 * followPath subtracts them (SUB_ROUND keeps 3 decimals: the tolerance). */
static int fits(double cap, double each) {
  const double n = floor(cap / each + 1e-6);
  return n > INT_MAX / 2 ? INT_MAX / 2 : (int)n;
}

static int min_int(int a, int b) { return a < b ? a : b; }

/* The GPUs whose NIC is each NIC (GPU g sends through NIC g mod K): those
 * NCCL's search may enter a node at, from that NIC. */
static int gpus_per_nic(const rs_nccl_system_t *s) {
  const int per = s->gpus / s->nics;
  return per < 1 ? 1 : per;
}

/* Channels a node's NICs start and end at bw_inter each (search.cc
 * ncclTopoSearchRecNet subtracts bw from the NIC it starts at; the path
 * NIC -> PCIe switch -> GPU from the NIC's link and the GPU's): per NIC,
 * the NIC's own and its GPUs' PCIe links. */
static int fits_nics(const rs_nccl_system_t *s, double bw_inter) {
  return s->nics * min_int(fits(s->nic_gbs, bw_inter),
                           gpus_per_nic(s) * fits(s->pci_gbs, bw_inter));
}

/* Channels whose every hop inside a node is a GPU-to-GPU path, `hops` of
 * them per channel spread over the node's G GPUs, each crossing the
 * sender's link up and the receiver's down: NVLink to the switch, or
 * PCIe to the host, which an Intel CPU charges 6/5 (INTEL_P2P_OVERHEAD). */
static int fits_gpu_hops(const rs_nccl_system_t *s, int hops, double bw) {
  if (hops <= 0)
    return INT_MAX / 2;
  if (s->nvswitch)
    return fits(s->gpus * s->nvlink_gbs, hops * bw);
  return fits(s->gpus * s->pci_gbs, hops * bw * INTEL_P2P_OVERHEAD);
}

/* What one search at (bw_intra, bw_inter) finds for pattern: the most
 * channels that fit, at most max_ch; 0 (not kept: ncclTopoCompareGraphs)
 * below min_ch. The pattern found may be a simpler tree. */
static graph_t search_once(const rs_nccl_system_t *s, int pattern,
                           double bw_intra, double bw_inter, int min_ch,
                           int max_ch) {
  const int inter = s->nodes > 1, G = s->gpus;
  graph_t g = {pattern, 0, bw_intra, bw_inter};
  int n;
  if (pattern == PATTERN_NVLS) {
    /* search.cc ncclTopoSearchTryNvls: channel h's head GPU crosses its
     * NVLink twice each way, every other GPU once; across nodes each head
     * is a NIC's GPU, reached from that NIC at bw_inter
     * (ncclTopoSearchRecNet), one head per NIC */
    const int heads = inter ? min_int(s->nics, G) : G;
    if (inter && (s->nic_gbs < bw_inter - 1e-6 || s->pci_gbs < bw_inter - 1e-6))
      n = 0;
    else
      n = min_int(heads, fits(s->nvlink_gbs, bw_intra) - 1);
  } else if (!inter) {
    /* a ring or a chain through the node: every GPU once up, once down */
    n = s->nvswitch ? fits(s->nvlink_gbs, bw_intra)
                    : fits(s->pci_gbs, bw_intra * INTEL_P2P_OVERHEAD);
  } else if (pattern == PATTERN_RING) {
    /* NIC -> G GPUs -> NIC: G - 1 hops inside the node. With several
     * NICs, NCCL_CROSS_NIC 2 (its default: search.cc
     * ncclTopoSearchCheckNet) lets a channel leave by the NIC the one
     * before it entered at; without it the channel must leave by its own
     * NIC, reached from the last GPU through the first (PXN), one hop
     * more. The search tries that first and keeps cross-NIC's channels
     * when there are more of them (ncclTopoCompareGraphs), which G - 1
     * hops always give. With one NIC every GPU is the NIC's. */
    n = min_int(fits_nics(s, bw_inter), fits_gpu_hops(s, G - 1, bw_intra));
  } else {
    /* a tree's channel: NIC -> GPU a -> ... (a chain of G - 1 hops), and
     * back to the NIC from a (TREE), or half from a and half from the
     * next GPU (BALANCED_TREE), which must share a's NIC to be reached
     * at the search's first typeInter. Hopper's search tries the simpler
     * TREE before it widens typeInter (ncclTopoCompute: "Try a simpler
     * tree"); Ampere's widens it until the balanced tree closes. */
    n = min_int(fits_nics(s, bw_inter), fits_gpu_hops(s, G - 1, bw_intra));
    if (pattern == PATTERN_BALANCED_TREE && s->cc >= 90 && s->nics > 1 && G > 1)
      g.pattern = PATTERN_TREE;
  }
  n = min_int(n, max_ch);
  g.channels = n >= min_ch && n > 0 ? n : 0;
  return g;
}

/* ncclTopoCompareGraphs: is candidate better than best? */
static int better(const rs_nccl_system_t *s, const graph_t *candidate,
                  const graph_t *best) {
  if (candidate->channels == 0)
    return 0;
  if (candidate->pattern == PATTERN_NVLS)
    return (candidate->channels > best->channels &&
            candidate->channels <= s->gpus) ||
           candidate->channels * candidate->bw_inter >
               best->channels * best->bw_inter + 1e-9;
  return candidate->channels * candidate->bw_intra >
         best->channels * best->bw_intra + 1e-9;
}

/* ncclTopoCompute for one pattern, minChannels and maxChannels as init.cc
 * sets them. */
static graph_t compute(const rs_nccl_system_t *s, int pattern, int min_ch,
                       int max_ch) {
  const int inter = s->nodes > 1, G = s->gpus;
  graph_t best = {pattern, 0, 0, 0};
  if (pattern == PATTERN_NVLS) {
    /* no NVLS graph without an NVSwitch and cc >= 90; NVLS heads are at
     * most the GPUs; on one node every GPU must pull ("Force intra-node
     * NVLS algorithm to pull evenly from all GPUs") */
    if (!s->nvswitch || s->cc < 90)
      return best;
    max_ch = min_int(NCCL_MAX_NVLS_ARITY, G);
    if (!inter)
      min_ch = max_ch;
  }
  if (G == 1 && pattern != PATTERN_RING)
    pattern = best.pattern = PATTERN_TREE;

  /* ncclTopoSearchInit: maxBw, the best path from a GPU to another (one
   * node) or to a NIC; totalBw, a GPU's NVLinks together, or its PCIe
   * link. One GPU alone: LOC_BW. */
  double max_bw, total_bw;
  if (!inter && G == 1) {
    max_bw = total_bw = LOC_BW;
  } else {
    max_bw = inter ? fmin(s->pci_gbs, s->nic_gbs)
                   : (s->nvswitch ? s->nvlink_gbs : s->pci_gbs);
    total_bw = fmax(s->pci_gbs, s->nvlink_gbs);
  }
  const double *speed = inter ? (s->cc >= 90 ? sm90_speed_inter : speed_inter)
                              : (s->cc >= 90 ? sm90_speed_intra : speed_intra);
  const int nspeeds =
      inter ? (s->cc >= 90 ? COUNT(sm90_speed_inter) : COUNT(speed_inter))
            : (s->cc >= 90 ? COUNT(sm90_speed_intra) : COUNT(speed_intra));
  /* "algo other than RING do not need to close to the starting NET, so
   * increase the NVLink bw artificially" */
  double local_total = total_bw;
  if (G > 1 && pattern != PATTERN_RING)
    local_total *= (double)G / (G - 1);
  int idx = 0;
  while ((speed[idx] > max_bw || speed[idx] * min_ch > local_total) &&
         idx < nspeeds - 1)
    idx++;

  /* Pass 1: the fastest speed that finds channels, then lower ones while
   * they are worth more than .49 of the best, until a search is perfect
   * (maxChannels found) or the channels carry totalBw. */
  for (;;) {
    graph_t g = search_once(s, pattern, speed[idx], speed[idx], min_ch, max_ch);
    if (better(s, &g, &best))
      best = g;
    if (best.channels == max_ch ||
        best.channels * best.bw_inter >= total_bw - 1e-9)
      break;
    if (idx < nspeeds - 1 &&
        (best.channels == 0 || speed[idx + 1] / best.bw_inter > .49))
      idx++;
    else
      break;
  }
  if (best.channels == 0) {
    /* "Could not find a path ... falling back to simple order" */
    if (pattern == PATTERN_NVLS)
      return best;
    return (graph_t){pattern, 1, 0.1, 0.1};
  }

  /* ncclTopoDupChannels: twice the channels at half the bandwidth,
   * except for NVLS, below 25 GB/s, and from Hopper below 50 GB/s with
   * more than 4 channels */
  if (best.pattern != PATTERN_NVLS && best.bw_intra >= 25.0 &&
      !(s->cc > 80 && best.bw_intra < 50.0 && best.channels > 4)) {
    const int dup = min_int(best.channels * 2, max_ch);
    const int div = (dup + best.channels - 1) / best.channels;
    best.bw_intra /= div;
    best.bw_inter /= div;
    best.channels = dup;
  }

  /* Pass 2: from the speed at or below the graph's, raise it while the
   * same channels still fit: a ring both bandwidths, NVLS the NIC side
   * (bwInter, up to twice bwIntra), a tree the GPU side (bwIntra, up to
   * twice bwInter). */
  idx = 0;
  while (speed[idx] > best.bw_inter && idx < nspeeds - 1)
    idx++;
  graph_t tmp = best;
  tmp.bw_intra = tmp.bw_inter = speed[idx];
  const int min2 = best.channels;
  while (idx > 0) {
    int max2 = max_ch;
    if (pattern == PATTERN_RING) {
      tmp.bw_intra = tmp.bw_inter = speed[--idx];
    } else if (pattern == PATTERN_NVLS && tmp.bw_inter == best.bw_inter &&
               tmp.bw_inter < tmp.bw_intra * 2) {
      max2 = best.channels;
      tmp.bw_inter = speed[--idx];
    } else if (pattern != PATTERN_NVLS && pattern != PATTERN_RING &&
               tmp.bw_intra == best.bw_intra &&
               tmp.bw_intra < tmp.bw_inter * 2) {
      tmp.bw_intra = speed[--idx];
    } else {
      break;
    }
    graph_t g =
        search_once(s, tmp.pattern, tmp.bw_intra, tmp.bw_inter, min2, max2);
    if (better(s, &g, &best))
      best = g;
  }
  return best;
}

/* ---- the cost table (tuning.cc ncclTopoTuneModel) ---------------------- */

/* What the tuner knows once the communicator is made. */
typedef struct tuned {
  graph_t ring, tree, nvls;
  int max_tree_pattern; /* init.cc comm->maxTreePattern */
  int channels;         /* comm->nChannels (ncclTopoPostset), unforced */
  int nvls_channels;    /* comm->nvlsChannels (nvls.cc ncclNvlsTuning) */
  int max_threads[RS_NCCL_ALGOS][RS_PROTOS];
  rs_nccl_cost_t cost[RS_NCCL_ALGOS][RS_PROTOS];
} tuned_t;

static int log2i(uint64_t n) { /* utils.h log2i: floor(log2 n), -1 for 0 */
  int l = -1;
  while (n) {
    n >>= 1;
    l++;
  }
  return l;
}

static int nvls_capable(const rs_nccl_system_t *s) {
  return s->nvswitch && s->nvls && s->cc >= 90;
}

/* ncclTopoPostset's execution channels before NCCL_MIN/MAX_NCHANNELS:
 * the search channels twice (channel c and c + n share a ring), and
 * twice again on Hopper across nodes while a ring channel is faster than
 * 45 GB/s and they are fewer than 16 ("4 compute channels per search
 * channel to reach peak BW on <8 PPN"). */
static int postset_channels(const rs_nccl_system_t *s, const tuned_t *t) {
  int n = min_int(MAXCHANNELS, 2 * t->ring.channels);
  if (s->cc >= 90 && s->nodes > 1 && t->ring.bw_intra > 45.0 && n < 16)
    n *= 2;
  return n;
}

static void tune(const rs_nccl_system_t *s, tuned_t *t) {
  memset(t, 0, sizeof *t);
  const int nodes = s->nodes, W = s->nodes * s->gpus;
  /* init.cc initTransportsRank: the ring graph first (minChannels 1,
   * maxChannels MAXCHANNELS/2), the tree with as many channels as the
   * ring, NVLS with up to MAXCHANNELS; then ring and tree keep the fewer */
  t->ring = compute(s, PATTERN_RING, 1, MAXCHANNELS / 2);
  t->tree =
      compute(s, PATTERN_BALANCED_TREE, t->ring.channels, t->ring.channels);
  if (nvls_capable(s))
    t->nvls = compute(s, PATTERN_NVLS, 1, MAXCHANNELS);
  t->ring.channels = t->tree.channels =
      min_int(t->ring.channels, t->tree.channels);
  t->max_tree_pattern = t->tree.pattern;
  t->channels = postset_channels(s, t);
  t->nvls_channels = t->nvls.channels > 0 ? NVLS_NCHANNELS_SM90 : 0;

  /* ncclTopoTuneModel's maxThreads */
  const int simple_ring_threads = t->ring.bw_intra * t->ring.channels <= PCI_BW
                                      ? 256
                                      : NCCL_SIMPLE_MAX_NTHREADS;
  for (int a = 0; a < RS_NCCL_ALGOS; a++) {
    t->max_threads[a][RS_PROTO_LL] = NCCL_LL_MAX_NTHREADS;
    t->max_threads[a][RS_PROTO_LL128] = NCCL_LL128_MAX_NTHREADS;
    t->max_threads[a][RS_PROTO_SIMPLE] = NCCL_MAX_NTHREADS;
  }
  t->max_threads[RS_NCCL_RING][RS_PROTO_SIMPLE] = simple_ring_threads;
  t->max_threads[RS_NCCL_TREE][RS_PROTO_SIMPLE] = NCCL_SIMPLE_MAX_NTHREADS;
  if (W <= 1)
    return; /* "if (nRanks <= 1) return": a copy, no algorithm */

  const int ci = cc_index(s->cc);
  const int index2 = nodes <= 2 ? nodes - 1 : 2;
  const int index1 = nodes == 1 ? ci : 0; /* Intel CPU across nodes */
  const double ll_max_bw = ll_max_bws[index1][index2];
  const int ppn = W / nodes;
  const int nsteps = 2 * (W - 1);
  const int intra_hw = s->nvswitch ? HW_NVLINK : HW_PCI;
  for (int a = 0; a < RS_NCCL_ALGOS; a++) {
    const graph_t *g = a == RS_NCCL_TREE   ? &t->tree
                       : a == RS_NCCL_RING ? &t->ring
                                           : &t->nvls;
    const int nvls_family = a == RS_NCCL_NVLS || a == RS_NCCL_NVLSTREE;
    for (int p = 0; p < RS_PROTOS; p++) {
      rs_nccl_cost_t *c = &t->cost[a][p];
      c->search_channels = g->channels;
      /* NVLS and NVLSTree run Simple only, and need 2 channels */
      if (nvls_family && (p != RS_PROTO_SIMPLE || g->channels < 2))
        continue;
      double bw = nodes <= 2 ? g->bw_intra : g->bw_inter;
      if (nvls_family) {
        /* NVLS busBw per channel: the switch's share less a channel, x 2
         * ("AllReduce pipelines two operations"); across 2 nodes a
         * NVLSTree channel's NIC side counts twice */
        const double intra_bw = g->bw_intra * nvls_efficiency[ci] *
                                (g->channels - 1) / g->channels * 2.0;
        const double inter_bw =
            g->bw_inter * (nodes <= 2 && a == RS_NCCL_NVLSTREE ? 2 : 1);
        bw = fmin(intra_bw, inter_bw);
        if (a == RS_NCCL_NVLSTREE)
          bw = fmin(bw, per_ch_max_nvls_tree[ci][index2]);
      }
      c->channel_gbs = bw;
      double bus = g->channels * bw;
      /* the model's refinements, in ncclTopoTuneModel's order */
      if (a == RS_NCCL_RING && p == RS_PROTO_LL)
        bus = fmin(ll_max_bw, bus * .5);
      if (a == RS_NCCL_RING && p == RS_PROTO_LL128)
        bus = fmin(bus * 0.92, g->channels * per_ch_max_ring_ll128[ci][index2]);
      if (a == RS_NCCL_TREE)
        bus = fmin(bus * .92, g->channels * per_ch_max_tree[ci][index2]);
      if (a == RS_NCCL_TREE && p == RS_PROTO_LL)
        bus = fmin(bus * 1.0 / 3.8, ll_max_bw);
      if (a == RS_NCCL_TREE && p == RS_PROTO_LL128)
        bus = fmin(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0),
                   g->channels * per_ch_max_tree_ll128[ci][index2]);
      if (a == RS_NCCL_TREE && t->max_tree_pattern == PATTERN_TREE)
        bus *= .85;
      c->busbw_gbs = bus;
      /* busBw to algBw: nRanks/nsteps for ring and NVLS, .5 for tree */
      c->algbw_gbs = bus * (a == RS_NCCL_TREE ? .5 : (double)W / nsteps);

      /* latency */
      double lat = rs__nccl_base_us(a, p);
      double intra_lat =
          rs__nccl_hw_us(nvls_family ? HW_NVLINK : intra_hw, a, p);
      /* with one GPU per node latencies are fully exposed: the NET Tree
       * row; the NIC's own latency, twice for Simple ("flush") */
      double inter_lat =
          ppn == 1 ? rs__nccl_hw_us(HW_NET, RS_NCCL_TREE, p)
                   : rs__nccl_hw_us(HW_NET, a, p);
      inter_lat += s->net_latency_us;
      if (p == RS_PROTO_SIMPLE)
        inter_lat += s->net_latency_us;
      if (a == RS_NCCL_RING) {
        /* "Inter-node rings still have to launch nsteps * net overhead" */
        double net_overhead = 0.0;
        if (nodes > 1)
          net_overhead = NET_OVERHEAD_US * (p == RS_PROTO_SIMPLE ? 3 : 1);
        intra_lat = fmax(intra_lat, net_overhead);
        const int inter_steps = nodes == 1 ? 0 : 2 * (nodes - 1);
        lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      } else if (a == RS_NCCL_TREE) {
        lat += 2 * ((ppn - 1) * intra_lat + log2i((uint64_t)nodes) * inter_lat);
      } else if (a == RS_NCCL_NVLS) {
        lat = intra_lat + (nodes > 1 ? inter_lat : 0);
      } else {
        lat += intra_lat + 2 * log2i((uint64_t)nodes) * inter_lat;
      }
      c->latency_us = lat;

      /* enabled: NVLSTree needs several nodes; NVLS across nodes needs
       * CollNet; LL128 (its default "2") needs NVLink inside the node
       * (typeIntra <= PATH_NVB) and cc >= 70; the NIC side (typeInter <=
       * PATH_PXN from Hopper, PATH_PXB before) holds on the NVSwitch
       * machines ringsim describes, whose rings close through a NIC's
       * own PCIe switch */
      int on = c->busbw_gbs > 0;
      if (a == RS_NCCL_NVLSTREE && nodes == 1)
        on = 0;
      if (a == RS_NCCL_NVLS && nodes > 1)
        on = 0;
      if (p == RS_PROTO_LL128 && (!s->nvswitch || s->cc < 70))
        on = 0;
      c->available = on;
      if (!on) /* "comm->bandwidths[c][a][p] = 0": time -1 */
        c->busbw_gbs = c->algbw_gbs = 0;
    }
  }
}

void rs_nccl_tune(const rs_nccl_system_t *sys,
                  rs_nccl_cost_t cost[RS_NCCL_ALGOS][RS_PROTOS]) {
  tuned_t t;
  tune(sys, &t);
  memcpy(cost, t.cost, sizeof t.cost);
}

/* ---- time and choice ---------------------------------------------------- */

/* ncclTopoGetAlgoTime for one all-reduce (numPipeOps 1), the ring plateau
 * read against `channels` execution channels. */
static double algo_time(const rs_nccl_system_t *s,
                        const rs_nccl_cost_t cost[RS_NCCL_ALGOS][RS_PROTOS],
                        rs_nccl_algo_t a, rs_proto_t p, uint64_t bytes,
                        int channels) {
  const uint64_t W = (uint64_t)s->nodes * (uint64_t)s->gpus;
  if ((unsigned)a >= RS_NCCL_ALGOS || (unsigned)p >= RS_PROTOS)
    return -1;
  if (W <= 1) /* updateCollCostTable: one rank, Ring/Simple costs 0 */
    return a == RS_NCCL_RING && p == RS_PROTO_SIMPLE ? 0.0 : -1;
  const rs_nccl_cost_t *c = &cost[a][p];
  if (!c->available || c->algbw_gbs <= 0)
    return -1;
  double bw = c->algbw_gbs, lat = c->latency_us;
  const int log_size = log2i(bytes >> 6);
  /* "Trees are not perfectly sticking to the model for medium sizes" */
  if (a == RS_NCCL_TREE && log_size >= 0 && log_size < 23)
    bw *= tree_correction[p][log_size];
  /* "Plateau effect of ring": x 1.4 from cc 80 (1.9 below) */
  if (a == RS_NCCL_RING && p == RS_PROTO_SIMPLE && s->nodes > 1 &&
      channels > 0 && bytes / ((uint64_t)channels * W) >= 64)
    lat *= s->cc < 80 ? 1.9 : 1.4;
  return lat + (double)bytes / (1000.0 * bw);
}

/* comm->nChannels after NCCL_MAX_NCHANNELS, then NCCL_MIN_NCHANNELS
 * (connect.cc ncclTopoPostset; ncclMaxNchannels in 1..MAXCHANNELS,
 * ncclMinNchannels in 0..MAXCHANNELS). */
static int forced_channels(int channels, const rs_nccl_force_t *f) {
  if (f && f->max_channels > 0)
    channels = min_int(channels, min_int(f->max_channels, MAXCHANNELS));
  if (f && f->min_channels > channels)
    channels = min_int(f->min_channels, MAXCHANNELS);
  return channels;
}

double rs_nccl_time_us(const rs_nccl_system_t *sys,
                       const rs_nccl_cost_t cost[RS_NCCL_ALGOS][RS_PROTOS],
                       rs_nccl_algo_t a, rs_proto_t p, uint64_t bytes) {
  return algo_time(sys, cost, a, p, bytes, rs_nccl_channels(sys, RS_NCCL_RING));
}

int rs_nccl_channels(const rs_nccl_system_t *sys, rs_nccl_algo_t a) {
  tuned_t t;
  tune(sys, &t);
  if (a == RS_NCCL_NVLS || a == RS_NCCL_NVLSTREE)
    return t.nvls_channels;
  return t.channels;
}

/* Why NCCL cannot run a here at all, or NULL. */
static const char *algo_missing(const rs_nccl_system_t *s, int a) {
  if ((a == RS_NCCL_NVLS || a == RS_NCCL_NVLSTREE) && !nvls_capable(s))
    return "NVLS and NVLSTree need an NVLink switch that reduces "
           "(switch=nvls) and cc >= 90";
  if (a == RS_NCCL_NVLS && s->nodes > 1)
    return "NVLS across nodes needs CollNet, which ringsim does not model "
           "(NVLSTree runs there)";
  if (a == RS_NCCL_NVLSTREE && s->nodes == 1)
    return "NVLSTree runs across nodes only";
  return NULL;
}

/* The names in a mask, "ring,nvls" (all: "all"). */
static void mask_names(unsigned mask, int count, int algos, char *out,
                       size_t room) {
  size_t len = 0;
  out[0] = '\0';
  if (mask == 0) {
    snprintf(out, room, "all");
    return;
  }
  for (int i = 0; i < count; i++)
    if (mask & (1u << i))
      len += (size_t)snprintf(out + len, len < room ? room - len : 0, "%s%s",
                              len ? "," : "",
                              algos ? rs_nccl_algo_name((rs_nccl_algo_t)i)
                                    : rs_proto_name((rs_proto_t)i));
}

int rs_nccl_choose(const rs_nccl_system_t *sys, const rs_nccl_force_t *force,
                   uint64_t bytes, rs_nccl_choice_t *choice, char *errmsg) {
  const rs_nccl_force_t none = {0, 0, 0, 0};
  const rs_nccl_force_t *f = force ? force : &none;
  if (f->algos >> RS_NCCL_ALGOS || f->protos >> RS_PROTOS ||
      f->min_channels < 0 || f->max_channels < 0)
    return rs__err(errmsg, RS_EINVAL,
                   "NCCL's tuner: a forced algorithm or protocol mask names "
                   "none of NCCL's, or a channel count is negative");
  const unsigned algos = f->algos ? f->algos : (1u << RS_NCCL_ALGOS) - 1;
  const unsigned protos = f->protos ? f->protos : (1u << RS_PROTOS) - 1;
  tuned_t t;
  tune(sys, &t);
  const int channels = forced_channels(t.channels, f);

  /* topoGetAlgoInfo: the least time >= 0, the first of equal ones in
   * index order; the runner-up the same over the other pairs */
  double times[RS_NCCL_ALGOS][RS_PROTOS];
  int best_a = -1, best_p = -1;
  for (int a = 0; a < RS_NCCL_ALGOS; a++)
    for (int p = 0; p < RS_PROTOS; p++) {
      times[a][p] = -1;
      if ((algos & (1u << a)) && (protos & (1u << p)))
        times[a][p] =
            algo_time(sys, (const rs_nccl_cost_t(*)[RS_PROTOS])t.cost,
                      (rs_nccl_algo_t)a, (rs_proto_t)p, bytes, channels);
      if (times[a][p] >= 0 &&
          (best_a < 0 || times[a][p] < times[best_a][best_p])) {
        best_a = a;
        best_p = p;
      }
    }
  if (best_a < 0) {
    char an[64], pn[64];
    const char *why = NULL;
    for (int a = 0; a < RS_NCCL_ALGOS && !why; a++)
      if (algos & (1u << a))
        why = algo_missing(sys, a);
    if (!why && (unsigned long long)sys->nodes * sys->gpus <= 1)
      why = "one GPU runs no algorithm";
    if (!why && !(protos & (1u << RS_PROTO_SIMPLE)))
      why = (protos & (1u << RS_PROTO_LL128)) && !sys->nvswitch
                ? "LL128 needs NVLink between the GPUs, and NVLS and NVLSTree "
                  "run Simple only"
                : "NVLS and NVLSTree run Simple only";
    if (!why)
      why = "LL128 needs NVLink between the GPUs";
    mask_names(f->algos, RS_NCCL_ALGOS, 1, an, sizeof an);
    mask_names(f->protos, RS_PROTOS, 0, pn, sizeof pn);
    return rs__err(errmsg, RS_EINVAL,
                   "NCCL_ALGO=%s NCCL_PROTO=%s leave NCCL nothing to run on "
                   "this machine: %s",
                   an, pn, why);
  }
  rs_nccl_choice_t out = {.algo = (rs_nccl_algo_t)best_a,
                          .proto = (rs_proto_t)best_p,
                          .time_us = times[best_a][best_p],
                          .runner_algo = (rs_nccl_algo_t)best_a,
                          .runner_proto = (rs_proto_t)best_p,
                          .runner_time_us = -1};
  for (int a = 0; a < RS_NCCL_ALGOS; a++)
    for (int p = 0; p < RS_PROTOS; p++)
      if ((a != best_a || p != best_p) && times[a][p] >= 0 &&
          (out.runner_time_us < 0 || times[a][p] < out.runner_time_us)) {
        out.runner_algo = (rs_nccl_algo_t)a;
        out.runner_proto = (rs_proto_t)p;
        out.runner_time_us = times[a][p];
      }

  /* the channels: NVLS's own, else comm->nChannels cut while the bytes
   * leave a thread less than its threshold (the ring's LL one x nRanks) */
  int nc;
  if (best_a == RS_NCCL_NVLS || best_a == RS_NCCL_NVLSTREE) {
    nc = t.nvls_channels;
    if (sys->nodes > 1 && best_a == RS_NCCL_NVLS)
      nc = min_int(nc, channels);
  } else {
    nc = channels;
    const uint64_t nt = (uint64_t)t.max_threads[best_a][best_p];
    uint64_t threshold = (uint64_t)thread_threshold[best_p];
    if (best_a == RS_NCCL_RING && best_p == RS_PROTO_LL)
      threshold *= (uint64_t)sys->nodes * (uint64_t)sys->gpus;
    while (nc >= 2 && bytes < (uint64_t)nc * nt * threshold)
      nc--;
  }
  out.channels = nc;
  *choice = out;
  return RS_OK;
}
