/* algo/algo.c - the algorithms by number and name (the table is list.c's)
 * and what each row tells (rs_algo_info), the public entry points that
 * reach an algorithm's cost model, the pieces of an rs_algo_t (algo.h)
 * that several algorithms share, and the one runner every algorithm's schedule
 * simulation goes through (rs__algo_simulate and its kin): the workers'
 * clocks and mailboxes (algo/simrun.h), the NIC load placed step by step,
 * the bound an argmin stops at, and buckets of one size in a row
 * repeated (algo/simrun.c). */
#include "algo/algo.h"

#include <stdlib.h>
#include <string.h>

#include "algo/channels.h"
#include "algo/list.h"

const rs_algo_t *rs__algo_get(rs_algorithm_t algo) {
  return (unsigned)algo < RS_ALGO_COUNT ? rs__algos[algo] : NULL;
}

const char *rs_algorithm_name(rs_algorithm_t algo) {
  const rs_algo_t *a = rs__algo_get(algo);
  return a ? a->name : algo == RS_ALGO_AUTO ? "auto" : "?";
}

int rs_algorithm_parse(const char *name) {
  for (int i = 0; i < RS_ALGO_COUNT; i++)
    if (rs__algos[i] && strcmp(rs__algos[i]->name, name) == 0)
      return i;
  for (int i = 0; i < RS_ALGO_COUNT; i++)
    if (rs__algos[i] && rs__algos[i]->alias &&
        strcmp(rs__algos[i]->alias, name) == 0)
      return i;
  return strcmp(name, "auto") == 0 ? RS_ALGO_AUTO : -1;
}

int rs_algo_info(rs_algorithm_t algo, rs_algo_info_t *info) {
  const rs_algo_t *a = rs__algo_get(algo);
  if (!a)
    return RS_EINVAL;
  memset(info, 0, sizeof *info);
  info->name = a->name;
  info->title = a->title;
  info->segment_bytes = a->segment_bytes;
  info->needs_topology = (a->caps & RS__CAP_TOPOLOGY) != 0;
  info->needs_nvls_switch = (a->caps & RS__CAP_NVLS) != 0;
  info->slices = (a->caps & RS__CAP_SLICES) != 0;
  info->reduce_scatter = (a->caps & RS__CAP_REDUCE_SCATTER) != 0;
  info->auto_eligible = (a->caps & RS__CAP_AUTO) != 0;
  info->in_nccl = (a->caps & RS__CAP_NCCL) != 0;
  info->closed_formula = (a->caps & RS__CAP_FORMULA) != 0;
  info->textbook_ring = (a->caps & RS__CAP_TEXTBOOK_RING) != 0;
  info->channels = (a->caps & RS__CAP_CHANNELS) != 0;
  return RS_OK;
}

/* The channels of a schedule that runs on them (on_channels) or not,
 * under m for W workers: m's if it gives them, else NCCL's count. */
static int channels_of(int on_channels, const rs_netmodel_t *m, int workers) {
  if (!on_channels)
    return 1;
  return m && m->channels > 0 ? m->channels : rs__rings_count(m, workers);
}

int rs__algo_channels(const rs_netmodel_t *m, rs_algorithm_t algo,
                      int workers) {
  const rs_algo_t *a = rs__algo_get(algo);
  return channels_of(algo == RS_ALGO_AUTO ||
                         (a && (a->caps & RS__CAP_CHANNELS)),
                     m, workers);
}

int rs_netmodel_channels(rs_algorithm_t algo, const rs_netmodel_t *m,
                         int workers) {
  return rs__algo_channels(m, algo, workers);
}

/* m as algorithm a runs under it: m, or where m leaves a's NCCL
 * channels to it (0), *own, m with them (rs__algo_channels); one that
 * runs on none on one (a run under auto has the ring's). */
static const rs_netmodel_t *net_for(const rs_algo_t *a, const rs_netmodel_t *m,
                                    int workers, rs_netmodel_t *own) {
  if (!a || !m)
    return m;
  const int channels =
      channels_of((a->caps & RS__CAP_CHANNELS) != 0, m, workers);
  if (channels == (m->channels > 1 ? m->channels : 1))
    return m;
  *own = *m;
  own->channels = channels;
  return own;
}

