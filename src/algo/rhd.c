/* algo/rhd.c - Rabenseifner's all-reduce, as one worker runs it (the
 * schedule is in algo/rhd.h).
 *
 * Reduce-scatter by recursive halving sends n/2 + n/4 + ... = (P-1)/P n
 * elements in log2 P steps, and the all-gather the same back: the ring's
 * bandwidth in the recursive-doubling's number of steps. Open MPI picks it
 * for large messages when the ring's 2(W-1) latencies would cost more.
 *
 * Each step is a send and a receive between partners (the transfer
 * primitive's sendrecv), both regions cut into the same number of
 * segments. The windows are Open MPI's: at each step the lower real rank
 * keeps the left half (n/2 rounded down), so every element's sum has the
 * order Open MPI gives it. An average divides where the sum completes: in
 * the last reduce-scatter step.
 */
#include "algo/rhd.h"

#include <stdint.h>
#include <stdio.h>

#include "algo/algo.h"
#include "algo/narrate.h"
#include "net/netmodel.h"
#include "net/xfer.h"

/* The most steps of a halving (log2 of RS_MAX_WORKERS, rounded up). */
#define MAX_STEPS 16

int rs__rhd_bucket(rs_worker_t *w);

/* The fold-in, when W is not a power of two: pairs swap halves and the
 * odd worker hands its summed half to the even one. */
static int fold_in(rs_worker_t *w, int *step) {
  const int r = w->rank, extra = w->workers - rs__pof2(w->workers);
  const size_t n = w->elems, left = n / 2, right = n - left;
  const size_t segs = rs__xfer_segs(w, right);
  int rc;
  if ((rc = rs__xfer_step(w, RS_PHASE_REDUCE, 0, (*step)++, 1)))
    return rc;
  const int odd = r % 2, peer = rs__pof2_fold_peer(w->workers, r);
  rs_part_t lpart = {peer, 0, left, {RS_PHASE_REDUCE, 0, 0, 0, 0, 1}};
  rs_part_t rpart = {peer, left, right, {RS_PHASE_REDUCE, 0, 0, 0, 0, 1}};
  if (r < 2 * extra) { /* even keeps the left half, odd the right */
    lpart.tag.contrib_first = odd ? r : peer;
    rpart.tag.contrib_first = odd ? peer : r;
    rc = odd ? rs__xfer_sendrecv(w, &lpart, &rpart, RS_RECV_REDUCE, segs)
             : rs__xfer_sendrecv(w, &rpart, &lpart, RS_RECV_REDUCE, segs);
    if (rc)
      return rc;
  }
  if ((rc = rs__xfer_step(w, RS_PHASE_REDUCE, 1, (*step)++, 1)))
    return rc;
  if (r < 2 * extra) { /* the odd one's summed right half, to the even */
    rs_part_t sum = {
        peer, left, right, {RS_PHASE_REDUCE, 1, 0, 0, odd ? peer : r, 2}};
    rc =
        odd ? rs__xfer_send_all(w, &sum, rs__xfer_segs(w, right))
            : rs__xfer_recv_all(w, &sum, RS_RECV_COPY, rs__xfer_segs(w, right));
  }
  return rc;
}

