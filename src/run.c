/* run.c - one run: its buffers, channels and worker threads.
 *
 * The run owns everything it uses (no global state), so two runs in one
 * process do not interfere. rs_run_execute computes the reference, starts
 * one thread per worker behind a gate so they begin together, joins them
 * all, and checks the result. The first fault (a timeout, a bad message)
 * sets the run's error and the abort flag, and wakes every channel, so no
 * worker is left waiting.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "reduce.h"
#include "run.h"
#include "util.h"

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

/* Set the run's status and error, unless a fault set them first; note
 * which worker found it (-1: none). */
static void fail_v(rs_run_t *run, int worker, int code, const char *fmt,
                   va_list ap) {
  RS_PTHREAD_CHECK(pthread_mutex_lock(&run->err_mu));
  if (run->result.status == RS_OK) {
    run->result.status = code;
    run->fault_worker = worker;
    run->fault_ns = rs__now_ns();
    vsnprintf(run->errmsg, sizeof run->errmsg, fmt, ap);
    rs_one_line(run->errmsg);
  }
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&run->err_mu));
}

int rs__run_fail(rs_run_t *run, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(run, -1, code, fmt, ap);
  va_end(ap);
  return code;
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
  if (c->iterations < 1 || c->iterations > 1000000 || c->warmup < 0 ||
      c->warmup > 1000000)
    return rs__err(errmsg, RS_EINVAL,
                   "iterations: %d timed and %d warm-up; need 1.. and 0.. "
                   "(at most a million)",
                   c->iterations, c->warmup);
  int rc = rs_netmodel_check(&c->net, c->workers, errmsg);
  if (rc)
    return rc;
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
    if (f->step < 0 || f->step > 2 * (c->workers - 1) - 1)
      return rs__err(errmsg, RS_EINVAL,
                     "inject: step %d does not exist (steps 0..%d: "
                     "reduce-scatter 0..%d, all-gather %d..%d)",
                     f->step, 2 * (c->workers - 1) - 1, c->workers - 2,
                     c->workers - 1, 2 * (c->workers - 1) - 1);
    if (f->kind == RS_FAULT_STALL && (f->ms < 0 || f->ms > 3600000))
      return rs__err(errmsg, RS_EINVAL,
                     "inject: stall of %d ms is not in 0..3600000", f->ms);
  }
  return RS_OK;
}

/* Trace records per worker: one per transfer it receives, in every
 * iteration (segs: segments per chunk, summed over the buckets). */
static size_t events_per_worker(const rs_config_t *c, size_t segs) {
  size_t phases = c->collective == RS_COLL_ALLREDUCE ? 2 : 1;
  return phases * (size_t)(c->workers - 1) * segs *
         (size_t)(c->warmup + c->iterations);
}

