/* run.c - one run: its buffers, edges and worker threads.
 *
 * The run owns everything it uses (no global state), so two runs in one
 * process do not interfere. rs_run_execute computes the reference, starts
 * one thread per worker behind a gate so they begin together, joins them
 * all, and checks the result. The first fault (a timeout, a bad message)
 * sets the run's error and the abort flag, and wakes every channel, so no
 * worker is left waiting.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/list.h"
#include "check/check.h"
#include "net/evcount.h"
#include "core/mpi_run.h"
#include "base/parallel.h"
#include "base/reduce.h"
#include "core/runstate.h"
#include "io/trace.h"
#include "base/util.h"

void rs_config_init(rs_config_t *c) {
  memset(c, 0, sizeof *c);
  c->workers = 4;
  c->segment_bytes = RS_DEFAULT_SEGMENT_BYTES;
  c->slots = RS_DEFAULT_SLOTS;
  c->timeout_s = RS_DEFAULT_TIMEOUT_S;
  c->op = RS_OP_AVG;
  c->collective = RS_COLL_ALLREDUCE;
  c->iterations = 1;
  c->bucket_bytes = RS_DEFAULT_BUCKET_BYTES;
  c->first_bucket_bytes = RS_DEFAULT_FIRST_BUCKET_BYTES;
  c->ref_reps = 1;
}

/* Why algorithm a cannot run under c's options (errmsg says it), or RS_OK:
 * what --algo NAME refuses and --algo auto leaves out. */
static int refusal(const rs_config_t *c, rs_algorithm_t a, char *errmsg) {
  const rs_algo_t *algo = rs__algo_get(a);
  if (!algo)
    return rs__err(errmsg, RS_EINVAL, "algo: %s is not implemented yet",
                   rs_algorithm_name(a));
  if (a != RS_ALGO_RING && c->slices)
    return rs__err(errmsg, RS_EINVAL,
                   "loop: slices is NCCL's loop order for the ring, not for "
                   "%s",
                   algo->name);
  if (a != RS_ALGO_RING && c->collective != RS_COLL_ALLREDUCE)
    return rs__err(errmsg, RS_EINVAL,
                   "collective: a reduce-scatter alone is the ring's, not "
                   "%s's",
                   algo->name);
  if (c->direct && c->workers > 1 && algo->direct_slots(c->workers, 1, 0) == 0)
    return rs__err(errmsg, RS_EINVAL,
                   "direct: the copy-free transport is not safe for %s: it "
                   "reduces into regions its peers may still be reading",
                   algo->name);
  return RS_OK;
}

/* The algorithms --algo auto may choose under c: bit a for algorithm a. */
static unsigned eligible(const rs_config_t *c) {
  char scratch[RS_ERRMSG_MAX];
  unsigned mask = 0;
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    if (refusal(c, (rs_algorithm_t)a, scratch) == RS_OK)
      mask |= 1u << a;
  return mask;
}

static int check_config(const rs_config_t *c, char *errmsg) {
  if (c->workers < 1 || c->workers > RS_MAX_WORKERS)
    return rs__err(errmsg, RS_EINVAL, "workers: %d is not in 1..%d", c->workers,
                   RS_MAX_WORKERS);
  if (c->slots < 1 || c->slots > RS_MAX_SLOTS)
    return rs__err(errmsg, RS_EINVAL, "slots: %d is not in 1..%d", c->slots,
                   RS_MAX_SLOTS);
  if (c->segment_bytes < RS_MIN_SEGMENT_BYTES ||
      c->segment_bytes > RS_MAX_SEGMENT_BYTES)
    return rs__err(errmsg, RS_EINVAL, "segment bytes: %zu is not in %d..%zu",
                   c->segment_bytes, RS_MIN_SEGMENT_BYTES,
                   RS_MAX_SEGMENT_BYTES);
  if (!(c->timeout_s > 0 && c->timeout_s <= 1e6))
    return rs__err(errmsg, RS_EINVAL, "timeout: %g s is not in (0, 1e6]",
                   c->timeout_s);
  if (c->op < RS_OP_SUM || c->op > RS_OP_PROD)
    return rs__err(errmsg, RS_EINVAL, "op: unknown op %d", (int)c->op);
  if (c->average_pre < RS_AVERAGE_POST || c->average_pre > RS_AVERAGE_PRE_MUL)
    return rs__err(errmsg, RS_EINVAL,
                   "average: %d is not post (0), pre (1) or pre-mul (2)",
                   c->average_pre);
  if (c->iterations < 1 || c->iterations > 1000000 || c->warmup < 0 ||
      c->warmup > 1000000)
    return rs__err(errmsg, RS_EINVAL,
                   "iterations: %d timed and %d warm-up; need 1.. and 0.. "
                   "(at most a million)",
                   c->iterations, c->warmup);
  int rc = rs_netmodel_check(&c->net, c->workers, errmsg);
  if (rc)
    return rc;
  if (c->algo == RS_ALGO_AUTO && c->fault_count > 0)
    return rs__err(errmsg, RS_EINVAL,
                   "inject: --algo auto chooses an algorithm per bucket, so "
                   "a step number names no one step; give --algo NAME");
  if (c->algo == RS_ALGO_AUTO && c->machine.enabled && !c->net.enabled &&
      (rc = rs_netmodel_check(&c->machine, c->workers, errmsg)))
    return rc;
  if (c->algo != RS_ALGO_AUTO && (rc = refusal(c, c->algo, errmsg)))
    return rc;
  const rs_algo_t *algo =
      rs__algo_get(c->algo == RS_ALGO_AUTO ? RS_ALGO_RING : c->algo);
  if (c->ddp_layout && c->direct)
    return rs__err(errmsg, RS_EINVAL,
                   "direct: peers read a bucket in place, so it cannot be "
                   "laid out as DDP's (--like ddp-gloo) and back while they "
                   "do; use the copying transport");
  if (c->slices && c->net.enabled)
    return rs__err(errmsg, RS_EINVAL,
                   "loop: the network model simulates the step order; it "
                   "cannot time NCCL's slice order");
  if (c->ref_reps < 1 || c->ref_reps > 1000)
    return rs__err(errmsg, RS_EINVAL, "ref_reps: %d is not in 1..1000",
                   c->ref_reps);
  if (c->fault_count < 0 || c->fault_count > RS_MAX_FAULTS)
    return rs__err(errmsg, RS_EINVAL, "inject: at most %d faults",
                   RS_MAX_FAULTS);
  for (int i = 0; i < c->fault_count; i++) {
    const rs_fault_t *f = &c->faults[i];
    if (f->worker < 0 || f->worker >= c->workers)
      return rs__err(errmsg, RS_EINVAL,
                     "inject: worker %d does not exist (workers 0..%d)",
                     f->worker, c->workers - 1);
    if (c->workers == 1)
      return rs__err(errmsg, RS_EINVAL,
                     "inject: one worker has no ring steps to fault");
    const int steps = algo->steps(c->workers, c->collective);
    if ((f->step < 0 || f->step > steps - 1) && c->algo == RS_ALGO_RING)
      return rs__err(errmsg, RS_EINVAL,
                     "inject: step %d does not exist (steps 0..%d: "
                     "reduce-scatter 0..%d, all-gather %d..%d)",
                     f->step, 2 * (c->workers - 1) - 1, c->workers - 2,
                     c->workers - 1, 2 * (c->workers - 1) - 1);
    if (f->step < 0 || f->step > steps - 1)
      return rs__err(errmsg, RS_EINVAL,
                     "inject: step %d does not exist (%s at W=%d has steps "
                     "0..%d)",
                     f->step, algo->name, c->workers, steps - 1);
    if (f->kind == RS_FAULT_STALL && (f->ms < 0 || f->ms > 3600000))
      return rs__err(errmsg, RS_EINVAL,
                     "inject: stall of %d ms is not in 0..3600000", f->ms);
  }
  return RS_OK;
}

