/* topo.c - the cluster as nodes of GPUs (--topo): parsing a topology and
 * its presets, checking it against the workers, and its contention: a
 * schedule's load on the NICs, and the link a transfer takes under it
 * (topo.h). And the readers of times and rates --net shares. */
#include "net/topo.h"
#include "ringsim/internal/command.h" /* rs_topo_preset_name */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* ---- times and rates ---------------------------------------------------- */

typedef struct unit {
  const char *suffix;
  double scale;
} unit_t;

static const unit_t time_units[] = {
    {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {NULL, 0}};
static const unit_t rate_units[] = {{"B/s", 1},
                                    {"KB/s", 1e3},
                                    {"MB/s", 1e6},
                                    {"GB/s", 1e9},
                                    {"TB/s", 1e12},
                                    {"KiB/s", 1024.0},
                                    {"MiB/s", 1048576.0},
                                    {"GiB/s", 1073741824.0},
                                    {"Kbps", 125.0},
                                    {"Mbps", 125e3},
                                    {"Gbps", 125e6},
                                    {"Tbps", 125e9},
                                    {NULL, 0}};

/* A decimal (the one grammar: base/util.c) followed at once by one of
 * units, len bytes of text. */
static int parse_quantity(const char *text, size_t len, const unit_t *units,
                          double *out) {
  char buf[64];
  if (len == 0 || len >= sizeof buf)
    return -1;
  memcpy(buf, text, len);
  buf[len] = '\0';
  double v;
  const char *end;
  if (rs_read_decimal(buf, &v, &end))
    return -1;
  for (const unit_t *u = units; u->suffix; u++)
    if (strcmp(end, u->suffix) == 0) {
      *out = v * u->scale;
      return *out < 1.8e19 ? 0 : -1;
    }
  return -1;
}

int rs__net_read_time(const char *text, size_t len, uint64_t *ns) {
  double v;
  if (parse_quantity(text, len, time_units, &v))
    return -1;
  *ns = (uint64_t)llround(v);
  return 0;
}

int rs__net_read_rate(const char *text, size_t len, uint64_t *bytes_per_s) {
  double v;
  if (parse_quantity(text, len, rate_units, &v) || v < 1)
    return -1;
  *bytes_per_s = (uint64_t)llround(v);
  return 0;
}

/* ---- topologies --------------------------------------------------------- */

/* The presets, whose numbers docs/topology.md cites: the bandwidths
 * from the vendors' published specifications; the latencies, which the
 * vendors do not publish, are the per-hop latencies NCCL's own tuning
 * model gives its LL protocol on a ring (src/graph/tuning.cc's hwLat:
 * NVLink 0.6 us, PCI 1.0 us, network 2.7 us). cc and nvswitch are what
 * NCCL's model reads besides (algo/nccl.h): the GPU's compute capability
 * and the switch between a node's GPUs. */
typedef struct preset {
  const char *name;
  rs_topo_t topo;
} preset_t;

static const preset_t presets[] = {
    /* DGX H100: 8 H100 SXM5 on NVLink 4 through NVSwitch, 18 links of
     * 25 GB/s each way (NVIDIA: 900 GB/s per GPU both ways together); 8
     * ConnectX-7 NICs of 400 Gb/s for the compute fabric, one per GPU.
     * intra is what NCCL's model moves through the 18 links: 18 x
     * SM90_NVLINK_BW 20.6 = 370.8 GB/s (NCCL src/graph/topo.h;
     * ncclTopoAddNvLinks in topo.cc), the ~370 GB/s NVIDIA's engineers
     * give for NVLink 4 after the protocol's overhead (nccl-tests#212). */
    {"dgx-h100",
     {.enabled = 1,
      .nodes = 1,
      .gpus = 8,
      .nics = 8,
      .intra = {.latency_ns = 600, .bandwidth = 370800000000ull},
      .nic = {.latency_ns = 2700, .bandwidth = 50000000000ull},
      .cc = 90, /* H100: sm_90 */
      /* third-generation NVSwitch: NVLink SHARP (NVLS) */
      .nvswitch = RS_TOPO_SWITCH_NVLS}},
    /* DGX A100: 8 A100 SXM4 on NVLink 3 through 6 NVSwitch chips, 12
     * links of 25 GB/s each way (NVIDIA: 600 GB/s per GPU both ways
     * together); 8 ConnectX-6 NICs of 200 Gb/s (HDR) for the compute
     * fabric, one per GPU. Its NVSwitch does not reduce. intra: NCCL's
     * 12 x SM80_NVLINK_BW 20.0 = 240 GB/s (topo.h). */
    {"dgx-a100",
     {.enabled = 1,
      .nodes = 1,
      .gpus = 8,
      .nics = 8,
      .intra = {.latency_ns = 600, .bandwidth = 240000000000ull},
      .nic = {.latency_ns = 2700, .bandwidth = 25000000000ull},
      .cc = 80, /* A100: sm_80 */
      .nvswitch = RS_TOPO_SWITCH_NVSWITCH}},
    /* 8 GPUs on PCIe 4.0 x16 through the host (16 GT/s x 16 lanes,
     * 128b/130b: 31.5 GB/s each way on the wire), one 100 Gb/s NIC per
     * node. intra: NCCL's figure for the link, width x speed / 80 = 16 x
     * 120 / 80 = 24 GB/s (topo.cc ncclTopoAddPci, kvDictPciGen). */
    {"pcie",
     {.enabled = 1,
      .nodes = 1,
      .gpus = 8,
      .nics = 1,
      .intra = {.latency_ns = 1000, .bandwidth = 24000000000ull},
      .nic = {.latency_ns = 2700, .bandwidth = 12500000000ull},
      .cc = 0, /* any GPU: give cc= for NCCL's model */
      .nvswitch = RS_TOPO_SWITCH_NONE}},
};
#define PRESETS (sizeof presets / sizeof *presets)

const char *rs_topo_preset_name(int i) {
  return i >= 0 && (size_t)i < PRESETS ? presets[i].name : NULL;
}

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

/* A message about the item of len bytes at item in spec: the spec
 * quoted whole if short, else the problem first and an excerpt around
 * the item (rs__err_at). */
#define TOPO_ERR(spec, item, len, ...)                                         \
  rs__err_at(errmsg, RS_EINVAL, "--topo", spec, (size_t)((item) - (spec)),     \
             len, __VA_ARGS__)
/* An item as a message names it: at most RS_QUOTE_MAX bytes of it. */
#define ITEM(len, item) (int)((len) < RS_QUOTE_MAX ? (len) : RS_QUOTE_MAX), item

/* One key=value item (len bytes at item) into t; *given marks the keys
 * set (bits: nodes 1, gpus 2, nics 4, intra 8, nic 16, cc 32, switch 64;
 * the same shifted by ITEM_SHIFT for those given as an item, not by the
 * preset). */
#define ITEM_SHIFT 8
static int read_item(const char *spec, const char *item, size_t len,
                     rs_topo_t *t, unsigned *given, char *errmsg) {
  static const struct {
    const char *key;
    const char *expects;
  } keys[] = {{"nodes", "a number of nodes, 1 to 65536"},
              {"gpus", "a number of GPUs per node, 1 to 4096"},
              {"nics", "a number of NICs per node, 1 to 4096"},
              {"intra", "LATENCY/BANDWIDTH such as 0.6us/370.8GB/s"},
              {"nic", "LATENCY/BANDWIDTH such as 5us/400Gbps"},
              {"cc", "a compute capability x 10 such as 80 (A100) or 90 "
                     "(H100), 10 to 1000"},
              {"switch", "none, nvswitch or nvls"}};
  static const char *const switches[] = {"none", "nvswitch", "nvls"};
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
    else if (!bad && k == 5)
      bad = read_count(value, value_len, 1000, &t->cc) || t->cc < 10;
    else if (!bad && k == 6) {
      bad = 1;
      for (int w = 0; w < 3; w++)
        if (strlen(switches[w]) == value_len &&
            strncmp(value, switches[w], value_len) == 0) {
          t->nvswitch = w; /* RS_TOPO_SWITCH_NONE, _NVSWITCH, _NVLS */
          bad = 0;
        }
    } else if (!bad)
      bad = read_link(value, value_len, k == 3 ? &t->intra : &t->nic);
    if (bad)
      return TOPO_ERR(spec, item, len, "'%.*s': expected %s=%s",
                      ITEM(len, item), keys[k].key, keys[k].expects);
    if (*given & ((1u << ITEM_SHIFT) << k))
      return TOPO_ERR(spec, item, len, "%s= is given twice", keys[k].key);
    *given |= (1u | (1u << ITEM_SHIFT)) << k;
    return RS_OK;
  }
  return TOPO_ERR(spec, item, len,
                  "unknown item '%.*s' (a preset first: dgx-h100, dgx-a100 "
                  "or pcie; then nodes=, gpus=, nics=, intra=, nic=, cc=, "
                  "switch=)",
                  ITEM(len, item));
}