int rs__rhd_bucket(rs_worker_t *w) {
  const int W = w->workers, r = w->rank;
  const int P = rs__pof2(W), extra = W - P, nsteps = rs__log2(P);
  const int v = rs__rhd_vrank(W, r);
  const int mean = w->op == RS_OP_AVG && !w->average;
  int step = 0, rc = RS_OK;
  if (extra && (rc = fold_in(w, &step)))
    return rc;
  /* Reduce-scatter: the window [rindex, + rcount) halves each step. */
  size_t sindex[MAX_STEPS] = {0}, scount[MAX_STEPS] = {0},
         rindex[MAX_STEPS] = {0}, rcount[MAX_STEPS] = {0};
  for (int k = 0, m = 1; m < P; k++, m *= 2) {
    if ((rc = rs__xfer_step(w, RS_PHASE_REDUCE_SCATTER, k, step++, 1)))
      return rc;
    if (v < 0)
      continue;
    const int peer = rs__rhd_rank(W, v ^ m);
    const size_t size = k ? rcount[k - 1] : w->elems; /* the window */
    const rs_rhd_halves_t halves = rs__rhd_halving(W, r, w->elems, k);
    sindex[k] = halves.give_off;
    scount[k] = halves.give_len;
    rindex[k] = halves.keep_off;
    rcount[k] = halves.keep_len;
    rs_part_t out = {
        peer, sindex[k], scount[k], {RS_PHASE_REDUCE_SCATTER, k, 0, 0, 0, 0}};
    rs_part_t in = {
        peer, rindex[k], rcount[k], {RS_PHASE_REDUCE_SCATTER, k, 0, 0, 0, 0}};
    rs__rhd_contributors(W, v, m, &out.tag.contrib_first,
                         &out.tag.contrib_count);
    rs__rhd_contributors(W, v ^ m, m, &in.tag.contrib_first,
                         &in.tag.contrib_count);
    size_t segs = rs__xfer_segs(w, size - size / 2); /* the larger half */
    if ((rc = rs__xfer_sendrecv(
             w, &out, &in,
             mean && 2 * m == P ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE, segs)))
      return rc;
  }
  /* All-gather: the same partners in reverse; each sends what it holds
   * and receives what it gave away. */
  for (int k = nsteps - 1, j = 0; k >= 0; k--, j++) {
    if ((rc = rs__xfer_step(w, RS_PHASE_ALL_GATHER, j, step++, 1)))
      return rc;
    if (v < 0)
      continue;
    const int peer = rs__rhd_rank(W, v ^ (1 << k));
    rs_part_t out = {
        peer, rindex[k], rcount[k], {RS_PHASE_ALL_GATHER, j, 0, 0, 0, W}};
    rs_part_t in = {
        peer, sindex[k], scount[k], {RS_PHASE_ALL_GATHER, j, 0, 0, 0, W}};
    size_t segs =
        rs__xfer_segs(w, rcount[k] > scount[k] ? rcount[k] : scount[k]);
    if ((rc = rs__xfer_sendrecv(w, &out, &in, RS_RECV_COPY, segs)))
      return rc;
  }
  if (extra) { /* fold-out: even r < 2E sends the result to r+1 */
    if ((rc = rs__xfer_step(w, RS_PHASE_BROADCAST, 0, step++, 1)))
      return rc;
    const size_t n = w->elems, segs = rs__xfer_segs(w, n);
    rs_part_t give = {r + 1, 0, n, {RS_PHASE_BROADCAST, 0, 0, 0, 0, W}};
    rs_part_t take = {r - 1, 0, n, {RS_PHASE_BROADCAST, 0, 0, 0, 0, W}};
    if (r < 2 * extra && r % 2 == 0)
      rc = rs__xfer_send_all(w, &give, segs);
    else if (r < 2 * extra)
      rc = rs__xfer_recv_all(w, &take, RS_RECV_COPY, segs);
  }
  return rc;
}

/* Edges: the fold pair, and the partner at every distance, both ways. */
static int peers(rs_shape_t shape, int rank, int *out) {
  const int workers = shape.workers;
  return rs__pof2_peers(workers, rank, rs__rhd_vrank(workers, rank),
                        rs__rhd_rank, out);
}

static int steps(rs_shape_t shape, rs_collective_t collective) {
  const int workers = shape.workers;
  (void)collective;
  const int P = rs__pof2(workers);
  return 2 * rs__log2(P) + (workers > P ? 3 : 0);
}

/* Whom rank sends to in each step: with E extra workers the fold-in's two
 * (the pairs r < 2E swap halves; then odd r sends to r-1), the halvings
 * at distance 1, 2, 4, ..., the doublings back, the fold-out (even r < 2E
 * to r+1). */
