/* algo/nccl_rings.c - the channels' rings as NCCL builds them on N nodes of
 * G GPUs and K NICs (algo/nccl.h, rs_nccl_ring_order). Learnt from NCCL
 * v2.30.7-1's src/graph/search.cc and connect.cc and written anew; no line
 * of NCCL's is copied.
 *
 * DESIGN. NCCL builds a ring in two passes. The graph search
 * (search.cc, ncclTopoCompute) finds, for one node, each search channel's
 * path NIC -> GPU -> ... -> GPU -> NIC; then ncclTopoPostset (connect.cc)
 * joins the nodes' paths into one ring per channel. The rules used here,
 * each where NCCL has it:
 *
 * 1. No network, or no NVLink switch: the PCI order. On one node the
 *    search tries FORCED_ORDER_PCI first (ncclTopoSearchRec, "Try PCI
 *    order first"), and the next channels replay it (sameChannels): every
 *    channel is 0 1 ... G-1. Without a switch, ncclTopoSearchRecNet tries
 *    the PCI order first as well.
 * 2. Entry NIC. Search channel sc starts at nets[(sc + i) % netCount]
 *    (ncclTopoSearchRecNet), the NICs listed GPU by GPU
 *    (ncclTopoPrefNetsChannelFirst): NIC sc for an even channel, the first
 *    one with bandwidth left. The ring enters at the NIC's localGpu.
 * 3. Next GPU. With an NVSwitch, ncclTopoSearchNextGpuSort keeps two
 *    candidates for a ring, index+1 and index-1, and moves index-1 to the
 *    front last: the search tries the PREVIOUS GPU first, then the next.
 *    (docs/nccl-reference.md 3.3 says next first; the source says
 *    otherwise, and this file follows the source.) A ring inside a node is
 *    therefore monotone, and descending when nothing forbids it.
 * 4. crossNic = 2 (the default NCCL_CROSS_NIC on rings, tried once the
 *    rail-aligned crossNic = 0 search stops at 7 channels of 48 GB/s on
 *    DGX H100): an odd channel must enter by the NIC its even partner left
 *    by (ncclTopoSearchRecNet) and leave by the NIC the partner entered by
 *    (ncclTopoSearchCheckNet). The search first tries the path PIX paths
 *    allow (the GPU's own NIC), so:
 *      even sc = 2p: NIC 2p -> GPU 2p, 2p-1, ..., 2p+1 -> NIC 2p+1
 *      odd sc = 2p+1: NIC 2p+1 -> GPU 2p+1, 2p+2, ..., 2p -> NIC 2p
 *    (the odd channel's descending try, 2p+1, 2p, ..., ends at GPU 2p+2,
 *    whose NIC is not NIC 2p: refused, so the ascending one is kept). Each
 *    NIC takes one channel in and one out; no path goes through PXN.
 * 5. Odd-node swap (ncclTopoPostset, "Alternate rings to avoid crossing
 *    rails"): on odd-numbered nodes channels c and c^1 exchange their
 *    paths when the ring graph was found with crossNic = 2 and its channel
 *    count is even. Node n+1 then enters by the NIC node n left by.
 * 6. connectRings (connect.cc): node n's send rank (its path's last GPU)
 *    connects to node n+1's recv rank (its path's first), on the same
 *    channel index, the last node back to node 0.
 * 7. Execution channels: ncclTopoPostset copies channel c to c +
 *    nChannels (and copyChannels again on H100 multi-node when fewer than
 *    16): execution channel c runs search channel c mod the search count,
 *    which on a network is K here (one channel entering per NIC: a
 *    400 Gb/s NIC has 50 GB/s, the search's 48 fits once).
 *
 * With fewer NICs than GPUs (K < G) the rules above do not settle the
 * orders (a NIC entered twice exceeds its bandwidth; what the search then
 * finds depends on the PCIe tree): ringsim then takes, as its own choice,
 * search channel sc entering at GPU sc G / K, descending for even sc and
 * ascending for odd sc, with the same swap and joining.
 */
#include "algo/nccl.h"

/* Search channel sc's path inside one node, as local GPU indexes. */
static void node_path(const rs_nccl_system_t *sys, int sc, int *local) {
  const int G = sys->gpus;
  if (sys->nodes == 1 || !sys->nvswitch) { /* rule 1 */
    for (int i = 0; i < G; i++)
      local[i] = i;
    return;
  }
  const int K = sys->nics > 0 ? sys->nics : 1;
  /* rules 2-4 (K = G: GPU sc; K < G: ringsim's choice, above) */
  const int first = (int)((long)sc * G / K), dir = (sc & 1) ? 1 : -1;
  for (int i = 0; i < G; i++)
    local[i] = ((first + dir * i) % G + G) % G;
}

void rs_nccl_ring_order(const rs_nccl_system_t *sys, int channel, int *order) {
  const int N = sys->nodes, G = sys->gpus;
  const int K = sys->nics > 0 ? sys->nics : 1;
  /* rule 7: the search channel this execution channel replays */
  const int search = (N > 1 && sys->nvswitch) ? K : 1;
  const int sc = channel % search;
  /* rule 5: crossNic = 2 needs two NICs; the swap an even count */
  const int swap = N > 1 && sys->nvswitch && K >= 2 && K % 2 == 0;
  for (int n = 0; n < N; n++) { /* rule 6: node after node */
    int *local = order + (size_t)n * G;
    node_path(sys, (swap && (n & 1)) ? sc ^ 1 : sc, local);
    for (int i = 0; i < G; i++)
      local[i] += n * G;
  }
}