int rs_topo_parse_rows(const char *spec, rs_topo_t *t, int *rows, int room,
                       int *row_count, char *errmsg) {
  rs_topo_t topo = {.enabled = 1, .nodes = 1, .nics = 1};
  unsigned given = 0;
  const char *p = spec, *nics_at = spec;
  int listing = 0, counts = 0; /* after nodes=: its list of counts */
  for (int first = 1; first || *p; first = 0) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    const preset_t *preset = NULL;
    for (size_t i = 0; first && i < PRESETS; i++)
      if (strlen(presets[i].name) == len &&
          strncmp(p, presets[i].name, len) == 0)
        preset = &presets[i];
    const int digits = len && strspn(p, "0123456789") >= len;
    if (preset) {
      topo = preset->topo;
      given = 1u | 2 | 4 | 8 | 16;
    } else if (len == 0) {
      return TOPO_ERR(spec, p, 0, "an empty item");
    } else if (digits && !(listing && rows)) {
      return TOPO_ERR(spec, p, len,
                      "'%.*s' is not an item (a list of node counts follows "
                      "nodes=, as nodes=1,8,64, and only ringsim model takes "
                      "one: a row each)",
                      ITEM(len, p));
    } else if (digits) { /* a row's count */
      char count[24];
      long v;
      snprintf(count, sizeof count, "%.*s", (int)(len < 23 ? len : 23), p);
      if (counts == room || len > 23 || rs_read_int(count, 1, 65536, &v))
        return TOPO_ERR(spec, p, len,
                        "expected nodes=N or a list like nodes=1,8,64 (at "
                        "most %d), each in 1..65536",
                        room);
      rows[counts++] = (int)v;
    } else {
      int rc = read_item(spec, p, len, &topo, &given, errmsg);
      if (rc)
        return rc;
      listing = strncmp(p, "nodes=", 6) == 0;
      if (strncmp(p, "nics=", 5) == 0)
        nics_at = p;
      if (listing && rows && room > 0)
        rows[counts++] = topo.nodes;
    }
    p += len + (comma != NULL);
    if (comma && !*p)
      return TOPO_ERR(spec, p, 0, "an empty item");
  }
  if (!(given & 2))
    return TOPO_ERR(spec, spec, 0, "give gpus= (GPUs per node), or a preset");
  if (!(given & 8) || !(given & 16))
    return TOPO_ERR(spec, spec, 0,
                    "give intra= and nic= (LATENCY/BANDWIDTH), or a preset");
  const int nics_item = (given & ((1u << ITEM_SHIFT) << 2)) != 0;
  if (topo.nics > topo.gpus)
    return TOPO_ERR(spec, nics_at, nics_item ? strcspn(nics_at, ",") : 0,
                    "%snics=%d is more NICs than the node's %d GPUs",
                    nics_item ? "" : "the preset's ", topo.nics, topo.gpus);
  *t = topo;
  if (row_count)
    *row_count = counts;
  return RS_OK;
}

