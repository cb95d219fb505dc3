/* powersgd.h - PowerSGD steps, as PyTorch 1.13's powerSGD_hook takes them
 * (torch/distributed/algorithms/ddp_comm_hooks/powerSGD_hook.py;
 * docs/hooks.md), one step per rs_powersgd_execute:
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
 * Over steps, PowerSGDState's (the config's hook
 * powersgd:rank=R,start=S,feedback=on|off,warm=on|off): a step before start is
 * the hook's vanilla all-reduce (allreduce_hook's); with feedback each
 * compressed step adds the last one's residuals to its grads first (step 1
 * above then sees g_w + e_w); with warm start the Qs of a compressed step after
 * the first are the step before's all-reduced Q / W, not a draw.
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
  int step;        /* the step's number: 1 for the first */
  int vanilla;     /* before start: allreduce_hook's all-reduce alone (the
                      bucket fields then say nothing) */
  int q_warm;      /* its Qs the step before's (warm start), not drawn */
  int error_added; /* the step before's residuals added to its grads */
  size_t buckets;
  const rs_powersgd_bucket_t *bucket;
  size_t tensors; /* every param, in bucket order, each bucket's compressed
                     ones in the hook's order (grouped by shape) */
  const rs_powersgd_tensor_t *tensor;
  size_t compressed;    /* params compressed, of all */
  uint64_t bytes;       /* bytes all workers sent in all the all-reduces */
  uint64_t plain_bytes; /* and in the plain all-reduce (no hook) */
  uint64_t sim_ns, plain_sim_ns; /* the same in simulated time (a network) */
  /* The result against the exact mean of the step's inputs (the grads,
   * with the residuals added under feedback; in double): the largest
   * |difference| and ||result - mean||_F / ||mean||_F. */
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

/* The hook's split of each of count buckets of model at rank R, without
 * a step: elems[b * RS_PSGD_REDUCES + k], the elements all-reduce k of
 * bucket b moves (uncompressed, P, Q), as rs_powersgd_bucket_t's
 * reduce_elems (ringsim step times them). RS_OK, or RS_EINVAL for a rank
 * below 1. */
RS_API int rs_powersgd_split(const rs_model_t *model,
                             const rs_bucket_t *buckets, size_t count, int rank,
                             size_t *elems);

/* The plan for config (its hook RS_HOOK_POWERSGD, of rank R)
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
/* Steps executed so far (PowerSGDState.iter). The next step compresses
 * (1) or is the vanilla all-reduce (0, before start); it draws its Qs (1:
 * the caller fills rs_powersgd_q first) or reuses the step before's (0:
 * warm start, or a vanilla step, or nothing compressed). */
RS_API int rs_powersgd_steps_done(const rs_powersgd_t *ps);
RS_API int rs_powersgd_compresses(const rs_powersgd_t *ps);
RS_API int rs_powersgd_draws_q(const rs_powersgd_t *ps);
/* Called with each run before it executes and with NULL after, on the
 * caller's thread (to interrupt it from a signal: rs_run_interrupt). */
typedef void (*rs_powersgd_watch_t)(rs_run_t *run);
/* What a step's runs are told, each NULL for none: the trace each
 * all-reduce is traced in, with the config row config_json; who watches
 * each run (watch); the flag that stops the step before its next run
 * (stop). The caller keeps all of them for the call's length. */
typedef struct rs_powersgd_io {
  rs_trace_t *trace;
  const char *config_json;
  rs_powersgd_watch_t watch;
  const rs_stop_flag_t *stop;
} rs_powersgd_io_t;
/* The next step: plain is a run of the same model and workers with the
 * allreduce hook (allreduce_hook: the bytes of DDP's plain all-reduce),
 * its buffers filled and not executed: its inputs are the step's grads;
 * a fresh one each step. It runs plain (for the bytes without PowerSGD;
 * before start its result is the step's), then the three all-reduces of
 * each bucket, each traced as io says (io NULL: none traced, watched or
 * stopped), and carries the state to the next step. Stops at the first
 * run that fails, or at *io->stop. Returns RS_OK, RS_ECHECK (an
 * all-reduce failed its check), or that run's error (errmsg says which
 * all-reduce); after another error the state is undefined: free ps. */
RS_API int rs_powersgd_execute(rs_powersgd_t *ps, rs_run_t *plain,
                               const rs_powersgd_io_t *io, char *errmsg);
/* After RS_OK or RS_ECHECK: the step's result every worker holds (float,
 * model layout), its report, and worker w's residual (float, model
 * layout; a vanilla step's is its input). */
RS_API const float *rs_powersgd_result(const rs_powersgd_t *ps);
RS_API const float *rs_powersgd_residual(const rs_powersgd_t *ps, int worker);
RS_API const rs_powersgd_report_t *rs_powersgd_report(const rs_powersgd_t *ps);
/* Every step's report so far, in order (*count of them), as each ended
 * (RS_OK or RS_ECHECK); owned by ps, moved by the next step. */
RS_API const rs_powersgd_report_t *rs_powersgd_steps(const rs_powersgd_t *ps,
                                                     int *count);
/* The steps' report as JSON text (docs/cli.md; "schema":
 * "ringsim.powersgd/1", docs/schema/powersgd.json): the plan, every step's
 * figures and the last step's, for iterations steps asked; status and
 * errmsg how they ended (errmsg read unless RS_OK), initial_q where the
 * Qs came from. The command's --json and the Python API print the same.
 * Returns a string the caller frees with rs_free, or NULL out of memory. */
RS_API char *rs_powersgd_json(const rs_powersgd_t *ps, int iterations,
                              int status, const char *errmsg,
                              const char *initial_q);

#ifdef __cplusplus
}
#endif

#endif
