/* bench_model.c - what the schedule simulation's shortcuts buy (ringsim
 * model on thousands of workers), each figure a ratio of two timings made
 * in this one process:
 *
 *   bench_model [MODEL.json] [TOPO] [NODES_FOR_PLAIN]
 *     defaults: examples/gpt2_small.json, dgx-h100, 64
 *
 * 1. Per algorithm, the model's buckets (DDP's 25 MiB) on TOPO with
 *    NODES_FOR_PLAIN nodes: every step played (rs__algo_simulate_plain)
 *    against the steady repeats (rs__algo_simulate: buckets, the ring's
 *    turned steps, the rounds of a step's segments; algo/algo.h), and that
 *    both give the same nanosecond. Then the repeats alone at 512 nodes
 *    (4,096 workers with dgx-h100), where playing every step takes
 *    minutes.
 * 2. --algo auto's choice for one bucket, at the 32 sizes 8 B x 2^k up to
 *    the model's size on 512 nodes: every prediction simulated through
 *    (rs_auto_choose with predictions) against the argmin alone (without:
 *    the lower bounds and the bounded simulations), and that they choose
 *    alike.
 * Prints; asserts nothing but the equalities (exit 1 if one fails).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/algo.h"
#include "algo/list.h"
#include "ringsim/ringsim.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static rs_netmodel_t topo_net(const char *topo, int nodes) {
  char spec[128], err[RS_ERRMSG_MAX];
  rs_netmodel_t net;
  memset(&net, 0, sizeof net);
  snprintf(spec, sizeof spec, "%s,nodes=%d", topo, nodes);
  if (rs_topo_parse(spec, &net.topo, err)) {
    fprintf(stderr, "bench_model: %s\n", err);
    exit(2);
  }
  net.enabled = 1;
  return net;
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : "examples/gpt2_small.json";
  const char *topo = argc > 2 ? argv[2] : "dgx-h100";
  const int plain_nodes = argc > 3 ? atoi(argv[3]) : 64;
  char err[RS_ERRMSG_MAX];
  rs_model_t *model;
  if (rs_model_load(path, &model, err)) {
    fprintf(stderr, "bench_model: %s\n", err);
    return 2;
  }
  rs_bucket_t *buckets;
  size_t count;
  if (rs_model_buckets(model, RS_DEFAULT_FIRST_BUCKET_BYTES,
                       RS_DEFAULT_BUCKET_BYTES, &buckets, &count)) {
    fprintf(stderr, "bench_model: out of memory\n");
    return 2;
  }
  const size_t seg = 256 << 10, elem = 4;
  int bad = 0;

  const rs_netmodel_t small = topo_net(topo, plain_nodes),
                      big = topo_net(topo, 512);
  const int Ws = small.topo.nodes * small.topo.gpus,
            Wb = big.topo.nodes * big.topo.gpus;
  printf("# %s, %zu buckets, %s: every step played against the repeats\n",
         rs_model_name(model), count, topo);
  printf("%-10s %8s %12s %12s %9s %12s\n", "algo", "workers", "played s",
         "repeats s", "ratio", "at W=" /* filled below */);
  for (int a = 0; a < RS_ALGO_COUNT; a++) {
    const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
    const rs_sim_job_t at_small = {algo, &small, Ws, buckets, count, seg, elem};
    const rs_sim_job_t at_big = {algo, &big, Wb, buckets, count, seg, elem};
    double t0 = now_s();
    const uint64_t p = rs__algo_simulate_plain(&at_small);
    double t1 = now_s();
    const uint64_t r = rs__algo_simulate(&at_small);
    double t2 = now_s();
    const uint64_t rb = rs__algo_simulate(&at_big);
    double t3 = now_s();
    if (p != r) {
      printf("MISMATCH %s: played %llu ns, repeats %llu ns\n", algo->name,
             (unsigned long long)p, (unsigned long long)r);
      bad = 1;
    }
    printf("%-10s %8d %12.3f %12.3f %8.1fx %8.3f s (%d)\n", algo->name, Ws,
           t1 - t0, t2 - t1, (t1 - t0) / (t2 - t1 > 1e-9 ? t2 - t1 : 1e-9),
           t3 - t2, Wb);
    (void)rb;
  }

  printf("\n# --algo auto's choice at 32 sizes on %d workers: every "
         "prediction through against the argmin alone\n",
         Wb);
  uint64_t pred[RS_ALGO_COUNT];
  double full = 0, alone = 0;
  const size_t most = rs_model_elems(model);
  for (size_t elems = 2, k = 0; k < 32 && elems <= most; elems *= 2, k++) {
    double t0 = now_s();
    const rs_sim_setup_t on = {&big, Wb, seg, elem};
    const rs_algorithm_t x =
        rs_auto_choose(&on, elems, (1u << RS_ALGO_COUNT) - 1, pred);
    double t1 = now_s();
    const rs_algorithm_t y =
        rs_auto_choose(&on, elems, (1u << RS_ALGO_COUNT) - 1, NULL);
    double t2 = now_s();
    full += t1 - t0;
    alone += t2 - t1;
    if (x != y) {
      printf("MISMATCH at %zu elements: %s against %s\n", elems,
             rs_algorithm_name(x), rs_algorithm_name(y));
      bad = 1;
    }
  }
  printf("every prediction %.3f s, the argmin alone %.3f s: %.1fx\n", full,
         alone, full / (alone > 1e-9 ? alone : 1e-9));
  free(buckets);
  rs_model_free(model);
  return bad;
}
