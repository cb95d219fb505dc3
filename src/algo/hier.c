/* algo/hier.c - the hierarchical all-reduce (Horovod's hierarchical
 * allreduce, Open MPI's HAN; the schedule within a node is in
 * algo/hier.h): reduce-scatter within each node, all-reduce of each block
 * across the nodes, all-gather within the node.
 *
 * Across the nodes it runs ring, rd or rhd unchanged (hier, hier:rd,
 * hier:rhd) on a group of workers, as MPI runs a collective on a
 * communicator: worker rank r's group is the N workers of its local rank,
 * and the algorithm sees them as members 0..N-1 (xfer.h's rs_group_t maps
 * them back). The G groups run at once; their simulations run one after
 * the other, which gives the same clocks, as no group's message waits for
 * another's (a topology's sharing is the schedule's, net/topo.h).
 *
 * Bit for bit it is Open MPI's composition (tests/test_mpi.py):
 * MPI_Comm_split by node, ring MPI_Reduce_scatter within it,
 * MPI_Allreduce with the inner algorithm among the same local ranks, and
 * MPI_Allgatherv within the node. On one node (G = W, --net or no
 * topology) it is the reduce-scatter and all-gather alone: a ring.
 */
#include "algo/hier.h"

#include <stdio.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/narrate.h"
#include "algo/rd.h"
#include "algo/ring.h"
#include "net/xfer.h"

/* The inner algorithm, and what hier needs to know of it. */
typedef struct hier_way {
  const rs_algo_t *inner;
  int (*cols)(int nodes);     /* its layout's regions on N members */
  int (*ag_steps)(int nodes); /* its steps in RS_PHASE_ALL_GATHER */
  const char *words;          /* what it does, for the narration */
} hier_way_t;

/* hier with one inner algorithm (h) on the workers' shape: what each
 * entry of its rs_algo_t hands the helpers below. */
typedef struct hier_on {
  const hier_way_t *h;
  rs_shape_t shape;
} hier_on_t;

static int nodes_of(rs_shape_t shape) { return shape.workers / shape.gpus; }

/* The inner algorithm's steps (none on one node). */
static int inner_steps(const hier_way_t *h, rs_shape_t shape) {
  const int N = nodes_of(shape);
  return N > 1 ? h->inner->steps(rs__shape_flat(N), RS_COLL_ALLREDUCE) : 0;
}

/* Worker rank's group across the nodes: the workers of its local rank. */
static rs_group_t group_of(rs_shape_t shape, int rank) {
  const int G = shape.gpus;
  rs_group_t g = {.first = rank % G, .stride = G, .step_base = G - 1};
  g.phase_step[RS_PHASE_REDUCE_SCATTER] = G - 1;
  return g;
}

/* The most elements one message within the node carries (a segment of
 * the largest block), and how many segments a block moves as. */
static size_t block_segs(rs_shape_t shape, size_t elems, size_t cap) {
  return rs__segs(rs__chunk_elems(elems, shape.gpus, 0), cap);
}

/* Step s of the node's ring in phase: send our block to the next worker
 * and receive the previous worker's, segment by segment (a sendrecv). The
 * trace calls it step `label` of the phase, global step `global`. */
static int node_step(rs_worker_t *w, rs_phase_t phase, int s, int label,
                     int global, rs_recv_action_t action) {
  const rs_shape_t shape = w->shape;
  const int G = shape.gpus, r = w->rank;
  const size_t n = w->elems;
  const int out_b = rs__hier_send_block(shape, r, phase, s);
  const int in_b = rs__hier_recv_block(shape, r, phase, s);
  rs_part_t out = {rs__hier_next(shape, r),
                   rs__chunk_offset(n, G, out_b),
                   rs__chunk_elems(n, G, out_b),
                   {phase, label, out_b, 0, 0, shape.workers}};
  rs_part_t in = {rs__hier_prev(shape, r),
                  rs__chunk_offset(n, G, in_b),
                  rs__chunk_elems(n, G, in_b),
                  {phase, label, in_b, 0, 0, shape.workers}};
  if (phase == RS_PHASE_REDUCE_SCATTER) {
    rs__hier_contributors(shape, r, s, &out.tag.contrib_first,
                          &out.tag.contrib_count);
    rs__hier_contributors(shape, in.peer, s, &in.tag.contrib_first,
                          &in.tag.contrib_count);
  }
  int rc = rs__xfer_step(w, phase, label, global, 1);
  return rc ? rc
            : rs__xfer_sendrecv(w, &out, &in, action,
                                block_segs(shape, n, w->seg_cap));
}

