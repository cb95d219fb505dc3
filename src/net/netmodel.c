/* netmodel.c - the alpha-beta network model: parsing its specs, checking
 * them (a topology's too: topo.h), and every worker's simulated clock. */
#include "net/netmodel.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "net/topo.h"

/* ---- parsing ------------------------------------------------------------
 * Numbers as every option reads them (rs_read_digits, rs_read_decimal:
 * the grammar in base/util.c), times and rates by topo.c's readers. */

typedef struct unit {
  const char *key; /* "us" */
  double scale;    /* to ns */
} unit_t;

int rs_netmodel_parse_rate(const char *text, uint64_t *bytes_per_s,
                           char *errmsg) {
  if (rs__net_read_rate(text, strlen(text), bytes_per_s))
    return rs__err(errmsg, RS_EINVAL,
                   "'%.*s%s': expected a rate such as 25GB/s, 100Gbps or "
                   "800MiB/s",
                   RS_QUOTE_MAX, text,
                   strlen(text) > RS_QUOTE_MAX ? "..." : "");
  return RS_OK;
}

/* key=value,key=value into a link (latency, bandwidth); messages quote
 * the whole option, what 'shown'. */
static int parse_link_fields(const char *spec, rs_link_model_t *link,
                             int need_both, const char *what, const char *shown,
                             char *errmsg) {
  int have_latency = 0, have_bandwidth = 0;
  const char *p = spec;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const char *eq = memchr(p, '=', len);
    uint64_t v;
    if (eq && (size_t)(eq - p) == 7 && strncmp(p, "latency", 7) == 0 &&
        rs__net_read_time(eq + 1, len - 8, &v) == 0) {
      link->latency_ns = v;
      have_latency = 1;
    } else if (eq && (size_t)(eq - p) == 9 && strncmp(p, "bandwidth", 9) == 0 &&
               rs__net_read_rate(eq + 1, len - 10, &v) == 0) {
      link->bandwidth = v;
      have_bandwidth = 1;
    } else {
      return rs__err_at(errmsg, RS_EINVAL, what, shown, (size_t)(p - shown),
                        len,
                        "expected latency=TIME and bandwidth=RATE, e.g. "
                        "latency=5us,bandwidth=25GB/s");
    }
    p += len + (comma != NULL);
  }
  if (need_both && !(have_latency && have_bandwidth))
    return rs__err_at(errmsg, RS_EINVAL, what, shown, 0, 0,
                      "give both latency= and bandwidth=");
  if (!have_latency && !have_bandwidth)
    return rs__err_at(errmsg, RS_EINVAL, what, shown, 0, 0, "nothing to set");
  return RS_OK;
}

int rs_netmodel_parse(const char *spec, rs_netmodel_t *m, char *errmsg) {
  rs_link_model_t link = {0};
  int rc = parse_link_fields(spec, &link, 1, "--net", spec, errmsg);
  if (rc)
    return rc;
  m->link = link;
  m->enabled = 1;
  return RS_OK;
}

int rs_netmodel_parse_link(const char *spec, rs_netmodel_t *m, char *errmsg) {
  long long src = -1, dst = -1;
  const char *end = spec;
  size_t used = 0;
  if (rs_read_digits(spec, &src, &end) == 0 && *end == '-' &&
      rs_read_digits(end + 1, &dst, &end) == 0 && *end == ':' &&
      src <= INT_MAX && dst <= INT_MAX)
    used = (size_t)(end + 1 - spec);
  if (used == 0)
    return rs__err_at(errmsg, RS_EINVAL, "--link", spec, 0, 0,
                      "expected SRC-DST:bandwidth=RATE[,latency=TIME], e.g. "
                      "2-3:bandwidth=1GB/s");
  if (m->link_count == RS_MAX_NET_OVERRIDES)
    return rs__err(errmsg, RS_EINVAL, "--link: at most %d overrides",
                   RS_MAX_NET_OVERRIDES);
  /* Start from the default link: the override replaces what it names. The
   * default may come later on the command line, so names are kept apart. */
  rs_link_model_t link = {RS_NET_UNSET, RS_NET_UNSET};
  int rc = parse_link_fields(spec + used, &link, 0, "--link", spec, errmsg);
  if (rc)
    return rc;
  m->links[m->link_count].src = src;
  m->links[m->link_count].dst = dst;
  m->links[m->link_count].link = link;
  m->link_count++;
  return RS_OK;
}

