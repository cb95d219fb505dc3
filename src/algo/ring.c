/* algo/ring.c - the ring all-reduce, as one worker runs it.
 *
 * W workers sit on a ring; worker r sends only to r+1 and receives only from
 * r-1 (mod W). The model's flat buffer is all-reduced bucket by bucket, in
 * DDP's order; each bucket of n elements is cut into W chunks (chunk c is
 * schedule.h: sizes differ by at most one). Which chunk moves when, and
 * whose contributions it holds, is the schedule in algo/ring.h.
 *
 * Reduce-scatter, W-1 steps. In step s worker r sends chunk (r-s) mod W to
 * r+1, and receives chunk (r-s-1) mod W from r-1 and adds it to its own copy
 * (or folds it in with min, max or prod: the op).
 * The chunk it sends in step s+1 is the one it just summed, so each chunk
 * travels once round the ring, gathering one more worker's contribution at
 * every hop. After W-1 steps worker r holds the full sum of chunk (r+1) mod W.
 *
 * All-gather, W-1 steps. In step s worker r sends chunk (r+1-s) mod W (at
 * s=0 the one it completed) and receives chunk (r-s) mod W, which it copies
 * over its own. After W-1 steps every worker holds every summed chunk, and
 * they are bitwise identical because they are copies of one value.
 *
 * Each worker sends 2(W-1) chunks of n/W elements: 2(W-1)/W of the buffer,
 * whatever W is. That is why the ring is bandwidth-optimal.
 *
 * Pipelining: a chunk moves as segs_per_chunk segments. Within a step the
 * worker sends segment k, then receives and reduces segment k; the next
 * step's segment k depends only on this step's segment k, so with K queue
 * slots neighbours overlap sending with reducing.
 *
 * Loop order. By default the worker runs step by step, each step moving
 * its whole chunk (the order above, as the algorithm is taught). NCCL
 * loops the other way round: it cuts the buffer into slices of one
 * segment per chunk and runs all 2(W-1) steps on one slice before the next
 * (runRing's loop over gridOffset). Segment k of step s depends only on
 * segment k of step s-1, so both orders send the same messages and compute
 * the same sums, bit for bit; but in NCCL's, a segment a neighbour has just
 * written is read while it is still in cache, instead of a whole chunk
 * later. w->slices picks it.
 *
 * Averaging (op avg) happens where the sum completes: the last reduce-scatter
 * step divides by W, so the all-gather copies the mean. Or, as DDP's hook
 * does (average), every worker divides its own gradient first.
 *
 * gloo's ring (gloo_ring.c) is this ring the other way round and cut
 * otherwise: the code below runs, simulates, narrates and lays out either
 * from its direction and its cut (algo/ring_way.h); ringsim's ring is
 * the rs_ring_way_t at the end, with its cost formula.
 *
 * This file is the algorithm alone. Moving a segment, and everything
 * around it (the transport, the fold in the run's dtype, the simulated
 * clock, the trace, the watchdog's view, injected faults), is the transfer
 * primitive's: xfer.h.
 */
#include "algo/ring.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/algo.h"
#include "algo/channels.h"
#include "algo/narrate.h"
#include "algo/ring_way.h"
#include "net/netmodel.h"
#include "net/xfer.h"

/* Channels (algo/channels.h). The bucket is cut between C channels as
 * NCCL cuts an all-reduce's data (rs__rings_part), and channel c runs
 * this ring over its part along its own ring order: the worker at
 * position p of channel c's ring plays rank p of the ring above. Within
 * a step, segment by segment, the worker moves each channel's segment
 * in turn (channel 0's, then 1's, ...), each on its own queue: so its
 * port takes the channels' segments turn about, as the channels share a
 * link. One channel is the ring above, unchanged. */
typedef struct ring_part {
  int channel;
  size_t base;       /* its part's first element in the bucket */
  rs_ring_cut_t cut; /* its part, cut into W chunks */
} part_t;

/* The busy channels of the worker's bucket, into parts (room for
 * RS_MAX_CHANNELS), each part cut into segs segments a chunk: the
 * largest part's chunk in messages of at most the worker's cap (the run's
 * segs with one channel). Returns how many. */
typedef struct bucket_cut {
  size_t elems, elem_size; /* the bucket */
  int workers, channels;
  rs_protocol_t proto;
  size_t segs, cap; /* the run's segments per chunk, and a message's most */
} bucket_cut_t;

