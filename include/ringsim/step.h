/* step.h - libringsim's training step: DDP's backward, its gradients
 * becoming ready one by one, overlapped with the buckets' all-reduces on
 * the simulated clock (`ringsim step`, docs/step.md).
 *
 * A step is a forward, then a backward that produces the gradients last
 * param first (the model's order reversed, as DDP assumes when it makes
 * its buckets), each at its own time. A bucket is ready when the last of
 * its gradients is; DDP launches the buckets in index order on one
 * communication stream per worker, so bucket b's all-reduce starts on a
 * worker when the bucket is ready there and the worker has finished
 * bucket b-1's. What is left of the all-reduces after the last gradient
 * is the exposed communication.
 *
 * The compute comes from model.json (each param's forward_us and
 * backward_us: docs/model-json.md) or from a rate (rs_compute_t). Times
 * are integer nanoseconds, as the network model's clocks are.
 */
#ifndef RINGSIM_STEP_H
#define RINGSIM_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "ringsim/ringsim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the compute comes from. flops > 0: analytically, at flops FLOP/s
 * for a batch of `rows` rows (tokens or samples): a param of n elements
 * costs 2 rows n FLOPs forward and 4 rows n backward (a linear layer's
 * weight: docs/step.md gives the formula and its limits). flops 0: the
 * model's own forward_us and backward_us. */
typedef struct rs_compute {
  double flops;
  double rows;
} rs_compute_t;

/* "flops=312T,rows=4096" (flops: a number with the suffix G, T or P, in
 * FLOP/s; rows: a positive whole number). RS_OK, or RS_EINVAL naming
 * what is wrong. */
RS_API int rs_compute_parse(const char *spec, rs_compute_t *c, char *errmsg);

/* The compute of each param of model, in ns: forward_ns[p] its forward,
 * backward_ns[p] the time from the gradient before it in backward order
 * (param p+1's; the forward's end for the last param) to its own. Without
 * a rate every param needs a backward_us (forward_us is 0 if not given).
 * RS_OK, or RS_EINVAL naming the param. */
RS_API int rs_step_compute(const rs_model_t *model, const rs_compute_t *c,
                           uint64_t *forward_ns, uint64_t *backward_ns,
                           char *errmsg);

/* One step to time: W workers on the network net with algo, the model's
 * buckets made of cap bucket_bytes (the first first_bucket_bytes; 0: one
 * bucket of the whole model, as DDP's first iteration), each param's
 * compute (rs_step_compute), and one worker computing `slow` times slower
 * (slow_worker -1: none). */
typedef struct rs_step_config {
  int workers;
  rs_algorithm_t algo; /* not RS_ALGO_AUTO */
  rs_netmodel_t net;
  size_t bucket_bytes, first_bucket_bytes, segment_bytes;
  const uint64_t *forward_ns, *backward_ns;
  int slow_worker;
  double slow;
  /* The DDP communication hook: a compressing one (fp16, bf16) moves each
   * bucket in its dtype's bytes; powersgd (of rank powersgd_rank) replaces
   * each bucket's all-reduce by the hook's three, back to back on the
   * bucket's stream (ringsim/powersgd.h's split; a float32 model), its
   * matmuls charged nothing. */
  rs_hook_t hook;
  int powersgd_rank;
  /* Each bucket's all-reduce as one collective of a given time, as NCCL
   * runs a communicator's collectives (`ringsim step --like nccl`). NULL:
   * the algorithm's own schedule on net, worker by worker. Else
   * allreduce_ns(allreduce_ctx, bytes) is the time of one all-reduce of
   * bytes (the bucket's elements in the hook's dtype), in ns, and algo,
   * net and segment_bytes are not read: one stream runs the collectives
   * one after another, and a collective ends only once every worker has
   * joined, so bucket b starts at the latest of its ready times over the
   * workers and bucket b-1's end, and ends its time later, on every
   * worker alike. It may be called from several threads at once;
   * UINT64_MAX from it (no time for those bytes) makes rs_step_simulate
   * fail with RS_EINVAL. Not with the powersgd hook (RS_EINVAL). */
  uint64_t (*allreduce_ns)(void *ctx, uint64_t bytes);
  void *allreduce_ctx;
} rs_step_config_t;

/* A bucket's part of the step, in ns from the step's start. */
typedef struct rs_step_bucket {
  size_t first_param; /* its params: first_param .. first_param + params
                         - 1, in the model's order (rs_bucket_t) */
  size_t params;      /* how many, and its elements */
  size_t elems;
  /* The elements its all-reduces move: elems, or with the powersgd hook
   * its three (uncompressed, P, Q), one after another */
  size_t reduce_elems[3];
  uint64_t ready_ns; /* its last gradient, on the slowest worker */
  uint64_t start_ns; /* every worker has started its all-reduce */
  uint64_t end_ns;   /* every worker has ended it */
  /* The part of it no compute hides: after the last gradient of the step
   * and after the bucket before's end. */
  uint64_t exposed_ns;
} rs_step_bucket_t;

typedef struct rs_step_time {
  uint64_t step_ns;     /* the slowest worker's step */
  uint64_t forward_ns;  /* the slowest worker's forward */
  uint64_t backward_ns; /* and its backward: its last gradient at forward +
                           backward */
  uint64_t comm_ns;     /* the buckets' all-reduces, end - start, summed */
  uint64_t exposed_ns;  /* step - forward - backward */
  size_t bucket_count;
  rs_step_bucket_t *buckets; /* bucket_count, in launch order */
  /* Each worker's lanes: when worker r started and ended bucket b's
   * all-reduce (worker_start[b W + r], worker_end[b W + r]), and its
   * forward's end and its last gradient (worker_forward[r],
   * worker_last_grad[r]). */
  int workers;
  uint64_t *worker_start, *worker_end;
  uint64_t *worker_forward, *worker_last_grad;
} rs_step_time_t;

/* Free what rs_step_simulate allocated in t (and zero it). */
RS_API void rs_step_time_free(rs_step_time_t *t);

/* The ready times of config's buckets of model: ready[b W + r], when
 * bucket b's last gradient is ready on worker r. *ready, *buckets and
 * *count are allocated (free() them). RS_OK or RS_ENOMEM. */
RS_API int rs_step_ready(const rs_model_t *model, const rs_step_config_t *cfg,
                         uint64_t **ready, rs_bucket_t **buckets,
                         size_t *count);

/* One step's timeline on the simulated clocks without threads: the same
 * clocks a threaded run with these ready times keeps (rs_config_set_ready).
 * RS_OK, RS_EINVAL (config: errmsg says why) or RS_ENOMEM; free out with
 * rs_step_time_free. */
RS_API int rs_step_simulate(const rs_model_t *model,
                            const rs_step_config_t *cfg, rs_step_time_t *out,
                            char *errmsg);

/* Record a step's intervals for trace's run run_id (rs_run_trace_id of the
 * run that all-reduced its buckets with its ready times), in table
 * step_interval (docs/trace-schema.md): per iteration (iterations of
 * them, alike) and worker its forward, its backward and each bucket's
 * all-reduce. RS_OK, or RS_EIO with errmsg (nothing written). */
RS_API int rs_trace_add_step(rs_trace_t *trace, int64_t run_id,
                             const rs_step_time_t *step, int iterations,
                             char *errmsg);

#ifdef __cplusplus
}
#endif

#endif /* RINGSIM_STEP_H */
