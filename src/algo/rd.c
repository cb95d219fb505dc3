/* algo/rd.c - recursive doubling, as one worker runs it (the schedule is
 * in algo/rd.h).
 *
 * Every step moves the whole buffer: log2 W messages of n elements where
 * the ring sends 2(W-1) of n/W. Few steps, so it wins when the message is
 * small and latency dominates; it sends log2 W times the data, so the ring
 * wins when bandwidth does. Open MPI picks it for small messages.
 *
 * Each exchange is a send and a receive of the same region, segment by
 * segment (the transfer primitive's sendrecv): both partners add the same
 * two partial sums, and float addition is commutative, so both get the
 * same bits. The order of additions is Open MPI's: an element's result is
 * a balanced tree of sums over the renumbered ranks (with the fold-in's
 * pairs at the leaves). An average divides where the sum completes: in
 * the last exchange.
 */
#include "algo/rd.h"

#include <stdint.h>
#include <stdio.h>

#include "algo/algo.h"
#include "algo/narrate.h"
#include "net/netmodel.h"
#include "net/xfer.h"

int rs__rd_bucket(rs_worker_t *w);

int rs__rd_bucket(rs_worker_t *w) {
  const int W = w->workers, r = w->rank;
  const int P = rs__pof2(W), extra = W - P, v = rs__rd_newrank(W, r);
  const size_t n = w->elems, segs = rs__xfer_segs(w, n);
  const int mean = w->op == RS_OP_AVG && !w->average;
  const int partner = rs__pof2_fold_peer(W, r); /* -1: none */
  int step = 0, rc;
  if (extra) { /* fold-in: even r < 2E gives its data to r+1 */
    if ((rc = rs__xfer_step(w, RS_PHASE_REDUCE, 0, step++, 1)))
      return rc;
    rs_part_t give = {partner, 0, n, {RS_PHASE_REDUCE, 0, 0, 0, r, 1}};
    rs_part_t take = {partner, 0, n, {RS_PHASE_REDUCE, 0, 0, 0, partner, 1}};
    if (partner > r)
      rc = rs__xfer_send_all(w, &give, segs);
    else if (partner >= 0)
      rc = rs__xfer_recv_all(w, &take, RS_RECV_REDUCE, segs);
    if (rc)
      return rc;
  }
  for (int d = 1, k = 0; d < P; d *= 2, k++) { /* the exchanges */
    if ((rc = rs__xfer_step(w, RS_PHASE_EXCHANGE, k, step++, 1)))
      return rc;
    if (v < 0)
      continue; /* folded in: sits the exchanges out */
    const int peer = rs__rd_rank(W, v ^ d);
    rs_part_t out = {peer, 0, n, {RS_PHASE_EXCHANGE, k, 0, 0, 0, 0}};
    rs_part_t in = {peer, 0, n, {RS_PHASE_EXCHANGE, k, 0, 0, 0, 0}};
    rs__rd_contributors(W, v, d, &out.tag.contrib_first,
                        &out.tag.contrib_count);
    rs__rd_contributors(W, v ^ d, d, &in.tag.contrib_first,
                        &in.tag.contrib_count);
    if ((rc = rs__xfer_sendrecv(
             w, &out, &in,
             mean && 2 * d == P ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE, segs)))
      return rc;
  }
  if (extra) { /* fold-out: odd r < 2E returns the result to r-1 */
    if ((rc = rs__xfer_step(w, RS_PHASE_BROADCAST, 0, step++, 1)))
      return rc;
    rs_part_t part = {partner, 0, n, {RS_PHASE_BROADCAST, 0, 0, 0, 0, W}};
    if (partner >= 0 && partner < r)
      rc = rs__xfer_send_all(w, &part, segs);
    else if (partner >= 0)
      rc = rs__xfer_recv_all(w, &part, RS_RECV_COPY, segs);
    if (rc)
      return rc;
  }
  return RS_OK;
}

/* Edges: the exchange partners both ways, and the fold-in pair. */
static int peers(rs_shape_t shape, int rank, int *out) {
  const int workers = shape.workers;
  return rs__pof2_peers(workers, rank, rs__rd_newrank(workers, rank),
                        rs__rd_rank, out);
}

static int steps(rs_shape_t shape, rs_collective_t collective) {
  const int workers = shape.workers;
  (void)collective;
  const int P = rs__pof2(workers);
  return rs__log2(P) + (workers > P ? 2 : 0);
}

/* Whom rank sends to in each step: with E extra workers the fold-in
 * (step 0: even r < 2E to r+1), the exchanges (v xor d, for every worker
 * taking part), the fold-out (the last: odd r < 2E to r-1). */
