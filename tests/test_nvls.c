/* test_nvls.c - NVLink SHARP's all-reduce (algo/nvls.c) and NVLSTree
 * (algo/nvlstree.c): their results on threads, nvls's simulated time
 * worked by hand, the threaded run and the schedule simulation to the
 * nanosecond, and where they are refused. */
#include "test.h"

#include <stdio.h>
#include <string.h>

#include "core/runstate.h"            /* a hang's chain, set by hand */
#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

/* One node of W GPUs on a switch that reduces, each port (latency, rate). */
static rs_netmodel_t nvls_node(int W, const char *link) {
  char spec[160];
  snprintf(spec, sizeof spec,
           "nodes=1,gpus=%d,nics=1,intra=%s,nic=1us/1GB/s,cc=90,switch=nvls",
           W, link);
  return topo_of(spec, NULL);
}

/* A threaded run of algo (nvls, nvlstree) on W workers of elems
 * elements, with net's slots a queue (its own, or the default): its
 * simulated time; the result checked (exact inputs: bit for bit). */
static uint64_t run_algo(rs_algorithm_t algo, const rs_netmodel_t *net, int W,
                         size_t elems, size_t segment_bytes, rs_op_t op) {
  rs_model_t *m = model_of(elems);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.algo = algo;
  cfg.op = op;
  cfg.segment_bytes = segment_bytes;
  cfg.net = *net;
  if (net->slots > 0)
    cfg.slots = net->slots;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err))
    fail_msg("create: %s", err);
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 1), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  const rs_result_t *res = rs_run_result(run);
  assert_true(res->identical);
  assert_true(res->exact);
  const uint64_t sim = res->sim_ns;
  rs_run_free(run);
  rs_model_free(m);
  return sim;
}

static uint64_t run_nvls(const rs_netmodel_t *net, int W, size_t elems,
                         size_t segment_bytes, rs_op_t op) {
  return run_algo(RS_ALGO_NVLS, net, W, elems, segment_bytes, op);
}

static uint64_t model_algo(rs_algorithm_t algo, const rs_netmodel_t *net,
                           int W, size_t elems, size_t segment_bytes) {
  rs_bucket_t b = {.elem_offset = 0, .elems = elems, .params = 1};
  return rs_netmodel_simulate_algo(algo, net, W, &b, 1, segment_bytes, 4);
}

static uint64_t model_nvls(const rs_netmodel_t *net, int W, size_t elems,
                           size_t segment_bytes) {
  return model_algo(RS_ALGO_NVLS, net, W, elems, segment_bytes);
}

/* nvls-1: W = 2, ports of 1 us and 1 GB/s (a byte a ns), a shard of 250
 * floats (1000 bytes) each, one segment:
 *   reduce: each puts the other's shard into the switch (leaves at 0,
 *   arrives at 2 us), then its own (its link free at 1 us: arrives at
 *   3 us); the switch sends the sum down a latency and 1000 ns later: 5 us;
 *   multicast: the sum leaves at 5 us, arrives at 7 us.
 * 7 us, threaded and simulated; the ring takes 2 (1 + 1) = 4 us here,
 * so on two GPUs the switch's extra hop costs more than it saves. */
static void test_by_hand(void **state) {
  (void)state;
  const rs_netmodel_t net = nvls_node(2, "1us/1GB/s");
  assert_int_equal(model_nvls(&net, 2, 500, 1 << 20), 7000);
  assert_int_equal(run_nvls(&net, 2, 500, 1 << 20, RS_OP_SUM), 7000);
}

/* nvls-1b: the same GPUs and shards in two segments of 500 bytes (500 ns
 * on a link), the multicast of a segment one round after its reduce, so
 * a GPU puts segment 1 in while segment 0's sum comes down. Each GPU:
 *   round 0: put(0) for the other head leaves at 0 (there at 1.5 us), its
 *     own at 0.5 us (there at 2 us); sum(0) down at 2 + 1 + 0.5 = 3.5 us;
 *   round 1: put(1) at 1 us (there 2.5), its own at 1.5 us (there 3);
 *     sum(1) down at 3 + 1.5 = 4.5 us; multicast(0), ready since 3.5 us
 *     and the link free since 2 us, leaves at 3.5 us: there at 5 us;
 *   round 2: multicast(1) leaves at 4.5 us, arrives at 6 us.
 * 6 us; with the phases one after the other, multicast(0) would wait for
 * sum(1) (4.5 us) and the last arrive at 7 us. */
