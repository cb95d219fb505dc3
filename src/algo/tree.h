/* algo/tree.h - NCCL's double binary tree: its schedule, as pure functions
 * (algo.h). Learnt from NCCL's src/graph/trees.cc (ncclGetBtree,
 * ncclGetDtree) and written anew; tests/test_tree.c checks it against the
 * diagrams in that file.
 *
 * The binary tree ("btree") over ranks 0..W-1 is an in-order tree read off
 * each rank's lowest set bit b:
 * - rank x > 0 covers the ranks x-b+1 .. x+b-1 (cut off at W-1); its
 *   children are x-b/2 (left) and x+b/2 (right), the right one halved
 *   again while it lies beyond W-1; odd ranks (b = 1) are leaves;
 * - rank x's parent is x-b if x has bit 2b set (x is a right child), else
 *   x+b (a left child) or, when x+b is beyond W-1, x-b: x is then the
 *   shortened right child of x-b;
 * - rank 0 is the root, with one child: the largest power of two below W.
 * So the even ranks are the interior nodes and the odd ones the leaves.
 *
 * The second tree is the first with every rank renamed: mirrored (rank r
 * plays btree rank W-1-r) when W is even, shifted (r plays r-1 mod W) when
 * W is odd. Both renamings turn odd btree ranks into even ones and back, so
 * every rank that is a leaf in one tree is interior in the other, and no
 * rank is a leaf in both. The converse has one exception: with W odd
 * (W >= 3) rank 0 is the root of tree 0 and plays btree rank W-1 (even,
 * interior) in tree 1, so it is interior in both; with W even no rank is.
 * This is what NCCL's trees guarantee, and test_tree.c checks exactly it.
 *
 * A child's list is in NCCL's order: the btree's left child first, then
 * the right one, renamed (NCCL's tree->down[0], down[1]). A node reduces
 * its own data first, then down[0]'s, then down[1]'s: that is NCCL's
 * reduceCopy order (prims_simple.h puts the node's own buffer in srcs[0]
 * and the receive peers after it, and folds srcs[0], srcs[1], ... left to
 * right).
 *
 * A subtree is a range of ranks: a contiguous one in the btree (above),
 * still contiguous after mirroring, and contiguous modulo W after the
 * shift. So the provenance of a reduce message (rs_tag_t's contrib_first,
 * contrib_count, read mod W) is exact: no convention is needed.
 *
 * Data: a bucket is cut in two halves (rs__chunk_* with 2 chunks); tree t
 * all-reduces half t, as NCCL gives the first half of its channels (and so
 * the first half of the buffer) tree 0 and the second half tree 1
 * (graph/connect.cc: channel c and c + nChannels). Each half is cut into
 * H = ceil(W/2) chunks, each into the bucket's segs segments (schedule.h):
 * a tree chunk is then never larger than a ring chunk, so the run's
 * segment size and slot sizing hold. Tree t's chunk c is tagged chunk
 * t*H + c.
 */
#ifndef RINGSIM_ALGO_TREE_H
#define RINGSIM_ALGO_TREE_H

#include <stddef.h>

#include "algo/nccl.h"
#include "base/schedule.h"
#include "net/topo.h"

/* x's lowest set bit (x > 0). */
static inline int rs__tree_lowbit(int x) { return x & -x; }

/* The btree (tree 0, root 0) over W ranks: x's parent, or -1 for the
 * root. */
static inline int rs__btree_parent(int workers, int x) {
  if (x == 0)
    return -1;
  const int b = rs__tree_lowbit(x);
  if (x & (b << 1))
    return x - b; /* a right child */
  return x + b < workers ? x + b : x - b;
}

/* The btree's children of x, left then right, into children[2]; returns
 * how many. */
static inline int rs__btree_children(int workers, int x, int *children) {
  int n = 0;
  if (x == 0) {
    int top = 1;
    while (top * 2 < workers)
      top *= 2;
    if (workers > 1)
      children[n++] = top;
    return n;
  }
  const int half = rs__tree_lowbit(x) / 2;
  if (half == 0)
    return 0; /* odd ranks are leaves */
  children[n++] = x - half;
  int step = half;
  while (step > 0 && x + step >= workers)
    step /= 2; /* the right subtree is cut off at W-1: a smaller one */
  if (step > 0)
    children[n++] = x + step;
  return n;
}

