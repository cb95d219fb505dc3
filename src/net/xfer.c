/* xfer.c - the transfer primitive (xfer.h): one message, and everything
 * around it. */
#include "net/xfer.h"

#include <assert.h>
#include <string.h>
#include <time.h>

#include "base/reduce.h"
#include "base/util.h"

rs_event_t rs__event_of(const rs_msg_t *msg, int iter) {
  rs_event_t e = {
      .seq = msg->seq,
      .checksum = msg->checksum,
      .elem_offset = msg->elem_offset,
      .send_begin_ns = msg->send_begin_ns,
      .send_end_ns = msg->send_end_ns,
      .sim_send_ns = msg->sim_send_ns,
      .elems = (uint32_t)msg->elems,
      .iter = (uint32_t)iter,
      .bucket = (uint32_t)msg->bucket,
      .step = (uint16_t)msg->step,
      .share =
          (uint16_t)(msg->sim_share < UINT16_MAX ? msg->sim_share : UINT16_MAX),
      .chunk = (uint32_t)msg->chunk,
      .segment = (uint32_t)msg->segment,
      .src = (uint16_t)msg->src,
      .contrib_first = (uint16_t)msg->contrib_first,
      .contrib_count = (uint16_t)msg->contrib_count,
      .phase = (uint8_t)msg->phase,
      .channel = (uint8_t)msg->channel};
  return e;
}

/* A message between nodes (its sim_share, the sender's clock's last_share,
 * is 0 within a node or without a topology): its bytes off node, sent or
 * received, and, when others shared its NIC side, its wire time. */
static void count_off_node(rs_worker_stats_t *st, const rs_msg_t *m,
                           uint64_t bytes, int sent) {
  if (m->sim_share == 0)
    return;
  *(sent ? &st->bytes_sent_off_node : &st->bytes_received_off_node) += bytes;
  if (m->sim_share > 1) {
    *(sent ? &st->sent_shared_ns : &st->received_shared_ns) += m->sim_wire_ns;
    if (m->sim_share > st->most_sharing)
      st->most_sharing = m->sim_share;
  }
}

/* The worker's edge to or from peer. An algorithm uses only the edges it
 * declared (algo.h), so a missing one is a bug. The search starts where
 * the last one was found: a root that walks its W-1 peers in order finds
 * each at once. */
static rs_edge_t *edge_to(const rs_link_t *links, int count, int peer,
                          int channel, int *last) {
  for (int k = 0; k < count; k++) {
    int i = (*last + k) % count;
    if (links[i].peer == peer && links[i].channel == channel) {
      *last = i;
      return links[i].edge;
    }
  }
  assert(!"the algorithm uses an edge it did not declare");
  return NULL;
}

/* The worker w's rank, and its group's member k, as workers of the run. */
static int self(const rs_worker_t *w) {
  return rs__group_worker(&w->group, w->rank);
}

static int worker(const rs_worker_t *w, int k) {
  return rs__group_worker(&w->group, k);
}

/* A tag's step and contributors as the run counts them (rs_group_t). */
static int run_step(const rs_worker_t *w, const rs_tag_t *tag) {
  return tag->step + w->group.phase_step[tag->phase];
}

static int run_contrib(const rs_worker_t *w, int members) {
  return members * (w->group.stride ? w->group.stride : 1);
}

int rs__xfer_step(rs_worker_t *w, rs_phase_t phase, int step, int global_step,
                  int first_part) {
  step += w->group.phase_step[phase];
  global_step += w->group.step_base;
  w->progress.phase = phase;
  w->progress.step = step;
  w->progress.activity = RS_ACT_WORKING;
  w->progress.peer = -1;
  w->global_step = global_step;
  rs__sim_step(&w->sim); /* a straggler computes before it can send */
  w->step_wire = RS_WIRE_OK;
  for (int i = 0; i < w->fault_count && w->bucket == 0 && first_part; i++) {
    const rs_fault_t *f = &w->faults[i];
    if (f->worker != self(w) || f->step != global_step)
      continue;
    switch (f->kind) {
    case RS_FAULT_CRASH:
      return RS_WORKER_CRASHED;
    case RS_FAULT_STALL:
      w->progress.activity = RS_ACT_STALLED;
      w->progress.stall_ms = f->ms;
      w->progress.stall_phase = phase;
      w->progress.stall_step = step;
      /* Sleep on an edge it sends on, so the run's abort wakes it. */
      rs_edge_t *e = w->out[0].edge;
      if (e->tp->pause(e, (uint64_t)f->ms * 1000000u))
        return RS_EABORTED; /* stays STALLED: what it was doing */
      w->progress.stall_end_ns = rs__now_ns();
      w->progress.activity = RS_ACT_WORKING;
      break;
    case RS_FAULT_CORRUPT:
      w->step_wire = RS_WIRE_CORRUPT;
      break;
    case RS_FAULT_DROP:
      w->step_wire = RS_WIRE_DROP;
      break;
    case RS_FAULT_DUP:
      w->step_wire = RS_WIRE_DUP;
      break;
    }
  }
  return RS_OK;
}

