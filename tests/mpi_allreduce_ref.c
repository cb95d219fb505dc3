/* mpi_allreduce_ref.c - Open MPI's all-reduce on files, the reference that
 * tests/test_mpi.py compares ringsim's algorithms against bit for bit.
 *
 *   mpirun -np W mpi_allreduce_ref [--hier G] COUNT IN_PATTERN OUT_PATTERN
 *                                  [COUNT IN_PATTERN OUT_PATTERN ...]
 *
 * For each triple in turn, rank r reads COUNT little-endian float32 values
 * (a raw file of exactly 4*COUNT bytes) from IN_PATTERN with every "{r}"
 * replaced by r, calls MPI_Allreduce(MPI_FLOAT, MPI_SUM) on MPI_COMM_WORLD
 * (not in place: the in-place path copies differently, and ringsim's
 * workers do not run in place), and writes its result the same way to
 * OUT_PATTERN. Each triple is its own all-reduce on its own buffers, as if
 * it had a launch of its own (the forced algorithm keeps no state between
 * calls); several per launch spare mpirun's start, which costs far more
 * than the all-reduces.
 *
 * --hier G: the hierarchical all-reduce on nodes of G ranks (rank r on
 * node r / G), composed of MPI's own collectives, as ringsim's hier
 * (src/algo/hier.c) is: MPI_Comm_split by node and by local rank;
 * MPI_Reduce_scatter within the node, block c (the first COUNT mod G one
 * value longer) to local rank c; MPI_Allreduce of each block across the
 * nodes among the ranks of one local rank; MPI_Allgatherv within the
 * node. (Not MPI_Reduce_scatter_block: its blocks are equal, and Open MPI
 * 4.1 has no ring for it.)
 *
 * Which algorithm runs is mpirun's business (--mca
 * coll_tuned_allreduce_algorithm N); this program only moves the data.
 * Usage errors exit 2 on every rank; a rank that cannot read or write its
 * file aborts the job (MPI_Abort), since the others would otherwise wait for
 * it forever inside the collective.
 */
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "mpi_allreduce_ref"

/* Print "mpi_allreduce_ref: rank R: what path: detail" and abort the whole
 * job. */
static void die(int rank, const char *what, const char *path,
                const char *detail) {
  fprintf(stderr, PROG ": rank %d: %s%s%s: %s\n", rank, what, *path ? " " : "",
          path, detail);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1); /* not reached: MPI_Abort does not return */
}

/* pattern with every "{r}" replaced by rank, in a new string (NULL when out
 * of memory). */
static char *rank_path(const char *pattern, int rank) {
  char digits[16];
  size_t digit_len = (size_t)snprintf(digits, sizeof digits, "%d", rank);
  size_t hits = 0;
  for (const char *p = strstr(pattern, "{r}"); p; p = strstr(p + 3, "{r}"))
    hits++;
  char *path = malloc(strlen(pattern) + hits * digit_len + 1);
  if (!path)
    return NULL;
  char *out = path;
  for (const char *p = pattern; *p;) {
    if (strncmp(p, "{r}", 3) == 0) {
      memcpy(out, digits, digit_len);
      out += digit_len;
      p += 3;
    } else {
      *out++ = *p++;
    }
  }
  *out = '\0';
  return path;
}

/* Read exactly count little-endian float32 values; the file must hold
 * nothing else. Byte order is spelled out so the files mean the same on any
 * host. */