static int cut_parts(const rs_ring_way_t *way, const bucket_cut_t *b,
                     part_t *parts) {
  const int C = b->channels, W = b->workers;
  if (C <= 1) {
    parts[0] = (part_t){0, 0, way->cut(b->elems, W, b->segs, b->cap)};
    return 1;
  }
  const int busy = rs__rings_busy(b->elems, b->elem_size, C, b->proto);
  size_t most = 0, off, len;
  for (int c = 0; c < busy; c++) {
    rs__rings_part(b->elems, b->elem_size, C, b->proto, c, &off, &len);
    most = len > most ? len : most;
  }
  const size_t segs = rs_segs_per_chunk(most, W, b->cap, 1);
  for (int c = 0; c < busy; c++) {
    rs__rings_part(b->elems, b->elem_size, C, b->proto, c, &off, &len);
    parts[c] = (part_t){c, off, way->cut(len, W, segs, b->cap)};
  }
  return busy;
}

/* Of the busy channels, how many worker r sends on to another node (its
 * next on them is on another node of the shape's). */
static int off_node(rs_shape_t sh, const part_t *parts, int busy, int r) {
  int n = 0;
  if (sh.gpus >= sh.workers)
    return 0;
  const int p = rs__rings_pos(sh, 0, r);
  for (int c = 0; c < busy; c++) {
    const int ch = parts[c].channel;
    const int next = rs__rings_worker(
        sh, ch, rs__ring_next(sh.workers, c ? rs__rings_pos(sh, ch, r) : p));
    n += next / sh.gpus != r / sh.gpus;
  }
  return n;
}

static int parts_of(const rs_ring_way_t *way, const rs_worker_t *w,
                    part_t *parts) {
  const bucket_cut_t b = {w->elems,       w->elem_size, w->workers,
                          rs__shape_channels(w->shape), w->sim.proto,
                          w->segs_per_chunk, w->seg_cap};
  return cut_parts(way, &b, parts);
}

/* What worker w sends and receives on one channel in a step: its peers,
 * as workers, and the two messages' tags (their segment aside). */
typedef struct channel_step {
  int next, prev;
  rs_tag_t out, in;
} channel_step_t;

static channel_step_t channel_step(const rs_ring_way_t *way, const rs_worker_t *w,
                             int channel, rs_phase_t phase, int s) {
  const int W = w->workers;
  const rs_shape_t sh = w->shape;
  /* (its position in the channel's ring plays its rank; without channels
   * both are the rank) */
  const int p = rs__rings_pos(sh, channel, w->rank), prev = way->prev(W, p);
  channel_step_t t = {.next = rs__rings_worker(sh, channel, way->next(W, p)),
                   .prev = rs__rings_worker(sh, channel, prev),
                   .out = {.phase = phase, .step = s}};
  t.in = t.out;
  t.out.chunk = way->send_chunk(W, p, phase, s);
  t.in.chunk = way->recv_chunk(W, p, phase, s);
  way->contributors(W, p, phase, s, &t.out.contrib_first,
                    &t.out.contrib_count);
  way->contributors(W, prev, phase, s, &t.in.contrib_first,
                    &t.in.contrib_count);
  /* (a payload's contributors: workers round the channel's ring from the
   * first) */
  t.out.contrib_first = rs__rings_worker(sh, channel, t.out.contrib_first);
  t.in.contrib_first = rs__rings_worker(sh, channel, t.in.contrib_first);
  return t;
}

/* One step on segments seg_first..seg_end-1 of its chunks (all of them,
 * or one slice): send our chunk to the next worker, receive the previous
 * worker's and do action with it, segment by segment, each segment on
 * every busy channel in turn. */
typedef struct busy_parts {
  const part_t *part;
  int busy;
} busy_parts_t;

static int ring_step(const rs_ring_way_t *way, const busy_parts_t *bp,
                     rs_worker_t *w, rs_phase_t phase, int s,
                     rs_recv_action_t action, size_t seg_first,
                     size_t seg_end) {
  const part_t *const parts = bp->part;
  const int busy = bp->busy;
  channel_step_t t[RS_MAX_CHANNELS];
  for (int c = 0; c < busy; c++)
    t[c] = channel_step(way, w, parts[c].channel, phase, s);
  for (size_t seg = seg_first; seg < seg_end; seg++)
    for (int c = 0; c < busy; c++) {
      size_t off, len;
      int rc;
      w->channel = parts[c].channel; /* (its queues, its clock's state) */
      t[c].out.segment = t[c].in.segment = (int)seg;
      way->segment(&parts[c].cut, t[c].out.chunk, seg, &off, &len);
      if ((len || !way->skip_empty) &&
          (rc = rs__xfer_send(w, t[c].next, parts[c].base + off, len,
                              &t[c].out)))
        return rc;
      way->segment(&parts[c].cut, t[c].in.chunk, seg, &off, &len);
      if ((len || !way->skip_empty) &&
          (rc = rs__xfer_recv(w, t[c].prev, parts[c].base + off, len,
                              &t[c].in, action)))
        return rc;
    }
  w->channel = 0;
  return RS_OK;
}

/* The ring on segments seg_first..seg_end-1 of every chunk of the bucket
 * (of every busy channel's part): reduce-scatter, then all-gather. */