int rs_netmodel_parse_straggler(const char *spec, rs_netmodel_t *m,
                                char *errmsg) {
  static const unit_t units[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}};
  long long worker = -1;
  double v = -1, scale = 0;
  const char *end = spec, *unit = NULL;
  size_t letters = 0; /* worker=N,UNIT=DELAY, UNIT one or two letters */
  if (strncmp(spec, "worker=", 7) == 0 &&
      rs_read_digits(spec + 7, &worker, &end) == 0 && *end == ',') {
    unit = end + 1;
    while (letters < 2 && unit[letters] >= 'a' && unit[letters] <= 'z')
      letters++;
  }
  if (!unit || worker > INT_MAX || letters == 0 || unit[letters] != '=' ||
      rs_read_real(unit + letters + 1, &v) || v > 3.6e12)
    return rs__err_at(errmsg, RS_EINVAL, "--straggler", spec, 0, 0,
                      "expected worker=N,us=MICROSECONDS (or ns=, ms=)");
  for (size_t u = 0; u < sizeof units / sizeof *units; u++)
    if (letters == 2 && strncmp(unit, units[u].key, 2) == 0)
      scale = units[u].scale;
  if (scale == 0)
    return rs__err_at(errmsg, RS_EINVAL, "--straggler", spec,
                      (size_t)(unit - spec), letters,
                      "the delay's unit is ns, us or ms");
  if (m->straggler_count == RS_MAX_NET_OVERRIDES)
    return rs__err(errmsg, RS_EINVAL, "--straggler: at most %d",
                   RS_MAX_NET_OVERRIDES);
  m->stragglers[m->straggler_count].worker = (int)worker;
  m->stragglers[m->straggler_count].delay_ns = (uint64_t)llround(v * scale);
  m->straggler_count++;
  return RS_OK;
}

int rs_netmodel_check(const rs_netmodel_t *m, int workers, char *errmsg) {
  if (m->topo.enabled) {
    if (m->link_count)
      return rs__err(errmsg, RS_EINVAL,
                     "--link: the topology names its links; give one of "
                     "--topo and --link");
    if (m->link.bandwidth != 0)
      return rs__err(errmsg, RS_EINVAL,
                     "--topo and --net: give one (--net is one switch "
                     "without contention)");
    int rc = rs_topo_check(&m->topo, workers, errmsg);
    if (rc)
      return rc;
  }
  if (!m->enabled) {
    if (m->link_count || m->straggler_count || m->reduce_rate)
      return rs__err(errmsg, RS_EINVAL,
                     "--link, --straggler and --reduce-rate need --net");
    return RS_OK;
  }
  for (int i = 0; i < m->link_count; i++) {
    int src = m->links[i].src, dst = m->links[i].dst;
    if (src >= workers || dst >= workers)
      return rs__err(errmsg, RS_EINVAL,
                     "--link %d-%d: worker %d does not exist (workers 0..%d)",
                     src, dst, src >= workers ? src : dst, workers - 1);
    if (dst != (src + 1) % workers)
      return rs__err(errmsg, RS_EINVAL,
                     "--link %d-%d: not a ring link; links go from r to "
                     "r+1, and from %d to 0",
                     src, dst, workers - 1);
  }
  for (int i = 0; i < m->straggler_count; i++)
    if (m->stragglers[i].worker >= workers)
      return rs__err(errmsg, RS_EINVAL,
                     "--straggler: worker %d does not exist (workers 0..%d)",
                     m->stragglers[i].worker, workers - 1);
  return RS_OK;
}

/* ---- clocks ------------------------------------------------------------- */

/* Worker rank's link to the next worker (with a topology: its intra
 * link), its overrides applied. */
static rs_link_model_t out_link(const rs_netmodel_t *net, int rank) {
  rs_link_model_t out = net->topo.enabled ? net->topo.intra : net->link;
  for (int i = 0; i < net->link_count; i++)
    if (net->links[i].src == rank) {
      /* an override sets what it names; the rest stays the default */
      if (net->links[i].link.latency_ns != RS_NET_UNSET)
        out.latency_ns = net->links[i].link.latency_ns;
      if (net->links[i].link.bandwidth != RS_NET_UNSET)
        out.bandwidth = net->links[i].link.bandwidth;
    }
  return out;
}

/* The latencies of a hop within a node and between nodes under net: the
 * links' own, or, with a protocol on a topology whose GPUs NCCL's model
 * knows (cc), NCCL's for the protocol and the link's kind (net/proto.h:
 * NVLink through a switch, else PCIe; the network between nodes). */
static void hop_latencies(const rs_netmodel_t *net, uint64_t *intra,
                          uint64_t *nic) {
  const rs_topo_t *t = &net->topo;
  if (net->proto != RS_PROTOCOL_NONE && t->enabled && t->cc > 0) {
    *intra = rs__proto_hop_ns(
        t->nvswitch != RS_TOPO_SWITCH_NONE ? RS_HW_NVLINK : RS_HW_PCI,
        net->proto);
    *nic = rs__proto_hop_ns(RS_HW_NET, net->proto);
  } else {
    *intra = t->enabled ? t->intra.latency_ns : net->link.latency_ns;
    *nic = t->nic.latency_ns;
  }
}

