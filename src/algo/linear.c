/* algo/linear.c - the linear all-reduce (the parameter-server shape), as
 * one worker runs it (the schedule is in algo/linear.h).
 *
 * Everything goes to one worker, which reduces it all in one place, then
 * sends the result to everyone: what torch.stack(grads).mean(0) does, with
 * the data moved first. 2(W-1) messages of n elements through the root's
 * one port: the slowest shape for large W, the simplest to read.
 *
 * The root's order is Open MPI's: it keeps its own data aside (the stash),
 * copies worker W-1's, adds W-2's, ..., 1's, and adds its own last (an
 * average divides in that last addition).
 */
#include "algo/linear.h"

#include <stdint.h>
#include <stdio.h>

#include "algo/algo.h"
#include "algo/narrate.h"
#include "net/netmodel.h"
#include "net/xfer.h"

int rs__linear_bucket(rs_worker_t *w);

int rs__linear_bucket(rs_worker_t *w) {
  const int W = w->workers, r = w->rank, root = RS_LINEAR_ROOT;
  const size_t n = w->elems, segs = rs__xfer_segs(w, n);
  const int mean = w->op == RS_OP_AVG && !w->average;
  int rc;
  /* Reduce: W-1 steps, the root taking one worker's data in each. */
  for (int j = 0; j < W - 1; j++) {
    if ((rc = rs__xfer_step(w, RS_PHASE_REDUCE, j, j, 1)))
      return rc;
    const int sender = rs__linear_sender(W, j);
    rs_part_t part = {
        r == root ? sender : root, 0, n, {RS_PHASE_REDUCE, j, 0, 0, sender, 1}};
    if (r == root && j == 0)
      rs__xfer_stash(w); /* its own data, added last */
    if (r == root)
      rc = rs__xfer_recv_all(w, &part, j == 0 ? RS_RECV_COPY : RS_RECV_REDUCE,
                             segs);
    else if (r == sender)
      rc = rs__xfer_send_all(w, &part, segs);
    if (rc)
      return rc;
  }
  if (r == root)
    rs__xfer_unstash(w, mean ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE);
  /* Broadcast: W-1 steps, the root sending the result to one in each. */
  for (int j = 0; j < W - 1; j++) {
    if ((rc = rs__xfer_step(w, RS_PHASE_BROADCAST, j, W - 1 + j, 1)))
      return rc;
    const int receiver = rs__linear_receiver(j);
    rs_part_t part = {
        r == root ? receiver : root, 0, n, {RS_PHASE_BROADCAST, j, 0, 0, 0, W}};
    if (r == root)
      rc = rs__xfer_send_all(w, &part, segs);
    else if (r == receiver)
      rc = rs__xfer_recv_all(w, &part, RS_RECV_COPY, segs);
    if (rc)
      return rc;
  }
  return RS_OK;
}

/* Edges: the root to and from everyone. */
static int peers(rs_shape_t shape, int rank, int *out) {
  const int workers = shape.workers;
  if (rank != RS_LINEAR_ROOT) {
    out[0] = RS_LINEAR_ROOT;
    return 1;
  }
  int n = 0;
  for (int p = 0; p < workers; p++)
    if (p != RS_LINEAR_ROOT)
      out[n++] = p;
  return n;
}

/* The root overwrites its buffer with W-1's data while the others'
 * messages point into their own buffers, which nobody writes until the
 * broadcast; but the broadcast points into the root's buffer, and each
 * worker copies it into its own: safe with any number of slots. */
static size_t direct_slots(rs_shape_t shape, size_t min_segs, int slices) {
  (void)shape, (void)min_segs, (void)slices;
  return RS_MAX_SLOTS;
}

static int steps(rs_shape_t shape, rs_collective_t collective) {
  const int workers = shape.workers;
  (void)collective;
  return 2 * (workers - 1);
}

