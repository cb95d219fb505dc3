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
 *    A ring inside a node is therefore monotone, and descending when
 *    nothing forbids it.
 * 4. Rail-aligned first. ncclTopoCompute searches with crossNic = 0
 *    before it tries crossNic = 2 (NCCL_CROSS_NIC's default): a channel
 *    must leave by the NIC it entered at (ncclTopoSearchCheckNet), reached
 *    at the search's first typeInter (PIX: through the PCIe switch the
 *    GPU shares with its NIC). The NIC's localGpu is the first GPU that
 *    uses it (ncclTopoGetLocalGpu); the descending path from it ends at
 *    the GPU after it, so:
 *    - a NIC shared by two GPUs or more (K <= G/2; NIC k next to GPUs
 *      k G/K ... on DGX A100 with 4 NICs): the path ends on a GPU of the
 *      same NIC and closes. Search channel sc: NIC sc -> its first GPU,
 *      down -> the GPU after it -> NIC sc. The graph keeps crossNic = 0
 *      (crossNic = 2 finds no more channels: the NICs bound both, and
 *      ncclTopoCompareGraphs keeps the first of equals), and rule 6 does
 *      not apply.
 *    - a NIC for every GPU (DGX H100): the path ends at GPU sc+1, whose
 *      NIC is not NIC sc. The rail-aligned search reaches NIC sc only
 *      through PXN (an extra NVLink hop), which fits 7 channels of
 *      48 GB/s; crossNic = 2 fits 8 and wins (rule 5).
 * 5. crossNic = 2: an odd channel must enter by the NIC its even partner
 *    left by (ncclTopoSearchRecNet) and leave by the NIC the partner
 *    entered by (ncclTopoSearchCheckNet). The search first tries the path
 *    PIX paths allow (the GPU's own NIC), so:
 *      even sc = 2p: NIC 2p -> GPU 2p, 2p-1, ..., 2p+1 -> NIC 2p+1
 *      odd sc = 2p+1: NIC 2p+1 -> GPU 2p+1, 2p+2, ..., 2p -> NIC 2p
 *    (the odd channel's descending try, 2p+1, 2p, ..., ends at GPU 2p+2,
 *    whose NIC is not NIC 2p: refused, so the ascending one is kept). Each
 *    NIC takes one channel in and one out; no path goes through PXN.
 * 6. Odd-node swap (ncclTopoPostset, "Alternate rings to avoid crossing
 *    rails"): on odd-numbered nodes channels c and c^1 exchange their
 *    paths when the ring graph was found with crossNic = 2 and its channel
 *    count is even. Node n+1 then enters by the NIC node n left by.
 * 7. connectRings (connect.cc): node n's send rank (its path's last GPU)
 *    connects to node n+1's recv rank (its path's first), on the same
 *    channel index, the last node back to node 0.
 * 8. Execution channels: ncclTopoPostset copies channel c to c +
 *    nChannels (and copyChannels again on H100 multi-node when fewer than
 *    16): execution channel c runs search channel c mod the search count.
 *    Search channel sc starts at NIC sc mod K (rule 2), so c mod K names
 *    the path whatever the count (on DGX H100 and DGX A100 it is K: one
 *    channel entering per NIC, the search's 48 or 24 GB/s fits once).
 *
 * With G/2 < K < G (some NICs with one GPU, some with more) neither
 * search is settled by the rules above (what NCCL finds depends on where
 * PXN paths fit); ringsim then takes rule 5's paths from each NIC's first
 * GPU, with rule 6's swap for an even K: its own choice, not NCCL's.
 */
#include "algo/nccl.h"

/* NIC k's localGpu: the first GPU that uses it (GPU g uses NIC g K / G,
 * so the first g with g K >= k G). */
static int first_gpu_of_nic(int k, int G, int K) {
  return (int)(((long)k * G + K - 1) / K);
}

/* Rule 4: every NIC is shared by two GPUs or more (the GPU after a NIC's
 * first shares it), so the rail-aligned search closes every channel. */
static int rail_aligned(const rs_nccl_system_t *sys, int K) {
  return 2 * K <= sys->gpus;
}

/* Search channel sc's path inside one node, as local GPU indexes. */
static void node_path(const rs_nccl_system_t *sys, int sc, int *local) {
  const int G = sys->gpus;
  if (sys->nodes == 1 || !sys->nvswitch) { /* rule 1 */
    for (int i = 0; i < G; i++)
      local[i] = i;
    return;
  }
  const int K = sys->nics > 0 ? sys->nics : 1;
  const int first = first_gpu_of_nic(sc % K, G, K); /* rule 2 */
  /* rule 4: down from the NIC's GPU; rule 5: odd channels up */
  const int dir = (!rail_aligned(sys, K) && (sc & 1)) ? 1 : -1;
  for (int i = 0; i < G; i++)
    local[i] = ((first + dir * i) % G + G) % G;
}

void rs_nccl_ring_order(const rs_nccl_system_t *sys, int channel, int *order) {
  const int N = sys->nodes, G = sys->gpus;
  const int K = sys->nics > 0 ? sys->nics : 1;
  /* rule 8: the search channel this execution channel replays */
  const int search = (N > 1 && sys->nvswitch) ? K : 1;
  const int sc = channel % search;
  /* rule 6: only a crossNic = 2 graph (two NICs or more, not rail
   * aligned) with an even channel count swaps */
  const int swap =
      N > 1 && sys->nvswitch && K >= 2 && K % 2 == 0 && !rail_aligned(sys, K);
  for (int n = 0; n < N; n++) { /* rule 7: node after node */
    int *local = order + (size_t)n * G;
    node_path(sys, (swap && (n & 1)) ? sc ^ 1 : sc, local);
    for (int i = 0; i < G; i++)
      local[i] += n * G;
  }
}

int rs_nccl_tree_of(int channel, int channels) {
  return channel >= (channels + 1) / 2;
}

int rs_nccl_tree_head(const rs_nccl_system_t *sys, int channel) {
  const int G = sys->gpus, K = sys->nics > 0 ? sys->nics : 1;
  if (sys->nodes == 1 || !sys->nvswitch)
    return 0;
  return first_gpu_of_nic(channel % K, G, K) % G;
}
