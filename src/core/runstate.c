/* runstate.c - recording a run's failure, and its workers' states
 * (runstate.h). */
#include "core/runstate.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "algo/list.h"
#include "base/util.h"

/* Participant p as a message names it: "worker p", or for node n's
 * NVLink switch (participant W + n: runstate.h's switches,
 * docs/trace-schema.md) "switch n (participant W+n)". A value whose
 * array lives to the end of the call it is an argument of (C11 6.2.4). */
typedef struct who {
  char s[48];
} who_t;

static who_t who(const rs_run_t *run, int p) {
  const int W = run->config.workers;
  who_t n;
  if (p >= W)
    snprintf(n.s, sizeof n.s, "switch %d (participant %d)", p - W, p);
  else
    snprintf(n.s, sizeof n.s, "worker %d", p);
  return n;
}

/* Set the run's status and error, unless a fault set them first; note
 * which worker found it (-1: none). */
static void fail_v(rs_run_t *run, int worker, int code, const char *fmt,
                   va_list ap) {
  char told[RS_ERRMSG_MAX];
  int first = 0;
  RS_PTHREAD_CHECK(pthread_mutex_lock(&run->err_mu));
  if (run->result.status == RS_OK) {
    first = 1;
    run->result.status = code;
    run->fault_worker = worker;
    run->fault_ns = rs__now_ns();
    vsnprintf(run->errmsg, sizeof run->errmsg, fmt, ap);
    rs_one_line(run->errmsg);
    memcpy(told, run->errmsg, sizeof told);
  }
  RS_PTHREAD_CHECK(pthread_mutex_unlock(&run->err_mu));
  /* Over MPI, a worker's fault stops the other processes' workers too. */
  if (first && worker >= 0)
    run->job->tell_fault(run, worker, code, told);
}

