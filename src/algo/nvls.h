/* algo/nvls.h - NVLink SHARP's all-reduce (NCCL_ALGO_NVLS), as its
 * schedule: one node of W GPUs on an NVLink switch that reduces (NVSwitch
 * 3, H100). The bucket is cut into W shards, shard i headed by GPU i
 * (NCCL's NVLS heads: src/device/all_reduce.h, RunWorkColl for
 * NCCL_ALGO_NVLS).
 *
 * Step 0, reduce: for each segment, every GPU j puts its copy of shard i
 * into the switch for head i (NCCL: multimem.ld_reduce, the switch reading
 * every GPU's copy), and its own shard's for itself; the switch sums them
 * and sends the sum down to the head. ringsim sums at the head, in this
 * order: the head's own data first, then the GPU before it's, the one
 * before that's, ... (r-1, r-2, ... mod W). NVIDIA does not document the
 * order in which the switch adds.
 * Step 1, multicast: each head sends its shard's sum once into the switch
 * (multimem.st), which writes it to every other GPU.
 * Each GPU sends S + S/W bytes and receives S/W + (W-1)/W S: about S each
 * way, against the ring's 2(W-1)/W S.
 */
#ifndef RINGSIM_ALGO_NVLS_H
#define RINGSIM_ALGO_NVLS_H

#include <stddef.h>

#include "base/schedule.h"

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
 *   segment k of every other shard into the switch for its head, and its
 *   own shard's for itself; as head it takes in the others' copies of
 *   its shard's segment (the switch's sum, added here in nvls.h's order;
 *   mean: the last add divides by the run's W), and the sum comes down.
 * - rs__nvls_multicast_round: segment k's multicast. The GPU sends its
 *   shard's sum into the switch once, which writes it to every other GPU
 *   of the node, and takes in the other heads' sums.
 * On simulated clocks alone, the same rounds of the G GPUs first ..
 * first + G - 1 of a bucket of elems elements (rs__nvls_sim_*). */
struct rs_worker;
struct rs_simrun;
int rs__nvls_reduce_round(struct rs_worker *w, const rs_nvls_cut_t *cut,
                          size_t k, int mean);
int rs__nvls_multicast_round(struct rs_worker *w, const rs_nvls_cut_t *cut,
                             size_t k);
void rs__nvls_sim_reduce_round(struct rs_simrun *s, int first, int G,
                               size_t elems, const rs_nvls_cut_t *cut,
                               size_t k);
void rs__nvls_sim_multicast_round(struct rs_simrun *s, int first, int G,
                                  size_t elems, const rs_nvls_cut_t *cut,
                                  size_t k);

#endif /* RINGSIM_ALGO_NVLS_H */