/* The inner algorithm on worker w's block, w seen as a member of its
 * group; w is itself again after. */
static int across(const hier_way_t *h, rs_worker_t *w) {
  const rs_shape_t shape = w->shape;
  const int G = shape.gpus, r = w->rank, W = w->workers;
  const size_t base = w->base, elems = w->elems;
  const int l = r % G;
  w->group = group_of(shape, r);
  w->rank = r / G;
  w->workers = nodes_of(shape);
  w->base = base + rs__chunk_offset(elems, G, l);
  w->elems = rs__chunk_elems(elems, G, l);
  int rc = h->inner->run_bucket(w);
  w->group = (rs_group_t){0};
  w->rank = r;
  w->workers = W;
  w->base = base;
  w->elems = elems;
  return rc;
}

static int run(const hier_way_t *h, rs_worker_t *w) {
  const rs_shape_t shape = w->shape;
  const int G = shape.gpus, N = nodes_of(shape);
  const int mean = w->op == RS_OP_AVG && !w->average;
  const int inner = inner_steps(h, shape);
  int rc;
  for (int s = 0; s < G - 1; s++) /* the sum is complete on one node */
    if ((rc = node_step(w, RS_PHASE_REDUCE_SCATTER, s, s, s,
                        mean && N == 1 && s == G - 2 ? RS_RECV_REDUCE_MEAN
                                                     : RS_RECV_REDUCE)))
      return rc;
  if (N > 1 && (rc = across(h, w)))
    return rc;
  for (int s = 0; s < G - 1; s++)
    if ((rc = node_step(w, RS_PHASE_ALL_GATHER, s,
                        s + (N > 1 ? h->ag_steps(N) : 0), G - 1 + inner + s,
                        RS_RECV_COPY)))
      return rc;
  return RS_OK;
}

/* A local rank's part of a node step, as every node's worker of that
 * rank takes it: its neighbours, and its blocks cut into segments. */
typedef struct node_cut {
  int next, prev;
  rs_cut_t out, in;
} node_cut_t;

/* The node's ring steps on simulated clocks alone: every worker sends its
 * block's segment k, then every worker receives. (cut: room for G.) */
static void sim_node_step(rs_simrun_t *s, size_t n, rs_phase_t phase, int step,
                          node_cut_t *cut) {
  const rs_shape_t shape = s->shape;
  const int G = shape.gpus;
  const size_t segs = block_segs(shape, n, s->cap);
  for (int l = 0; l < G; l++) { /* (node 0's ranks stand for every node's) */
    const size_t out =
        rs__chunk_elems(n, G, rs__hier_send_block(shape, l, phase, step));
    const size_t in =
        rs__chunk_elems(n, G, rs__hier_recv_block(shape, l, phase, step));
    cut[l] = (node_cut_t){rs__hier_next(shape, l), rs__hier_prev(shape, l),
                          rs__cut(out, segs), rs__cut(in, segs)};
  }
  /* the blocks are one element apart: rounds k..last cut both alike
   * (simrun.h's steady repeats) */
  const size_t small = n / (size_t)G, large = small + 1;
  const int reduced = phase == RS_PHASE_REDUCE_SCATTER;
  rs_simrepeat_t rep = RS_SIMREPEAT_INIT;
  rs__simrun_step(s);
  for (size_t k = 0; k < segs && !rs__simrun_stopped(s); k++) {
    const size_t a = rs__same_len_last(small, segs, k),
                 b = rs__same_len_last(large, segs, k);
    rs__simrepeat_begin(s, &rep, k, a < b ? a : b);
    for (int node = 0; node < shape.workers; node += G)
      for (int l = 0; l < G; l++)
        rs__simrun_send(s, node + l, node + cut[l].next,
                        rs__cut_len(cut[l].out, k));
    for (int node = 0; node < shape.workers; node += G)
      for (int l = 0; l < G; l++)
        rs__simrun_recv(s, node + l, node + cut[l].prev,
                        reduced ? rs__cut_len(cut[l].in, k) : 0);
    k = rs__simrepeat_end(s, &rep, k);
  }
}

/* The scratch: the node steps' cut (G), then the inner algorithm's (on N
 * members: the groups use it in turn), at a multiple of 64 bytes. */