static int ring(const rs_ring_way_t *way, const busy_parts_t *bp,
                rs_worker_t *w, size_t seg_first, size_t seg_end) {
  const int W = w->workers, first_part = seg_first == 0;
  const rs_phase_t RS = RS_PHASE_REDUCE_SCATTER, AG = RS_PHASE_ALL_GATHER;
  int rc;
  /* Reduce-scatter: W-1 steps, each adding one more contribution. */
  for (int s = 0; s < W - 1; s++) {
    rs_recv_action_t action = RS_RECV_REDUCE;
    if (s == W - 2 && w->op == RS_OP_AVG && !w->average)
      action = RS_RECV_REDUCE_MEAN; /* the sum is complete: make it the mean */
    if ((rc = rs__xfer_step(w, RS, s, rs__ring_global_step(W, RS, s),
                            first_part)) ||
        (rc = ring_step(way, bp, w, RS, s, action, seg_first, seg_end)))
      return rc;
  }
  /* Now every worker holds one reduced chunk (ring.h, gloo_ring.h). */
  if (w->collective == RS_COLL_REDUCE_SCATTER)
    return RS_OK;
  /* All-gather: W-1 steps, forwarding the reduced chunks round the ring. */
  for (int s = 0; s < W - 1; s++)
    if ((rc = rs__xfer_step(w, AG, s, rs__ring_global_step(W, AG, s),
                            first_part)) ||
        (rc = ring_step(way, bp, w, AG, s, RS_RECV_COPY, seg_first,
                        seg_end)))
      return rc;
  return RS_OK;
}

/* One bucket: every step over whole chunks, or (NCCL's loop) every step
 * over one slice, slice after slice. */
int rs__ring_run(const rs_ring_way_t *way, rs_worker_t *w) {
  part_t parts[RS_MAX_CHANNELS];
  const int busy = parts_of(way, w, parts);
  const size_t segs = parts[0].cut.per_chunk; /* (every channel's) */
  /* (the channels share the worker's ports: netmodel.h) */
  const int off = off_node(w->shape, parts, busy, w->rank);
  rs__sim_busy(&w->sim, busy, busy - off, off); /* (one next a channel) */
  const busy_parts_t bp = {parts, busy};
  if (!way->slices || !w->slices)
    return ring(way, &bp, w, 0, segs);
  for (size_t seg = 0; seg < segs; seg++) {
    int rc = ring(way, &bp, w, seg, seg + 1);
    if (rc)
      return rc;
  }
  return RS_OK;
}

/* Segment seg of chunk c, where the simulation has no table. */
static size_t sim_len(const rs_ring_way_t *way, const rs_ring_cut_t *cut,
                      int c, size_t seg) {
  size_t off, len;
  way->segment(cut, c, seg, &off, &len);
  return len;
}

/* The most segments the simulation cuts once, into a table (8 MiB), not at
 * each of the 2(W-1) steps each moves in. */
#define SIM_TABLE_MAX ((size_t)1 << 20)

/* DESIGN: the ring's steps repeat, moved round the ring. Worker r sends
 * chunk r - s (or gloo's equivalent) in step s, so worker r + T in step
 * s + T sends the same chunk, of the same size, over a link like r's when
 * T is the GPUs of a node (every node is alike; without nodes T = 1), and
 * no link, straggler or NIC load tells them apart. The schedule is then
 * the same under (step, worker) -> (step + T, worker + T): if the state
 * before step b + kT is the state before step b moved round the ring by
 * kT workers and on by delta (clock, link and port alike), so is every
 * kT steps after it (simrun.h's steady repeats, with a turn). Those periods
 * are skipped: a ring of W workers costs a few periods of steps, not
 * 2(W-1), whatever its chunk sizes. In a group (hier's inner ring among
 * the nodes) the workers are its members, one a node, so T = 1. */

/* The ring's period in workers, or 0 when the workers are not alike under
 * it. */
/* Does every channel's ring map onto itself moved on by T workers (the
 * worker at position p + T is the one at p plus T)? NCCL's rings swap
 * two channels' paths on odd nodes (nccl_rings.c's rule 6): they repeat
 * every two nodes. */
static int rings_repeat(rs_shape_t sh, int T) {
  const int W = sh.workers;
  if (W % T)
    return 0;
  for (int c = 0; c < rs__shape_channels(sh); c++)
    for (int p = 0; p < W; p++)
      if (rs__rings_worker(sh, c, (p + T) % W) !=
          (rs__rings_worker(sh, c, p) + T) % W)
        return 0;
  return 1;
}