/* The most elements of any bucket. */
static size_t largest_bucket(const rs_run_t *run) {
  size_t most = 0;
  for (size_t b = 0; b < run->result.buckets; b++)
    most = run->buckets[b].elems > most ? run->buckets[b].elems : most;
  return most;
}

/* The most elements one message carries: segment_bytes of the dtype. */
static size_t seg_cap(const rs_run_t *run) {
  size_t cap = run->config.segment_bytes / run->elem_size;
  return cap ? cap : 1;
}

/* Trace records for worker r: at most one per message it receives, in
 * every iteration (a root may receive far more than the others). */
static size_t events_of(const rs_run_t *run, int r) {
  const rs_config_t *c = &run->config;
  size_t msgs = 0;
  for (size_t b = 0; b < run->result.buckets && c->workers > 1; b++)
    msgs += run->bucket_algo[b]->messages(c->workers, r, run->buckets[b].elems,
                                          run->bucket_segs[b], seg_cap(run),
                                          c->collective);
  return msgs * (size_t)(c->warmup + c->iterations);
}

/* ... and for every worker together. */
static double events_total(const rs_run_t *run) {
  double total = 0;
  for (int r = 0; r < run->config.workers; r++)
    total += (double)events_of(run, r);
  return total;
}

/* The edge from -> to, if some algorithm of the run declared it (the
 * edges from a worker lie together: run->edge_start). */
static rs_edge_t *find_edge(rs_run_t *run, int from, int to) {
  for (int i = run->edge_start[from]; i < run->edge_start[from + 1]; i++)
    if (run->edges[i].to == to)
      return &run->edges[i];
  return NULL;
}

/* The directed edges of every algorithm the buckets run (with --algo auto,
 * the union of the chosen ones'), worker by worker, each with room for its
 * largest message (in elements) over every bucket that uses it; not yet
 * opened. */
static int list_edges(rs_run_t *run, int *peers, size_t **edge_elems) {
  const int W = run->config.workers;
  const size_t cap = seg_cap(run);
  int count = 0;
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    for (int r = 0; r < W && W > 1 && (run->algos_used & (1u << a)); r++)
      count += rs__algo_get((rs_algorithm_t)a)->send_peers(W, r, peers);
  run->edges = calloc((size_t)count ? (size_t)count : 1, sizeof *run->edges);
  run->edge_start = calloc((size_t)W + 1, sizeof *run->edge_start);
  *edge_elems = calloc((size_t)count ? (size_t)count : 1, sizeof **edge_elems);
  if (!run->edges || !run->edge_start || !*edge_elems)
    return RS_ENOMEM;
  for (int r = 0; r < W; r++) {
    run->edge_start[r] = run->edge_count;
    for (int a = 0; a < RS_ALGO_COUNT && W > 1; a++) {
      const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
      if (!(run->algos_used & (1u << a)))
        continue;
      int n = algo->send_peers(W, r, peers);
      for (int i = 0; i < n; i++) {
        run->edge_start[r + 1] = run->edge_count;
        rs_edge_t *e = find_edge(run, r, peers[i]);
        if (!e) {
          e = &run->edges[run->edge_count++];
          e->from = r;
          e->to = peers[i];
        }
        size_t *most = &(*edge_elems)[e - run->edges];
        for (size_t b = 0; b < run->result.buckets; b++) {
          if (run->bucket_algo[b] != algo)
            continue;
          size_t m = algo->message_elems(W, r, peers[i], run->buckets[b].elems,
                                         run->bucket_segs[b], cap);
          *most = m > *most ? m : *most;
        }
      }
    }
    run->edge_start[r + 1] = run->edge_count;
  }
  return RS_OK;
}

/* Add peer's edge to a worker's list of links, unless it is there. */
static void add_link(rs_link_t *list, int *count, int peer, rs_edge_t *edge) {
  for (int i = 0; i < *count; i++)
    if (list[i].peer == peer)
      return;
  list[(*count)++] = (rs_link_t){peer, edge};
}

/* Give every worker its links: the edges it sends on and receives on, for
 * every algorithm the buckets run. */
static int link_workers(rs_run_t *run, int *peers) {
  const int W = run->config.workers;
  run->links = calloc(2 * (size_t)run->edge_count + 1, sizeof *run->links);
  if (!run->links)
    return RS_ENOMEM;
  rs_link_t *next = run->links;
  for (int r = 0; r < W && W > 1; r++) {
    rs_worker_t *w = &run->workers[r];
    w->out = next;
    w->out_count = 0;
    for (int a = 0; a < RS_ALGO_COUNT; a++) {
      if (!(run->algos_used & (1u << a)))
        continue;
      int n = rs__algo_get((rs_algorithm_t)a)->send_peers(W, r, peers);
      for (int i = 0; i < n; i++)
        add_link(w->out, &w->out_count, peers[i], find_edge(run, r, peers[i]));
    }
    w->in = w->out + w->out_count;
    w->in_count = 0;
    for (int a = 0; a < RS_ALGO_COUNT; a++) {
      if (!(run->algos_used & (1u << a)))
        continue;
      int n = rs__algo_get((rs_algorithm_t)a)->recv_peers(W, r, peers);
      for (int i = 0; i < n; i++)
        add_link(w->in, &w->in_count, peers[i], find_edge(run, peers[i], r));
    }
    next = w->in + w->in_count;
    for (rs_link_t *l = w->out; l < next; l++)
      assert(l->edge && "send and receive peers disagree");
  }
  return RS_OK;
}

/* Does some algorithm of the run keep worker r's bucket aside? */
static int stashes(const rs_run_t *run, int r) {
  const int W = run->config.workers;
  for (int a = 0; a < RS_ALGO_COUNT && W > 1; a++) {
    const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
    if ((run->algos_used & (1u << a)) && algo->stashes && algo->stashes(W, r))
      return 1;
  }
  return 0;
}

/* The algorithm of every bucket: config's, or (--algo auto) the one the
 * model predicts fastest for its size, the model this machine's, measured,
 * unless --net gives one. Then the depth and steps of those. */
