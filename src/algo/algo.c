/* algo/algo.c - the pieces of an rs_algo_t (algo.h) that several
 * algorithms share. */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

size_t rs__algo_capped_elems(rs_shape_t shape, int from, int to, size_t elems,
                             size_t segs, size_t cap) {
  (void)shape, (void)from, (void)to, (void)segs;
  return elems < cap ? elems : cap;
}

size_t rs__algo_never_direct(rs_shape_t shape, size_t min_segs, int slices) {
  (void)shape, (void)min_segs, (void)slices;
  return 0;
}

uint64_t rs__algo_region_ns(const rs_netmodel_t *m, size_t elems, size_t cap,
                            size_t elem_size, int reduced) {
  const size_t segs = rs__segs(elems, cap);
  uint64_t t = 0;
  for (size_t k = 0; k < segs; k++) {
    size_t bytes = rs__chunk_elems(elems, (int)segs, (int)k) * elem_size;
    t += m->link.latency_ns + rs__net_ns(bytes, m->link.bandwidth) +
         (reduced ? rs__net_ns(bytes, m->reduce_rate) : 0);
  }
  return t;
}

/* The runner's state for W workers: every worker's clock, its mailbox,
 * and the algorithm's scratch. */
static int simrun_init(rs_simrun_t *s, const rs_algo_t *a,
                       const rs_netmodel_t *m, int workers,
                       size_t segment_bytes, size_t elem_size, int plain) {
  s->net = m;
  s->bound = UINT64_MAX;
  s->shape = rs__shape_of(m, workers);
  s->elem_size = elem_size;
  s->cap = segment_bytes / elem_size ? segment_bytes / elem_size : 1;
  s->clocks = calloc((size_t)workers, sizeof *s->clocks);
  s->arrive = calloc((size_t)workers, sizeof *s->arrive);
  s->wire = calloc((size_t)workers, sizeof *s->wire);
  s->workers_all = workers;
  if (!plain && (!(s->saved = malloc((size_t)workers * sizeof *s->saved)) ||
                 !(s->touch = calloc((size_t)workers, sizeof *s->touch))))
    return RS_ENOMEM;
  const size_t scratch = a->sim_scratch ? a->sim_scratch(s->shape) : 0;
  s->algo_mem = scratch ? calloc(1, scratch) : NULL;
  if (!s->clocks || !s->arrive || !s->wire || (scratch && !s->algo_mem))
    return RS_ENOMEM;
  for (int r = 0; r < workers; r++)
    rs__sim_init(&s->clocks[r], m, workers, r);
  /* A topology of several nodes: its NICs' load under a's schedule (one
   * that does not hold the W workers, which rs_netmodel_check refuses,
   * is taken as one node). */
  const rs_topo_t *t = &m->topo;
  if (t->enabled && t->nodes > 1 && t->nodes * t->gpus == workers) {
    if (!(s->load = malloc(sizeof *s->load)))
      return RS_ENOMEM;
    if (rs__topo_load_lazy(s->load, t, a->steps(s->shape, RS_COLL_ALLREDUCE),
                           a->sends)) {
      free(s->load);
      s->load = NULL;
      return RS_ENOMEM;
    }
    for (int r = 0; r < workers; r++)
      s->clocks[r].load = s->load;
  }
  return RS_OK;
}

static void simrun_free(rs_simrun_t *s) {
  if (s->load)
    rs__topo_unload(s->load);
  free(s->load);
  free(s->clocks);
  free(s->arrive);
  free(s->wire);
  free(s->algo_mem);
  free(s->saved);
  free(s->touch);
}

static void save_to(const rs_simrun_t *s, rs_simstate_t *to) {
  for (int r = 0; r < s->workers_all; r++)
    to[r] = (rs_simstate_t){s->clocks[r].clock, s->clocks[r].link_free,
                            s->clocks[r].in_free};
}

int rs__simrun_save(rs_simrun_t *s) {
  if (!s->saved)
    return RS_OK;           /* (a plain simulation: nothing repeats) */
  if (++s->touch_id == 0) { /* (wrapped: no stale stamp may match) */
    memset(s->touch, 0, (size_t)s->workers_all * sizeof *s->touch);
    s->touch_id = 1;
  }
  save_to(s, s->saved);
  return RS_OK;
}

/* Has the whole state (clock, link and port) of every worker that took
 * part since `before` (all, with touch NULL) moved on by one and the same
 * time, and every other's stayed? That time, or 0 if not (or if nothing
 * moved). */
