/* test_channel_images.c - channels taken as an earlier channel's image
 * (algo/simrun.h's rs_simchannels_t): NCCL's rings on DGX H100 are one
 * another's with every node's GPUs turned or mirrored alike, and the
 * schedule simulation plays one and relabels its end for the others
 * where the model cannot tell a worker from its image. Held here to the
 * plain simulation, which plays every channel: to the nanosecond, on
 * runs where the images are taken (and the test says so) and where they
 * must not be (a straggler, a slower link, a bucket that leaves the GPUs
 * of a node unlike, NICs shared by several GPUs). */
#include "test.h"

#include <stdio.h>

#include "algo/algo.h"
#include "algo/channels.h"
#include "algo/list.h"
#include "net/topo.h"
#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

/* The run of buckets of f32 elements, elems[0..n-1], on algo, bucket b
 * starting on worker r no earlier than ready[b W + r] (NULL: at once):
 * every worker's start and end of every bucket, with images and played
 * plainly, which must be equal; returns how many channels were taken as
 * images. */
static unsigned same_as_played(rs_algorithm_t algo, const rs_netmodel_t *net,
                               const size_t *elems, size_t n,
                               const uint64_t *ready, const char *what) {
  const int W = net->topo.nodes * net->topo.gpus;
  rs_bucket_t b[8];
  assert_true(n <= 8);
  for (size_t k = 0; k < n; k++)
    b[k] = (rs_bucket_t){.elems = elems[k], .params = 1};
  const rs_sim_job_t job = {rs__algo_get(algo), net, W, b, n, 1 << 18, 4};
  const size_t spans_n = n * (size_t)W;
  uint64_t *at = test_malloc(4 * spans_n * sizeof *at);
  rs_sim_spans_t fast = {at, at + spans_n, 0, 0, 0},
                 plain = {at + 2 * spans_n, at + 3 * spans_n, 0, 0, 0};
  assert_int_equal(rs__algo_simulate_ready(&job, ready, &fast), RS_OK);
  assert_int_equal(rs__algo_simulate_ready_plain(&job, ready, &plain), RS_OK);
  assert_true(plain.end_ns > 0 && plain.end_ns < UINT64_MAX - 1);
  for (size_t i = 0; i < spans_n; i++)
    if (fast.worker_start[i] != plain.worker_start[i] ||
        fast.worker_end[i] != plain.worker_end[i])
      fail_msg("%s: %s, %zu bucket(s) from %zu elements, worker %zu of "
               "bucket %zu: with images %llu..%llu ns (%u played, %u "
               "images), played %llu..%llu",
               rs_algorithm_name(algo), what, n, elems[0], i % (size_t)W,
               i / (size_t)W, (unsigned long long)fast.worker_start[i],
               (unsigned long long)fast.worker_end[i], fast.played,
               fast.images, (unsigned long long)plain.worker_start[i],
               (unsigned long long)plain.worker_end[i]);
  assert_int_equal(fast.end_ns, plain.end_ns);
  assert_int_equal(plain.images, 0);
  test_free(at);
  return fast.images;
}

/* A bucket of f32 elements on which `busy` of the ring's C channels
 * have data (algo/channels.h), found by search; 0 if none. */
static size_t with_busy(const rs_netmodel_t *net, int C, int busy) {
  for (size_t e = 1; e < ((size_t)1 << 26); e += e / 16 + 1)
    if (rs__rings_busy(e, 4, C, net->proto) == busy)
      return e;
  return 0;
}

/* (1) Every busy count from 1 to 16 channels on 2 and 4 DGX H100 nodes,
 * one bucket, and runs of buckets whose first leaves each node's GPUs
 * unlike (3 busy channels: turns and mirrors that are no group), so the
 * next must be played: the same as played, and the images taken where
 * the GPUs are alike. */
static void test_images_are_exact(void **state) {
  (void)state;
  static const char *const specs[] = {"dgx-h100,nodes=2", "dgx-h100,nodes=4"};
  for (size_t k = 0; k < 4; k++) {
    const size_t ti = k % 2;
    const rs_algorithm_t algo = k < 2 ? RS_ALGO_RING : RS_ALGO_TREE;
    const rs_netmodel_t net = topo_of(specs[ti], NULL);
    const int W = net.topo.nodes * net.topo.gpus;
    const int C = rs__algo_channels(&net, algo, W);
    assert_int_equal(C, 16);
    unsigned images = 0, lone = 0;
    for (int busy = 1; busy <= C; busy++) {
      const size_t e = with_busy(&net, C, busy);
      if (!e)
        continue;
      const unsigned got =
          same_as_played(algo, &net, &e, 1, NULL, specs[ti]);
      images += got;
      lone += busy > 1 && got == 0;
    }
    assert_true(images > 0); /* (the images were taken) */
    (void)lone;
    const size_t three = with_busy(&net, C, 3), all = with_busy(&net, C, C);
    assert_true(three && all);
    const size_t runs[][4] = {{three, all, all, three},
                              {all, three, all * 3 + 1, all},
                              {all * 7, all * 7, all * 7, 5}};
    for (size_t i = 0; i < 3; i++)
      same_as_played(algo, &net, runs[i], 4, NULL, specs[ti]);
  }
}