/* The root receives W-1 buffers; the others one. */
static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  const int workers = shape.workers;
  (void)segs, (void)collective;
  const size_t per_buffer = rs__segs(elems, cap);
  return (rank == RS_LINEAR_ROOT ? (size_t)(workers - 1) : 1) * per_buffer;
}

/* Whom rank sends to in each step: reduce step j, W-1-j to the root;
 * broadcast step j (global W-1+j), the root to j+1. */
static int sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  const int workers = shape.workers;
  (void)max;
  if (step < workers - 1)
    return rank == rs__linear_sender(workers, step)
               ? (dst[0] = RS_LINEAR_ROOT, 1)
               : 0;
  return rank == RS_LINEAR_ROOT
             ? (dst[0] = rs__linear_receiver(step - (workers - 1)), 1)
             : 0;
}

static int depth(rs_shape_t shape) {
  const int workers = shape.workers;
  return workers - 1;
}

static int stashes(rs_shape_t shape, int rank) {
  (void)shape;
  return rank == RS_LINEAR_ROOT;
}

/* The root's ports serialise everything: it takes in W-1 buffers one
 * after another through its one incoming port (the first latency
 * overlapped by the rest), folding each of W-2 of them while the next
 * comes in, and sends W-1 copies out of its one outgoing link:
 * 2 alpha + (W-1) S/beta + (W-2) max(S/beta, S/gamma) + ... segment by
 * segment. */
static uint64_t predict(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  const int workers = shape.workers;
  (void)segs;
  if (!m->enabled || workers < 2)
    return 0;
  const size_t n_segs = rs__segs(elems, cap);
  uint64_t wire = 0, paced = 0;
  for (size_t k = 0; k < n_segs; k++) {
    size_t bytes = rs__chunk_elems(elems, (int)n_segs, (int)k) * elem_size;
    uint64_t w = rs__net_wire_ns(m, bytes);
    uint64_t f = rs__net_ns(bytes, m->reduce_rate);
    wire += w;
    paced += w > f ? w : f;
  }
  return 2 * m->link.latency_ns + wire + (uint64_t)(workers - 2) * paced +
         (uint64_t)(workers - 1) * wire;
}

/* A bound of its own (algo.h): the root's port takes the W-1 buffers one
 * after another, each no sooner than its least time on the wire; then its
 * link sends the result W-1 times, and the last arrives a latency after.
 * With a topology of several nodes the root has two ports each way (its
 * NVLink port and its NIC side: netmodel.h), which run beside each other:
 * the busier of them. */
static uint64_t least(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                      size_t elem_size) {
  const int W = shape.workers, G = shape.gpus, root = RS_LINEAR_ROOT;
  uint64_t in[2] = {0, 0}, out[2] = {0, 0}, latency = UINT64_MAX, hop_latency;
  for (int r = 0; r < W; r++) {
    if (r == root)
      continue;
    const int nic = G < W && r / G != root / G;
    in[nic] = rs__sat_add(
        in[nic],
        rs__sim_hop_least_ns(m, W, r, root, elems * elem_size, &hop_latency));
    out[nic] = rs__sat_add(
        out[nic],
        rs__sim_hop_least_ns(m, W, root, r, elems * elem_size, &hop_latency));
    latency = hop_latency < latency ? hop_latency : latency;
  }
  const uint64_t t = rs__sat_add(in[0] > in[1] ? in[0] : in[1],
                                 out[0] > out[1] ? out[0] : out[1]);
  return rs__sat_add(t, latency);
}