static int ring_period(const rs_simrun_t *s) {
  const int W = s->shape.workers;
  int T = s->shape.gpus < W ? s->shape.gpus : 1;
  if (s->shape.rings && !rings_repeat(s->shape, T))
    T = rings_repeat(s->shape, 2 * T) ? 2 * T : W;
  if (!rs__simrun_may_repeat(s) || W < 3 * T)
    return 0;
  for (int r = 0; r < W; r++) {
    const rs_simclock_t
        *a = &s->clocks[rs__group_worker(&s->group, r)],
        *b = &s->clocks[rs__group_worker(&s->group, (r + T) % W)];
    if (a->out.latency_ns != b->out.latency_ns ||
        a->out.bandwidth != b->out.bandwidth ||
        a->straggler_ns != b->straggler_ns)
      return 0;
  }
  return T;
}

/* The longest period, in steps, looked for before the state is saved
 * again. */
#define RING_PERIOD_MAX 64

/* One bucket of the ring on simulated clocks alone, no data (algo.h): in
 * lock step, within a segment every worker sends, then every worker
 * receives, which is each worker's own program order. Periods of steps
 * that repeat the one before, turned, are skipped (the DESIGN above).
 * sim_pass plays the channels given (one, or the ring's only), each
 * segment on each in turn. */
/* One round of a step: segment seg of every worker's chunk, sent, then
 * received; the workers in a channel's ring order (NULL: the identity).
 * (Called with order NULL or not, so that each is compiled alone.) */
typedef struct round {
  const rs_ring_way_t *way;
  const rs_ring_cut_t *cut;
  const size_t *table; /* the segments' sizes, or NULL */
  int send0, recv0, next0, prev0, reduced;
} round_t;

static inline void sim_round(rs_simrun_t *s, const round_t *rd, size_t seg,
                             const int *order) {
  const int W = s->shape.workers, skip = rd->way->skip_empty;
  const int reduced = rd->reduced, next0 = rd->next0, prev0 = rd->prev0;
  const size_t *row = rd->table ? rd->table + seg * (size_t)W : NULL;
  for (int p = 0, c = rd->send0, to = next0; p < W;
       p++, c = c + 1 == W ? 0 : c + 1, to = to + 1 == W ? 0 : to + 1) {
    size_t n = row ? row[c] : sim_len(rd->way, rd->cut, c, seg);
    if (n || !skip)
      rs__simrun_send_seg(s, order ? order[p] : p, order ? order[to] : to, n,
                          seg);
  }
  for (int p = 0, c = rd->recv0, from = prev0; p < W;
       p++, c = c + 1 == W ? 0 : c + 1, from = from + 1 == W ? 0 : from + 1) {
    size_t n = row ? row[c] : sim_len(rd->way, rd->cut, c, seg);
    if (n || !skip)
      rs__simrun_recv_seg(s, order ? order[p] : p,
                          order ? order[from] : from, reduced ? n : 0, seg);
  }
}