static int choose_algos(rs_run_t *run, char *errmsg) {
  const rs_config_t *c = &run->config;
  const size_t buckets = run->result.buckets;
  const int autoc = c->algo == RS_ALGO_AUTO;
  run->bucket_choice = calloc(buckets + 1, sizeof *run->bucket_choice);
  run->bucket_algo = calloc(buckets + 1, sizeof *run->bucket_algo);
  if (autoc)
    run->bucket_predicted =
        calloc((buckets + 1) * RS_ALGO_COUNT, sizeof *run->bucket_predicted);
  if (!run->bucket_choice || !run->bucket_algo ||
      (autoc && !run->bucket_predicted))
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  if (autoc) {
    if (c->net.enabled) {
      run->auto_model = c->net;
    } else if (c->machine.enabled) {
      run->auto_model = c->machine;
      run->auto_measured = 1;
    } else {
      return rs__err(errmsg, RS_EINVAL,
                     "algo auto: no network model to choose by: give net, "
                     "or measure this machine (rs_config_measure_machine)");
    }
  }
  const unsigned mask = eligible(c);
  run->depth = 0;
  run->result.steps = 0;
  for (size_t b = 0; b < buckets; b++) {
    rs_algorithm_t a = c->algo;
    if (autoc)
      a = rs_auto_choose(&run->auto_model, c->workers, run->buckets[b].elems,
                         c->segment_bytes, run->elem_size, mask,
                         &run->bucket_predicted[b * RS_ALGO_COUNT]);
    run->bucket_choice[b] = a;
    run->bucket_algo[b] = rs__algo_get(a);
    run->algos_used |= 1u << a;
    if (c->workers > 1) {
      int depth = run->bucket_algo[b]->depth(c->workers);
      int steps = run->bucket_algo[b]->steps(c->workers, c->collective);
      run->depth = depth > run->depth ? depth : run->depth;
      run->result.steps = steps > run->result.steps ? steps : run->result.steps;
    }
  }
  return RS_OK;
}

/* The test knob RINGSIM_TEST_FLIP=WORKER:ELEMENT[,...] (docs/reliability.md):
 * flip the lowest bit of those elements of those workers' results after
 * the all-reduce, before the check, as silent memory corruption would,
 * to test the check's listing of workers that differ. */
static int parse_flips(rs_run_t *run, char *errmsg) {
  const char *text = getenv("RINGSIM_TEST_FLIP");
  if (!text)
    return RS_OK;
  const int max = (int)(sizeof run->flips / sizeof *run->flips);
  const char *at = text;
  for (;;) {
    char *end;
    errno = 0;
    long worker = strtol(at, &end, 10);
    int ok = end != at && *end == ':' && worker >= 0 &&
             worker < run->config.workers && run->flip_count < max;
    unsigned long long elem = 0;
    if (ok) {
      at = end + 1;
      elem = strtoull(at, &end, 10);
      ok = end != at && isdigit((unsigned char)*at) && !errno &&
           elem < run->elems && (*end == ',' || *end == '\0');
    }
    if (!ok)
      return rs__err(errmsg, RS_EINVAL,
                     "RINGSIM_TEST_FLIP '%s': expected up to %d "
                     "WORKER:ELEMENT pairs, comma-separated, with WORKER "
                     "below %d and ELEMENT below %zu",
                     text, max, run->config.workers, run->elems);
    run->flips[run->flip_count].worker = (int)worker;
    run->flips[run->flip_count++].elem = (size_t)elem;
    if (*end == '\0')
      return RS_OK;
    at = end + 1;
  }
}

/* Flip the test knob's bits in this process's workers' results. */
static void apply_flips(rs_run_t *run) {
  for (int k = 0; k < run->flip_count; k++) {
    if (!rs__run_local(run, run->flips[k].worker))
      continue;
    /* the lowest byte of the element (little-endian: its lowest bit) */
    unsigned char *elem = run->bufs[run->flips[k].worker] +
                          run->flips[k].elem * run->buf_elem_bytes;
    elem[0] ^= 1;
  }
}