static int sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  const int workers = shape.workers;
  const int P = rs__pof2(workers), E = workers - P, K = rs__log2(P);
  const int v = rs__rhd_vrank(workers, rank), paired = rank < 2 * E;
  (void)max;
  if (E && step < 2) {
    const int to = rs__pof2_fold_peer(workers, rank);
    return paired && (step == 0 || rank % 2) ? (dst[0] = to, 1) : 0;
  }
  const int j = step - (E ? 2 : 0);
  if (j < 2 * K) {
    const int k = j < K ? j : 2 * K - 1 - j; /* halving k, doubling back */
    return v >= 0 ? (dst[0] = rs__rhd_rank(workers, v ^ (1 << k)), 1) : 0;
  }
  return paired && rank % 2 == 0 ? (dst[0] = rank + 1, 1) : 0;
}

static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  (void)rank, (void)segs;
  return (size_t)steps(shape, collective) * rs__segs(elems, cap);
}

/* Each halving exchanges half the window (the larger half: the path the
 * slower partner takes) and reduces it; each doubling the same sizes back,
 * copied; when W is not a power of two, the fold-in's two exchanges of a
 * half and the fold-out of the whole add on. */
static uint64_t predict(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  const int workers = shape.workers;
  (void)segs;
  if (!m->enabled || workers < 2)
    return 0;
  const int P = rs__pof2(workers);
  uint64_t t = 0;
  size_t size = elems;
  for (int mask = 1; mask < P; mask *= 2) {
    size_t half = size - size / 2;
    t += rs__algo_region_ns(m, half, cap, elem_size, 1) +
         rs__algo_region_ns(m, half, cap, elem_size, 0);
    size = half;
  }
  if (workers > P)
    t += rs__algo_region_ns(m, elems - elems / 2, cap, elem_size, 1) +
         rs__algo_region_ns(m, elems - elems / 2, cap, elem_size, 0) +
         rs__algo_region_ns(m, elems, cap, elem_size, 0);
  return t;
}

static size_t seg_len(size_t elems, size_t segs, size_t k) {
  return rs__chunk_elems(elems, (int)segs, (int)k);
}

/* A virtual rank's part of one halving or doubling: what it sends and
 * receives, and the segments both are cut into. */
typedef struct sim_part {
  size_t send, recv, segs;
} sim_part_t;

/* Its segments' lengths (seg_len), worked out once a round. */
typedef struct sim_cut {
  rs_cut_t send, recv;
} sim_cut_t;

/* The last round of sim_round's run of rounds like round j: in each,
 * every virtual rank that takes part sends and receives segments of the
 * same lengths, and the same ranks take part (simrun.h's steady repeats). */
static size_t same_rounds(const sim_part_t *part, const sim_cut_t *cut, int P,
                          size_t j, int reduced) {
  size_t last = SIZE_MAX;
  for (int v = 0; v < P; v++) {
    const size_t segs = part[v].segs;
    if (j >= segs)
      continue; /* (done: it stays done) */
    size_t end = rs__cut_same_last(cut[v].send, segs, j);
    if (reduced) {
      const size_t recv_end = rs__cut_same_last(cut[v].recv, segs, j);
      end = recv_end < end ? recv_end : end;
    }
    last = end < last ? end : last;
  }
  return last == SIZE_MAX ? j : last;
}

/* One halving (reduced) or doubling (copied) on simulated clocks: every
 * virtual rank v (of P, s's W workers' power of two) exchanges with
 * v ^ mask, segment by segment, in lock step. */
static void sim_round(rs_simrun_t *s, int mask, const sim_part_t *part,
                      sim_cut_t *cut, int reduced) {
  const int W = s->shape.workers, P = rs__pof2(W);
  size_t most = 0, last = 0;
  for (int v = 0; v < P; v++) {
    const sim_part_t *p = &part[v];
    most = p->segs > most ? p->segs : most;
    /* (a step's parts take two or three sizes: the divisions of the two
     * ranks before, if alike) */
    int like = -1;
    for (int u = v - 1; u >= 0 && u >= v - 2 && like < 0; u--)
      if (part[u].send == p->send && part[u].recv == p->recv &&
          part[u].segs == p->segs)
        like = u;
    cut[v] = like >= 0 ? cut[like]
                       : (sim_cut_t){rs__cut(p->send, p->segs),
                                     rs__cut(p->recv, p->segs)};
  }
  rs_simrepeat_t rep = RS_SIMREPEAT_INIT;
  for (size_t j = 0; j < most && !rs__simrun_stopped(s); j++) {
    if (j == 0 || j > last) /* the run of rounds like round j */
      last = same_rounds(part, cut, P, j, reduced);
    rs__simrepeat_begin(s, &rep, j, last);
    for (int v = 0; v < P; v++)
      if (j < part[v].segs)
        rs__simrun_send(s, rs__rhd_rank(W, v), rs__rhd_rank(W, v ^ mask),
                        rs__cut_len(cut[v].send, j));
    for (int v = 0; v < P; v++)
      if (j < part[v].segs)
        rs__simrun_recv(s, rs__rhd_rank(W, v), rs__rhd_rank(W, v ^ mask),
                        reduced ? rs__cut_len(cut[v].recv, j) : 0);
    j = rs__simrepeat_end(s, &rep, j);
  }
}

