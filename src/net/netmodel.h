/* netmodel.h - a worker's simulated clock under the alpha-beta link model.
 *
 * The ring and the schedule-only simulation drive the same three calls, so
 * the threaded run's simulated time and `ringsim model`'s agree exactly.
 * Clocks are integer nanoseconds; each charge rounds up on its own, so the
 * timeline is the same bit for bit whatever the threads' schedule.
 */
#ifndef RINGSIM_NETMODEL_H
#define RINGSIM_NETMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "net/proto.h"
#include "net/topo.h"
#include "ringsim/ringsim.h"

typedef struct rs_simclock {
  const rs_netmodel_t *net; /* NULL: no simulated time */
  int rank;                 /* whose clock */
  rs_link_model_t out;      /* the link to the next worker (with a
                               topology: its intra link) */
  /* With a topology of more than one node: the schedule's load on its
   * NICs, which gives each transfer its link (topo.h); NULL: every
   * transfer takes out. */
  const rs_topo_load_t *load;
  int node_first; /* with load: its node's first worker (rs__sim_set_load) */
  /* The last share rs__topo_sharing gave (a worker sends a step's
   * segments to the same peer): for load, dst and step. */
  const rs_topo_load_t *memo_load;
  int memo_dst, memo_step;
  uint32_t memo_share;
  /* The last segment sent: between nodes the GPUs that shared its NIC
   * side (rs__topo_sharing, at least 1); 0 within a node or without a
   * topology. The trace's share. */
  uint32_t last_share;
  /* The last wire time charged: for wire_bytes bytes at wire_share (a
   * topology's sharing; UINT32_MAX within a node or without one). A
   * worker sends a step's near-equal segments alike, and the division
   * it saves is 128 bits wide. wire_share 0: none yet. */
  size_t wire_bytes;
  uint32_t wire_share;
  uint64_t wire_ns;
  uint64_t straggler_ns; /* compute charged at each step's start */
  uint64_t clock;        /* this worker's simulated now */
  uint64_t link_free;    /* when the outgoing link can take a segment */
  uint64_t in_free;      /* when its incoming port has taken the last */
  /* With a topology of more than one node, the GPU's NIC side (over PCIe
   * to its NIC, beside its NVLink port): when it can send a segment to
   * another node, and when it has taken the last from one. A transfer
   * between nodes takes these, not link_free and in_free; one within a
   * node, those alone. */
  uint64_t nic_free, nic_in_free;
  /* The transfers its ports have taken, ever, and the number of the last
   * each port (RS_PORT_*) took: whoever keeps a state (algo/simrun.h)
   * tells by them which ports a part of a schedule used, and so which
   * must have moved (rs__sim_use). */
  uint64_t transfers, port_last[4];
  /* Streaming (rs__sim_stream: an algorithm whose segment j of a step
   * sends what segment j of the step before received, RS__CAP_STREAM):
   * a segment leaves as soon as its data is ready, the link is free and
   * the receiver has a slot, not after the worker's other receives.
   * seg_ready[j]: when segment j's data is ready (its last receive done,
   * or the bucket's start), seg_cap of them. slot_arrive: when the last
   * segments sent arrive, a ring of slot_cap (min(slots, the messages a
   * bucket sends): the slot rule binds from message `slots` on); slot_n:
   * the bucket's sends so far. docs/algorithms.md, "Pipelined links".
   * Channels (the ring's: rs_netmodel_t's channels; else 1): each has
   * all of that of its own, channel ch's at seg_ready + ch seg_cap, the
   * arrivals at slot_arrive + ch slot_cap,
   * RS_SIM_CHANNEL(c, SENT, ch) (its messages sent), and its own clock,
   * RS_SIM_CHANNEL(c, CLOCK, ch), when its last receive was taken and
   * reduced (each channel reduces on its own SMs, as NCCL gives each its
   * own thread block). The worker's two ports are shared equally by its
   * `busy` channels (those with data in the bucket), as topo.h shares a
   * NIC: channel ch's share of the outgoing port is free at
   * RS_SIM_CHANNEL(c, LINK, ch), of the incoming one at
   * RS_SIM_CHANNEL(c, IN, ch), of the NIC side's at RS_SIM_CHANNEL(c,
   * NIC, ch) and RS_SIM_CHANNEL(c, NIC_IN, ch). The NVLink port is
   * shared by the on_node busy channels (those that send within the
   * node), the NIC side by the off_node ones (those that send to another
   * node): a segment takes that many times its wire time on its port
   * (netmodel.c's channel_wire); link_free, in_free, nic_free and
   * nic_in_free are then the latest of them, and
   * clock the latest of the channels' clocks. channel: the channel of the
   * next rs__sim_send or rs__sim_recv, which its caller sets. One channel
   * is the ring as it was: the whole ports, link_free and in_free.
   * A schedule that does not stream (the tree) runs on channels too:
   * each its own clock and shares of the ports, as above, but no
   * segments or slots of its own (seg_cap and slot_cap 0: a segment
   * leaves after its channel's last receive, as one channel's does).
   * on_channels: either way, c->channels > 1 with its words set. alone:
   * a schedule simulation plays channel `channel` by itself (tree.c), so
   * a step's straggler delays that channel's clock alone. */
  int stream, slots;
  uint8_t channels, channel, busy, on_channels, alone;
  /* of the busy channels, those it sends off node on, and those it sends
   * within its node on (a tree's chain leader does both on one channel) */
  uint8_t off_node, on_node;
  uint64_t *seg_ready, *slot_arrive;
  uint64_t *channel_words; /* (the channels' own: RS_SIM_CHANNEL) */
  size_t seg_cap, slot_cap, slot_n;
  /* The protocol (net/proto.h): its wire bytes; its launch latency, paid
   * at each bucket's start (rs__sim_launch); a transfer between nodes'
   * latency (rs__sim_init: the NIC's, or the protocol's NET hop). */
  rs_protocol_t proto;
  uint64_t launch_ns, nic_latency_ns;
  /* NVLink SHARP (algo/nvls.c): the route of the transfer at hand
   * (RS_ROUTE_*, set around one send or receive), when the switch holds
   * every contribution to the sum this worker heads so far, and the last
   * send's times (a multicast's copies leave with it). */
  int route;
  uint64_t switch_ready;
  uint64_t stream_start; /* streaming: the bucket's start (rs__sim_stream) */
  uint64_t last_depart, last_arrive, last_wire;
} rs_simclock_t;