/* The ranks the btree's subtree under x covers: *lo .. *hi. */
static inline void rs__btree_subtree(int workers, int x, int *lo, int *hi) {
  if (x == 0) {
    *lo = 0;
    *hi = workers - 1;
    return;
  }
  const int b = rs__tree_lowbit(x);
  *lo = x - b + 1;
  *hi = x + b - 1 < workers - 1 ? x + b - 1 : workers - 1;
}

/* Which btree rank worker `rank` plays in tree `tree` (0 or 1), and back. */
static inline int rs__tree_to_btree(int workers, int tree, int rank) {
  if (tree == 0)
    return rank;
  return workers % 2 == 0 ? workers - 1 - rank : rs__mod(rank - 1, workers);
}

static inline int rs__tree_from_btree(int workers, int tree, int x) {
  if (tree == 0 || x < 0)
    return x;
  return workers % 2 == 0 ? workers - 1 - x : (x + 1) % workers;
}

/* The root of tree `tree`: 0 for tree 0; W-1 (W even) or 1 (W odd) for
 * tree 1 (0 when W is 1). */
static inline int rs__tree_root(int workers, int tree) {
  return rs__tree_from_btree(workers, tree, 0);
}

/* Worker rank's parent in tree `tree`, or -1 at the root. */
static inline int rs__tree_parent(int workers, int tree, int rank) {
  return rs__tree_from_btree(
      workers, tree,
      rs__btree_parent(workers, rs__tree_to_btree(workers, tree, rank)));
}

/* Worker rank's children in tree `tree`, in the order it reduces them
 * (NCCL's down[0], down[1]), into children[2]; returns how many (0..2). */
static inline int rs__tree_children(int workers, int tree, int rank,
                                    int *children) {
  int n = rs__btree_children(workers, rs__tree_to_btree(workers, tree, rank),
                             children);
  for (int i = 0; i < n; i++)
    children[i] = rs__tree_from_btree(workers, tree, children[i]);
  return n;
}

/* How many edges worker rank lies below the root of tree `tree`: in the
 * reduce, a worker at depth L sends its sum up after every worker below it
 * has; in the broadcast, it gets the result L hops after the root. */
static inline int rs__tree_depth(int workers, int tree, int rank) {
  int d = 0;
  for (int x = rank; (x = rs__tree_parent(workers, tree, x)) >= 0;)
    d++;
  return d;
}

/* Whose contributions the reduce message `sender` sends its parent in
 * tree `tree` holds: its whole subtree, ranks *first .. *first+*count-1
 * mod W (a range; see the head comment). At the root, all W. */
static inline void rs__tree_contributors(int workers, int tree, int sender,
                                         int *first, int *count) {
  int lo, hi;
  rs__btree_subtree(workers, rs__tree_to_btree(workers, tree, sender), &lo,
                    &hi);
  *count = hi - lo + 1;
  if (tree == 0)
    *first = lo;
  else if (workers % 2 == 0)
    *first = workers - 1 - hi; /* the mirror reverses the range */
  else
    *first = (lo + 1) % workers; /* the shift moves it, maybe across 0 */
}

/* ---- on several nodes (a topology: rs_shape_t, net/topo.h) -------------
 *
 * NCCL's multi-node tree (src/graph/connect.cc, ncclTopoPreset and
 * connectTrees, with the tree pattern NCCL_TOPO_PATTERN_TREE): inside each
 * node the G GPUs form a chain, local rank l's parent l-1 and child l+1;
 * across the nodes the double binary tree above runs over the N nodes
 * (ncclGetDtree), each node there played by its chain's head (local rank
 * 0), which connects both up (to the parent node's head) and down (to the
 * child nodes' heads). So a head's children are, in NCCL's down[] order,
 * its chain child first, then the child nodes' heads (setTreeDown appends
 * them). Both trees share the chain; only the nodes' tree differs. With
 * one GPU per node this is the flat tree over W; on one node (G = W) the
 * flat tree is kept, so a one-node topology is --net.
 *
 * A subtree is still a range of ranks: below local rank l > 0 the chain's
 * tail, l .. G-1 of its node; below a head its node's subtree of nodes, a
 * range of nodes (mod N in tree 1), so of ranks. */

/* The most children a worker has (a head: its chain child and two nodes';
 * NCCL's NCCL_MAX_TREE_ARITY). */
#define RS_TREE_MAX_CHILDREN 3

static inline int rs__tree_nodes_of(rs_shape_t shape) {
  return shape.gpus < shape.workers ? shape.workers / shape.gpus : 1;
}