static void test_overlap_by_hand(void **state) {
  (void)state;
  const rs_netmodel_t net = nvls_node(2, "1us/1GB/s");
  assert_int_equal(model_nvls(&net, 2, 500, 500), 6000);
  assert_int_equal(run_nvls(&net, 2, 500, 500, RS_OP_SUM), 6000);
}

/* nvls-2: on 3 to 8 GPUs, one or several segments a shard, uneven
 * shards, sum and avg: every worker holds the exact sum, and the threaded
 * run's simulated time is the schedule simulation's to the ns. */
static void test_run_equals_model(void **state) {
  (void)state;
  const int workers[] = {3, 5, 8};
  const size_t elems[] = {1001, 40000};
  const size_t segment[] = {1 << 20, 4096};
  for (size_t a = 0; a < sizeof workers / sizeof *workers; a++)
    for (size_t b = 0; b < sizeof elems / sizeof *elems; b++)
      for (size_t c = 0; c < sizeof segment / sizeof *segment; c++) {
        const rs_netmodel_t net = nvls_node(workers[a], "600ns/450GB/s");
        const uint64_t sim = model_nvls(&net, workers[a], elems[b], segment[c]);
        assert_true(sim > 0);
        assert_int_equal(
            run_nvls(&net, workers[a], elems[b], segment[c],
                     c ? RS_OP_AVG : RS_OP_SUM),
            sim);
      }
}

/* nvls-3: with big buffers the switch's bytes win: each GPU moves about
 * (W+1)/W S each way (its puts and its multicast out; the sum and the
 * other heads' multicasts in), the ring 2(W-1)/W S, so on 8 GPUs nvls
 * needs 1.125 / 1.75 of the ring's time on the wire: with 64 KiB
 * segments (64 rounds: the first reduce and the last multicast are not
 * overlapped) it takes less than three quarters of the ring's. */
static void test_beats_the_ring_on_eight(void **state) {
  (void)state;
  const rs_netmodel_t net = nvls_node(8, "600ns/450GB/s");
  rs_bucket_t b = {.elem_offset = 0, .elems = 8 << 20, .params = 1};
  const uint64_t nvls = rs_netmodel_simulate_algo(RS_ALGO_NVLS, &net, 8, &b, 1,
                                                  64 << 10, 4);
  const uint64_t ring = rs_netmodel_simulate_algo(RS_ALGO_RING, &net, 8, &b, 1,
                                                  64 << 10, 4);
  print_message("8 GPUs, 32 MiB: nvls %llu ns, ring %llu ns\n",
                (unsigned long long)nvls, (unsigned long long)ring);
  assert_true(nvls * 4 < ring * 3);
}

/* nvls-4: refused without their switch, nvls on several nodes and
 * nvlstree on one; one line each, naming what is missing. */
static void test_refusals(void **state) {
  (void)state;
  static const struct {
    rs_algorithm_t algo;
    const char *spec, *said;
  } cases[] = {
      {RS_ALGO_NVLS, NULL, "give --topo"},
      {RS_ALGO_NVLS, "dgx-a100", "does not reduce"},
      {RS_ALGO_NVLS, "dgx-h100,nodes=2", "NVLSTree"},
      {RS_ALGO_NVLSTREE, NULL, "needs nodes"},
      {RS_ALGO_NVLSTREE, "dgx-h100", "NCCL runs NVLS (--algo nvls)"},
      {RS_ALGO_NVLSTREE, "dgx-a100,nodes=2", "does not reduce"},
  };
  rs_model_t *m = model_of(1000);
  char err[RS_ERRMSG_MAX];
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = 8;
    cfg.algo = cases[i].algo;
    if (cases[i].spec) {
      assert_int_equal(rs_topo_parse(cases[i].spec, &cfg.net.topo, err),
                       RS_OK);
      cfg.net.enabled = 1;
      cfg.workers = cfg.net.topo.nodes * cfg.net.topo.gpus;
    }
    rs_run_t *run = NULL;
    assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_EINVAL);
    if (!strstr(err, cases[i].said))
      fail_msg("%s on %s: %s", rs_algorithm_name(cases[i].algo),
               cases[i].spec ? cases[i].spec : "no topology", err);
    assert_null(strchr(err, '\n'));
  }
  rs_model_free(m);
}