static size_t cut_bytes(rs_shape_t shape) {
  return ((size_t)shape.gpus * sizeof(node_cut_t) + 63) / 64 * 64;
}

static size_t sim_scratch(const hier_on_t *on) {
  const hier_way_t *h = on->h;
  const rs_shape_t shape = on->shape;
  const rs_algo_t *a = h->inner;
  return cut_bytes(shape) +
         (a->sim_scratch ? a->sim_scratch(rs__shape_flat(nodes_of(shape))) : 0);
}

static void sim(const hier_way_t *h, rs_simrun_t *s, size_t n, size_t segs) {
  const rs_shape_t shape = s->shape;
  const int G = shape.gpus, N = nodes_of(shape);
  node_cut_t *cut = s->algo_mem;
  for (int step = 0; step < G - 1; step++)
    sim_node_step(s, n, RS_PHASE_REDUCE_SCATTER, step, cut);
  if (N > 1) { /* each local rank's group in turn, from the same step */
    int end = s->step;
    for (int l = 0; l < G; l++) {
      rs_simrun_t v = *s;
      v.shape = rs__shape_flat(N);
      v.group = group_of(shape, l);
      v.algo_mem = (char *)s->algo_mem + cut_bytes(shape);
      h->inner->sim_bucket(&v, rs__chunk_elems(n, G, l), segs);
      end = v.step;
      s->over |= v.over;
      s->nomem |= v.nomem;
    }
    s->step = end;
  }
  for (int step = 0; step < G - 1; step++)
    sim_node_step(s, n, RS_PHASE_ALL_GATHER, step, cut);
}

/* A step's rounds and smallest segment (algo.h): a node step's blocks,
 * n / G rounded down or up, each cut as the largest; across, the inner
 * algorithm's for a block of either size, the fewer and the smaller. */
static size_t step_least(const hier_on_t *on, int step, size_t elems,
                         size_t segs, size_t cap, size_t *rounds) {
  const hier_way_t *h = on->h;
  const rs_shape_t shape = on->shape;
  const int G = shape.gpus, inner = inner_steps(h, shape);
  const size_t block = elems / (size_t)G;
  if (step < G - 1 || step >= G - 1 + inner) {
    *rounds = block_segs(shape, elems, cap);
    return block / *rounds;
  }
  const rs_shape_t flat = rs__shape_flat(nodes_of(shape));
  size_t low_rounds, high_rounds;
  const size_t low = h->inner->step_least(flat, step - (G - 1), block, segs,
                                          cap, &low_rounds),
               high = h->inner->step_least(flat, step - (G - 1), block + 1,
                                           segs, cap, &high_rounds);
  *rounds = low_rounds < high_rounds ? low_rounds : high_rounds;
  return low < high ? low : high;
}

/* Edges: the node's ring, and the inner algorithm's among the group. */
static int peers(const hier_on_t *on, int rank, int *peers, int sending) {
  const hier_way_t *h = on->h;
  const rs_shape_t shape = on->shape;
  const int G = shape.gpus, N = nodes_of(shape);
  int count = 0;
  if (G > 1)
    peers[count++] =
        sending ? rs__hier_next(shape, rank) : rs__hier_prev(shape, rank);
  if (N > 1) {
    const rs_algo_t *a = h->inner;
    int k = (sending ? a->send_peers : a->recv_peers)(rs__shape_flat(N),
                                                      rank / G, peers + count);
    for (int i = 0; i < k; i++)
      peers[count + i] = rank % G + G * peers[count + i];
    count += k;
  }
  return count;
}

static size_t message_elems(const hier_on_t *on, int from, int to, size_t elems,
                            size_t segs, size_t cap) {
  const hier_way_t *h = on->h;
  const rs_shape_t shape = on->shape;
  const int G = shape.gpus;
  const size_t block = rs__chunk_elems(elems, G, 0);
  if (from / G == to / G) { /* a segment of the largest block */
    const size_t segs_in = block_segs(shape, elems, cap);
    return (block + segs_in - 1) / segs_in;
  }
  return h->inner->message_elems(rs__shape_flat(nodes_of(shape)), from / G,
                                 to / G, block, segs, cap);
}