static uint64_t uniform_shift(const rs_simrun_t *s, const rs_simstate_t *before,
                              const uint32_t *touch) {
  uint64_t delta = 0;
  for (int r = 0; r < s->workers_all; r++) {
    const rs_simclock_t *c = &s->clocks[r];
    const rs_simstate_t *b = &before[r];
    const int took_part = !touch || touch[r] == s->touch_id;
    if (took_part && !delta)
      delta = c->clock - b->clock;
    const uint64_t d = took_part ? delta : 0;
    if (c->clock < b->clock || c->clock - b->clock != d ||
        c->link_free < b->link_free || c->link_free - b->link_free != d ||
        c->in_free < b->in_free || c->in_free - b->in_free != d)
      return 0;
  }
  return delta;
}

/* rs__simrun_repeat against the state `before` (touch as above). */
static uint64_t repeat_from(rs_simrun_t *s, const rs_simstate_t *before,
                            const uint32_t *touch, uint64_t times) {
  const uint64_t delta =
      before && !s->over ? uniform_shift(s, before, touch) : 0;
  const uint64_t by = delta * times;
  if (!delta || !times || by / times != delta)
    return 0;
  for (int r = 0; r < s->workers_all; r++) {
    const rs_simclock_t *c = &s->clocks[r];
    if (c->clock > UINT64_MAX - by || c->link_free > UINT64_MAX - by ||
        c->in_free > UINT64_MAX - by)
      return 0;
  }
  for (int r = 0; r < s->workers_all; r++) {
    rs_simclock_t *c = &s->clocks[r];
    if (touch && touch[r] != s->touch_id)
      continue;
    c->clock += by;
    c->link_free += by;
    c->in_free += by;
    if (c->clock > s->bound)
      s->over = 1;
  }
  return delta;
}

uint64_t rs__simrun_repeat(rs_simrun_t *s, uint64_t times) {
  return repeat_from(s, s->saved, s->touch, times);
}

/* The longest period, in rounds, a run's clocks are looked for in before
 * the state is saved again. */
#define REPEAT_PERIOD_MAX 64

void rs__simrepeat_begin(rs_simrun_t *s, rs_simrepeat_t *p, size_t k,
                         size_t last) {
  if (p->last != last) { /* (a new run) */
    p->last = last;
    p->from = SIZE_MAX;
    p->done = 0;
  }
  if (p->done || p->from != SIZE_MAX || k >= last || !s->saved ||
      rs__simrun_stopped(s))
    return;
  if (rs__simrun_save(s)) {
    s->nomem = s->over = 1;
    return;
  }
  p->from = k;
}

