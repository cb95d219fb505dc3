/* merge.c - the check across processes: the reference's sums of inputs
 * that are not generated, every process's check merged (the worst of
 * each), the results compared by per-block hashes, and the workers that
 * differ listed as one process lists them.
 */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "check/check.h"
#include "mpi/mpi_internal.h"

/* Elements per hash of the cross-process comparison. */
#define HASH_ELEMS ((size_t)1 << 16)

/* Workers not identical: list them as one process does (check.h). Every
 * block whose hash differs between processes, or whose elements differ
 * between a process's workers, is sent from rank 0 (worker 0's) to every
 * process, one at a time, and each compares its own workers with it; the
 * counts are summed, and rank 0 merges the first RS_MISMATCH_LIST of
 * every process's list. Only those blocks cross, and a process holds one
 * at a time. (Collective; out of memory anywhere: no listing.) */
static void list_mismatches(rs_run_t *run, const uint64_t *lo,
                            const uint64_t *hi, size_t blocks) {
  struct rs_mpi *m = run->mpi;
  const mpi_coll_t check = {m->coll, "the check"};
  const size_t n = run->elems, size = run->buf_elem_bytes;
  const int W = run->config.workers;
  unsigned char *differ = calloc(blocks, 1);
  unsigned char *block = malloc(HASH_ELEMS * size);
  rs_mismatch_t *all =
      malloc((size_t)run->procs * RS_MISMATCH_LIST * sizeof *all);
  uint64_t *listed = calloc((size_t)run->procs, sizeof *listed);
  rs_mismatch_t mine[RS_MISMATCH_LIST];
  size_t mine_listed = 0;
  if (!rs__mpi_all(run, differ && block && all && listed && run->mismatches))
    goto done;
  for (size_t b = 0; b < blocks; b++) {
    size_t start = b * HASH_ELEMS;
    size_t len = n - start < HASH_ELEMS ? n - start : HASH_ELEMS;
    differ[b] = lo[b] != hi[b];
    for (int w = run->first_local + 1; w < run->local_end && !differ[b]; w++)
      differ[b] =
          memcmp(run->bufs[w] + start * size,
                 run->bufs[run->first_local] + start * size, len * size) != 0;
  }
  rs__mpi_allreduce(MPI_IN_PLACE, differ, (int)blocks, MPI_UNSIGNED_CHAR,
                    MPI_MAX, &check);
  for (size_t b = 0; b < blocks; b++) {
    if (!differ[b])
      continue;
    size_t start = b * HASH_ELEMS;
    size_t len = n - start < HASH_ELEMS ? n - start : HASH_ELEMS;
    if (run->proc == 0)
      memcpy(block, run->bufs[0] + start * size, len * size);
    rs__mpi_bcast(block, (int)(len * size), MPI_BYTE, 0, &check);
    rs__check_list_block(
        run, start, len, block,
        &(mismatch_tally_t){run->mismatches, mine, &mine_listed});
  }
  rs__mpi_allreduce(MPI_IN_PLACE, run->mismatches, W, MPI_UINT64_T, MPI_SUM,
                    &check);
  uint64_t count = mine_listed;
  rs__mpi_gather(&count, 1, MPI_UINT64_T, listed, 0, &check);
  rs__mpi_gather(mine, (int)sizeof mine, MPI_BYTE, all, 0, &check);
  run->mismatches_listed = 0;
  for (int p = 0; run->proc == 0 && p < run->procs; p++)
    rs__check_list_merge(run->first_mismatches, &run->mismatches_listed,
                         all + (size_t)p * RS_MISMATCH_LIST, (size_t)listed[p]);
done:
  free(differ);
  free(block);
  free(all);
  free(listed);
}

