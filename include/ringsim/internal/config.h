/* config.h - the layout of rs_config_t, and the test knobs beside it:
 * NOT part of the public API. Not installed (CMakeLists.txt excludes
 * include/ringsim/internal/), so a program outside ringsim sees rs_config_t
 * as ringsim.h declares it, opaque, and sets it through rs_config_new,
 * rs_config_set and the typed setters (src/api/binding.c); the Python
 * package does the same over ctypes.
 *
 * Who includes it: the library, the command (src/cli, which reads and
 * writes the fields as the library does) and ringsim's own C tests, which
 * keep configs on the stack (rs_config_init). Why here and not in src/:
 * as for command.h, the layers from run/ up to cli/ read the config, and
 * the command sees only include/.
 */
#ifndef RINGSIM_INTERNAL_CONFIG_H
#define RINGSIM_INTERNAL_CONFIG_H

#include <stdint.h>

#include "ringsim/ringsim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Test knobs, as text ("" for none, the default): not settings of a run
 * but ways for ringsim's tests to make one misbehave on purpose. The
 * library reads no environment: the command and the Python package copy
 * these from the variables named here (rs_config_set's "test-flip" and
 * "mpi-trace-batch").
 * - flip, RINGSIM_TEST_FLIP=WORKER:ELEMENT[,...] (up to 64 pairs): flip
 *   the lowest bit of those elements of those workers' results after the
 *   first iteration, before the check, as silent memory corruption would
 *   (docs/reliability.md).
 * - mpi_trace_batch, RINGSIM_MPI_TRACE_BATCH=N: trace records per batch to
 *   rank 0 over MPI, the same in every process (docs/mpi.md).
 * rs_run_create refuses a value it cannot read, naming the variable.
 *
 * Where they live: rs_config_new's config has its own, in the same block
 * (rs_config_free frees both); a config made by rs_config_init has none
 * (test NULL: rs_config_set refuses the knobs) until its owner points it
 * at some (the command: its options' own). Copies of a config share
 * them; whatever keeps a config beyond the call that was given it (a run,
 * a PowerSGD step) copies the knobs too and points its copy at those. */
typedef struct rs_test_knobs {
  char flip[1024];
  char mpi_trace_batch[32];
} rs_test_knobs_t;

struct rs_config {
  int workers;          /* W, 1..RS_MAX_WORKERS */
  size_t segment_bytes; /* largest message through a queue */
  int slots;            /* K, slots per queue */
  double timeout_s;     /* longest a worker waits for a peer */
  rs_op_t op;
  /* For RS_OP_AVG: when it divides by W (default RS_AVERAGE_POST; zero,
   * so a test `if (average)` asks "does it divide first?"). */
  rs_average_t average;
  /* A DDP communication hook (default RS_HOOK_NONE), and PowerSGD's
   * matrix approximation rank R (RS_HOOK_POWERSGD; 1 and up). */
  rs_hook_t hook;
  int powersgd_rank;
  /* PowerSGDState's state carried from step to step (ringsim/powersgd.h):
   * start_powerSGD_iter (the steps before it are the hook's vanilla
   * all-reduce), use_error_feedback and warm_start (0 or 1). Either of
   * the two needs a start of 2 or more, as PowerSGDState demands. All 0
   * by default: every step from fresh state. */
  int powersgd_start;
  int powersgd_feedback;
  int powersgd_warm;
  /* Also compute the result in a fixed order (worker 0, 1, ..., W-1, in
   * float) and count how the algorithm's order changes it (rs_param_check_t's
   * order_ fields). Costs one more buffer. */
  int order_report;
  rs_collective_t collective;
  /* Per-segment checksums, verified by the receiver; forced on when any
   * fault is injected. */
  int checksum;
  /* Copy-free queues: the receiver reduces straight from the sender's
   * buffer (NCCL's direct mode). Faster; the copying queue, which models a
   * network, is the default. */
  int direct;
  /* Lay each bucket out as PyTorch's DDP reducer does once it has rebuilt
   * its buckets (every iteration after the first): its params in reverse
   * order, each param's elements in their own order. The algorithm moves
   * regions of that layout (the trace's elem_offset counts in it); the
   * result comes back in the model's. For gloo-ring's bits (--like
   * ddp-gloo; docs/ddp.md). Not with direct. */
  int ddp_layout;
  /* The loop order. 0 (the default): step by step, each step moving a whole
   * region segment by segment, as the algorithm is taught. 1 (the ring
   * only): NCCL's loop: the bucket is cut into slices of one segment per
   * chunk, and the whole ring (all 2(W-1) steps) runs on one slice before
   * the next, so what a
   * step writes is still in cache when the next step reads it. Same
   * messages, same sums, bit for bit; a different order in time. Not with
   * the network model, which simulates the step order. */
  int slices;
  /* The algorithm (default RS_ALGO_RING). */
  rs_algorithm_t algo;
  /* DDP buckets: the model is all-reduced bucket by bucket, in DDP's order
   * (rs_model_buckets). Defaults: 25 MiB and 1 MiB; bucket_bytes 0 makes
   * one bucket of the whole model. */
  size_t bucket_bytes;
  size_t first_bucket_bytes;
  /* A training step (ringsim/step.h): bucket b starts on worker r's
   * simulated clock no earlier than ready_ns[b W + r], when its last
   * gradient is ready there (rs_step_ready, for these buckets), in every
   * iteration; NULL: at once. The caller keeps the array for the run. */
  const uint64_t *ready_ns;
  /* Run the collective warmup + iterations times on the same threads (as
   * nccl-tests does); the result is checked after the first, and timed over
   * the last `iterations`. Defaults: 0 and 1. */
  int warmup;
  int iterations;
  /* A time budget (ringsim bench without -n), 0 for none: the warm-up ends
   * early once it has taken warmup_budget_s (after at least one
   * iteration), and then only as many timed iterations run as fit in
   * timed_budget_s at the last warm-up iteration's pace (at least one).
   * Needs warmup >= 1. rs_result_t's warmup and iterations say what ran. */
  double warmup_budget_s;
  double timed_budget_s;
  /* Called on the main thread with the iterations done and the warm-up
   * and timed counts planned then: after each iteration the main thread
   * starts (the first; with a time budget, the warm-up's), and while the
   * workers run the others back to back, every 100 ms and after the last;
   * NULL for none. */
  void (*on_iteration)(void *arg, int done, int warmup, int iterations);
  void *on_iteration_arg;
  /* The run will be traced (rs_run_set_trace): rs_run_create counts its
   * event buffers (one record per transfer, over every iteration) in the
   * memory it needs before allocating anything. */
  int traced;
  /* How many times to compute the reference, for a steadier ref_ns
   * (default 1). */
  int ref_reps;
  /* Threads for the reference and the check: 0 (default) one per online
   * core, at most 64. With exactly 1, and generated inputs, the reference
   * is computed before the run as for any other inputs, so ref_ns times
   * the direct mean on one thread (what `ringsim bench` calls ref). */
  int check_threads;
  int fault_count;
  rs_fault_t faults[RS_MAX_FAULTS];
  rs_netmodel_t net; /* simulated time; off unless net.enabled */
  /* --algo auto: the model it chooses by. With net.enabled, net (the
   * simulated network); else this one if machine.enabled (measured before,
   * rs_machine_measure or rs_config_measure_machine: bench measures once
   * for its sizes); else rs_run_create refuses the run. */
  rs_netmodel_t machine;
  /* Run over MPI (rs_mpi_init first, in every process of the job): the W
   * workers are spread over the processes in contiguous blocks, each
   * process runs its own block's threads, and edges between processes go
   * over MPI point-to-point (docs/mpi.md). Every process creates and
   * executes the same run; rank 0 writes the trace. 0: one process. */
  int mpi;
  /* The test knobs (rs_test_knobs_t above), or NULL for none: a config
   * refers to them, it does not hold them. */
  rs_test_knobs_t *test;
};

/* The defaults (rs_config_new's) into a config the caller holds, with no
 * test knobs. Not public: a program outside ringsim cannot know
 * sizeof(rs_config_t), so it takes rs_config_new's. */
void rs_config_init(rs_config_t *config);

#ifdef __cplusplus
}
#endif
#endif /* RINGSIM_INTERNAL_CONFIG_H */