static void sim_pass(const rs_ring_way_t *way, rs_simrun_t *s,
                     const part_t *ch) {
  const int W = s->shape.workers, T = ring_period(s);
  const rs_rings_t *g = s->shape.rings;
  /* (the workers in the channel's ring order; NULL: the identity) */
  const int *const order =
      g && !g->identity ? g->order + (size_t)ch->channel * (size_t)W : NULL;
  const size_t per_chunk = ch->cut.per_chunk;
  size_t *table = NULL;
  rs_simstate_t *saved = NULL;
  /* (streaming: every worker's segments and slots too, saved beside) */
  const size_t len = s->seg_mem ? rs__simstream_len(s) : 0;
  uint64_t *streams = NULL;
  if (T && (!(saved = malloc(2 * (size_t)W * sizeof *saved)) ||
            (len && !(streams = malloc(2 * (size_t)W * len * sizeof *streams))))) {
    free(saved);
    s->nomem = 1;
    return;
  }
  if (per_chunk <= SIM_TABLE_MAX / (size_t)W) {
    table = malloc(per_chunk * (size_t)W * sizeof *table);
    if (!table) {
      free(saved);
      free(streams);
      s->nomem = 1;
      return;
    }
    for (size_t seg = 0; seg < per_chunk && !rs__simrun_stopped(s);
         seg++) { /* (W x segments of them: a stop is looked at) */
      size_t off;
      for (int c = 0; c < W; c++)
        way->segment(&ch->cut, c, seg, &off, &table[seg * (size_t)W + (size_t)c]);
    }
  }
  /* worker r's neighbours are worker 0's plus r (ring_way.h), in each
   * channel's ring by position */
  const int next0 = way->next(W, 0), prev0 = way->prev(W, 0);
  assert(way->next(W, W - 1) == (next0 + W - 1) % W &&
         way->prev(W, W - 1) == (prev0 + W - 1) % W);
  for (int phase = 0; phase < 2; phase++) {
    int saved_at = -1; /* the step the state was saved before */
    /* (the longest period looked for before the state is saved again:
     * 2 T at first, twice as long at each save, so that a state saved
     * while the pipeline fills is soon saved again once it is full) */
    int window = 2 * T;
    for (int step = 0; step < W - 1; step++) {
      const rs_phase_t ph = (rs_phase_t)phase;
      const int reduced = ph == RS_PHASE_REDUCE_SCATTER;
      if (T && saved_at < 0 && step + T < W - 1 && !rs__simrun_stopped(s)) {
        for (int r = 0; r < W && !rs__simrun_stopped(s); r++) {
          const rs_simclock_t *c = &s->clocks[rs__group_worker(&s->group, r)];
          saved[r] = rs__simstate_of(c);
          if (streams)
            rs__simstream_save(s, c, streams + (size_t)r * len);
        }
        saved_at = step;
      }
      rs__simrun_step(s);
      /* the worker at position p's chunks are position 0's plus p
       * (ring_way.h) */
      const int send0 = way->send_chunk(W, 0, ph, step);
      const int recv0 = way->recv_chunk(W, 0, ph, step);
      assert(way->send_chunk(W, W - 1, ph, step) == (send0 + W - 1) % W &&
             way->recv_chunk(W, W - 1, ph, step) == (recv0 + W - 1) % W);
      const round_t rd = {way, &ch->cut, table, send0, recv0, next0, prev0,
                          reduced};
      for (size_t seg = 0; seg < per_chunk && !rs__simrun_stopped(s); seg++)
        if (order)
          sim_round(s, &rd, seg, order);
        else
          sim_round(s, &rd, seg, NULL);
      const int k = step + 1 - saved_at; /* (steps since the save) */
      if (saved_at < 0 || k % T || rs__simrun_stopped(s))
        continue;
      /* the turn: the way a chunk travels in a step (gloo's ring runs the
       * other way round) */
      const int travel = rs__mod(
          way->send_chunk(W, 0, ph, 0) - way->send_chunk(W, 0, ph, 1), W);
      const int turn = (int)((long long)k * travel % W);
      const int m = (W - 2 - step) / k;
      s->stream_before = streams;
      s->stream_scratch = streams ? streams + (size_t)W * len : NULL;
      const uint64_t moved =
          m ? rs__simrun_repeat_all(s, saved, turn, (uint64_t)m, saved + W) : 0;
      s->stream_before = s->stream_scratch = NULL;
      if (moved) {
        rs__simrun_repeat_steps(s, m * k);
        step += m * k;
        saved_at = -1;
      } else if (k >= window || !m) {
        saved_at = -1; /* (still settling: save again) */
        window = window < RING_PERIOD_MAX * T ? 2 * window : window;
      }
    }
  }
  free(saved);
  free(streams);
  free(table);
}

/* On channels. They share nothing on the clocks but what no order
 * changes (netmodel.h: each its share of the ports, its slots and its
 * clock; the worker's clock the latest of theirs), so the channels are
 * played one after the other, each alone, its steps' repeats found as
 * one ring's are: the worker's clock, link and port stand for the
 * channel's while it plays (s->live), and take the latest of all after.
 * A channel whose ring and part are an earlier one's moves exactly as
 * that one did: it is not played (NCCL's rings repeat every K channels;
 * on --net every ring is the identity). */
static int same_as(const rs_simrun_t *s, const part_t *a, const part_t *b) {
  const rs_rings_t *g = s->shape.rings;
  if (a->cut.elems != b->cut.elems)
    return 0;
  if (!g || g->identity)
    return 1;
  const size_t W = (size_t)g->workers;
  return memcmp(g->order + (size_t)a->channel * W,
                g->order + (size_t)b->channel * W, W * sizeof *g->order) == 0;
}

/* Is channel b's ring channel a's with the workers relabelled, a's
 * worker r being b's perm[r] (W of them, filled in), and b's part as
 * long (ctx: the parts)? Then b moves as a did, worker r as perm[r],
 * where the model cannot tell them apart (simrun.h's rs_simchannels_t):
 * NCCL's rings on
 * a node with a NIC for each GPU are one another's with each node's
 * GPUs turned or mirrored alike (nccl_rings.c's rule 5). */
static int image_of(const rs_simrun_t *s, const void *ctx, int a, int b,
                    int *perm) {
  const part_t *parts = ctx;
  const rs_rings_t *g = s->shape.rings;
  const size_t W = (size_t)g->workers;
  if (parts[a].cut.elems != parts[b].cut.elems)
    return 0;
  const int *from = g->order + (size_t)parts[a].channel * W,
            *to = g->order + (size_t)parts[b].channel * W;
  for (size_t p = 0; p < W; p++)
    perm[from[p]] = to[p];
  return 1;
}

