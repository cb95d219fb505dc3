/* algo/simrun.h - the runner every algorithm's schedule simulation goes
 * through (algo.h's sim_bucket): the workers' simulated clocks played in
 * lock step, round by round, and the repeats that spare it rounds whose
 * result is known (algo/simrun.c). algo/algo.c runs it.
 */
#ifndef RINGSIM_SIMRUN_H
#define RINGSIM_SIMRUN_H

#include <stddef.h>
#include <stdint.h>

#include "net/netmodel.h"
#include "net/topo.h"
#include "net/xfer.h"

/* A worker's state on the simulated clock: all one part of a schedule
 * hands the next (its clock and four ports: netmodel.h), and the
 * transfers its ports had taken, by which whoever keeps it tells the
 * ports a part used since (those whose last transfer is later): one it
 * did not use has not moved, and moves with no repeat of it. */
typedef struct rs_simstate {
  uint64_t clock, link_free, in_free, nic_free, nic_in_free;
  uint64_t transfers;
} rs_simstate_t;

static inline rs_simstate_t rs__simstate_of(const rs_simclock_t *c) {
  return (rs_simstate_t){c->clock,    c->link_free,   c->in_free,
                         c->nic_free, c->nic_in_free, c->transfers};
}

/* What the steady repeats (below) keep, over all the workers whoever the
 * group: since the last save (touch_id), the workers touched,
 * each one's state as it was before (saved), and whether it sent and
 * received (the save's touch_id in sent_at, got_at). */
typedef struct rs_simtrack {
  int workers;
  rs_simstate_t *saved;
  int *seen, seen_n;
  uint32_t *seen_at, *sent_at, *got_at, touch_id;
  /* The certified repeats' (rs_simcert_t): the states before two rounds
   * in a row, and the operands of every max each took, in order (log: the
   * round being recorded, NULL when none is). */
  rs_simstate_t *cert_state[2];
  struct rs_simlog {
    uint64_t *pair; /* two a max */
    size_t n, cap;
    int full; /* (more maxes than it could hold: not certified) */
  } cert_log[2], *log;
} rs_simtrack_t;

/* A schedule played on simulated clocks alone (an algorithm's simulate):
 * the same clock calls a threaded run's transfer primitive makes, in lock
 * step. Within a round every sender sends (at most one message each) and
 * then every receiver receives, each worker's own program order. */