static int sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  const int workers = shape.workers;
  const int P = rs__pof2(workers), E = workers - P, K = rs__log2(P);
  const int partner = rs__pof2_fold_peer(workers, rank);
  const int v = rs__rd_newrank(workers, rank);
  (void)max;
  if (E && step == 0)
    return partner > rank ? (dst[0] = partner, 1) : 0;
  const int k = step - (E ? 1 : 0);
  if (k < K)
    return v >= 0 ? (dst[0] = rs__rd_rank(workers, v ^ (1 << k)), 1) : 0;
  return E && partner >= 0 && partner < rank ? (dst[0] = partner, 1) : 0;
}

/* At most one reception per step, of at most the whole bucket. */
static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  (void)rank, (void)segs;
  return (size_t)steps(shape, collective) * rs__segs(elems, cap);
}

/* Each exchange: every segment a latency, its transfer and its reduction,
 * one after the other (a sendrecv); when W is not a power of two the
 * fold-in and fold-out add one more each (an upper bound: the fold-in
 * overlaps the first exchanges of the workers that did not fold). */
static uint64_t predict(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  const int workers = shape.workers;
  (void)segs;
  if (!m->enabled || workers < 2)
    return 0;
  const int P = rs__pof2(workers);
  const uint64_t exchange = rs__algo_region_ns(m, elems, cap, elem_size, 1);
  return (uint64_t)rs__log2(P) * exchange +
         (workers > P
              ? exchange + rs__algo_region_ns(m, elems, cap, elem_size, 0)
              : 0);
}

/* Segment k of segs of an elems-element region. */
static size_t seg_len(size_t elems, size_t segs, size_t k) {
  return rs__chunk_elems(elems, (int)segs, (int)k);
}

/* Every message of every step is the whole bucket, in segments of at
 * most cap (algo.h). */
static size_t step_least(rs_shape_t shape, int step, size_t elems, size_t segs,
                         size_t cap, size_t *rounds) {
  (void)shape, (void)step, (void)segs;
  *rounds = rs__segs(elems, cap);
  return elems / *rounds;
}

/* One bucket of the schedule above on simulated clocks alone (algo.h). */
static void sim_bucket(rs_simrun_t *s, size_t n, size_t chunk_segs) {
  const int W = s->shape.workers, P = rs__pof2(W), E = W - P;
  const size_t segs = rs__segs(n, s->cap);
  (void)chunk_segs;
  /* (each step's segments of one length are a run of the same round:
   * simrun.h's steady repeats) */
  if (E) { /* fold-in */
    rs_simrepeat_t rep = RS_SIMREPEAT_INIT;
    rs__simrun_step(s);
    for (size_t k = 0; k < segs && !rs__simrun_stopped(s); k++) {
      rs__simrepeat_begin(s, &rep, k, rs__same_len_last(n, segs, k));
      for (int r = 0; r < 2 * E; r += 2)
        rs__simrun_send(s, r, r + 1, seg_len(n, segs, k));
      for (int r = 1; r < 2 * E; r += 2)
        rs__simrun_recv(s, r, r - 1, seg_len(n, segs, k));
      k = rs__simrepeat_end(s, &rep, k);
    }
  }
  for (int d = 1; d < P; d *= 2) { /* the exchanges */
    rs_simrepeat_t rep = RS_SIMREPEAT_INIT;
    rs__simrun_step(s);
    for (size_t k = 0; k < segs && !rs__simrun_stopped(s); k++) {
      rs__simrepeat_begin(s, &rep, k, rs__same_len_last(n, segs, k));
      for (int v = 0; v < P; v++)
        rs__simrun_send(s, rs__rd_rank(W, v), rs__rd_rank(W, v ^ d),
                        seg_len(n, segs, k));
      for (int v = 0; v < P; v++)
        rs__simrun_recv(s, rs__rd_rank(W, v), rs__rd_rank(W, v ^ d),
                        seg_len(n, segs, k));
      k = rs__simrepeat_end(s, &rep, k);
    }
  }
  if (E) { /* fold-out */
    rs_simrepeat_t rep = RS_SIMREPEAT_INIT;
    rs__simrun_step(s);
    for (size_t k = 0; k < segs && !rs__simrun_stopped(s); k++) {
      rs__simrepeat_begin(s, &rep, k, rs__same_len_last(n, segs, k));
      for (int r = 1; r < 2 * E; r += 2)
        rs__simrun_send(s, r, r - 1, seg_len(n, segs, k));
      for (int r = 0; r < 2 * E; r += 2)
        rs__simrun_recv(s, r, r + 1, 0);
      k = rs__simrepeat_end(s, &rep, k);
    }
  }
}