int rs_run_create(const rs_config_t *config, const rs_model_t *model,
                  rs_run_t **out, char *errmsg) {
  *out = NULL;
  int rc = check_config(config, errmsg);
  if (rc)
    return rc;
  const int W = config->workers;
  const size_t n = rs_model_elems(model);
  const rs_dtype_t dtype = rs_model_dtype(model);
  size_t *edge_elems = NULL;
  int *peers = malloc((size_t)W * sizeof *peers);
  rs_run_t *run = calloc(1, sizeof *run);
  if (!run || !peers) {
    free(run);
    free(peers);
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  }
  run->config = *config;
  run->model = model;
  run->algo = rs__algo_get(config->algo); /* NULL for auto */
  run->elems = n;
  run->dtype = dtype;
  run->elem_size = rs_dtype_size(dtype);
  run->buf_elem_bytes = rs_dtype_buffer_size(dtype);
  if ((rc = parse_flips(run, errmsg))) {
    free(peers);
    rs_run_free(run);
    return rc;
  }
  atomic_init(&run->abort_flag, 0);
  atomic_init(&run->interrupted_by, NULL);
  atomic_init(&run->phase, RS_STAGE_IDLE);
  atomic_init(&run->phase_done, 0);
  atomic_init(&run->phase_total, 0);
  run->fault_worker = -1;
  RS_PTHREAD_CHECK(pthread_mutex_init(&run->err_mu, NULL));
  /* One process hosts every worker; over MPI, its block of them. */
  run->procs = 1;
  run->local_end = W;
  if (config->mpi && (rc = rs__mpi_open(run, errmsg))) {
    free(peers);
    rs_run_free(run);
    return rc;
  }
  const int local = run->local_end - run->first_local;

  /* Buckets, then segments: each chunk of a bucket (at most ceil(elems/W)
   * elements) moves as the same number of near-equal segments of at most
   * segment_bytes. */
  if (rs_model_buckets(model, config->first_bucket_bytes, config->bucket_bytes,
                       &run->buckets, &run->result.buckets) ||
      !(run->bucket_segs =
            calloc(run->result.buckets, sizeof *run->bucket_segs)))
    goto nomem_small;
  size_t min_segs = SIZE_MAX;
  for (size_t b = 0; b < run->result.buckets; b++) {
    run->bucket_segs[b] = rs_segs_per_chunk(
        run->buckets[b].elems, W, config->segment_bytes, run->elem_size);
    min_segs = run->bucket_segs[b] < min_segs ? run->bucket_segs[b] : min_segs;
  }
  if ((rc = choose_algos(run, errmsg))) {
    free(peers);
    rs_run_free(run);
    return rc;
  }
  if (list_edges(run, peers, &edge_elems))
    goto nomem_small;
  size_t seg_elems = 0;
  for (int i = 0; i < run->edge_count; i++)
    seg_elems = edge_elems[i] > seg_elems ? edge_elems[i] : seg_elems;

  const size_t elem_bytes = run->buf_elem_bytes;
  /* The copy transport carries the dtype's size: f16 and bf16 are packed
   * into 2 bytes (channel.h); the direct one carries no payload. */
  const int packed =
      !config->direct && (dtype == RS_DTYPE_F16 || dtype == RS_DTYPE_BF16);
  const size_t wire_bytes = packed ? rs_dtype_size(dtype) : elem_bytes;
  int slots = config->slots;
  /* With direct channels, the fewest slots any algorithm of the run needs
   * to be safe (check_config refused, or auto left out, the unsafe). */
  size_t safe = (size_t)slots;
  for (int a = 0; a < RS_ALGO_COUNT && W > 1; a++) {
    if (!(run->algos_used & (1u << a)))
      continue;
    size_t s = rs__algo_get((rs_algorithm_t)a)
                   ->direct_slots(W, min_segs, config->slices);
    safe = s < safe ? s : safe;
  }
  if (config->direct && (size_t)slots > safe)
    slots = (int)safe;

  /* Refuse a run that cannot fit in memory before allocating any of it. */
  double events = config->traced ? events_total(run) * sizeof(rs_event_t) : 0;
  if (config->traced && run->mpi) /* a ring per worker, and a batch */
    events = (double)(local + 1) * (double)rs__mpi_trace_batch(run) *
             sizeof(rs_event_t);
  double edges = 0;
  for (int i = 0; i < run->edge_count; i++) {
    size_t payload = config->direct ? 0 : edge_elems[i] * wire_bytes;
    edges += (double)slots * (double)(sizeof(rs_msg_t) + payload + 64);
  }
  /* and each worker's room to unpack a message (f16, bf16 on the copy
   * transport), and a root's stash of its own bucket (linear) */
  double scratch = 0;
  for (int r = 0; r < W && W > 1; r++)
    scratch +=
        (packed ? (double)seg_elems * sizeof(float) : 0) +
        (stashes(run, r) ? (double)largest_bucket(run) * elem_bytes : 0) +
        (config->ddp_layout ? (double)largest_bucket(run) * elem_bytes : 0);
  /* (The check keeps no reference for generated inputs; for others it
   * asks for its own, rs__check_prepare.) */
  double need =
      (double)local * (double)n * elem_bytes + edges + scratch + events;
  double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  if (have > 0 && need > 0.9 * have) {
    char records[96] = "";
    if (events > 0)
      snprintf(records, sizeof records,
               "; %.1f GiB of it trace records, %zu B per transfer",
               events / (1 << 30), sizeof(rs_event_t));
    const int procs = run->procs;
    free(edge_elems);
    free(peers);
    rs_run_free(run);
    if (procs > 1)
      return rs__err(errmsg, RS_ENOMEM,
                     "the run needs about %.1f GiB in this process (%d of "
                     "W=%d workers x %zu elements%s), more than this "
                     "machine's %.1f GiB",
                     need / (1 << 30), local, W, n, records, have / (1 << 30));
    return rs__err(errmsg, RS_ENOMEM,
                   "the run needs about %.1f GiB (W=%d x %zu elements%s), "
                   "more than this machine's %.1f GiB",
                   need / (1 << 30), W, n, records, have / (1 << 30));
  }
  /* reported: as each bucket's algorithm cuts its chunks */
  run->result.segs_per_chunk = 0;
  for (size_t b = 0; b < run->result.buckets; b++) {
    const rs_algo_t *a = run->bucket_algo[b];
    run->result.segs_per_chunk +=
        a->chunk_segs ? a->chunk_segs(W, run->buckets[b].elems,
                                      run->bucket_segs[b], seg_cap(run))
                      : run->bucket_segs[b];
  }
  run->result.seg_elems = seg_elems;
  run->result.slots = slots;

  run->bufs = calloc((size_t)W, sizeof *run->bufs);
  run->workers = rs__aligned_alloc((size_t)W * sizeof *run->workers);
  run->checks = calloc(rs_model_param_count(model), sizeof *run->checks);
  if (!run->bufs || !run->workers || !run->checks)
    goto nomem;
  memset(run->workers, 0, (size_t)W * sizeof *run->workers);
  for (int r = run->first_local; r < run->local_end; r++)
    if (!(run->bufs[r] = rs__aligned_alloc(n * elem_bytes)))
      goto nomem;
  for (int i = 0; i < run->edge_count; i++) {
    rs_edge_t *e = &run->edges[i];
    size_t payload = config->direct ? 0 : edge_elems[i] * wire_bytes;
    e->tp = config->direct ? &rs__transport_direct : &rs__transport_copy;
    int from_here = rs__run_local(run, e->from);
    int to_here = rs__run_local(run, e->to);
    if (from_here != to_here) { /* between processes: MPI copies */
      if (rs__mpi_edge_open(run, e, edge_elems[i] * wire_bytes, slots))
        goto nomem;
    } else if (!from_here) { /* between two other processes' workers */
      e->tp = &rs__transport_mpi;
    } else if (rs__chan_init(&e->chan, slots, payload, &run->abort_flag)) {
      goto nomem;
    }
    e->chan.elem_bytes = wire_bytes;
    e->chan.spin_ns = rs__chan_spin_for(edge_elems[i] * elem_bytes);
    if (packed)
      e->chan.pack = dtype == RS_DTYPE_F16 ? rs__pack_f16 : rs__pack_bf16;
    /* Faults are caught by sequence numbers and, here, checksums. */
    e->chan.checksum = config->checksum || config->fault_count > 0;
  }
  if (link_workers(run, peers))
    goto nomem;
  for (int r = 0; r < W; r++) {
    rs_worker_t *w = &run->workers[r];
    w->rc = RS_WORKER_NOT_STARTED;
    w->rank = r;
    w->workers = W;
    w->buf = run->bufs[r];
    w->buf_elem_bytes = elem_bytes;
    w->progress.peer = -1;
    if (packed && W > 1) {
      w->unpack = dtype == RS_DTYPE_F16 ? rs__unpack_f16 : rs__unpack_bf16;
      w->unpacked =
          rs__aligned_alloc((seg_elems ? seg_elems : 1) * sizeof *w->unpacked);
      if (!w->unpacked)
        goto nomem;
    }
    w->op = config->op;
    w->dtype = run->dtype;
    w->elem_size = run->elem_size;
    w->average_pre = config->average_pre;
    w->slices = config->slices;
    w->collective = config->collective;
    w->timeout_ns = (uint64_t)(config->timeout_s * 1e9);
    w->faults = run->config.faults;
    w->fault_count = run->config.fault_count;
    rs__sim_init(&w->sim, &run->config.net, W, r);
    w->seg_cap = seg_cap(run);
    if (W > 1 && stashes(run, r) &&
        !(w->stash = rs__aligned_alloc(
              (largest_bucket(run) ? largest_bucket(run) : 1) * elem_bytes)))
      goto nomem;
    if (W > 1 && config->ddp_layout &&
        !(w->relayout = rs__aligned_alloc(
              (largest_bucket(run) ? largest_bucket(run) : 1) * elem_bytes)))
      goto nomem;
  }
  free(edge_elems);
  free(peers);
  *out = run;
  return RS_OK;

nomem_small:
  free(edge_elems);
  free(peers);
  rs_run_free(run);
  return rs__err(errmsg, RS_ENOMEM, "out of memory");
nomem:
  free(edge_elems);
  free(peers);
  rs_run_free(run);
  return rs__err(errmsg, RS_ENOMEM,
                 "out of memory allocating %d buffers of %zu elements", W, n);
}

