/* algo/simrun.c - the runner's step (its NIC load placed as it comes)
 * and the schedule simulation's repeats (algo/simrun.h's DESIGN
 * blocks): a part of a schedule that moves the state on uniformly, or
 * field by field with every max settled, is not played again. Exact:
 * test_topo_sim holds every algorithm to the plain simulation. */
#include "algo/simrun.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A save: the state from here on is kept worker by worker as each is
 * first touched (rs__simrun_seen). */
static void save(rs_simrun_t *s) {
  rs_simtrack_t *t = s->track;
  if (++t->touch_id == 0) { /* (wrapped: no stale stamp may match) */
    const size_t W = (size_t)t->workers;
    memset(t->seen_at, 0, W * sizeof *t->seen_at);
    memset(t->sent_at, 0, W * sizeof *t->sent_at);
    memset(t->got_at, 0, W * sizeof *t->got_at);
    t->touch_id = 1;
  }
  t->seen_n = 0; /* (each worker's state is saved as it is first touched) */
}

void rs__simrun_seen(rs_simrun_t *s, int r) {
  rs_simtrack_t *t = s->track;
  t->seen_at[r] = t->touch_id;
  t->saved[r] = rs__simstate_of(&s->clocks[r]);
  t->seen[t->seen_n++] = r;
}

/* A state's fields (rs_simstate_t): its clock and four ports. */
enum {
  MOVE_CLOCK = 1,
  MOVE_LINK = 2,
  MOVE_PORT = 4,
  MOVE_NIC = 8,
  MOVE_NIC_IN = 16
};
enum { FIELDS = 5 };

static const size_t field_at[FIELDS] = {
    offsetof(rs_simstate_t, clock), offsetof(rs_simstate_t, link_free),
    offsetof(rs_simstate_t, in_free), offsetof(rs_simstate_t, nic_free),
    offsetof(rs_simstate_t, nic_in_free)};

static uint64_t *field(rs_simstate_t *x, int f) {
  return (uint64_t *)(void *)((char *)x + field_at[f]);
}

/* The ports of c that took a transfer since its state b, as MOVE_ bits
 * (port p's is 2 << p). */
static int ports_used(const rs_simclock_t *c, const rs_simstate_t *b) {
  int m = 0;
  for (int p = 0; p < 4; p++)
    m |= (c->port_last[p] > b->transfers) << (p + 1);
  return m;
}

/* The fields that carry r's part since the save on: a worker that
 * received, its clock and the ports it used (a port it did not use is
 * not read); one that only sent, the ports it sent through, when its
 * clock (not moved: it received nothing) is behind each of them, so that
 * every send departs when its port is free. None if it neither sent nor
 * received (a straggler's step alone); -1 if it only sent but its clock
 * could still hold a send up, or it sent through no port. */
static int moves(const rs_simtrack_t *t, const rs_simclock_t *c, int r) {
  const int sent = t->sent_at[r] == t->touch_id,
            got = t->got_at[r] == t->touch_id;
  const rs_simstate_t *b = &t->saved[r];
  const int used = ports_used(c, b);
  if (got)
    return MOVE_CLOCK | used;
  if (!sent)
    return 0;
  if ((used & (MOVE_PORT | MOVE_NIC_IN)) || !(used & (MOVE_LINK | MOVE_NIC)) ||
      ((used & MOVE_LINK) && b->clock > b->link_free) ||
      ((used & MOVE_NIC) && b->clock > b->nic_free))
    return -1;
  return used;
}

/* Has r's state moved on from b by delta in the fields m, and stayed in
 * the others? */
static int moved_by(const rs_simclock_t *c, const rs_simstate_t *b, int m,
                    uint64_t delta) {
  rs_simstate_t now = rs__simstate_of(c), was = *b;
  for (int f = 0; f < FIELDS; f++) {
    const uint64_t x = *field(&now, f), y = *field(&was, f);
    if (x < y || x - y != (m & 1 << f ? delta : 0))
      return 0;
  }
  return 1;
}