typedef struct rs_simrun {
  const rs_netmodel_t *net;
  rs_shape_t shape;      /* the workers, and their nodes' GPUs (topo.h) */
  size_t cap, elem_size; /* elements per message at most; bytes each */
  int step; /* the bucket's global step: one per rs__simrun_step, from 0 */
  /* With a topology of several nodes, its load (topo.h), placed step by
   * step; NULL otherwise. A pointer: a copy of the runner (hier's groups)
   * places into the same one. */
  rs_topo_load_t *load;
  /* On NCCL's channels (algo.c's bucket_load): the load with every
   * channel busy, which load is while a bucket fills them all, and
   * busy_loads[b], with only the first b busy (a small bucket's: an idle
   * channel loads no NIC), made as buckets need them (C of them; NULL:
   * none yet). */
  rs_topo_load_t *full_load, *busy_loads;
  rs_simclock_t *clocks;
  uint64_t *arrive; /* when each worker's last message arrives */
  uint64_t *wire;   /* and how long it took on the wire */
  uint8_t *via_nic; /* and whether it comes from another node */
  void *algo_mem;   /* the algorithm's (rs_algo_t's sim_scratch) */
  /* A streaming algorithm's clocks, every worker's (netmodel.h's
   * rs__sim_stream): on each of its channels, seg_cap segments' ready
   * times (seg_mem), slot_cap arrivals (slot_mem) and 4 words of its own
   * (channel_mem), each array the workers' one after the other (a worker's
   * ready times for the next lie close by). */
  uint64_t *seg_mem, *slot_mem;
  uint64_t *channel_mem;
  size_t seg_cap, slot_cap;
  size_t seg_n; /* the bucket's segments per chunk */
  int channels; /* the ring's channels (shape.channels; at least 1) */
  struct rs_rings *rings; /* their orders, shape.rings (the runner's) */
  /* The channel the ring plays alone (ring.c's rs__ring_sim), whose
   * streaming state alone the steady repeats compare; -1: all. */
  int live;
  /* The steady repeats of a streaming schedule (rs__simrun_repeat_all)
   * also need every worker's segments and slots as they were before:
   * stream_before (W x rs__simstream_len), stream_scratch as many; NULL:
   * no streaming state to check. */
  uint64_t *stream_before, *stream_scratch;
  int nomem;        /* an algorithm could not get memory a bucket needs */
  /* Whom the ranks in the runner's calls count (xfer.h): all zero, the
   * workers; in a group, its members, and shape is the group's, flat. */
  rs_group_t group;
  /* A clock past bound stops the simulation (UINT64_MAX: none): an
   * argmin needs no more of a schedule once it cannot win (rs_auto_choose
   * without predictions). over: one has passed it, or a sim_bucket knows
   * the bucket cannot end within it (the tree's root port), which it may
   * set itself; the simulation's time then reads as more than bound. */
  uint64_t bound;
  int over;
  /* The steady repeats' bookkeeping (below), shared by the runner's
   * copies (hier's groups); NULL in a plain simulation. */
  struct rs_simtrack *track;
  /* Channels played alone, and taken as images (rs_sim_spans_t's) */
  unsigned played, images;
  /* On channels, 2 words a worker: its transfers (netmodel.h) when the
   * channel playing alone began, and the ports (MOVE_ bits) that took
   * transfers in the channels taken as images, which take one each once
   * they are done (rs__simrun_channels_done): a channel's image takes
   * the ports its original took. NULL: none (then every port takes one).
   */
  uint64_t *uses_at;
} rs_simrun_t;
/* The runner's calls, for an algorithm's sim_bucket. A step begins on
 * every worker's clock (a straggler computes): the bucket's next global
 * step, so a sim_bucket calls it once per step of rs_algo_t's steps, in
 * order. */
void rs__simrun_step(rs_simrun_t *s);
/* Has the simulation been asked to stop (rs_netmodel_t's stop)? Each
 * sim_bucket asks it per segment, and then runs out its loops at once. */
static inline int rs__simrun_stopped(const rs_simrun_t *s) {
  return s->over || rs__sim_stopped(s->net);
}
/* DESIGN: steady repeats. Every clock call is max and +, so a part of a
 * schedule (some rounds, a step, a bucket) maps a state moved on
 * uniformly by t to its own result moved on by t. If one part moves the
 * state of every worker that took part in it on by the same delta (its
 * clock, link and port; only the clock and port of one that only
 * received, whose link is not read; only the link of one that only sent,
 * if its clock, not moved, is behind the link and so never holds a send
 * up), leaving the rest as they were, and the next parts
 * are the same part again (the same messages between the same workers, of
 * the same sizes, under the same NIC load, each round's receives reading
 * that round's sends), each of them would move it on by delta too: they
 * need not be played.
 *
 * Two ways in. A part every worker takes part in alike (a bucket; the
 * ring's steps, which repeat turned round the ring): the caller keeps the
 * state before it and asks rs__simrun_repeat_all. A run of identical
 * rounds in a loop (a step's segments of one size): rs_simrepeat_t below,
 * which keeps the state of only the workers each round touches. */

/* Has every worker's whole state moved on from before (W states) by one
 * delta, turned round by `turn` workers (worker r + turn now holds worker
 * r's state before, moved on; 0 for no turn)? Then play `times` more of
 * the same at once: worker r's state goes to worker r + times x turn,
 * moved on by times x delta (scratch: W states, needed only when that
 * turn is not whole). Returns delta, or 0 with nothing moved. In a group
 * (hier's inner ring) the workers are its members, before[k] member k's. */
