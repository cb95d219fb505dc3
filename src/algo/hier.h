/* algo/hier.h - the hierarchical all-reduce: its schedule within a node,
 * as pure functions (algo.h). Across the nodes it runs ring, rd or rhd as
 * they are (their own headers), on a group of workers (xfer.h's
 * rs_group_t).
 *
 * W = N x G workers, worker r on node r / G as local rank l = r mod G
 * (block placement, net/topo.h). A bucket of n elements is cut into G
 * blocks: block c is schedule.h's chunk c of G (rs__chunk_offset,
 * rs__chunk_elems: the first n mod G one element longer).
 *
 * 1. Reduce-scatter within each node, G-1 steps round a ring of its G
 *    workers, as Open MPI's ring MPI_Reduce_scatter runs it: in step s
 *    local rank l sends block l-1-s (mod G) to l+1 and adds block l-2-s
 *    from l-1 to its own. Block c's sum starts at local rank c+1 and ends
 *    at c, which then holds it: ((x[c+1] + x[c+2]) + ...) + x[c].
 * 2. All-reduce across the nodes: for each l, the N workers of local rank
 *    l (one per node, member k the worker of node k) all-reduce block l
 *    with the inner algorithm, all G groups at once. After it every
 *    worker holds its block summed over all W.
 * 3. All-gather within each node, G-1 steps round the same ring: in step s
 *    local rank l sends block l-s to l+1 and copies block l-1-s from l-1.
 *
 * Global steps (--inject): 0..G-2 the reduce-scatter, then the inner
 * algorithm's, then the all-gather's. Within a phase the steps are
 * numbered through (the trace's step): the reduce-scatter's G-1 steps
 * within the node come before the inner ring's or rhd's, whose all-gather
 * comes before the node's.
 */
#ifndef RINGSIM_ALGO_HIER_H
#define RINGSIM_ALGO_HIER_H

#include "base/schedule.h"
#include "net/topo.h"

/* The worker after rank, and before it, round its node's ring. */
static inline int rs__hier_next(rs_shape_t shape, int rank) {
  const int G = shape.gpus;
  return rank / G * G + rs__mod(rank + 1, G);
}
static inline int rs__hier_prev(rs_shape_t shape, int rank) {
  const int G = shape.gpus;
  return rank / G * G + rs__mod(rank - 1, G);
}

/* The block worker rank (local rank l) sends in step s of the node's
 * reduce-scatter or all-gather, and the one it receives. */
static inline int rs__hier_send_block(rs_shape_t shape, int rank,
                                      rs_phase_t phase, int s) {
  const int l = rank % shape.gpus;
  return rs__mod(phase == RS_PHASE_REDUCE_SCATTER ? l - 1 - s : l - s,
                 shape.gpus);
}
static inline int rs__hier_recv_block(rs_shape_t shape, int rank,
                                      rs_phase_t phase, int s) {
  return rs__hier_send_block(shape, rs__hier_prev(shape, rank), phase, s);
}

/* Whose contributions the block rank sends in step s of the node's
 * reduce-scatter holds: local ranks l-s .. l of its node, first the worker
 * of local rank l-s, count s+1. The range runs round the node's G ranks
 * (it wraps within the node, not round all W). */
static inline void rs__hier_contributors(rs_shape_t shape, int rank, int s,
                                         int *first, int *count) {
  const int G = shape.gpus;
  *first = rank / G * G + rs__mod(rank % G - s, G);
  *count = s + 1;
}

/* The narration across the nodes (algo/hier.c; nvlstree's too): inner
 * narrates its group of N members (one a node) to n, which tells each of
 * its messages for every local rank's group at once, local rank l's
 * columns l x cols .. (l + 1) x cols - 1 (the inner layout's regions of
 * l's block). */
struct rs_narrator;
struct rs_algo;
void rs__hier_narrate_across(struct rs_narrator *n, const struct rs_algo *inner,
                             int cols, int mean);

#endif /* RINGSIM_ALGO_HIER_H */