size_t rs__simrepeat_end(rs_simrun_t *s, rs_simrepeat_t *p, size_t k) {
  if (p->from == SIZE_MAX || rs__simrun_stopped(s))
    return k;
  const size_t period = k + 1 - p->from, times = (p->last - k) / period;
  if (times && rs__simrun_repeat(s, times)) {
    p->done = 1;
    p->from = SIZE_MAX;
    return k + times * period;
  }
  if (period >= REPEAT_PERIOD_MAX)
    p->from = SIZE_MAX; /* (still settling: save again) */
  return k;
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

/* Buckets of one size in a row (DDP's buckets, 25 MiB each) repeat one
 * schedule (rs__simrun_repeat): once one of them moves the whole state
 * uniformly, the rest are skipped. (Not with ready times: they do not
 * move with the state.) */
static int simulate(const rs_algo_t *a, const rs_netmodel_t *m, int workers,
                    const rs_bucket_t *buckets, size_t bucket_count,
                    size_t segment_bytes, size_t elem_size,
                    const uint64_t *ready, rs_sim_spans_t *spans,
                    uint64_t bound, int plain) {
  rs_simrun_t s = {0};
  if (simrun_init(&s, a, m, workers, segment_bytes, elem_size, plain)) {
    simrun_free(&s);
    return RS_ENOMEM;
  }
  s.bound = bound;
  const size_t W = (size_t)workers;
  /* (the state before a bucket that others of its size follow: apart from
   * the one the algorithm's sim_bucket saves for its own repeats) */
  rs_simstate_t *before = NULL;
  if (!ready && !plain && bucket_count > 2 &&
      !(before = malloc(W * sizeof *before)))
    s.nomem = 1;
  for (size_t b = 0; b < bucket_count && !s.nomem; b++) {
    size_t same = b; /* the last bucket of b's size in a row */
    while (before && same + 1 < bucket_count &&
           buckets[same + 1].elems == buckets[b].elems)
      same++;
    if (same > b)
      save_to(&s, before);
    for (size_t r = 0; r < W; r++) {
      if (ready)
        rs__sim_start_at(&s.clocks[r], ready[b * W + r]);
      if (spans->worker_start)
        spans->worker_start[b * W + r] = s.clocks[r].clock;
    }
    s.step = -1; /* (the first rs__simrun_step makes it 0) */
    a->sim_bucket(
        &s, buckets[b].elems,
        rs_segs_per_chunk(buckets[b].elems, workers, segment_bytes, elem_size));
    if (s.nomem)
      break;
    for (size_t r = 0; spans->worker_end && r < W; r++)
      spans->worker_end[b * W + r] = s.clocks[r].clock;
    const uint64_t delta =
        same > b ? repeat_from(&s, before, NULL, same - b) : 0;
    if (delta) {
      for (size_t k = b + 1; k <= same; k++)
        for (size_t r = 0; r < W; r++) {
          const uint64_t by = delta * (k - b);
          if (spans->worker_start)
            spans->worker_start[k * W + r] =
                spans->worker_start[b * W + r] + by;
          if (spans->worker_end)
            spans->worker_end[k * W + r] = spans->worker_end[b * W + r] + by;
        }
      b = same;
    }
  }
  free(before);
  if (s.nomem) {
    simrun_free(&s);
    return RS_ENOMEM;
  }
  uint64_t end = 0;
  for (size_t r = 0; r < W; r++)
    end = s.clocks[r].clock > end ? s.clocks[r].clock : end;
  spans->end_ns = end < UINT64_MAX ? end : UINT64_MAX - 1; /* (netmodel.h) */
  simrun_free(&s);
  return RS_OK;
}

int rs__algo_simulate_ready(const rs_algo_t *a, const rs_netmodel_t *m,
                            int workers, const rs_bucket_t *buckets,
                            size_t bucket_count, size_t segment_bytes,
                            size_t elem_size, const uint64_t *ready,
                            rs_sim_spans_t *spans) {
  return simulate(a, m, workers, buckets, bucket_count, segment_bytes,
                  elem_size, ready, spans, UINT64_MAX, 0);
}

uint64_t rs__algo_simulate_bounded(const rs_algo_t *a, const rs_netmodel_t *m,
                                   int workers, const rs_bucket_t *buckets,
                                   size_t bucket_count, size_t segment_bytes,
                                   size_t elem_size, uint64_t bound) {
  rs_sim_spans_t spans = {0};
  if (!m->enabled || workers < 2)
    return 0;
  return simulate(a, m, workers, buckets, bucket_count, segment_bytes,
                  elem_size, NULL, &spans, bound, 0)
             ? UINT64_MAX
             : spans.end_ns;
}

uint64_t rs__algo_simulate_plain(const rs_algo_t *a, const rs_netmodel_t *m,
                                 int workers, const rs_bucket_t *buckets,
                                 size_t bucket_count, size_t segment_bytes,
                                 size_t elem_size) {
  rs_sim_spans_t spans = {0};
  if (!m->enabled || workers < 2)
    return 0;
  return simulate(a, m, workers, buckets, bucket_count, segment_bytes,
                  elem_size, NULL, &spans, UINT64_MAX, 1)
             ? UINT64_MAX
             : spans.end_ns;
}

uint64_t rs__algo_simulate(const rs_algo_t *a, const rs_netmodel_t *m,
                           int workers, const rs_bucket_t *buckets,
                           size_t bucket_count, size_t segment_bytes,
                           size_t elem_size) {
  return rs__algo_simulate_bounded(a, m, workers, buckets, bucket_count,
                                   segment_bytes, elem_size, UINT64_MAX);
}

void rs__simrun_step(rs_simrun_t *s) {
  s->step++;
  if (rs__simrun_stopped(s)) /* (its loops run out, doing nothing) */
    return;
  if (s->load && s->load->builder && rs__topo_load_step(s->load, s->step)) {
    s->nomem = s->over = 1;
    return;
  }
  for (int r = 0; r < s->shape.workers; r++)
    rs__sim_step(&s->clocks[rs__group_worker(&s->group, r)]);
}