static size_t messages(const hier_on_t *on, int rank, size_t elems, size_t segs,
                       size_t cap) {
  const hier_way_t *h = on->h;
  const rs_shape_t shape = on->shape;
  const int G = shape.gpus, N = nodes_of(shape);
  const size_t block = rs__chunk_elems(elems, G, 0);
  size_t count = 2 * (size_t)(G - 1) * block_segs(shape, elems, cap);
  if (N > 1)
    count += h->inner->messages(rs__shape_flat(N), rank / G, block, segs, cap,
                                RS_COLL_ALLREDUCE);
  return count;
}

static int steps(const hier_on_t *on) {
  const hier_way_t *h = on->h;
  const rs_shape_t shape = on->shape;
  return 2 * (shape.gpus - 1) + inner_steps(h, shape);
}

/* Within the node every step sends to the next worker round it; across,
 * the inner algorithm's sends, among the group. */
static int sends(const hier_on_t *on, int step, int rank, int *dst, int max) {
  const hier_way_t *h = on->h;
  const rs_shape_t shape = on->shape;
  const int G = shape.gpus, inner = inner_steps(h, shape);
  if (step < G - 1 || step >= G - 1 + inner) {
    dst[0] = rs__hier_next(shape, rank);
    return 1;
  }
  int k = h->inner->sends(rs__shape_flat(nodes_of(shape)), step - (G - 1),
                          rank / G, dst, max);
  for (int i = 0; i < k; i++)
    dst[i] = rank % G + G * dst[i];
  return k;
}

static int depth(const hier_on_t *on) {
  const hier_way_t *h = on->h;
  const rs_shape_t shape = on->shape;
  const int N = nodes_of(shape);
  return shape.gpus - 1 + (N > 1 ? h->inner->depth(rs__shape_flat(N)) : 0);
}

/* The regions: each block cut as the inner algorithm cuts it (one region
 * per block on one node), block after block. */
static int layout(const hier_on_t *on, size_t elems, size_t cap,
                  size_t *offsets, const char **word, const char **words) {
  const hier_way_t *h = on->h;
  const rs_shape_t shape = on->shape;
  const int G = shape.gpus, N = nodes_of(shape);
  int count = 0;
  *word = "block";
  *words = "blocks";
  for (int l = 0; l < G; l++) {
    const size_t off = rs__chunk_offset(elems, G, l);
    int k = 1;
    offsets[count] = 0;
    if (N > 1 && h->cols(N) > 1)
      k = h->inner->layout(rs__shape_flat(N), rs__chunk_elems(elems, G, l), cap,
                           offsets + count, word, words);
    for (int j = 0; j < k; j++)
      offsets[count + j] += off;
    count += k;
  }
  offsets[count] = elems;
  return count;
}

/* The narration across the nodes: the inner algorithm narrates its group
 * of N members to this narrator, which tells each of its messages for
 * every local rank's group at once, in the hierarchy's columns. */
typedef struct hier_narr {
  rs_narrator_t pub; /* first: what the inner narrate sees */
  rs_narrator_t *outer;
  int cols; /* the inner layout's regions per block */
} hier_narr_t;

static void narr_vsay(rs_narrator_t *n, const char *fmt, va_list ap) {
  (void)n, (void)fmt, (void)ap; /* hier says it in its own words */
}

static void narr_begin(rs_narrator_t *n) {
  rs__narr_begin(((hier_narr_t *)n)->outer);
}

static void narr_send(rs_narrator_t *n, int src, int dst, int first, int end,
                      rs_recv_action_t action) {
  hier_narr_t *h = (hier_narr_t *)n;
  const int G = h->outer->shape.gpus;
  for (int l = 0; l < G; l++)
    rs__narr_send(h->outer, l + G * src, l + G * dst, l * h->cols + first,
                  l * h->cols + end, action);
}

static void narr_stash(rs_narrator_t *n, int rank) {
  hier_narr_t *h = (hier_narr_t *)n;
  for (int l = 0; l < h->outer->shape.gpus; l++)
    rs__narr_stash(h->outer, l + h->outer->shape.gpus * rank);
}

static void narr_end(rs_narrator_t *n, const char *title) {
  char across[96];
  snprintf(across, sizeof across, "across nodes, %s", title);
  rs__narr_end(((hier_narr_t *)n)->outer, across);
}

static void narr_owners(rs_narrator_t *n, const char *phase) {
  (void)n, (void)phase; /* the blocks are whole only after the node's */
}

static const rs_narrate_ops_t across_ops = {
    narr_vsay, narr_begin, narr_send, narr_stash, narr_end, narr_owners};