int rs_run_create(const rs_config_t *config, const rs_model_t *model,
                  rs_run_t **out, char *errmsg) {
  *out = NULL;
  int rc = check_config(config, errmsg);
  if (rc)
    return rc;
  const int W = config->workers;
  const size_t n = rs_model_elems(model);

  /* Buckets, then segments: each chunk of a bucket (at most ceil(elems/W)
   * elements) moves as the same number of near-equal segments of at most
   * segment_bytes. */
  rs_bucket_t *buckets;
  size_t bucket_count;
  if (rs_model_buckets(model, config->first_bucket_bytes, config->bucket_bytes,
                       &buckets, &bucket_count))
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  size_t *bucket_segs = calloc(bucket_count, sizeof *bucket_segs);
  if (!bucket_segs) {
    free(buckets);
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  }
  size_t segs = 0, seg_elems = 0, min_segs = SIZE_MAX;
  for (size_t b = 0; b < bucket_count; b++) {
    size_t elems = buckets[b].elems;
    size_t max_chunk = elems / (size_t)W + (elems % (size_t)W != 0);
    bucket_segs[b] = rs_segs_per_chunk(elems, W, config->segment_bytes,
                                       rs_dtype_size(rs_model_dtype(model)));
    size_t largest =
        max_chunk ? (max_chunk + bucket_segs[b] - 1) / bucket_segs[b] : 0;
    seg_elems = largest > seg_elems ? largest : seg_elems;
    min_segs = bucket_segs[b] < min_segs ? bucket_segs[b] : min_segs;
    segs += bucket_segs[b];
  }
  const size_t elem_bytes = rs_dtype_buffer_size(rs_model_dtype(model));
  /* A copying channel carries the dtype's size: f16 and bf16 are packed
   * into 2 bytes (channel.h). */
  const rs_dtype_t dtype = rs_model_dtype(model);
  const int packed =
      !config->direct && (dtype == RS_DTYPE_F16 || dtype == RS_DTYPE_BF16);
  const size_t wire_bytes = packed ? rs_dtype_size(dtype) : elem_bytes;
  size_t payload = config->direct ? 0 : seg_elems * wire_bytes;
  size_t stride = sizeof(rs_msg_t) + payload + 64;
  /* Direct mode: a worker overwrites a chunk it sent (with the final value,
   * in all-gather) (W-1) x segs messages after sending it, segs being its
   * bucket's (in NCCL's slice order, W-1 messages after: one slice's
   * steps). With at most that many slots, its successor has released the
   * message by then. */
  int slots = config->slots;
  size_t apart = (size_t)(W > 1 ? W - 1 : 1) * (config->slices ? 1 : min_segs);
  if (config->direct && (size_t)slots > apart)
    slots = (int)apart;

  /* Refuse a run that cannot fit in memory before allocating any of it. */
  double events = config->traced
                      ? (double)W * (double)events_per_worker(config, segs) *
                            sizeof(rs_event_t)
                      : 0;
  double need =
      (double)W * ((double)n * elem_bytes + (double)slots * (double)stride) +
      (double)n * (sizeof(double) + elem_bytes) + events;
  double have = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  if (have > 0 && need > 0.9 * have) {
    char records[96] = "";
    if (events > 0)
      snprintf(records, sizeof records,
               "; %.1f GiB of it trace records, %zu B per transfer",
               events / (1 << 30), sizeof(rs_event_t));
    free(buckets);
    free(bucket_segs);
    return rs__err(errmsg, RS_ENOMEM,
                   "the run needs about %.1f GiB (W=%d x %zu elements%s), "
                   "more than this machine's %.1f GiB",
                   need / (1 << 30), W, n, records, have / (1 << 30));
  }

  rs_run_t *run = calloc(1, sizeof *run);
  if (!run) {
    free(buckets);
    free(bucket_segs);
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  }
  run->buckets = buckets;
  run->bucket_segs = bucket_segs;
  run->result.buckets = bucket_count;
  run->config = *config;
  run->model = model;
  run->elems = n;
  run->dtype = rs_model_dtype(model);
  run->elem_size = rs_dtype_size(run->dtype);
  run->buf_elem_bytes = elem_bytes;
  atomic_init(&run->abort_flag, 0);
  atomic_init(&run->interrupted_by, NULL);
  run->fault_worker = -1;
  RS_PTHREAD_CHECK(pthread_mutex_init(&run->err_mu, NULL));
  run->result.segs_per_chunk = segs;
  run->result.seg_elems = seg_elems;
  run->result.slots = slots;

  run->bufs = calloc((size_t)W, sizeof *run->bufs);
  run->chans = calloc((size_t)W, sizeof *run->chans);
  run->workers = rs__aligned_alloc((size_t)W * sizeof *run->workers);
  run->checks = calloc(rs_model_param_count(model), sizeof *run->checks);
  if (!run->bufs || !run->chans || !run->workers || !run->checks)
    goto nomem;
  memset(run->workers, 0, (size_t)W * sizeof *run->workers);
  for (int r = 0; r < W; r++) {
    run->bufs[r] = rs__aligned_alloc(n * elem_bytes);
    if (!run->bufs[r])
      goto nomem;
    if (W > 1 && rs_chan_init(&run->chans[r], slots, payload, &run->abort_flag))
      goto nomem;
    run->chans[r].direct = config->direct;
    run->chans[r].elem_bytes = wire_bytes;
    if (packed)
      run->chans[r].pack = dtype == RS_DTYPE_F16 ? rs__pack_f16 : rs__pack_bf16;
    /* Faults are caught by sequence numbers and, here, checksums. */
    run->chans[r].checksum = config->checksum || config->fault_count > 0;
  }
  for (int r = 0; r < W; r++) {
    rs_worker_t *w = &run->workers[r];
    w->run = run;
    w->rc = RS_RING_NOT_STARTED;
    w->rank = r;
    w->workers = W;
    w->buf = run->bufs[r];
    w->buf_elem_bytes = elem_bytes;
    if (packed && W > 1) {
      w->unpack = dtype == RS_DTYPE_F16 ? rs__unpack_f16 : rs__unpack_bf16;
      w->unpacked =
          rs__aligned_alloc((seg_elems ? seg_elems : 1) * sizeof *w->unpacked);
      if (!w->unpacked)
        goto nomem;
    }
    w->buckets = buckets;
    w->bucket_segs = bucket_segs;
    w->bucket_count = bucket_count;
    w->op = config->op;
    w->dtype = run->dtype;
    w->elem_size = run->elem_size;
    w->average_pre = config->average_pre;
    w->slices = config->slices;
    w->collective = config->collective;
    w->timeout_ns = (uint64_t)(config->timeout_s * 1e9);
    w->faults = run->config.faults;
    w->fault_count = run->config.fault_count;
    rs_sim_init(&w->sim, &run->config.net, W, r);
    w->to_next = &run->chans[r];
    w->from_prev = &run->chans[(r + W - 1) % W];
  }
  *out = run;
  return RS_OK;

nomem:
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
    if (run->chans)
      rs_chan_destroy(&run->chans[r]);
    if (run->workers) {
      free(run->workers[r].events.events);
      free(run->workers[r].unpacked);
    }
  }
  free(run->trace_config_json);
  free(run->buckets);
  free(run->bucket_segs);
  free(run->bufs);
  free(run->chans);
  free(run->workers);
  free(run->checks);
  free(run->ref);
  free(run->bound);
  free(run->ref_exact);
  free(run->fixed);
  RS_PTHREAD_CHECK(pthread_mutex_destroy(&run->err_mu));
  free(run);
}

