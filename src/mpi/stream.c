/* stream.c - the trace stream: every worker's trace records to rank 0
 * while the run goes on, through one tracer thread per process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "io/trace.h"
#include "mpi/mpi_internal.h"

/* A tracer sends a ring's records once it holds half a batch, or once
 * they waited this long, or when the workers stopped. */
#define BATCH_AGE_NS 10000000u

/* Each worker records into its ring (xfer.h); the process's tracer takes
 * a ring's records in order, at most a batch at a time, once it holds half
 * a batch, or its oldest waited BATCH_AGE_NS, or the workers stopped. Rank
 * 0's tracer writes its own workers' records straight from their rings,
 * and every batch that comes from another process, into the trace's open
 * transaction (trace.h), in the order they come: each receiver's records
 * in the order it received them. Another process's tracer sends its
 * batches with MPI_Send on the trace communicator: a tracer that rank 0
 * has not yet drained waits, its workers' rings fill, and they wait too
 * (back-pressure, not memory). */

static size_t ring_held(rs_event_buf_t *buf) {
  return atomic_load_explicit(&buf->written, memory_order_acquire) -
         atomic_load_explicit(&buf->taken, memory_order_relaxed);
}

/* Should the tracer take ring's records now? */
static int due(const struct rs_mpi *m, size_t held, int finishing,
               uint64_t last_ns, uint64_t now) {
  return held && (finishing || held >= (m->batch + 1) / 2 ||
                  now - last_ns >= BATCH_AGE_NS);
}

/* Times recorded in process from, into rank 0's clock. */
static void shift_times(const struct rs_mpi *m, int from, rs_event_t *ev,
                        size_t n) {
  const int64_t shift = -m->offsets[from];
  for (size_t i = 0; i < n; i++) {
    ev[i].send_begin_ns = (uint64_t)((int64_t)ev[i].send_begin_ns + shift);
    ev[i].send_end_ns = (uint64_t)((int64_t)ev[i].send_end_ns + shift);
    ev[i].recv_begin_ns = (uint64_t)((int64_t)ev[i].recv_begin_ns + shift);
    ev[i].recv_end_ns = (uint64_t)((int64_t)ev[i].recv_end_ns + shift);
  }
}

/* This process's held records at most: its rings' fullest, plus a batch
 * in hand (sent, or for rank 0 received) if there was one. */
static void count_held(rs_run_t *run, trace_count_t *c, int in_hand) {
  struct rs_mpi *m = run->mpi;
  c->held_max = in_hand ? m->batch : 0;
  for (int r = run->first_local; r < run->local_end; r++)
    c->held_max += run->workers[r].events.held_max;
  c->bound = (uint64_t)(run->local_end - run->first_local + 1) * m->batch;
}

static void nap_ns(uint64_t *nap, int moved) {
  if (moved) {
    *nap = 20000;
    return;
  }
  rs__mpi_sleep(*nap);
  *nap = *nap < 1000000 ? 2 * *nap : 1000000;
}

/* The due rings of this process's workers, each emptied of at most one
 * batch through take (the records in at most two pieces, in place: a
 * worker writes none of those slots until taken passes them), counted in
 * c; returns whether any moved. */
typedef void take_fn(rs_run_t *run, int worker, const rs_event_t *a, size_t na,
                     const rs_event_t *b, size_t nb);

static int drain_due(rs_run_t *run, uint64_t *last, int finishing,
                     trace_count_t *c, take_fn *take) {
  struct rs_mpi *m = run->mpi;
  const int L = run->local_end - run->first_local;
  const uint64_t now = rs__now_ns();
  int moved = 0;
  for (int i = 0; i < L; i++) {
    rs_event_buf_t *buf = &run->workers[run->first_local + i].events;
    if (!buf->ring ||
        !due(m, ring_held(buf), finishing, last ? last[i] : 0, now))
      continue;
    size_t h = atomic_load_explicit(&buf->taken, memory_order_relaxed);
    size_t n = ring_held(buf) < m->batch ? ring_held(buf) : m->batch;
    size_t at = h % buf->capacity;
    size_t first = n < buf->capacity - at ? n : buf->capacity - at;
    take(run, run->first_local + i, buf->events + at, first, buf->events,
         n - first);
    atomic_store_explicit(&buf->taken, h + n, memory_order_release);
    c->records += n;
    c->batches++;
    c->batches_during += !finishing;
    if (last)
      last[i] = now;
    moved = 1;
  }
  return moved;
}