/* Worker rank's parent in tree `tree` of the shape, or -1 at the root. */
static inline int rs__tree_parent_in(rs_shape_t shape, int tree, int rank) {
  const int N = rs__tree_nodes_of(shape), G = shape.gpus;
  if (N == 1)
    return rs__tree_parent(shape.workers, tree, rank);
  if (rank % G)
    return rank - 1;
  const int up = rs__tree_parent(N, tree, rank / G);
  return up < 0 ? -1 : up * G;
}

/* Worker rank's children in tree `tree` of the shape, in the order it
 * reduces them (NCCL's down[]), into children[RS_TREE_MAX_CHILDREN];
 * returns how many. */
static inline int rs__tree_children_in(rs_shape_t shape, int tree, int rank,
                                       int *children) {
  const int N = rs__tree_nodes_of(shape), G = shape.gpus;
  if (N == 1)
    return rs__tree_children(shape.workers, tree, rank, children);
  int n = 0, nodes[2];
  if (rank % G < G - 1)
    children[n++] = rank + 1;
  const int k = rank % G ? 0 : rs__tree_children(N, tree, rank / G, nodes);
  for (int i = 0; i < k; i++)
    children[n++] = nodes[i] * G;
  return n;
}

/* The root of tree `tree`: worker 0 of its root node. */
static inline int rs__tree_root_in(rs_shape_t shape, int tree) {
  const int N = rs__tree_nodes_of(shape);
  return N == 1 ? rs__tree_root(shape.workers, tree)
                : rs__tree_root(N, tree) * shape.gpus;
}

/* How many edges worker rank lies below the root of tree `tree`. */
static inline int rs__tree_depth_in(rs_shape_t shape, int tree, int rank) {
  int d = 0;
  for (int x = rank; (x = rs__tree_parent_in(shape, tree, x)) >= 0;)
    d++;
  return d;
}

/* Whose contributions the reduce message `sender` sends its parent in tree
 * `tree` holds: *first .. *first+*count-1 mod W (its subtree). */
static inline void rs__tree_contributors_in(rs_shape_t shape, int tree,
                                            int sender, int *first,
                                            int *count) {
  const int N = rs__tree_nodes_of(shape), G = shape.gpus;
  if (N == 1) {
    rs__tree_contributors(shape.workers, tree, sender, first, count);
  } else if (sender % G) { /* the chain's tail */
    *first = sender;
    *count = G - sender % G;
  } else { /* its node's subtree of nodes, each node whole */
    rs__tree_contributors(N, tree, sender / G, first, count);
    *first *= G;
    *count *= G;
  }
}

/* ---- on NCCL's channels (--channels C > 1: algo/channels.h) ------------
 *
 * NCCL runs its trees on channels (src/graph/connect.cc): the tree graph's
 * search (search.cc, ncclTopoCompute) finds each channel's chain through
 * a node, NIC -> GPU -> ... -> GPU, and ncclTopoPreset gives each GPU of
 * it its chain parent (tree.up, the GPU before it) and child (down[0],
 * the GPU after it); connectTrees then links the nodes' chain heads
 * (treeToParent, treeToChild0/1: the chain's first GPU, in the TREE
 * pattern) into the double binary tree across nodes (ncclGetDtree), tree
 * 0 on channel c and tree 1 on its copy c + nChannels. Here channel c of
 * C runs one tree, rs_nccl_tree_of's (the first half of the channels tree
 * 0, the rest tree 1), over its own part of the bucket, with its chain
 * starting in every node at local GPU h = rs_nccl_tree_head (the GPU of
 * NIC c mod K, on a topology NCCL's model knows; else 0) and going up by
 * index: h, h+1, ..., h-1 (mod G). So the channels enter and leave a node
 * through different GPUs and NICs, as NCCL's do.
 *
 * Channel c's tree is the multi-node tree above with every node's GPUs
 * renamed: position i of node n's chain (worker n G + i above) is worker
 * n G + (h + i) mod G. A message's contributors then count round the
 * channel's order (rs__tree_ch_worker): the positions from that of
 * contrib_first on, as the ring's on channels count round its ring. On
 * one node, or without a topology, the order is the identity and channel
 * c runs the flat tree t over W. One channel is the pair of trees above,
 * unchanged. */

/* The channels the tree runs on: the shape's, or all its rings' where
 * the shape counts a bucket's busy ones alone (algo/channels.h's
 * rs__rings_busy_shape, which the NICs' load is made from); 1: the pair
 * of trees above. */
