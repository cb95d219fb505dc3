/* algo/channels.h - NCCL's channels for the ring: C rings side by side,
 * each over its own part of every bucket, each along its own ring order.
 *
 * The cut. NCCL cuts one all-reduce's data between its channels in whole
 * cells, the first channels a full share each and the last the rest
 * (src/enqueue.cc, scheduleCollTasksToPlan: cellSize, cellsPerChannel,
 * countLo/countMid/countHi; src/include/device.h, ncclCollCbdPart, which
 * gives channel c its part, contiguous, as runRing in
 * src/device/all_reduce.h reads it: gridOffset, channelCount). A cell is
 * 16 KiB (32 KiB of traffic at 2 bytes of traffic a byte; LL, which
 * moves 4 times the bytes, 4 KiB), and a channel gets no less than
 * 32 KiB of traffic: a small bucket runs on fewer channels, the others
 * idle (they move no message). rs__rings_part replays it.
 *
 * The orders. On a topology NCCL's model knows (rs_nccl_system_of
 * succeeds: dgx-h100, dgx-a100), channel c's ring is
 * rs_nccl_ring_order's (nccl_rings.c: rail-aligned, each channel leaving
 * a node through another GPU and NIC). Otherwise every channel's ring is
 * 0, 1, ..., W-1: on a flat network (--net) every channel then crosses
 * every link, as they do on a real one that has one path between two
 * GPUs, and the channels share each link's bandwidth. */
#ifndef RINGSIM_ALGO_CHANNELS_H
#define RINGSIM_ALGO_CHANNELS_H

#include <stddef.h>

#include "net/topo.h"
#include "ringsim/ringsim.h"

/* (rs_rings_t, the channels' rings, is net/topo.h's: rs_shape_t holds
 * them.) */

/* The rings of net->channels channels (at least 1) over W workers of
 * elem_size-byte elements under net (identity where NCCL's model does
 * not know net's topology). RS_OK, or RS_ENOMEM with r holding nothing. */
int rs__rings_make(rs_rings_t *r, const rs_netmodel_t *net, int workers,
                   size_t elem_size);
void rs__rings_free(rs_rings_t *r);

/* How many channels an algorithm that runs on them takes unless told
 * (net->channels 0): NCCL's count for W workers on net's topology
 * (rs_nccl_channels: comm->nChannels, as ncclTopoPostset sets it for the
 * ring and the tree), or 1 where NCCL's model does not know it (a flat
 * network, a topology it cannot place, W not its nodes x GPUs). */
int rs__rings_count(const rs_netmodel_t *net, int workers);

/* The channels of a shape (at least 1). */
static inline int rs__shape_channels(rs_shape_t shape) {
  return shape.channels > 1 ? shape.channels : 1;
}

/* The worker at position p of channel ch's ring, and worker r's
 * position in it (the identity without rings). */
static inline int rs__rings_worker(rs_shape_t shape, int ch, int p) {
  const rs_rings_t *g = shape.rings;
  return g && !g->identity ? g->order[(size_t)ch * (size_t)g->workers + p]
                           : p;
}

static inline int rs__rings_pos(rs_shape_t shape, int ch, int r) {
  const rs_rings_t *g = shape.rings;
  return g && !g->identity ? g->pos[(size_t)ch * (size_t)g->workers + r] : r;
}

/* Channel ch's part of a bucket of elems elements of elem_size bytes on
 * `channels` channels (the protocol's: LL cuts finer), as NCCL cuts it:
 * [*offset, *offset + *count) of the bucket; *count 0 for an idle
 * channel. With one channel, the whole bucket. */
void rs__rings_part(size_t elems, size_t elem_size, int channels,
                      rs_protocol_t proto, int ch, size_t *offset,
                      size_t *count);

/* How many channels carry data in such a bucket (the first ones: an
 * idle channel has no part after it). */
int rs__rings_busy(size_t elems, size_t elem_size, int channels,
                      rs_protocol_t proto);

/* The shape a bucket of elems elements runs on: shape with only its busy
 * channels (the first rs__rings_busy, as the shape's rings cut it), all of
 * them when the bucket fills every one, or without rings. An idle channel
 * sends nothing, so it shares no NIC: the NICs' load a bucket's clocks
 * take (net/topo.h) is made from this shape, not from every channel's
 * rings. */
static inline rs_shape_t rs__rings_busy_shape(rs_shape_t shape, size_t elems) {
  const rs_rings_t *g = shape.rings;
  if (g && rs__shape_channels(shape) > 1)
    shape.channels =
        rs__rings_busy(elems, g->elem_size, shape.channels, g->proto);
  return shape;
}

#endif /* RINGSIM_ALGO_CHANNELS_H */