/* Send part's region to worker part->peer, its clock charging a transfer
 * to worker clock_dst (a put into the switch: as to a GPU of its own
 * node), or, given times, stamping the message with them (the switch's,
 * which has no clock of its own: xfer.h). */
static int send_msg(rs_worker_t *w, const rs_part_t *part, int clock_dst,
                    const rs_sim_times_t *times) {
  const int peer = part->peer;
  const size_t elems = part->elems;
  const rs_tag_t *tag = &part->tag;
  rs_edge_t *e =
      edge_to(w->out, w->out_count, peer, w->channel, &w->out_last);
  size_t off = w->base + part->offset; /* of the flat buffer */
  rs_msg_t hdr = {.bucket = (int32_t)w->bucket,
                  .phase = tag->phase,
                  .step = run_step(w, tag),
                  .chunk = tag->chunk,
                  .segment = tag->segment,
                  .src = self(w),
                  .contrib_first = run_contrib(w, tag->contrib_first),
                  .contrib_count = run_contrib(w, tag->contrib_count),
                  .channel = w->channel,
                  .elem_offset = off,
                  .elems = elems};
  w->sim.channel = (uint8_t)w->channel; /* (its channel's streaming state) */
  if (times) {
    hdr.sim_send_ns = times->depart;
    hdr.sim_arrive_ns = times->arrive;
    hdr.sim_wire_ns = times->wire;
    hdr.sim_share = times->share;
  } else {
    rs__sim_send(&w->sim, clock_dst, w->global_step, elems * w->elem_size,
                 (size_t)tag->segment, &hdr.sim_send_ns, &hdr.sim_arrive_ns,
                 &hdr.sim_wire_ns); /* simulated time, when modelled */
    hdr.sim_share = w->sim.last_share;
  }
  w->progress.chunk = tag->chunk;
  w->progress.activity = RS_ACT_SENDING;
  w->progress.peer = peer;
  w->progress.edge = e;
  rs_wire_t wire = w->step_wire; /* a wire fault hits the step's first */
  w->step_wire = RS_WIRE_OK;
  int rc = e->tp->send(e, &hdr, w->buf + off * w->buf_elem_bytes, wire,
                       w->timeout_ns, &w->stats.wait_ns);
  if (rc)
    return rc;
  w->stats.transfers_sent++;
  w->stats.bytes_sent += elems * w->elem_size;
  count_off_node(&w->stats, &hdr, elems * w->elem_size, 1);
  return RS_OK;
}

int rs__xfer_send(rs_worker_t *w, int member, size_t offset, size_t elems,
                  const rs_tag_t *tag) {
  const rs_part_t part = {worker(w, member), offset, elems, *tag};
  return send_msg(w, &part, part.peer, NULL);
}

/* Append the transfer msg, just reduced or copied by its receiver, to the
 * worker's record. The buffer was sized for every transfer of the run. */
static void record(rs_worker_t *w, const rs_msg_t *msg, uint64_t recv_begin_ns,
                   uint64_t wait_ns, uint64_t sim_recv_ns) {
  rs_event_buf_t *buf = &w->events;
  if (!buf->events)
    return; /* not tracing */
  size_t taken = 0;
  if (buf->ring) { /* wait for room: the tracer drains it, always */
    taken = atomic_load_explicit(&buf->taken, memory_order_acquire);
    for (uint64_t nap = 10000; buf->count - taken == buf->capacity;) {
      struct timespec ts = {0, (long)nap};
      nanosleep(&ts, NULL);
      nap = nap < 500000 ? 2 * nap : 500000;
      taken = atomic_load_explicit(&buf->taken, memory_order_acquire);
    }
  } else if (buf->count == buf->capacity) { /* only a bug sizes it small */
    assert(!"a trace buffer was sized too small");
    return;
  }
  rs_event_t *e =
      &buf->events[buf->ring ? buf->count % buf->capacity : buf->count];
  buf->count++;
  *e = rs__event_of(msg, w->iter);
  e->recv_begin_ns = recv_begin_ns;
  e->recv_end_ns = rs__now_ns();
  e->wait_ns = wait_ns;
  e->sim_recv_ns = sim_recv_ns;
  if (buf->ring) {
    if (buf->count - taken > buf->held_max)
      buf->held_max = buf->count - taken;
    atomic_store_explicit(&buf->written, buf->count, memory_order_release);
  }
}