int rs_topo_parse(const char *spec, rs_topo_t *t, char *errmsg) {
  return rs_topo_parse_rows(spec, t, NULL, 0, NULL, errmsg);
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

/* ---- contention --------------------------------------------------------
 * A step's counts: every worker's destinations, each GPU counted once on
 * its NIC's send side if it sends to another node, once on its NIC's
 * receive side if another node sends to it; the counts kept as the sorted
 * list of the sides crossed, which is what two steps compare by. */

/* What building a load needs besides the load: scratch for one step. */
typedef struct rs_topo_builder {
  const rs_topo_t *t;
  int workers;
  rs_shape_t shape; /* what sends is asked with */
  rs_topo_sends_t sends;
  uint32_t *count;   /* per NIC side (2 N K), zero between steps */
  int *sent, *got;   /* per worker: the last step it was counted in */
  uint32_t *touched; /* the sides this step crossed */
  uint32_t touched_n;
  uint64_t *hash;      /* per pattern */
  uint32_t *table;     /* open addressing: pattern + 1, or 0 */
  uint32_t table_size; /* a power of two, more than twice the steps */
  size_t entries, entries_cap;
} builder_t;

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

static void bump(builder_t *b, uint32_t side) {
  if (b->count[side]++ == 0)
    b->touched[b->touched_n++] = side;
}

/* Step s's sides, sorted, into b->touched (their counts in b->count). */
static void count_step(builder_t *b, int s) {
  const rs_topo_t *t = b->t;
  const uint32_t NK = (uint32_t)t->nodes * (uint32_t)t->nics;
  int dst[RS_TOPO_MAX_SENDS];
  b->touched_n = 0;
  for (int r = 0; r < b->workers; r++) {
    int n = b->sends(b->shape, s, r, dst, RS_TOPO_MAX_SENDS);
    for (int i = 0; i < n; i++) {
      if (rs__topo_node(t, r) == rs__topo_node(t, dst[i]))
        continue;
      if (b->sent[r] != s) {
        b->sent[r] = s;
        bump(b, (uint32_t)rs__topo_nic(t, r));
      }
      if (b->got[dst[i]] != s) {
        b->got[dst[i]] = s;
        bump(b, NK + (uint32_t)rs__topo_nic(t, dst[i]));
      }
    }
  }
  /* in order: sorted, or (when many) read off the counters */
  const uint32_t sides = 2 * NK;
  if (b->touched_n > sides / 16) {
    b->touched_n = 0;
    for (uint32_t side = 0; side < sides; side++)
      if (b->count[side])
        b->touched[b->touched_n++] = side;
  } else {
    qsort(b->touched, b->touched_n, sizeof *b->touched, cmp_u32);
  }
}

static uint64_t hash_step(const builder_t *b) {
  uint64_t h = 14695981039346656037ull;
  for (uint32_t i = 0; i < b->touched_n; i++) {
    h = (h ^ b->touched[i]) * 1099511628211ull;
    h = (h ^ b->count[b->touched[i]]) * 1099511628211ull;
  }
  return h;
}

/* Is pattern p's list the step's? */
static int same(const builder_t *b, const rs_topo_load_t *l, uint32_t p) {
  if (l->first[p + 1] - l->first[p] != b->touched_n)
    return 0;
  for (uint32_t i = 0; i < b->touched_n; i++) {
    const uint32_t e = l->first[p] + i, side = b->touched[i];
    if (l->side[e] != side || l->count[e] != b->count[side])
      return 0;
  }
  return 1;
}

/* Pattern p's dense counts, if it crosses at least one side in 8 (and
 * they fit the 32-bit offsets). */
static int densify(rs_topo_load_t *l, uint32_t p) {
  const size_t sides = 2 * (size_t)l->topo.nodes * (size_t)l->topo.nics;
  const size_t n = l->first[p + 1] - l->first[p];
  l->dense_at[p] = UINT32_MAX;
  if (8 * n < sides || l->dense_len + sides >= UINT32_MAX)
    return RS_OK;
  if (l->dense_len + sides > l->dense_cap) {
    const size_t cap = 2 * (l->dense_len + sides);
    uint32_t *dense = realloc(l->dense, cap * sizeof *dense);
    if (!dense)
      return RS_ENOMEM;
    l->dense = dense;
    l->dense_cap = cap;
  }
  uint32_t *dense = l->dense + l->dense_len;
  memset(dense, 0, sides * sizeof *dense);
  for (uint32_t e = l->first[p]; e < l->first[p + 1]; e++)
    dense[l->side[e]] = l->count[e];
  l->dense_at[p] = (uint32_t)l->dense_len;
  l->dense_len += sides;
  return RS_OK;
}

/* The step's list as a new pattern (the last). */
static int add_pattern(builder_t *b, rs_topo_load_t *l, uint64_t h) {
  if (b->entries + b->touched_n > b->entries_cap) {
    size_t cap = 2 * (b->entries + b->touched_n) + 16;
    uint32_t *side = realloc(l->side, cap * sizeof *side);
    if (side)
      l->side = side;
    uint32_t *count = side ? realloc(l->count, cap * sizeof *count) : NULL;
    if (!count)
      return RS_ENOMEM;
    l->count = count;
    b->entries_cap = cap;
  }
  const uint32_t p = l->patterns++;
  for (uint32_t i = 0; i < b->touched_n; i++) {
    l->side[b->entries + i] = b->touched[i];
    l->count[b->entries + i] = b->count[b->touched[i]];
  }
  b->entries += b->touched_n;
  l->first[p + 1] = (uint32_t)b->entries;
  b->hash[p] = h;
  return densify(l, p);
}

/* Step s: find its pattern, or add it. */
static int place_step(builder_t *b, rs_topo_load_t *l, int s) {
  count_step(b, s);
  const uint64_t h = hash_step(b);
  uint32_t slot = (uint32_t)h & (b->table_size - 1);
  int rc = RS_OK;
  for (;; slot = (slot + 1) & (b->table_size - 1)) {
    const uint32_t held = b->table[slot];
    if (held == 0) {
      rc = add_pattern(b, l, h);
      b->table[slot] = l->patterns;
      l->pattern[s] = l->patterns - 1;
      break;
    }
    if (b->hash[held - 1] == h && same(b, l, held - 1)) {
      l->pattern[s] = held - 1;
      break;
    }
  }
  for (uint32_t i = 0; i < b->touched_n; i++)
    b->count[b->touched[i]] = 0;
  return rc;
}

static void builder_free(builder_t *b) {
  if (!b)
    return;
  free(b->count);
  free(b->touched);
  free(b->sent);
  free(b->got);
  free(b->hash);
  free(b->table);
  free(b);
}

int rs__topo_load_lazy(rs_topo_load_t *l, const rs_topo_t *t, int steps,
                       rs_topo_sends_t sends) {
  const rs_shape_t shape = {t->nodes * t->gpus, t->gpus, 1, NULL};
  return rs__topo_load_shape_lazy(l, t, shape, steps, sends);
}

int rs__topo_load_shape_lazy(rs_topo_load_t *l, const rs_topo_t *t,
                             rs_shape_t shape, int steps,
                             rs_topo_sends_t sends) {
  memset(l, 0, sizeof *l);
  l->topo = *t;
  /* A NIC for every GPU: no NIC side is crossed by two GPUs, every share
   * is 1, and there is nothing to count. */
  l->steps = steps > 0 && t->nics < t->gpus ? steps : 0;
  const int W = t->nodes * t->gpus;
  const size_t sides = 2 * (size_t)t->nodes * (size_t)t->nics;
  builder_t *b = calloc(1, sizeof *b);
  if (!b)
    return RS_ENOMEM;
  *b = (builder_t){
      .t = &l->topo, .workers = W, .shape = shape, .sends = sends,
      .table_size = 16};
  l->builder = b;
  while (b->table_size < 2 * (uint32_t)l->steps + 2)
    b->table_size *= 2;
  b->count = calloc(sides, sizeof *b->count);
  b->touched = malloc(sides * sizeof *b->touched);
  b->sent = malloc((size_t)W * sizeof *b->sent);
  b->got = malloc((size_t)W * sizeof *b->got);
  b->hash = malloc(((size_t)l->steps + 1) * sizeof *b->hash);
  b->table = calloc(b->table_size, sizeof *b->table);
  l->pattern = malloc(((size_t)l->steps + 1) * sizeof *l->pattern);
  l->first = calloc((size_t)l->steps + 2, sizeof *l->first);
  l->dense_at = malloc(((size_t)l->steps + 1) * sizeof *l->dense_at);
  if (!(b->count && b->touched && b->sent && b->got && b->hash && b->table &&
        l->pattern && l->first && l->dense_at)) {
    rs__topo_unload(l);
    return RS_ENOMEM;
  }
  for (int r = 0; r < W; r++)
    b->sent[r] = b->got[r] = -1;
  return RS_OK;
}

int rs__topo_load_step(rs_topo_load_t *l, int step) {
  int rc = RS_OK;
  step = step < l->steps ? step : l->steps - 1;
  while (rc == RS_OK && l->placed <= step)
    rc = place_step(l->builder, l, l->placed++);
  if (l->placed == l->steps) { /* (the scratch is done with) */
    builder_free(l->builder);
    l->builder = NULL;
  }
  return rc;
}

int rs__topo_load_repeat(rs_topo_load_t *l, int step, int count) {
  int rc = rs__topo_load_step(l, step);
  for (int k = 1; rc == RS_OK && k <= count && step + k < l->steps; k++)
    if (l->placed == step + k) /* (else placed already) */
      l->pattern[l->placed++] = l->pattern[step];
  if (l->builder && l->placed == l->steps) {
    builder_free(l->builder);
    l->builder = NULL;
  }
  return rc;
}

int rs__topo_load(rs_topo_load_t *l, const rs_topo_t *t, int steps,
                  rs_topo_sends_t sends) {
  const rs_shape_t shape = {t->nodes * t->gpus, t->gpus, 1, NULL};
  return rs__topo_load_shape(l, t, shape, steps, sends);
}

int rs__topo_load_shape(rs_topo_load_t *l, const rs_topo_t *t,
                        rs_shape_t shape, int steps, rs_topo_sends_t sends) {
  int rc = rs__topo_load_shape_lazy(l, t, shape, steps, sends);
  if (rc == RS_OK)
    rc = rs__topo_load_step(l, l->steps - 1);
  if (rc)
    rs__topo_unload(l);
  return rc;
}

void rs__topo_unload(rs_topo_load_t *l) {
  builder_free(l->builder);
  free(l->pattern);
  free(l->first);
  free(l->side);
  free(l->count);
  free(l->dense_at);
  free(l->dense);
  memset(l, 0, sizeof *l);
}

/* The count of side in pattern p, 0 if it is not crossed. */
static uint32_t count_of(const rs_topo_load_t *l, uint32_t p, uint32_t side) {
  if (l->dense_at[p] != UINT32_MAX)
    return l->dense[l->dense_at[p] + side];
  uint32_t lo = l->first[p], hi = l->first[p + 1];
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (l->side[mid] < side)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < l->first[p + 1] && l->side[lo] == side ? l->count[lo] : 0;
}

int rs__topo_load_alike(const rs_topo_load_t *l, const int *perm, int first,
                        int last) {
  const rs_topo_t *t = &l->topo;
  const int W = t->nodes * t->gpus, NK = t->nodes * t->nics;
  /* (steps from l->steps on are never placed: every share is 1) */
  last = last < l->steps ? last : l->steps - 1;
  if (first < 0 || last >= l->placed)
    return 0;
  if (first > last)
    return 1;
  /* each NIC's image: the NIC of its GPUs' images, one for them all */
  int *nic = malloc((size_t)NK * sizeof *nic);
  uint8_t *seen = calloc(l->patterns, 1);
  int alike = nic && seen;
  for (int k = 0; alike && k < NK; k++)
    nic[k] = -1;
  for (int r = 0; alike && r < W; r++) {
    const int a = rs__topo_nic(t, r), b = rs__topo_nic(t, perm[r]);
    alike = nic[a] < 0 || nic[a] == b;
    nic[a] = b;
  }
  /* (the NICs' images are then a permutation: perm is one) */
  for (int step = first; alike && step <= last; step++) {
    const uint32_t p = l->pattern[step];
    if (seen[p])
      continue;
    seen[p] = 1;
    for (uint32_t i = l->first[p]; alike && i < l->first[p + 1]; i++) {
      const uint32_t side = l->side[i], K = (uint32_t)NK;
      const uint32_t image =
          side < K ? (uint32_t)nic[side] : K + (uint32_t)nic[side - K];
      alike = count_of(l, p, image) == l->count[i];
    }
  }
  free(nic);
  free(seen);
  return alike;
}

uint32_t rs__topo_sharing(const rs_topo_load_t *l, int src, int dst, int step) {
  const rs_topo_t *t = &l->topo;
  if (rs__topo_node(t, src) == rs__topo_node(t, dst))
    return 0;
  uint32_t n = 1;
  /* (a step not placed: a simulation that stopped, whose times no one
   * reads, counts it unshared) */
  if (step >= 0 && step < l->placed) {
    const uint32_t p = l->pattern[step];
    const uint32_t NK = (uint32_t)t->nodes * (uint32_t)t->nics;
    const uint32_t out = count_of(l, p, (uint32_t)rs__topo_nic(t, src));
    const uint32_t in = count_of(l, p, NK + (uint32_t)rs__topo_nic(t, dst));
    n = out > n ? out : n;
    n = in > n ? in : n;
  }
  return n;
}

/* ceil(bytes x n x 1e9 / rate) ns; 0 for a zero rate. */
static uint64_t wire_at(size_t bytes, uint32_t n, uint64_t rate) {
  if (rate == 0 || bytes == 0)
    return 0;
  if (bytes <= UINT64_MAX / 2 / 1000000000u / n && rate <= UINT64_MAX / 2)
    return ((uint64_t)bytes * n * 1000000000u + rate - 1) / rate; /* (64 do) */
  const unsigned __int128 num =
      (unsigned __int128)bytes * n * 1000000000u + rate - 1;
  const unsigned __int128 ns = num / rate;
  return ns > UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

uint64_t rs__topo_wire_ns(const rs_topo_t *t, uint32_t n, size_t bytes) {
  const uint64_t port = wire_at(bytes, 1, t->intra.bandwidth);
  const uint64_t nic = wire_at(bytes, n ? n : 1, t->nic.bandwidth);
  return port > nic ? port : nic;
}
