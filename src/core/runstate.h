/* runstate.h - the state of one run, and how it records a failure.
 *
 * The run (run.c) owns this state and drives it; the modules that fill,
 * check, trace or report on a run (grads.c, check/, io/trace_*.c, explain.c)
 * read and write it here, so none of them calls back into run.c. Failure
 * recording lives here too: the first fault sets the run's status and
 * message (rs__run_fail), the abort flag stops every worker, and, after a
 * timeout, the chain of waits names the worker that caused it.
 */
#ifndef RINGSIM_RUNSTATE_H
#define RINGSIM_RUNSTATE_H

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>

#include "algo/algo.h"
#include "core/job.h"
#include "net/transport.h"
#include "net/xfer.h"
#include "ringsim/internal/config.h" /* the run keeps its config */
#include "ringsim/ringsim.h"

/* The constants of the error bound, one set per run (check_prepare.c's
 * bound_constants).
 */
typedef struct bound_k {
  long double sum_rel, ref_rel, sum_tiny, prod_rel, prod_tiny, div;
  int f64, pre, post;
} bound_k_t;

/* How a run is checked, fixed by rs__check_prepare. */
typedef struct check_plan {
  int exact;  /* exact inputs: the direct mean, compared bit for bit */
  int stream; /* the reference made block by block after the run, from the
                 inputs made again (generated inputs); else kept whole from
                 before the run */
  int fixed;  /* order_report */
  int threads;
  bound_k_t k;
} check_plan_t;

struct rs_run {
  rs_config_t config; /* its test knobs: test below */
  /* The config's test knobs, copied (its caller may free them after
   * rs_run_create): config.test points here. */
  rs_test_knobs_t test;
  const rs_model_t *model;
  size_t elems;
  /* The dtype the algorithm sums in: values rounded to it, the wire sized
   * by it: the model's, or a compressing hook's (rs_hook_dtype). */
  rs_dtype_t dtype;
  rs_dtype_t in_dtype; /* the model's: the inputs' and the result's */
  /* A compressing hook: each worker casts its bucket to dtype before the
   * sum (pool.c counts what the cast and the division lose). */
  int hook_cast;
  size_t elem_size;
  size_t buf_elem_bytes; /* 8 (double) for f64, else 4 (float) */
  unsigned char **bufs;  /* W flat buffers, 64-byte aligned */
  /* Reference, made from the inputs before the ring runs. Arrays marked
   * "buffer type" hold double for f64 and float otherwise. */
  double *ref;     /* the sum or mean per element (any inputs) */
  double *ref_lo;  /* f64 runs: what the long double reference has beyond
                      ref (exactly, where long double is x86's) */
  void *bound;     /* and its error bound per element (buffer type) */
  void *ref_exact; /* exact inputs: the direct mean, exact (buffer type) */
  void *fixed;     /* order_report: the result summed worker 0 first
                      (buffer type) */
  check_plan_t *check_plan; /* how check/ checks this run */
  int check_general;        /* tests: compare every element in
                               check_compare.c's general loop, never its
                               fast f32 ones */
  rs_init_t init;
  /* Filled by rs_run_fill: the inputs can be made again from these, block
   * by block (rs__grads_generate), so the check keeps no copy. */
  int generated;
  uint64_t seed;
  int exact_k; /* RS_INIT_EXACT's range: rs__exact_k, or 128 */
  /* What the run is doing, for rs_run_progress on another thread: the
   * stage (rs_stage_t) and how much of it is done, in units of its own. */
  atomic_int phase;
  atomic_size_t phase_done, phase_total;
  int filled;
  int executed;
  rs_bucket_t *buckets;  /* all-reduced in this order */
  size_t *bucket_segs;   /* segments per chunk, per bucket */
  const rs_algo_t *algo; /* config's; NULL for --algo auto */
  /* The algorithm each bucket runs: config's, or auto's choice. */
  rs_algorithm_t *bucket_choice;
  const rs_algo_t **bucket_algo;
  unsigned algos_used; /* bit a: some bucket runs algorithm a */
  rs_shape_t shape;    /* the workers and their nodes (net/topo.h) */
  struct rs_rings *rings; /* shape's channels' rings (algo/channels.h),
                             the run's; NULL with one channel */
  /* With a topology of several nodes (net/topo.h): each used algorithm's
   * load on the NICs, which its buckets' clocks take (pool.c); else
   * empty. */
  rs_topo_load_t topo_load[RS_ALGO_COUNT];
  /* ... and on NCCL's channels, where a bucket is too small for all of
   * them: busy_load[b], the load of the channels' algorithm with only
   * its first b busy (algo/channels.h's rs__rings_busy_shape), b < C,
   * for each b some bucket has (run.c's rs__run_bucket_load picks a
   * bucket's); NULL: no bucket leaves a channel idle. */
  rs_topo_load_t *busy_load;
  int depth; /* the worst depth (algo.h) of those: the check's */
  /* --algo auto: the model it chose by (measured, or --net's), and every
   * algorithm's prediction per bucket (bucket x RS_ALGO_COUNT; UINT64_MAX
   * for one not eligible). */
  rs_netmodel_t auto_model;
  int auto_measured;
  /* The channels the config gave (net.channels before the run took the
   * ring's own: run.c), which --algo auto chooses under: 0 lets each
   * algorithm take its own. */
  int channels_given;
  uint64_t *bucket_predicted;
  /* NVLink SHARP: the participants beyond the W GPUs, one a node whose
   * switch reduces for some bucket's algorithm (its run_switch), numbered
   * W + node (xfer.h's rs__switch_of); 0 for every other run. They have
   * threads, buffers, edges and trace records like the GPUs; the check,
   * the worker table and the report count the GPUs alone. */
  int switches;
  rs_edge_t *edges; /* the directed edges the algorithm declared */
  int edge_count;
  int *edge_start;  /* edges from worker r: edge_start[r] .. [r+1] - 1 */
  rs_link_t *links; /* every worker's out and in links, end to end */
  rs_worker_t *workers;
  atomic_int abort_flag;
  _Atomic(const char *) interrupted_by; /* a signal's name, or NULL */
  pthread_mutex_t err_mu; /* guards status and errmsg while threads run */
  rs_result_t result;
  rs_param_check_t *checks; /* one per param */
  int checked;              /* rs__check_result ran */
  /* The check's listing of workers that differ from worker 0: per worker
   * (W), elements that differ; the first RS_MISMATCH_LIST of them. */
  uint64_t *mismatches;
  rs_mismatch_t first_mismatches[RS_MISMATCH_LIST];
  size_t mismatches_listed;
  /* test.flip (run/flips.c): bits to flip in worker results before the
   * check, for tests of the check. */
  int flip_count;
  struct {
    int worker;
    size_t elem;
  } flips[64];
  char errmsg[RS_ERRMSG_MAX];
  int fault_worker;  /* the worker that found the first fault, or -1 */
  uint64_t fault_ns; /* when the first fault was found */
  uint64_t t0_ns;    /* when the workers were released: the trace's time 0 */
  /* Tracing (optional): where, the run's id there, and any write error. */
  rs_trace_t *trace;
  char *trace_config_json;
  int64_t trace_run_id;
  int trace_failed;
  char trace_errmsg[RS_ERRMSG_MAX];
  /* Where the workers live (core/job.h): this process alone
   * (rs__job_one), or the processes of an MPI job (rs__job_mpi); chosen
   * once, by run_new. This process's rank of procs, and its workers
   * first_local .. local_end-1; alone: 0 of 1, all W. */
  const rs_job_ops_t *job;
  void *mpi; /* src/mpi's own state (opaque here); NULL for one process */
  int proc, procs;
  int first_local, local_end;
};