/* A step's rounds and smallest segment (algo.h). The fold-in sends the
 * halves, cut as the right one (n - n/2); the fold-out the whole. Before
 * halving k every window holds n / 2^k elements, rounded down or up; a
 * part is cut as the window's larger half, and sends a half (doubling k
 * sends back the other): the fewest rounds are the smallest window's, the
 * smallest segment a rounded-down half of it over the largest window's
 * rounds. */
static size_t step_least(rs_shape_t shape, int step, size_t elems, size_t segs,
                         size_t cap, size_t *rounds) {
  const int workers = shape.workers;
  const int P = rs__pof2(workers), E = workers - P, K = rs__log2(P);
  (void)segs;
  if (E && step < 2) {
    const size_t right = elems - elems / 2;
    *rounds = rs__segs(right, cap);
    return (step == 0 ? elems / 2 : right) / *rounds;
  }
  const int j = step - (E ? 2 : 0);
  if (j >= 2 * K) {
    *rounds = rs__segs(elems, cap);
    return elems / *rounds;
  }
  const int k = j < K ? j : 2 * K - 1 - j;
  const size_t low = elems >> k, high = low + (low << k != elems);
  *rounds = rs__segs(low - low / 2, cap);
  return low / 2 / rs__segs(high - high / 2, cap);
}

/* The simulation's scratch, per virtual rank: its window's size, its part
 * of each halving, and of the round at hand and its segments' lengths
 * (four arrays, one after the other). */
static size_t sim_scratch(rs_shape_t shape) {
  const int workers = shape.workers;
  return (size_t)rs__pof2(workers) *
         (sizeof(size_t) + (MAX_STEPS + 1) * sizeof(sim_part_t) +
          sizeof(sim_cut_t));
}

/* One bucket of the schedule above on simulated clocks alone (algo.h):
 * every virtual rank's windows, step by step, as rhd_bucket computes its
 * own. */
