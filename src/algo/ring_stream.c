/* algo/ring_stream.c - the streamed ring's time in closed form
 * (rs__ring_stream_ns, algo/ring_way.h): the ring's cost formula on
 * pipelined links (docs/algorithms.md, "Pipelined links"), which its
 * predict reads (algo/ring.c). */
#include <stdlib.h>
#include <string.h>

#include "algo/ring_way.h"
#include "net/netmodel.h"

/* DESIGN: the streamed ring in closed form. On a uniform ring every
 * worker runs the same schedule at the same times (chunks of equal size;
 * else each segment at the largest chunk's, an upper bound), so one
 * worker's clocks tell all: in step s it sends segment j at
 *   D(s,j) = max(R(s-1,j), D(s,j-1) + w_{j-1}, A(s,j) - K messages back)
 * (its data, received in step s-1, or the bucket's start; its link; a
 * slot: the message K = slots before it on the connection arrived) and
 * receives its predecessor's, sent at the same time, at
 * A(s,j) = D(s,j) + w_j + a, taking it once the one before it is done:
 * R(s,j) = max(R(s,j-1), A(s,j)) + f_j (its reduction, in reduce-scatter).
 * The recurrence is played in O(steps x k); docs/algorithms.md
 * ("Pipelined links") gives its closed forms. */
/* The state the streamed ring's recurrence carries from step to step:
 * R(s, j), the link, the clock, the last `slots` arrivals (a ring by
 * message number, `sent` of them so far). */
typedef struct stream_state {
  uint64_t *ready, *arrived, *clock, *link; /* channel by channel: k, K,
                                               1, 1 (its share of the
                                               port) */
  size_t sent; /* the messages each channel has sent */
} stream_state_t;

/* The i-th of the last `held` arrivals on channel ch, oldest first. */
static uint64_t *held_arrival(const stream_state_t *x, size_t ch, size_t K,
                              size_t held, size_t i) {
  return &x->arrived[ch * K + (x->sent - held + i) % K];
}

/* Has x moved on from before (a step earlier) by the same delta in every
 * field, on each of its C channels? Then each later step like it moves it
 * on by delta again (every operation is a max or a sum: the DESIGN of
 * simrun.h's steady repeats). */
static int stream_moved_by(const stream_state_t *x, const stream_state_t *before,
                           size_t C, size_t k, size_t K, uint64_t *delta) {
  const size_t held = x->sent < K ? x->sent : K;
  if (x->clock[0] < before->clock[0] ||
      held != (before->sent < K ? before->sent : K))
    return 0;
  const uint64_t d = *delta = x->clock[0] - before->clock[0];
  for (size_t ch = 0; ch < C; ch++) {
    if (x->clock[ch] - before->clock[ch] != d ||
        x->link[ch] - before->link[ch] != d)
      return 0;
    for (size_t j = 0; j < k; j++)
      if (x->ready[ch * k + j] - before->ready[ch * k + j] != d)
        return 0;
    for (size_t i = 0; i < held; i++)
      if (*held_arrival(x, ch, K, held, i) -
              *held_arrival(before, ch, K, held, i) !=
          d)
        return 0;
  }
  return d > 0;
}

/* Play n more steps of d each at once: every time on by n d. */
static void stream_skip(stream_state_t *x, size_t C, size_t k, size_t K,
                        uint64_t n, uint64_t d, uint64_t *scratch) {
  const uint64_t by = n && d > UINT64_MAX / n ? UINT64_MAX : n * d;
  const size_t held = x->sent < K ? x->sent : K;
  for (size_t i = 0; i < C * held; i++) /* (oldest first, where they go) */
    scratch[i] = rs__sat_add(*held_arrival(x, i / held, K, held, i % held), by);
  x->sent += (size_t)n * k;
  for (size_t i = 0; i < C * held; i++)
    *held_arrival(x, i / held, K, held, i % held) = scratch[i];
  for (size_t j = 0; j < C * k; j++)
    x->ready[j] = rs__sat_add(x->ready[j], by);
  for (size_t ch = 0; ch < C; ch++) {
    x->clock[ch] = rs__sat_add(x->clock[ch], by);
    x->link[ch] = rs__sat_add(x->link[ch], by);
  }
}