void rs__hier_narrate_across(rs_narrator_t *n, const rs_algo_t *inner,
                             int cols, int mean) {
  const int N = nodes_of(n->shape);
  hier_narr_t across = {.pub = *n, .outer = n, .cols = cols};
  across.pub.ops = &across_ops;
  across.pub.workers = N;
  across.pub.shape = rs__shape_flat(N);
  across.pub.steps = 0;
  inner->narrate(&across.pub, mean);
}

/* The node's ring steps of one phase, told. */
static void narrate_node(rs_narrator_t *n, int cols, rs_phase_t phase,
                         int mean) {
  const rs_shape_t shape = n->shape;
  const int G = shape.gpus, N = nodes_of(shape);
  const int rs = phase == RS_PHASE_REDUCE_SCATTER;
  char title[64];
  for (int step = 0; step < G - 1; step++) {
    rs__narr_begin(n);
    for (int r = 0; r < shape.workers; r++) {
      const int b = rs__hier_send_block(shape, r, phase, step);
      rs__narr_send(n, r, rs__hier_next(shape, r), b * cols, (b + 1) * cols,
                    !rs                               ? RS_RECV_COPY
                    : mean && N == 1 && step == G - 2 ? RS_RECV_REDUCE_MEAN
                                                      : RS_RECV_REDUCE);
    }
    snprintf(title, sizeof title, "within nodes, %s step %d",
             rs ? "reduce-scatter" : "all-gather", step);
    rs__narr_end(n, title);
  }
}

static void narrate(const hier_way_t *h, rs_narrator_t *n, int mean) {
  const rs_shape_t shape = n->shape;
  const int G = shape.gpus, N = nodes_of(shape);
  const int cols = N > 1 ? h->cols(N) : 1;
  rs__narr_say(n,
               "\n%d node%s of %d: each bucket is cut into %d blocks, one per "
               "local rank.\n\nwithin each node, reduce-scatter: %d step%s "
               "round the node's ring; in each, every worker sends one block "
               "to the next worker of its node and %s the block it "
               "receives. Local rank l then holds block l summed over its "
               "node.\n",
               N, N == 1 ? "" : "s", G, G, G - 1, G == 2 ? "" : "s",
               n->fold_phrase);
  narrate_node(n, cols, RS_PHASE_REDUCE_SCATTER, mean);
  if (N > 1) {
    rs__narr_say(n,
                 "\nacross the nodes: the %d workers of each local rank l, "
                 "one per node, %s on block l; the %d local ranks at once.\n",
                 N, h->words, G);
    rs__hier_narrate_across(n, h->inner, cols, mean);
    rs__narr_owners(n, "the all-reduce across nodes");
  }
  rs__narr_say(n,
               "\nwithin each node, all-gather: %d step%s round the node's "
               "ring; in each, every worker sends one block to the next "
               "worker and copies the one it receives over its own.\n",
               G - 1, G == 2 ? "" : "s");
  narrate_node(n, cols, RS_PHASE_ALL_GATHER, 0);
  rs__narr_say(n,
               "\nEvery worker now holds every block %s all %d workers: "
               "%d step%s, of which %d cross the nodes.\n",
               n->result, shape.workers, n->steps, n->steps == 1 ? "" : "s",
               inner_steps(h, shape));
}

/* Columns and all-gather steps of the inner algorithms on N members. */
static int ring_cols(int nodes) { return nodes; }
static int one_col(int nodes) { return (void)nodes, 1; }
static int rhd_cols(int nodes) { return rs__pof2(nodes); }
static int ring_ag(int nodes) { return nodes - 1; }
static int no_ag(int nodes) { return (void)nodes, 0; }
static int rhd_ag(int nodes) { return rs__log2(rs__pof2(nodes)); }

/* One rs_algo_t per inner algorithm: its hooks are hier's with its way. It
 * needs nodes; its prediction is its schedule simulated (no closed
 * formula); NCCL has no algorithm by its name. */
