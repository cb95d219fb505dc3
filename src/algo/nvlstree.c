/* algo/nvlstree.c - NCCL's NVLSTree (NCCL_ALGO_NVLS_TREE): NVLink SHARP
 * within each node, a tree across the nodes, on N nodes of G GPUs whose
 * NVLink switch reduces (dgx-h100,nodes=N).
 *
 * 1. Within each node, NVLS's reduce (algo/nvls.h): GPU l of the node
 *    heads shard l of the bucket (G shards) and, round by round, takes in
 *    its node's sum of it through the switch.
 * 2. Across the nodes, the N heads of shard l (local rank l, one a node)
 *    all-reduce it with NCCL's double binary tree (algo/tree.c, run on
 *    their group as hier runs its inner algorithm: xfer.h's rs_group_t,
 *    member m standing for node m's G workers), each through its own NIC
 *    (GPU l's): NCCL's NVLSTree heads, one a NIC (src/graph/connect.cc,
 *    the NVLS tree's up and down links; src/device/all_reduce.h,
 *    RunWorkColl for NCCL_ALGO_NVLS_TREE). Its root's last add divides by
 *    W for avg.
 * 3. Within each node, NVLS's multicast: each head writes its shard's
 *    result to every GPU of its node through the switch.
 *
 * The data moves for real between the worker threads in that order. On
 * the simulated clock the reduce streams as nvls's does (a put's data is
 * ready at the bucket's start); from the tree on, each send waits for the
 * worker's receives before it (program order), where NCCL pipelines the
 * three stages chunk by chunk: ringsim's NVLSTree is the stages one after
 * another, each pipelined in itself (docs/algorithms.md).
 */
#include <stdio.h>

#include "algo/algo.h"
#include "algo/hier.h"
#include "algo/narrate.h"
#include "algo/nvls.h"
#include "algo/tree.h"
#include "net/netmodel.h"
#include "net/xfer.h"

static int nodes_of(rs_shape_t shape) { return shape.workers / shape.gpus; }

/* The segments a shard is cut into within the node: at most cap elements
 * each (the largest shard's). */
static size_t node_segs(rs_shape_t shape, size_t elems, size_t cap) {
  return rs__segs(rs__chunk_elems(elems, shape.gpus, 0), cap);
}

/* The segments a chunk of the tree across N nodes is cut into, for a
 * shard of `shard` elements: each tree's half in rs__tree_chunks(N)
 * chunks, at most cap elements a segment. */
static size_t tree_segs(int N, size_t shard, size_t cap) {
  const size_t half = rs__chunk_elems(shard, 2, 0);
  return rs__segs(rs__chunk_elems(half, rs__tree_chunks(N), 0), cap);
}

/* Worker rank's node, as a group of G members (the node's GPUs). */
static rs_group_t node_group(rs_shape_t shape, int rank) {
  return (rs_group_t){.first = rank / shape.gpus * shape.gpus, .stride = 1};
}

/* Worker rank's heads across the nodes: the N workers of its local rank,
 * member m for node m; the tree's steps are the collective's 1 and 2. */
static rs_group_t heads_group(rs_shape_t shape, int rank) {
  return (rs_group_t){
      .first = rank % shape.gpus, .stride = shape.gpus, .step_base = 1};
}

/* The tree across the nodes on worker w's shard; w is itself again
 * after. */
static int across(rs_worker_t *w, size_t elems) {
  const rs_shape_t shape = w->shape;
  const int G = shape.gpus, r = w->rank;
  const size_t base = w->base, segs = w->segs_per_chunk;
  w->group = heads_group(shape, r);
  w->rank = r / G;
  w->workers = nodes_of(shape);
  w->base = base + rs__chunk_offset(elems, G, r % G);
  w->elems = rs__chunk_elems(elems, G, r % G);
  w->segs_per_chunk = tree_segs(w->workers, w->elems, w->seg_cap);
  const int rc = rs__algo_tree.run_bucket(w);
  w->rank = r;
  w->base = base;
  w->elems = elems;
  w->segs_per_chunk = segs;
  return rc;
}

static int nvlstree_bucket(rs_worker_t *w) {
  const rs_shape_t shape = w->shape;
  const int G = shape.gpus, r = w->rank, W = w->workers;
  const size_t elems = w->elems, ns = node_segs(shape, elems, w->seg_cap);
  /* 1: the node's sums, each shard at its head */
  w->group = node_group(shape, r);
  w->rank = r % G;
  w->workers = G;
  int rc = rs__xfer_step(w, RS_PHASE_REDUCE_SCATTER, 0, 0, 1);
  for (size_t k = 0; k < ns && !rc; k++)
    rc = rs__nvls_reduce_round(w, ns, k, 0);
  w->sim.stream = 0; /* (from here on, program order: the header) */
  w->rank = r;
  w->workers = W;
  /* 2: each shard's heads across the nodes */
  if (!rc)
    rc = across(w, elems);
  /* 3: the result, to the node */
  w->group = node_group(shape, r);
  w->rank = r % G;
  w->workers = G;
  if (!rc)
    rc = rs__xfer_step(w, RS_PHASE_ALL_GATHER, 0, 3, 1);
  for (size_t k = 0; k < ns && !rc; k++)
    rc = rs__nvls_multicast_round(w, ns, k);
  w->group = (rs_group_t){0};
  w->rank = r;
  w->workers = W;
  return rc;
}