/* Can every state (clock and ports) move on by `by` without passing
 * UINT64_MAX? */
static int room_for(const rs_simclock_t *c, uint64_t by) {
  rs_simstate_t now = rs__simstate_of(c);
  for (int f = 0; f < FIELDS; f++)
    if (*field(&now, f) > UINT64_MAX - by)
      return 0;
  return 1;
}

/* c's fields m move on by `by`; the ports among them count one more
 * transfer (they took the repeats'). */
static void move_on(rs_simclock_t *c, int m, uint64_t by) {
  c->clock += m & MOVE_CLOCK ? by : 0;
  c->link_free += m & MOVE_LINK ? by : 0;
  c->in_free += m & MOVE_PORT ? by : 0;
  c->nic_free += m & MOVE_NIC ? by : 0;
  c->nic_in_free += m & MOVE_NIC_IN ? by : 0;
  for (int p = 0; p < 4; p++)
    if (m & 2 << p)
      rs__sim_use(c, p);
}

/* Has every worker touched since the save moved on by one delta in the
 * fields that carry its part (moves), and the others stayed? Then move
 * them on by times x delta and return delta; else 0, nothing moved. */
static uint64_t repeat(rs_simrun_t *s, uint64_t times) {
  const rs_simtrack_t *t = s->track;
  if (!t || s->over || !times)
    return 0;
  /* the workers touched since the save (the others have not moved) */
  uint64_t delta = 0;
  for (int i = 0; i < t->seen_n; i++) {
    const int r = t->seen[i];
    const rs_simclock_t *c = &s->clocks[r];
    const int m = moves(t, c, r);
    if (m < 0)
      return 0;
    if (m && !delta) { /* (the first field it moves) */
      rs_simstate_t now = rs__simstate_of(c), was = t->saved[r];
      int f = 0;
      while (!(m & 1 << f))
        f++;
      delta = *field(&now, f) - *field(&was, f);
    }
    if (!moved_by(c, &t->saved[r], m, delta))
      return 0;
  }
  const uint64_t by = delta * times;
  if (!delta || by / times != delta)
    return 0;
  for (int i = 0; i < t->seen_n; i++)
    if (!room_for(&s->clocks[t->seen[i]], by))
      return 0;
  for (int i = 0; i < t->seen_n; i++) {
    rs_simclock_t *c = &s->clocks[t->seen[i]];
    move_on(c, moves(t, c, t->seen[i]), by);
    if (c->clock > s->bound)
      s->over = 1;
  }
  return delta;
}

/* Member k's clock: the worker's, or in a group its member's. */
static rs_simclock_t *member(rs_simrun_t *s, int k) {
  return &s->clocks[rs__group_worker(&s->group, k)];
}

/* One channel's part of a saved streaming state: its length; and the
 * channels. */
static size_t channel_len(const rs_simrun_t *s) {
  return s->seg_cap + 7 + s->slot_cap;
}

static int channels(const rs_simrun_t *s) {
  return s->channels > 1 ? s->channels : 1;
}

/* The channels whose state is saved: the live one, or all. */
static int channel_first(const rs_simrun_t *s) { return s->live > 0 ? s->live : 0; }
static int channel_end(const rs_simrun_t *s) {
  return s->live >= 0 ? s->live + 1 : channels(s);
}

