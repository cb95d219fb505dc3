/* run.c - one run: its creation, its execution and its end.
 *
 * The run owns everything it uses (no global state), so two runs in one
 * process do not interfere. rs_run_create checks the config, lays the
 * model out in buckets, chooses each bucket's algorithm, lists and opens
 * the edges those use and gives every worker its state, refusing a run
 * that cannot fit in memory before allocating any of it. rs_run_execute
 * prepares the check and the trace, runs the worker threads (pool.c) and
 * writes the trace. The first fault (a timeout, a bad message) sets the
 * run's error and the abort flag, and wakes every queue, so no worker
 * is left waiting.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/channels.h"
#include "algo/list.h"
#include "base/dtype.h"
#include "base/util.h"
#include "check/check.h"
#include "io/trace.h"
#include "run/run.h"

/* What rs_run_create lays the run out by, from step to step. */
typedef struct sizing {
  int *peers;         /* scratch: room for W peers */
  size_t *edge_elems; /* per edge: its largest message, in elements */
  size_t min_segs;    /* the fewest segments per chunk of any bucket */
  size_t seg_elems;   /* the largest message of any edge, in elements */
  int packed;         /* f16 and bf16 packed into 2 bytes on the wire */
  size_t wire_bytes;  /* one element's bytes on the wire */
  int slots;          /* per queue */
} sizing_t;

/* A run of config on model, its dtype known, nothing laid out yet; NULL
 * when out of memory. One process hosts every worker; over MPI (opened
 * later), its block of them. */
static rs_run_t *run_new(const rs_config_t *config, const rs_model_t *model) {
  rs_run_t *run = calloc(1, sizeof *run);
  if (!run)
    return NULL;
  run->config = *config;
  if (config->test)
    run->test = *config->test;
  run->config.test = &run->test;
  /* the pipelined links' slots are the queues' (--slots, NCCL_STEPS) */
  if (run->config.net.slots <= 0)
    run->config.net.slots = config->slots;
  /* the channels: the user's, or the algorithm's own (NCCL's count for
   * the ring on a topology NCCL's model knows; under auto the ring's, for
   * the buckets it runs: the others take no channels) */
  run->channels_given = config->net.channels;
  if (run->config.net.channels < 1)
    run->config.net.channels =
        rs__algo_channels(&run->config.net, config->algo, config->workers);
  run->shape = rs__shape_of(&run->config.net, run->config.workers);
  run->model = model;
  run->algo = rs__algo_get(config->algo); /* NULL for auto */
  run->elems = rs_model_elems(model);
  run->in_dtype = rs_model_dtype(model);
  run->dtype = rs_hook_dtype(config->hook, run->in_dtype);
  /* A compressing hook casts (a no-op on a model of its dtype) and
   * divides in its dtype, counting what each loses. */
  run->hook_cast = config->hook == RS_HOOK_FP16 || config->hook == RS_HOOK_BF16;
  /* A hook averages by dividing each worker's bucket first. */
  if (config->hook != RS_HOOK_NONE)
    run->config.average = RS_AVERAGE_PRE;
  run->elem_size = rs_dtype_size(run->dtype);
  run->buf_elem_bytes = rs_dtype_buffer_size(run->dtype);
  atomic_init(&run->abort_flag, 0);
  atomic_init(&run->interrupted_by, NULL);
  atomic_init(&run->phase, RS_STAGE_IDLE);
  atomic_init(&run->phase_done, 0);
  atomic_init(&run->phase_total, 0);
  run->fault_worker = -1;
  RS_PTHREAD_CHECK(pthread_mutex_init(&run->err_mu, NULL));
  /* the one place that asks where the workers live */
  run->job = config->mpi ? &rs__job_mpi : &rs__job_one;
  run->procs = 1;
  run->local_end = config->workers;
  return run;
}

/* NCCL's channels' rings, for the ring on several (algo/channels.h):
 * the run's shape carries them to every worker and schedule. */
