/* algo/algo.c - the pieces of an rs_algo_t (algo.h) that several
 * algorithms share. */
#include "algo/algo.h"

#include <stdlib.h>

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
                       size_t segment_bytes, size_t elem_size) {
  s->net = m;
  s->shape = rs__shape_of(m, workers);
  s->elem_size = elem_size;
  s->cap = segment_bytes / elem_size ? segment_bytes / elem_size : 1;
  s->clocks = calloc((size_t)workers, sizeof *s->clocks);
  s->arrive = calloc((size_t)workers, sizeof *s->arrive);
  s->wire = calloc((size_t)workers, sizeof *s->wire);
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
    if (rs__topo_load(&s->load, t, a->steps(s->shape, RS_COLL_ALLREDUCE),
                      a->sends))
      return RS_ENOMEM;
    for (int r = 0; r < workers; r++)
      s->clocks[r].load = &s->load;
  }
  return RS_OK;
}

static void simrun_free(rs_simrun_t *s) {
  rs__topo_unload(&s->load);
  free(s->clocks);
  free(s->arrive);
  free(s->wire);
  free(s->algo_mem);
}

int rs__algo_simulate_ready(const rs_algo_t *a, const rs_netmodel_t *m,
                            int workers, const rs_bucket_t *buckets,
                            size_t bucket_count, size_t segment_bytes,
                            size_t elem_size, const uint64_t *ready,
                            rs_sim_spans_t *spans) {
  rs_simrun_t s = {0};
  if (simrun_init(&s, a, m, workers, segment_bytes, elem_size)) {
    simrun_free(&s);
    return RS_ENOMEM;
  }
  const size_t W = (size_t)workers;
  for (size_t b = 0; b < bucket_count; b++) {
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
    if (s.nomem) {
      simrun_free(&s);
      return RS_ENOMEM;
    }
    for (size_t r = 0; spans->worker_end && r < W; r++)
      spans->worker_end[b * W + r] = s.clocks[r].clock;
  }
  uint64_t end = 0;
  for (size_t r = 0; r < W; r++)
    end = s.clocks[r].clock > end ? s.clocks[r].clock : end;
  spans->end_ns = end < UINT64_MAX ? end : UINT64_MAX - 1; /* (netmodel.h) */
  simrun_free(&s);
  return RS_OK;
}

uint64_t rs__algo_simulate(const rs_algo_t *a, const rs_netmodel_t *m,
                           int workers, const rs_bucket_t *buckets,
                           size_t bucket_count, size_t segment_bytes,
                           size_t elem_size) {
  rs_sim_spans_t spans = {0};
  if (!m->enabled || workers < 2)
    return 0;
  return rs__algo_simulate_ready(a, m, workers, buckets, bucket_count,
                                 segment_bytes, elem_size, NULL, &spans)
             ? UINT64_MAX
             : spans.end_ns;
}

void rs__simrun_step(rs_simrun_t *s) {
  s->step++;
  if (rs__simrun_stopped(s)) /* (its loops run out, doing nothing) */
    return;
  for (int r = 0; r < s->shape.workers; r++)
    rs__sim_step(&s->clocks[rs__group_worker(&s->group, r)]);
}
