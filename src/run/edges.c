/* edges.c - the run's graph: the directed edges every algorithm of the run
 * declares (the union, with --algo auto), each sized for the largest
 * message it carries, and every worker's links onto them; and the sizes
 * derived from the buckets (largest bucket, segment cap, trace records).
 */
#include <assert.h>
#include <stdlib.h>

#include "algo/list.h"
#include "run/run.h"

/* The most elements of any bucket. */
size_t rs__run_largest_bucket(const rs_run_t *run) {
  size_t most = 0;
  for (size_t b = 0; b < run->result.buckets; b++)
    most = run->buckets[b].elems > most ? run->buckets[b].elems : most;
  return most;
}

/* The most elements one message carries: segment_bytes of the dtype. */
size_t rs__run_seg_cap(const rs_run_t *run) {
  size_t cap = run->config.segment_bytes / run->elem_size;
  return cap ? cap : 1;
}

/* Trace records for worker r: at most one per message it receives, in
 * every iteration (a root may receive far more than the others). */
size_t rs__run_events_of(const rs_run_t *run, int r) {
  const rs_config_t *c = &run->config;
  size_t msgs = 0;
  for (size_t b = 0; b < run->result.buckets && c->workers > 1; b++)
    if (r < c->workers || run->bucket_algo[b]->run_switch) /* (a switch's) */
      msgs += run->bucket_algo[b]->messages(
          run->shape, r, run->buckets[b].elems, run->bucket_segs[b],
          rs__run_seg_cap(run), c->collective);
  return msgs * (size_t)(c->warmup + c->iterations);
}

/* ... and for every worker together. */
double rs__run_events_total(const rs_run_t *run) {
  double total = 0;
  for (int r = 0; r < rs__run_participants(run); r++)
    total += (double)rs__run_events_of(run, r);
  return total;
}

/* The edge from -> to, if some algorithm of the run declared it (the
 * edges from a worker lie together: run->edge_start). */
static rs_edge_t *find_edge(rs_run_t *run, int from, int to, int channel) {
  for (int i = run->edge_start[from]; i < run->edge_start[from + 1]; i++)
    if (run->edges[i].to == to && run->edges[i].channel == channel)
      return &run->edges[i];
  return NULL;
}

/* The channels of an algorithm's n peers of worker r (send_peers'
 * when sending, else recv_peers'), into peer_channel: on NCCL's channels (each
 * its own queue on an edge) its peer_channels', or peer i's channel i;
 * else 0. */
static void peer_channels(const rs_algo_t *algo, rs_shape_t shape, int r,
                          int sending, int n, int *peer_channel) {
  assert(n <= RS__MAX_CHANNEL_PEERS || !(algo->caps & RS__CAP_CHANNELS));
  if ((algo->caps & RS__CAP_CHANNELS) && algo->peer_channels) {
    algo->peer_channels(shape, r, sending, peer_channel);
    return;
  }
  for (int i = 0; i < n && i < RS__MAX_CHANNEL_PEERS; i++)
    peer_channel[i] = algo->caps & RS__CAP_CHANNELS ? i : 0;
}

/* The channel of peer i (peer_channel as peer_channels filled it: room for
 * RS__MAX_CHANNEL_PEERS; past it, an algorithm not on channels: 0). */
static int channel_at(const int *peer_channel, int i) {
  return i < RS__MAX_CHANNEL_PEERS ? peer_channel[i] : 0;
}

/* The directed edges of every algorithm the buckets run (with --algo auto,
 * the union of the chosen ones'), worker by worker, each with room for its
 * largest message (in elements) over every bucket that uses it; not yet
 * opened. */
