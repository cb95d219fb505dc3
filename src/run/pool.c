/* pool.c - the worker threads of one run: one per worker of this process,
 * held at a gate until all exist, run for warmup + iterations iterations
 * that meet between them, and joined.
 *
 * DESIGN
 * - The gate starts every worker together, or, if some thread could not
 *   be started, sends them all away (no iteration runs).
 * - Iterations meet: the main thread takes its turn between two where it
 *   has work (the check after the first; a time budget's cut), else the
 *   last worker to finish starts the next (pool_next). Each iteration's
 *   time is its slowest worker's own.
 * - An abort (a fault, a signal) does not break the meetings: the workers
 *   skip their parts, and the start after it is their last.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "algo/channels.h"
#include "base/parallel.h"
#include "base/reduce.h"
#include "base/util.h"
#include "check/check.h"
#include "net/evcount.h"
#include "run/run.h"

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
 * workers yield a while before they sleep, where their queues do (small
 * messages); the main thread sleeps at once (it would take a core from
 * them). */
typedef struct pool {
  gate_t gate;
  int workers;
  uint64_t spin_ns;    /* how long a worker's wait yields (its queues') */
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
  /* Read before arriving: once all have arrived the main thread may take
   * its turn and set main_until anew (TSan saw the read race that write). */
  const int main_until = pool->main_until;
  if (atomic_fetch_add_explicit(&pool->arrived, 1, memory_order_acq_rel) + 1 ==
      pool->workers) {
    if (it < main_until) {
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
  for (size_t j = 0; j < b->params; j++) {
    const rs_param_t *p = rs_model_param(
        run->model, rs_model_bucket_param(run->model, b, w->bucket, j));
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

/* A compressing hook's first steps on this worker's bucket g (n values),
 * in the checked iteration: the cast to its dtype, then the division by
 * W in it (as rs__pre_average does them), counting what each loses. */
static void hook_cast(rs_worker_t *w, float *g, size_t n) {
  const float W = (float)w->workers;
  uint64_t over = 0, flushed = 0, div_flushed = 0;
  float max = w->hook_max;
  for (size_t i = 0; i < n; i++) {
    const float x = g[i], c = rs_dtype_round(w->dtype, x);
    const float q = rs_dtype_round(w->dtype, c / W);
    over += isinf(c) && !isinf(x);
    flushed += c == 0 && x != 0;
    div_flushed += q == 0 && c != 0;
    max = fabsf(c) > max ? fabsf(c) : max;
    g[i] = q;
  }
  w->hook_over += over;
  w->hook_flushed += flushed;
  w->hook_div_flushed += div_flushed;
  w->hook_max = max;
}

/* One worker's part of one iteration: the algorithm, bucket by bucket in
 * the order DDP all-reduces them (the order backward fills them), then the
 * end-of-stream check on every edge. *done_ns: when the all-reduce itself
 * ended, before that check (which waits for the neighbours to end theirs:
 * MPI_Allreduce has no such wait), if it got that far. */
/* A switch's part of one iteration (runstate.h's switches): the
 * switch's side of each bucket whose algorithm has one, then the
 * end-of-stream check on its edges, as a worker's. */
static int run_switch(rs_run_t *run, rs_worker_t *sw, uint64_t *done_ns) {
  for (size_t b = 0; b < run->result.buckets; b++) {
    const rs_algo_t *algo = run->bucket_algo[b];
    sw->bucket = b;
    sw->base = run->buckets[b].elem_offset;
    sw->elems = run->buckets[b].elems;
    sw->segs_per_chunk = run->bucket_segs[b];
    int rc = algo->run_switch ? algo->run_switch(sw) : RS_OK;
    if (rc)
      return rc;
  }
  *done_ns = rs__now_ns();
  return rs__xfer_finish(sw);
}

static int run_worker(rs_run_t *run, rs_worker_t *w, uint64_t *done_ns) {
  if (w->rank >= run->config.workers) /* (a switch: no group, its rank) */
    return run_switch(run, w, done_ns);
  w->sim.clock = w->sim.link_free = w->sim.in_free = w->sim.nic_free =
      w->sim.nic_in_free = 0; /* each iteration's time from 0 */
  if (w->workers == 1) { /* one worker: its gradient already is the mean */
    if (w->hook_cast && w->iter == 0) /* ... cast as the hook casts it */
      hook_cast(w, (float *)(void *)w->buf, run->elems);
    return RS_OK;
  }
  for (size_t b = 0; b < run->result.buckets; b++) {
    w->bucket = b;
    w->base = run->buckets[b].elem_offset;
    w->elems = run->buckets[b].elems;
    w->segs_per_chunk = run->bucket_segs[b];
    /* a topology's contention: this bucket's algorithm's, on its busy
     * channels (net/topo.h) */
    rs__sim_set_load(&w->sim, rs__run_bucket_load(run, b));
    /* Average, DDP's way: each worker divides its own gradient first (a
     * compressing hook casts it to its dtype before), and the algorithm
     * sums the quotients. */
    if (w->hook_cast && w->iter == 0)
      hook_cast(w, (float *)(void *)(w->buf + w->base * w->buf_elem_bytes),
                w->elems);
    else if (w->op == RS_OP_AVG && w->average)
      rs__pre_average(w->dtype, w->buf + w->base * w->buf_elem_bytes, w->elems,
                      w->workers, w->average);
    if (w->relayout)
      ddp_layout(run, w, &run->buckets[b], 1);
    /* a training step: the bucket starts once backward has filled it */
    if (run->config.ready_ns)
      rs__sim_start_at(
          &w->sim,
          run->config.ready_ns[b * (size_t)w->workers + (size_t)w->rank]);
    rs__sim_launch(&w->sim); /* the protocol's launch (net/proto.h) */
    /* pipelined links: a streaming algorithm's segments (netmodel.h),
     * on the run's NCCL channels for one that runs on them (under auto
     * the others' buckets run on one) */
    w->sim.channels = (uint8_t)(run->bucket_algo[b]->caps & RS__CAP_CHANNELS
                                    ? rs__shape_channels(run->shape)
                                    : 1);
    rs__sim_stream(&w->sim, (run->bucket_algo[b]->caps & RS__CAP_STREAM) != 0,
                   w->ready_cap,
                   rs__sim_mem_of(w->stream_mem, w->sim.channels, w->ready_cap,
                                  w->slot_cap),
                   w->ready_cap, w->slot_cap);
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
  ok = run->job->all(run, ok); /* every process checks, or none does */
  for (int r = run->first_local; r < run->local_end && run->hook_cast; r++) {
    const rs_worker_t *w = &run->workers[r];
    rs_result_t *res = &run->result;
    res->hook_cast_overflow += w->hook_over;
    res->hook_cast_flushed += w->hook_flushed;
    res->hook_div_flushed += w->hook_div_flushed;
    res->hook_max_abs =
        w->hook_max > res->hook_max_abs ? w->hook_max : res->hook_max_abs;
  }
  if (ok) {
    rs__run_apply_flips(run);
    rs__check_result(run);
  }
}

/* Run the ring on W threads, warmup + iterations times; check after the
 * first; returns the run's status. */

/* Spin only while the cores are ours (evcount.h); and where each worker
 * has a core of its own, without yielding it (the main thread sleeps). */
static void choose_spin(rs_run_t *run, pool_t *pool) {
  if (!rs__ev_cores_idle()) {
    pool->spin_ns = 0;
    for (int i = 0; i < run->edge_count; i++)
      run->edges[i].queue.spin_ns = 0;
  } else if (pool->workers <= rs__cores() && run->job->own_cores) {
    pool->busy = 1;
    for (int i = 0; i < run->edge_count; i++)
      run->edges[i].queue.send_spin.busy = run->edges[i].queue.recv_spin.busy =
          1;
  }
}

static void pool_init(pool_t *pool) {
  RS_PTHREAD_CHECK(pthread_mutex_init(&pool->gate.mu, NULL));
  RS_PTHREAD_CHECK(pthread_cond_init(&pool->gate.cond, NULL));
  atomic_init(&pool->arrived, 0);
  atomic_init(&pool->released, 0);
  atomic_init(&pool->stopped, 0);
  rs__ev_init(&pool->arrived_ev);
  rs__ev_init(&pool->released_ev);
}

static void pool_destroy(pool_t *pool) {
  RS_PTHREAD_CHECK(pthread_cond_destroy(&pool->gate.cond));
  RS_PTHREAD_CHECK(pthread_mutex_destroy(&pool->gate.mu));
}

/* Start a thread for each of this process's workers, then each switch
 * (they wait at the gate); returns how many started. If one cannot start,
 * the run has failed and is aborted, and no more are started. */
static int start_threads(rs_run_t *run, pool_t *pool, pthread_t *threads,
                         thread_arg_t *args, const pthread_attr_t *attr) {
  const int first = run->first_local, L = run->local_end - first;
  int started = 0;
  for (; started < pool->workers; started++) {
    const int who =
        started < L ? first + started : run->config.workers + (started - L);
    args[started] = (thread_arg_t){run, &run->workers[who], pool, started};
    int err =
        pthread_create(&threads[started], attr, worker_main, &args[started]);
    if (err) {
      rs__run_fail(run, RS_ESYS, "cannot start worker thread %d of %d: %s",
                   first + started, run->config.workers, strerror(err));
      rs__run_abort(run);
      break;
    }
  }
  return started;
}

/* The main thread while the workers run more than one iteration: its turn
 * after each of the first main_until (the check after the first, the time
 * budget's cut), then a look in on the rest now and then. */
static void drive(rs_run_t *run, pool_t *pool, timing_t *timing) {
  uint64_t warm_ns = 0;
  int it = 0;
  for (; it < pool->main_until && it < pool->iterations; it++) {
    pool_wait_all(pool);
    uint64_t ns = slowest(pool);
    record_iteration(run, timing, it, ns);
    /* The workers wait at the next start while the first result is
     * checked and the budget (if any) cuts the count. */
    if (it == 0)
      check_first(run);
    warm_ns += ns;
    cut_to_budget(run, pool, it, warm_ns, ns);
    pool->main_until = main_until(&run->config);
    report_iterations(run, it + 1);
    pool_release(pool, it); /* the last one lets them leave */
    if (atomic_load(&pool->stopped))
      break;
  }
  /* The workers start the rest themselves; look in now and then. */
  while (it < pool->iterations) {
    int done = rs__ev_await(&pool->arrived_ev, pool_all_done, pool,
                            rs__now_ns() + POOL_LOOK_NS, 0, NULL);
    report_iterations(
        run, atomic_load_explicit(&pool->released, memory_order_acquire));
    if (done)
      break;
  }
}

/* After every worker is joined (at end_ns): gather the other processes'
 * states, name what failed, check a run of one iteration (or one whose
 * workers never went), and set the result's times. */
static void conclude(rs_run_t *run, const pool_t *pool, timing_t *timing,
                     int go, uint64_t end_ns) {
  const int W = run->config.workers;
  run->job->finish(run); /* (every worker's state and records, to rank 0) */
  rs__run_take_interrupt(run);
  rs__run_name_culprit(run);
  rs__run_name_crashes(run);
  if (pool->iterations == 1 || !go) {
    record_iteration(run, timing, run->config.warmup,
                     go ? slowest(pool) : end_ns - run->t0_ns);
    if (go || run->job->collective_check)
      check_first(run);
  }
  run->result.warmup = run->config.warmup;
  run->result.iterations = run->config.iterations;
  run->result.wall_ns = timing->total_ns / (uint64_t)run->config.iterations;
  run->result.wall_min_ns = timing->min_ns;
  if (run->config.net.enabled && run->result.status == RS_OK) {
    for (int r = 0; r < W; r++)
      if (run->workers[r].sim.clock > run->result.sim_ns)
        run->result.sim_ns = run->workers[r].sim.clock;
    uint64_t last = 0; /* the bucket before's, if the same size and algo */
    for (size_t b = 0; b < run->result.buckets; b++) {
      if (run->bucket_predicted) /* auto predicted every bucket to choose */
        last = run->bucket_predicted[b * RS_ALGO_COUNT + run->bucket_choice[b]];
      else if (b == 0 || run->buckets[b].elems != run->buckets[b - 1].elems)
        last = rs_netmodel_predict_algo(
            run->bucket_choice[b], &run->config.net, W, run->buckets[b].elems,
            run->bucket_segs[b], run->config.segment_bytes, run->elem_size);
      run->result.predicted_ns += last;
    }
  }
}

int rs__run_threads(rs_run_t *run) {
  /* this process's workers: all W, or its block over MPI; and the
   * switches (runstate.h: never over MPI) */
  const int L = run->local_end - run->first_local + run->switches;
  pthread_t *threads = calloc((size_t)L, sizeof *threads);
  thread_arg_t *args = calloc((size_t)L, sizeof *args);
  timing_t timing = {.min_ns = UINT64_MAX};
  pool_t pool = {.iterations = run->config.warmup + run->config.iterations,
                 .workers = L,
                 .main_until = main_until(&run->config),
                 .run = run,
                 .timing = &timing,
                 .own_ns = calloc((size_t)L, sizeof(uint64_t)),
                 .spin_ns = rs__queue_spin_for(run->result.seg_elems *
                                               run->buf_elem_bytes)};
  if (!threads || !args || !pool.own_ns) {
    free(threads);
    free(args);
    free(pool.own_ns);
    return rs__run_fail(run, RS_ENOMEM, "out of memory for %d threads",
                        run->config.workers);
  }
  choose_spin(run, &pool);
  pool_init(&pool);
  pthread_attr_t attr;
  RS_PTHREAD_CHECK(pthread_attr_init(&attr));
  RS_PTHREAD_CHECK(pthread_attr_setstacksize(&attr, 1u << 20));

  int started = start_threads(run, &pool, threads, args, &attr);
  rs__progress_begin(run, RS_STAGE_ALLREDUCE,
                     run->elems * (size_t)(L - run->switches) *
                         (size_t)pool.iterations);
  run->t0_ns = rs__now_ns();
  /* (over MPI, with its tracer: when tracing, the workers' rings need it) */
  int go = started == L;
  if (go && run->job->trace_start(run) != RS_OK) {
    rs__run_abort(run);
    go = 0;
  }
  open_gate(&pool.gate, go ? GATE_GO : GATE_LEAVE);
  if (go && pool.iterations > 1)
    drive(run, &pool, &timing);
  for (int r = 0; r < started; r++)
    RS_PTHREAD_CHECK(pthread_join(threads[r], NULL));
  conclude(run, &pool, &timing, go, rs__now_ns());

  RS_PTHREAD_CHECK(pthread_attr_destroy(&attr));
  pool_destroy(&pool);
  free(threads);
  free(args);
  free(pool.own_ns);
  return run->result.status;
}