/* One bucket on simulated clocks alone, stage by stage as the threads run
 * it (each worker's calls in its own order); the trees of the G local
 * ranks one after another from the same step, as hier's groups. */
static void sim_bucket(rs_simrun_t *s, size_t elems, size_t segs) {
  (void)segs;
  const rs_shape_t shape = s->shape;
  const int G = shape.gpus, N = nodes_of(shape);
  const size_t ns = node_segs(shape, elems, s->cap);
  rs__simrun_step(s);
  for (size_t k = 0; k < ns && !rs__simrun_stopped(s); k++)
    for (int node = 0; node < N; node++)
      rs__nvls_sim_reduce_round(s, node * G, G, elems, ns, k);
  for (int r = 0; r < shape.workers; r++)
    s->clocks[r].stream = 0;
  int end = s->step;
  for (int l = 0; l < G && !rs__simrun_stopped(s); l++) {
    const size_t shard = rs__chunk_elems(elems, G, l);
    rs_simrun_t v = *s;
    v.shape = rs__shape_flat(N);
    v.group = (rs_group_t){.first = l, .stride = G};
    rs__algo_tree.sim_bucket(&v, shard, tree_segs(N, shard, s->cap));
    end = v.step;
    s->over |= v.over;
    s->nomem |= v.nomem;
  }
  s->step = end;
  rs__simrun_step(s);
  for (size_t k = 0; k < ns && !rs__simrun_stopped(s); k++)
    for (int node = 0; node < N; node++)
      rs__nvls_sim_multicast_round(s, node * G, G, elems, ns, k);
}

/* The tree's scratch, for its N members. */
static size_t sim_scratch(rs_shape_t shape) {
  const rs_algo_t *t = &rs__algo_tree;
  return t->sim_scratch ? t->sim_scratch(rs__shape_flat(nodes_of(shape))) : 0;
}

/* Edges: every other GPU of the node, and the tree's across the nodes
 * among the same local rank. */
static int peers(rs_shape_t shape, int rank, int *out, int sending) {
  const int G = shape.gpus, first = rank / G * G;
  int n = 0;
  for (int d = 1; d < G; d++)
    out[n++] = first + rs__nvls_to(G, rank % G, d);
  const rs_algo_t *t = &rs__algo_tree;
  const int k = (sending ? t->send_peers : t->recv_peers)(
      rs__shape_flat(nodes_of(shape)), rank / G, out + n);
  for (int i = 0; i < k; i++)
    out[n + i] = rank % G + G * out[n + i];
  return n + k;
}
static int send_peers(rs_shape_t shape, int rank, int *out) {
  return peers(shape, rank, out, 1);
}
static int recv_peers(rs_shape_t shape, int rank, int *out) {
  return peers(shape, rank, out, 0);
}

/* Within the node a segment of a shard; across, the tree's on a shard. */
static size_t message_elems(rs_shape_t shape, int from, int to, size_t elems,
                            size_t segs, size_t cap) {
  (void)segs;
  const int G = shape.gpus, N = nodes_of(shape);
  const size_t shard = rs__chunk_elems(elems, G, 0);
  if (from / G == to / G) {
    const size_t ns = node_segs(shape, elems, cap);
    return (shard + ns - 1) / ns;
  }
  return rs__algo_tree.message_elems(rs__shape_flat(N), from / G, to / G, shard,
                                     tree_segs(N, shard, cap), cap);
}

/* The streaming reduce's segments a shard (seg_ready's room). */
static size_t chunk_segs(rs_shape_t shape, size_t elems, size_t segs,
                         size_t cap) {
  (void)segs;
  return node_segs(shape, elems, cap);
}

/* A head takes G-1 copies a segment of its shard and the tree's messages;
 * every GPU G-1 multicast sums a segment. */
static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  (void)segs, (void)collective;
  const int G = shape.gpus, N = nodes_of(shape);
  const size_t shard = rs__chunk_elems(elems, G, 0);
  return 2 * (size_t)(G - 1) * node_segs(shape, elems, cap) +
         rs__algo_tree.messages(rs__shape_flat(N), rank / G, shard,
                                tree_segs(N, shard, cap), cap,
                                RS_COLL_ALLREDUCE);
}

/* The node's reduce, the tree's reduce and broadcast, the multicast. */
static int steps(rs_shape_t shape, rs_collective_t collective) {
  (void)shape, (void)collective;
  return 4;
}