void rs__simstream_save(const rs_simrun_t *s, const rs_simclock_t *c,
                        uint64_t *out) {
  const size_t len = rs__simstream_len(s), n = s->seg_cap, K = s->slot_cap;
  memset(out, 0, len * sizeof *out);
  for (int ch = channel_first(s); ch < channel_end(s); ch++, out += channel_len(s)) {
    const uint64_t *ready = c->seg_ready + (size_t)ch * n,
                   *arrive = c->slot_arrive + (size_t)ch * K;
    const int many = channels(s) > 1;
    const uint64_t *const sent_on = &RS_SIM_CHANNEL(c, SENT, ch);
    const uint64_t sent = many ? *sent_on : c->slot_n;
    for (size_t j = 0; j < s->seg_n && j < n; j++)
      out[j] = ready[j];
    const size_t taken = sent < K ? (size_t)sent : K;
    out[n] = taken;
    out[n + 1] = sent;
    for (size_t i = 0; i < taken; i++) /* (oldest first) */
      out[n + 2 + i] = arrive[(sent - taken + i) % K];
    if (channels(s) > 1) { /* (its clock and shares of the ports) */
      out[n + 2 + K] = RS_SIM_CHANNEL(c, CLOCK, ch);
      out[n + 3 + K] = RS_SIM_CHANNEL(c, LINK, ch);
      out[n + 4 + K] = RS_SIM_CHANNEL(c, IN, ch);
      out[n + 5 + K] = RS_SIM_CHANNEL(c, NIC, ch);
      out[n + 6 + K] = RS_SIM_CHANNEL(c, NIC_IN, ch);
    }
  }
}

/* Has c's streaming state moved on from before (rs__simstream_save's)
 * by delta? (tmp: room for one.) Its slots' count aside, every time; of
 * its shares of the ports, those of the ports `used` (MOVE_ bits: the
 * worker's), the others not at all. */
static int stream_moved(const rs_simrun_t *s, const rs_simclock_t *c,
                        const uint64_t *before, uint64_t delta, uint64_t *tmp,
                        int used) {
  const size_t n = s->seg_cap, K = s->slot_cap;
  rs__simstream_save(s, c, tmp);
  for (int ch = channel_first(s); ch < channel_end(s);
       ch++, tmp += channel_len(s), before += channel_len(s)) {
    if (tmp[n] != before[n])
      return 0;
    for (size_t f = n + 2 + K; channels(s) > 1 && f < channel_len(s); f++) {
      /* (its clock, then its ports: link, in, NIC, NIC in) */
      const uint64_t d =
          f == n + 2 + K || used & 2 << (f - n - 3 - K) ? delta : 0;
      if (tmp[f] < before[f] || tmp[f] - before[f] != d)
        return 0;
    }
    for (size_t j = 0; j < s->seg_n && j < n; j++)
      if (tmp[j] < before[j] || tmp[j] - before[j] != delta)
        return 0;
    for (size_t i = 0; i < tmp[n]; i++)
      if (tmp[n + 2 + i] < before[n + 2 + i] ||
          tmp[n + 2 + i] - before[n + 2 + i] != delta)
        return 0;
  }
  return 1;
}

/* c takes the streaming state from (rs__simstream_save's), moved on by
 * by (its shares of the ports not `used`, MOVE_ bits, not moved). */
static void stream_take(const rs_simrun_t *s, rs_simclock_t *c,
                        const uint64_t *from, uint64_t by, int used) {
  const size_t n = s->seg_cap, K = s->slot_cap;
  for (int ch = channel_first(s); ch < channel_end(s); ch++, from += channel_len(s)) {
    uint64_t *ready = c->seg_ready + (size_t)ch * n,
             *arrive = c->slot_arrive + (size_t)ch * K;
    const size_t taken = (size_t)from[n];
    for (size_t j = 0; j < s->seg_n && j < n; j++)
      ready[j] = from[j] + by;
    const uint64_t sent = from[n + 1];
    if (channels(s) > 1)
      RS_SIM_CHANNEL(c, SENT, ch) = sent;
    else
      c->slot_n = (size_t)sent;
    for (size_t i = 0; i < taken; i++)
      arrive[(sent - taken + i) % K] = from[n + 2 + i] + by;
    if (channels(s) > 1) {
      RS_SIM_CHANNEL(c, CLOCK, ch) = from[n + 2 + K] + by;
      RS_SIM_CHANNEL(c, LINK, ch) =
          from[n + 3 + K] + (used & MOVE_LINK ? by : 0);
      RS_SIM_CHANNEL(c, IN, ch) = from[n + 4 + K] + (used & MOVE_PORT ? by : 0);
      RS_SIM_CHANNEL(c, NIC, ch) = from[n + 5 + K] + (used & MOVE_NIC ? by : 0);
      RS_SIM_CHANNEL(c, NIC_IN, ch) =
          from[n + 6 + K] + (used & MOVE_NIC_IN ? by : 0);
    }
  }
}