/* How a transfer goes (rs_simclock_t's route): over the link; into the
 * NVLink switch, which sums the contributions itself (a send leaves on
 * the sender's link; its receipt is the switch's, not the head's port);
 * or as one more copy of the multicast just sent (the switch replicates
 * it: no more time on the sender's link). */
enum { RS_ROUTE_LINK, RS_ROUTE_SWITCH, RS_ROUTE_MULTICAST };
/* A streaming clock's words for each of its channels after the arrivals:
 * each channel's clock, messages sent, and shares of the four ports
 * (RS_SIM_CHANNEL(c, CLOCK, ch), ...): RS_SIM_CHANNEL_WORDS a channel,
 * channel by channel. */
enum {
  RS_SIM_CHANNEL_CLOCK,
  RS_SIM_CHANNEL_SENT,
  RS_SIM_CHANNEL_LINK,
  RS_SIM_CHANNEL_IN,
  RS_SIM_CHANNEL_NIC,
  RS_SIM_CHANNEL_NIC_IN,
  RS_SIM_CHANNEL_WORDS
};
/* A worker's four ports (rs_simclock_t's port_last): its NVLink port
 * out and in, and its NIC side out and in. */
enum { RS_PORT_LINK, RS_PORT_IN, RS_PORT_NIC, RS_PORT_NIC_IN };

