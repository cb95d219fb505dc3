/* topo.c - the cluster as nodes of GPUs (--topo): parsing a topology and
 * its presets, checking it against the workers, and contention: the
 * resources a transfer crosses and the pace it goes at while others cross
 * them too (topo.h). */
#include "net/topo.h"

#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "net/netmodel.h"

/* The presets, whose numbers docs/algorithms.md cites: the bandwidths
 * from the vendors' published specifications; the latencies, which the
 * vendors do not publish, are the per-hop latencies NCCL's own tuning
 * model gives its LL protocol on a ring (src/graph/tuning.cc's hwLat:
 * NVLink 0.6 us, PCI 1.0 us, network 2.7 us). */
typedef struct preset {
  const char *name;
  rs_topo_t topo;
} preset_t;

static const preset_t presets[] = {
    /* DGX H100: 8 H100 SXM5 on NVLink 4 through NVSwitch, 900 GB/s per
     * GPU both ways together (450 GB/s each way); 8 ConnectX-7 NICs of
     * 400 Gb/s for the compute fabric, one per GPU. */
    {"dgx-h100",
     {.enabled = 1,
      .nodes = 1,
      .gpus = 8,
      .nics = 8,
      .intra = {.latency_ns = 600, .bandwidth = 450000000000ull},
      .nic = {.latency_ns = 2700, .bandwidth = 50000000000ull}}},
    /* 8 GPUs on PCIe 4.0 x16 through the host (16 GT/s x 16 lanes,
     * 128b/130b: 31.5 GB/s each way), one 100 Gb/s NIC per node. */
    {"pcie",
     {.enabled = 1,
      .nodes = 1,
      .gpus = 8,
      .nics = 1,
      .intra = {.latency_ns = 1000, .bandwidth = 31500000000ull},
      .nic = {.latency_ns = 2700, .bandwidth = 12500000000ull}}},
};
#define PRESETS (sizeof presets / sizeof *presets)

/* "LATENCY/BANDWIDTH" (len bytes of text) into link. */
static int read_link(const char *text, size_t len, rs_link_model_t *link) {
  const char *slash = memchr(text, '/', len);
  if (!slash)
    return -1;
  size_t lat_len = (size_t)(slash - text);
  return rs__net_read_time(text, lat_len, &link->latency_ns) ||
                 rs__net_read_rate(slash + 1, len - lat_len - 1,
                                   &link->bandwidth)
             ? -1
             : 0;
}

/* "N" (len bytes of text), an integer in 1..max, into *out. */
static int read_count(const char *text, size_t len, long max, int *out) {
  char buf[24];
  long v;
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy(buf, text, len);
  buf[len] = '\0';
  if (rs_read_int(buf, 1, max, &v))
    return -1;
  *out = (int)v;
  return 0;
}

/* One key=value item (len bytes at item) into t; *given marks the keys
 * set (bits: nodes 1, gpus 2, nics 4, intra 8, nic 16). */
static int read_item(const char *spec, const char *item, size_t len,
                     rs_topo_t *t, unsigned *given, char *errmsg) {
  static const struct {
    const char *key;
    const char *expects;
  } keys[] = {{"nodes", "a number of nodes, 1 to 65536"},
              {"gpus", "a number of GPUs per node, 1 to 4096"},
              {"nics", "a number of NICs per node, 1 to 4096"},
              {"intra", "LATENCY/BANDWIDTH such as 1us/450GB/s"},
              {"nic", "LATENCY/BANDWIDTH such as 5us/400Gbps"}};
  const char *eq = memchr(item, '=', len);
  size_t key_len = eq ? (size_t)(eq - item) : len;
  for (unsigned k = 0; k < sizeof keys / sizeof *keys; k++) {
    if (strlen(keys[k].key) != key_len ||
        strncmp(item, keys[k].key, key_len) != 0)
      continue;
    const char *value = eq ? eq + 1 : item + len;
    size_t value_len = eq ? len - key_len - 1 : 0;
    int bad = !eq;
    if (!bad && k == 0)
      bad = read_count(value, value_len, 65536, &t->nodes);
    else if (!bad && k == 1)
      bad = read_count(value, value_len, 4096, &t->gpus);
    else if (!bad && k == 2)
      bad = read_count(value, value_len, 4096, &t->nics);
    else if (!bad)
      bad = read_link(value, value_len, k == 3 ? &t->intra : &t->nic);
    if (bad)
      return rs__err(errmsg, RS_EINVAL, "--topo '%s': '%.*s': expected %s=%s",
                     spec, (int)len, item, keys[k].key, keys[k].expects);
    *given |= 1u << k;
    return RS_OK;
  }
  return rs__err(errmsg, RS_EINVAL,
                 "--topo '%s': unknown item '%.*s' (a preset first: dgx-h100 "
                 "or pcie; then nodes=, gpus=, nics=, intra=, nic=)",
                 spec, (int)len, item);
}