static void read_floats(int rank, const char *path, float *values,
                        size_t count) {
  FILE *f = fopen(path, "rb");
  if (!f)
    die(rank, "cannot open", path, strerror(errno));
  unsigned char bytes[4];
  for (size_t i = 0; i < count; i++) {
    if (fread(bytes, 1, 4, f) != 4) {
      char detail[96];
      snprintf(detail, sizeof detail, "%s after %zu of %zu values",
               ferror(f) ? "read error" : "file ends", i, count);
      fclose(f);
      die(rank, "cannot read", path, detail);
    }
    uint32_t bits = (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 |
                    (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24;
    memcpy(&values[i], &bits, sizeof bits);
  }
  int extra = fgetc(f);
  fclose(f);
  if (extra != EOF) {
    char detail[64];
    snprintf(detail, sizeof detail, "longer than %zu float32 values", count);
    die(rank, "cannot read", path, detail);
  }
}

static void write_floats(int rank, const char *path, const float *values,
                         size_t count) {
  FILE *f = fopen(path, "wb");
  if (!f)
    die(rank, "cannot create", path, strerror(errno));
  for (size_t i = 0; i < count; i++) {
    uint32_t bits;
    memcpy(&bits, &values[i], sizeof bits);
    unsigned char bytes[4] = {(unsigned char)bits, (unsigned char)(bits >> 8),
                              (unsigned char)(bits >> 16),
                              (unsigned char)(bits >> 24)};
    if (fwrite(bytes, 1, 4, f) != 4) {
      fclose(f);
      die(rank, "cannot write", path, strerror(errno));
    }
  }
  if (fclose(f) != 0)
    die(rank, "cannot write", path, strerror(errno));
}

/* COUNT as a number of values, 1..INT_MAX; -1 when it is not one. */
static long parse_count(const char *text) {
  char *end = NULL;
  errno = 0;
  long count = strtol(text, &end, 10);
  if (errno || end == text || *end || count < 1 || count > INT_MAX)
    return -1;
  return count;
}

/* MPI's return code rc, or the whole job aborted naming what failed. */
static void check(int rank, int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int text_len = 0;
    MPI_Error_string(rc, text, &text_len);
    die(rank, what, "", text);
  }
}

/* The hierarchical all-reduce of count values (--hier G): node and local
 * are the communicators of rank's node and of its local rank. */
static void hier_allreduce(int rank, const float *in, float *out, long count,
                           int gpus, MPI_Comm node, MPI_Comm local) {
  int *counts = malloc((size_t)gpus * sizeof *counts);
  int *displs = malloc((size_t)gpus * sizeof *displs);
  const int l = rank % gpus;
  if (!counts || !displs)
    die(rank, "cannot allocate", "block counts", strerror(ENOMEM));
  for (int c = 0, at = 0; c < gpus; c++) {
    counts[c] = (int)(count / gpus + (c < count % gpus));
    displs[c] = at;
    at += counts[c];
  }
  float *block = malloc(((size_t)counts[0] + 1) * sizeof *block);
  float *sum = malloc(((size_t)counts[0] + 1) * sizeof *sum);
  if (!block || !sum)
    die(rank, "cannot allocate", "blocks", strerror(ENOMEM));
  check(rank, MPI_Reduce_scatter(in, block, counts, MPI_FLOAT, MPI_SUM, node),
        "MPI_Reduce_scatter failed");
  check(rank, MPI_Allreduce(block, sum, counts[l], MPI_FLOAT, MPI_SUM, local),
        "MPI_Allreduce failed");
  check(rank,
        MPI_Allgatherv(sum, counts[l], MPI_FLOAT, out, counts, displs,
                       MPI_FLOAT, node),
        "MPI_Allgatherv failed");
  free(block);
  free(sum);
  free(counts);
  free(displs);
}

/* One all-reduce: rank's COUNT values from in_pattern, the sum to
 * out_pattern (hierarchical when gpus > 0). */
static void allreduce_files(int rank, long count, const char *in_pattern,
                            const char *out_pattern, int gpus, MPI_Comm node,
                            MPI_Comm local) {
  char *in_path = rank_path(in_pattern, rank);
  char *out_path = rank_path(out_pattern, rank);
  float *in = malloc((size_t)count * sizeof *in);
  float *out = malloc((size_t)count * sizeof *out);
  if (!in_path || !out_path || !in || !out)
    die(rank, "cannot allocate", "buffers", strerror(ENOMEM));

  read_floats(rank, in_path, in, (size_t)count);
  if (gpus > 0)
    hier_allreduce(rank, in, out, count, gpus, node, local);
  else
    check(
        rank,
        MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
        "MPI_Allreduce failed");
  write_floats(rank, out_path, out, (size_t)count);

  free(in);
  free(out);
  free(in_path);
  free(out_path);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size, gpus = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  /* Errors come back as codes, so the message can name the rank. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  /* Every rank sees the same argv, so every rank agrees on a usage error
   * and leaves without entering a collective; rank 0 says why. Every
   * triple is checked before the first all-reduce. */
  const char *bad = NULL;
  int first = 1;
  if (argc > 2 && strcmp(argv[1], "--hier") == 0) {
    long g = parse_count(argv[2]);
    gpus = g > 0 && size % g == 0 ? (int)g : -1;
    if (gpus < 0)
      bad = argv[2];
    first = 3;
  }
  int usage = gpus < 0 || argc < first + 3 || (argc - first) % 3 != 0;
  for (int i = first; !usage && i < argc; i += 3)
    if (parse_count(argv[i]) < 0) {
      usage = 1;
      bad = argv[i];
    }
  if (usage) {
    if (rank == 0)
      fprintf(stderr,
              "usage: " PROG " [--hier G] COUNT IN_PATTERN OUT_PATTERN"
              " [COUNT IN_PATTERN OUT_PATTERN ...]\n"
              "  G: ranks per node, dividing the ranks\n"
              "  COUNT: float32 values per rank, 1..%d%s%s\n"
              "  {r} in the patterns is replaced by the rank\n",
              INT_MAX, bad ? "; got " : "", bad ? bad : "");
    MPI_Finalize();
    return 2;
  }

  MPI_Comm node = MPI_COMM_NULL, local = MPI_COMM_NULL;
  if (gpus > 0) {
    check(rank, MPI_Comm_split(MPI_COMM_WORLD, rank / gpus, rank, &node),
          "MPI_Comm_split by node failed");
    check(rank, MPI_Comm_split(MPI_COMM_WORLD, rank % gpus, rank, &local),
          "MPI_Comm_split by local rank failed");
    MPI_Comm_set_errhandler(node, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(local, MPI_ERRORS_RETURN);
  }
  for (int i = first; i < argc; i += 3)
    allreduce_files(rank, parse_count(argv[i]), argv[i + 1], argv[i + 2], gpus,
                    node, local);
  if (gpus > 0) {
    MPI_Comm_free(&node);
    MPI_Comm_free(&local);
  }

  MPI_Finalize();
  return 0;
}