uint64_t rs__simrun_repeat_all(rs_simrun_t *s, const rs_simstate_t *before,
                               int turn, uint64_t times,
                               rs_simstate_t *scratch);

/* DESIGN: settled ports. Between two buckets a port free before every
 * worker's clock is read by no later transfer: a send departs no sooner
 * than its sender's clock (its data is ready then at the earliest:
 * netmodel.h), and a message arrives no sooner than that, so such a
 * port, out or in, is as good as free at the earliest clock. Raising it
 * to then changes no later time, and makes the ports move with the
 * clocks from bucket to bucket (a NIC side used early in a bucket, or
 * not at all, would stay behind), alike on every worker that left them
 * so, so that the buckets' repeats (rs__simrun_repeat_all) hold more
 * often. rs__simrun_settle does it after a bucket, on every worker; a
 * port it moves takes a transfer (netmodel.h's rs__sim_use). */
void rs__simrun_settle(rs_simrun_t *s);

/* Channels played one by one (ring.c, tree.c: they share nothing on the
 * clocks but maxima). rs__simrun_channel_alone: channel ch plays next,
 * from step step0, alone: every worker's clock, link and port stand for
 * ch's, its messages are ch's, a step's straggler delays ch alone.
 * rs__simrun_channel_fold: into all (W states), the latest of each
 * worker's and the channel just played. rs__simrun_channels_done: the
 * workers take all's, no channel playing. */
void rs__simrun_channel_alone(rs_simrun_t *s, int ch, int step0);
void rs__simrun_channel_fold(const rs_simrun_t *s, rs_simstate_t *all);
void rs__simrun_channels_done(rs_simrun_t *s, const rs_simstate_t *all);

/* DESIGN: a channel that is another's image. Channels whose schedules
 * are one another's with the workers relabelled (NCCL's rings on DGX
 * H100: channel c's ring is channel 0's with every node's GPUs turned
 * or mirrored alike) move alike when the model cannot tell a worker
 * from its image: then channel k ends, worker perm[r], where channel j
 * ended, worker r, and is not played. It is taken only where the
 * model is blind to perm (the worker perm[r] stands where r stood):
 * every worker on the node it was on, with the links, straggler, NIC
 * latency and NIC traffic of the one it replaces, the same state
 * at the channels' start (start: W states, the bucket's, from which
 * every channel starts: netmodel.h's rs__sim_stream), and the NICs
 * loaded alike in the channel's steps step_first..s->step
 * (rs__topo_load_alike: call it after playing j, whose steps those are).
 * Nothing in it depends on a worker's number otherwise, so it is exact
 * (test_channel_images holds it to a plain simulation, which plays every
 * channel: it takes none).
 *
 * A schedule's channels, played one by one (rs_simchannels_t):
 * rs__simchannels_begin, once the bucket's busy channels are set on the
 * clocks (rs__sim_busy), keeps every worker's state (all, and start for
 * the images); the schedule plays each channel not done (alone, folding
 * its end into all), then calls rs__simchannels_played, which takes the
 * later channels that image_of relabels it into and the model cannot
 * tell apart, and marks them done; rs__simchannels_end gives the
 * workers all's and frees what begin took. image_of (ctx: the
 * schedule's cut) says whether channel b is channel a's schedule with
 * a's worker r as b's perm[r] (W of them, filled in). RS_ENOMEM from
 * begin: s->nomem is set, nothing to end. */
typedef struct rs_simchannels {
  rs_simstate_t *all, *start; /* start: NULL without images */
  int *perm;
  int busy, step0;
  unsigned char done[RS_MAX_CHANNELS];
  int (*image_of)(const rs_simrun_t *s, const void *ctx, int a, int b,
                  int *perm);
  const void *ctx;
} rs_simchannels_t;
int rs__simchannels_begin(rs_simrun_t *s, rs_simchannels_t *c, int images);
void rs__simchannels_played(rs_simrun_t *s, rs_simchannels_t *c, int k);
void rs__simchannels_end(rs_simrun_t *s, rs_simchannels_t *c);

