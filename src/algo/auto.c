/* algo/auto.c - --algo auto: per bucket, the algorithm the alpha-beta cost
 * formulas predict fastest (as NCCL's tuner picks an algorithm per size),
 * and the measurement of this machine that the formulas then use.
 *
 * DESIGN
 * - The choice is an argmin over the eligible algorithms' predict (algo.h)
 *   for the bucket: no other rule, so `ringsim model --algo all`, the
 *   report and the tests can recompute it from the printed predictions.
 * - The machine's model is measured, not assumed: short ring runs of the
 *   real code (threads, channels, the transfer primitive) at the run's W
 *   (at most CAL_MAX_WORKERS threads), so what W threads on this machine's
 *   cores get is in the numbers. The all-reduce and the reduce-scatter
 *   alone share their fixed costs (thread barriers between iterations), so
 *   their difference isolates the all-gather's W-1 steps: one message
 *   each, a latency and a copy; the reduce-scatter's growth with size adds
 *   the reductions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "algo/list.h"
#include "reduce.h"
#include "util.h"

rs_algorithm_t rs_auto_choose(const rs_netmodel_t *m, int workers, size_t elems,
                              size_t segment_bytes, size_t elem_size,
                              unsigned eligible, uint64_t *predicted) {
  const size_t segs =
      rs_segs_per_chunk(elems, workers, segment_bytes, elem_size);
  rs_algorithm_t best = RS_ALGO_RING;
  uint64_t best_ns = UINT64_MAX;
  for (int a = 0; a < RS_ALGO_COUNT; a++) {
    uint64_t ns = UINT64_MAX;
    if (eligible & (1u << a)) {
      ns = rs_netmodel_predict_algo((rs_algorithm_t)a, m, workers, elems, segs,
                                    segment_bytes, elem_size);
      if (ns < best_ns || best_ns == UINT64_MAX) {
        best_ns = ns;
        best = (rs_algorithm_t)a;
      }
    }
    if (predicted)
      predicted[a] = ns;
  }
  return best;
}

/* The measurement runs at most this many worker threads (a ring step at
 * W=4096 on two cores takes far longer than a calibration may); beyond,
 * the rates are scaled to the larger run's share of the cores. */
#define CAL_MAX_WORKERS 16
/* The larger message: one chunk of at most this many bytes per step. */
#define CAL_CHUNK_BYTES (256u * 1024u)
/* The latency: a chunk of this many floats, one per message. */
#define CAL_SEGS 16

/* The fastest iteration of a ring (ring reduce-scatter alone, with rs) of
 * W chunks of chunk_elems floats per worker, in ns; 0 on error. */
static uint64_t time_ring(int workers, size_t chunk_elems, size_t seg_bytes,
                          int slots, int direct, int rs, int *rc,
                          char *errmsg) {
  char text[160];
  snprintf(text, sizeof text,
           "{\"name\": \"calibration\", \"params\": [{\"name\": \"g\", "
           "\"shape\": [%zu], \"dtype\": \"f32\"}]}",
           chunk_elems * (size_t)workers);
  rs_model_t *model = NULL;
  rs_run_t *run = NULL;
  uint64_t ns = 0;
  *rc = rs_model_parse(text, strlen(text), "calibration", &model, errmsg);
  if (*rc)
    return 0;
  rs_config_t c;
  rs_config_init(&c);
  c.workers = workers;
  c.segment_bytes = seg_bytes;
  c.slots = slots;
  c.direct = direct;
  c.op = RS_OP_SUM;
  c.collective = rs ? RS_COLL_REDUCE_SCATTER : RS_COLL_ALLREDUCE;
  c.bucket_bytes = 0; /* one bucket */
  c.warmup = 2;       /* the first touches fresh pages */
  c.iterations = 16;
  *rc = rs_run_create(&c, model, &run, errmsg);
  if (*rc == RS_OK)
    *rc = rs_run_fill(run, RS_INIT_EXACT, 0);
  if (*rc == RS_OK && (*rc = rs_run_execute(run)) != RS_OK)
    snprintf(errmsg, RS_ERRMSG_MAX, "measuring this machine: %s",
             rs_run_errmsg(run));
  if (*rc == RS_OK)
    ns = rs_run_result(run)->wall_min_ns;
  rs_run_free(run);
  rs_model_free(model);
  return ns;
}

int rs_machine_measure(int workers, size_t segment_bytes, int slots, int direct,
                       rs_netmodel_t *out, char *errmsg) {
  rs_netmodel_t m;
  memset(&m, 0, sizeof m);
  m.enabled = 1;
  if (workers < 2) { /* nothing moves: every algorithm costs nothing */
    *out = m;
    return RS_OK;
  }
  const int W = workers < CAL_MAX_WORKERS ? workers : CAL_MAX_WORKERS;
  size_t chunk =
      segment_bytes < CAL_CHUNK_BYTES ? segment_bytes : CAL_CHUNK_BYTES;
  const size_t big = chunk / sizeof(float) ? chunk / sizeof(float) : 1;
  const double bytes = (double)(big - 1) * sizeof(float);
  int rc = RS_OK;
  /* All-reduces of one float per chunk, of CAL_SEGS floats per chunk sent
   * one per message, and of big floats per chunk in one message. */
  const size_t elems[3] = {1, CAL_SEGS, big};
  const size_t segb[3] = {segment_bytes, sizeof(float), segment_bytes};
  uint64_t t[3];
  for (int i = 0; i < 3 && rc == RS_OK; i++)
    t[i] = time_ring(W, elems[i], segb[i], slots, direct, 0, &rc, errmsg);
  if (rc)
    return rc;
  /* The reduce rate: one thread folding big floats, its share of the
   * cores when W threads run. */
  float *x = calloc(big * 2, sizeof *x);
  if (!x)
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  uint64_t fold_ns = UINT64_MAX;
  for (int rep = 0; rep < 5; rep++) {
    uint64_t t0 = rs__now_ns();
    rs__fold(RS_DTYPE_F32, x, x + big, big, RS_OP_SUM, 0);
    uint64_t ns = rs__now_ns() - t0;
    fold_ns = ns < fold_ns ? ns : fold_ns;
  }
  free(x);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  double busy = W > cores && cores > 0 ? (double)W / (double)cores : 1;
  double reduce_ns = (double)(fold_ns ? fold_ns : 1) * busy;
  /* The differences share the runs' fixed costs (the barriers between
   * iterations), so they are the messages' alone. Noise can make one too
   * small: the floor is 100 ns a message, 1000 GB/s. */
  const double steps = W - 1;
  double alpha = ((double)t[1] - (double)t[0]) / (2 * steps * (CAL_SEGS - 1));
  alpha = alpha > 100 ? alpha : 100;
  /* all-reduce growth: 2(W-1) copies and W-1 reductions of a chunk */
  double copy_ns = (((double)t[2] - (double)t[0]) / steps - reduce_ns) / 2;
  copy_ns = copy_ns > bytes / 1e3 ? copy_ns : bytes / 1e3;
  /* W threads beyond the measured ones share the same cores. */
  double share = workers > W && W > cores ? (double)workers / W : 1;
  m.link.latency_ns = (uint64_t)(alpha * share + 0.5);
  m.link.bandwidth = (uint64_t)(bytes * 1e9 / (copy_ns * share));
  m.reduce_rate = (uint64_t)(bytes * 1e9 / (reduce_ns * share));
  *out = m;
  return RS_OK;
}
