/* algo/channels.c - NCCL's channels for the ring and the tree
 * (algo/channels.h): the rings' orders, the trees' heads and NCCL's cut
 * of a bucket between the channels. The cut
 * is learnt from NCCL v2.30.7-1's src/enqueue.cc (scheduleCollTasksToPlan)
 * and src/include/device.h (ncclCollCbdPart) and written anew. */
#include "algo/channels.h"

#include <stdlib.h>
#include <string.h>

#include "algo/nccl.h"

int rs__rings_count(const rs_netmodel_t *net, int workers) {
  rs_nccl_system_t sys;
  char errmsg[RS_ERRMSG_MAX];
  const rs_topo_t *t = net ? &net->topo : NULL;
  if (!net || !net->enabled || !t->enabled ||
      (long long)t->nodes * t->gpus != workers ||
      rs_nccl_system_of(t, &sys, errmsg))
    return 1;
  const int c = rs_nccl_channels(&sys, RS_NCCL_RING);
  return c < 1 ? 1 : c > RS_MAX_CHANNELS ? RS_MAX_CHANNELS : c;
}

int rs__rings_make(rs_rings_t *r, const rs_netmodel_t *net, int workers,
                   size_t elem_size) {
  memset(r, 0, sizeof *r);
  r->channels = net && net->channels > 1 ? net->channels : 1;
  r->workers = workers;
  r->identity = 1;
  r->elem_size = elem_size;
  r->proto = net && net->enabled ? net->proto : RS_PROTOCOL_NONE;
  rs_nccl_system_t sys;
  char errmsg[RS_ERRMSG_MAX];
  const rs_topo_t *t = net ? &net->topo : NULL;
  if (!t || !t->enabled || (long long)t->nodes * t->gpus != workers ||
      rs_nccl_system_of(t, &sys, errmsg))
    return RS_OK; /* (a flat network, or one NCCL's model does not know) */
  const size_t W = (size_t)workers, C = (size_t)r->channels;
  r->order = malloc(C * W * sizeof *r->order);
  r->pos = malloc(C * W * sizeof *r->pos);
  r->tree_head = malloc(C * sizeof *r->tree_head);
  if (!r->order || !r->pos || !r->tree_head) {
    rs__rings_free(r);
    return RS_ENOMEM;
  }
  int identity = 1;
  for (size_t c = 0; c < C; c++) {
    int *order = r->order + c * W;
    rs_nccl_ring_order(&sys, (int)c, order);
    r->tree_head[c] = rs_nccl_tree_head(&sys, (int)c);
    for (size_t p = 0; p < W; p++) {
      r->pos[c * W + (size_t)order[p]] = (int)p;
      identity &= order[p] == (int)p;
    }
  }
  r->nccl = 1;
  r->identity = identity;
  return RS_OK;
}

void rs__rings_free(rs_rings_t *r) {
  free(r->order);
  free(r->pos);
  free(r->tree_head);
  r->order = r->pos = r->tree_head = NULL;
}

static size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }

/* NCCL's cut of one all-reduce of elems elements alone on `channels`
 * channels (scheduleCollTasksToPlan with one task: channelId 0, no
 * traffic before it): the first channel's count (lo), the count of each
 * of the mid channels after it, and the last one's (hi, 0: none). */
typedef struct cells_cut {
  size_t lo, mid, hi;
  int mids;
} cells_cut_t;

static cells_cut_t cut_of(size_t elems, size_t elem_size, int channels,
                    rs_protocol_t proto) {
  /* MinTrafficPerChannel: 32 KiB; all-reduce moves 2 bytes of traffic a
   * byte (ncclFuncTrafficPerByte), LL 4 times that */
  const size_t min_traffic = 32 << 10;
  const size_t per_byte = proto == RS_PROTOCOL_LL ? 8 : 2;
  const size_t cell = div_up(div_up(min_traffic, per_byte), 16) * 16;
  const size_t per_cell = cell / elem_size; /* elementsPerCell */
  const size_t cells = div_up(elems * elem_size, cell);
  size_t traffic = elems * elem_size * 2; /* task->trafficBytes */
  traffic = traffic > min_traffic ? traffic : min_traffic;
  const size_t per_channel = div_up(traffic / (size_t)channels, 16) * 16;
  const size_t traffic_per_cell = cell * per_byte;
  size_t cells_per = div_up(per_channel, traffic_per_cell);
  cells_per = cells < cells_per ? cells : cells_per;
  /* "On last channel everything goes to lo" */
  size_t cells_lo = channels == 1 ? cells : cells_per;
  int mids = (int)((cells - cells_lo) / cells_per);
  size_t cells_hi = (cells - cells_lo) % cells_per;
  const int used = 1 + mids + (cells_hi != 0);
  if (channels < used) { /* "Overflowed available channels" */
    mids = channels - 2;
    cells_per = (cells - cells_lo) / (size_t)(mids + 1);
    cells_hi = cells_per + (cells - cells_lo) % (size_t)(mids + 1);
  }
  if (cells_hi == 0 && mids != 0) {
    cells_hi = cells_per;
    mids -= 1;
  }
  cells_cut_t c = {cells_lo * per_cell, mids ? cells_per * per_cell : 0,
             cells_hi * per_cell, mids};
  /* the last part gives back what the whole cells add */
  *(c.hi ? &c.hi : &c.lo) -= cells * per_cell - elems;
  return c;
}

/* The cut, the last one asked again at once: a schedule asks for its
 * bucket's channel by channel, step by step (the ring's lower bound, at
 * every one of its 2(W-1) steps). One a thread: runs and simulations
 * go on side by side. */
static cells_cut_t nccl_cut(size_t elems, size_t elem_size, int channels,
                      rs_protocol_t proto) {
  static _Thread_local struct {
    size_t elems, elem_size;
    int channels;
    rs_protocol_t proto;
    cells_cut_t cut;
  } last = {0, 0, 0, RS_PROTOCOL_NONE, {0, 0, 0, 0}};
  if (last.channels != channels || last.elems != elems ||
      last.elem_size != elem_size || last.proto != proto) {
    last.cut = cut_of(elems, elem_size, channels, proto);
    last.elems = elems;
    last.elem_size = elem_size;
    last.channels = channels;
    last.proto = proto;
  }
  return last.cut;
}

void rs__rings_part(size_t elems, size_t elem_size, int channels,
                      rs_protocol_t proto, int ch, size_t *offset,
                      size_t *count) {
  *offset = 0;
  *count = ch == 0 ? elems : 0;
  if (channels <= 1 || elems == 0 || elem_size == 0)
    return;
  const cells_cut_t c = nccl_cut(elems, elem_size, channels, proto);
  if (ch == 0) {
    *count = c.lo;
  } else if (ch <= c.mids) {
    *offset = c.lo + (size_t)(ch - 1) * c.mid;
    *count = c.mid;
  } else if (ch == c.mids + 1 && c.hi) {
    *offset = c.lo + (size_t)c.mids * c.mid;
    *count = c.hi;
  } else {
    *offset = elems;
  }
}

int rs__rings_busy(size_t elems, size_t elem_size, int channels,
                      rs_protocol_t proto) {
  if (channels <= 1 || elems == 0 || elem_size == 0)
    return 1;
  const cells_cut_t c = nccl_cut(elems, elem_size, channels, proto);
  return 1 + c.mids + (c.hi != 0);
}