/* The same for a run of identical rounds, rounds k..last of a loop (a
 * step's segments of one size): begin before round k, end after it, which
 * returns the round the loop goes on from (k, or past the rounds a repeat
 * of the period since the save played at once). A fresh rs_simrepeat_t
 * (RS_SIMREPEAT_INIT) for each loop. */
typedef struct rs_simrepeat {
  size_t from;   /* the round the state was saved before (SIZE_MAX: none) */
  size_t last;   /* the run's last round */
  int done;      /* a repeat played the run: the rest is played as it is */
  size_t window; /* the longest period looked for since the save */
} rs_simrepeat_t;
#define RS_SIMREPEAT_INIT                                                      \
  { SIZE_MAX, SIZE_MAX, 0, 0 }
void rs__simrepeat_begin(rs_simrun_t *s, rs_simrepeat_t *p, size_t k,
                         size_t last);
size_t rs__simrepeat_end(rs_simrun_t *s, rs_simrepeat_t *p, size_t k);
/* Worker r (of all) is about to change: its state as the save left it
 * is kept, the first time since the save (rs__simrun_seen). */
void rs__simrun_seen(rs_simrun_t *s, int r);
static inline void rs__simrun_touch(rs_simrun_t *s, int r) {
  if (s->track && s->track->seen_at[r] != s->track->touch_id)
    rs__simrun_seen(s, r);
}
/* May a sim_bucket look for steady repeats? Not in a plain simulation. */
static inline int rs__simrun_may_repeat(const rs_simrun_t *s) {
  return s->track != NULL;
}
/* The steps a repeat skipped (steps more, after the step under way):
 * their number and their NIC load, which the caller vouches is the step
 * under way's (topo.h's rs__topo_load_repeat). */
void rs__simrun_repeat_steps(rs_simrun_t *s, int steps);

/* DESIGN: certified repeats, for schedules whose workers do not all move
 * on alike (the tree: a leaf sends ahead of the pipeline). A round of a
 * schedule is maxes and sums of the state and of constants. If two rounds
 * in a row that repeat one round (the same messages, sizes and load) move
 * every field of the state on by the same amounts (field by field: d, the
 * same for both), and in the second every max's larger operand grew at
 * least as much as the smaller one (equal ones alike), then every later
 * round of the run would take the same operands at every max and move the
 * state on by d again: the rest of the run moves the state on by d each,
 * not played. Where a max's smaller operand grows faster (a leaf's lead
 * closing), the larger keeps winning while the gap lasts: the rounds
 * before it closes are skipped so, and the recording starts again.
 * A sim_bucket calls rs__simcert_begin before round k of a run of rounds
 * k..last and rs__simcert_end after it, which returns the round to go on
 * from. A fresh rs_simcert_t (RS_SIMCERT_INIT) for each loop. */
typedef struct rs_simcert {
  size_t last;   /* the run's last round (SIZE_MAX: none yet) */
  int rounds;    /* rounds recorded in a row: 0 or 1 */
  int done;      /* certified: the rest of the run is played as it is */
  size_t retry;  /* no recording before this round */
  size_t misses; /* certifications failed in this run */
} rs_simcert_t;
#define RS_SIMCERT_INIT                                                        \
  { SIZE_MAX, 0, 0, 0, 0 }
void rs__simcert_begin(rs_simrun_t *s, rs_simcert_t *c, size_t k, size_t last);
size_t rs__simcert_end(rs_simrun_t *s, rs_simcert_t *c, size_t k);
/* A max of a and b in the round being recorded (rs__simlog_max). */
void rs__simlog_add(struct rs_simlog *log, uint64_t a, uint64_t b);
static inline void rs__simlog_max(rs_simrun_t *s, uint64_t a, uint64_t b) {
  if (s->track && s->track->log)
    rs__simlog_add(s->track->log, a, b);
}