void rs__ring_sim(const rs_ring_way_t *way, rs_simrun_t *s, size_t elems,
                  size_t segs) {
  const int W = s->shape.workers;
  part_t parts[RS_MAX_CHANNELS];
  const bucket_cut_t b = {elems, s->elem_size, W, s->channels, s->net->proto,
                          segs, s->cap};
  const int busy = cut_parts(way, &b, parts);
  if (s->channels <= 1) {
    sim_pass(way, s, parts);
    return;
  }
  for (int r = 0; r < W; r++) { /* (netmodel.h) */
    const int off = off_node(s->shape, parts, busy, r);
    rs__sim_busy(&s->clocks[r], busy, busy - off, off);
  }
  /* (images where the rings are not all one) */
  const rs_rings_t *g = s->shape.rings;
  rs_simchannels_t ch = {.busy = busy, .image_of = image_of, .ctx = parts};
  if (rs__simchannels_begin(s, &ch, g && !g->identity))
    return;
  for (int k = 0; k < busy && !rs__simrun_stopped(s); k++) {
    int seen = ch.done[k];
    for (int j = 0; j < k && !seen; j++)
      seen = same_as(s, &parts[j], &parts[k]);
    if (seen)
      continue;
    rs__simrun_channel_alone(s, parts[k].channel, ch.step0);
    sim_pass(way, s, &parts[k]);
    rs__simrun_channel_fold(s, ch.all);
    rs__simchannels_played(s, &ch, k);
  }
  rs__simchannels_end(s, &ch);
}

/* The narration's two phases: W-1 steps of reduce-scatter, W-1 of
 * all-gather, every worker sending one chunk along the way in each. */
void rs__ring_narrate(const rs_ring_way_t *way, rs_narrator_t *n, int mean) {
  const int W = n->workers;
  char title[64];
  for (int phase = 0; phase < 2; phase++) {
    rs_phase_t ph = (rs_phase_t)phase;
    const int rs = ph == RS_PHASE_REDUCE_SCATTER;
    rs__narr_say(n,
                 "\n%s: %d step%s; in each, every worker %s and %s the chunk "
                 "it receives%s.\n",
                 rs ? "reduce-scatter" : "all-gather", W - 1, W == 2 ? "" : "s",
                 way->sends, rs ? n->fold_phrase : "copies over its own copy",
                 way->from);
    for (int step = 0; step < W - 1; step++) {
      rs__narr_begin(n);
      for (int r = 0; r < W; r++) {
        int c = way->send_chunk(W, r, ph, step);
        rs_recv_action_t action = !rs                     ? RS_RECV_COPY
                                  : mean && step == W - 2 ? RS_RECV_REDUCE_MEAN
                                                          : RS_RECV_REDUCE;
        rs__narr_send(n, r, way->next(W, r), c, c + 1, action);
      }
      snprintf(title, sizeof title, "%s step %d",
               rs ? "reduce-scatter" : "all-gather", step);
      rs__narr_end(n, title);
    }
    if (rs)
      rs__narr_owners(n, "reduce-scatter");
  }
}

/* The narration's columns are the W chunks, where the cut puts them. */
int rs__ring_layout(const rs_ring_way_t *way, int workers, size_t elems,
                    size_t cap, size_t *offsets, const char **word,
                    const char **words) {
  const rs_ring_cut_t cut = way->cut(elems, workers, 1, cap);
  *word = "chunk";
  *words = "chunks";
  for (int c = 0; c <= workers; c++) {
    size_t len;
    offsets[c] = elems;
    if (c < workers)
      way->segment(&cut, c, 0, &offsets[c], &len);
  }
  return workers;
}

int rs__ring_steps(rs_shape_t shape, rs_collective_t collective) {
  const int workers = shape.workers;
  return (collective == RS_COLL_ALLREDUCE ? 2 : 1) * (workers - 1);
}

int rs__ring_depth(rs_shape_t shape) { return shape.workers - 1; }

size_t rs__ring_messages(const rs_ring_way_t *way, int workers, size_t elems,
                         size_t segs, size_t cap, rs_collective_t collective) {
  return (size_t)rs__ring_steps(rs__shape_flat(workers), collective) *
         way->cut(elems, workers, segs, cap).per_chunk;
}

/* ringsim's ring: W near-equal chunks (schedule.h), each cut into the
 * run's segs near-equal segments. */
static rs_ring_cut_t cut(size_t elems, int workers, size_t segs, size_t cap) {
  (void)cap;
  return (rs_ring_cut_t){.elems = elems, .workers = workers, .per_chunk = segs};
}

static void segment(const rs_ring_cut_t *c, int chunk, size_t seg,
                    size_t *offset, size_t *len) {
  rs__segment(c->elems, c->workers, c->per_chunk, chunk, seg, offset, len);
}

static const rs_ring_way_t way = {.next = rs__ring_next,
                                  .prev = rs__ring_prev,
                                  .send_chunk = rs__ring_send_chunk,
                                  .recv_chunk = rs__ring_recv_chunk,
                                  .contributors = rs__ring_contributors,
                                  .cut = cut,
                                  .segment = segment,
                                  .slices = 1,
                                  .sends = "sends one chunk to the next worker",
                                  .from = ""};