void rs__mpi_check_merge(rs_run_t *run, int *identical) {
  struct rs_mpi *m = run->mpi;
  const mpi_coll_t check = {m->coll, "the check"};
  const size_t n = run->elems, size = run->buf_elem_bytes;
  const size_t blocks = n ? (n + HASH_ELEMS - 1) / HASH_ELEMS : 1;
  const size_t params = rs_model_param_count(run->model);
  uint64_t *lo = malloc(2 * blocks * sizeof *lo);
  double *worst = malloc(4 * (params ? params : 1) * sizeof *worst);
  uint64_t *counts = malloc(4 * (params ? params : 1) * sizeof *counts);
  int ok = lo && worst && counts;
  /* (out of memory anywhere: every process calls the same collectives
   * with what it has, and the result counts as not identical) */
  int same = rs__mpi_all(run, ok && *identical);
  if (!rs__mpi_all(run, ok)) {
    *identical = 0;
    goto done;
  }
  uint64_t *hi = lo + blocks;
  const unsigned char *mine = run->bufs[run->first_local];
  for (size_t b = 0; b < blocks; b++) {
    size_t start = b * HASH_ELEMS;
    size_t len = n - start < HASH_ELEMS ? n - start : HASH_ELEMS;
    lo[b] = n ? rs__checksum(mine + start * size, len * size) : 0;
  }
  memcpy(hi, lo, blocks * sizeof *hi); /* every hash's least and most */
  rs__mpi_allreduce(MPI_IN_PLACE, lo, (int)blocks, MPI_UINT64_T, MPI_MIN,
                    &check);
  rs__mpi_allreduce(MPI_IN_PLACE, hi, (int)blocks, MPI_UINT64_T, MPI_MAX,
                    &check);
  for (size_t b = 0; b < blocks; b++)
    same &= lo[b] == hi[b];
  *identical = same;
  if (!same) /* which elements, of which workers (same everywhere) */
    list_mismatches(run, lo, hi, blocks);
  /* The worst of every process's check, param by param. */
  for (size_t p = 0; p < params; p++) {
    const rs_param_check_t *c = &run->checks[p];
    worst[4 * p] = c->max_abs_err;
    worst[4 * p + 1] = c->max_rel_err;
    worst[4 * p + 2] = c->bound;
    worst[4 * p + 3] = c->worst_ratio;
    counts[4 * p] = c->differing;
    counts[4 * p + 1] = c->wrong;
    counts[4 * p + 2] = c->order_differing;
    counts[4 * p + 3] = c->order_max_ulps;
  }
  rs__mpi_allreduce(MPI_IN_PLACE, worst, (int)(4 * params), MPI_DOUBLE, MPI_MAX,
                    &check);
  rs__mpi_allreduce(MPI_IN_PLACE, counts, (int)(4 * params), MPI_UINT64_T,
                    MPI_MAX, &check);
  for (size_t p = 0; p < params; p++) {
    rs_param_check_t *c = &run->checks[p];
    c->max_abs_err = worst[4 * p];
    c->max_rel_err = worst[4 * p + 1];
    c->bound = worst[4 * p + 2];
    c->worst_ratio = worst[4 * p + 3];
    c->differing = counts[4 * p];
    c->wrong = counts[4 * p + 1];
    c->order_differing = counts[4 * p + 2];
    c->order_max_ulps = counts[4 * p + 3];
  }
done:
  free(lo);
  free(worst);
  free(counts);
}

void rs__mpi_reduce_sums(const rs_run_t *run, void *acc, void *amp, size_t len,
                         int f64) {
  MPI_Datatype type = f64 ? MPI_LONG_DOUBLE : MPI_DOUBLE;
  const rs_op_t op = run->config.op;
  MPI_Op acc_op = op == RS_OP_MIN    ? MPI_MIN
                  : op == RS_OP_MAX  ? MPI_MAX
                  : op == RS_OP_PROD ? MPI_PROD
                                     : MPI_SUM;
  MPI_Op amp_op = op == RS_OP_PROD ? MPI_PROD : MPI_SUM;
  const mpi_coll_t inputs = {ctx(run)->coll, "the reference of the inputs"};
  rs__mpi_allreduce(MPI_IN_PLACE, acc, (int)len, type, acc_op, &inputs);
  rs__mpi_allreduce(MPI_IN_PLACE, amp, (int)len, type, amp_op, &inputs);
}