/* x's fields (C rings of k segments, K arrivals kept), from mem. */
static stream_state_t stream_at(uint64_t *mem, size_t C, size_t k, size_t K) {
  return (stream_state_t){mem, mem + C * k, mem + C * (k + K),
                          mem + C * (k + K + 1), 0};
}

uint64_t rs__ring_stream_ns(const rs_netmodel_t *m, int steps, int reduced,
                            size_t k, const rs_stream_sizes_t *sizes,
                            int channels) {
  const uint64_t a = m->link.latency_ns;
  const size_t C = (size_t)(channels > 1 ? channels : 1);
  uint64_t w_hi[RS_MAX_CHANNELS], w_lo[RS_MAX_CHANNELS],
      f_hi[RS_MAX_CHANNELS], f_lo[RS_MAX_CHANNELS];
  for (size_t ch = 0; ch < C; ch++) { /* (C channels share the port) */
    w_hi[ch] = rs__sat_mul(rs__net_wire_ns(m, sizes[ch].hi), C);
    w_lo[ch] = rs__sat_mul(rs__net_wire_ns(m, sizes[ch].lo), C);
    f_hi[ch] = rs__net_ns(sizes[ch].hi, m->reduce_rate);
    f_lo[ch] = rs__net_ns(sizes[ch].lo, m->reduce_rate);
  }
  const size_t K = (size_t)rs__sim_slots(m);
  const size_t one = C * (k + K + 2); /* (a state's words) */
  /* (x, and the state a step before it, for the steady repeats) */
  uint64_t *mem = calloc(2 * one + C * K, sizeof *mem);
  if (!mem)
    return UINT64_MAX;
  stream_state_t x = stream_at(mem, C, k, K),
                 before = stream_at(mem + one, C, k, K);
  uint64_t *scratch = mem + 2 * one;
  int have_before = 0;
  for (int s = 0; s < steps && !rs__sim_stopped(m); s++) {
    for (size_t j = 0; j < k; j++, x.sent++)
      for (size_t ch = 0; ch < C; ch++) { /* (each on its share) */
        const size_t big = sizes[ch].big;
        const uint64_t w = j < big ? w_hi[ch] : w_lo[ch];
        const uint64_t f = s < reduced ? (j < big ? f_hi[ch] : f_lo[ch]) : 0;
        uint64_t *ready = &x.ready[ch * k + j], *clock = &x.clock[ch];
        uint64_t *slot = &x.arrived[ch * K + x.sent % K], *link = &x.link[ch];
        uint64_t depart = *ready > *link ? *ready : *link;
        if (x.sent >= K && *slot > depart)
          depart = *slot;
        *link = rs__sat_add(depart, w);
        const uint64_t arrive = rs__sat_add(*link, a);
        *slot = arrive;
        *clock = rs__sat_add(arrive > *clock ? arrive : *clock, f);
        *ready = *clock;
      }
    /* steps of one kind (reducing or not) that move the state on alike:
     * the rest of the kind at once */
    const int kind_end = s < reduced ? reduced : steps;
    uint64_t d;
    if (have_before && s + 1 < kind_end &&
        stream_moved_by(&x, &before, C, k, K, &d)) {
      stream_skip(&x, C, k, K, (uint64_t)(kind_end - (s + 1)), d, scratch);
      s = kind_end - 1;
      have_before = 0;
      continue;
    }
    memcpy(before.ready, x.ready, one * sizeof *x.ready);
    before.sent = x.sent;
    have_before = s + 1 < kind_end;
  }
  uint64_t t = 0;
  for (size_t ch = 0; ch < C; ch++)
    t = x.clock[ch] > t ? x.clock[ch] : t;
  free(mem);
  return t;
}
