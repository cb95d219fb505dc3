/* algo/simrun.c - the runner's step (its NIC load placed as it comes)
 * and the schedule simulation's repeats (algo/simrun.h's DESIGN
 * blocks): a part of a schedule that moves the state on uniformly, or
 * field by field with every max settled, is not played again. Exact:
 * test_topo_sim holds every algorithm to the plain simulation. */
#include "algo/simrun.h"

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

/* The fields that carry r's part since the save on: a worker that sent
 * and received, all three; one that only received, its clock and port
 * (its link is not read); one that only sent, its link, when its clock
 * (not moved: it received nothing) is behind its link, so that every send
 * departs when the link is free (its port is not read). None if it
 * neither sent nor received (a straggler's step alone); -1 if it only
 * sent but its clock could still hold a send up. */
enum { MOVE_CLOCK = 1, MOVE_LINK = 2, MOVE_PORT = 4 };
static int moves(const rs_simtrack_t *t, int r) {
  const int sent = t->sent_at[r] == t->touch_id,
            got = t->got_at[r] == t->touch_id;
  if (sent && got)
    return MOVE_CLOCK | MOVE_LINK | MOVE_PORT;
  if (got)
    return MOVE_CLOCK | MOVE_PORT;
  if (sent)
    return t->saved[r].clock <= t->saved[r].link_free ? MOVE_LINK : -1;
  return 0;
}

/* Has r's state moved on from b by delta in the fields m, and stayed in
 * the others? */
static int moved_by(const rs_simclock_t *c, const rs_simstate_t *b, int m,
                    uint64_t delta) {
  const uint64_t dc = m & MOVE_CLOCK ? delta : 0,
                 dl = m & MOVE_LINK ? delta : 0, dp = m & MOVE_PORT ? delta : 0;
  return c->clock >= b->clock && c->clock - b->clock == dc &&
         c->link_free >= b->link_free && c->link_free - b->link_free == dl &&
         c->in_free >= b->in_free && c->in_free - b->in_free == dp;
}

/* Can every state (clock, link, port) move on by `by` without passing
 * UINT64_MAX? */
static int room_for(const rs_simclock_t *c, uint64_t by) {
  return c->clock <= UINT64_MAX - by && c->link_free <= UINT64_MAX - by &&
         c->in_free <= UINT64_MAX - by;
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
    const int r = t->seen[i], m = moves(t, r);
    const rs_simclock_t *c = &s->clocks[r];
    if (m < 0)
      return 0;
    if (m && !delta)
      delta = m & MOVE_LINK ? c->link_free - t->saved[r].link_free
                            : c->clock - t->saved[r].clock;
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
    const int r = t->seen[i], m = moves(t, r);
    rs_simclock_t *c = &s->clocks[r];
    c->clock += m & MOVE_CLOCK ? by : 0;
    c->link_free += m & MOVE_LINK ? by : 0;
    c->in_free += m & MOVE_PORT ? by : 0;
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
  return s->seg_cap + 5 + s->slot_cap;
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
    const uint64_t *const sent_on = &RS_SIM_CHANNEL(c, SENT)[ch];
    const uint64_t sent = many ? *sent_on : c->slot_n;
    for (size_t j = 0; j < s->seg_n && j < n; j++)
      out[j] = ready[j];
    const size_t taken = sent < K ? (size_t)sent : K;
    out[n] = taken;
    out[n + 1] = sent;
    for (size_t i = 0; i < taken; i++) /* (oldest first) */
      out[n + 2 + i] = arrive[(sent - taken + i) % K];
    if (channels(s) > 1) { /* (its clock and shares of the ports) */
      out[n + 2 + K] = RS_SIM_CHANNEL(c, CLOCK)[ch];
      out[n + 3 + K] = RS_SIM_CHANNEL(c, LINK)[ch];
      out[n + 4 + K] = RS_SIM_CHANNEL(c, IN)[ch];
    }
  }
}