uint64_t rs__simrun_repeat_all(rs_simrun_t *s, const rs_simstate_t *before,
                               int turn, uint64_t times,
                               rs_simstate_t *scratch) {
  const int W = s->shape.workers;
  turn = ((turn % W) + W) % W;
  const uint64_t delta = member(s, turn)->clock - before[0].clock;
  const uint64_t by = delta * times;
  if (s->over || !delta || !times || by / times != delta)
    return 0;
  /* (a streaming schedule's segments and slots too: stream_before) */
  const size_t len = rs__simstream_len(s);
  uint64_t *const sb = s->stream_before, *const ss = s->stream_scratch;
  /* (worker r + turn now where r was, moved on in its clock and the
   * ports it used: as r's, the turn keeping each worker's role) */
  for (int r = 0; r < W; r++) {
    const rs_simclock_t *x = member(s, (r + turn) % W);
    const int used = ports_used(x, &before[(r + turn) % W]);
    if (!moved_by(x, &before[r], MOVE_CLOCK | used, delta) ||
        !room_for(member(s, r), by) ||
        (sb && !stream_moved(s, x, sb + (size_t)r * len, delta, ss, used)))
      return 0;
  }
  /* (where worker r's state goes: times more turns on) */
  const int to = (int)((long long)turn * (long long)(times % (uint64_t)W) % W);
  if (to && !scratch)
    return 0;
  for (int r = 0; to && r < W; r++) {
    scratch[r] = rs__simstate_of(member(s, r));
    /* (its transfers: here the ports it used, which its state takes) */
    scratch[r].transfers = (uint64_t)ports_used(member(s, r), &before[r]);
    if (sb)
      rs__simstream_save(s, member(s, r), ss + (size_t)r * len);
  }
  for (int r = 0; r < W; r++) {
    rs_simclock_t *c = member(s, (r + to) % W);
    const rs_simstate_t from = to ? scratch[r] : rs__simstate_of(c);
    /* (the ports r used, which r's state takes with it) */
    const int used = to ? (int)from.transfers : ports_used(c, &before[r]);
    c->clock = from.clock;
    c->link_free = from.link_free;
    c->in_free = from.in_free;
    c->nic_free = from.nic_free;
    c->nic_in_free = from.nic_in_free;
    move_on(c, MOVE_CLOCK | used, by);
    if (sb && to)
      stream_take(s, c, ss + (size_t)r * len, by, used);
    else if (sb) {
      rs__simstream_save(s, c, ss);
      stream_take(s, c, ss, by, used);
    }
    if (c->clock > s->bound)
      s->over = 1;
  }
  return delta;
}

/* c's port p, free at *free, is free at `at` if that is later. */
static void settle(rs_simclock_t *c, uint64_t *free, uint64_t at, int p) {
  if (*free < at) {
    *free = at;
    rs__sim_use(c, p);
  }
}

void rs__simrun_settle(rs_simrun_t *s) {
  const int W = s->shape.workers;
  uint64_t earliest = UINT64_MAX;
  for (int r = 0; r < W; r++)
    earliest = s->clocks[r].clock < earliest ? s->clocks[r].clock : earliest;
  for (int r = 0; r < W && s->net->enabled; r++) {
    rs_simclock_t *c = &s->clocks[r];
    settle(c, &c->link_free, earliest, RS_PORT_LINK);
    settle(c, &c->nic_free, earliest, RS_PORT_NIC);
    settle(c, &c->in_free, earliest, RS_PORT_IN);
    settle(c, &c->nic_in_free, earliest, RS_PORT_NIC_IN);
  }
}