/* One bucket of the schedule above on simulated clocks alone (algo.h). */
static void sim_bucket(rs_simrun_t *s, size_t n, size_t chunk_segs) {
  const int W = s->shape.workers, root = RS_LINEAR_ROOT;
  const size_t segs = rs__segs(n, s->cap);
  (void)chunk_segs;
  for (int j = 0; j < W - 1; j++) {
    const int sender = rs__linear_sender(W, j);
    rs_simrepeat_t rep = RS_SIMREPEAT_INIT; /* (simrun.h's steady repeats) */
    rs__simrun_step(s);
    for (size_t k = 0; k < segs && !rs__simrun_stopped(s); k++) {
      size_t len = rs__chunk_elems(n, (int)segs, (int)k);
      rs__simrepeat_begin(s, &rep, k, rs__same_len_last(n, segs, k));
      rs__simrun_send(s, sender, root, len);
      rs__simrun_recv(s, root, sender, j == 0 ? 0 : len); /* W-1 copied */
      k = rs__simrepeat_end(s, &rep, k);
    }
  }
  for (int j = 0; j < W - 1; j++) {
    rs_simrepeat_t rep = RS_SIMREPEAT_INIT;
    rs__simrun_step(s);
    for (size_t k = 0; k < segs && !rs__simrun_stopped(s); k++) {
      rs__simrepeat_begin(s, &rep, k, rs__same_len_last(n, segs, k));
      rs__simrun_send(s, root, rs__linear_receiver(j),
                      rs__chunk_elems(n, (int)segs, (int)k));
      rs__simrun_recv(s, rs__linear_receiver(j), root, 0);
      k = rs__simrepeat_end(s, &rep, k);
    }
  }
}

/* The narration (algo/narrate.h): the reduce to the root, then the
 * broadcast. */
static void narrate(rs_narrator_t *n, int mean) {
  const int W = n->workers, root = RS_LINEAR_ROOT;
  char title[64];
  rs__narr_say(
      n,
      "\nreduce: %d step%s; in each, one worker sends its whole buffer to "
      "worker %d, the root. The root sets its own data aside, copies the "
      "first buffer it receives over its own, %s each next one, and folds "
      "its own in last, as Open MPI's basic linear reduce does.\n",
      W - 1, W == 2 ? "" : "s", root,
      n->op == RS_OP_SUM || n->op == RS_OP_AVG ? "adds" : "folds in");
  rs__narr_stash(n, root);
  for (int j = 0; j < W - 1; j++) {
    rs__narr_begin(n);
    rs__narr_send(n, rs__linear_sender(W, j), root, 0, 1,
                  j == 0 ? RS_RECV_COPY : RS_RECV_REDUCE);
    snprintf(title, sizeof title, "reduce step %d", j);
    rs__narr_end(n, title);
  }
  rs__narr_begin(n);
  rs__narr_send(n, root, root, 0, 1,
                mean ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE);
  rs__narr_end(n, "the root's own data, last");
  rs__narr_say(
      n,
      "\nbroadcast: %d step%s; in each the root sends the result to one "
      "worker, which copies it.\n",
      W - 1, W == 2 ? "" : "s");
  for (int j = 0; j < W - 1; j++) {
    rs__narr_begin(n);
    rs__narr_send(n, root, rs__linear_receiver(j), 0, 1, RS_RECV_COPY);
    snprintf(title, sizeof title, "broadcast step %d", j);
    rs__narr_end(n, title);
  }
  rs__narr_say(
      n,
      "\nEvery worker now holds the whole buffer %s all %d workers: the "
      "root took in %d buffer%s and sent out %d, all through its own "
      "link.\n",
      n->result, W, W - 1, W == 2 ? "" : "s", W - 1);
}

/* The whole bucket moves at once: one column. */
static int layout(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                  const char **word, const char **words) {
  (void)shape, (void)cap;
  return rs__layout_whole(elems, offsets, word, words);
}

const rs_algo_t rs__algo_linear = {
    .name = "linear",
    .caps = RS__CAP_AUTO | RS__CAP_FORMULA,
    .send_peers = peers,
    .recv_peers = peers,
    .message_elems = rs__algo_capped_elems,
    .direct_slots = direct_slots,
    .messages = messages,
    .steps = steps,
    .sends = sends,
    .depth = depth,
    .stashes = stashes,
    .predict = predict,
    .sim_bucket = sim_bucket,
    .least = least,
    .title = "linear all-reduce (reduce to worker 0, then broadcast)",
    .layout = layout,
    .narrate = narrate,
    .run_bucket = rs__linear_bucket};