int rs__run_list_edges(rs_run_t *run, int *peers, size_t **edge_elems) {
  const int W = run->config.workers;
  const size_t cap = rs__run_seg_cap(run);
  int count = 0;
  run->switches = 0; /* (a switch a node, if some algorithm has one) */
  for (int a = 0; a < RS_ALGO_COUNT && W > 1; a++)
    if ((run->algos_used & (1u << a)) &&
        rs__algo_get((rs_algorithm_t)a)->run_switch)
      run->switches = W / run->shape.gpus;
  const int P = rs__run_participants(run);
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    for (int r = 0; r < P && W > 1 && (run->algos_used & (1u << a)); r++)
      count +=
          rs__algo_get((rs_algorithm_t)a)->send_peers(run->shape, r, peers);
  run->edges = calloc((size_t)count ? (size_t)count : 1, sizeof *run->edges);
  run->edge_start = calloc((size_t)P + 1, sizeof *run->edge_start);
  *edge_elems = calloc((size_t)count ? (size_t)count : 1, sizeof **edge_elems);
  if (!run->edges || !run->edge_start || !*edge_elems)
    return RS_ENOMEM;
  for (int r = 0; r < P; r++) {
    run->edge_start[r] = run->edge_count;
    for (int a = 0; a < RS_ALGO_COUNT && W > 1; a++) {
      const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
      if (!(run->algos_used & (1u << a)))
        continue;
      int n = algo->send_peers(run->shape, r, peers);
      int peer_channel[RS__MAX_CHANNEL_PEERS];
      peer_channels(algo, run->shape, r, 1, n, peer_channel);
      for (int i = 0; i < n; i++) {
        run->edge_start[r + 1] = run->edge_count;
        const int channel = channel_at(peer_channel, i);
        rs_edge_t *e = find_edge(run, r, peers[i], channel);
        if (!e) {
          e = &run->edges[run->edge_count++];
          e->from = r;
          e->to = peers[i];
          e->channel = channel;
        }
        size_t *most = &(*edge_elems)[e - run->edges];
        for (size_t b = 0; b < run->result.buckets; b++) {
          if (run->bucket_algo[b] != algo)
            continue;
          size_t m = algo->message_elems(run->shape, r, peers[i],
                                         run->buckets[b].elems,
                                         run->bucket_segs[b], cap);
          *most = m > *most ? m : *most;
        }
      }
    }
    run->edge_start[r + 1] = run->edge_count;
  }
  return RS_OK;
}

/* Add peer's edge (of a channel) to a worker's list of links, unless it
 * is there. */
static void add_link(rs_link_t *list, int *count, int peer, int channel,
                     rs_edge_t *edge) {
  for (int i = 0; i < *count; i++)
    if (list[i].peer == peer && list[i].channel == channel)
      return;
  list[(*count)++] = (rs_link_t){peer, channel, edge};
}

/* Give every worker its links: the edges it sends on and receives on, for
 * every algorithm the buckets run. */
int rs__run_link_workers(rs_run_t *run, int *peers) {
  const int W = run->config.workers, P = rs__run_participants(run);
  int peer_channel[RS__MAX_CHANNEL_PEERS];
  run->links = calloc(2 * (size_t)run->edge_count + 1, sizeof *run->links);
  if (!run->links)
    return RS_ENOMEM;
  rs_link_t *next = run->links;
  for (int r = 0; r < P && W > 1; r++) {
    rs_worker_t *w = &run->workers[r];
    w->out = next;
    w->out_count = 0;
    for (int a = 0; a < RS_ALGO_COUNT; a++) {
      if (!(run->algos_used & (1u << a)))
        continue;
      const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
      int n = algo->send_peers(run->shape, r, peers);
      peer_channels(algo, run->shape, r, 1, n, peer_channel);
      for (int i = 0; i < n; i++)
        add_link(w->out, &w->out_count, peers[i], channel_at(peer_channel, i),
                 find_edge(run, r, peers[i], channel_at(peer_channel, i)));
    }
    w->in = w->out + w->out_count;
    w->in_count = 0;
    for (int a = 0; a < RS_ALGO_COUNT; a++) {
      if (!(run->algos_used & (1u << a)))
        continue;
      const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
      int n = algo->recv_peers(run->shape, r, peers);
      peer_channels(algo, run->shape, r, 0, n, peer_channel);
      for (int i = 0; i < n; i++)
        add_link(w->in, &w->in_count, peers[i], channel_at(peer_channel, i),
                 find_edge(run, peers[i], r, channel_at(peer_channel, i)));
    }
    next = w->in + w->in_count;
    for (rs_link_t *l = w->out; l < next; l++)
      assert(l->edge && "send and receive peers disagree");
  }
  return RS_OK;
}

/* Does some algorithm of the run keep worker r's bucket aside? */
int rs__run_stashes(const rs_run_t *run, int r) {
  const int W = run->config.workers;
  for (int a = 0; a < RS_ALGO_COUNT && W > 1; a++) {
    const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
    if ((run->algos_used & (1u << a)) && algo->stashes &&
        algo->stashes(run->shape, r))
      return 1;
  }
  return 0;
}
