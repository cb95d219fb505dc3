/* algo/nccl_system.c - the machine as NCCL sees it: the names of its
 * algorithms and protocols, the bytes each protocol puts on the wire, and
 * a --topo turned into the bandwidths NCCL's topology detection gives it
 * (algo/nccl.h). Every number cites NCCL v2.30.7-1's file and function.
 *
 * From a --topo to NCCL's view. NCCL does not measure: it counts links
 * and multiplies by its own per-link constants, and ringsim's presets
 * give a GPU's port (intra) as NCCL's figure (net/topo.c):
 * - NVLink: links x ncclTopoNVLinkBw(cc) (src/graph/topo.cc,
 *   ncclTopoAddNvLinks; topo.h SMxx_NVLINK_BW), so a GPU's links are its
 *   intra bandwidth over that constant, to the nearest link: H100
 *   370.8 / 20.6 = 18 links; A100 240 / 20 = 12.
 * - PCIe: width x speed / 80 (topo.cc, ncclTopoAddPci with kvDictPciGen,
 *   speed in 100 Mb/s per lane: Gen3 60, Gen4 120, Gen5 240). An SXM GPU's
 *   link to its PCIe switch (and NIC) is x16 of its generation: A100 Gen4,
 *   16 x 120 / 80 = 24 GB/s; H100 Gen5, 48. On a node without an NVLink
 *   switch the GPU's port (intra) is that PCIe link, at its figure (the
 *   pcie preset: PCIe 4.0 x16, 24).
 * - A NIC: its speed in Mb/s / 8000 (topo.cc, ncclTopoFillNet's
 *   net->net.bw): 400 Gb/s, 50 GB/s.
 * - The NIC's own latency (graph->latencyInter): IB reports 0. */
#include "algo/nccl.h"
#include "net/proto.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/util.h"

/* src/include/device.h's ncclAlgoStr and ncclProtoStr, as NCCL_ALGO and
 * NCCL_PROTO spell them (src/graph/tuning.cc parseList compares with
 * strcasecmp). */
static const char *const algo_names[RS_NCCL_ALGOS] = {"Tree", "Ring", "NVLS",
                                                      "NVLSTree"};
static const char *const proto_names[RS_PROTOS] = {"LL", "LL128", "Simple"};

const char *rs_nccl_algo_name(rs_nccl_algo_t a) {
  return (unsigned)a < RS_NCCL_ALGOS ? algo_names[a] : "?";
}

const char *rs_proto_name(rs_proto_t p) {
  return (unsigned)p < RS_PROTOS ? proto_names[p] : "?";
}

int rs_nccl_algo_from_name(const char *name) {
  for (int a = 0; name && a < RS_NCCL_ALGOS; a++)
    if (strcasecmp(name, algo_names[a]) == 0)
      return a;
  return -1;
}

int rs_proto_from_name(const char *name) {
  for (int p = 0; name && p < RS_PROTOS; p++)
    if (strcasecmp(name, proto_names[p]) == 0)
      return p;
  return -1;
}

/* (net/proto.h's latency tables are indexed in these orders) */
_Static_assert((int)RS_NCCL_TREE == RS_LAT_TREE &&
                   (int)RS_NCCL_RING == RS_LAT_RING &&
                   (int)RS_NCCL_NVLS == RS_LAT_NVLS &&
                   (int)RS_NCCL_NVLSTREE == RS_LAT_NVLSTREE &&
                   (int)RS_PROTO_LL + 1 == (int)RS_PROTOCOL_LL &&
                   (int)RS_PROTO_SIMPLE + 1 == (int)RS_PROTOCOL_SIMPLE,
               "rs_nccl_algo_t and rs_proto_t follow net/proto.h's tables");

/* The protocols' line formats are net/proto.c's (the network model moves
 * bytes with them too): one copy. */
uint64_t rs_proto_wire_bytes(rs_proto_t p, uint64_t n) {
  return rs__proto_wire_bytes((rs_protocol_t)(p + RS_PROTOCOL_LL), n);
}

/* topo.h: SM70_NVLINK_BW 20.0, SM80_NVLINK_BW 20.0, SM86_NVLINK_BW 12.0,
 * SM90_NVLINK_BW 20.6 (topo.h ncclTopoNVLinkBw picks by cc). */
static double nvlink_bw_per_link(int cc) {
  return cc >= 90 ? 20.6 : cc == 86 ? 12.0 : 20.0;
}

/* An SXM GPU's PCIe link in NCCL's GB/s (topo.cc, width x speed / 80 with
 * kvDictPciGen): x16 Gen3 (Volta) 12, Gen4 (Ampere) 24, Gen5 (Hopper) 48. */
static double gpu_pcie_gbs(int cc) {
  return cc >= 90   ? 16 * 240 / 80.0
         : cc >= 80 ? 16 * 120 / 80.0
                    : 16 * 60 / 80.0;
}

int rs_nccl_system_of(const rs_topo_t *t, rs_nccl_system_t *sys, char *errmsg) {
  if (!t->enabled)
    return rs__err(errmsg, RS_EINVAL,
                   "NCCL's model needs a topology (--topo), not a flat "
                   "--net");
  if (t->cc == 0)
    return rs__err(errmsg, RS_EINVAL,
                   "--topo: NCCL's model needs the GPUs' compute capability "
                   "(add cc=80 for A100 or cc=90 for H100)");
  /* NCCL's tables below cover Volta (70), Ampere (80) and Hopper (90):
   * Blackwell (100) has its own speed arrays and NVLS channels
   * (search.cc sm100SpeedArray*, nvls.cc NVLS_NCHANNELS_SM100), which
   * ringsim does not replay. */
  if (t->cc < 70 || t->cc >= 100)
    return rs__err(errmsg, RS_EINVAL,
                   "--topo: cc=%d: ringsim replays NCCL's model for compute "
                   "capabilities 70 to 99 (V100, A100, H100)",
                   t->cc);
  rs_nccl_system_t s = {
      .nodes = t->nodes,
      .gpus = t->gpus,
      .nics = t->nics,
      .cc = t->cc,
      .nvswitch = t->nvswitch != RS_TOPO_SWITCH_NONE,
      .nvls = t->nvswitch == RS_TOPO_SWITCH_NVLS,
      .nic_gbs = (double)t->nic.bandwidth / 1e9, /* Mb/s / 8000 */
      .net_latency_us = 0.0,                     /* IB's reported latency */
  };
  if (s.nvswitch) {
    const double links = floor((double)t->intra.bandwidth / 1e9 /
                                   nvlink_bw_per_link(t->cc) +
                               0.5);
    if (links < 1)
      return rs__err(errmsg, RS_EINVAL,
                     "--topo: intra bandwidth %.3g GB/s is less than one "
                     "NVLink (%.3g GB/s each way in NCCL's model), and the "
                     "node has an NVLink switch",
                     (double)t->intra.bandwidth / 1e9,
                     nvlink_bw_per_link(t->cc));
    s.nvlink_gbs = links * nvlink_bw_per_link(t->cc);
    s.pci_gbs = gpu_pcie_gbs(t->cc);
  } else {
    /* the port is the GPU's PCIe link, at NCCL's figure */
    s.nvlink_gbs = 0;
    s.pci_gbs = (double)t->intra.bandwidth / 1e9;
    if (s.pci_gbs <= 0)
      return rs__err(errmsg, RS_EINVAL,
                     "--topo: intra bandwidth %.3g GB/s is less than a PCIe "
                     "lane",
                     (double)t->intra.bandwidth / 1e9);
  }
  *sys = s;
  return RS_OK;
}