/* nvlstree-1: 2 to 8 nodes of 2 to 8 GPUs, one NIC a GPU or fewer,
 * uneven shards, one or several units, 8, 1 or 2 slots a queue (one slot:
 * no deadlock), sum and avg: every worker holds the exact result, and the
 * threaded run's simulated time is the schedule simulation's to the ns. */
static void test_nvlstree_run_equals_model(void **state) {
  (void)state;
  static const struct {
    int nodes, gpus, nics;
  } shapes[] = {{2, 2, 2}, {3, 4, 2}, {2, 8, 8}, {4, 2, 1}, {5, 3, 3},
                {8, 2, 2}};
  const size_t elems[] = {1001, 40000};
  const size_t segment[] = {1 << 20, 4096};
  const int slots[] = {0, 1, 2}; /* (0: the default, 8) */
  for (size_t a = 0; a < sizeof shapes / sizeof *shapes; a++)
    for (size_t b = 0; b < sizeof elems / sizeof *elems; b++)
      for (size_t c = 0; c < sizeof segment / sizeof *segment; c++) {
        char spec[160];
        snprintf(spec, sizeof spec, "dgx-h100,nodes=%d,gpus=%d,nics=%d",
                 shapes[a].nodes, shapes[a].gpus, shapes[a].nics);
        rs_netmodel_t net = topo_of(spec, NULL);
        net.slots = slots[(a + b + c) % 3];
        const int W = shapes[a].nodes * shapes[a].gpus;
        const uint64_t sim =
            model_algo(RS_ALGO_NVLSTREE, &net, W, elems[b], segment[c]);
        const uint64_t run = run_algo(RS_ALGO_NVLSTREE, &net, W, elems[b],
                                      segment[c], c ? RS_OP_AVG : RS_OP_SUM);
        if (sim == 0 || run != sim)
          fail_msg("%s n=%zu seg=%zu slots=%d: threaded %llu, model %llu",
                   spec, elems[b], segment[c], net.slots,
                   (unsigned long long)run, (unsigned long long)sim);
      }
}

/* nvlstree-2: the stages pipelined, by hand. 2 nodes of 2 GPUs, one NIC
 * each; NVLink 1 us and 1 GB/s, a NIC 2 us and 1 GB/s (a byte a ns on
 * either); 2000 floats, so 2 shards of 2 halves of 2 units of 250 floats
 * (1000 bytes: 1 us on any wire). Tree 0 (halves 0) has its root on node
 * 0, tree 1 on node 1; D = 1, so a unit's reduce is in round u, its climb
 * in round u + 1 (the root takes it then), its way down in round u + 2,
 * its multicast in round u + 3 (nvlstree.c). Unit (h, u) is half h's
 * unit u. A GPU's puts and multicasts go through its NVLink port, its
 * tree's sends through its NIC side, beside them (netmodel.h); a unit's
 * data is ready at the worker's clock when its receive is taken. GPU 0
 * (root of tree 0; GPU 1 alike, its shard's), GPU 2 (root of tree 1; GPU
 * 3 alike):
 *   round 0: each puts (0,0) for the other head (port 0-1 us), its own
 *     (1-2 us, in the switch at 3 us): the sum down at 3 + 1 + 1 = 5 us;
 *     (1,0) alike a round of the port later: puts 2-4 us, sum at 7 us.
 *   round 1: (0,1) and (1,1) alike: puts 4-6 and 6-8 us, sums at 9 and
 *     11 us (the clocks at 11). Climb, on the NIC sides: GPU 2 sends
 *     (0,0) up at 5 us, there at 5 + 1 + 2 = 8; GPU 0 takes it at 8,
 *     ready at its clock, 11. GPU 0 sends (1,0) up at 7, GPU 2 takes it
 *     at 10, ready at 11.
 *   round 2: GPU 2 sends (0,1) up at 9, GPU 0 takes it at 12; GPU 0 sends
 *     (0,0) down at 11, GPU 2 takes it at 14. GPU 0 sends (1,1) up at 12
 *     (its NIC side's next free), GPU 2 takes it at 15; GPU 2 sends (1,0)
 *     down at 11, GPU 0 takes it at 14.
 *   round 3: GPU 0 sends (0,1) down at 13, GPU 2 takes it at 16; GPU 2
 *     sends (1,1) down at 15, GPU 0 takes it at 18. Multicasts, on the
 *     NVLink ports: GPU 0's (0,0) at 11, (1,0) at 14, taken at 13 and
 *     16; GPU 2's (0,0) at 14, (1,0) at 15, taken at 16 and 17.
 *   round 4: GPU 0 multicasts (0,1) at 15 and (1,1) at 18, taken at 17
 *     and 20; GPU 2 its at 16 and 17, taken at 18 and 19.
 * 20 us, threaded and simulated. Through one port each way (the NIC's
 * traffic after the NVLink's) it took 23 us; with the stages one after
 * another (the tree's sends after every receive before them), 33 us. */
