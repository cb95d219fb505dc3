/* transport.c - the two shared-memory transports (transport.h), over the
 * bounded FIFO of channel.c: they differ only in what a slot carries. */
#include "net/transport.h"

static int copy_send(rs_edge_t *e, const rs_msg_t *hdr, const void *src,
                     rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  return rs__chan_send(&e->chan, hdr, src, wire, timeout_ns, wait_ns);
}

static int direct_send(rs_edge_t *e, const rs_msg_t *hdr, const void *src,
                       rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  return rs__chan_send_ref(&e->chan, hdr, src, wire, timeout_ns, wait_ns);
}

static int recv(rs_edge_t *e, rs_msg_t **msg, uint64_t timeout_ns,
                uint64_t *wait_ns) {
  return rs__chan_recv(&e->chan, msg, timeout_ns, wait_ns);
}

static void release(rs_edge_t *e) { rs__chan_release(&e->chan); }

static void finish(rs_edge_t *e) { rs__chan_finish(&e->chan); }

static int end(rs_edge_t *e, uint64_t timeout_ns, uint64_t *wait_ns) {
  return rs__chan_end(&e->chan, timeout_ns, wait_ns);
}

static int pause_(rs_edge_t *e, uint64_t ns) {
  return rs__chan_pause(&e->chan, ns);
}

static void wake(rs_edge_t *e) { rs__chan_wake(&e->chan); }

const rs_transport_t rs__transport_copy = {"copy", copy_send, recv,   release,
                                           finish, end,       pause_, wake};

const rs_transport_t rs__transport_direct = {
    "direct", direct_send, recv, release, finish, end, pause_, wake};