static inline int rs__tree_channels(rs_shape_t shape) {
  const rs_rings_t *g = shape.rings;
  const int C = shape.channels > 1 ? shape.channels : 1;
  return g && g->channels > C ? g->channels : C;
}

/* The tree channel ch runs (of rs__tree_channels'). */
static inline int rs__tree_ch_tree(rs_shape_t shape, int ch) {
  return rs_nccl_tree_of(ch, rs__tree_channels(shape));
}

/* The local GPU that leads channel ch's chain in every node (0 with
 * one channel, or none given). */
static inline int rs__tree_ch_head(rs_shape_t shape, int ch) {
  const rs_rings_t *g = shape.rings;
  return g && g->tree_head ? g->tree_head[ch] : 0;
}

/* The worker at position p of channel ch's order, and worker r's
 * position in it. */
static inline int rs__tree_ch_worker(rs_shape_t shape, int ch, int p) {
  const int G = shape.gpus, h = rs__tree_ch_head(shape, ch);
  if (p < 0 || h == 0 || rs__tree_nodes_of(shape) == 1)
    return p;
  return p / G * G + (p % G + h) % G;
}

static inline int rs__tree_ch_pos(rs_shape_t shape, int ch, int r) {
  const int G = shape.gpus, h = rs__tree_ch_head(shape, ch);
  if (h == 0 || rs__tree_nodes_of(shape) == 1)
    return r;
  return r / G * G + (r % G + G - h) % G;
}

/* Worker rank's parent in tree t of channel ch, or -1 at the root. */
static inline int rs__tree_ch_parent(rs_shape_t shape, int ch, int t,
                                     int rank) {
  return rs__tree_ch_worker(
      shape, ch,
      rs__tree_parent_in(shape, t, rs__tree_ch_pos(shape, ch, rank)));
}

/* Its children there, in the order it reduces them; returns how many. */
static inline int rs__tree_ch_children(rs_shape_t shape, int ch, int t,
                                       int rank, int *children) {
  const int n = rs__tree_children_in(shape, t, rs__tree_ch_pos(shape, ch, rank),
                                     children);
  for (int i = 0; i < n; i++)
    children[i] = rs__tree_ch_worker(shape, ch, children[i]);
  return n;
}

/* The root of tree t of channel ch. */
static inline int rs__tree_ch_root(rs_shape_t shape, int ch, int t) {
  return rs__tree_ch_worker(shape, ch, rs__tree_root_in(shape, t));
}

/* Whose contributions the reduce message `sender` sends its parent in
 * tree t of channel ch holds: *count workers of the channel's order from
 * *first's position on (mod W). */
static inline void rs__tree_ch_contributors(rs_shape_t shape, int ch, int t,
                                            int sender, int *first,
                                            int *count) {
  rs__tree_contributors_in(shape, t, rs__tree_ch_pos(shape, ch, sender), first,
                           count);
  *first = rs__tree_ch_worker(shape, ch, *first);
}

/* Chunks per half: ceil(W/2). */
static inline int rs__tree_chunks(int workers) { return (workers + 1) / 2; }

/* Where one segment of a tree's half lies: its region and its tag's chunk
 * and segment. */
typedef struct rs_tree_seg {
  size_t offset, len;
  int chunk;   /* t*H + c */
  int segment; /* within the chunk */
} rs_tree_seg_t;

/* Segment `index` (0 .. H*segs-1) of tree t's half of an elems-element
 * bucket. */
static inline rs_tree_seg_t rs__tree_segment(size_t elems, int workers,
                                             size_t segs, int tree,
                                             size_t index) {
  const int H = rs__tree_chunks(workers);
  const size_t half_off = rs__chunk_offset(elems, 2, tree);
  const size_t half_len = rs__chunk_elems(elems, 2, tree);
  const int c = (int)(index / segs);
  rs_tree_seg_t g = {.chunk = tree * H + c, .segment = (int)(index % segs)};
  rs__segment(half_len, H, segs, c, (size_t)g.segment, &g.offset, &g.len);
  g.offset += half_off;
  return g;
}

/* Segments per tree and bucket: H chunks of segs segments. */
static inline size_t rs__tree_segments(int workers, size_t segs) {
  return (size_t)rs__tree_chunks(workers) * segs;
}

/* The --inject steps: the reduce (step 0) and the broadcast (step 1). */
static inline int rs__tree_global_step(rs_phase_t phase) {
  return phase == RS_PHASE_REDUCE ? 0 : 1;
}

#endif /* RINGSIM_ALGO_TREE_H */