static void sim_bucket(rs_simrun_t *s, size_t n, size_t chunk_segs) {
  const int W = s->shape.workers, P = rs__pof2(W), E = W - P,
            nsteps = rs__log2(P);
  sim_part_t(*part)[MAX_STEPS] = s->algo_mem;
  sim_part_t *round = (sim_part_t *)(part + P);
  size_t *size = (size_t *)(round + P);
  sim_cut_t *cut = (sim_cut_t *)(size + P);
  (void)chunk_segs;
  if (E) { /* fold-in: halves swapped, then the odd one's sum */
    const size_t left = n / 2, right = n - left;
    const size_t segs = rs__segs(right, s->cap);
    rs_simrepeat_t swap = RS_SIMREPEAT_INIT, sum = RS_SIMREPEAT_INIT;
    rs__simrun_step(s);
    for (size_t k = 0; k < segs && !rs__simrun_stopped(s); k++) {
      const size_t a = rs__same_len_last(left, segs, k),
                   b = rs__same_len_last(right, segs, k);
      rs__simrepeat_begin(s, &swap, k, a < b ? a : b);
      for (int r = 0; r < 2 * E; r++)
        rs__simrun_send(s, r, r % 2 ? r - 1 : r + 1,
                        seg_len(r % 2 ? left : right, segs, k));
      for (int r = 0; r < 2 * E; r++)
        rs__simrun_recv(s, r, r % 2 ? r - 1 : r + 1,
                        seg_len(r % 2 ? right : left, segs, k));
      k = rs__simrepeat_end(s, &swap, k);
    }
    rs__simrun_step(s);
    for (size_t k = 0; k < segs && !rs__simrun_stopped(s); k++) {
      rs__simrepeat_begin(s, &sum, k, rs__same_len_last(right, segs, k));
      for (int r = 1; r < 2 * E; r += 2)
        rs__simrun_send(s, r, r - 1, seg_len(right, segs, k));
      for (int r = 0; r < 2 * E; r += 2)
        rs__simrun_recv(s, r, r + 1, 0);
      k = rs__simrepeat_end(s, &sum, k);
    }
  }
  for (int v = 0; v < P; v++)
    size[v] = n;
  for (int k = 0, mask = 1; mask < P; k++, mask *= 2) { /* halving */
    rs__simrun_step(s);
    for (int v = 0; v < P; v++) {
      const int lower = rs__rhd_rank(W, v) < rs__rhd_rank(W, v ^ mask);
      const size_t half = size[v] / 2, keep = lower ? half : size[v] - half;
      part[v][k] =
          (sim_part_t){size[v] - keep, keep, rs__segs(size[v] - half, s->cap)};
      size[v] = keep;
    }
    for (int v = 0; v < P; v++)
      round[v] = part[v][k];
    sim_round(s, mask, round, cut, 1);
  }
  for (int k = nsteps - 1; k >= 0; k--) { /* doubling: the same back */
    rs__simrun_step(s);
    for (int v = 0; v < P; v++) {
      const sim_part_t h = part[v][k];
      const size_t big = h.recv > h.send ? h.recv : h.send;
      round[v] = (sim_part_t){h.recv, h.send, rs__segs(big, s->cap)};
    }
    sim_round(s, 1 << k, round, cut, 0);
  }
  if (E) { /* fold-out */
    const size_t segs = rs__segs(n, s->cap);
    rs_simrepeat_t rep = RS_SIMREPEAT_INIT;
    rs__simrun_step(s);
    for (size_t k = 0; k < segs && !rs__simrun_stopped(s); k++) {
      rs__simrepeat_begin(s, &rep, k, rs__same_len_last(n, segs, k));
      for (int r = 0; r < 2 * E; r += 2)
        rs__simrun_send(s, r, r + 1, seg_len(n, segs, k));
      for (int r = 1; r < 2 * E; r += 2)
        rs__simrun_recv(s, r, r - 1, 0);
      k = rs__simrepeat_end(s, &rep, k);
    }
  }
}

/* The narration (algo/narrate.h): the columns are the P parts the halvings
 * cut the bucket into (layout below). A window is a run of parts: the halving
 * of a bucket of P elements (rs__rhd_halving) gives it in parts, since every
 * window of an n-element bucket is cut where the part boundaries are (layout).
 */