static int make_rings(rs_run_t *run) {
  if (rs__shape_channels(run->shape) == 1)
    return RS_OK;
  if (!(run->rings = malloc(sizeof *run->rings)) ||
      rs__rings_make(run->rings, &run->config.net, run->config.workers,
                     run->elem_size)) {
    free(run->rings);
    run->rings = NULL;
    return RS_ENOMEM;
  }
  run->shape.rings = run->rings;
  return RS_OK;
}

/* Buckets, then segments: each chunk of a bucket (at most ceil(elems/W)
 * elements) moves as the same number of near-equal segments of at most
 * segment_bytes. */
static int make_buckets(rs_run_t *run, sizing_t *s) {
  const rs_config_t *c = &run->config;
  if (rs_model_buckets(run->model, c->first_bucket_bytes, c->bucket_bytes,
                       &run->buckets, &run->result.buckets) ||
      !(run->bucket_segs =
            calloc(run->result.buckets, sizeof *run->bucket_segs)))
    return RS_ENOMEM;
  s->min_segs = SIZE_MAX;
  for (size_t b = 0; b < run->result.buckets; b++) {
    run->bucket_segs[b] = rs_segs_per_chunk(run->buckets[b].elems, c->workers,
                                            c->segment_bytes, run->elem_size);
    s->min_segs =
        run->bucket_segs[b] < s->min_segs ? run->bucket_segs[b] : s->min_segs;
  }
  return RS_OK;
}

/* The queues, once the edges are listed: the largest message, what an
 * element takes on the wire, and the slots per queue. */
static void size_queues(const rs_run_t *run, sizing_t *s) {
  const rs_config_t *c = &run->config;
  const int W = c->workers;
  s->seg_elems = 0;
  for (int i = 0; i < run->edge_count; i++)
    s->seg_elems =
        s->edge_elems[i] > s->seg_elems ? s->edge_elems[i] : s->seg_elems;
  /* The copy transport carries the dtype's size: f16 and bf16 are packed
   * into 2 bytes (queue.h); the direct one carries no payload. */
  s->packed =
      !c->direct && (run->dtype == RS_DTYPE_F16 || run->dtype == RS_DTYPE_BF16);
  s->wire_bytes = s->packed ? rs_dtype_size(run->dtype) : run->buf_elem_bytes;
  s->slots = c->slots;
  /* With direct queues, the fewest slots any algorithm of the run needs
   * to be safe (check_config refused, or auto left out, the unsafe). */
  size_t safe = (size_t)s->slots;
  for (int a = 0; a < RS_ALGO_COUNT && W > 1; a++) {
    if (!(run->algos_used & (1u << a)))
      continue;
    size_t k = rs__algo_get((rs_algorithm_t)a)
                   ->direct_slots(run->shape, s->min_segs, c->slices);
    safe = k < safe ? k : safe;
  }
  if (c->direct && (size_t)s->slots > safe)
    s->slots = (int)safe;
}

/* One iteration's simulated time (each starts its clocks at 0), played
 * on the schedule alone: the buckets of one algorithm together, as the
 * run plays them, and a run of buckets of another after them (an upper
 * bound: each run starts at once there, in the run at the latest clock).
 * Stops once past limit, and returns something above it then. */
static uint64_t iteration_ns(const rs_run_t *run, uint64_t limit) {
  const rs_config_t *c = &run->config;
  uint64_t total = 0;
  size_t first = 0;
  for (size_t b = 1; b <= run->result.buckets && total <= limit; b++) {
    if (b < run->result.buckets && run->bucket_algo[b] == run->bucket_algo[first])
      continue;
    const rs_sim_job_t job = {run->bucket_algo[first], &c->net,
                              c->workers,              run->buckets + first,
                              b - first,               c->segment_bytes,
                              run->elem_size};
    uint64_t t = rs__algo_simulate_bounded(&job, limit - total);
    total = rs__sat_add(total, t);
    first = b;
  }
  return total;
}

/* Refuse a run whose simulated time could pass what a report, --json and
 * the trace hold (RS_SIM_NS_MAX): links so slow, or latencies so long,
 * that its clocks could run past 292 years. Each iteration starts its
 * clocks at 0, so one iteration is what must fit. First a bound that
 * costs nothing (netmodel.h's: each message of one iteration at the
 * slowest rate and the longest latency, none larger than a segment);
 * where that passes the limit, the iteration's schedule played on its
 * clocks alone, as `ringsim model` plays it, which is the run's time to
 * the nanosecond. */