/* c's port takes a transfer. */
static inline void rs__sim_use(rs_simclock_t *c, int port) {
  c->port_last[port] = ++c->transfers;
}
/* (a channel's words side by side: the one a channel playing alone
 * reads lie in one cache line) */
#define RS_SIM_CHANNEL(c, which, ch)                                           \
  ((c)->channel_words[RS_SIM_CHANNEL_WORDS * (size_t)(ch) +                    \
                      RS_SIM_CHANNEL_##which])

/* The slots a model gives a connection: its own, or NCCL_STEPS (8). */
static inline int rs__sim_slots(const rs_netmodel_t *m) {
  if (!m || m->slots <= 0)
    return 8;
  return m->slots < RS_MAX_SLOTS ? m->slots : RS_MAX_SLOTS;
}

/* ceil(bytes * 1e9 / rate) nanoseconds; 0 for a zero rate (free). */
static inline uint64_t rs__net_ns(size_t bytes, uint64_t rate) {
  if (rate == 0 || bytes == 0)
    return 0;
  if (bytes <= UINT64_MAX / 2 / 1000000000u && rate <= UINT64_MAX / 2)
    return (bytes * 1000000000u + rate - 1) / rate; /* (64 do) */
  unsigned __int128 num = (unsigned __int128)bytes * 1000000000u;
  unsigned __int128 ns = (num + rate - 1) / rate;
  return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/* The time on the flat network m's link of bytes of data: its
 * protocol's wire bytes at the link's bandwidth (the cost formulas'). */
static inline uint64_t rs__net_wire_ns(const rs_netmodel_t *m, size_t bytes) {
  return rs__net_ns((size_t)rs__proto_wire_bytes(m->proto, bytes),
                    m->link.bandwidth);
}

/* a + b, or UINT64_MAX where it would wrap: a simulated clock saturates
 * rather than run backwards (a run refuses a network that could get there:
 * rs__sim_bound_ns; ringsim model says so of a time past RS_SIM_NS_MAX). */
static inline uint64_t rs__sat_add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The longest simulated time a run, a trace and --json hold: 2^63 - 1 ns
 * (292 years). */
#define RS_SIM_NS_MAX ((uint64_t)INT64_MAX)

/* An upper bound on the simulated time of a schedule of `messages`
 * messages in all (every worker's, every iteration's), none larger than
 * max_bytes, and `steps` steps in all (every worker's), under m: each
 * message's latency, its wire time out and in at the slowest rate any
 * link or shared NIC has, and its reduction, plus every step's
 * straggler. */
double rs__sim_bound_ns(const rs_netmodel_t *m, double messages,
                        double max_bytes, double steps);

/* The worker can start no earlier than at (a training step: its bucket's
 * gradients are ready then). */
static inline void rs__sim_start_at(rs_simclock_t *c, uint64_t at) {
  if (c->net && at > c->clock)
    c->clock = at;
}

/* A bucket's all-reduce is launched: its protocol's launch latency. */
static inline void rs__sim_launch(rs_simclock_t *c) {
  if (c->net)
    c->clock = rs__sat_add(c->clock, c->launch_ns);
}

/* A step begins: a straggler computes first (a streaming worker's
 * straggler delays each segment it sends instead: rs__sim_send). */
static inline void rs__sim_step(rs_simclock_t *c) {
  if (!c->net || c->stream)
    return;
  c->clock = rs__sat_add(c->clock, c->straggler_ns);
  for (size_t ch = 0; c->on_channels && ch < c->channels; ch++)
    if (!c->alone || ch == c->channel)
      RS_SIM_CHANNEL(c, CLOCK, ch) =
          rs__sat_add(RS_SIM_CHANNEL(c, CLOCK, ch), c->straggler_ns);
}

/* The words of memory a streaming worker's clock needs for `rings`
 * rings of seg_cap segments and slot_cap arrivals kept each
 * (rs__sim_stream's mem). */
static inline size_t rs__sim_stream_words(int rings, size_t seg_cap,
                                          size_t slot_cap) {
  const size_t kept = seg_cap + slot_cap; /* (and a ring's own words) */
  return (size_t)(rings > 1 ? rings : 1) * (kept + RS_SIM_CHANNEL_WORDS);
}

/* A bucket begins on worker c: it runs a streaming algorithm (stream 1)
 * or sends each segment after its receive before it (0). Streaming, on
 * each of its C = c->channels channels the data of its first `segs`
 * segments is ready now, and none of its slots is taken: the caller's
 * memory, seg_ready (C seg_cap words), slot_arrive (C slot_cap) and
 * channel_words (RS_SIM_CHANNEL_WORDS C); mem_of lays out one block of
 * rs__sim_stream_words. */
typedef struct rs_sim_mem {
  uint64_t *seg_ready, *slot_arrive;
  uint64_t *channel_words; /* (the channels' own: RS_SIM_CHANNEL) */
} rs_sim_mem_t;

static inline rs_sim_mem_t rs__sim_mem_of(uint64_t *mem, int channels,
                                          size_t seg_cap, size_t slot_cap) {
  const size_t C = (size_t)(channels > 1 ? channels : 1);
  rs_sim_mem_t m = {mem, mem ? mem + C * seg_cap : NULL,
                    mem ? mem + C * (seg_cap + slot_cap) : NULL};
  return m;
}

static inline void rs__sim_stream(rs_simclock_t *c, int stream, size_t segs,
                                  rs_sim_mem_t mem, size_t seg_cap,
                                  size_t slot_cap) {
  const size_t C = (size_t)c->channels;
  c->stream = stream && seg_cap && mem.seg_ready;
  c->seg_cap = seg_cap;
  c->slot_cap = slot_cap;
  c->channel = 0;
  c->stream_start = c->clock;
  c->on_channels = 0;
  if (!c->stream) {
    /* (channels without streaming: their clocks and ports alone) */
    if (C < 2 || !mem.channel_words)
      return;
    c->seg_cap = c->slot_cap = 0;
    segs = 0;
  } else {
    c->seg_ready = mem.seg_ready;
    c->slot_arrive = mem.slot_arrive;
  }
  c->channel_words = mem.channel_words;
  c->on_channels = C > 1;
  c->slot_n = 0;
  c->busy = (uint8_t)C;
  for (size_t ch = 0; ch < C; ch++) {
    for (size_t j = 0; j < segs && j < c->seg_cap; j++)
      c->seg_ready[ch * seg_cap + j] = c->clock;
    RS_SIM_CHANNEL(c, CLOCK, ch) = c->clock;
    RS_SIM_CHANNEL(c, SENT, ch) = 0;
    RS_SIM_CHANNEL(c, LINK, ch) = c->link_free;
    RS_SIM_CHANNEL(c, IN, ch) = c->in_free;
    RS_SIM_CHANNEL(c, NIC, ch) = c->nic_free;
    RS_SIM_CHANNEL(c, NIC_IN, ch) = c->nic_in_free;
  }
}

/* The bucket under way has data on `busy` of c's channels (the first
 * ones: algo/channels.h); on on_node of them it sends within its node,
 * which share its NVLink port, and on off_node to another node, which
 * share its NIC side (a channel may do both). */
static inline void rs__sim_busy(rs_simclock_t *c, int busy, int on_node,
                                int off_node) {
  if (c->on_channels) {
    c->busy = (uint8_t)(busy > 1 ? busy : 1);
    c->on_node = (uint8_t)on_node;
    c->off_node = (uint8_t)off_node;
  }
}

/* Does a transfer from c's worker to worker dst leave its node (so through
 * its NIC side)? Only with a topology of more than one node. */
static inline int rs__sim_off_node(const rs_simclock_t *c, int dst) {
  return c->load &&
         (unsigned)(dst - c->node_first) >= (unsigned)c->load->topo.gpus;
}

/* a x b, or UINT64_MAX where it would wrap. */
static inline uint64_t rs__sat_mul(uint64_t a, uint64_t b) {
  return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* rs__sim_send and rs__sim_recv on NCCL's channels (c->on_channels),
 * on channel c->channel: its own segments, clock and messages in
 * flight, its share
 * of the ports (netmodel.c). bytes: on the wire; wire: their time alone. */
void rs__sim_send_channel(rs_simclock_t *c, size_t seg, size_t bytes,
                       uint64_t wire, uint64_t latency, uint64_t *depart_ns,
                       uint64_t *arrive_ns, uint64_t *wire_ns);
uint64_t rs__sim_recv_channel(rs_simclock_t *c, uint64_t arrive_ns,
                              uint64_t wire_ns, size_t reduced_bytes,
                              size_t seg, int nic);

/* The room a streaming worker needs for a schedule whose chunks are cut
 * into at most segs segments and which sends at most `messages` messages
 * on a connection in a bucket: seg_cap (segs) and slot_cap (the slots,
 * or fewer where fewer messages go: then the slot rule never binds). */
static inline size_t rs__sim_slot_cap(const rs_netmodel_t *m,
                                      size_t messages) {
  const size_t slots = (size_t)rs__sim_slots(m);
  return messages < slots ? messages : slots;
}

/* Segment seg (of its chunk) of bytes leaves for worker dst in the
 * algorithm's global step `step`: when its data, the worker's link and (a
 * streaming worker's) a slot at the receiver are ready; it arrives latency
 * + bytes/bandwidth later, having taken wire_ns on the wire. The link is
 * out, or under a topology the one topo.h gives the transfer. */
static inline void rs__sim_send(rs_simclock_t *c, int dst, int step,
                                size_t bytes, size_t seg, uint64_t *depart_ns,
                                uint64_t *arrive_ns, uint64_t *wire_ns) {
  if (!c->net) {
    *depart_ns = *arrive_ns = *wire_ns = 0;
    return;
  }
  if (__builtin_expect(c->route == RS_ROUTE_MULTICAST, 0)) { /* (a copy) */
    *depart_ns = c->last_depart;
    *arrive_ns = c->last_arrive;
    *wire_ns = c->last_wire;
    return;
  }
  /* the link: out (a topology's intra link), or between nodes the NIC's
   * latency and its share of the NIC (topo.h) */
  uint64_t latency = c->out.latency_ns, wire;
  bytes = (size_t)rs__proto_wire_bytes(c->proto, bytes); /* (on the wire) */
  c->last_share = 0;
  if (rs__sim_off_node(c, dst)) { /* (another node) */
    if (c->memo_load != c->load || c->memo_dst != dst || c->memo_step != step) {
      if (c->memo_load != c->load)
        c->wire_share = 0; /* (another load: another topology) */
      c->memo_share = rs__topo_sharing(c->load, c->rank, dst, step);
      c->memo_load = c->load;
      c->memo_dst = dst;
      c->memo_step = step;
    }
    c->last_share = c->memo_share;
    latency = c->nic_latency_ns;
    if (c->wire_bytes != bytes || c->wire_share != c->memo_share) {
      c->wire_ns = rs__topo_wire_ns(&c->load->topo, c->memo_share, bytes);
      c->wire_bytes = bytes;
      c->wire_share = c->memo_share;
    }
  } else if (c->wire_bytes != bytes || c->wire_share != UINT32_MAX) {
    c->wire_ns = rs__net_ns(bytes, c->out.bandwidth);
    c->wire_bytes = bytes;
    c->wire_share = UINT32_MAX;
  }
  wire = c->wire_ns;
  /* Pipelined links: a segment leaves once its data is ready (streaming:
   * segment seg's last receive, and a straggler's compute; a put into the
   * NVLink switch, the worker's own data: the bucket's start; else after
   * the worker's last receive), the link is free, and (streaming) the
   * receiver has a slot: the message `slots` before it on the connection
   * has arrived. */
  rs__sim_use(c, c->last_share ? RS_PORT_NIC : RS_PORT_LINK);
  if (__builtin_expect(c->on_channels, 0)) { /* (channels) */
    rs__sim_send_channel(c, seg, bytes, wire, latency, depart_ns, arrive_ns,
                         wire_ns);
    return;
  }
  uint64_t ready = c->clock;
  if (c->stream && c->route == RS_ROUTE_SWITCH)
    ready = rs__sat_add(c->stream_start, c->straggler_ns);
  else if (c->stream && seg < c->seg_cap)
    ready = rs__sat_add(c->seg_ready[seg], c->straggler_ns);
  /* (the NVLink port, or between nodes the NIC side) */
  const int nic = c->last_share != 0;
  uint64_t *const port = nic ? &c->nic_free : &c->link_free;
  uint64_t depart = ready > *port ? ready : *port;
  if (c->stream && c->slot_n >= (size_t)c->slots &&
      c->slot_cap == (size_t)c->slots) {
    const uint64_t freed = c->slot_arrive[c->slot_n % c->slot_cap];
    depart = freed > depart ? freed : depart;
  }
  *port = rs__sat_add(depart, wire);
  *depart_ns = depart;
  *arrive_ns = rs__sat_add(*port, latency);
  *wire_ns = wire;
  if (c->stream && c->slot_cap)
    c->slot_arrive[c->slot_n % c->slot_cap] = *arrive_ns;
  c->slot_n++;
  c->last_depart = depart;
  c->last_arrive = *arrive_ns;
  c->last_wire = wire;
}

/* The time on the wire rs__sim_send would charge a segment of bytes
 * from c's worker to dst in the algorithm's step `step` (its NIC load
 * placed), without sending it: what a bound on the time still to come
 * counts. */
static inline uint64_t rs__sim_wire_ns(const rs_simclock_t *c, int dst,
                                       int step, size_t bytes) {
  if (!c->net)
    return 0;
  bytes = (size_t)rs__proto_wire_bytes(c->proto, bytes);
  if (rs__sim_off_node(c, dst))
    return rs__topo_wire_ns(
        &c->load->topo, rs__topo_sharing(c->load, c->rank, dst, step), bytes);
  return rs__net_ns(bytes, c->out.bandwidth);
}

/* A segment that would have arrived at arrive_ns, after wire_ns on the wire,
 * is received. A worker has one incoming port as it has one outgoing link
 * (and with a topology of several nodes one more of each on its NIC side:
 * nic, the segment came from another node): a segment comes in after the
 * one it received through the same port before it (so a root that many
 * send to takes their segments one after another; a ring's, which its one
 * sender spaces already, are never held up). The clock moves to then if
 * it is later, and reduced_bytes of it are reduced: segment seg's data is
 * then ready (streaming). Returns when it was received. */
static inline uint64_t rs__sim_recv(rs_simclock_t *c, uint64_t arrive_ns,
                                    uint64_t wire_ns, size_t reduced_bytes,
                                    size_t seg, int nic) {
  if (!c->net)
    return 0;
  /* (into the switch, which sums it: not this port) */
  if (__builtin_expect(c->route == RS_ROUTE_SWITCH, 0)) {
    if (arrive_ns > c->switch_ready)
      c->switch_ready = arrive_ns;
    return arrive_ns;
  }
  rs__sim_use(c, nic ? RS_PORT_NIC_IN : RS_PORT_IN);
  if (__builtin_expect(c->on_channels, 0)) /* (channels) */
    return rs__sim_recv_channel(c, arrive_ns, wire_ns, reduced_bytes, seg, nic);
  uint64_t *const port = nic ? &c->nic_in_free : &c->in_free;
  if (rs__sat_add(*port, wire_ns) > arrive_ns)
    arrive_ns = rs__sat_add(*port, wire_ns);
  *port = arrive_ns;
  if (arrive_ns > c->clock)
    c->clock = arrive_ns;
  uint64_t received = c->clock;
  c->clock =
      rs__sat_add(c->clock, rs__net_ns(reduced_bytes, c->net->reduce_rate));
  if (c->stream && seg < c->seg_cap &&
      c->route != RS_ROUTE_MULTICAST) /* (segment seg's data, for its next
                                         step's send; a multicast's copy is
                                         sent on by no one) */
    c->seg_ready[seg] = c->clock;
  return received;
}

/* NVLink SHARP: the worker puts its own contribution of bytes to the sum
 * it heads into the switch (over its link, as any put). */
static inline void rs__sim_switch_put(rs_simclock_t *c, int step, size_t bytes,
                                      size_t seg) {
  uint64_t depart, arrive, wire;
  if (!c->net)
    return;
  const int route = c->route;
  c->route = RS_ROUTE_SWITCH;
  rs__sim_send(c, c->rank, step, bytes, seg, &depart, &arrive, &wire);
  c->route = route;
  if (arrive > c->switch_ready)
    c->switch_ready = arrive;
}

/* The switch, holding every contribution, sends the sum of bytes (segment
 * seg) down to the worker that heads it: a latency and its wire time after
 * the last came in, through the worker's incoming port. The worker has it
 * then (streaming: segment seg's data is ready to multicast); returns
 * when. */
static inline uint64_t rs__sim_switch_result(rs_simclock_t *c, size_t bytes,
                                             size_t seg) {
  if (!c->net)
    return 0;
  const uint64_t wire = rs__net_ns(
      (size_t)rs__proto_wire_bytes(c->proto, bytes), c->out.bandwidth);
  uint64_t at = rs__sat_add(rs__sat_add(c->switch_ready, c->out.latency_ns),
                            wire);
  if (rs__sat_add(c->in_free, wire) > at)
    at = rs__sat_add(c->in_free, wire);
  c->in_free = at;
  rs__sim_use(c, RS_PORT_IN);
  if (at > c->clock)
    c->clock = at;
  if (c->stream && seg < c->seg_cap)
    c->seg_ready[seg] = at;
  c->switch_ready = 0;
  return at;
}

/* Has the simulation under m been asked to stop (rs_netmodel_t's stop)?
 * One relaxed load: every schedule simulation asks it per segment. The flag
 * is a plain int the caller stores atomically (rs_stop_flag_t). */
static inline int rs__sim_stopped(const rs_netmodel_t *m) {
  return m->stop && __atomic_load_n(m->stop, __ATOMIC_RELAXED);
}

/* The least time on the wire a message of bytes from worker `from` to
 * worker `to` of W can take (rs__sim_send's link, as W's topology places
 * them, its NIC not shared), and that link's latency in *latency_ns: a
 * bound on what is still to come (algo.h's rs__algo_least). A message cut
 * into segments takes no less than the whole in one. */
uint64_t rs__sim_hop_least_ns(const rs_netmodel_t *net, int workers, int from,
                              int to, size_t bytes, uint64_t *latency_ns);

/* Worker c's transfers take load's links (NULL: none, every transfer its
 * out link). */
static inline void rs__sim_set_load(rs_simclock_t *c,
                                    const rs_topo_load_t *load) {
  c->load = load;
  c->node_first =
      load ? rs__topo_node(&load->topo, c->rank) * load->topo.gpus : 0;
}

/* Set c up for worker rank of W under net (NULL or disabled: no clock),
 * without a load: whoever runs a schedule over a topology of more than
 * one node sets c->load (rs__topo_load). */
void rs__sim_init(rs_simclock_t *c, const rs_netmodel_t *net, int workers,
                  int rank);

#endif /* RINGSIM_NETMODEL_H */