/* The fold-in's and fold-out's introduction (narrate.h), shared by rd and
 * rhd. */
void rs__narrate_pof2_fold(rs_narrator_t *n, int P, const char *how) {
  const int E = n->workers - P;
  rs__narr_say(
      n,
      "\n%d workers are not a power of two: the E = %d extra worker%s fold%s "
      "into %s neighbour%s first, as Open MPI does. %s Then %d workers "
      "take part, renumbered 0..%d, and at the end the result goes back to "
      "the %d that sat out.\n",
      n->workers, E, E == 1 ? "" : "s", E == 1 ? "s" : "",
      E == 1 ? "its" : "their", E == 1 ? "" : "s", how, P, P - 1, E);
}

/* The narration (algo/narrate.h): recursive doubling's steps. */
static void narrate(rs_narrator_t *n, int mean) {
  const int W = n->workers, P = rs__pof2(W), E = W - P;
  char title[96];
  if (E) {
    rs__narrate_pof2_fold(
        n, P,
        "Each even worker r below 2E sends its whole buffer to r+1, "
        "which adds it to its own and stands for both.");
    rs__narr_begin(n);
    for (int r = 0; r < W; r++)
      if (rs__pof2_fold_peer(W, r) > r)
        rs__narr_send(n, r, rs__pof2_fold_peer(W, r), 0, 1, RS_RECV_REDUCE);
    rs__narr_end(n, "fold-in");
  }
  rs__narr_say(
      n,
      "\nexchanges: %d step%s; in the step at distance d = 1, 2, 4, ..., "
      "each worker taking part (renumbered rank v) swaps its whole buffer "
      "with renumbered rank v xor d, and both %s.\n",
      rs__log2(P), P == 2 ? "" : "s",
      n->op == RS_OP_SUM || n->op == RS_OP_AVG ? "add"
                                               : "fold it into their own");
  for (int d = 1, k = 0; d < P; d *= 2, k++) {
    rs__narr_begin(n);
    for (int v = 0; v < P; v++)
      rs__narr_send(n, rs__rd_rank(W, v), rs__rd_rank(W, v ^ d), 0, 1,
                    mean && 2 * d == P ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE);
    snprintf(title, sizeof title, "exchange %d (distance %d)", k, d);
    rs__narr_end(n, title);
  }
  if (E) {
    rs__narr_say(
        n, "\nfold-out: each odd worker r below 2E sends the result back to "
           "r-1, which copies it.\n");
    rs__narr_begin(n);
    for (int r = 0; r < W; r++)
      if (rs__pof2_fold_peer(W, r) >= 0 && rs__pof2_fold_peer(W, r) < r)
        rs__narr_send(n, r, rs__pof2_fold_peer(W, r), 0, 1, RS_RECV_COPY);
    rs__narr_end(n, "fold-out");
  }
  rs__narr_say(
      n,
      "\nEvery worker now holds the whole buffer %s all %d workers: %d "
      "step%s, each worker taking part sending its whole buffer %d "
      "time%s, where the ring sends 2(W-1)/W of it.\n",
      n->result, W, n->steps, n->steps == 1 ? "" : "s", rs__log2(P),
      rs__log2(P) == 1 ? "" : "s");
}

/* The whole bucket moves at once: one column. */
static int layout(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                  const char **word, const char **words) {
  (void)shape, (void)cap;
  return rs__layout_whole(elems, offsets, word, words);
}

/* rd.h's rs__rd_depth, for the flat or any shape. */
static int depth(rs_shape_t shape) { return rs__rd_depth(shape.workers); }

const rs_algo_t rs__algo_rd = {.name = "rd",
                               .caps = RS__CAP_AUTO | RS__CAP_FORMULA,
                               .send_peers = peers,
                               .recv_peers = peers,
                               .message_elems = rs__algo_capped_elems,
                               /* a worker folds into the region it has just
                                  sent: its partner may still be reading */
                               .direct_slots = rs__algo_never_direct,
                               .messages = messages,
                               .steps = steps,
                               .sends = sends,
                               .depth = depth,
                               .predict = predict,
                               .sim_bucket = sim_bucket,
                               .step_least = step_least,
                               .title = "recursive doubling all-reduce",
                               .layout = layout,
                               .narrate = narrate,
                               .run_bucket = rs__rd_bucket};