static int check_sim_time(const rs_run_t *run, char *errmsg) {
  const rs_config_t *c = &run->config;
  if (!c->net.enabled || c->workers < 2)
    return RS_OK;
  const double iterations = (double)(c->warmup + c->iterations);
  const size_t largest = rs__run_largest_bucket(run),
               seg = rs__run_seg_cap(run);
  const double bound = rs__sim_bound_ns(
      &c->net, rs__run_events_total(run) / iterations,
      (double)(seg < largest ? seg : largest) * (double)run->elem_size,
      (double)run->result.steps * (double)run->result.buckets *
          (double)c->workers);
  /* (>=: (double)RS_SIM_NS_MAX rounds up to 2^63 itself, and a bound of
   * exactly 2^63 must be played out) */
  if (!(bound >= (double)RS_SIM_NS_MAX))
    return RS_OK;
  if (iteration_ns(run, RS_SIM_NS_MAX) <= RS_SIM_NS_MAX)
    return RS_OK;
  return rs__err(errmsg, RS_EINVAL,
                 "%s: its links are so slow, or its latencies so long, for "
                 "this run that the simulated time passes 2^63 ns (292 "
                 "years), more than the report and the trace hold: give "
                 "faster links or a smaller run",
                 c->net.topo.enabled ? "--topo" : "--net");
}