void rs__simrun_channel_alone(rs_simrun_t *s, int ch, int step0) {
  for (int r = 0; r < s->shape.workers; r++) {
    rs_simclock_t *x = &s->clocks[r];
    x->channel = (uint8_t)ch;
    x->alone = 1;
    x->clock = RS_SIM_CHANNEL(x, CLOCK, ch);
    x->link_free = RS_SIM_CHANNEL(x, LINK, ch);
    x->in_free = RS_SIM_CHANNEL(x, IN, ch);
    x->nic_free = RS_SIM_CHANNEL(x, NIC, ch);
    x->nic_in_free = RS_SIM_CHANNEL(x, NIC_IN, ch);
    if (s->uses_at)
      s->uses_at[2 * (size_t)r] = x->transfers;
  }
  s->live = ch;
  s->step = step0;
}

/* a's latest with b's, field by field: the clock and the ports m (MOVE_
 * bits). */
static void fold_state(rs_simstate_t *a, const rs_simclock_t *b, int m) {
  rs_simstate_t x = rs__simstate_of(b);
  for (int f = 0; f < FIELDS; f++)
    if ((f == 0 || m & 1 << f) && *field(&x, f) > *field(a, f))
      *field(a, f) = *field(&x, f);
}

/* The ports worker r used in the channel playing alone (MOVE_ bits; with
 * no record, all). */
static int channel_used(const rs_simrun_t *s, int r) {
  int m = 0;
  for (int p = 0; p < 4; p++)
    m |= (!s->uses_at || s->clocks[r].port_last[p] > s->uses_at[2 * (size_t)r])
         << (p + 1);
  return m;
}

void rs__simrun_channel_fold(const rs_simrun_t *s, rs_simstate_t *all) {
  for (int r = 0; r < s->shape.workers; r++)
    fold_state(&all[r], &s->clocks[r], ~0);
}

static void fold_image(rs_simrun_t *s, const int *perm, rs_simstate_t *all) {
  for (int r = 0; r < s->shape.workers; r++) {
    /* (perm[r]'s ports took what r's took in the channel, no other: a
     * repeat of a part that holds this bucket sees them used) */
    const int used = channel_used(s, r);
    fold_state(&all[perm[r]], &s->clocks[r], used);
    if (s->uses_at)
      s->uses_at[2 * (size_t)perm[r] + 1] |= (uint64_t)used;
  }
}

/* Can the model not tell worker a from worker b (image, below)? Of
 * their ports, those a used in the channel (m: MOVE_ bits), which b's
 * image uses, and no other. */
static int alike(const rs_simclock_t *a, const rs_simclock_t *b,
                 const rs_simstate_t *sa, const rs_simstate_t *sb, int m) {
  rs_simstate_t x = *sa, y = *sb;
  for (int f = 0; f < FIELDS; f++)
    if ((f == 0 || m & 1 << f) && *field(&x, f) != *field(&y, f))
      return 0;
  return a->out.latency_ns == b->out.latency_ns &&
         a->out.bandwidth == b->out.bandwidth &&
         a->straggler_ns == b->straggler_ns &&
         a->nic_latency_ns == b->nic_latency_ns && a->off_node == b->off_node &&
         a->on_node == b->on_node;
}

static int image(const rs_simrun_t *s, const rs_simstate_t *start,
                 const int *perm, int step_first) {
  const int W = s->shape.workers, G = s->shape.gpus < W ? s->shape.gpus : W;
  if (!s->track || s->group.stride || rs__simrun_stopped(s))
    return 0; /* (a plain simulation plays every channel; a group's
                 members are not the workers) */
  for (int r = 0; r < W; r++)
    if (perm[r] < 0 || perm[r] >= W || perm[r] / G != r / G ||
        !alike(&s->clocks[r], &s->clocks[perm[r]], &start[r], &start[perm[r]],
               channel_used(s, r)))
      return 0;
  return !s->load || rs__topo_load_alike(s->load, perm, step_first, s->step);
}

