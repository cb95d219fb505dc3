/* machine.c - this machine as a network model, for --algo auto: measured
 * with short real runs (threads, queues, the transfer primitive), so it
 * sits above the run (run.c never calls it): the command, bench and the
 * bindings measure and hand the model to the run in config.machine.
 *
 * The latency: short ring runs of the real code at the run's W (at most
 * CAL_MAX_WORKERS threads), once with one message a step and once with
 * CAL_SEGS; both pay the same fixed costs (the hand-offs between
 * iterations), so their difference is the extra messages' alone: a
 * hand-off between threads as W threads on this machine's cores get it.
 * The bandwidth and the reduce rate: one thread copying (as the copying
 * transport does into a slot) and folding CAL_KERNEL_BYTES, divided among
 * the W workers when they outnumber the cores (in a step every worker
 * copies and folds at once). Minimum over repetitions throughout: the
 * machine may be shared.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/reduce.h"
#include "base/util.h"
#include "ringsim/internal/config.h" /* its runs' configs */

/* The measurement runs at most this many worker threads (a ring step at
 * W=4096 on two cores takes far longer than a calibration may); beyond,
 * the rates are scaled to the larger run's share of the cores. */
#define CAL_MAX_WORKERS 16
/* The copy and the fold are timed over this many bytes. */
#define CAL_KERNEL_BYTES (4u << 20)
/* The latency: a chunk of this many floats, one per message. */
#define CAL_SEGS 8

/* The ring the measurement runs: its worker threads, and its queues'
 * slots, copying or copy-free (direct), as the run measured for has. */
typedef struct cal_ring {
  int workers, slots, direct;
} cal_ring_t;

/* The fastest iteration of ring's all-reduce of W chunks of chunk_elems
 * floats per worker, cut into segments of seg_bytes, in ns; 0 on error
 * (*rc). */
static uint64_t time_ring(const cal_ring_t *ring, size_t chunk_elems,
                          size_t seg_bytes, int *rc, char *errmsg) {
  const int workers = ring->workers;
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
  c.slots = ring->slots;
  c.direct = ring->direct;
  c.op = RS_OP_SUM;
  c.collective = RS_COLL_ALLREDUCE;
  c.bucket_bytes = 0; /* one bucket */
  c.warmup = 2;       /* the first touches fresh pages */
  c.iterations = 10;
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

/* The fastest of a few runs of copying (or folding, with fold) n floats
 * from src into dst on this thread, in ns (at least 1). */
static uint64_t kernel_ns(float *dst, const float *src, size_t n, int fold) {
  uint64_t best = UINT64_MAX;
  for (int rep = 0; rep < 5; rep++) {
    uint64_t t0 = rs__now_ns();
    if (fold)
      rs__fold(RS_DTYPE_F32, dst, src, n, RS_OP_SUM, 0);
    else
      memcpy(dst, src, n * sizeof *dst);
    uint64_t ns = rs__now_ns() - t0;
    best = ns < best ? ns : best;
  }
  return best ? best : 1;
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
  /* The latency: all-reduces of one float per chunk, and of CAL_SEGS
   * floats per chunk sent one per message. They share the runs' fixed
   * costs (the barriers between iterations), so their difference is
   * 2(W-1)(CAL_SEGS-1) messages' alone (noise may make it too small: at
   * least 100 ns a message). */
  const int W = workers < CAL_MAX_WORKERS ? workers : CAL_MAX_WORKERS;
  int rc = RS_OK;
  const cal_ring_t ring = {W, slots, direct};
  uint64_t one = time_ring(&ring, 1, segment_bytes, &rc, errmsg);
  uint64_t many =
      rc ? 0 : time_ring(&ring, CAL_SEGS, sizeof(float), &rc, errmsg);
  if (rc)
    return rc;
  double alpha =
      ((double)many - (double)one) / (2.0 * (W - 1) * (CAL_SEGS - 1));
  alpha = alpha > 100 ? alpha : 100;
  /* The bandwidth and the reduce rate: one thread copying a message into a
   * slot (the copying transport; the direct one copies nothing) and
   * folding one, over CAL_KERNEL_BYTES, and, when W workers outnumber the
   * cores, each worker's share of them. */
  const size_t n = CAL_KERNEL_BYTES / sizeof(float);
  float *x = calloc(n * 2, sizeof *x);
  if (!x)
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  uint64_t copy_ns = kernel_ns(x, x + n, n, 0);
  uint64_t fold_ns = kernel_ns(x, x + n, n, 1);
  free(x);
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  double busy = cores > 0 && workers > cores ? (double)workers / cores : 1;
  /* Threads beyond the measured ones share the same cores: their hand-offs
   * wait for a core as long again. */
  double more = workers > W && W > cores ? (double)workers / W : 1;
  m.link.latency_ns = (uint64_t)(alpha * more + 0.5);
  m.link.bandwidth =
      direct ? 0
             : (uint64_t)((double)CAL_KERNEL_BYTES * 1e9 / (copy_ns * busy));
  m.reduce_rate = (uint64_t)((double)CAL_KERNEL_BYTES * 1e9 / (fold_ns * busy));
  *out = m;
  return RS_OK;
}

int rs_config_measure_machine(rs_config_t *config, char *errmsg) {
  if (config->algo != RS_ALGO_AUTO || config->net.enabled ||
      config->machine.enabled)
    return RS_OK;
  return rs_machine_measure(config->workers, config->segment_bytes,
                            config->slots, config->direct, &config->machine,
                            errmsg);
}