uint64_t rs__predict_bounded(rs_algorithm_t algo, const rs_netmodel_t *m,
                             int workers, size_t elems, size_t segs_per_chunk,
                             size_t segment_bytes, size_t elem_size,
                             uint64_t bound) {
  const rs_algo_t *a = rs__algo_get(algo);
  rs_netmodel_t own;
  m = net_for(a, m, workers, &own);
  if (a && m->topo.enabled) {
    /* A topology has no closed formula (its NICs are shared as the
     * schedule has it): the prediction is the bucket's schedule, alone,
     * on the simulated clocks. */
    const rs_bucket_t bucket = {.elem_offset = 0, .elems = elems, .params = 1};
    const rs_sim_job_t job = {a,       m, workers, &bucket, 1, segment_bytes,
                              elem_size};
    return rs__algo_simulate_bounded(&job, bound);
  }
  size_t cap = segment_bytes / elem_size ? segment_bytes / elem_size : 1;
  if (!a)
    return 0;
  const uint64_t t = a->predict(m, rs__shape_of(m, workers), elems,
                                segs_per_chunk, cap, elem_size);
  /* (the protocol's launch before the schedule: net/proto.h) */
  return m->enabled && workers > 1
             ? rs__sat_add(rs__proto_launch_ns(m->proto), t)
             : t;
}

uint64_t rs_netmodel_predict_algo(rs_algorithm_t algo, const rs_netmodel_t *m,
                                  int workers, size_t elems,
                                  size_t segs_per_chunk, size_t segment_bytes,
                                  size_t elem_size) {
  return rs__predict_bounded(algo, m, workers, elems, segs_per_chunk,
                             segment_bytes, elem_size, UINT64_MAX);
}

uint64_t rs_netmodel_simulate_algo(rs_algorithm_t algo, const rs_netmodel_t *m,
                                   int workers, const rs_bucket_t *buckets,
                                   size_t bucket_count, size_t segment_bytes,
                                   size_t elem_size) {
  const rs_algo_t *a = rs__algo_get(algo);
  rs_netmodel_t own;
  m = net_for(a, m, workers, &own);
  const rs_sim_job_t job = {a,           m,           workers, buckets,
                            bucket_count, segment_bytes, elem_size};
  return a ? rs__algo_simulate(&job) : 0;
}

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
    t += m->link.latency_ns + rs__net_wire_ns(m, bytes) +
         (reduced ? rs__net_ns(bytes, m->reduce_rate) : 0);
  }
  return t;
}