void rs__sim_init(rs_simclock_t *c, const rs_netmodel_t *net, int workers,
                  int rank) {
  memset(c, 0, sizeof *c);
  c->channels = (uint8_t)(net && net->channels > 1 ? net->channels : 1);
  if (!net || !net->enabled)
    return;
  c->net = net;
  c->rank = rank;
  c->out = out_link(net, rank);
  c->slots = rs__sim_slots(net);
  c->proto = net->proto;
  c->launch_ns = rs__proto_launch_ns(net->proto);
  if (net->proto != RS_PROTOCOL_NONE && net->topo.enabled)
    hop_latencies(net, &c->out.latency_ns, &c->nic_latency_ns);
  else
    c->nic_latency_ns = net->topo.nic.latency_ns;
  for (int i = 0; i < net->straggler_count; i++)
    if (net->stragglers[i].worker == rank)
      c->straggler_ns += net->stragglers[i].delay_ns;
  (void)workers;
}

uint64_t rs__sim_hop_least_ns(const rs_netmodel_t *net, int workers, int from,
                              int to, size_t bytes, uint64_t *latency_ns) {
  *latency_ns = 0;
  if (!net || !net->enabled)
    return 0;
  const rs_topo_t *t = &net->topo;
  uint64_t intra, nic;
  hop_latencies(net, &intra, &nic);
  if (t->enabled && t->nodes > 1 && t->nodes * t->gpus == workers &&
      rs__topo_node(t, from) != rs__topo_node(t, to)) {
    *latency_ns = nic;
    return rs__topo_wire_ns(t, 1, bytes);
  }
  const rs_link_model_t out = out_link(net, from);
  *latency_ns = t->enabled ? intra : out.latency_ns;
  return rs__net_ns(bytes, out.bandwidth);
}

size_t rs_segs_per_chunk(size_t elems, int workers, size_t segment_bytes,
                         size_t elem_size) {
  size_t max_chunk = elems / (size_t)workers + (elems % (size_t)workers != 0);
  size_t cap = segment_bytes / elem_size;
  if (cap == 0)
    cap = 1;
  return max_chunk ? (max_chunk + cap - 1) / cap : 1;
}

/* ---- bus bandwidth ------------------------------------------------------ */

double rs_busbw_factor(int workers) { return 2.0 * (workers - 1) / workers; }

double rs_busbw(double algbw, int workers) {
  return algbw * 2.0 * (workers - 1) / workers;
}

/* The slowest rate of a link, or of a shared NIC (its bandwidth over the
 * node's GPUs), and the longest latency. */
static void extremes(const rs_netmodel_t *m, double *rate, double *latency) {
  double r = m->topo.enabled ? (double)m->topo.intra.bandwidth
                             : (double)m->link.bandwidth;
  double l = m->topo.enabled ? (double)m->topo.intra.latency_ns
                             : (double)m->link.latency_ns;
  if (m->topo.enabled) {
    const double shared = (double)m->topo.nic.bandwidth / m->topo.gpus;
    r = shared < r ? shared : r;
    l = (double)m->topo.nic.latency_ns > l ? (double)m->topo.nic.latency_ns : l;
  }
  for (int i = 0; i < m->link_count; i++) {
    const rs_link_model_t *o = &m->links[i].link;
    if (o->bandwidth != RS_NET_UNSET && (double)o->bandwidth < r)
      r = (double)o->bandwidth;
    if (o->latency_ns != RS_NET_UNSET && (double)o->latency_ns > l)
      l = (double)o->latency_ns;
  }
  *rate = r;
  *latency = l;
}

double rs__sim_bound_ns(const rs_netmodel_t *m, double messages,
                        double max_bytes, double steps) {
  if (!m->enabled)
    return 0;
  double rate, latency, straggle = 0;
  extremes(m, &rate, &latency);
  uint64_t intra, nic; /* (a protocol's latencies, and its launch) */
  hop_latencies(m, &intra, &nic);
  latency = (double)intra > latency ? (double)intra : latency;
  latency = (double)nic > latency ? (double)nic : latency;
  latency += (double)rs__proto_launch_ns(m->proto);
  /* (LL's wire: twice the bytes and a line) */
  const double on_wire = m->proto == RS_PROTOCOL_LL ? 2 * max_bytes + 16
                         : m->proto == RS_PROTOCOL_LL128
                             ? max_bytes * 128.0 / 120.0 + 128
                             : max_bytes;
  const double wire = rate > 0 ? on_wire * 1e9 / rate : 0;
  const double fold = m->reduce_rate ? max_bytes * 1e9 / m->reduce_rate : 0;
  for (int i = 0; i < m->straggler_count; i++)
    if ((double)m->stragglers[i].delay_ns > straggle)
      straggle = (double)m->stragglers[i].delay_ns;
  return messages * (latency + 2 * wire + fold) + steps * straggle;
}