void rs__simrun_channels_done(rs_simrun_t *s, const rs_simstate_t *all) {
  s->live = -1;
  for (int r = 0; r < s->shape.workers; r++) {
    rs_simclock_t *x = &s->clocks[r];
    x->channel = 0;
    x->alone = 0;
    x->clock = all[r].clock;
    x->link_free = all[r].link_free;
    x->in_free = all[r].in_free;
    x->nic_free = all[r].nic_free;
    x->nic_in_free = all[r].nic_in_free;
    /* (the images' transfers; none known: every port one, which only
     * refuses repeats) */
    move_on(x, s->uses_at ? (int)s->uses_at[2 * (size_t)r + 1] : ~MOVE_CLOCK,
            0);
    if (s->uses_at)
      s->uses_at[2 * (size_t)r + 1] = 0;
  }
}

int rs__simchannels_begin(rs_simrun_t *s, rs_simchannels_t *c, int images) {
  const size_t W = (size_t)s->shape.workers;
  images = images && c->busy > 1 && s->track; /* (plain: every channel) */
  c->all = malloc(W * sizeof *c->all);
  c->start = images ? malloc(W * sizeof *c->start) : NULL;
  c->perm = images ? malloc(W * sizeof *c->perm) : NULL;
  if (!c->all || (images && (!c->start || !c->perm))) {
    free(c->all);
    free(c->start);
    free(c->perm);
    s->nomem = 1;
    return RS_ENOMEM;
  }
  for (size_t r = 0; r < W; r++) {
    c->all[r] = rs__simstate_of(&s->clocks[r]);
    if (c->start)
      c->start[r] = c->all[r];
  }
  c->step0 = s->step;
  memset(c->done, 0, sizeof c->done);
  return RS_OK;
}

void rs__simchannels_played(rs_simrun_t *s, rs_simchannels_t *c, int k) {
  s->played++;
  c->done[k] = 1;
  for (int j = k + 1; c->start && j < c->busy && !rs__simrun_stopped(s); j++)
    if (!c->done[j] && c->image_of(s, c->ctx, k, j, c->perm) &&
        image(s, c->start, c->perm, c->step0 + 1)) {
      fold_image(s, c->perm, c->all);
      s->images++;
      c->done[j] = 1;
    }
}

void rs__simchannels_end(rs_simrun_t *s, rs_simchannels_t *c) {
  rs__simrun_channels_done(s, c->all);
  free(c->all);
  free(c->start);
  free(c->perm);
}

/* The longest period, in rounds, a run's clocks are looked for in before
 * the state is saved again: at first REPEAT_PERIOD_MIN (a run's first
 * rounds fill the pipeline; the rest repeat round by round), twice as
 * long at each save, at most REPEAT_PERIOD_MAX. */
#define REPEAT_PERIOD_MIN 4
#define REPEAT_PERIOD_MAX 64

void rs__simrepeat_begin(rs_simrun_t *s, rs_simrepeat_t *p, size_t k,
                         size_t last) {
  if (p->last != last) { /* (a new run) */
    p->last = last;
    p->from = SIZE_MAX;
    p->done = 0;
    p->window = REPEAT_PERIOD_MIN;
  }
  if (p->done || p->from != SIZE_MAX || k >= last || !s->track ||
      rs__simrun_stopped(s))
    return;
  save(s);
  p->from = k;
}

size_t rs__simrepeat_end(rs_simrun_t *s, rs_simrepeat_t *p, size_t k) {
  if (p->from == SIZE_MAX || rs__simrun_stopped(s))
    return k;
  const size_t period = k + 1 - p->from, times = (p->last - k) / period;
  if (times && repeat(s, times)) {
    p->done = 1;
    p->from = SIZE_MAX;
    return k + times * period;
  }
  if (period >= p->window) { /* (still settling: save again) */
    p->from = SIZE_MAX;
    p->window =
        2 * p->window < REPEAT_PERIOD_MAX ? 2 * p->window : REPEAT_PERIOD_MAX;
  }
  return k;
}