void rs__run_fail_from(rs_run_t *run, int worker, int code, uint64_t fault_ns,
                       const char *message) {
  RS_PTHREAD_CHECK(pthread_mutex_lock(&run->err_mu));
  if (run->result.status == RS_OK) {
    run->result.status = code;
    run->fault_worker = worker;
    run->fault_ns = fault_ns;
    snprintf(run->errmsg, sizeof run->errmsg, "%s", message);
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

rs_wstate_t rs__worker_wstate(int rc) {
  switch (rc) {
  case RS_OK:
    return RS_WSTATE_DONE;
  case RS_WORKER_NOT_STARTED:
    return RS_WSTATE_NOT_STARTED;
  case RS_WORKER_CRASHED:
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

/* The worker it blocks on: the peer it sends to, receives from, or checks
 * the end of stream of; -1 if it was not blocked on an edge. */
static int blocked_on(const rs_worker_t *w) {
  if (w->rc == RS_OK || w->rc == RS_WORKER_NOT_STARTED)
    return -1; /* done, or never began: it waits on nobody */
  switch (w->progress.activity) {
  case RS_ACT_SENDING:
  case RS_ACT_RECEIVING:
  case RS_ACT_FINISHING:
    return w->progress.peer;
  default:
    return -1;
  }
}

void rs_run_worker_state(const rs_run_t *run, int worker,
                         rs_worker_state_t *out) {
  const rs_worker_t *w = &run->workers[worker];
  const int W = run->config.workers;
  int stopped = w->rc != RS_OK && w->rc != RS_WORKER_CRASHED;
  int stalled = stopped && w->progress.activity == RS_ACT_STALLED;
  out->wstate = stalled ? RS_WSTATE_STALLED : rs__worker_wstate(w->rc);
  out->state = rs_wstate_name(out->wstate);
  out->phase = W > 1 && w->rc != RS_WORKER_NOT_STARTED
                   ? rs__phase_name(w->progress.phase)
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

void rs__run_abort(rs_run_t *run) {
  atomic_store_explicit(&run->abort_flag, 1, memory_order_release);
  for (int i = 0; i < run->edge_count; i++)
    run->edges[i].tp->wake(&run->edges[i]);
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
 * (rs__run_name_culprit), when the worker it waited for is known. */
void rs__run_report_fault(rs_run_t *run, const rs_worker_t *w, int rc) {
  const rs_progress_t *p = &w->progress;
  /* The edge it failed on (none if it failed before its first transfer). */
  const rs_queue_t *in = w->progress.edge ? &w->progress.edge->queue : NULL;
  int peer = blocked_on(w);
  int sending = p->activity == RS_ACT_SENDING;
  if (rc == RS_ETIMEDOUT && p->activity == RS_ACT_FINISHING)
    fail_at(run, w->rank, rc,
            "%s timed out after %g s after its last step, waiting for "
            "%s to finish",
            who(run, w->rank).s, run->config.timeout_s, who(run, peer).s);
  else if (rc == RS_ETIMEDOUT)
    fail_at(run, w->rank, rc,
            "%s timed out after %g s in %s step %d, waiting to %s "
            "chunk %d %s %s",
            who(run, w->rank).s, run->config.timeout_s,
            rs__phase_name(p->phase), p->step, sending ? "send" : "receive",
            p->chunk, sending ? "to" : "from", who(run, peer).s);
  else if (rc == RS_EPROTO && p->mismatch)
    fail_at(run, w->rank, rc,
            "%s received the wrong segment from %s in %s step %d "
            "(expected chunk %d)",
            who(run, w->rank).s, who(run, peer).s, rs__phase_name(p->phase),
            p->step, p->chunk);
  else if (rc == RS_EPROTO && in && in->bad_end && in->bad_seq < in->recv_seq)
    fail_at(run, w->rank, rc,
            "%s received message %llu from %s again after its "
            "last step (%s step %d): a message was delivered twice",
            who(run, w->rank).s, (unsigned long long)in->bad_seq,
            who(run, peer).s, rs__phase_name(p->phase), p->step);
  else if (rc == RS_EPROTO && in && in->bad_end)
    fail_at(run, w->rank, rc,
            "%s expected message %llu from %s in %s step %d, "
            "but %s finished having sent %llu: a message was lost",
            who(run, w->rank).s, (unsigned long long)in->recv_seq,
            who(run, peer).s, rs__phase_name(p->phase), p->step,
            who(run, peer).s, (unsigned long long)in->bad_seq);
  else if (rc == RS_EPROTO && in && in->bad_seq != in->recv_seq)
    fail_at(run, w->rank, rc,
            "%s received message %llu from %s when it "
            "expected %llu, in %s step %d: %s",
            who(run, w->rank).s, (unsigned long long)in->bad_seq,
            who(run, peer).s, (unsigned long long)in->recv_seq,
            rs__phase_name(p->phase), p->step,
            in->bad_seq < in->recv_seq ? "a message was delivered twice"
                                       : "a message was lost");
  else if (rc == RS_ECORRUPT)
    fail_at(run, w->rank, rc,
            "%s received a damaged segment of chunk %d from "
            "%s in %s step %d (checksum mismatch)",
            who(run, w->rank).s, p->chunk, who(run, peer).s,
            rs__phase_name(p->phase), p->step);
  else
    fail_at(run, w->rank, rc, "%s failed in %s step %d: %s",
            who(run, w->rank).s, rs__phase_name(p->phase), p->step,
            rs_strerror(rc));
  rs__run_abort(run);
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

/* Did the edge a receiving worker waited on lose a message on the wire
 * (its sender spent more sequence numbers than were ever delivered)? */
static int lost_on(const rs_worker_t *w, uint64_t *sent, uint64_t *got) {
  if (w->progress.activity != RS_ACT_RECEIVING || !w->progress.edge)
    return 0;
  const rs_queue_t *q = &w->progress.edge->queue;
  *sent = q->send_seq;
  *got = q->recv_seq;
  return q->head == q->tail && q->send_seq > q->recv_seq;
}

void rs__run_name_culprit(rs_run_t *run) {
  const int W = run->config.workers;
  /* The chain may pass through NVLink switches (participants W and on,
   * runstate.h): a chain without a repeat has fewer than P hops, so
   * more than P is a cycle. */
  const int P = rs__run_participants(run);
  const int noticer = run->fault_worker;
  if (run->result.status != RS_ETIMEDOUT || noticer < 0 || W < 2)
    return;
  char chain[RS_ERRMSG_MAX] = "";
  size_t len = 0;
  int culprit = noticer, hops = 0, cycle = 0, lost = 0;
  uint64_t sent = 0, got = 0;
  const rs_worker_t *waiter = NULL; /* the one a lost message never reached */
  for (int next; (next = blocked_on(&run->workers[culprit])) >= 0;) {
    if (lost_on(&run->workers[culprit], &sent, &got)) {
      waiter = &run->workers[culprit]; /* it waits for what never comes */
      lost = 1;
      break;
    }
    culprit = next;
    if (++hops > 1 && len < sizeof chain)
      len += (size_t)snprintf(chain + len, sizeof chain - len,
                              ", which waited on %s", who(run, culprit).s);
    if (stalled_during_wait(run, &run->workers[culprit]))
      break; /* its stall is why the others waited */
    if (culprit == noticer || hops > P) {
      cycle = 1; /* round the ring: every worker waits on the next */
      break;
    }
  }
  const rs_worker_t *c = &run->workers[culprit];
  const char *phase = rs__phase_name(c->progress.phase);
  char what[RS_ERRMSG_MAX];
  if (culprit != noticer && stalled_during_wait(run, c))
    snprintf(what, sizeof what,
             "%s stalled (injected, %d ms) at the start of %s step %d",
             who(run, culprit).s, c->progress.stall_ms,
             rs__phase_name(c->progress.stall_phase), c->progress.stall_step);
  else if (lost)
    snprintf(what, sizeof what,
             "a message from %s to %s was lost on the wire "
             "(%s sent %llu, %s received %llu) and no later "
             "one came to show it",
             who(run, waiter->progress.peer).s, who(run, waiter->rank).s,
             who(run, waiter->progress.peer).s, (unsigned long long)sent,
             who(run, waiter->rank).s, (unsigned long long)got);
  else if (cycle && rs__algo_get(run->config.algo) &&
           (rs__algo_get(run->config.algo)->caps & RS__CAP_TEXTBOOK_RING))
    snprintf(what, sizeof what,
             "every worker was waiting on its neighbour round the ring (a "
             "deadlock)");
  else if (cycle)
    snprintf(what, sizeof what,
             "the workers were waiting on each other in a cycle (a "
             "deadlock)");
  else if (c->rc == RS_WORKER_CRASHED)
    snprintf(what, sizeof what,
             "%s crashed (injected) at the start of %s step %d",
             who(run, culprit).s, phase, c->progress.step);
  else if (c->rc == RS_OK)
    snprintf(what, sizeof what, "%s had finished its steps",
             who(run, culprit).s);
  else if (c->rc == RS_WORKER_NOT_STARTED)
    snprintf(what, sizeof what,
             "%s had not begun its steps (its thread had not run "
             "within --timeout %g s)",
             who(run, culprit).s, run->config.timeout_s);
  else
    snprintf(what, sizeof what,
             "%s stopped making progress in %s step %d (it was not "
             "waiting on a neighbour)",
             who(run, culprit).s, phase, c->progress.step);
  /* "worker N timed out ..." becomes "worker N noticed: it timed out ..."
   * (a switch's: "switch n (participant W+n) noticed: ...") */
  const char *rest = strstr(run->errmsg, " timed out");
  char full[4 * RS_ERRMSG_MAX];
  snprintf(full, sizeof full, "%s; %s noticed: it%s%s", what,
           who(run, noticer).s, rest ? rest : run->errmsg, chain);
  memcpy(run->errmsg, full, sizeof run->errmsg - 1); /* truncated, if long */
  run->errmsg[sizeof run->errmsg - 1] = '\0';
  rs_one_line(run->errmsg);
}

void rs__run_name_crashes(rs_run_t *run) {
  const int W = run->config.workers;
  /* (only where every worker's state is: the process of worker 0, to
   * which the job's finish gathered them) */
  if (run->result.status != RS_OK || !rs__run_local(run, 0))
    return;
  enum { NAMED = 4 }; /* crashes named one by one; the rest counted */
  char where[RS_ERRMSG_MAX] = "";
  size_t len = 0;
  int crashed = 0;
  for (int r = 0; r < W; r++) {
    const rs_worker_t *w = &run->workers[r];
    if (w->rc != RS_WORKER_CRASHED)
      continue;
    if (crashed++ < NAMED && len < sizeof where)
      len += (size_t)snprintf(where + len, sizeof where - len,
                              "%sworker %d at the start of %s step %d",
                              crashed > 1 ? ", " : "", r,
                              rs__phase_name(w->progress.phase),
                              w->progress.step);
  }
  if (!crashed)
    return;
  if (crashed > NAMED && len < sizeof where)
    snprintf(where + len, sizeof where - len, ", and %d more",
             crashed - NAMED);
  if (crashed == W)
    rs__run_fail(run, RS_EABORTED,
                 "every worker crashed (injected): %s; none was left to "
                 "time out waiting on another",
                 where);
  else
    rs__run_fail(run, RS_EABORTED,
                 "%s crashed (injected): %s; no worker waited on %s "
                 "afterwards, so none timed out",
                 crashed > 1 ? "workers" : "a worker", where,
                 crashed > 1 ? "them" : "it");
}

int rs__run_take_interrupt(rs_run_t *run) {
  const char *signal_name = atomic_load(&run->interrupted_by);
  if (signal_name)
    rs__run_fail(run, RS_EINTERRUPTED, "interrupted by %s", signal_name);
  return run->result.status;
}

rs_stage_t rs_run_progress(const rs_run_t *run, double *fraction) {
  rs_stage_t phase = (rs_stage_t)atomic_load_explicit(&((rs_run_t *)run)->phase,
                                                      memory_order_relaxed);
  size_t total = atomic_load_explicit(&((rs_run_t *)run)->phase_total,
                                      memory_order_relaxed);
  size_t done = atomic_load_explicit(&((rs_run_t *)run)->phase_done,
                                     memory_order_relaxed);
  if (fraction)
    *fraction = total == 0      ? -1.0
                : done >= total ? 1.0
                                : (double)done / (double)total;
  return phase;
}