/* ---- channels ------------------------------------------------------------
 * NCCL's channels on a worker's clock (netmodel.h's rs_simclock_t: each
 * channel its own clock and share of the ports, and streaming its own
 * segments and messages in flight). */

/* The time a segment that takes wire alone takes on its channel's share
 * of its port. Flat (--net, or one node): the busy channels share the
 * port equally, busy times its time. With a topology of several nodes a
 * GPU's NVLink port and its NIC side are apart (netmodel.h): within a
 * node the channels that send within it share the NVLink port, on_node
 * times; between nodes the channels that cross share the NIC side,
 * off_node times its time through the NIC as topo.h shares it among GPUs
 * (wire: at most the NVLink port's pace). An idle channel counts in
 * neither: on_node and off_node are the busy ones', and the load that
 * shares the NIC among GPUs is the bucket's busy channels' (run.c's
 * rs__run_bucket_load, algo.c's bucket_load). */
static uint64_t channel_wire(const rs_simclock_t *c, uint64_t wire) {
  uint64_t share = c->busy;
  if (c->last_share) /* (between nodes: the NIC side) */
    share = c->off_node;
  else if (c->load) /* (within a node of several: the NVLink port) */
    share = c->on_node;
  return rs__sat_mul(wire, share > 1 ? share : 1);
}

void rs__sim_send_channel(rs_simclock_t *c, size_t seg, size_t bytes,
                       uint64_t wire, uint64_t latency, uint64_t *depart_ns,
                       uint64_t *arrive_ns, uint64_t *wire_ns) {
  const size_t ch = (size_t)c->channel;
  const int nic = c->last_share != 0; /* (netmodel.h's rs__sim_send) */
  uint64_t *const link =
      nic ? &RS_SIM_CHANNEL(c, NIC, ch) : &RS_SIM_CHANNEL(c, LINK, ch);
  uint64_t *const port = nic ? &c->nic_free : &c->link_free;
  /* (its slots' arrivals: none without streaming, slot_cap 0) */
  uint64_t *const slot = c->slot_cap ? c->slot_arrive + ch * c->slot_cap : NULL;
  const uint64_t ready =
      seg < c->seg_cap
          ? rs__sat_add(c->seg_ready[ch * c->seg_cap + seg], c->straggler_ns)
          : RS_SIM_CHANNEL(c, CLOCK, ch);
  (void)bytes;
  wire = channel_wire(c, wire);
  uint64_t depart = ready > *link ? ready : *link;
  uint64_t *const sent = &RS_SIM_CHANNEL(c, SENT, ch);
  if (*sent >= (uint64_t)c->slots && c->slot_cap == (size_t)c->slots) {
    const uint64_t freed = slot[*sent % c->slot_cap];
    depart = freed > depart ? freed : depart;
  }
  *link = rs__sat_add(depart, wire);
  if (*link > *port)
    *port = *link;
  *depart_ns = depart;
  *arrive_ns = rs__sat_add(*link, latency);
  *wire_ns = wire;
  if (c->slot_cap)
    slot[*sent % c->slot_cap] = *arrive_ns;
  (*sent)++;
}

uint64_t rs__sim_recv_channel(rs_simclock_t *c, uint64_t arrive_ns,
                              uint64_t wire_ns, size_t reduced_bytes,
                              size_t seg, int nic) {
  const size_t ch = (size_t)c->channel;
  /* (its share of the port: wire_ns is the sender's, its share's) */
  uint64_t *const in = nic ? &RS_SIM_CHANNEL(c, NIC_IN, ch)
                           : &RS_SIM_CHANNEL(c, IN, ch),
                  *const now = &RS_SIM_CHANNEL(c, CLOCK, ch);
  uint64_t *const port = nic ? &c->nic_in_free : &c->in_free;
  if (rs__sat_add(*in, wire_ns) > arrive_ns)
    arrive_ns = rs__sat_add(*in, wire_ns);
  *in = arrive_ns;
  if (arrive_ns > *port)
    *port = arrive_ns;
  if (arrive_ns > *now)
    *now = arrive_ns;
  const uint64_t received = *now;
  *now = rs__sat_add(*now, rs__net_ns(reduced_bytes, c->net->reduce_rate));
  if (seg < c->seg_cap) /* (segment seg's data, for its next step's send) */
    c->seg_ready[ch * c->seg_cap + seg] = *now;
  if (*now > c->clock)
    c->clock = *now;
  return received;
}
