/* algo/nccl_pipe.h - pipelined links as max-plus recurrences: the engine
 * under ringsim's NCCL prediction (nccl_predict.c), declared here so that
 * tests/test_nccl_predict.c checks it against hand-computed schedules.
 *
 * The rule (docs/algorithms.md, "Pipelined links"): a segment occupies
 * its sender's port for its wire time w and arrives a hop latency a after
 * it leaves the port; the next segment on that connection may leave once
 * the port is free and the receiver has a free slot (a slot is freed when
 * the segment `slots` earlier on the connection has arrived); a segment
 * that forwards data may leave only once that data has arrived. */
#ifndef RINGSIM_NCCL_PIPE_H
#define RINGSIM_NCCL_PIPE_H

/* A ring channel: `ranks` ranks, hop r from rank r to rank r+1 mod ranks
 * with latency hop_ns[r]; `steps` steps of `segs` segments each, every
 * segment but a step's last taking seg_ns of its port, the last last_ns.
 * In step s > 0, rank r+1 forwards segment k of what it received in step
 * s-1, so with q = s segs + k the q-th segment on hop r:
 *
 *   depart(r, q) = max(arrive(r-1, q - segs)       data (s > 0)
 *                      depart(r, q-1) + w(q-1)     port free
 *                      arrive(r, q - slots))       slot free
 *   arrive(r, q) = depart(r, q) + w(q) + hop_ns[r]
 *
 * Every rank starts at 0. A ring whose hops repeat with period P (nodes
 * alike) may be given as its first P ranks: each rank's times then
 * repeat too, and the recurrence is the same. With one segment a step and
 * hops alike this is the textbook steps (a + w).
 * Returns when the last segment arrives (ns): 0 with no steps or
 * segments, -1 when memory runs out. */
typedef struct rs__nccl_ring_pipe {
  int ranks, steps, segs, slots;
  double seg_ns, last_ns;
  const double *hop_ns; /* [ranks] */
} rs__nccl_ring_pipe_t;

double rs__nccl_ring_pipe_ns(const rs__nccl_ring_pipe_t *pipe);

/* A chain of `hops` hops that `segs` segments cross in order (a tree's
 * path up and down, NVLS's stages): hop h takes seg_ns[h] of its port per
 * segment (the last segment last_scale times that) and hop_ns[h] of
 * latency; segment k leaves hop h once it arrived from hop h-1 (hop 0:
 * at 0), the port is free and the slot of segment k - slots on hop h is.
 * Returns when the last segment arrives at the end (ns), 0 with no hops
 * or segments, -1 when memory runs out. */
typedef struct rs__nccl_chain_pipe {
  int hops, segs, slots;
  double last_scale;
  const double *seg_ns; /* [hops] */
  const double *hop_ns; /* [hops] */
} rs__nccl_chain_pipe_t;

double rs__nccl_chain_pipe_ns(const rs__nccl_chain_pipe_t *pipe);

#endif /* RINGSIM_NCCL_PIPE_H */