static void test_nvlstree_pipelined_by_hand(void **state) {
  (void)state;
  const rs_netmodel_t net = topo_of("nodes=2,gpus=2,nics=2,intra=1us/1GB/s,"
                                    "nic=2us/1GB/s,cc=90,switch=nvls",
                                    NULL);
  assert_int_equal(model_algo(RS_ALGO_NVLSTREE, &net, 4, 2000, 1000), 20000);
  assert_int_equal(run_algo(RS_ALGO_NVLSTREE, &net, 4, 2000, 1000, RS_OP_SUM),
                   20000);
}

/* nvls-5: the switch adds shard i's copies in its documented order (algo/
 * nvls.h): GPU i-1's, then i-2's, ..., i+1's, and the head's own last.
 * Inputs where the order shows in the float sum: on each node of G = 3
 * GPUs, element i (shard i, one element a shard) is 1 on local GPU i,
 * 2^24 on GPU i-1 and -2^24 on GPU i+1 (mod 3). The switch's order gives
 * (2^24 - 2^24) + 1 = 1 a node; the head's own first (what the GPUs did
 * before the switch summed) gives (1 + 2^24) - 2^24 = 0, 2^24 + 1 being no
 * float. So nvls holds 1 everywhere, and nvlstree on 2 nodes 1 + 1 = 2,
 * on every GPU, bit for bit. */
static void test_switch_order(void **state) {
  (void)state;
  static const struct {
    rs_algorithm_t algo;
    const char *spec;
    float want;
  } cases[] = {
      {RS_ALGO_NVLS, "nodes=1,gpus=3,nics=1,intra=1us/1GB/s,nic=1us/1GB/s,"
                     "cc=90,switch=nvls",
       1.0f},
      {RS_ALGO_NVLSTREE, "nodes=2,gpus=3,nics=1,intra=1us/1GB/s,"
                         "nic=1us/1GB/s,cc=90,switch=nvls",
       2.0f},
  };
  rs_model_t *m = model_of(3);
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.net = topo_of(cases[c].spec, NULL);
    cfg.workers = cfg.net.topo.nodes * 3;
    cfg.algo = cases[c].algo;
    cfg.op = RS_OP_SUM;
    char err[RS_ERRMSG_MAX];
    rs_run_t *run;
    if (rs_run_create(&cfg, m, &run, err))
      fail_msg("create: %s", err);
    for (int r = 0; r < cfg.workers; r++) {
      float *g = rs_run_buffer(run, r);
      for (int i = 0; i < 3; i++)
        g[i] = r % 3 == i             ? 1.0f
               : r % 3 == (i + 2) % 3 ? 16777216.0f
                                      : -16777216.0f;
    }
    rs_run_mark_filled(run);
    rs_run_execute(run); /* (the check's verdict aside: the bits below) */
    for (int r = 0; r < cfg.workers; r++) {
      const float *g = rs_run_buffer(run, r);
      for (int i = 0; i < 3; i++)
        if (g[i] != cases[c].want)
          fail_msg("%s: GPU %d holds %g in element %d, not %g",
                   rs_algorithm_name(cases[c].algo), r, (double)g[i], i,
                   (double)cases[c].want);
    }
    rs_run_free(run);
  }
  rs_model_free(m);
}

/* nvls-6: the switches are threads of one process: over MPI, nvls and
 * nvlstree are refused, in one line. */