/* Does this process host worker r (or switch r: the switches run on
 * threads of one process, never over MPI)? */
static inline int rs__run_local(const rs_run_t *run, int r) {
  return (r >= run->first_local && r < run->local_end) ||
         (r >= run->config.workers && run->procs == 1);
}

/* The run's participants: its W GPUs, then its switches. */
static inline int rs__run_participants(const rs_run_t *run) {
  return run->config.workers + run->switches;
}

/* Exact inputs (RS_INIT_EXACT) are k/16 with |k| <= rs__exact_k: the
 * largest k, at most 128, for which every partial sum of W of them (a
 * multiple of 1/16 of magnitude at most W k / 16) is representable in the
 * dtype, that is W k <= 2^(significand bits). 128 for f32 and f64 up to
 * 131072 workers, for f16 up to 16, for bf16 up to 2; fewer beyond; 0 when
 * not even k = 1 fits (bf16 beyond 256 workers), and the inputs cannot be
 * exact. */
static inline int rs__exact_k(rs_dtype_t dtype, int workers) {
  double k = ldexp(1.0, rs_dtype_mantissa_bits(dtype)) / workers;
  return k >= 128 ? 128 : (int)k;
}

/* Enter phase, of total units (0: not counted). */
static inline void rs__progress_begin(rs_run_t *run, rs_stage_t phase,
                                      size_t total) {
  atomic_store_explicit(&run->phase_done, 0, memory_order_relaxed);
  atomic_store_explicit(&run->phase_total, total, memory_order_relaxed);
  atomic_store_explicit(&run->phase, (int)phase, memory_order_relaxed);
}

/* units more of the phase are done. */
static inline void rs__progress_add(rs_run_t *run, size_t units) {
  atomic_fetch_add_explicit(&run->phase_done, units, memory_order_relaxed);
}

/* A fault another process found (mpi/faults.c): set it as the run's error, as
 * the first fault (worker found it at fault_ns), unless one is set. */
void rs__run_fail_from(rs_run_t *run, int worker, int code, uint64_t fault_ns,
                       const char *message);

/* Set the run's error once (the first fault wins) and return code. */
int rs__run_fail(rs_run_t *run, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Has the run been stopped (rs_run_interrupt, or a fault)? For the long
 * loops before the ring (generating, the reference) to give up early. */
static inline int rs__run_stopped(rs_run_t *run) {
  return atomic_load_explicit(&run->abort_flag, memory_order_relaxed);
}

/* On the thread that runs the run: turn an interrupt (rs_run_interrupt,
 * from another thread, which touches only atomics) into the run's error,
 * unless an earlier fault is the error already; returns the run's status. */
int rs__run_take_interrupt(rs_run_t *run);

/* The worker's state for what a worker's run returned. */
rs_wstate_t rs__worker_wstate(int rc);

/* Stop every worker: set the abort flag and wake every edge's waiters. */
void rs__run_abort(rs_run_t *run);

/* A worker's run returned rc (a fault it found): name the fault, with
 * where the worker was, as the run's error, and stop the others. */
void rs__run_report_fault(rs_run_t *run, const rs_worker_t *w, int rc);

/* After every worker has stopped, if the run timed out: rewrite the error
 * to name the culprit, found by following the chain of waits from the
 * worker that timed out. */
void rs__run_name_culprit(rs_run_t *run);

/* After every worker has stopped, if the run has not failed: a worker that
 * crashed fails it all the same (RS_EABORTED), named with where it
 * crashed. Nobody notices a crash by timing out when every worker crashed,
 * or when no worker waited on the crashed one afterwards; without this
 * such a run ended as a failed check. Over MPI, rank 0 (which holds every
 * worker's state by then) says it. */
void rs__run_name_crashes(rs_run_t *run);

#endif /* RINGSIM_RUNSTATE_H */