const char *rs_run_errmsg(const rs_run_t *run) { return run->errmsg; }
const rs_result_t *rs_run_result(const rs_run_t *run) { return &run->result; }
const rs_config_t *rs_run_config(const rs_run_t *run) { return &run->config; }

const rs_bucket_t *rs_run_bucket(const rs_run_t *run, size_t index) {
  return index < run->result.buckets ? &run->buckets[index] : NULL;
}

void *rs_run_buffer(rs_run_t *run, int worker) {
  if (worker < 0 || worker >= run->config.workers)
    return NULL;
  return run->bufs[worker];
}

void rs_run_mark_filled(rs_run_t *run) { run->filled = 1; }

const rs_worker_stats_t *rs_run_worker_stats(const rs_run_t *run, int worker) {
  if (worker < 0 || worker >= run->config.workers)
    return NULL;
  return &run->workers[worker].stats;
}

rs_wstate_t rs__worker_wstate(int rc) {
  switch (rc) {
  case RS_OK:
    return RS_WSTATE_DONE;
  case RS_RING_NOT_STARTED:
    return RS_WSTATE_NOT_STARTED;
  case RS_RING_CRASHED:
    return RS_WSTATE_CRASHED;
  case RS_ETIMEDOUT:
    return RS_WSTATE_TIMED_OUT;
  case RS_EABORTED:
    return RS_WSTATE_ABORTED;
  case RS_EPROTO:
    return RS_WSTATE_BAD_MESSAGE;
  case RS_ECORRUPT:
    return RS_WSTATE_DAMAGED_MESSAGE;
  default:
    return RS_WSTATE_FAILED;
  }
}

/* A worker's neighbour on the side it blocks on: its successor when
 * sending, its predecessor when receiving or finishing; -1 if it was not
 * blocked on a channel. */
static int blocked_on(const rs_worker_t *w) {
  switch (w->progress.activity) {
  case RS_ACT_SENDING:
    return (w->rank + 1) % w->workers;
  case RS_ACT_RECEIVING:
  case RS_ACT_FINISHING:
    return (w->rank + w->workers - 1) % w->workers;
  default:
    return -1;
  }
}

