/* algo/nvls.h - NVLink SHARP's all-reduce (NCCL_ALGO_NVLS), as its
 * schedule: one node of W GPUs on an NVLink switch that reduces (NVSwitch
 * 3, H100). The bucket is cut into W shards, shard i headed by GPU i
 * (NCCL's NVLS heads: src/device/all_reduce.h, RunWorkColl for
 * NCCL_ALGO_NVLS).
 *
 * Step 0, reduce: for each segment, every GPU j puts its copy of shard i
 * into the switch for head i (NCCL: multimem.ld_reduce, the switch reading
 * every GPU's copy), its own shard's last; the switch sums them and sends
 * the sum down to the head. The switch is a participant of the run, a
 * thread of its own (node n's is participant W + n: xfer.h), and it adds
 * shard i's copies in the order it takes them: GPU i-1's first, then
 * i-2's, ..., i+1's, and the head's own last (mod W). NVIDIA does not
 * document the order in which the hardware adds.
 * Step 1, multicast: each head sends its shard's sum once into the switch
 * (multimem.st), which writes it to every other GPU (GPU j takes the heads'
 * in the order j-1, j-2, ...).
 * Each GPU sends S + S/W bytes and receives S/W + (W-1)/W S: about S each
 * way, against the ring's 2(W-1)/W S.
 */
#ifndef RINGSIM_ALGO_NVLS_H
#define RINGSIM_ALGO_NVLS_H

#include <stddef.h>

#include "base/schedule.h"
#include "net/topo.h"

/* The edges of NVLS within a node: a GPU's to its node's switch and back
 * (participant W + node, xfer.h's rs__switch_of); the switch's to and from
 * each GPU of its node. */
static inline int rs__nvls_peers(rs_shape_t shape, int rank, int *out) {
  if (rank < shape.workers) {
    out[0] = shape.workers + rank / shape.gpus;
    return 1;
  }
  const int first = (rank - shape.workers) * shape.gpus;
  for (int l = 0; l < shape.gpus; l++)
    out[l] = first + l;
  return shape.gpus;
}

/* The d-th head GPU r puts a shard into in step 0 (d = 1..W-1): r + d. */
static inline int rs__nvls_head(int workers, int rank, int d) {
  return (rank + d) % workers;
}

/* The d-th GPU a head multicasts to in step 1, and the head GPU r takes
 * its d-th shard from (d = 1..W-1). */
static inline int rs__nvls_to(int workers, int rank, int d) {
  return (rank + d) % workers;
}
static inline int rs__nvls_from(int workers, int rank, int d) {
  return (rank - d + workers) % workers;
}

/* Where a round's segments lie: each shard is cut into `parts` parts
 * (nvls: 1; nvlstree: 2, the halves its two trees carry), part `part`
 * into segs segments (the ring's cut: schedule.h). Segment k of it is
 * the streaming clock's segment part x segs + k (netmodel.h), and the
 * messages' tag segment. */
typedef struct rs_nvls_cut {
  size_t segs;
  int part, parts;
} rs_nvls_cut_t;

/* Segment k of part cut->part of shard c of a bucket of elems elements
 * cut into `shards`: its offset and length. */
typedef struct rs_nvls_piece {
  size_t off, len;
} rs_nvls_piece_t;

static inline rs_nvls_piece_t rs__nvls_piece(size_t elems, int shards,
                                             const rs_nvls_cut_t *cut, int c,
                                             size_t k) {
  rs_nvls_piece_t p;
  rs__segment(rs__chunk_elems(elems, shards, c), cut->parts, cut->segs,
              cut->part, k, &p.off, &p.len);
  p.off += rs__chunk_offset(elems, shards, c);
  return p;
}

/* Its segment on the streaming clock (and in its messages' tags). */
static inline size_t rs__nvls_seg(const rs_nvls_cut_t *cut, size_t k) {
  return (size_t)cut->part * cut->segs + k;
}

/* The rounds, for nvls and for nvlstree's nodes (algo/nvls.c, algo/
 * nvlstree.c). On threads, worker w among w->workers GPUs of a node
 * (w->group: the node's, or none), the bucket's shards cut as cut says:
 * - rs__nvls_reduce_round: round k's reduce. The GPU puts its copy of
 *   segment k of every other shard into the switch, then its own shard's,
 *   and takes its shard's sum down from the switch.
 * - rs__nvls_multicast_round: segment k's multicast. The GPU puts its
 *   shard's sum into the switch once, and takes the other heads' copies.
 * The switch sw (participant W + node; sw->workers: its node's GPUs) runs
 * the same rounds:
 * - rs__nvls_switch_reduce_round: it takes every GPU's puts of round k,
 *   adds each shard's in the order above (mean: the last add divides by
 *   the run's W), and sends each sum down to its head.
 * - rs__nvls_switch_multicast_round: it takes each head's sum of segment
 *   k and writes it to every other GPU of the node.
 * On simulated clocks alone, the same rounds of the G GPUs first ..
 * first + G - 1 of a bucket of elems elements (rs__nvls_sim_*): the
 * switch is the routes, and the same on threads (it stamps what it sends
 * with the routes' times: xfer.h). */
struct rs_worker;
struct rs_simrun;
int rs__nvls_reduce_round(struct rs_worker *w, const rs_nvls_cut_t *cut,
                          size_t k);
int rs__nvls_multicast_round(struct rs_worker *w, const rs_nvls_cut_t *cut,
                             size_t k);
int rs__nvls_switch_reduce_round(struct rs_worker *sw, const rs_nvls_cut_t *cut,
                                 size_t k, int mean);
int rs__nvls_switch_multicast_round(struct rs_worker *sw,
                                    const rs_nvls_cut_t *cut, size_t k);
void rs__nvls_sim_reduce_round(struct rs_simrun *s, int first, int G,
                               size_t elems, const rs_nvls_cut_t *cut,
                               size_t k);
void rs__nvls_sim_multicast_round(struct rs_simrun *s, int first, int G,
                                  size_t elems, const rs_nvls_cut_t *cut,
                                  size_t k);

#endif /* RINGSIM_ALGO_NVLS_H */