static void test_refused_over_mpi(void **state) {
  (void)state;
  static const struct {
    rs_algorithm_t algo;
    const char *spec;
  } cases[] = {{RS_ALGO_NVLS, "dgx-h100"},
               {RS_ALGO_NVLSTREE, "dgx-h100,nodes=2"}};
  rs_model_t *m = model_of(1000);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.net = topo_of(cases[i].spec, NULL);
    cfg.workers = cfg.net.topo.nodes * cfg.net.topo.gpus;
    cfg.algo = cases[i].algo;
    cfg.mpi = 1;
    char err[RS_ERRMSG_MAX];
    assert_int_equal(rs_run_check(&cfg, m, err), RS_EINVAL);
    if (!strstr(err, "switches are threads of one process"))
      fail_msg("%s over MPI: %s", rs_algorithm_name(cases[i].algo), err);
    assert_null(strchr(err, '\n'));
  }
  rs_model_free(m);
}

/* nvls-7: a hang's chain of waits may pass through the switches
 * (participants W and on): it is followed through them however long it
 * is, up to every participant, and ends at the culprit, not cut short as
 * a cycle once it is longer than the W GPUs. On two nodes of 8 (W = 16,
 * switches 16 and 17): worker 0 waits on switch 16, which waits on
 * worker 1, ... worker 7 on switch 17, which waits on worker 8, ...
 * worker 14 on worker 15, which crashed: 17 hops. (The message keeps
 * the chain's first RS_ERRMSG_MAX bytes.) */
static void test_hang_chain_through_switches(void **state) {
  (void)state;
  rs_model_t *m = model_of(1000);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.net = topo_of("dgx-h100,nodes=2", NULL);
  cfg.workers = 16;
  cfg.algo = RS_ALGO_NVLSTREE;
  cfg.timeout_s = 0.5;
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err))
    fail_msg("create: %s", err);
  assert_int_equal(rs__run_participants(run), 18);
  static const int chain[] = {0, 16, 1, 2,  3,  4,  5,  6,  7,
                              17, 8, 9, 10, 11, 12, 13, 14, 15};
  const int hops = (int)(sizeof chain / sizeof *chain) - 1;
  for (int i = 0; i < hops; i++) {
    rs_worker_t *w = &run->workers[chain[i]];
    w->rc = i == 0 ? RS_ETIMEDOUT : RS_EABORTED;
    w->progress.activity = RS_ACT_RECEIVING;
    w->progress.peer = chain[i + 1];
  }
  run->workers[15].rc = RS_WORKER_CRASHED;
  run->workers[15].progress.activity = RS_ACT_WORKING;
  run->result.status = RS_ETIMEDOUT;
  run->fault_worker = 0;
  snprintf(run->errmsg, sizeof run->errmsg,
           "worker 0 timed out after 0.5 s in reduce_scatter step 0, "
           "waiting to receive chunk 0 from switch 0 (participant 16)");
  rs__run_name_culprit(run);
  static const char want[] =
      "worker 15 crashed (injected) at the start of reduce_scatter step 0; "
      "worker 0 noticed: it timed out after 0.5 s in reduce_scatter step 0, "
      "waiting to receive chunk 0 from switch 0 (participant 16), which "
      "waited on worker 1, which waited on worker 2";
  if (strncmp(run->errmsg, want, strlen(want)) != 0)
    fail_msg("the chain: %s", run->errmsg);
  static const char tail[] = ", which waited on worker 7, which waited on "
                             "switch 1 (participant 17), which waited on "
                             "worker 8";
  if (!strstr(run->errmsg, tail) || strstr(run->errmsg, "cycle"))
    fail_msg("the chain: %s", run->errmsg);
  rs_run_free(run);
  rs_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_by_hand),
      cmocka_unit_test(test_overlap_by_hand),
      cmocka_unit_test(test_run_equals_model),
      cmocka_unit_test(test_beats_the_ring_on_eight),
      cmocka_unit_test(test_refusals),
      cmocka_unit_test(test_nvlstree_run_equals_model),
      cmocka_unit_test(test_nvlstree_pipelined_by_hand),
      cmocka_unit_test(test_switch_order),
      cmocka_unit_test(test_refused_over_mpi),
      cmocka_unit_test(test_hang_chain_through_switches),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