void rs_run_worker_state(const rs_run_t *run, int worker,
                         rs_worker_state_t *out) {
  const rs_worker_t *w = &run->workers[worker];
  const int W = run->config.workers;
  int stopped = w->rc != RS_OK && w->rc != RS_RING_CRASHED;
  int stalled = stopped && w->progress.activity == RS_ACT_STALLED;
  out->wstate = stalled ? RS_WSTATE_STALLED : rs__worker_wstate(w->rc);
  out->state = rs_wstate_name(out->wstate);
  out->phase = W > 1 && w->rc != RS_RING_NOT_STARTED
                   ? rs_phase_name(w->progress.phase)
                   : NULL;
  out->step = w->progress.step;
  out->chunk = w->progress.chunk;
  out->waiting = NULL;
  out->peer = blocked_on(w);
  if (stopped && out->peer >= 0)
    out->waiting = w->progress.activity == RS_ACT_SENDING     ? "send"
                   : w->progress.activity == RS_ACT_RECEIVING ? "receive"
                                                              : "finish";
  out->stall_ms = stalled ? w->progress.stall_ms : 0;
}

const rs_param_check_t *rs_run_param_check(const rs_run_t *run, size_t param) {
  if (param >= rs_model_param_count(run->model))
    return NULL;
  return &run->checks[param];
}

/* The gate holds every worker until all exist, so they start together;
 * if some could not be started, it sends the others away. (An abort, a
 * fault's or an interrupt's, does not: the workers still meet the
 * barriers, skipping their ring.) */
enum { GATE_CLOSED, GATE_GO, GATE_LEAVE };
typedef struct gate {
  pthread_mutex_t mu;
  pthread_cond_t cond;
  int open; /* GATE_* */
} gate_t;

/* Between iterations every worker and the main thread meet at two
 * barriers, so an iteration can be timed and checked on the same threads. */
typedef struct pool {
  gate_t gate;
  pthread_barrier_t start, end;
  int iterations; /* warm-up and timed */
} pool_t;

typedef struct thread_arg {
  rs_worker_t *worker;
  pool_t *pool;
} thread_arg_t;

static void abort_all(rs_run_t *run) {
  atomic_store_explicit(&run->abort_flag, 1, memory_order_release);
  if (run->config.workers > 1)
    for (int r = 0; r < run->config.workers; r++)
      rs_chan_wake(&run->chans[r]);
}

/* Set the run's error, as rs__run_fail, and remember which worker found
 * it (the first fault wins). */