/* (2) Where the model tells GPUs apart, fewer images are taken, and the
 * end is still the played one: a straggler (GPU 5 of node 0: only the
 * relabellings that keep it where it is, mirrors about it, are left);
 * NICs each shared by two GPUs (--topo's nics=4), and DGX A100. Every
 * GPU's link slower alike keeps every image. */
static void unlike_gpus(rs_algorithm_t algo) {
  char err[RS_ERRMSG_MAX];
  rs_netmodel_t slow = topo_of("dgx-h100,nodes=2", NULL);
  rs_netmodel_t late = slow;
  assert_int_equal(rs_netmodel_parse_straggler("worker=5,us=2", &late, err),
                   RS_OK);
  const int W = slow.topo.nodes * slow.topo.gpus;
  const int C = rs__algo_channels(&slow, algo, W);
  const size_t all = with_busy(&slow, C, C), three = with_busy(&slow, C, 3);
  const size_t run[] = {all, three, all};
  const unsigned alike =
      same_as_played(algo, &slow, run, 3, NULL, "alike");
  assert_true(alike > 0);
  assert_true(
      same_as_played(algo, &late, run, 3, NULL, "a straggler") < alike);
  slow.topo.intra.bandwidth /= 2; /* (every GPU alike: every image) */
  assert_int_equal(same_as_played(algo, &slow, run, 3, NULL, "slower"),
                   alike);
  /* gradients ready at different times: node by node (every GPU of a
   * node alike: every image), and GPU by GPU (their order on the node
   * breaks every turn and mirror, in the first bucket) */
  uint64_t ready[3 * 16];
  for (int k = 0; k < 3 * W; k++)
    ready[k] = (uint64_t)(k % W / 8) * 1500;
  assert_int_equal(same_as_played(algo, &slow, run, 3, ready, "nodes"),
                   alike);
  for (int k = 0; k < 3 * W; k++)
    ready[k] = k < W ? (uint64_t)(k % 8) * 700 : 0;
  assert_true(same_as_played(algo, &slow, run, 3, ready, "GPUs") <
              alike);
  const rs_netmodel_t shared =
      topo_of("dgx-h100,nodes=4,nics=4", NULL); /* (two GPUs a NIC) */
  const int Ws = shared.topo.nodes * shared.topo.gpus;
  const int Cs = rs__algo_channels(&shared, algo, Ws);
  for (int busy = 1; busy <= Cs; busy++) {
    const size_t e = with_busy(&shared, Cs, busy);
    if (e)
      same_as_played(algo, &shared, &e, 1, NULL, "two GPUs a NIC");
  }
  const rs_netmodel_t a100 = topo_of("dgx-a100,nodes=3", NULL);
  const int Wa = a100.topo.nodes * a100.topo.gpus;
  const int Ca = rs__algo_channels(&a100, algo, Wa);
  for (int busy = 1; busy <= Ca; busy++) {
    const size_t e = with_busy(&a100, Ca, busy);
    if (e)
      same_as_played(algo, &a100, &e, 1, NULL, "dgx-a100");
  }
}

static void test_unlike_gpus_are_played(void **state) {
  (void)state;
  unlike_gpus(RS_ALGO_RING);
  unlike_gpus(RS_ALGO_TREE);
}

/* (3) The NICs' load alike under a relabelling (topo.h's
 * rs__topo_load_alike), by hand: 2 nodes of 4 GPUs, 2 NICs a node (GPUs
 * 0, 1 on NIC 0; 2, 3 on NIC 1), a ring 0 -> 1 -> ... -> 7 -> 0: in
 * its one step GPU 3 sends off node through NIC 1, GPU 7 back through
 * node 1's NIC 1. Swapping each node's NICs' GPUs (0 1 2 3 -> 2 3 0 1)
 * moves that load to NIC 0: not alike. Swapping GPUs 0 and 1 only keeps
 * every NIC's GPUs on it: alike. Moving GPU 0 to NIC 1 and 2 to NIC 0
 * (0 <-> 2) splits NIC 0's GPUs: not alike, whatever the load. */
static int ring_sends(rs_shape_t shape, int step, int rank, int *dst,
                      int max) {
  (void)step;
  (void)max;
  dst[0] = (rank + 1) % shape.workers;
  return 1;
}

static void test_load_alike_by_hand(void **state) {
  (void)state;
  const rs_netmodel_t net =
      topo_of("nodes=2,gpus=4,nics=2,intra=1us/100GB/s,nic=5us/25GB/s", NULL);
  rs_topo_load_t l;
  assert_int_equal(rs__topo_load(&l, &net.topo, 1, ring_sends), RS_OK);
  static const int swap_nics[8] = {2, 3, 0, 1, 6, 7, 4, 5},
                   swap_in_nic[8] = {1, 0, 2, 3, 5, 4, 6, 7},
                   split[8] = {2, 1, 0, 3, 6, 5, 4, 7};
  assert_int_equal(rs__topo_load_alike(&l, swap_nics, 0, 0), 0);
  assert_int_equal(rs__topo_load_alike(&l, swap_in_nic, 0, 0), 1);
  assert_int_equal(rs__topo_load_alike(&l, split, 0, 0), 0);
  rs__topo_unload(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_images_are_exact),
      cmocka_unit_test(test_unlike_gpus_are_played),
      cmocka_unit_test(test_load_alike_by_hand),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
