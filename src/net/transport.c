/* transport.c - the two shared-memory transports (transport.h), over the
 * bounded FIFO of queue.c: they differ only in what a slot carries. */
#include "net/transport.h"

static int copy_send(rs_edge_t *e, const rs_msg_t *hdr, const void *src,
                     rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  return rs__queue_send(&e->queue, hdr, src, wire, timeout_ns, wait_ns);
}

static int direct_send(rs_edge_t *e, const rs_msg_t *hdr, const void *src,
                       rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  return rs__queue_send_ref(&e->queue, hdr, src, wire, timeout_ns, wait_ns);
}

static int recv(rs_edge_t *e, rs_msg_t **msg, uint64_t timeout_ns,
                uint64_t *wait_ns) {
  return rs__queue_recv(&e->queue, msg, timeout_ns, wait_ns);
}

static void release(rs_edge_t *e) { rs__queue_release(&e->queue); }

static void finish(rs_edge_t *e) { rs__queue_finish(&e->queue); }

static int end(rs_edge_t *e, uint64_t timeout_ns, uint64_t *wait_ns) {
  return rs__queue_end(&e->queue, timeout_ns, wait_ns);
}

static int pause_(rs_edge_t *e, uint64_t ns) {
  return rs__queue_pause(&e->queue, ns);
}

static void wake(rs_edge_t *e) { rs__queue_wake(&e->queue); }

const rs_transport_t rs__transport_copy = {"copy", copy_send, recv,   release,
                                           finish, end,       pause_, wake};

const rs_transport_t rs__transport_direct = {
    "direct", direct_send, recv, release, finish, end, pause_, wake};