/* The tracer's message to rank 0. A rank 0 that has not taken it when
 * this process's workers have stopped, for finish_wait, has stopped
 * answering: the stream ends there. */
static void send_batch(rs_run_t *run, int bytes) {
  struct rs_mpi *m = run->mpi;
  if (m->lost >= 0)
    return;
  MPI_Request req;
  MPI_Isend(m->msg, bytes, MPI_BYTE, 0, TAG_TRACE, m->trace, &req);
  uint64_t nap = 10000, since = 0;
  for (;;) {
    int done = 0;
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done)
      return;
    if (atomic_load_explicit(&m->workers_done, memory_order_acquire)) {
      uint64_t now = rs__now_ns();
      if (!since)
        since = now;
      else if (now - since >= rs__mpi_finish_wait(run)) {
        MPI_Request_free(&req); /* (the job ends: m->msg is kept for it) */
        m->msg_kept = 1;
        rs__mpi_lose(run, 0, now - since,
                     "taking this process's trace records");
        return;
      }
    }
    rs__mpi_sleep(nap);
    nap = nap < 1000000 ? 2 * nap : 1000000;
  }
}

/* A batch to rank 0, in one message. */
static void take_send(rs_run_t *run, int worker, const rs_event_t *a, size_t na,
                      const rs_event_t *b, size_t nb) {
  struct rs_mpi *m = run->mpi;
  trace_msg_t *msg = m->msg;
  memcpy(msg->events, a, na * sizeof *a);
  memcpy(msg->events + na, b, nb * sizeof *b);
  msg->dst = worker;
  msg->count = (int32_t)(na + nb);
  send_batch(run, (int)(sizeof *msg + (na + nb) * sizeof(rs_event_t)));
}

/* A batch of rank 0's own into the trace. */
static void take_write(rs_run_t *run, int worker, const rs_event_t *a,
                       size_t na, const rs_event_t *b, size_t nb) {
  rs__trace_stream_write(run, worker, a, na);
  rs__trace_stream_write(run, worker, b, nb);
}

/* Another process's tracer: its rings to rank 0, then its end. */
static void trace_send(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  trace_msg_t *msg = m->msg;
  trace_count_t c = {0};
  const int L = run->local_end - run->first_local;
  uint64_t *last = calloc((size_t)L, sizeof *last), nap = 20000;
  for (int done = 0; !done;) {
    const int finishing =
        atomic_load_explicit(&m->workers_done, memory_order_acquire);
    int moved = drain_due(run, last, finishing, &c, take_send);
    done = finishing && !moved; /* (finishing: every ring is due) */
    if (!done)
      nap_ns(&nap, moved);
  }
  free(last);
  count_held(run, &c, c.batches > 0);
  msg->dst = -1;
  msg->count = 0;
  msg->counts = c;
  send_batch(run, (int)sizeof *msg);
}

/* Rank 0's tracer: its own rings and every other process's batches into
 * the trace, until every process has ended its stream. */
/* Is a batch that came from process from whole and its own: one of its
 * workers' records, at most a batch, and exactly as long as it says? */
static int batch_ok(const rs_run_t *run, const trace_msg_t *in, int from,
                    int bytes) {
  const struct rs_mpi *m = run->mpi;
  if (bytes < (int)sizeof *in || in->count < 0 ||
      (size_t)in->count > m->batch ||
      (size_t)bytes != sizeof *in + (size_t)in->count * sizeof(rs_event_t))
    return 0;
  const int W = run->config.workers;
  return in->dst < 0
             ? in->dst == -1 && in->count == 0
             : in->dst < W && rs__job_owner(W, run->procs, in->dst) == from;
}