/* Refuse a run that cannot fit in memory before allocating any of it. */
static int check_memory(const rs_run_t *run, const sizing_t *s, char *errmsg) {
  const rs_config_t *config = &run->config;
  const int W = config->workers, local = run->local_end - run->first_local;
  const size_t n = run->elems, elem_bytes = run->buf_elem_bytes;
  double events =
      config->traced ? rs__run_events_total(run) * sizeof(rs_event_t) : 0;
  /* streamed during the run: a ring per worker, and a batch */
  if (config->traced && run->job->streams_trace)
    events = (double)(local + 1) * (double)run->job->trace_batch(run) *
             sizeof(rs_event_t);
  double edges = 0;
  for (int i = 0; i < run->edge_count; i++) {
    size_t payload = config->direct ? 0 : s->edge_elems[i] * s->wire_bytes;
    edges += (double)s->slots * (double)(sizeof(rs_msg_t) + payload + 64);
  }
  /* and each worker's room to unpack a message (f16, bf16 on the copy
   * transport), and a root's stash of its own bucket (linear) */
  const double bucket = (double)rs__run_largest_bucket(run) * elem_bytes;
  double scratch = 0;
  for (int r = 0; r < W && W > 1; r++)
    scratch += (s->packed ? (double)s->seg_elems * sizeof(float) : 0) +
               (rs__run_stashes(run, r) ? bucket : 0) +
               (config->ddp_layout ? bucket : 0);
  /* (The check keeps no reference for generated inputs; for others it
   * asks for its own, rs__check_prepare.) */
  double need = (double)(local + run->switches) * (double)n * elem_bytes +
                edges + scratch + events;
  double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  if (!(have > 0 && need > 0.9 * have))
    return RS_OK;
  char records[96] = "";
  if (events > 0)
    snprintf(records, sizeof records,
             "; %.1f GiB of it trace records, %zu B per transfer",
             events / (1 << 30), sizeof(rs_event_t));
  if (run->procs > 1)
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

/* What the report says of the layout: the segments per chunk as each
 * bucket's algorithm cuts its chunks, the largest message, the slots. */
static void report_layout(rs_run_t *run, const sizing_t *s) {
  run->result.segs_per_chunk = 0;
  for (size_t b = 0; b < run->result.buckets; b++) {
    const rs_algo_t *a = run->bucket_algo[b];
    run->result.segs_per_chunk +=
        rs__algo_chunk_segs(a, run->shape, run->buckets[b].elems,
                            run->bucket_segs[b], rs__run_seg_cap(run));
  }
  run->result.seg_elems = s->seg_elems;
  run->result.slots = s->slots;
}

/* This process's workers' buffers, and room for every worker's state and
 * every param's check. */
static int alloc_buffers(rs_run_t *run) {
  const size_t P = (size_t)rs__run_participants(run); /* (and switches) */
  run->bufs = calloc(P, sizeof *run->bufs);
  run->workers = rs__aligned_alloc(P * sizeof *run->workers);
  if (run->workers) /* (before anything can fail: rs_run_free reads it) */
    memset(run->workers, 0, P * sizeof *run->workers);
  run->checks = calloc(rs_model_param_count(run->model), sizeof *run->checks);
  if (!run->bufs || !run->workers || !run->checks)
    return RS_ENOMEM;
  for (int r = 0; r < (int)P; r++)
    if (rs__run_local(run, r) &&
        !(run->bufs[r] = rs__aligned_alloc(run->elems * run->buf_elem_bytes)))
      return RS_ENOMEM;
  return RS_OK;
}

/* Open every edge: a queue between two of this process's workers, the
 * job's transport (MPI's) where it leaves or enters this process. */
static int open_edges(rs_run_t *run, const sizing_t *s) {
  const rs_config_t *config = &run->config;
  for (int i = 0; i < run->edge_count; i++) {
    rs_edge_t *e = &run->edges[i];
    size_t payload = config->direct ? 0 : s->edge_elems[i] * s->wire_bytes;
    e->tp = config->direct ? &rs__transport_direct : &rs__transport_copy;
    int from_here = rs__run_local(run, e->from);
    int to_here = rs__run_local(run, e->to);
    if (!from_here || !to_here) { /* between processes: the job's */
      if (run->job->edge_open(run, e, s->edge_elems[i] * s->wire_bytes,
                              s->slots))
        return RS_ENOMEM;
    } else if (rs__queue_init(&e->queue, s->slots, payload, &run->abort_flag)) {
      return RS_ENOMEM;
    }
    e->queue.elem_bytes = s->wire_bytes;
    e->queue.spin_ns =
        rs__queue_spin_for(s->edge_elems[i] * run->buf_elem_bytes);
    if (s->packed)
      e->queue.pack = run->dtype == RS_DTYPE_F16 ? rs__pack_f16 : rs__pack_bf16;
    /* Faults are caught by sequence numbers and, here, checksums. */
    e->queue.checksum = config->checksum || config->fault_count > 0;
  }
  return RS_OK;
}

/* The most segments a streaming bucket cuts a chunk into (its
 * algorithm's cut): each worker's room for their ready times
 * (netmodel.h); 0 when no bucket streams. */
static size_t stream_segs(const rs_run_t *run) {
  size_t most = 0;
  for (size_t b = 0; b < run->result.buckets; b++) {
    const rs_algo_t *a = run->bucket_algo[b];
    if (!(a->caps & RS__CAP_STREAM))
      continue;
    const size_t segs =
        rs__algo_chunk_segs(a, run->shape, run->buckets[b].elems,
                            run->bucket_segs[b], rs__run_seg_cap(run));
    most = segs > most ? segs : most;
  }
  return most;
}

/* Does a bucket run on NCCL's channels (more than one, RS__CAP_CHANNELS)
 * without streaming? Its workers' clocks then need their channels' words
 * (netmodel.h). */
static int channels_clocked(const rs_run_t *run) {
  if (rs__shape_channels(run->shape) < 2)
    return 0;
  for (size_t b = 0; b < run->result.buckets; b++)
    if ((run->bucket_algo[b]->caps & RS__CAP_CHANNELS) &&
        !(run->bucket_algo[b]->caps & RS__CAP_STREAM))
      return 1;
  return 0;
}

/* Switch r's state (a participant, not a worker: runstate.h): its node's
 * GPUs, its buffer, the options its sums need; no clock of its own (it
 * stamps what it sends with the routes' times: xfer.h), no faults. */
/* What a worker and a switch both hold: participant r of `workers` (its
 * node's GPUs for a switch), its buffer, the options its sums need, and
 * with packed messages (unpack) a segment to unpack one into. */
static int init_participant(rs_run_t *run, const sizing_t *s, rs_worker_t *w,
                            int r, int workers, int unpack) {
  const rs_config_t *config = &run->config;
  w->rc = RS_WORKER_NOT_STARTED;
  w->rank = r;
  w->workers = workers;
  w->shape = run->shape;
  w->buf = run->bufs[r];
  w->buf_elem_bytes = run->buf_elem_bytes;
  w->progress.peer = -1;
  if (unpack) {
    w->unpack = run->dtype == RS_DTYPE_F16 ? rs__unpack_f16 : rs__unpack_bf16;
    w->unpacked = rs__aligned_alloc((s->seg_elems ? s->seg_elems : 1) *
                                    sizeof *w->unpacked);
    if (!w->unpacked)
      return RS_ENOMEM;
  }
  w->op = config->op;
  w->dtype = run->dtype;
  w->elem_size = run->elem_size;
  w->average = config->average;
  w->collective = config->collective;
  w->timeout_ns = (uint64_t)(config->timeout_s * 1e9);
  return RS_OK;
}

static int init_switch(rs_run_t *run, const sizing_t *s, rs_worker_t *w,
                       int r) {
  const rs_config_t *config = &run->config;
  if (init_participant(run, s, w, r, run->shape.gpus, s->packed))
    return RS_ENOMEM;
  rs__sim_init(&w->sim, NULL, config->workers, r);
  w->seg_cap = rs__run_seg_cap(run);
  w->held = calloc((size_t)run->shape.gpus, sizeof *w->held);
  return w->held ? RS_OK : RS_ENOMEM;
}

/* Every worker's own state: its rank, buffer and options, its simulated
 * clock, and its scratch (to unpack a message, a root's stash, DDP's
 * layout, the slot rule's arrivals). */
static int init_workers(rs_run_t *run, const sizing_t *s) {
  const rs_config_t *config = &run->config;
  const int W = config->workers;
  const size_t elem_bytes = run->buf_elem_bytes;
  const size_t largest = rs__run_largest_bucket(run);
  /* a streaming bucket's clocks: a ready time per segment, and the
   * arrivals of the last slots messages of 2(W-1) steps' */
  const size_t seg_cap = config->net.enabled ? stream_segs(run) : 0;
  const size_t slot_cap =
      seg_cap ? rs__sim_slot_cap(&config->net, 2 * (size_t)W * seg_cap) : 0;
  /* a schedule on channels that does not stream (the tree): its
   * channels' clocks alone */
  const int channel_clocks = config->net.enabled && channels_clocked(run);
  for (int r = 0; r < W; r++) {
    rs_worker_t *w = &run->workers[r];
    if (init_participant(run, s, w, r, W, s->packed && W > 1))
      return RS_ENOMEM;
    w->hook_cast = run->hook_cast;
    w->slices = config->slices;
    w->faults = config->faults;
    w->fault_count = config->fault_count;
    rs__sim_init(&w->sim, &config->net, W, r);
    if ((seg_cap || channel_clocks) && !(w->stream_mem = malloc(
                         rs__sim_stream_words(w->sim.channels, seg_cap,
                                              slot_cap) *
                         sizeof *w->stream_mem)))
      return RS_ENOMEM;
    w->ready_cap = seg_cap;
    w->slot_cap = slot_cap;
    w->seg_cap = rs__run_seg_cap(run);
    if (W > 1 && rs__run_stashes(run, r) &&
        !(w->stash = rs__aligned_alloc((largest ? largest : 1) * elem_bytes)))
      return RS_ENOMEM;
    if (W > 1 && config->ddp_layout &&
        !(w->relayout =
              rs__aligned_alloc((largest ? largest : 1) * elem_bytes)))
      return RS_ENOMEM;
  }
  for (int r = W; r < rs__run_participants(run); r++)
    if (init_switch(run, s, &run->workers[r], r))
      return RS_ENOMEM;
  return RS_OK;
}

/* With a topology of several nodes: the NICs' load under the schedule of
 * every algorithm the buckets run (net/topo.h), each once; on channels,
 * also under each count of busy channels a small bucket has (an idle
 * channel loads no NIC). */
static int load_topology(rs_run_t *run) {
  const rs_config_t *c = &run->config;
  const rs_topo_t *t = &c->net.topo;
  const int C = rs__shape_channels(run->shape);
  if (!c->net.enabled || !t->enabled || t->nodes < 2 || c->workers < 2)
    return RS_OK;
  for (int a = 0; a < RS_ALGO_COUNT; a++) {
    if (!(run->algos_used & (1u << a)))
      continue;
    const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
    if (rs__topo_load_shape(&run->topo_load[a], t, run->shape,
                            algo->steps(run->shape, c->collective),
                            algo->sends))
      return RS_ENOMEM;
  }
  for (size_t b = 0; b < run->result.buckets; b++) {
    const int busy = rs__run_bucket_busy(run, b);
    if (busy >= C || (run->busy_load && run->busy_load[busy].pattern))
      continue;
    if (!run->busy_load &&
        !(run->busy_load = calloc((size_t)C, sizeof *run->busy_load)))
      return RS_ENOMEM;
    rs_shape_t shape = run->shape;
    shape.channels = busy;
    const rs_algo_t *algo = run->bucket_algo[b];
    if (rs__topo_load_shape(&run->busy_load[busy], t, shape,
                            algo->steps(shape, c->collective), algo->sends))
      return RS_ENOMEM;
  }
  return RS_OK;
}

/* rs_run_create, or with out NULL rs_run_check: every check, then (only
 * for a run) the buffers, queues and workers. */
static int create(const rs_config_t *config, const rs_model_t *model,
                  rs_run_t **out, char *errmsg) {
  if (out)
    *out = NULL;
  int rc = rs__run_check_config(config, errmsg);
  if (rc)
    return rc;
  rs_run_t *run = run_new(config, model);
  /* (peers: room for W, or for the channels' each: algo.h) */
  const int room = config->workers > RS__MAX_CHANNEL_PEERS
                       ? config->workers
                       : RS__MAX_CHANNEL_PEERS;
  sizing_t s = {.peers = malloc((size_t)room * sizeof *s.peers)};
  if (!run || !s.peers)
    rc = rs__err(errmsg, RS_ENOMEM, "out of memory");
  else if (config->hook == RS_HOOK_POWERSGD)
    rc = rs__err(errmsg, RS_EINVAL,
                 "hook: powersgd all-reduces three times a bucket, each a run "
                 "of its own: the ringsim command's --hook powersgd "
                 "(rs_powersgd_execute), not one run");
  else if (config->hook != RS_HOOK_NONE && config->mpi)
    rc = rs__err(errmsg, RS_EINVAL, "hook: %s runs on threads, not over MPI",
                 rs_hook_name(config->hook));
  else if (run->hook_cast && run->in_dtype == RS_DTYPE_F64)
    rc = rs__err(errmsg, RS_EINVAL,
                 "hook: %s casts a float32 (or half-precision) bucket to %s; "
                 "model \"%.100s\" is f64",
                 rs_hook_name(config->hook), rs_dtype_name(run->dtype),
                 rs_model_name(model));
  if (rc == RS_OK)
    rc = rs__run_parse_flips(run, errmsg);
  if (rc == RS_OK)
    rc = run->job->open(run, errmsg);
  if (rc == RS_OK && make_rings(run))
    rc = rs__err(errmsg, RS_ENOMEM, "out of memory");
  if (rc == RS_OK && make_buckets(run, &s))
    rc = rs__err(errmsg, RS_ENOMEM, "out of memory");
  if (rc == RS_OK)
    rc = rs__run_choose_algos(run, errmsg);
  if (rc == RS_OK && load_topology(run))
    rc = rs__err(errmsg, RS_ENOMEM, "out of memory");
  if (rc == RS_OK && rs__run_list_edges(run, s.peers, &s.edge_elems))
    rc = rs__err(errmsg, RS_ENOMEM, "out of memory");
  if (rc == RS_OK) {
    size_queues(run, &s);
    rc = check_memory(run, &s, errmsg);
  }
  if (rc == RS_OK)
    rc = check_sim_time(run, errmsg);
  if (rc == RS_OK && out) {
    report_layout(run, &s);
    if (alloc_buffers(run) || open_edges(run, &s) ||
        rs__run_link_workers(run, s.peers) || init_workers(run, &s))
      rc = rs__err(errmsg, RS_ENOMEM,
                   "out of memory allocating %d buffers of %zu elements",
                   config->workers, run->elems);
  }
  free(s.edge_elems);
  free(s.peers);
  if (rc || !out) {
    rs_run_free(run);
    return rc;
  }
  *out = run;
  return RS_OK;
}

int rs_run_create(const rs_config_t *config, const rs_model_t *model,
                  rs_run_t **out, char *errmsg) {
  return create(config, model, out, errmsg);
}

int rs_run_check(const rs_config_t *config, const rs_model_t *model,
                 char *errmsg) {
  return create(config, model, NULL, errmsg);
}

void rs_run_free(rs_run_t *run) {
  if (!run)
    return;
  rs__trace_detach(run);
  if (run->rings)
    rs__rings_free(run->rings);
  free(run->rings);
  for (int r = 0; r < rs__run_participants(run); r++) {
    if (run->bufs)
      free(run->bufs[r]);
    if (run->workers) {
      free(run->workers[r].held);
      free(run->workers[r].events.events);
      free(run->workers[r].unpacked);
      free(run->workers[r].stash);
      free(run->workers[r].relayout);
      free(run->workers[r].stream_mem);
    }
  }
  for (int i = 0; i < run->edge_count; i++) {
    run->job->edge_close(run, &run->edges[i]);
    rs__queue_destroy(&run->edges[i].queue);
  }
  run->job->close(run);
  free(run->trace_config_json);
  free(run->buckets);
  free(run->bucket_segs);
  free(run->bucket_choice);
  free(run->bucket_algo);
  free(run->bucket_predicted);
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    rs__topo_unload(&run->topo_load[a]);
  for (int b = 0; run->busy_load && b < rs__shape_channels(run->shape); b++)
    rs__topo_unload(&run->busy_load[b]);
  free(run->busy_load);
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

void rs_run_interrupt(rs_run_t *run, const char *signal_name) {
  /* Atomics and the queues' own locks only: the run's status and error
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

/* Size every worker's event buffer for all the transfers it will receive,
 * so recording never allocates; over MPI, each of this process's workers
 * a ring of at most a trace batch, which the tracer drains (mpi/stream.c). */
static int alloc_events(rs_run_t *run) {
  for (int r = 0; r < rs__run_participants(run); r++) {
    size_t per_worker = rs__run_events_of(run, r);
    if (!per_worker || !rs__run_local(run, r))
      continue;
    rs_event_buf_t *buf = &run->workers[r].events;
    if (run->job->streams_trace) {
      size_t batch = run->job->trace_batch(run);
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
  int rc = run->job->inputs(run);
  if (rc == RS_OK)
    rc = rs__check_prepare(run);
  if (rc == RS_OK && run->trace) {
    uint64_t t0 = rs__now_ns();
    rc = alloc_events(run);
    if (rc == RS_OK && (rs__trace_begin(run) != RS_OK ||
                        (run->job->streams_trace &&
                         rs__trace_stream_open(run) != RS_OK))) {
      run->trace_failed = 1;
      if (atomic_load(&run->interrupted_by)) /* it stopped the wait */
        rc = rs__run_take_interrupt(run);
      else
        rc = rs__run_fail(run, RS_ETRACE, "%s", run->trace_errmsg);
    }
    run->result.trace_ns += rs__now_ns() - t0;
  }
  if (rc == RS_OK && !run->trace && run->job->streams_trace &&
      run->config.traced)
    rc = alloc_events(run); /* for rank 0's trace */
  /* Over MPI every process starts the workers, or none does. */
  if (!run->job->all(run, rc == RS_OK) && rc == RS_OK)
    rc = rs__run_fail(run, RS_EABORTED,
                      "another MPI process could not start the run");
  if (rc == RS_OK)
    rc = run->job->start(run);
  if (rc) {
    if (run->trace && run->job->streams_trace)
      rs__trace_stream_abandon(run); /* (if it was opened) */
    return rc;
  }
  rc = rs__run_threads(run);
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