int rs_topo_parse(const char *spec, rs_topo_t *t, char *errmsg) {
  rs_topo_t topo = {.enabled = 1, .nodes = 1, .nics = 1};
  unsigned given = 0;
  const char *p = spec;
  for (int first = 1; first || *p; first = 0) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const preset_t *preset = NULL;
    for (size_t i = 0; first && i < PRESETS; i++)
      if (strlen(presets[i].name) == len &&
          strncmp(p, presets[i].name, len) == 0)
        preset = &presets[i];
    if (preset) {
      topo = preset->topo;
      given = 1u | 2 | 4 | 8 | 16;
    } else if (len == 0) {
      return rs__err(errmsg, RS_EINVAL, "--topo '%s': an empty item", spec);
    } else {
      int rc = read_item(spec, p, len, &topo, &given, errmsg);
      if (rc)
        return rc;
    }
    p += len + (comma != NULL);
    if (comma && !*p)
      return rs__err(errmsg, RS_EINVAL, "--topo '%s': an empty item", spec);
  }
  if (!(given & 2))
    return rs__err(errmsg, RS_EINVAL,
                   "--topo '%s': give gpus= (GPUs per node), or a preset",
                   spec);
  if (!(given & 8) || !(given & 16))
    return rs__err(errmsg, RS_EINVAL,
                   "--topo '%s': give intra= and nic= (LATENCY/BANDWIDTH), "
                   "or a preset",
                   spec);
  if (topo.nics > topo.gpus)
    return rs__err(errmsg, RS_EINVAL,
                   "--topo '%s': nics=%d is more NICs than the node's %d "
                   "GPUs",
                   spec, topo.nics, topo.gpus);
  *t = topo;
  return RS_OK;
}

int rs_topo_check(const rs_topo_t *t, int workers, char *errmsg) {
  if (!t->enabled)
    return RS_OK;
  if ((long long)t->nodes * t->gpus != workers)
    return rs__err(errmsg, RS_EINVAL,
                   "--topo: %d nodes of %d GPUs are %lld workers, and "
                   "--workers is %d",
                   t->nodes, t->gpus, (long long)t->nodes * t->gpus, workers);
  return RS_OK;
}

/* ---- contention ---------------------------------------------------------
 * Resources, numbered: worker r's port out r, its port in W + r; node n's
 * NIC k sends at 2W + n K + k and receives at 2W + N K + n K + k. */

size_t rs__topo_resources(const rs_topo_t *t) {
  const size_t W = (size_t)t->nodes * (size_t)t->gpus;
  return 2 * W + 2 * (size_t)t->nodes * (size_t)t->nics;
}

int rs__topo_path(const rs_topo_t *t, int src, int dst, uint32_t res[4]) {
  const uint32_t W = (uint32_t)t->nodes * (uint32_t)t->gpus;
  const uint32_t G = (uint32_t)t->gpus, K = (uint32_t)t->nics;
  const uint32_t NK = (uint32_t)t->nodes * K;
  const uint32_t s = (uint32_t)src, d = (uint32_t)dst;
  if (s / G == d / G) {
    res[0] = s;
    res[1] = W + d;
    return 2;
  }
  res[0] = s;
  res[1] = 2 * W + s / G * K + s % G % K;
  res[2] = 2 * W + NK + d / G * K + d % G % K;
  res[3] = W + d;
  return 4;
}

static uint64_t bandwidth_of(const rs_topo_t *t, uint32_t res) {
  const uint32_t W = (uint32_t)t->nodes * (uint32_t)t->gpus;
  return res < 2 * W ? t->intra.bandwidth : t->nic.bandwidth;
}

const rs_link_model_t *rs__topo_class(const rs_topo_t *t, int src, int dst) {
  return src / t->gpus == dst / t->gpus ? &t->intra : &t->nic;
}

uint64_t rs__topo_pace(const rs_topo_t *t, int src, int dst,
                       const uint32_t *count, int *busiest) {
  uint32_t res[4];
  int n = rs__topo_path(t, src, dst, res);
  uint64_t pace = UINT64_MAX;
  for (int i = 0; i < n; i++) {
    uint32_t c = count[res[i]] ? count[res[i]] : 1;
    uint64_t share = bandwidth_of(t, res[i]) / c;
    if (share < pace) {
      pace = share ? share : 1;
      if (busiest)
        *busiest = (int)res[i];
    }
  }
  return pace;
}

void rs__topo_count(const rs_topo_t *t, int n, const int *src, const int *dst,
                    uint32_t *count, int add) {
  for (int i = 0; i < n; i++) {
    uint32_t res[4];
    int m = rs__topo_path(t, src[i], dst[i], res);
    for (int j = 0; j < m; j++)
      count[res[j]] += add ? 1u : (uint32_t)-1;
  }
}