#define HIER_ALGO(NAME, ALIAS, ID, INNER, COLS, AG, WORDS)                     \
  static const hier_way_t way_##ID = {&INNER, COLS, AG, WORDS};                \
  extern const rs_algo_t rs__algo_##ID;                                        \
  static int ID##_send_peers(rs_shape_t sh, int r, int *p) {                   \
    return peers(&(hier_on_t){&way_##ID, sh}, r, p, 1);                        \
  }                                                                            \
  static int ID##_recv_peers(rs_shape_t sh, int r, int *p) {                   \
    return peers(&(hier_on_t){&way_##ID, sh}, r, p, 0);                        \
  }                                                                            \
  static size_t ID##_message_elems(rs_shape_t sh, int from, int to, size_t n,  \
                                   size_t segs, size_t cap) {                  \
    return message_elems(&(hier_on_t){&way_##ID, sh}, from, to, n, segs, cap); \
  }                                                                            \
  static size_t ID##_messages(rs_shape_t sh, int r, size_t n, size_t segs,     \
                              size_t cap, rs_collective_t c) {                 \
    return (void)c, messages(&(hier_on_t){&way_##ID, sh}, r, n, segs, cap);    \
  }                                                                            \
  static int ID##_steps(rs_shape_t sh, rs_collective_t c) {                    \
    return (void)c, steps(&(hier_on_t){&way_##ID, sh});                        \
  }                                                                            \
  static int ID##_sends(rs_shape_t sh, int step, int r, int *dst, int max) {   \
    return sends(&(hier_on_t){&way_##ID, sh}, step, r, dst, max);              \
  }                                                                            \
  static int ID##_depth(rs_shape_t sh) {                                       \
    return depth(&(hier_on_t){&way_##ID, sh});                                 \
  }                                                                            \
  static size_t ID##_step_least(rs_shape_t sh, int step, size_t n,             \
                                size_t segs, size_t cap, size_t *rounds) {     \
    return step_least(&(hier_on_t){&way_##ID, sh}, step, n, segs, cap,         \
                      rounds);                                                 \
  }                                                                            \
  static uint64_t ID##_predict(const rs_netmodel_t *m, rs_shape_t sh,          \
                               size_t n, size_t segs, size_t cap, size_t es) { \
    return (void)segs,                                                         \
           rs__algo_predict_alone(&rs__algo_##ID, m, sh, n, cap, es);          \
  }                                                                            \
  static void ID##_sim(rs_simrun_t *s, size_t n, size_t segs) {                \
    sim(&way_##ID, s, n, segs);                                                \
  }                                                                            \
  static size_t ID##_scratch(rs_shape_t sh) {                                  \
    return sim_scratch(&(hier_on_t){&way_##ID, sh});                           \
  }                                                                            \
  static int ID##_layout(rs_shape_t sh, size_t n, size_t cap, size_t *off,     \
                         const char **word, const char **words) {              \
    return layout(&(hier_on_t){&way_##ID, sh}, n, cap, off, word, words);      \
  }                                                                            \
  static void ID##_narrate(rs_narrator_t *nr, int mean) {                      \
    narrate(&way_##ID, nr, mean);                                              \
  }                                                                            \
  static int ID##_run(rs_worker_t *w) { return run(&way_##ID, w); }            \
  const rs_algo_t rs__algo_##ID = {.name = NAME,                               \
                                   .alias = ALIAS,                             \
                                   .caps = RS__CAP_TOPOLOGY | RS__CAP_AUTO,    \
                                   .send_peers = ID##_send_peers,              \
                                   .recv_peers = ID##_recv_peers,              \
                                   .message_elems = ID##_message_elems,        \
                                   .direct_slots = rs__algo_never_direct,      \
                                   .messages = ID##_messages,                  \
                                   .steps = ID##_steps,                        \
                                   .sends = ID##_sends,                        \
                                   .depth = ID##_depth,                        \
                                   .predict = ID##_predict,                    \
                                   .sim_bucket = ID##_sim,                     \
                                   .sim_scratch = ID##_scratch,                \
                                   .step_least = ID##_step_least,              \
                                   .title = "hierarchical all-reduce",         \
                                   .layout = ID##_layout,                      \
                                   .narrate = ID##_narrate,                    \
                                   .run_bucket = ID##_run};

HIER_ALGO("hier", "hier:ring", hier, rs__algo_ring, ring_cols, ring_ag,
          "all-reduce it round a ring (the ring all-reduce)")
HIER_ALGO("hier:rd", NULL, hier_rd, rs__algo_rd, one_col, no_ag,
          "all-reduce it by recursive doubling")
HIER_ALGO("hier:rhd", NULL, hier_rhd, rs__algo_rhd, rhd_cols, rhd_ag,
          "all-reduce it by Rabenseifner's halving and doubling")