static void narrate(rs_narrator_t *n, int mean) {
  const int W = n->workers, P = rs__pof2(W), E = W - P, K = rs__log2(P);
  char title[96];
  if (E) {
    rs__narrate_pof2_fold(
        n, P,
        "Each pair r, r+1 (even r below 2E) swaps halves, the even one "
        "keeping and adding the left half, the odd one the right; then "
        "the odd one sends its summed right half to the even one, which "
        "copies it and stands for both.");
    rs__narr_begin(n);
    for (int r = 0; r < 2 * E; r += 2) {
      rs__narr_send(n, r, r + 1, P / 2, P, RS_RECV_REDUCE);
      rs__narr_send(n, r + 1, r, 0, P / 2, RS_RECV_REDUCE);
    }
    rs__narr_end(n, "fold-in step 0");
    rs__narr_begin(n);
    for (int r = 0; r < 2 * E; r += 2)
      rs__narr_send(n, r + 1, r, P / 2, P, RS_RECV_COPY);
    rs__narr_end(n, "fold-in step 1");
  }
  rs__narr_say(
      n,
      "\nreduce-scatter by recursive halving: %d step%s; at distance m = 1, "
      "2, 4, ... each worker taking part (virtual rank v) sends half of its "
      "window to v xor m and %s the other half it receives: the lower "
      "worker keeps the left half. The window halves every step.\n",
      K, K == 1 ? "" : "s", n->fold_phrase);
  for (int k = 0; k < K; k++) {
    rs__narr_begin(n);
    for (int v = 0; v < P; v++) {
      const int r = rs__rhd_rank(W, v);
      const rs_rhd_halves_t h = rs__rhd_halving(W, r, (size_t)P, k);
      rs__narr_send(n, r, rs__rhd_rank(W, v ^ (1 << k)), (int)h.give_off,
                    (int)(h.give_off + h.give_len),
                    mean && k == K - 1 ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE);
    }
    snprintf(title, sizeof title, "reduce-scatter step %d (distance %d)", k,
             1 << k);
    rs__narr_end(n, title);
  }
  rs__narr_owners(n, "reduce-scatter");
  rs__narr_say(
      n,
      "\nall-gather by recursive doubling: %d step%s, the same partners in "
      "reverse order; each sends what it holds and copies what it gave "
      "away, so the window doubles back to the whole buffer.\n",
      K, K == 1 ? "" : "s");
  for (int k = K - 1, j = 0; k >= 0; k--, j++) {
    rs__narr_begin(n);
    for (int v = 0; v < P; v++) {
      const int r = rs__rhd_rank(W, v);
      const rs_rhd_halves_t h = rs__rhd_halving(W, r, (size_t)P, k);
      rs__narr_send(n, r, rs__rhd_rank(W, v ^ (1 << k)), (int)h.keep_off,
                    (int)(h.keep_off + h.keep_len), RS_RECV_COPY);
    }
    snprintf(title, sizeof title, "all-gather step %d (distance %d)", j,
             1 << k);
    rs__narr_end(n, title);
  }
  if (E) {
    rs__narr_say(n,
                 "\nfold-out: each even worker r below 2E sends the result to "
                 "r+1, which copies it.\n");
    rs__narr_begin(n);
    for (int r = 0; r < 2 * E; r += 2)
      rs__narr_send(n, r, r + 1, 0, P, RS_RECV_COPY);
    rs__narr_end(n, "fold-out");
  }
  rs__narr_say(
      n,
      "\nEvery worker now holds every part %s all %d workers: %d steps; "
      "each worker taking part sends (P-1)/P of its buffer in the "
      "halvings and as much in the doublings, as the ring does, in "
      "2 log2 P steps instead of 2(W-1).\n",
      n->result, W, n->steps);
}

/* The columns: the halvings' cuts. Window [s, s+len) splits at s + len/2;
 * the leaves in order are the P parts. */
static int layout(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                  const char **word, const char **words) {
  const int workers = shape.workers;
  const int P = rs__pof2(workers);
  (void)cap;
  *word = "part";
  *words = "parts";
  offsets[0] = 0;
  offsets[P] = elems;
  for (int span = P; span > 1; span /= 2)
    for (int c = 0; c < P; c += span) {
      size_t lo = offsets[c], hi = offsets[c + span];
      offsets[c + span / 2] = lo + (hi - lo) / 2;
    }
  return P;
}

/* rd.h's rs__rd_depth, for the flat or any shape. */
static int depth(rs_shape_t shape) { return rs__rd_depth(shape.workers); }

const rs_algo_t rs__algo_rhd = {
    .name = "rhd",
    .caps = RS__CAP_AUTO | RS__CAP_FORMULA,
    .send_peers = peers,
    .recv_peers = peers,
    .message_elems = rs__algo_capped_elems,
    /* the all-gather writes the half a partner may still be reading */
    .direct_slots = rs__algo_never_direct,
    .messages = messages,
    .steps = steps,
    .sends = sends,
    .depth = depth,
    .predict = predict,
    .sim_bucket = sim_bucket,
    .step_least = step_least,
    .sim_scratch = sim_scratch,
    .title = "Rabenseifner's all-reduce (recursive halving, then doubling)",
    .layout = layout,
    .narrate = narrate,
    .run_bucket = rs__rhd_bucket};
