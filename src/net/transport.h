/* transport.h - how a message travels along one directed edge between two
 * workers. The transfer primitive (xfer.h) is the transports' only caller,
 * and it calls them only through this table, so a transport is added
 * without touching an algorithm.
 *
 * Two transports live in shared memory, each over a bounded FIFO of K slots
 * (queue.h: sequence numbers, checksums, end of stream, timeouts, abort):
 * - copy: the sender copies its segment into a slot (packing f16 and bf16
 *   into 2 bytes, as on a real wire), the receiver reads it there;
 * - direct: the slot carries a pointer to the sender's own buffer and the
 *   receiver reduces straight from it (NCCL's direct/P2P read). The sender
 *   must not write a region it has sent until the receiver has released
 *   it: the algorithm's direct_slots (algo.h) caps the slots so it cannot.
 *
 * A third, the MPI transport (mpi_run.h), joins workers of different
 * processes.
 *
 * The calls mean what queue.h's rs__queue_* calls mean; the return codes
 * are the same.
 */
#ifndef RINGSIM_TRANSPORT_H
#define RINGSIM_TRANSPORT_H

#include "net/queue.h"

typedef struct rs_edge rs_edge_t;

typedef struct rs_transport {
  const char *name; /* "copy", "direct" */
  /* Send hdr and hdr->elems elements from src (the sender's buffer), doing
   * to the message what wire says. */
  int (*send)(rs_edge_t *e, const rs_msg_t *hdr, const void *src,
              rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns);
  /* The next message, valid until release. */
  int (*recv)(rs_edge_t *e, rs_msg_t **msg, uint64_t timeout_ns,
              uint64_t *wait_ns);
  void (*release)(rs_edge_t *e);
  /* Sender: the end of this iteration's stream. Receiver: check it. */
  void (*finish)(rs_edge_t *e);
  int (*end)(rs_edge_t *e, uint64_t timeout_ns, uint64_t *wait_ns);
  /* The sender sleeps ns, or until the run aborts (an injected stall). */
  int (*pause)(rs_edge_t *e, uint64_t ns);
  /* Wake every waiter on the edge (the run aborted). */
  void (*wake)(rs_edge_t *e);
} rs_transport_t;

extern const rs_transport_t rs__transport_copy;
extern const rs_transport_t rs__transport_direct;

/* One directed edge, from worker `from` to worker `to`. */
struct rs_edge {
  const rs_transport_t *tp;
  int from, to;
  int channel;      /* NCCL's channel whose queue it is (the ring's; 0) */
  rs_queue_t queue; /* the shared-memory transports' FIFO; over MPI, its
                     sequence numbers, checksum and packing settings */
  void *mpi;        /* the MPI transport's side of the edge (mpi/transport.c) */
};

#endif /* RINGSIM_TRANSPORT_H */