/* a x b, or UINT64_MAX where it would wrap. */
static uint64_t sat_mul(uint64_t a, uint64_t b) {
  return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* The least time of one segment of n elements from worker w to its peer
 * in step k (-1 if w sends nothing then), and the peer. */
static int chain_hop(const rs_algo_t *a, const rs_netmodel_t *m,
                     rs_shape_t shape, int k, int w, size_t bytes, int *peer,
                     uint64_t *ns) {
  int dst[RS_TOPO_MAX_SENDS];
  if (a->sends(shape, k, w, dst, RS_TOPO_MAX_SENDS) < 1)
    return -1;
  uint64_t latency;
  const uint64_t wire =
      rs__sim_hop_least_ns(m, shape.workers, w, dst[0], bytes, &latency);
  *peer = dst[0];
  *ns = rs__sat_add(wire, latency);
  return 0;
}

/* A chain of segments through the schedule from worker 0 at its start
 * (rs_algo_t's step_least): in each round the worker holding the chain
 * sends a segment of at least the step's smallest (to the first peer its
 * sends name), which the peer has taken before it sends in the next
 * round. Each departure is after its sender's clock, so the chain's last
 * worker ends no sooner than the sum of its segments' least times
 * (netmodel.h). A step's rounds between a pair of workers alternate (rd,
 * rhd); round a ring they come back to the start after a cycle, whose
 * time repeats. */
static uint64_t chain_least(const rs_algo_t *a, const rs_netmodel_t *m,
                            int workers, size_t elems, size_t segs, size_t cap,
                            size_t elem_size) {
  rs_shape_t shape = rs__shape_of(m, workers);
  /* On NCCL's channels the chain is channel 0's: its part of the bucket
   * as NCCL cuts it, round a ring like NCCL's in what it crosses (each
   * node's GPUs, then one NIC), which the identity ring is. */
  const rs_rings_t cut = {.channels = shape.channels,
                          .workers = workers,
                          .identity = 1,
                          .elem_size = elem_size,
                          .proto = m->enabled ? m->proto : RS_PROTOCOL_NONE};
  if (shape.channels > 1 && !shape.rings)
    shape.rings = &cut;
  const int steps = a->steps(shape, RS_COLL_ALLREDUCE);
  int w = 0;
  uint64_t t = 0, tail = 0; /* (tail: a streamed last step's segments) */
  for (int k = 0; k < steps && t != UINT64_MAX; k++) {
    size_t rounds;
    const size_t bytes =
        a->step_least(shape, k, elems, segs, cap, &rounds) * elem_size;
    int d, back;
    uint64_t there, home;
    if (!rounds || chain_hop(a, m, shape, k, w, bytes, &d, &there))
      continue; /* (w holds the chain) */
    if (a->caps & RS__CAP_STREAM) {
      /* A streamed segment waits only for its own data: the chain is one
       * segment a step, w's first to d; the last step's other segments
       * follow it through the same link (below). */
      uint64_t latency;
      const uint64_t wire =
          rs__sim_hop_least_ns(m, shape.workers, w, d, bytes, &latency);
      t = rs__sat_add(t, rs__sat_add(latency, wire));
      tail = sat_mul(wire, rounds - 1);
      w = d;
      continue;
    }
    if (!chain_hop(a, m, shape, k, d, bytes, &back, &home) && back == w) {
      /* a pair: w, d, w, d, ... */
      t = rs__sat_add(t, sat_mul(there, (rounds + 1) / 2));
      t = rs__sat_add(t, sat_mul(home, rounds / 2));
      w = rounds % 2 ? d : w;
      continue;
    }
    /* round a cycle from w0: its time once it has come back (the first
     * hop is there, to d) */
    const int w0 = w;
    uint64_t cycle = 0;
    for (size_t r = 0; r < rounds; r++) {
      int next = d;
      uint64_t ns = there;
      if (r && chain_hop(a, m, shape, k, w, bytes, &next, &ns))
        break;
      t = rs__sat_add(t, ns);
      cycle = rs__sat_add(cycle, ns);
      w = next;
      if (w == w0 && r + 1 < rounds) { /* r + 1 rounds a cycle */
        const size_t left = rounds - (r + 1), whole = left / (r + 1);
        t = rs__sat_add(t, sat_mul(cycle, whole));
        r += whole * (r + 1);
        cycle = 0;
      }
    }
  }
  return rs__sat_add(t, tail);
}

uint64_t rs__algo_least(const rs_algo_t *a, const rs_netmodel_t *m, int workers,
                        size_t elems, size_t segs, size_t segment_bytes,
                        size_t elem_size) {
  if (!m->enabled || workers < 2)
    return 0;
  rs_netmodel_t own;
  m = net_for(a, m, workers, &own);
  if (a->least)
    return a->least(m, rs__shape_of(m, workers), elems, elem_size);
  const size_t cap = segment_bytes / elem_size ? segment_bytes / elem_size : 1;
  return a->step_least ? chain_least(a, m, workers, elems, segs ? segs : 1, cap,
                                     elem_size)
                       : 0;
}

/* The segments per chunk bucket b of job is cut into, as its algorithm
 * cuts them (gloo-ring: gloo's layout). */
static size_t bucket_segs(const rs_sim_job_t *job, const rs_simrun_t *s,
                          size_t b) {
  const size_t segs = rs_segs_per_chunk(job->buckets[b].elems, job->workers,
                                        job->segment_bytes, job->elem_size);
  return rs__algo_chunk_segs(job->algo, s->shape, job->buckets[b].elems, segs,
                             s->cap);
}

/* A bucket of a streaming schedule begins: every worker's segments'
 * data ready at its clock, no slot taken (netmodel.h); of one on
 * channels, every channel at its clock. */
static void stream_bucket(rs_simrun_t *s, const rs_sim_job_t *job, size_t b) {
  const size_t C = (size_t)s->channels;
  if (!s->seg_mem && s->channel_mem) { /* (channels, not streaming) */
    for (int r = 0; r < job->workers && !rs__simrun_stopped(s); r++)
      rs__sim_stream(
          &s->clocks[r], 0, 0,
          (rs_sim_mem_t){NULL, NULL,
                         s->channel_mem + (size_t)r * RS_SIM_CHANNEL_WORDS * C},
          0, 0);
    return;
  }
  if (!s->seg_mem || rs__simrun_stopped(s))
    return;
  const size_t segs = bucket_segs(job, s, b);
  for (int r = 0; r < job->workers && !rs__simrun_stopped(s); r++)
    rs__sim_stream(
        &s->clocks[r], 1, segs,
        (rs_sim_mem_t){s->seg_mem + (size_t)r * C * s->seg_cap,
                       s->slot_mem + (size_t)r * C * s->slot_cap,
                       s->channel_mem + (size_t)r * RS_SIM_CHANNEL_WORDS * C},
        s->seg_cap, s->slot_cap);
  s->seg_n = segs;
}

/* The runner's state for W workers: every worker's clock, its mailbox,
 * and the algorithm's scratch. */
static int simrun_init(rs_simrun_t *s, const rs_sim_job_t *job, int plain) {
  const rs_algo_t *a = job->algo;
  const rs_netmodel_t *m = job->net;
  const int workers = job->workers;
  const size_t elem_size = job->elem_size;
  s->net = m;
  s->bound = UINT64_MAX;
  s->shape = rs__shape_of(m, workers);
  /* the ring's channels, and their orders (algo/channels.h) */
  s->channels = rs__shape_channels(s->shape);
  s->live = -1;
  if (s->channels > 1) {
    if (!(s->rings = malloc(sizeof *s->rings)) ||
        rs__rings_make(s->rings, m, workers, job->elem_size)) {
      free(s->rings);
      s->rings = NULL;
      return RS_ENOMEM;
    }
    s->shape.rings = s->rings;
  }
  s->elem_size = elem_size;
  s->cap = job->segment_bytes / elem_size ? job->segment_bytes / elem_size : 1;
  /* The workers' clocks, mailboxes and channels' words, in one block
   * (clocks is its start): a simulation's memory in one piece is one the
   * allocator keeps for the next simulation, where pieces past its trim
   * threshold go back to the system and fault in again each time. A
   * streaming algorithm's clocks (netmodel.h) keep too a ready time for
   * each segment of the most any bucket cuts a chunk into, and the slots'
   * arrivals (each bucket sets them going: stream_bucket). */
  const size_t W = (size_t)workers, C = (size_t)s->channels;
  size_t most = 0;
  for (size_t b = 0; (a->caps & RS__CAP_STREAM) && b < job->bucket_count; b++) {
    const size_t segs = bucket_segs(job, s, b);
    most = segs > most ? segs : most;
  }
  s->seg_cap = most;
  s->slot_cap = most ? rs__sim_slot_cap(m, 2 * W * most) : 0;
  /* (channels' words: a streaming schedule's, or on channels one's that
   * does not stream, their clocks alone) */
  const int channel_words = (a->caps & RS__CAP_STREAM)
                                ? most > 0
                                : C > 1 && (a->caps & RS__CAP_CHANNELS);
  const size_t words = /* (channel words, uses_at, arrive, wire) */
      (channel_words ? W * RS_SIM_CHANNEL_WORDS * C : 0) + (C > 1 ? 2 * W : 0) +
      2 * W;
  char *block = calloc(1, W * sizeof *s->clocks + words * sizeof(uint64_t) +
                              W * sizeof *s->via_nic);
  if (!block)
    return RS_ENOMEM;
  s->clocks = (rs_simclock_t *)(void *)block;
  s->arrive = (uint64_t *)(void *)(block + W * sizeof *s->clocks);
  s->wire = s->arrive + W;
  uint64_t *next = s->wire + W;
  if (C > 1) {
    s->uses_at = next;
    next += 2 * W;
  }
  if (channel_words) {
    s->channel_mem = next;
    next += W * RS_SIM_CHANNEL_WORDS * C;
  }
  s->via_nic = (uint8_t *)next;
  if (!plain) {
    rs_simtrack_t *t = s->track = calloc(1, sizeof *t);
    if (!t)
      return RS_ENOMEM;
    t->workers = workers;
    t->saved = malloc(W * sizeof *t->saved);
    t->seen = malloc(W * sizeof *t->seen);
    t->seen_at = calloc(W, sizeof *t->seen_at);
    t->sent_at = calloc(W, sizeof *t->sent_at);
    t->got_at = calloc(W, sizeof *t->got_at);
    for (int i = 0; i < 2; i++)
      t->cert_state[i] = malloc(W * sizeof *t->cert_state[i]);
    if (!t->saved || !t->seen || !t->seen_at || !t->sent_at || !t->got_at ||
        !t->cert_state[0] || !t->cert_state[1])
      return RS_ENOMEM;
  }
  const size_t scratch = a->sim_scratch ? a->sim_scratch(s->shape) : 0;
  s->algo_mem = scratch ? calloc(1, scratch) : NULL;
  if (scratch && !s->algo_mem)
    return RS_ENOMEM;
  for (int r = 0; r < workers; r++)
    rs__sim_init(&s->clocks[r], m, workers, r);
  if (most &&
      (!(s->seg_mem = calloc(W * C * most, sizeof *s->seg_mem)) ||
       !(s->slot_mem = calloc(W * C * s->slot_cap, sizeof *s->slot_mem))))
    return RS_ENOMEM;
  /* A topology of several nodes: its NICs' load under a's schedule (one
   * that does not hold the W workers, which rs_netmodel_check refuses,
   * is taken as one node). */
  const rs_topo_t *t = &m->topo;
  if (t->enabled && t->nodes > 1 && t->nodes * t->gpus == workers) {
    if (!(s->load = malloc(sizeof *s->load)))
      return RS_ENOMEM;
    if (rs__topo_load_shape_lazy(s->load, t, s->shape,
                                 a->steps(s->shape, RS_COLL_ALLREDUCE),
                                 a->sends)) {
      free(s->load);
      s->load = NULL;
      return RS_ENOMEM;
    }
    for (int r = 0; r < workers; r++)
      rs__sim_set_load(&s->clocks[r], s->load);
    s->full_load = s->load;
  }
  return RS_OK;
}

/* Bucket b's load on the NICs: on NCCL's channels, that of its busy
 * channels alone (algo/channels.h's rs__rings_busy_shape), as the
 * threaded run takes it (run.c's rs__run_bucket_load), made the first
 * time a bucket needs it. RS_OK or RS_ENOMEM. */
static int bucket_load(rs_simrun_t *s, const rs_sim_job_t *job, size_t b) {
  const rs_algo_t *a = job->algo;
  if (!s->full_load || s->channels <= 1 || !(a->caps & RS__CAP_CHANNELS))
    return RS_OK;
  const rs_shape_t shape =
      rs__rings_busy_shape(s->shape, job->buckets[b].elems);
  rs_topo_load_t *load = s->full_load;
  if (shape.channels < s->channels) {
    if (!s->busy_loads &&
        !(s->busy_loads = calloc((size_t)s->channels, sizeof *s->busy_loads)))
      return RS_ENOMEM;
    load = &s->busy_loads[shape.channels];
    if (!load->pattern &&
        rs__topo_load_shape_lazy(load, &job->net->topo, shape,
                                 a->steps(shape, RS_COLL_ALLREDUCE), a->sends))
      return RS_ENOMEM;
  }
  s->load = load;
  for (int r = 0; r < job->workers; r++)
    rs__sim_set_load(&s->clocks[r], load);
  return RS_OK;
}

static void simrun_free(rs_simrun_t *s) {
  if (s->full_load)
    rs__topo_unload(s->full_load);
  free(s->full_load);
  for (int b = 0; s->busy_loads && b < s->channels; b++)
    rs__topo_unload(&s->busy_loads[b]);
  free(s->busy_loads);
  free(s->clocks); /* (with arrive, wire, uses_at, channel_mem, via_nic) */
  free(s->algo_mem);
  free(s->seg_mem);
  free(s->slot_mem);
  if (s->rings)
    rs__rings_free(s->rings);
  free(s->rings);
  if (s->track) {
    free(s->track->saved);
    free(s->track->seen);
    free(s->track->seen_at);
    free(s->track->sent_at);
    free(s->track->got_at);
    for (int i = 0; i < 2; i++)
      free(s->track->cert_state[i]);
    for (int i = 0; i < 2; i++)
      free(s->track->cert_log[i].pair);
    free(s->track);
  }
}

/* Buckets of one size in a row (DDP's buckets, 25 MiB each) repeat one
 * schedule (rs__simrun_repeat_all): once one of them moves the whole state
 * uniformly, the rest are skipped. (Not with ready times: they do not
 * move with the state.) */
static int simulate(const rs_sim_job_t *job, const uint64_t *ready,
                    rs_sim_spans_t *spans, uint64_t bound, int plain) {
  const rs_algo_t *a = job->algo;
  const int workers = job->workers;
  /* (the NCCL channels a leaves to itself, resolved once for the run) */
  rs_netmodel_t own_net;
  rs_sim_job_t resolved = *job;
  resolved.net = net_for(a, job->net, workers, &own_net);
  job = &resolved;
  const rs_bucket_t *buckets = job->buckets;
  const size_t bucket_count = job->bucket_count;
  const size_t segment_bytes = job->segment_bytes, elem_size = job->elem_size;
  rs_simrun_t s = {0};
  if (simrun_init(&s, job, plain)) {
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
  /* (a stopped simulation's buckets are not played: its result means
   * nothing, and a streaming bucket's set-up alone is W x segments) */
  for (size_t b = 0; b < bucket_count && !s.nomem && !rs__simrun_stopped(&s);
       b++) {
    size_t same = b; /* the last bucket of b's size in a row */
    while (before && same + 1 < bucket_count &&
           buckets[same + 1].elems == buckets[b].elems)
      same++;
    for (size_t r = 0; same > b && r < W; r++)
      before[r] = rs__simstate_of(&s.clocks[r]);
    for (size_t r = 0; r < W; r++) {
      if (ready)
        rs__sim_start_at(&s.clocks[r], ready[b * W + r]);
      if (spans->worker_start)
        spans->worker_start[b * W + r] = s.clocks[r].clock;
    }
    for (size_t r = 0; r < W; r++) /* (the protocol's launch) */
      rs__sim_launch(&s.clocks[r]);
    stream_bucket(&s, job, b);
    if (bucket_load(&s, job, b)) {
      s.nomem = 1;
      break;
    }
    s.step = -1; /* (the first rs__simrun_step makes it 0) */
    a->sim_bucket(
        &s, buckets[b].elems,
        rs_segs_per_chunk(buckets[b].elems, workers, segment_bytes, elem_size));
    if (s.nomem)
      break;
    if (!plain) /* (its ports that no later bucket reads: simrun.h) */
      rs__simrun_settle(&s);
    for (size_t r = 0; spans->worker_end && r < W; r++)
      spans->worker_end[b * W + r] = s.clocks[r].clock;
    const uint64_t delta =
        same > b ? rs__simrun_repeat_all(&s, before, 0, same - b, NULL) : 0;
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
  if (s.over && bound != UINT64_MAX && end <= bound)
    end = bound + 1; /* (stopped by a sim_bucket's own bound on what is
                        still to come: more than bound, whatever the
                        clocks say so far) */
  spans->end_ns = end < UINT64_MAX ? end : UINT64_MAX - 1; /* (netmodel.h) */
  spans->played = s.played;
  spans->images = s.images;
  simrun_free(&s);
  return RS_OK;
}

int rs__algo_simulate_ready(const rs_sim_job_t *job, const uint64_t *ready,
                            rs_sim_spans_t *spans) {
  return simulate(job, ready, spans, UINT64_MAX, 0);
}

int rs__algo_simulate_ready_plain(const rs_sim_job_t *job,
                                  const uint64_t *ready,
                                  rs_sim_spans_t *spans) {
  return simulate(job, ready, spans, UINT64_MAX, 1);
}

/* A schedule's end: 0 when the model is off or W < 2, UINT64_MAX when out
 * of memory. */
static uint64_t end_of(const rs_sim_job_t *job, uint64_t bound, int plain) {
  rs_sim_spans_t spans = {0};
  if (!job->net->enabled || job->workers < 2)
    return 0;
  return simulate(job, NULL, &spans, bound, plain) ? UINT64_MAX : spans.end_ns;
}

uint64_t rs__algo_simulate_bounded(const rs_sim_job_t *job, uint64_t bound) {
  return end_of(job, bound, 0);
}

uint64_t rs__algo_simulate_plain(const rs_sim_job_t *job) {
  return end_of(job, UINT64_MAX, 1);
}

uint64_t rs__algo_simulate(const rs_sim_job_t *job) {
  return rs__algo_simulate_bounded(job, UINT64_MAX);
}

uint64_t rs__algo_predict_alone(const rs_algo_t *a, const rs_netmodel_t *m,
                                rs_shape_t shape, size_t elems, size_t cap,
                                size_t elem_size) {
  if (!m->enabled || shape.workers < 2)
    return 0;
  const rs_bucket_t bucket = {.elem_offset = 0, .elems = elems, .params = 1};
  const rs_sim_job_t job = {a,           m,          shape.workers, &bucket, 1,
                            cap * elem_size, elem_size};
  return rs__algo_simulate(&job);
}