static void fail_at(rs_run_t *run, int worker, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void fail_at(rs_run_t *run, int worker, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(run, worker, code, fmt, ap);
  va_end(ap);
}

/* Name the fault a worker found, with where it was, and stop the others.
 * A timeout's message is rewritten once every worker has stopped
 * (name_culprit), when the worker it waited for is known. */
static void report_fault(rs_worker_t *w, int rc) {
  rs_run_t *run = w->run;
  const rs_progress_t *p = &w->progress;
  const rs_chan_t *in = w->from_prev;
  int peer = blocked_on(w);
  int sending = p->activity == RS_ACT_SENDING;
  if (rc == RS_ETIMEDOUT && p->activity == RS_ACT_FINISHING)
    fail_at(run, w->rank, rc,
            "worker %d timed out after %g s after its last step, waiting for "
            "worker %d to finish",
            w->rank, run->config.timeout_s, peer);
  else if (rc == RS_ETIMEDOUT)
    fail_at(run, w->rank, rc,
            "worker %d timed out after %g s in %s step %d, waiting to %s "
            "chunk %d %s worker %d",
            w->rank, run->config.timeout_s, rs_phase_name(p->phase), p->step,
            sending ? "send" : "receive", p->chunk, sending ? "to" : "from",
            peer);
  else if (rc == RS_EPROTO && in->bad_end && in->bad_seq < in->recv_seq)
    fail_at(run, w->rank, rc,
            "worker %d received message %llu from worker %d again after its "
            "last step (%s step %d): a message was delivered twice",
            w->rank, (unsigned long long)in->bad_seq, peer,
            rs_phase_name(p->phase), p->step);
  else if (rc == RS_EPROTO && in->bad_end)
    fail_at(run, w->rank, rc,
            "worker %d expected message %llu from worker %d in %s step %d, "
            "but worker %d finished having sent %llu: a message was lost",
            w->rank, (unsigned long long)in->recv_seq, peer,
            rs_phase_name(p->phase), p->step, peer,
            (unsigned long long)in->bad_seq);
  else if (rc == RS_EPROTO && in->bad_seq != in->recv_seq)
    fail_at(run, w->rank, rc,
            "worker %d received message %llu from worker %d when it "
            "expected %llu, in %s step %d: %s",
            w->rank, (unsigned long long)in->bad_seq, peer,
            (unsigned long long)in->recv_seq, rs_phase_name(p->phase), p->step,
            in->bad_seq < in->recv_seq ? "a message was delivered twice"
                                       : "a message was lost");
  else if (rc == RS_EPROTO)
    fail_at(run, w->rank, rc,
            "worker %d received the wrong segment from worker %d in %s "
            "step %d (expected chunk %d)",
            w->rank, peer, rs_phase_name(p->phase), p->step, p->chunk);
  else if (rc == RS_ECORRUPT)
    fail_at(run, w->rank, rc,
            "worker %d received a damaged segment of chunk %d from "
            "worker %d in %s step %d (checksum mismatch)",
            w->rank, p->chunk, peer, rs_phase_name(p->phase), p->step);
  else
    fail_at(run, w->rank, rc, "worker %d failed in %s step %d: %s", w->rank,
            rs_phase_name(p->phase), p->step, rs_strerror(rc));
  abort_all(run);
}

/* After a timeout, with every worker stopped: follow the waits from the
 * worker that timed out (it waited on a neighbour, which waited on its own
 * neighbour, ...) to the worker that was not waiting on anyone: the
 * culprit, crashed, stalled or busy. Its own state says what happened to
 * it; the message names it first and then who noticed, so it names the
 * culprit whichever neighbour's timer fired first. */
/* Was worker w in an injected stall while the worker that noticed waited
 * (its timeout up to when it timed out)? A stall about as long as the
 * timeout may have ended just before the abort reached it. */
static int stalled_during_wait(const rs_run_t *run, const rs_worker_t *w) {
  if (w->progress.activity == RS_ACT_STALLED)
    return 1;
  uint64_t wait_ns = (uint64_t)(run->config.timeout_s * 1e9);
  return w->progress.stall_end_ns &&
         w->progress.stall_end_ns + wait_ns >= run->fault_ns;
}

static void name_culprit(rs_run_t *run) {
  const int W = run->config.workers;
  const int noticer = run->fault_worker;
  if (run->result.status != RS_ETIMEDOUT || noticer < 0 || W < 2)
    return;
  char chain[RS_ERRMSG_MAX] = "";
  size_t len = 0;
  int culprit = noticer, hops = 0, cycle = 0;
  for (int next; (next = blocked_on(&run->workers[culprit])) >= 0;) {
    culprit = next;
    if (++hops > 1 && len < sizeof chain)
      len += (size_t)snprintf(chain + len, sizeof chain - len,
                              ", which waited on worker %d", culprit);
    if (stalled_during_wait(run, &run->workers[culprit]))
      break; /* its stall is why the others waited */
    if (culprit == noticer || hops > W) {
      cycle = 1; /* round the ring: every worker waits on the next */
      break;
    }
  }
  const rs_worker_t *c = &run->workers[culprit];
  const char *phase = rs_phase_name(c->progress.phase);
  char what[RS_ERRMSG_MAX];
  if (culprit != noticer && stalled_during_wait(run, c))
    snprintf(what, sizeof what,
             "worker %d stalled (injected, %d ms) at the start of %s step %d",
             culprit, c->progress.stall_ms,
             rs_phase_name(c->progress.stall_phase), c->progress.stall_step);
  else if (cycle)
    snprintf(what, sizeof what,
             "every worker was waiting on its neighbour round the ring (a "
             "deadlock)");
  else if (c->rc == RS_RING_CRASHED)
    snprintf(what, sizeof what,
             "worker %d crashed (injected) at the start of %s step %d",
             culprit, phase, c->progress.step);
  else if (c->rc == RS_OK)
    snprintf(what, sizeof what, "worker %d had finished its steps", culprit);
  else
    snprintf(what, sizeof what,
             "worker %d stopped making progress in %s step %d (it was not "
             "waiting on a neighbour)",
             culprit, phase, c->progress.step);
  /* "worker N timed out ..." becomes "worker N noticed: it timed out ..." */
  const char *rest = strstr(run->errmsg, " timed out");
  char full[4 * RS_ERRMSG_MAX];
  snprintf(full, sizeof full, "%s; worker %d noticed: it%s%s", what, noticer,
           rest ? rest : run->errmsg, chain);
  memcpy(run->errmsg, full, sizeof run->errmsg - 1); /* truncated, if long */
  run->errmsg[sizeof run->errmsg - 1] = '\0';
  rs_one_line(run->errmsg);
}

static void *worker_main(void *varg) {
  thread_arg_t *arg = varg;
  rs_worker_t *w = arg->worker;
  pool_t *pool = arg->pool;
  RS_PTHREAD_CHECK(pthread_mutex_lock(&pool->gate.mu));
  while (!pool->gate.open)
    RS_PTHREAD_CHECK(pthread_cond_wait(&pool->gate.cond, &pool->gate.mu));
  int gate = pool->gate.open;
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&pool->gate.mu));
  if (gate == GATE_LEAVE)
    return NULL; /* not every thread started: the barriers are unusable */
  for (int it = 0; it < pool->iterations; it++) {
    /* A crashed worker stays dead for the rest of the run, but keeps
     * meeting the barriers so the others are not left waiting there. */
    if (!atomic_load(&w->run->abort_flag) && w->rc != RS_RING_CRASHED) {
      w->iter = it;
      int rc = rs_ring_run(w);
      w->rc = rc;
      /* An injected crash stops this worker as a dead process stops: it
       * tells nobody, and its neighbours find out by timing out. */
      if (rc != RS_OK && rc != RS_RING_CRASHED && rc != RS_EABORTED)
        report_fault(w, rc);
    }
    /* Between end and start the main thread may cut pool->iterations (a
     * time budget): it is read only after the start barrier. */
    if (pool->iterations > 1) {
      pthread_barrier_wait(&pool->end);
      pthread_barrier_wait(&pool->start);
    }
  }
  return NULL;
}