void rs_run_free(rs_run_t *run) {
  if (!run)
    return;
  rs__trace_detach(run);
  for (int r = 0; r < run->config.workers; r++) {
    if (run->bufs)
      free(run->bufs[r]);
    if (run->workers) {
      free(run->workers[r].events.events);
      free(run->workers[r].unpacked);
      free(run->workers[r].stash);
      free(run->workers[r].relayout);
    }
  }
  for (int i = 0; i < run->edge_count; i++) {
    rs__mpi_edge_close(&run->edges[i]);
    rs__chan_destroy(&run->edges[i].chan);
  }
  rs__mpi_close(run);
  free(run->trace_config_json);
  free(run->buckets);
  free(run->bucket_segs);
  free(run->bucket_choice);
  free(run->bucket_algo);
  free(run->bucket_predicted);
  free(run->bufs);
  free(run->edges);
  free(run->edge_start);
  free(run->links);
  free(run->workers);
  free(run->checks);
  free(run->mismatches);
  free(run->ref);
  free(run->ref_lo);
  free(run->bound);
  free(run->ref_exact);
  free(run->fixed);
  free(run->check_plan);
  RS_PTHREAD_CHECK(pthread_mutex_destroy(&run->err_mu));
  free(run);
}

const char *rs_run_errmsg(const rs_run_t *run) { return run->errmsg; }
const rs_result_t *rs_run_result(const rs_run_t *run) { return &run->result; }
const rs_config_t *rs_run_config(const rs_run_t *run) { return &run->config; }

const rs_bucket_t *rs_run_bucket(const rs_run_t *run, size_t index) {
  return index < run->result.buckets ? &run->buckets[index] : NULL;
}

rs_algorithm_t rs_run_bucket_algo(const rs_run_t *run, size_t index) {
  return index < run->result.buckets ? run->bucket_choice[index]
                                     : (rs_algorithm_t)RS_ALGO_COUNT;
}

uint64_t rs_run_bucket_predicted(const rs_run_t *run, size_t index,
                                 rs_algorithm_t algo) {
  if (!run->bucket_predicted || index >= run->result.buckets ||
      (unsigned)algo >= RS_ALGO_COUNT)
    return 0;
  return run->bucket_predicted[index * RS_ALGO_COUNT + algo];
}

const rs_netmodel_t *rs_run_auto_model(const rs_run_t *run, int *measured) {
  if (!run->bucket_predicted)
    return NULL;
  if (measured)
    *measured = run->auto_measured;
  return &run->auto_model;
}

void *rs_run_buffer(rs_run_t *run, int worker) {
  if (worker < 0 || worker >= run->config.workers)
    return NULL;
  /* The caller may change the inputs: the check cannot make them again. */
  if (!run->executed)
    run->generated = 0;
  return run->bufs[worker];
}

void rs_run_mark_filled(rs_run_t *run) {
  run->filled = 1;
  run->generated = 0;
}

const rs_worker_stats_t *rs_run_worker_stats(const rs_run_t *run, int worker) {
  if (worker < 0 || worker >= run->config.workers)
    return NULL;
  return &run->workers[worker].stats;
}

const rs_param_check_t *rs_run_param_check(const rs_run_t *run, size_t param) {
  if (param >= rs_model_param_count(run->model))
    return NULL;
  return &run->checks[param];
}

uint64_t rs_run_worker_mismatches(const rs_run_t *run, int worker) {
  if (!run->checked || !run->mismatches || worker < 0 ||
      worker >= run->config.workers)
    return 0;
  return run->mismatches[worker];
}

size_t rs_run_mismatches(const rs_run_t *run, const rs_mismatch_t **first) {
  *first = run->first_mismatches;
  return run->checked ? run->mismatches_listed : 0;
}

/* The gate holds every worker until all exist, so they start together;
 * if some could not be started, it sends the others away. (An abort, a
 * fault's or an interrupt's, does not: the workers still meet the
 * main thread between iterations, skipping their ring.) */
enum { GATE_CLOSED, GATE_GO, GATE_LEAVE };
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int open; /* GATE_* */
} gate_t;

/* Between iterations the workers meet, so an iteration can be timed and
 * checked on the same threads. Where the main thread has work between two
 * iterations (the check after the first; the time budget's cut during the
 * warm-up) each worker reports to it and waits for it to start the next:
 * one hand-off each way (an event count, evcount.h). Elsewhere the
 * workers run back to back, as MPI ranks do: the last to finish an
 * iteration records its time and starts the next itself, a barrier among
 * the workers with no hand-off to the main thread and back, which sleeps
 * meanwhile and only looks in on the count now and then (progress). The
 * workers yield a while before they sleep, where their channels do (small
 * messages); the main thread sleeps at once (it would take a core from
 * them). */
typedef struct pool {
  gate_t gate;
  int workers;
  uint64_t spin_ns;    /* how long a worker's wait yields (its channels') */
  int busy;            /* ... or spins without yielding (rs_ev_spin_t) */
  atomic_int arrived;  /* workers done with the running iteration */
  atomic_int released; /* iterations started */
  atomic_int stopped;  /* the run was aborted (a fault, a signal): set
                          before a start, after which every worker leaves */
  rs_ev_t arrived_ev;  /* the last worker signals the main thread's turn
                          and the last iteration's end */
  rs_ev_t released_ev; /* each start */
  int iterations;      /* warm-up and timed: the main thread's, read by
                          workers only after a start */
  int main_until;      /* the main thread starts iterations 1..main_until
                          (it has work before them); the workers start the
                          rest. Written by the main thread before a start,
                          read by workers after it */
  uint64_t *own_ns;    /* each worker's time for its part of the iteration
                          that just ended, from its own start (written
                          before it arrives, read after all have) */
  rs_run_t *run;
  struct timing *timing; /* the workers' iterations, recorded by the last
                            to arrive (the main thread's: by it) */
} pool_t;

typedef struct timing {
  uint64_t total_ns, min_ns;
} timing_t;

static void record_iteration(rs_run_t *run, timing_t *t, int it, uint64_t ns) {
  if (it < run->config.warmup)
    return;
  t->total_ns += ns;
  t->min_ns = ns < t->min_ns ? ns : t->min_ns;
}

/* An iteration's time, as nccl-tests and an MPI loop (MPI_Barrier, then
 * each rank times its own MPI_Allreduce; the slowest rank's time) take
 * it: each worker times its own part from when it starts, and the
 * iteration's time is the slowest worker's. The hand-offs that start the
 * workers and report their end are not in it. */
static uint64_t slowest(const pool_t *pool) {
  uint64_t ns = 0;
  for (int i = 0; i < pool->workers; i++)
    ns = pool->own_ns[i] > ns ? pool->own_ns[i] : ns;
  return ns;
}