/* Has c's streaming state moved on from before (rs__simstream_save's)
 * by delta? (tmp: room for one.) Its slots' count aside, every time. */
static int stream_moved(const rs_simrun_t *s, const rs_simclock_t *c,
                        const uint64_t *before, uint64_t delta,
                        uint64_t *tmp) {
  const size_t n = s->seg_cap, K = s->slot_cap;
  rs__simstream_save(s, c, tmp);
  for (int ch = channel_first(s); ch < channel_end(s);
       ch++, tmp += channel_len(s), before += channel_len(s)) {
    if (tmp[n] != before[n])
      return 0;
    for (size_t f = n + 2 + K; channels(s) > 1 && f < channel_len(s); f++)
      if (tmp[f] < before[f] || tmp[f] - before[f] != delta)
        return 0; /* (its clock and ports) */
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
 * by. */
static void stream_take(const rs_simrun_t *s, rs_simclock_t *c,
                        const uint64_t *from, uint64_t by) {
  const size_t n = s->seg_cap, K = s->slot_cap;
  for (int ch = channel_first(s); ch < channel_end(s); ch++, from += channel_len(s)) {
    uint64_t *ready = c->seg_ready + (size_t)ch * n,
             *arrive = c->slot_arrive + (size_t)ch * K;
    const size_t taken = (size_t)from[n];
    for (size_t j = 0; j < s->seg_n && j < n; j++)
      ready[j] = from[j] + by;
    const uint64_t sent = from[n + 1];
    if (channels(s) > 1)
      RS_SIM_CHANNEL(c, SENT)[ch] = sent;
    else
      c->slot_n = (size_t)sent;
    for (size_t i = 0; i < taken; i++)
      arrive[(sent - taken + i) % K] = from[n + 2 + i] + by;
    if (channels(s) > 1) {
      RS_SIM_CHANNEL(c, CLOCK)[ch] = from[n + 2 + K] + by;
      RS_SIM_CHANNEL(c, LINK)[ch] = from[n + 3 + K] + by;
      RS_SIM_CHANNEL(c, IN)[ch] = from[n + 4 + K] + by;
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
  for (int r = 0; r < W; r++)
    if (!moved_by(member(s, (r + turn) % W), &before[r],
                  MOVE_CLOCK | MOVE_LINK | MOVE_PORT, delta) ||
        !room_for(member(s, r), by) ||
        (sb && !stream_moved(s, member(s, (r + turn) % W),
                             sb + (size_t)r * len, delta, ss)))
      return 0;
  /* (where worker r's state goes: times more turns on) */
  const int to = (int)((long long)turn * (long long)(times % (uint64_t)W) % W);
  if (to && !scratch)
    return 0;
  for (int r = 0; to && r < W; r++) {
    scratch[r] = rs__simstate_of(member(s, r));
    if (sb)
      rs__simstream_save(s, member(s, r), ss + (size_t)r * len);
  }
  for (int r = 0; r < W; r++) {
    rs_simclock_t *c = member(s, (r + to) % W);
    const rs_simstate_t from = to ? scratch[r] : rs__simstate_of(c);
    c->clock = from.clock + by;
    c->link_free = from.link_free + by;
    c->in_free = from.in_free + by;
    if (sb && to)
      stream_take(s, c, ss + (size_t)r * len, by);
    else if (sb) {
      rs__simstream_save(s, c, ss);
      stream_take(s, c, ss, by);
    }
    if (c->clock > s->bound)
      s->over = 1;
  }
  return delta;
}

void rs__simrun_channel_alone(rs_simrun_t *s, int ch, int step0) {
  for (int r = 0; r < s->shape.workers; r++) {
    rs_simclock_t *x = &s->clocks[r];
    x->channel = (uint8_t)ch;
    x->alone = 1;
    x->clock = RS_SIM_CHANNEL(x, CLOCK)[ch];
    x->link_free = RS_SIM_CHANNEL(x, LINK)[ch];
    x->in_free = RS_SIM_CHANNEL(x, IN)[ch];
  }
  s->live = ch;
  s->step = step0;
}

/* a's latest with b's, field by field. */
static void fold_state(rs_simstate_t *a, const rs_simclock_t *b) {
  a->clock = b->clock > a->clock ? b->clock : a->clock;
  a->link_free = b->link_free > a->link_free ? b->link_free : a->link_free;
  a->in_free = b->in_free > a->in_free ? b->in_free : a->in_free;
}

void rs__simrun_channel_fold(const rs_simrun_t *s, rs_simstate_t *all) {
  for (int r = 0; r < s->shape.workers; r++)
    fold_state(&all[r], &s->clocks[r]);
}

void rs__simrun_channel_fold_image(const rs_simrun_t *s, const int *perm,
                                   rs_simstate_t *all) {
  for (int r = 0; r < s->shape.workers; r++)
    fold_state(&all[perm[r]], &s->clocks[r]);
}

/* Can the model not tell worker a from worker b (rs__simrun_image)? */
static int alike(const rs_simclock_t *a, const rs_simclock_t *b,
                 const rs_simstate_t *sa, const rs_simstate_t *sb) {
  return a->out.latency_ns == b->out.latency_ns &&
         a->out.bandwidth == b->out.bandwidth &&
         a->straggler_ns == b->straggler_ns &&
         a->nic_latency_ns == b->nic_latency_ns &&
         a->off_node == b->off_node && sa->clock == sb->clock &&
         sa->link_free == sb->link_free && sa->in_free == sb->in_free;
}

int rs__simrun_image(const rs_simrun_t *s, const rs_simstate_t *start,
                     const int *perm, int step_first) {
  const int W = s->shape.workers, G = s->shape.gpus < W ? s->shape.gpus : W;
  if (!s->track || s->group.stride || rs__simrun_stopped(s))
    return 0; /* (a plain simulation plays every channel; a group's
                 members are not the workers) */
  for (int r = 0; r < W; r++)
    if (perm[r] < 0 || perm[r] >= W || perm[r] / G != r / G ||
        !alike(&s->clocks[r], &s->clocks[perm[r]], &start[r],
               &start[perm[r]]))
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
  }
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
    const rs_simstate_t *x0 = &t->cert_state[0][r], *x1 = &t->cert_state[1][r];
    const rs_simstate_t x2 = rs__simstate_of(&s->clocks[r]);
    const uint64_t f0[3] = {x0->clock, x0->link_free, x0->in_free},
                   f1[3] = {x1->clock, x1->link_free, x1->in_free},
                   f2[3] = {x2.clock, x2.link_free, x2.in_free};
    for (int f = 0; f < 3; f++) {
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
      const rs_simclock_t *x = &s->clocks[r];
      const rs_simstate_t *p = &t->cert_state[1][r];
      const uint64_t now[3] = {x->clock, x->link_free, x->in_free},
                     d[3] = {x->clock - p->clock, x->link_free - p->link_free,
                             x->in_free - p->in_free};
      for (int f = 0; f < 3; f++)
        room &= d[f] == 0 || d[f] <= (INT64_MAX - now[f]) / m;
    }
    if (room) {
      for (int r = 0; r < t->workers; r++) {
        rs_simclock_t *x = &s->clocks[r];
        const rs_simstate_t *p = &t->cert_state[1][r];
        const uint64_t dc = x->clock - p->clock,
                       dl = x->link_free - p->link_free,
                       dp = x->in_free - p->in_free;
        x->clock += dc * m;
        x->link_free += dl * m;
        x->in_free += dp * m;
        if (s->live >= 0 && x->on_channels && !x->stream) {
          /* (they stand for the live channel's: tree.c) */
          RS_SIM_CHANNEL(x, CLOCK)[s->live] = x->clock;
          RS_SIM_CHANNEL(x, LINK)[s->live] = x->link_free;
          RS_SIM_CHANNEL(x, IN)[s->live] = x->in_free;
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
