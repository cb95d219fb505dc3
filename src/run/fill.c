/* fill.c - rs_run_fill: the workers' generated inputs made on every core
 * (their pages first, then grads.c makes each block), and for exact
 * inputs the check's reference made block by block as they are
 * (check/check_reference.c), while the blocks are in cache. Above both, so
 * that neither needs the other's filling.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "check/check.h"
#include "io/grads.h"
#include "base/parallel.h"
#include "core/runstate.h"
#include "base/util.h"

/* Generating is pure: threads take (worker, block) pieces in turn; the
 * values do not depend on which thread makes them. */
#define FILL_PIECE ((size_t)1 << 18) /* elements */

/* Populating: pieces of the buffers' bytes, on every core. */
#define POPULATE_PIECE ((size_t)16 << 20) /* bytes */

typedef struct fill_job {
  rs_run_t *run;
  atomic_size_t populate; /* the next piece to populate: worker-major */
  atomic_size_t next;     /* the next piece: worker-major */
  size_t pieces_per_worker;
  int populates; /* the buffers are big enough to populate first */
  int reference; /* and the check's reference: pieces of every worker */
} fill_job_t;

/* A piece of the elements for every worker, block by block: each block's
 * W inputs generated and their reference made as they are
 * (check/check_reference.c: exact inputs' direct mean), each worker's
 * block folded in while it is in L1 (folded after all W, they came back
 * from L2 or beyond: 2 MiB a block at W=256), so the check need not make
 * them again after the run. */
static void fill_with_reference(rs_run_t *run, size_t first, size_t len) {
  for (size_t start = first; start < first + len; start += RS_CHECK_BLOCK) {
    size_t block = first + len - start < RS_CHECK_BLOCK ? first + len - start
                                                        : RS_CHECK_BLOCK;
    for (int w = 0; w < run->config.workers; w++) {
      rs__grads_generate(run, w, start, block,
                         run->bufs[w] + start * run->buf_elem_bytes);
      rs__check_fill_fold(run, w, start, block); /* while in L1 */
    }
    rs__check_fill_finish(run, start, block);
  }
}

/* The buffers' pages made at once, before any value is: a big fill
 * otherwise meets its pages one fault at a time over seconds, while a
 * virtual machine's host takes back the free memory it has not yet met
 * (virtio-balloon free page reporting: then each page costs the host a
 * fault too). Only buffers on huge pages (rs__aligned_alloc's, of
 * RS_HUGE_ALLOC bytes and up). Where the kernel cannot (before 5.14),
 * each call fails at once and the fill faults the pages in as ever. The
 * progress line counts a piece's elements as it goes, whether the kernel
 * could or not. */
static void populate_pieces(fill_job_t *job) {
  if (!job->populates)
    return;
  rs_run_t *run = job->run;
  const size_t bytes = run->elems * run->buf_elem_bytes;
  const size_t per_buffer = (bytes + POPULATE_PIECE - 1) / POPULATE_PIECE;
  const size_t total = per_buffer * (size_t)(run->local_end - run->first_local);
  for (;;) {
    size_t piece = atomic_fetch_add(&job->populate, 1);
    if (piece >= total || rs__run_stopped(run))
      return;
    int w = run->first_local + (int)(piece / per_buffer);
    size_t at = piece % per_buffer * POPULATE_PIECE;
    size_t len = bytes - at < POPULATE_PIECE ? bytes - at : POPULATE_PIECE;
    (void)rs__populate(run->bufs[w] + at, len);
    rs__progress_add(run, len / run->buf_elem_bytes);
  }
}

static void *fill_pieces(void *arg) {
  fill_job_t *job = arg;
  rs_run_t *run = job->run;
  populate_pieces(job);
  if (job->reference) {
    for (;;) {
      size_t piece = atomic_fetch_add(&job->next, 1);
      if (piece >= job->pieces_per_worker || rs__run_stopped(run))
        break;
      size_t first = piece * FILL_PIECE;
      size_t len =
          run->elems - first < FILL_PIECE ? run->elems - first : FILL_PIECE;
      fill_with_reference(run, first, len);
      rs__progress_add(run, len * (size_t)run->config.workers);
    }
    return NULL;
  }
  /* (this process's workers: all, or its block over MPI) */
  const int first_worker = run->first_local;
  const size_t total =
      job->pieces_per_worker * (size_t)(run->local_end - first_worker);
  for (;;) {
    size_t piece = atomic_fetch_add(&job->next, 1);
    if (piece >= total || rs__run_stopped(run))
      break;
    int w = first_worker + (int)(piece / job->pieces_per_worker);
    size_t first = piece % job->pieces_per_worker * FILL_PIECE;
    size_t len =
        run->elems - first < FILL_PIECE ? run->elems - first : FILL_PIECE;
    rs__grads_generate(run, w, first, len,
                       run->bufs[w] + first * run->buf_elem_bytes);
    rs__progress_add(run, len);
  }
  return NULL;
}

int rs_run_fill(rs_run_t *run, rs_init_t init, uint64_t seed) {
  if (init != RS_INIT_NORMAL && init != RS_INIT_UNIFORM &&
      init != RS_INIT_EXACT)
    return rs__run_fail(run, RS_EINVAL, "init: unknown kind %d", (int)init);
  run->init = init;
  run->seed = seed;
  /* Beyond what the dtype can keep exact, exact inputs keep the f32
   * range (the check then bounds them as any other). */
  run->exact_k = rs__exact_k(run->dtype, run->config.workers);
  if (run->exact_k == 0)
    run->exact_k = 128;
  fill_job_t job = {
      .run = run,
      .pieces_per_worker = (run->elems + FILL_PIECE - 1) / FILL_PIECE,
      .populates = run->elems * run->buf_elem_bytes >= RS_HUGE_ALLOC,
      .reference = rs__check_fills_reference(run)};
  free(run->ref_exact); /* (a run filled twice) */
  run->ref_exact = NULL;
  if (job.reference && !(run->ref_exact = malloc((run->elems ? run->elems : 1) *
                                                 run->buf_elem_bytes)))
    return rs__run_fail(run, RS_ENOMEM,
                        "out of memory for the reference (%zu elements)",
                        run->elems);
  atomic_init(&job.populate, 0);
  atomic_init(&job.next, 0);
  uint64_t t0 = rs__now_ns();
  /* the progress line's units: every local element populated (a big
   * run), then made */
  const size_t local = run->elems * (size_t)(run->local_end - run->first_local);
  rs__progress_begin(run, RS_STAGE_GENERATE, job.populates ? 2 * local : local);
  rs__parallel(rs__cores(), fill_pieces, &job);
  run->result.fill_ns = rs__now_ns() - t0;
  rs__progress_begin(run, RS_STAGE_IDLE, 0);
  if (rs__run_stopped(run))
    return rs__run_take_interrupt(run);
  run->generated = 1;
  run->filled = 1;
  return RS_OK;
}