/* How a receive moves the receiver's clock: as any (rs__sim_recv); as the
 * switch's sum coming down to its head, the message saying when the switch
 * held every copy (rs__sim_switch_result); or not at all (the switch,
 * which has no clock: the message's times go to *times). */
typedef enum { CLOCK_RECV, CLOCK_SUM, CLOCK_NONE } clocking_t;

static int recv_msg(rs_worker_t *w, const rs_part_t *part,
                    rs_recv_action_t action, clocking_t clocking,
                    rs_sim_times_t *times) {
  const int peer = part->peer;
  const size_t elems = part->elems;
  const rs_tag_t *tag = &part->tag;
  rs_edge_t *e =
      edge_to(w->in, w->in_count, peer, w->channel, &w->in_last);
  size_t off = w->base + part->offset;
  rs_msg_t *msg;
  w->progress.chunk = tag->chunk;
  w->progress.activity = RS_ACT_RECEIVING;
  w->progress.peer = peer;
  w->progress.edge = e;
  uint64_t recv_begin = rs__now_ns(), waited = w->stats.wait_ns;
  int rc = e->tp->recv(e, &msg, w->timeout_ns, &w->stats.wait_ns);
  if (rc)
    return rc;
  /* The sender must have sent exactly the region we expect, holding the
   * contributions its schedule says. */
  if (msg->chunk != tag->chunk || msg->channel != w->channel ||
      msg->elem_offset != off ||
      msg->elems != elems ||
      msg->contrib_first != run_contrib(w, tag->contrib_first) ||
      msg->contrib_count != run_contrib(w, tag->contrib_count)) {
    w->progress.mismatch = 1; /* in sequence, but not what was expected */
    return RS_EPROTO;
  }
  w->progress.activity = RS_ACT_WORKING; /* reducing: blocked on nobody */
  void *dst = w->buf + off * w->buf_elem_bytes;
  const void *src = msg->data;
  /* f16/bf16 arrive packed in 2 bytes: a fold needs them back in float
   * beside the buffer; a copy unpacks straight into place, below */
  if (w->unpack && action != RS_RECV_COPY) {
    w->unpack(w->unpacked, src, elems);
    src = w->unpacked;
  }
  switch (action) {
  case RS_RECV_REDUCE: /* in the buffers' type, rounded to the dtype */
    rs__fold(w->dtype, dst, src, elems, w->op, 0);
    break;
  case RS_RECV_REDUCE_MEAN:
    rs__fold(w->dtype, dst, src, elems, w->op, w->shape.workers);
    break;
  case RS_RECV_COPY:
    if (w->unpack)
      w->unpack(dst, src, elems);
    else if (elems)
      memcpy(dst, src, elems * w->buf_elem_bytes);
    break;
  }
  w->sim.channel = (uint8_t)w->channel;
  uint64_t sim_recv = msg->sim_arrive_ns;
  if (clocking == CLOCK_RECV) {
    sim_recv = rs__sim_recv(&w->sim, msg->sim_arrive_ns, msg->sim_wire_ns,
                            action == RS_RECV_COPY ? 0 : elems * w->elem_size,
                            (size_t)msg->segment,
                            msg->sim_share != 0 /* (from another node) */);
  } else if (clocking == CLOCK_SUM) {
    w->sim.switch_ready = msg->sim_arrive_ns;
    sim_recv = rs__sim_switch_result(&w->sim, elems * w->elem_size,
                                     (size_t)msg->segment);
  } else {
    *times = (rs_sim_times_t){msg->sim_send_ns, msg->sim_arrive_ns,
                              msg->sim_wire_ns, msg->sim_share};
  }
  record(w, msg, recv_begin, w->stats.wait_ns - waited, sim_recv);
  count_off_node(&w->stats, msg, elems * w->elem_size, 0); /* (msg: the slot) */
  e->tp->release(e);
  w->stats.bytes_received += elems * w->elem_size;
  return RS_OK;
}