/* A worker's wait for the start of iteration it + 1. */
typedef struct pool_wait {
  pool_t *pool;
  int it;
} pool_wait_t;

static int pool_started(void *arg) {
  pool_wait_t *w = arg;
  return atomic_load_explicit(&w->pool->released, memory_order_acquire) > w->it;
}

static void pool_release(pool_t *pool, int it) {
  /* An aborted run's workers skip their parts but would still meet at each
   * of the remaining starts (a bench size's million): the start after the
   * abort is their last, for all of them alike. */
  if (atomic_load(&pool->run->abort_flag))
    atomic_store_explicit(&pool->stopped, 1, memory_order_relaxed);
  atomic_store_explicit(&pool->arrived, 0, memory_order_relaxed);
  atomic_store_explicit(&pool->released, it + 1, memory_order_release);
  rs__ev_signal(&pool->released_ev);
}

/* A worker's iteration it is done. The last one to finish wakes the main
 * thread if it starts the next (or if this was the last: it is waiting for
 * the end), or else records the time and starts the next itself. Then wait
 * for the start of iteration it + 1. */
static void pool_next(pool_t *pool, int it, rs_ev_spin_t *spin) {
  if (atomic_fetch_add_explicit(&pool->arrived, 1, memory_order_acq_rel) + 1 ==
      pool->workers) {
    if (it < pool->main_until) {
      rs__ev_signal(&pool->arrived_ev);
    } else {
      record_iteration(pool->run, pool->timing, it, slowest(pool));
      pool_release(pool, it);
      if (it + 1 == pool->iterations ||
          atomic_load_explicit(&pool->stopped, memory_order_relaxed))
        rs__ev_signal(&pool->arrived_ev);
      return;
    }
  }
  pool_wait_t w = {pool, it};
  rs__ev_await(&pool->released_ev, pool_started, &w, RS_EV_FOREVER,
               pool->spin_ns, spin);
}

static int pool_all_arrived(void *arg) {
  pool_t *pool = arg;
  return atomic_load_explicit(&pool->arrived, memory_order_acquire) ==
         pool->workers;
}

static int pool_all_done(void *arg) {
  pool_t *pool = arg;
  return atomic_load_explicit(&pool->released, memory_order_acquire) ==
             pool->iterations ||
         atomic_load_explicit(&pool->stopped, memory_order_acquire);
}

/* The main thread: wait for every worker to finish the running iteration;
 * then (pool_release) let the next one begin. */
static void pool_wait_all(pool_t *pool) {
  rs__ev_await(&pool->arrived_ev, pool_all_arrived, pool, RS_EV_FOREVER, 0,
               NULL);
}

/* How often the main thread looks in on iterations the workers start
 * themselves, for on_iteration. */
#define POOL_LOOK_NS 100000000u

typedef struct thread_arg {
  rs_run_t *run;
  rs_worker_t *worker;
  pool_t *pool;
  int local; /* its index among this process's workers */
} thread_arg_t;

/* Worker w's bucket b laid out as DDP's reducer lays out its rebuilt
 * buckets, params last to first (to_ddp), or back in the model's order. */
static void ddp_layout(const rs_run_t *run, rs_worker_t *w,
                       const rs_bucket_t *b, int to_ddp) {
  const size_t eb = w->buf_elem_bytes;
  unsigned char *bucket = w->buf + b->elem_offset * eb, *tmp = w->relayout;
  size_t pos = 0;
  for (size_t k = b->first_param + b->params; k-- > b->first_param;) {
    const rs_param_t *p = rs_model_param(run->model, k);
    const size_t at = (p->elem_offset - b->elem_offset) * eb,
                 bytes = p->elems * eb;
    if (to_ddp)
      memcpy(tmp + pos, bucket + at, bytes);
    else
      memcpy(tmp + at, bucket + pos, bytes);
    pos += bytes;
  }
  memcpy(bucket, tmp, b->elems * eb);
}

/* One worker's part of one iteration: the algorithm, bucket by bucket in
 * the order DDP all-reduces them (the order backward fills them), then the
 * end-of-stream check on every edge. *done_ns: when the all-reduce itself
 * ended, before that check (which waits for the neighbours to end theirs:
 * MPI_Allreduce has no such wait), if it got that far. */
static int run_worker(rs_run_t *run, rs_worker_t *w, uint64_t *done_ns) {
  w->sim.clock = w->sim.link_free = w->sim.in_free =
      0; /* each iteration's time from 0 */
  if (w->workers == 1)
    return RS_OK; /* one worker: its gradient already is the mean */
  for (size_t b = 0; b < run->result.buckets; b++) {
    w->bucket = b;
    w->base = run->buckets[b].elem_offset;
    w->elems = run->buckets[b].elems;
    w->segs_per_chunk = run->bucket_segs[b];
    /* Average, DDP's way: each worker divides its own gradient first, and
     * the algorithm sums the quotients. */
    if (w->op == RS_OP_AVG && w->average_pre)
      rs__pre_average(w->dtype, w->buf + w->base * w->buf_elem_bytes, w->elems,
                      w->workers, w->average_pre);
    if (w->relayout)
      ddp_layout(run, w, &run->buckets[b], 1);
    int rc = run->bucket_algo[b]->run_bucket(w);
    if (w->relayout)
      ddp_layout(run, w, &run->buckets[b], 0);
    if (rc)
      return rc;
    rs__progress_add(run, w->elems);
  }
  *done_ns = rs__now_ns();
  return rs__xfer_finish(w);
}

static void *worker_main(void *varg) {
  thread_arg_t *arg = varg;
  rs_run_t *run = arg->run;
  rs_worker_t *w = arg->worker;
  pool_t *pool = arg->pool;
  RS_PTHREAD_CHECK(pthread_mutex_lock(&pool->gate.mu));
  while (!pool->gate.open)
    RS_PTHREAD_CHECK(pthread_cond_wait(&pool->gate.cond, &pool->gate.mu));
  int gate = pool->gate.open;
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&pool->gate.mu));
  if (gate == GATE_LEAVE)
    return NULL; /* not every thread started: no iterations to meet */
  rs_ev_spin_t spin = {0, 0, pool->busy}; /* its waits for the next one */
  for (int it = 0; it < pool->iterations; it++) {
    /* A crashed worker stays dead for the rest of the run, but keeps
     * reporting between iterations so the others are not left waiting. */
    uint64_t begin = rs__now_ns(), done_ns = 0;
    if (!atomic_load(&run->abort_flag) && w->rc != RS_WORKER_CRASHED) {
      w->iter = it;
      int rc = run_worker(run, w, &done_ns);
      w->rc = rc;
      /* An injected crash stops this worker as a dead process stops: it
       * tells nobody, and its neighbours find out by timing out. */
      if (rc != RS_OK && rc != RS_WORKER_CRASHED && rc != RS_EABORTED)
        rs__run_report_fault(run, w, rc);
    }
    pool->own_ns[arg->local] = (done_ns ? done_ns : rs__now_ns()) - begin;
    /* Before the next start the main thread may cut pool->iterations (a
     * time budget): it is read only after that start. */
    if (pool->iterations > 1)
      pool_next(pool, it, &spin);
    if (atomic_load_explicit(&pool->stopped, memory_order_acquire))
      break; /* (pool_release) */
  }
  return NULL;
}