void rs__simlog_add(struct rs_simlog *log, uint64_t a, uint64_t b) {
  if (log->n + 2 > log->cap) {
    const size_t cap = log->cap ? 2 * log->cap : 1024;
    uint64_t *pair = log->full ? NULL : realloc(log->pair, cap * sizeof *pair);
    if (!pair) {
      log->full = 1; /* (the round is not certified; nothing is lost) */
      return;
    }
    log->pair = pair;
    log->cap = cap;
  }
  log->pair[log->n++] = a;
  log->pair[log->n++] = b;
}

/* Certifications that fail in a run before its recording backs off. */
#define CERT_TRIES 4

static void cert_save(const rs_simrun_t *s, rs_simstate_t *to) {
  for (int r = 0; r < s->track->workers; r++)
    to[r] = rs__simstate_of(&s->clocks[r]);
}

void rs__simcert_begin(rs_simrun_t *s, rs_simcert_t *c, size_t k, size_t last) {
  rs_simtrack_t *t = s->track;
  if (c->last != last) /* (a new run) */
    *c = (rs_simcert_t){.last = last, .retry = k};
  if (!t || c->done || k >= last || k < c->retry || rs__simrun_stopped(s))
    return;
  /* before the round: its state, and its maxes to come */
  cert_save(s, t->cert_state[c->rounds]);
  struct rs_simlog *log = &t->cert_log[c->rounds];
  log->n = 0;
  log->full = 0;
  t->log = log;
}

/* The difference b - a of two times, as a signed amount (0 if either is
 * saturated, which the caller refuses). */
static int grew(uint64_t a, uint64_t b, int64_t *by) {
  if (a == UINT64_MAX || b == UINT64_MAX || a > INT64_MAX || b > INT64_MAX)
    return 0;
  *by = (int64_t)b - (int64_t)a;
  return 1;
}

/* For how many of the next m rounds do the two rounds recorded certify
 * the run (rs_simcert_t's DESIGN)? 0: none. states: before each of them,
 * and s's clocks after the second. A max whose smaller operand grows
 * faster keeps its larger one while the gap lasts: so many rounds. */
static uint64_t certified(const rs_simrun_t *s, uint64_t m) {
  const rs_simtrack_t *t = s->track;
  const struct rs_simlog *a = &t->cert_log[0], *b = &t->cert_log[1];
  if (a->full || b->full || a->n != b->n)
    return 0;
  for (int r = 0; r < t->workers; r++) {
    const rs_simstate_t *x0 = &t->cert_state[0][r],
                        *x1 = &t->cert_state[1][r];
    const rs_simclock_t *x2 = &s->clocks[r];
    const uint64_t f0[FIELDS] = {x0->clock, x0->link_free, x0->in_free,
                                 x0->nic_free, x0->nic_in_free},
                   f1[FIELDS] = {x1->clock, x1->link_free, x1->in_free,
                                 x1->nic_free, x1->nic_in_free},
                   f2[FIELDS] = {x2->clock, x2->link_free, x2->in_free,
                                 x2->nic_free, x2->nic_in_free};
    for (int f = 0; f < FIELDS; f++) {
      int64_t d0, d1;
      if (!grew(f0[f], f1[f], &d0) || !grew(f1[f], f2[f], &d1) || d0 != d1 ||
          d1 < 0)
        return 0;
    }
  }
  for (size_t i = 0; i < b->n; i += 2) {
    int64_t ea, eb;
    if (!grew(a->pair[i], b->pair[i], &ea) ||
        !grew(a->pair[i + 1], b->pair[i + 1], &eb))
      return 0;
    const uint64_t x = b->pair[i], y = b->pair[i + 1];
    if (x == y ? ea != eb : x > y ? ea < eb : eb < ea) {
      /* x + j ea > y + j eb (or the other way) for j <= gap / closing */
      if (x == y)
        return 0;
      const uint64_t gap = x > y ? x - y : y - x;
      const uint64_t closing = (uint64_t)(x > y ? eb - ea : ea - eb);
      const uint64_t rounds = (gap - 1) / closing;
      m = rounds < m ? rounds : m;
    }
  }
  return m;
}