static void trace_write(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  trace_msg_t *in = m->msg;
  trace_count_t *c = &m->counts[0];
  const int L = run->local_end - run->first_local;
  uint64_t *last = calloc((size_t)L, sizeof *last), nap = 20000, since = 0;
  int ends = 0;
  MPI_Request req = MPI_REQUEST_NULL;
  const int bytes = (int)(sizeof *in + m->batch * sizeof(rs_event_t));
  if (run->procs > 1)
    MPI_Irecv(in, bytes, MPI_BYTE, MPI_ANY_SOURCE, TAG_TRACE, m->trace, &req);
  for (int done = 0; !done;) {
    const int finishing =
        atomic_load_explicit(&m->workers_done, memory_order_acquire);
    int moved = 0;
    while (ends < run->procs - 1) {
      int got = 0, count = 0;
      MPI_Status st;
      int rc = MPI_Test(&req, &got, &st);
      if (rc == MPI_SUCCESS && !got)
        break;
      moved = 1;
      MPI_Get_count(&st, MPI_BYTE, &count);
      const int from = st.MPI_SOURCE;
      if (rc != MPI_SUCCESS || from <= 0 || from >= run->procs ||
          m->ended[from] || !batch_ok(run, in, from, count)) {
        /* (whatever a peer sends, nothing is written past its batch) */
        rs__run_fail(run, RS_EPROTO,
                     "rank 0 received a damaged trace batch from rank %d",
                     from);
      } else if (in->dst < 0) {
        m->counts[from] = in->counts;
        m->ended[from] = 1;
        ends++;
      } else {
        shift_times(m, from, in->events, (size_t)in->count);
        rs__trace_stream_write(run, in->dst, in->events, (size_t)in->count);
        c->received_during += !finishing;
      }
      if (ends < run->procs - 1)
        MPI_Irecv(in, bytes, MPI_BYTE, MPI_ANY_SOURCE, TAG_TRACE, m->trace,
                  &req);
    }
    moved |= drain_due(run, last, finishing, c, take_write);
    done = finishing && !moved && ends == run->procs - 1;
    if (!done && finishing && ends < run->procs - 1) {
      /* every process ends its stream once its workers stopped */
      uint64_t now = rs__now_ns();
      if (moved || !since)
        since = now;
      else if (now - since >= rs__mpi_finish_wait(run)) {
        int p = 1;
        while (p < run->procs && m->ended[p])
          p++;
        rs__mpi_lose(run, p, now - since, "ending its trace stream");
        MPI_Cancel(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        done = 1;
      }
    }
    if (!done)
      nap_ns(&nap, moved);
  }
  free(last);
  count_held(run, c, run->procs > 1);
}

static void *tracer_main(void *arg) {
  rs_run_t *run = arg;
  if (run->proc == 0)
    trace_write(run);
  else
    trace_send(run);
  return NULL;
}

size_t rs__mpi_trace_batch(const rs_run_t *run) { return ctx(run)->batch; }

int rs__mpi_trace_start(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (!run->config.traced)
    return RS_OK;
  m->streamed = 1;
  if (pthread_create(&m->tracer, NULL, tracer_main, run) == 0) {
    m->tracing = 1;
    return RS_OK;
  }
  /* No tracer: the workers record nothing (rs__mpi_finish ends the
   * stream), and the run fails before they start. */
  for (int r = run->first_local; r < run->local_end; r++) {
    rs_event_buf_t *buf = &run->workers[r].events;
    free(buf->events);
    buf->events = NULL;
    buf->ring = 0;
  }
  return rs__run_fail(run, RS_ESYS, "cannot start the MPI trace's thread");
}

/* The workers stopped: the tracer drains what is left, ends its stream
 * (rank 0: takes every process's end), and stops. */
void rs__mpi_trace_finish(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (!m->streamed)
    return;
  atomic_store_explicit(&m->workers_done, 1, memory_order_release);
  if (m->tracing) {
    RS_PTHREAD_CHECK(pthread_join(m->tracer, NULL));
    m->tracing = 0;
  } else {
    tracer_main(run);
  }
}

int rs__mpi_trace_json(const rs_run_t *run, char *buf, size_t cap) {
  const struct rs_mpi *m = run->mpi;
  if (!m || !m->streamed || run->proc != 0)
    return 0;
  size_t len = (size_t)snprintf(
      buf, cap,
      "{\"batch_records\": %zu, "
      "\"received_during_run\": %llu, "
      "\"procs\": [",
      m->batch, (unsigned long long)m->counts[0].received_during);
  for (int p = 0; p < run->procs && len < cap; p++) {
    const trace_count_t *c = &m->counts[p];
    len += (size_t)snprintf(
        buf + len, cap - len,
        "%s{\"rank\": %d, \"records\": %llu, \"batches\": %llu, "
        "\"batches_during_run\": %llu, \"records_held_max\": %llu, "
        "\"records_bound\": %llu}",
        p ? ", " : "", p, (unsigned long long)c->records,
        (unsigned long long)c->batches, (unsigned long long)c->batches_during,
        (unsigned long long)c->held_max, (unsigned long long)c->bound);
  }
  if (len + 3 > cap)
    return 0; /* (cap too small: a bug) */
  snprintf(buf + len, cap - len, "]}");
  return 1;
}