static void open_gate(gate_t *gate, int how) {
  RS_PTHREAD_CHECK(pthread_mutex_lock(&gate->mu));
  gate->open = how;
  RS_PTHREAD_CHECK(pthread_cond_broadcast(&gate->cond));
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&gate->mu));
}

/* A time budget: end the warm-up once it has taken warmup_budget_s, and
 * after it keep as many timed iterations as fit in timed_budget_s at the
 * pace of the last warm-up iteration (it, which took last_ns). */
static void cut_to_budget(rs_run_t *run, pool_t *pool, int it, uint64_t warm_ns,
                          uint64_t last_ns) {
  rs_config_t *c = &run->config;
  if (it >= c->warmup)
    return;
  if (c->warmup_budget_s > 0 && (double)warm_ns >= c->warmup_budget_s * 1e9)
    c->warmup = it + 1;
  if (it + 1 == c->warmup && c->timed_budget_s > 0) {
    double fit = c->timed_budget_s * 1e9 / (double)(last_ns ? last_ns : 1);
    if (fit < c->iterations)
      c->iterations = fit < 1 ? 1 : (int)fit;
  }
  pool->iterations = c->warmup + c->iterations;
}

/* The iterations after which the main thread has work (the check after
 * the first; the time budget's cut after each warm-up iteration): it
 * starts the next of these itself. */
static int main_until(const rs_config_t *c) {
  int budget = c->warmup_budget_s > 0 || c->timed_budget_s > 0;
  return budget && c->warmup > 1 ? c->warmup : 1;
}

static void report_iterations(rs_run_t *run, int done) {
  if (run->config.on_iteration)
    run->config.on_iteration(run->config.on_iteration_arg, done,
                             run->config.warmup, run->config.iterations);
}

/* Check the result of the first iteration (an all-reduce that completed). */
static void check_first(rs_run_t *run) {
  int ok = rs__run_take_interrupt(run) == RS_OK &&
           run->config.collective == RS_COLL_ALLREDUCE;
  if (run->mpi) /* the check is collective: every process, or none */
    ok = rs__mpi_all(run, ok);
  if (ok) {
    apply_flips(run);
    rs__check_result(run);
  }
}

/* Run the ring on W threads, warmup + iterations times; check after the
 * first; returns the run's status. */
static int run_threads(rs_run_t *run) {
  const int W = run->config.workers;
  /* this process's workers: all W, or its block over MPI */
  const int first = run->first_local, L = run->local_end - first;
  pthread_t *threads = calloc((size_t)L, sizeof *threads);
  thread_arg_t *args = calloc((size_t)L, sizeof *args);
  timing_t timing = {.min_ns = UINT64_MAX};
  pool_t pool = {.iterations = run->config.warmup + run->config.iterations,
                 .workers = L,
                 .main_until = main_until(&run->config),
                 .run = run,
                 .timing = &timing,
                 .own_ns = calloc((size_t)L, sizeof(uint64_t)),
                 .spin_ns = rs__chan_spin_for(run->result.seg_elems *
                                              run->buf_elem_bytes)};
  if (!threads || !args || !pool.own_ns) {
    free(threads);
    free(args);
    free(pool.own_ns);
    return rs__run_fail(run, RS_ENOMEM, "out of memory for %d threads", W);
  }
  /* Spin only while the cores are ours (evcount.h); and where each worker
   * has a core of its own, without yielding it (the main thread sleeps). */
  if (!rs__ev_cores_idle()) {
    pool.spin_ns = 0;
    for (int i = 0; i < run->edge_count; i++)
      run->edges[i].chan.spin_ns = 0;
  } else if (L <= rs__cores() && !run->mpi) {
    pool.busy = 1;
    for (int i = 0; i < run->edge_count; i++)
      run->edges[i].chan.send_spin.busy = run->edges[i].chan.recv_spin.busy = 1;
  }
  RS_PTHREAD_CHECK(pthread_mutex_init(&pool.gate.mu, NULL));
  RS_PTHREAD_CHECK(pthread_cond_init(&pool.gate.cond, NULL));
  atomic_init(&pool.arrived, 0);
  atomic_init(&pool.released, 0);
  atomic_init(&pool.stopped, 0);
  rs__ev_init(&pool.arrived_ev);
  rs__ev_init(&pool.released_ev);
  pthread_attr_t attr;
  RS_PTHREAD_CHECK(pthread_attr_init(&attr));
  RS_PTHREAD_CHECK(pthread_attr_setstacksize(&attr, 1u << 20));

  int started = 0;
  for (; started < L; started++) {
    args[started] =
        (thread_arg_t){run, &run->workers[first + started], &pool, started};
    int err =
        pthread_create(&threads[started], &attr, worker_main, &args[started]);
    if (err) {
      rs__run_fail(run, RS_ESYS, "cannot start worker thread %d of %d: %s",
                   first + started, W, strerror(err));
      rs__run_abort(run);
      break;
    }
  }
  rs__progress_begin(run, RS_STAGE_ALLREDUCE,
                     run->elems * (size_t)L * (size_t)pool.iterations);
  run->t0_ns = rs__now_ns();
  /* (over MPI, with its tracer: when tracing, the workers' rings need it) */
  int go = started == L;
  if (run->mpi && go && rs__mpi_trace_start(run) != RS_OK) {
    rs__run_abort(run);
    go = 0;
  }
  open_gate(&pool.gate, go ? GATE_GO : GATE_LEAVE);
  if (go && pool.iterations > 1) {
    uint64_t warm_ns = 0;
    int it = 0;
    for (; it < pool.main_until && it < pool.iterations; it++) {
      pool_wait_all(&pool);
      uint64_t ns = slowest(&pool);
      record_iteration(run, &timing, it, ns);
      /* The workers wait at the next start while the first result is
       * checked and the budget (if any) cuts the count. */
      if (it == 0)
        check_first(run);
      warm_ns += ns;
      cut_to_budget(run, &pool, it, warm_ns, ns);
      pool.main_until = main_until(&run->config);
      report_iterations(run, it + 1);
      pool_release(&pool, it); /* the last one lets them leave */
      if (atomic_load(&pool.stopped))
        break;
    }
    /* The workers start the rest themselves; look in now and then. */
    while (it < pool.iterations) {
      int done = rs__ev_await(&pool.arrived_ev, pool_all_done, &pool,
                              rs__now_ns() + POOL_LOOK_NS, 0, NULL);
      report_iterations(
          run, atomic_load_explicit(&pool.released, memory_order_acquire));
      if (done)
        break;
    }
  }
  for (int r = 0; r < started; r++)
    RS_PTHREAD_CHECK(pthread_join(threads[r], NULL));
  uint64_t end_ns = rs__now_ns();
  if (run->mpi) /* every worker's state and records, to rank 0 */
    rs__mpi_finish(run);
  rs__run_take_interrupt(run);
  rs__run_name_culprit(run);
  rs__run_name_crashes(run);
  if (pool.iterations == 1 || !go) {
    record_iteration(run, &timing, run->config.warmup,
                     go ? slowest(&pool) : end_ns - run->t0_ns);
    if (go || run->mpi)
      check_first(run);
  }
  run->result.warmup = run->config.warmup;
  run->result.iterations = run->config.iterations;
  run->result.wall_ns = timing.total_ns / (uint64_t)run->config.iterations;
  run->result.wall_min_ns = timing.min_ns;
  if (run->config.net.enabled && run->result.status == RS_OK) {
    for (int r = 0; r < W; r++)
      if (run->workers[r].sim.clock > run->result.sim_ns)
        run->result.sim_ns = run->workers[r].sim.clock;
    for (size_t b = 0; b < run->result.buckets; b++)
      run->result.predicted_ns += run->bucket_algo[b]->predict(
          &run->config.net, W, run->buckets[b].elems, run->bucket_segs[b],
          seg_cap(run), run->elem_size);
  }

  RS_PTHREAD_CHECK(pthread_attr_destroy(&attr));
  RS_PTHREAD_CHECK(pthread_cond_destroy(&pool.gate.cond));
  RS_PTHREAD_CHECK(pthread_mutex_destroy(&pool.gate.mu));
  free(threads);
  free(args);
  free(pool.own_ns);
  return run->result.status;
}