size_t rs__simcert_end(rs_simrun_t *s, rs_simcert_t *c, size_t k) {
  rs_simtrack_t *t = s->track;
  if (!t || c->done || k >= c->last || k < c->retry)
    return k;
  t->log = NULL;
  if (rs__simrun_stopped(s)) {
    c->rounds = 0;
    return k;
  }
  if (++c->rounds < 2)
    return k;
  /* two rounds recorded, the state after them in the clocks: the rest of
   * the run, m rounds, each moves every field on by its last move */
  const uint64_t m = certified(s, c->last - k);
  if (m) {
    int room = 1; /* (every field stays below 2^63) */
    for (int r = 0; room && r < t->workers; r++) {
      rs_simstate_t now = rs__simstate_of(&s->clocks[r]),
                    p = t->cert_state[1][r];
      for (int f = 0; f < FIELDS; f++) {
        const uint64_t d = *field(&now, f) - *field(&p, f);
        room &= d == 0 || d <= (INT64_MAX - *field(&now, f)) / m;
      }
    }
    if (room) {
      for (int r = 0; r < t->workers; r++) {
        rs_simclock_t *x = &s->clocks[r];
        const rs_simstate_t *p = &t->cert_state[1][r];
        x->clock += (x->clock - p->clock) * m;
        x->link_free += (x->link_free - p->link_free) * m;
        x->in_free += (x->in_free - p->in_free) * m;
        x->nic_free += (x->nic_free - p->nic_free) * m;
        x->nic_in_free += (x->nic_in_free - p->nic_in_free) * m;
        if (s->live >= 0 && x->on_channels && !x->stream) {
          /* (they stand for the live channel's: tree.c) */
          RS_SIM_CHANNEL(x, CLOCK, s->live) = x->clock;
          RS_SIM_CHANNEL(x, LINK, s->live) = x->link_free;
          RS_SIM_CHANNEL(x, IN, s->live) = x->in_free;
          RS_SIM_CHANNEL(x, NIC, s->live) = x->nic_free;
          RS_SIM_CHANNEL(x, NIC_IN, s->live) = x->nic_in_free;
        }
        if (x->clock > s->bound)
          s->over = 1;
      }
      if (k + m == c->last) {
        c->done = 1;
        return c->last;
      }
      /* (as far as a max keeps its larger operand: record afresh) */
      c->rounds = 0;
      c->misses = 0;
      c->retry = k + m + 1;
      return k + m;
    }
  }
  /* not yet: the second round recorded becomes the first, or after a few
   * misses the recording rests for as many rounds as it has missed */
  if (++c->misses >= CERT_TRIES) {
    c->retry = k + 1 + c->misses;
    c->rounds = 0;
    return k;
  }
  rs_simstate_t *first = t->cert_state[0];
  t->cert_state[0] = t->cert_state[1];
  t->cert_state[1] = first;
  struct rs_simlog swap = t->cert_log[0];
  t->cert_log[0] = t->cert_log[1];
  t->cert_log[1] = swap;
  c->rounds = 1;
  return k;
}

void rs__simrun_step(rs_simrun_t *s) {
  s->step++;
  if (rs__simrun_stopped(s)) /* (its loops run out, doing nothing) */
    return;
  if (s->load && s->load->builder && rs__topo_load_step(s->load, s->step)) {
    s->nomem = s->over = 1;
    return;
  }
  for (int r = 0; s->net->straggler_count && r < s->shape.workers; r++) {
    const int w = rs__group_worker(&s->group, r);
    if (s->clocks[w].straggler_ns)
      rs__simrun_touch(s, w); /* (its state before the straggler's step) */
    rs__sim_step(&s->clocks[w]);
  }
}

void rs__simrun_repeat_steps(rs_simrun_t *s, int steps) {
  if (steps <= 0)
    return;
  if (s->load && s->load->builder &&
      rs__topo_load_repeat(s->load, s->step, steps)) {
    s->nomem = s->over = 1;
    return;
  }
  s->step += steps;
}
