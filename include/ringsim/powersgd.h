/* powersgd.h - one PowerSGD step, as PyTorch 1.13's powerSGD_hook takes it
 * from fresh state (torch/distributed/algorithms/ddp_comm_hooks/
 * powerSGD_hook.py; docs/hooks.md):
 *
 *   per DDP bucket, each param viewed as a matrix M (shape[0] x the rest),
 *   of rank r = min(n, m, R), compressed iff (n + m) r 2 < n m (the hook's
 *   min_compression_rate 2; so never a 1-D param);
 *   1. the uncompressed params, one flat buffer: all-reduced (sum), / W;
 *   2. Q (m x r) random, orthogonalised; P = M Q, all-reduced (sum);
 *   3. P orthogonalised (Gram-Schmidt); Q = M^T P, all-reduced (sum), / W;
 *   4. the result P Q^T; the error-feedback residual g_w - result on each
 *      worker (what the hook's error_dict keeps for the next step).
 *
 * Each all-reduce is a run of its own (rs_run_create), on the config's
 * algorithm, checked and traced: three a bucket. Float32 models only, as
 * the hook's arithmetic is float32's here.
 */
#ifndef RINGSIM_POWERSGD_H
#define RINGSIM_POWERSGD_H

#include "ringsim/ringsim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A param as the hook treats it. */
typedef struct rs_powersgd_tensor {
  size_t param;  /* its index in the model */
  size_t bucket; /* rs_model_buckets' index */
  int64_t n, m;  /* its matrix view: shape[0] x the rest (a scalar 1 x 1) */
  int rank;      /* compressed: min(n, m, R); 0: all-reduced as it is */
} rs_powersgd_tensor_t;

/* The three all-reduces of a bucket: the uncompressed params, P and Q. */
enum { RS_PSGD_UNCOMPRESSED, RS_PSGD_P, RS_PSGD_Q, RS_PSGD_REDUCES };

typedef struct rs_powersgd_bucket {
  size_t elems;      /* the bucket's elements */
  size_t compressed; /* its params compressed, and the rest */
  size_t uncompressed;
  size_t reduce_elems[RS_PSGD_REDUCES]; /* elements each all-reduce moves */
  uint64_t bytes[RS_PSGD_REDUCES];      /* bytes all workers sent in it */
  uint64_t sim_ns[RS_PSGD_REDUCES];     /* its simulated time (a network) */
  int64_t trace_id[RS_PSGD_REDUCES];    /* its run in the trace, or -1 */
} rs_powersgd_bucket_t;

typedef struct rs_powersgd_report {
  size_t buckets;
  const rs_powersgd_bucket_t *bucket;
  size_t tensors; /* every param, in bucket order, each bucket's compressed
                     ones in the hook's order (grouped by shape) */
  const rs_powersgd_tensor_t *tensor;
  size_t compressed;    /* params compressed, of all */
  uint64_t bytes;       /* bytes all workers sent in all the all-reduces */
  uint64_t plain_bytes; /* and in the plain all-reduce (no hook) */
  uint64_t sim_ns, plain_sim_ns; /* the same in simulated time (a network) */
  /* The result against the exact mean of the inputs (in double): the
   * largest |difference| and ||result - mean||_F / ||mean||_F. */
  double max_abs_err, rel_err;
  /* Against PowerSGD itself in double from the same Q (its sums in
   * worker order): the largest |difference|, what float32 and the
   * algorithms' order of additions cost. */
  double f64_max_abs;
  /* The error-feedback residual e_w = g_w - result: the largest
   * ||e_w||_F / ||g_w||_F, and whose. */
  double residual_rel;
  int residual_worker;
  int checked; /* every all-reduce ran and passed its check */
} rs_powersgd_report_t;

typedef struct rs_powersgd rs_powersgd_t;

/* The plan for config (its hook RS_HOOK_POWERSGD, its powersgd_rank R)
 * over model's buckets (config's caps, or the model's own). Refused, with
 * errmsg: another dtype than f32, MPI, R below 1 or above every param's
 * min(n, m). */
RS_API int rs_powersgd_create(const rs_config_t *config,
                              const rs_model_t *model, rs_powersgd_t **out,
                              char *errmsg);
RS_API void rs_powersgd_free(rs_powersgd_t *ps);
/* The initial Qs: a model whose params are the compressed params, each
 * named as the param and shaped m x r (torch's q), in the hook's order;
 * and their values (float, that model's layout), which the caller may
 * read from a file (rs_safetensors_read) or leave to
 * rs_powersgd_random_q. */
RS_API const rs_model_t *rs_powersgd_q_model(const rs_powersgd_t *ps);
RS_API float *rs_powersgd_q(rs_powersgd_t *ps);
/* Standard normal Qs from seed: ringsim's own stream (splitmix64 and
 * Box-Muller), not torch's. */
RS_API void rs_powersgd_random_q(rs_powersgd_t *ps, uint64_t seed);
/* Called with each run before it executes and with NULL after, on the
 * caller's thread (to interrupt it from a signal: rs_run_interrupt). */
typedef void (*rs_powersgd_watch_t)(rs_run_t *run);
/* The step: plain is a run of the same model and workers, without a hook,
 * its buffers filled and not executed: its inputs are the workers' grads.
 * It runs plain (for the bytes without PowerSGD), then the three
 * all-reduces of each bucket, each traced in trace (if not NULL) with
 * config_json. Stops at the first run that fails, or at *stop. Returns
 * RS_OK, RS_ECHECK (an all-reduce failed its check), or that run's error
 * (errmsg says which all-reduce). */
RS_API int rs_powersgd_execute(rs_powersgd_t *ps, rs_run_t *plain,
                               rs_trace_t *trace, const char *config_json,
                               rs_powersgd_watch_t watch,
                               const rs_stop_flag_t *stop, char *errmsg);
/* After RS_OK or RS_ECHECK: the result every worker holds (float, model
 * layout), the report, and worker w's residual (float, model layout). */
RS_API const float *rs_powersgd_result(const rs_powersgd_t *ps);
RS_API const float *rs_powersgd_residual(const rs_powersgd_t *ps, int worker);
RS_API const rs_powersgd_report_t *rs_powersgd_report(const rs_powersgd_t *ps);

#ifdef __cplusplus
}
#endif

#endif