void rs_run_interrupt(rs_run_t *run, const char *signal_name) {
  /* Atomics and the channels' own locks only: the run's status and error
   * belong to the thread that runs it (rs__run_take_interrupt). */
  const char *none = NULL;
  atomic_compare_exchange_strong(&run->interrupted_by, &none, signal_name);
  rs__run_abort(run);
}

int rs_run_set_trace(rs_run_t *run, rs_trace_t *trace,
                     const char *config_json) {
  free(run->trace_config_json);
  run->trace_config_json = NULL;
  if (config_json && !(run->trace_config_json = strdup(config_json)))
    return rs__run_fail(run, RS_ENOMEM, "out of memory");
  run->trace = trace;
  return RS_OK;
}

int64_t rs_run_trace_id(const rs_run_t *run) { return run->trace_run_id; }

const char *rs_run_trace_error(const rs_run_t *run) {
  return run->trace_failed ? run->trace_errmsg : NULL;
}

/* Size every worker's event buffer for all the transfers it will receive,
 * so recording never allocates; over MPI, each of this process's workers
 * a ring of at most a trace batch, which the tracer drains (mpi.c). */
static int alloc_events(rs_run_t *run) {
  const int W = run->config.workers;
  for (int r = 0; r < W; r++) {
    size_t per_worker = events_of(run, r);
    if (!per_worker || !rs__run_local(run, r))
      continue;
    rs_event_buf_t *buf = &run->workers[r].events;
    if (run->mpi) {
      size_t batch = rs__mpi_trace_batch(run);
      buf->ring = 1;
      atomic_init(&buf->written, 0);
      atomic_init(&buf->taken, 0);
      per_worker = per_worker < batch ? per_worker : batch;
    }
    buf->events = malloc(per_worker * sizeof *buf->events);
    if (!buf->events)
      return rs__run_fail(run, RS_ENOMEM,
                          "out of memory for %zu trace records per worker",
                          per_worker);
    buf->capacity = per_worker;
  }
  return RS_OK;
}

int rs_run_fail_after(rs_run_t *run, int code, const char *error) {
  if (run->result.status != RS_OK && run->result.status != RS_ECHECK)
    return run->result.status; /* it had failed already */
  run->result.status = code;
  snprintf(run->errmsg, sizeof run->errmsg, "%s", error);
  rs_one_line(run->errmsg);
  if (run->trace && run->trace_run_id && !run->trace_failed &&
      rs__trace_mark(run, code == RS_EINTERRUPTED ? "interrupted" : "failed",
                     run->errmsg) != 0) {
    run->trace_failed = 1;
    snprintf(run->trace_errmsg, sizeof run->trace_errmsg,
             "trace %s: cannot mark run %lld %s; it stays marked ok",
             rs_trace_path(run->trace), (long long)run->trace_run_id,
             code == RS_EINTERRUPTED ? "interrupted" : "failed");
  }
  return code;
}

int rs_run_execute(rs_run_t *run) {
  if (run->executed)
    return rs__err(run->errmsg, RS_EINVAL, "a run executes only once");
  run->executed = 1;
  if (!run->filled)
    return rs__run_fail(run, RS_EINVAL, "the workers' buffers were not filled");
  /* (over MPI, every process's inputs made alike first: the check's
   * reference is collective for some and not for others) */
  int rc = run->mpi ? rs__mpi_inputs(run) : RS_OK;
  if (rc == RS_OK)
    rc = rs__check_prepare(run);
  if (rc == RS_OK && run->trace) {
    uint64_t t0 = rs__now_ns();
    rc = alloc_events(run);
    if (rc == RS_OK && (rs__trace_begin(run) != RS_OK ||
                        (run->mpi && rs__trace_stream_open(run) != RS_OK))) {
      run->trace_failed = 1;
      if (atomic_load(&run->interrupted_by)) /* it stopped the wait */
        rc = rs__run_take_interrupt(run);
      else
        rc = rs__run_fail(run, RS_ETRACE, "%s", run->trace_errmsg);
    }
    run->result.trace_ns += rs__now_ns() - t0;
  }
  if (rc == RS_OK && !run->trace && run->mpi && run->config.traced)
    rc = alloc_events(run); /* for rank 0's trace */
  /* Over MPI every process starts the workers, or none does. */
  if (run->mpi && !rs__mpi_all(run, rc == RS_OK) && rc == RS_OK)
    rc = rs__run_fail(run, RS_EABORTED,
                      "another MPI process could not start the run");
  if (rc == RS_OK && run->mpi)
    rc = rs__mpi_start(run);
  if (rc) {
    if (run->trace && run->mpi)
      rs__trace_stream_abandon(run); /* (if it was opened) */
    return rc;
  }
  rc = run_threads(run);
  for (int r = 0; r < run->config.workers; r++)
    run->result.transfers += run->workers[r].stats.transfers_sent;
  /* The trace keeps failed runs too: every transfer up to the fault. */
  if (run->trace) {
    uint64_t t0 = rs__now_ns();
    rs__progress_begin(run, RS_STAGE_TRACE, 0);
    if (rs__trace_finish(run) != RS_OK) {
      run->trace_failed = 1;
      /* A run whose trace was lost has failed: the report says so, as the
       * trace's row does (rs__trace_finish marked it, if it could). */
      if (run->result.status == RS_OK || run->result.status == RS_ECHECK) {
        run->result.status = RS_ETRACE;
        snprintf(run->errmsg, sizeof run->errmsg, "%s", run->trace_errmsg);
      }
    }
    run->result.trace_ns += rs__now_ns() - t0;
  }
  rs__progress_begin(run, RS_STAGE_IDLE, 0);
  return run->result.status;
}