static int sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  const int G = shape.gpus;
  int n = 0;
  if (step == 0 || step == 3) {
    for (int d = 1; d < G && n < max; d++)
      dst[n++] = rank / G * G + rs__nvls_to(G, rank % G, d);
    return n;
  }
  n = rs__algo_tree.sends(rs__shape_flat(nodes_of(shape)), step - 1, rank / G,
                          dst, max);
  for (int i = 0; i < n; i++)
    dst[i] = rank % G + G * dst[i];
  return n;
}

/* A head adds its node's G-1 copies, then the tree's. */
static int depth(rs_shape_t shape) {
  return shape.gpus - 1 + rs__algo_tree.depth(rs__shape_flat(nodes_of(shape)));
}

/* The prediction: one bucket alone on simulated clocks. */
static uint64_t predict(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  (void)segs;
  return rs__algo_predict_alone(&rs__algo_nvlstree, m, shape, elems, cap,
                                elem_size);
}

/* The regions: each shard's halves, the tree's (hier's nesting). */
static int layout(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                  const char **word, const char **words) {
  const int G = shape.gpus, N = nodes_of(shape);
  int count = 0;
  for (int l = 0; l < G; l++) {
    const size_t off = rs__chunk_offset(elems, G, l);
    const int k =
        rs__algo_tree.layout(rs__shape_flat(N), rs__chunk_elems(elems, G, l),
                             cap, offsets + count, word, words);
    for (int j = 0; j < k; j++)
      offsets[count + j] += off;
    count += k;
  }
  offsets[count] = elems;
  *word = "shard half";
  *words = "shard halves";
  return count;
}

/* Every node's GPUs at once: round d of its NVLS reduce (to) or
 * multicast (from a head), over shard columns of cols each. */
static void node_round(rs_narrator_t *n, int d, int cols, int reduce) {
  const int G = n->shape.gpus;
  rs__narr_begin(n);
  for (int j = 0; j < n->workers; j++) {
    const int first = j / G * G, l = j % G;
    const int to = first + rs__nvls_to(G, l, d);
    const int shard = reduce ? to % G : l;
    rs__narr_send(n, j, to, shard * cols, (shard + 1) * cols,
                  reduce ? RS_RECV_REDUCE : RS_RECV_COPY);
  }
}

/* --explain's narration (algo/narrate.h). */
static void narrate(rs_narrator_t *n, int mean) {
  const int G = n->shape.gpus, N = nodes_of(n->shape), cols = 2;
  char title[80];
  rs__narr_say(n,
               "\n%d nodes of %d GPUs on an NVLink switch that reduces: the "
               "bucket is cut into %d shards, shard l headed by local rank "
               "l, each told in the tree's two halves.\n\nwithin each node, "
               "NVLS's reduce: every GPU puts its copy of each shard into "
               "the switch for the shard's head, which takes the node's sum "
               "(here the head adds them, its own first, then the GPU before "
               "it, ...: NVIDIA does not say in which order the switch "
               "adds): told as %d round%s.\n",
               N, G, G, G - 1, G == 2 ? "" : "s");
  for (int d = 1; d < G; d++) {
    node_round(n, d, cols, 1);
    snprintf(title, sizeof title,
             "within nodes, reduce through the switch, "
             "round %d",
             d);
    rs__narr_end(n, title);
  }
  rs__narr_say(n,
               "\nacross the nodes: the %d heads of each shard, one a node, "
               "each through its own NIC, all-reduce it with NCCL's double "
               "binary tree; the %d shards at once.\n",
               N, G);
  rs__hier_narrate_across(n, &rs__algo_tree, cols, mean);
  rs__narr_owners(n, "the trees across nodes");
  rs__narr_say(n,
               "\nwithin each node, NVLS's multicast: each head puts its "
               "shard into the switch once, which writes it to every GPU "
               "of the node: told as %d round%s.\n",
               G - 1, G == 2 ? "" : "s");
  for (int d = 1; d < G; d++) {
    node_round(n, d, cols, 0);
    snprintf(title, sizeof title, "within nodes, multicast, round %d", d);
    rs__narr_end(n, title);
  }
  rs__narr_say(n, "\nEvery GPU now holds every shard %s all %d GPUs.\n",
               n->result, n->workers);
}

/* NCCL's NVLSTree (NCCL_ALGO_NVLS_TREE): nodes whose NVLink switch
 * reduces. */
const rs_algo_t rs__algo_nvlstree = {
    .name = "nvlstree",
    .caps = RS__CAP_NVLS | RS__CAP_TOPOLOGY | RS__CAP_NCCL | RS__CAP_STREAM,
    .send_peers = send_peers,
    .recv_peers = recv_peers,
    .message_elems = message_elems,
    .chunk_segs = chunk_segs,
    .direct_slots = rs__algo_never_direct,
    .messages = messages,
    .steps = steps,
    .sends = sends,
    .depth = depth,
    .predict = predict,
    .sim_bucket = sim_bucket,
    .sim_scratch = sim_scratch,
    .title = "NVLSTree all-reduce (NCCL's: NVLink SHARP in each node, a tree "
             "across)",
    .layout = layout,
    .narrate = narrate,
    .run_bucket = nvlstree_bucket};
