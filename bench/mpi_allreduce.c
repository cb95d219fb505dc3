/* mpi_allreduce.c - time MPI_Allreduce(SUM) of N floats per rank, the
 * baseline bench/mpi_compare.sh sets beside `ringsim bench`.
 *
 *   mpirun -np 4 ./mpi_allreduce BYTES ITERS WARMUP
 *
 * Prints one line from rank 0: bytes, average time in microseconds, and
 * whether every rank's result was exact (the inputs are small integers).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 4) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_allreduce BYTES ITERS WARMUP\n");
    MPI_Finalize();
    return 2;
  }
  long count = atol(argv[1]) / (long)sizeof(float);
  int iters = atoi(argv[2]), warmup = atoi(argv[3]);
  float *in = malloc((size_t)count * sizeof *in);
  float *out = malloc((size_t)count * sizeof *out);
  for (long i = 0; i < count; i++)
    in[i] = (float)((i + rank) % 17 - 8);
  double total = 0;
  for (int it = 0; it < warmup + iters; it++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0, slowest;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (it >= warmup)
      total += slowest;
  }
  long wrong = 0;
  for (long i = 0; i < count; i++) {
    float want = 0;
    for (int r = 0; r < size; r++)
      want += (float)((i + r) % 17 - 8);
    wrong += out[i] != want;
  }
  long all_wrong;
  MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0)
    printf("%ld %.2f %ld\n", count * (long)sizeof(float), total / iters * 1e6,
           all_wrong);
  free(in);
  free(out);
  MPI_Finalize();
  return 0;
}
