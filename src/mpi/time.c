/* time.c - MPI_Allreduce's own time on the run's processes, buffer,
 * dtype and op, for `ringsim bench` over MPI to print beside ringsim's.
 */
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "mpi/mpi_internal.h"

int rs_run_time_mpi_allreduce(rs_run_t *run, int warmup, int iterations,
                              uint64_t *ns, char *errmsg) {
  struct rs_mpi *m = run->mpi;
  if (!m)
    return rs__err(errmsg, RS_EINVAL, "the run is not over MPI");
  if (run->dtype != RS_DTYPE_F32 && run->dtype != RS_DTYPE_F64)
    return rs__err(errmsg, RS_EINVAL,
                   "MPI_Allreduce is timed on f32 and f64 only");
  MPI_Datatype type = run->dtype == RS_DTYPE_F64 ? MPI_DOUBLE : MPI_FLOAT;
  MPI_Op op = run->config.op == RS_OP_MIN    ? MPI_MIN
              : run->config.op == RS_OP_MAX  ? MPI_MAX
              : run->config.op == RS_OP_PROD ? MPI_PROD
                                             : MPI_SUM;
  const size_t n = run->elems, bytes = n * run->buf_elem_bytes;
  void *in = malloc(bytes ? bytes : 1), *out = malloc(bytes ? bytes : 1);
  int ok = in && out && n <= (size_t)INT32_MAX;
  if (ok)
    memcpy(in, run->bufs[run->first_local], bytes);
  if (!rs__mpi_all(run, ok)) {
    free(in);
    free(out);
    return rs__err(errmsg, RS_ENOMEM, "out of memory for MPI_Allreduce");
  }
  for (int i = 0; i < warmup; i++)
    MPI_Allreduce(in, out, (int)n, type, op, m->coll);
  {
    MPI_Request req;
    MPI_Ibarrier(m->coll, &req);
    rs__mpi_coll_wait(&req, "timing MPI_Allreduce");
  }
  uint64_t t0 = rs__now_ns();
  for (int i = 0; i < iterations; i++)
    MPI_Allreduce(in, out, (int)n, type, op, m->coll);
  uint64_t mine = (rs__now_ns() - t0) /
                  (uint64_t)(iterations > 0 ? iterations : 1),
           slowest = 0;
  rs__mpi_allreduce(&mine, &slowest, 1, MPI_UINT64_T, MPI_MAX,
                    &(mpi_coll_t){m->coll, "timing MPI_Allreduce"});
  *ns = slowest;
  free(in);
  free(out);
  return RS_OK;
}
