/* topo.h - contention on a topology (ringsim.h's rs_topo_t).
 *
 * A transfer crosses shared resources (rs__topo_path): the sender's port,
 * and between nodes its NIC's send side and the receiver's NIC's receive
 * side, then the receiver's port. Each resource's bandwidth is divided
 * equally among the transfers crossing it at the same moment, and a
 * transfer goes at the pace of its most loaded resource (rs__topo_pace):
 * min over its resources of bandwidth / transfers there. The transfers
 * that cross together are counted first (rs__topo_count, into one
 * counter per resource), then each one's pace is read.
 */
#ifndef RINGSIM_TOPO_H
#define RINGSIM_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "ringsim/ringsim.h"

/* How many resources t has: 2 per worker (port out, port in) and 2 per
 * NIC (send, receive side). */
size_t rs__topo_resources(const rs_topo_t *t);
/* The resources a transfer src -> dst crosses, in order, into res: 2
 * within a node, 4 between nodes; returns how many. */
int rs__topo_path(const rs_topo_t *t, int src, int dst, uint32_t res[4]);
/* The link class whose latency the transfer has: intra within a node,
 * nic between nodes. */
const rs_link_model_t *rs__topo_class(const rs_topo_t *t, int src, int dst);
/* Add (add 1) or take away (add 0) the n transfers src[i] -> dst[i] to
 * count (rs__topo_resources counters). */
void rs__topo_count(const rs_topo_t *t, int n, const int *src, const int *dst,
                    uint32_t *count, int add);
/* The pace, in bytes per second, of the transfer src -> dst while count
 * transfers cross each resource (itself counted); *busiest (if not NULL)
 * the resource that sets it. */
uint64_t rs__topo_pace(const rs_topo_t *t, int src, int dst,
                       const uint32_t *count, int *busiest);

#endif /* RINGSIM_TOPO_H */