/* Worker from sends a message of elems elements to worker to, in the
 * step under way: its arrival is kept in the sender's mailbox (send), or
 * in the receiver's (post: a sender of several messages in a round, as
 * the tree's broadcast to its children, keeps each in its receiver's
 * mailbox, to). */
/* (always inlined: every schedule simulation's innermost call) */
__attribute__((always_inline)) static inline void
rs__simrun_mail(rs_simrun_t *s, int from, int to, int box, size_t elems,
                size_t seg) {
  const rs_group_t *g = &s->group;
  uint64_t depart;
  box = rs__group_worker(g, box);
  from = rs__group_worker(g, from);
  to = rs__group_worker(g, to);
  rs__simrun_touch(s, from);
  rs_simclock_t *const c = &s->clocks[from];
  if (s->track && s->track->log) /* (the port it leaves through) */
    rs__simlog_max(s, c->clock,
                   rs__sim_off_node(c, to) ? c->nic_free : c->link_free);
  rs__sim_send(c, to, s->step, elems * s->elem_size, seg, &depart,
               &s->arrive[box], &s->wire[box]);
  s->via_nic[box] = c->last_share != 0;
  if (s->track)
    s->track->sent_at[from] = s->track->touch_id;
}

static inline void rs__simrun_send(rs_simrun_t *s, int from, int to,
                                   size_t elems) {
  rs__simrun_mail(s, from, to, from, elems, 0);
}

static inline void rs__simrun_post(rs_simrun_t *s, int from, int to,
                                   size_t elems) {
  rs__simrun_mail(s, from, to, to, elems, 0);
}

/* A streaming schedule's send: segment seg of its chunk (netmodel.h). */
static inline void rs__simrun_send_seg(rs_simrun_t *s, int from, int to,
                                       size_t elems, size_t seg) {
  rs__simrun_mail(s, from, to, from, elems, seg);
}

/* Worker to receives the message in mailbox box (the sender's, after
 * send), reducing reduced_elems of it. (Inline, as send: the schedule
 * simulation's innermost calls.) */
static inline void rs__simrun_recv_seg(rs_simrun_t *s, int to, int box,
                                       size_t reduced_elems, size_t seg) {
  box = rs__group_worker(&s->group, box);
  to = rs__group_worker(&s->group, to);
  rs__simrun_touch(s, to);
  rs_simclock_t *c = &s->clocks[to];
  if (s->track)
    s->track->got_at[to] = s->track->touch_id;
  const int nic = s->via_nic[box];
  if (s->track && s->track->log) { /* (rs__sim_recv's two maxes) */
    const uint64_t port =
        rs__sat_add(nic ? c->nic_in_free : c->in_free, s->wire[box]);
    rs__simlog_max(s, s->arrive[box], port);
    rs__simlog_max(s, port > s->arrive[box] ? port : s->arrive[box], c->clock);
  }
  rs__sim_recv(c, s->arrive[box], s->wire[box], reduced_elems * s->elem_size,
               seg, nic);
  if (c->clock > s->bound)
    s->over = 1;
}

static inline void rs__simrun_recv(rs_simrun_t *s, int to, int box,
                                   size_t reduced_elems) {
  rs__simrun_recv_seg(s, to, box, reduced_elems, 0);
}

/* A streaming worker's segments and slots (netmodel.h) as the steady
 * repeats compare them: rs__simstream_len values, saved by
 * rs__simstream_save (channel by channel: segment ready times, then how
 * many slots are taken, the messages sent, their arrivals, oldest first,
 * the channel's clock, and on channels its shares of the four ports). */
static inline size_t rs__simstream_len(const rs_simrun_t *s) {
  return (size_t)(s->channels > 1 && s->live < 0 ? s->channels : 1) *
         (s->seg_cap + 7 + s->slot_cap);
}
void rs__simstream_save(const rs_simrun_t *s, const rs_simclock_t *c,
                        uint64_t *out);

#endif /* RINGSIM_SIMRUN_H */