static void open_gate(gate_t *gate, int how) {
  RS_PTHREAD_CHECK(pthread_mutex_lock(&gate->mu));
  gate->open = how;
  RS_PTHREAD_CHECK(pthread_cond_broadcast(&gate->cond));
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&gate->mu));
}

typedef struct timing {
  uint64_t total_ns, min_ns;
} timing_t;

static void record_iteration(rs_run_t *run, timing_t *t, int it, uint64_t ns) {
  if (it < run->config.warmup)
    return;
  t->total_ns += ns;
  t->min_ns = ns < t->min_ns ? ns : t->min_ns;
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

/* Check the result of the first iteration (an all-reduce that completed). */
static void check_first(rs_run_t *run) {
  if (rs__run_take_interrupt(run) == RS_OK &&
      run->config.collective == RS_COLL_ALLREDUCE)
    rs__check_result(run);
}

/* Run the ring on W threads, warmup + iterations times; check after the
 * first; returns the run's status. */
static int run_threads(rs_run_t *run) {
  const int W = run->config.workers;
  pthread_t *threads = calloc((size_t)W, sizeof *threads);
  thread_arg_t *args = calloc((size_t)W, sizeof *args);
  pool_t pool = {.iterations = run->config.warmup + run->config.iterations};
  if (!threads || !args) {
    free(threads);
    free(args);
    return rs__run_fail(run, RS_ENOMEM, "out of memory for %d threads", W);
  }
  RS_PTHREAD_CHECK(pthread_mutex_init(&pool.gate.mu, NULL));
  RS_PTHREAD_CHECK(pthread_cond_init(&pool.gate.cond, NULL));
  RS_PTHREAD_CHECK(pthread_barrier_init(&pool.start, NULL, (unsigned)W + 1));
  RS_PTHREAD_CHECK(pthread_barrier_init(&pool.end, NULL, (unsigned)W + 1));
  pthread_attr_t attr;
  RS_PTHREAD_CHECK(pthread_attr_init(&attr));
  RS_PTHREAD_CHECK(pthread_attr_setstacksize(&attr, 1u << 20));

  int started = 0;
  for (; started < W; started++) {
    args[started] = (thread_arg_t){&run->workers[started], &pool};
    int err =
        pthread_create(&threads[started], &attr, worker_main, &args[started]);
    if (err) {
      rs__run_fail(run, RS_ESYS, "cannot start worker thread %d of %d: %s",
                   started, W, strerror(err));
      abort_all(run);
      break;
    }
  }
  timing_t timing = {.min_ns = UINT64_MAX};
  run->t0_ns = rs__now_ns();
  open_gate(&pool.gate, started == W ? GATE_GO : GATE_LEAVE);
  if (started == W && pool.iterations > 1) {
    uint64_t begin = run->t0_ns, warm_ns = 0;
    for (int it = 0; it < pool.iterations; it++) {
      pthread_barrier_wait(&pool.end);
      uint64_t ns = rs__now_ns() - begin;
      record_iteration(run, &timing, it, ns);
      /* The workers wait at the next start while the first result is
       * checked and the budget (if any) cuts the count. */
      if (it == 0)
        check_first(run);
      warm_ns += ns;
      cut_to_budget(run, &pool, it, warm_ns, ns);
      if (run->config.on_iteration)
        run->config.on_iteration(run->config.on_iteration_arg, it + 1,
                                 run->config.warmup, run->config.iterations);
      begin = rs__now_ns();
      pthread_barrier_wait(&pool.start); /* the last one lets them leave */
    }
  }
  for (int r = 0; r < started; r++)
    RS_PTHREAD_CHECK(pthread_join(threads[r], NULL));
  rs__run_take_interrupt(run);
  name_culprit(run);
  if (pool.iterations == 1 || started < W) {
    record_iteration(run, &timing, run->config.warmup,
                     rs__now_ns() - run->t0_ns);
    if (started == W)
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
      run->result.predicted_ns +=
          rs_netmodel_predict(&run->config.net, W, run->buckets[b].elems,
                              run->bucket_segs[b], run->elem_size);
  }

  RS_PTHREAD_CHECK(pthread_attr_destroy(&attr));
  RS_PTHREAD_CHECK(pthread_barrier_destroy(&pool.end));
  RS_PTHREAD_CHECK(pthread_barrier_destroy(&pool.start));
  RS_PTHREAD_CHECK(pthread_cond_destroy(&pool.gate.cond));
  RS_PTHREAD_CHECK(pthread_mutex_destroy(&pool.gate.mu));
  free(threads);
  free(args);
  return run->result.status;
}

void rs_run_interrupt(rs_run_t *run, const char *signal_name) {
  /* Atomics and the channels' own locks only: the run's status and error
   * belong to the thread that runs it (rs__run_take_interrupt). */
  const char *none = NULL;
  atomic_compare_exchange_strong(&run->interrupted_by, &none, signal_name);
  abort_all(run);
}

int rs__run_take_interrupt(rs_run_t *run) {
  const char *signal_name = atomic_load(&run->interrupted_by);
  if (signal_name)
    rs__run_fail(run, RS_EINTERRUPTED, "interrupted by %s", signal_name);
  return run->result.status;
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
 * so recording never allocates. */
static int alloc_events(rs_run_t *run) {
  const int W = run->config.workers;
  size_t per_worker =
      events_per_worker(&run->config, run->result.segs_per_chunk);
  for (int r = 0; r < W && per_worker; r++) {
    rs_event_buf_t *buf = &run->workers[r].events;
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
  int rc = rs__check_prepare(run);
  if (rc == RS_OK && run->trace) {
    uint64_t t0 = rs__now_ns();
    rc = alloc_events(run);
    if (rc == RS_OK && rs__trace_begin(run) != RS_OK) {
      run->trace_failed = 1;
      if (atomic_load(&run->interrupted_by)) /* it stopped the wait */
        rc = rs__run_take_interrupt(run);
      else
        rc = rs__run_fail(run, RS_ETRACE, "%s", run->trace_errmsg);
    }
    run->result.trace_ns += rs__now_ns() - t0;
  }
  if (rc)
    return rc;
  rc = run_threads(run);
  for (int r = 0; r < run->config.workers; r++)
    run->result.transfers += run->workers[r].stats.transfers_sent;
  /* The trace keeps failed runs too: every transfer up to the fault. */
  if (run->trace) {
    uint64_t t0 = rs__now_ns();
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
  return run->result.status;
}