int rs__xfer_recv(rs_worker_t *w, int member, size_t offset, size_t elems,
                  const rs_tag_t *tag, rs_recv_action_t action) {
  const rs_part_t part = {worker(w, member), offset, elems, *tag};
  return recv_msg(w, &part, action, CLOCK_RECV, NULL);
}

int rs__xfer_put(rs_worker_t *w, size_t offset, size_t elems,
                 const rs_tag_t *tag) {
  const rs_part_t part = {rs__switch_of(w->shape, self(w)), offset, elems,
                          *tag};
  return send_msg(w, &part, self(w), NULL);
}

int rs__xfer_take(rs_worker_t *w, size_t offset, size_t elems,
                  const rs_tag_t *tag, int sum) {
  const rs_part_t part = {rs__switch_of(w->shape, self(w)), offset, elems,
                          *tag};
  return recv_msg(w, &part, RS_RECV_COPY, sum ? CLOCK_SUM : CLOCK_RECV, NULL);
}

int rs__xfer_switch_take(rs_worker_t *sw, const rs_part_t *from,
                         rs_recv_action_t action, rs_sim_times_t *times) {
  return recv_msg(sw, from, action, CLOCK_NONE, times);
}

int rs__xfer_switch_give(rs_worker_t *sw, const rs_part_t *to,
                         const rs_sim_times_t *times) {
  return send_msg(sw, to, to->peer, times);
}

size_t rs__xfer_segs(const rs_worker_t *w, size_t elems) {
  return rs__segs(elems, w->seg_cap);
}

/* Segment k of segs of a part's region. */
static void segment(const rs_part_t *p, size_t segs, size_t k, size_t *off,
                    size_t *len) {
  *off = p->offset + rs__chunk_offset(p->elems, (int)segs, (int)k);
  *len = rs__chunk_elems(p->elems, (int)segs, (int)k);
}

int rs__xfer_send_all(rs_worker_t *w, rs_part_t *send, size_t segs) {
  for (size_t k = 0; k < segs; k++) {
    size_t off, len;
    segment(send, segs, k, &off, &len);
    send->tag.segment = (int)k;
    int rc = rs__xfer_send(w, send->peer, off, len, &send->tag);
    if (rc)
      return rc;
  }
  return RS_OK;
}

int rs__xfer_recv_all(rs_worker_t *w, rs_part_t *recv, rs_recv_action_t action,
                      size_t segs) {
  for (size_t k = 0; k < segs; k++) {
    size_t off, len;
    segment(recv, segs, k, &off, &len);
    recv->tag.segment = (int)k;
    int rc = rs__xfer_recv(w, recv->peer, off, len, &recv->tag, action);
    if (rc)
      return rc;
  }
  return RS_OK;
}

int rs__xfer_sendrecv(rs_worker_t *w, rs_part_t *send, rs_part_t *recv,
                      rs_recv_action_t action, size_t segs) {
  for (size_t k = 0; k < segs; k++) {
    size_t off, len;
    segment(send, segs, k, &off, &len);
    send->tag.segment = recv->tag.segment = (int)k;
    int rc = rs__xfer_send(w, send->peer, off, len, &send->tag);
    if (rc)
      return rc;
    segment(recv, segs, k, &off, &len);
    if ((rc = rs__xfer_recv(w, recv->peer, off, len, &recv->tag, action)))
      return rc;
  }
  return RS_OK;
}

void rs__xfer_stash(rs_worker_t *w) {
  assert(w->stash && "the algorithm stashes without asking for a stash");
  memcpy(w->stash, w->buf + w->base * w->buf_elem_bytes,
         w->elems * w->buf_elem_bytes);
}

void rs__xfer_unstash(rs_worker_t *w, rs_recv_action_t action) {
  void *dst = w->buf + w->base * w->buf_elem_bytes;
  assert(action != RS_RECV_COPY);
  rs__fold(w->dtype, dst, w->stash, w->elems, w->op,
           action == RS_RECV_REDUCE_MEAN ? w->shape.workers : 0);
}

int rs__xfer_finish(rs_worker_t *w) {
  for (int i = 0; i < w->out_count; i++)
    w->out[i].edge->tp->finish(w->out[i].edge);
  w->progress.activity = RS_ACT_FINISHING;
  for (int i = 0; i < w->in_count; i++) {
    rs_edge_t *e = w->in[i].edge;
    w->progress.peer = w->in[i].peer;
    w->progress.edge = e;
    int rc = e->tp->end(e, w->timeout_ns, &w->stats.wait_ns);
    if (rc)
      return rc;
  }
  return RS_OK;
}