static int ring_bucket(rs_worker_t *w) { return rs__ring_run(&way, w); }

static void sim_bucket(rs_simrun_t *s, size_t elems, size_t segs) {
  rs__ring_sim(&way, s, elems, segs);
}

static void narrate(rs_narrator_t *n, int mean) {
  rs__ring_narrate(&way, n, mean);
  rs__narr_say(n,
               "\nEvery worker now holds every chunk %s all %d "
               "workers: %d steps, each worker sending %d chunks, 2(W-1)/W of "
               "%s.\n",
               n->result, n->workers, 2 * (n->workers - 1),
               2 * (n->workers - 1), n->whole ? n->whole : "its buffer");
}

static int layout(rs_shape_t shape, size_t elems, size_t cap, size_t *offsets,
                  const char **word, const char **words) {
  const int workers = shape.workers;
  return rs__ring_layout(&way, workers, elems, cap, offsets, word, words);
}

/* Segment j of every step goes at the pace of the largest segment j of
 * any chunk: the largest chunk's (ceil(n/W) elements; with fewer
 * elements than workers, one), cut as every chunk into segs near-equal
 * segments, the first `big` of them one element longer. */
static rs_stream_sizes_t stream_sizes(size_t elems, size_t workers,
                                      size_t segs, size_t elem_size) {
  const size_t chunk = elems / workers + (elems % workers != 0);
  const size_t lo = chunk / segs * elem_size;
  return (rs_stream_sizes_t){chunk % segs, lo + elem_size, lo};
}

/* The cost formula (RS_NETMODEL_FORMULA): 2(W-1) steps of k segments
 * streamed (rs__ring_stream_ns), reduced in the W-1 of reduce-scatter;
 * on C channels (a flat network's: every channel on every link), each
 * its part's. */
static uint64_t predict(const rs_netmodel_t *m, rs_shape_t shape, size_t elems,
                        size_t segs, size_t cap, size_t elem_size) {
  const int workers = shape.workers;
  if (!m->enabled || workers < 2)
    return 0;
  const uint64_t W = (uint64_t)workers;
  const int C = rs__shape_channels(shape);
  rs_stream_sizes_t sizes[RS_MAX_CHANNELS];
  if (C == 1) {
    sizes[0] = stream_sizes(elems, W, segs, elem_size);
    return rs__ring_stream_ns(m, (int)(2 * (W - 1)), (int)(W - 1), segs,
                              sizes, 1);
  }
  part_t parts[RS_MAX_CHANNELS];
  const bucket_cut_t b = {elems, elem_size, workers, C, m->proto, segs, cap};
  const int busy = cut_parts(&way, &b, parts);
  for (int c = 0; c < busy; c++)
    sizes[c] = stream_sizes(parts[c].cut.elems, W, parts[c].cut.per_chunk,
                            elem_size);
  return rs__ring_stream_ns(m, (int)(2 * (W - 1)), (int)(W - 1),
                            parts[0].cut.per_chunk, sizes, busy);
}

/* The ring's edges: r -> r+1, on each channel its next in the channel's
 * ring (RS__CAP_CHANNELS: channel c's at c). */
static int send_peers(rs_shape_t shape, int rank, int *peers) {
  const int W = shape.workers, C = rs__shape_channels(shape);
  for (int c = 0; c < C; c++)
    peers[c] = rs__rings_worker(
        shape, c, rs__ring_next(W, rs__rings_pos(shape, c, rank)));
  return C;
}

static int recv_peers(rs_shape_t shape, int rank, int *peers) {
  const int W = shape.workers, C = rs__shape_channels(shape);
  for (int c = 0; c < C; c++)
    peers[c] = rs__rings_worker(
        shape, c, rs__ring_prev(W, rs__rings_pos(shape, c, rank)));
  return C;
}

/* In every step each worker sends to r+1 (ring.h): on channels, to each
 * of the shape's channels' next, each once. A small bucket's load is
 * counted on a shape of its busy channels alone (algo/channels.h's
 * rs__rings_busy_shape): an idle channel sends nothing. */
static int sends(rs_shape_t shape, int step, int rank, int *dst, int max) {
  int peers[RS_MAX_CHANNELS], n = 0;
  const int C = send_peers(shape, rank, peers);
  (void)step;
  for (int c = 0; c < C; c++) {
    int seen = 0;
    for (int i = 0; i < n && !seen; i++)
      seen = dst[i] == peers[c];
    if (!seen && n < max)
      dst[n++] = peers[c];
  }
  return n;
}

/* The cut of a bucket between the channels, as the shape's rings say
 * (elements' bytes and protocol); without them, C channels alike and no
 * smaller than the whole: bounds. Returns how many are busy, their
 * parts' largest in *most and the segments a chunk of each in *segs. */
static int shape_parts(rs_shape_t shape, size_t elems, size_t *segs,
                       size_t cap, size_t *most) {
  const int C = rs__shape_channels(shape);
  const rs_rings_t *g = shape.rings;
  *most = elems;
  if (C == 1 || !g)
    return C;
  part_t parts[RS_MAX_CHANNELS];
  const bucket_cut_t b = {elems, g->elem_size, shape.workers, C, g->proto,
                          *segs, cap};
  const int busy = cut_parts(&way, &b, parts);
  *most = 0;
  for (int c = 0; c < busy; c++)
    *most = parts[c].cut.elems > *most ? parts[c].cut.elems : *most;
  *segs = parts[0].cut.per_chunk;
  return busy;
}

/* Every message is one segment of a chunk: the largest chunk has
 * ceil(elems/W) elements (of the largest channel's part), its largest
 * segment ceil of that over segs. */
static size_t message_elems(rs_shape_t shape, int from, int to, size_t elems,
                            size_t segs, size_t cap) {
  const int workers = shape.workers;
  (void)from, (void)to;
  shape_parts(shape, elems, &segs, cap, &elems);
  size_t chunk = elems / (size_t)workers + (elems % (size_t)workers != 0);
  return chunk ? (chunk + segs - 1) / segs : 0;
}

/* A worker overwrites a chunk it sent (with the next sum, or in all-gather
 * with the final value) (W-1) x segs messages after sending it, segs being
 * its bucket's (in NCCL's slice order, W-1 messages after: one slice's
 * steps). With at most that many slots its successor has released the
 * message by then. */
static size_t direct_slots(rs_shape_t shape, size_t min_segs, int slices) {
  const int workers = shape.workers;
  return (size_t)(workers > 1 ? workers - 1 : 1) * (slices ? 1 : min_segs);
}

static size_t messages(rs_shape_t shape, int rank, size_t elems, size_t segs,
                       size_t cap, rs_collective_t collective) {
  const int workers = shape.workers;
  size_t most;
  (void)rank;
  const int busy = shape_parts(shape, elems, &segs, cap, &most);
  return (size_t)busy *
         rs__ring_messages(&way, workers, elems, segs, cap, collective);
}

/* Every step a worker sends one chunk in segs segments, empty or not; the
 * smallest chunk has elems / W elements (algo.h). On channels, of
 * channel 0's part (the chain algo.c follows is channel 0's), in its
 * segments. */
static size_t step_least(rs_shape_t shape, int step, size_t elems, size_t segs,
                         size_t cap, size_t *rounds) {
  (void)step;
  if (rs__shape_channels(shape) > 1 && shape.rings) {
    /* (the same at every step: the last bucket's kept, one a thread) */
    static _Thread_local struct {
      bucket_cut_t b;
      size_t elems, segs;
    } last;
    const rs_rings_t *g = shape.rings;
    const bucket_cut_t b = {elems, g->elem_size, shape.workers,
                            rs__shape_channels(shape), g->proto, segs, cap};
    if (b.elems != last.b.elems || b.elem_size != last.b.elem_size ||
        b.workers != last.b.workers || b.channels != last.b.channels ||
        b.proto != last.b.proto || b.segs != last.b.segs ||
        b.cap != last.b.cap) {
      part_t parts[RS_MAX_CHANNELS];
      if (cut_parts(&way, &b, parts) < 1)
        return *rounds = 0, 0;
      last.b = b;
      last.elems = parts[0].cut.elems;
      last.segs = parts[0].cut.per_chunk;
    }
    elems = last.elems;
    segs = last.segs;
  }
  *rounds = segs;
  return elems / (size_t)shape.workers / segs;
}

/* NCCL's ring (NCCL_ALGO_RING), the only one with NCCL's slice order and
 * a reduce-scatter alone: DESIGN.md's ring, which the reports hold to its
 * counts and its formula (RS_NETMODEL_FORMULA). */
const rs_algo_t rs__algo_ring = {
    .name = "ring",
    .caps = RS__CAP_SLICES | RS__CAP_REDUCE_SCATTER | RS__CAP_AUTO |
            RS__CAP_NCCL | RS__CAP_FORMULA | RS__CAP_TEXTBOOK_RING |
            RS__CAP_STREAM | RS__CAP_CHANNELS,
    .send_peers = send_peers,
    .recv_peers = recv_peers,
    .message_elems = message_elems,
    .direct_slots = direct_slots,
    .messages = messages,
    .steps = rs__ring_steps,
    .sends = sends,
    .depth = rs__ring_depth,
    .predict = predict,
    .sim_bucket = sim_bucket,
    .step_least = step_least,
    .title = "ring all-reduce",
    .layout = layout,
    .narrate = narrate,
    .run_bucket = ring_bucket};
