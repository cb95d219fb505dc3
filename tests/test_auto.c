/* test_auto.c - --algo auto: its choice is the argmin of the algorithms'
 * cost formulas under the model it uses, and a run whose buckets choose
 * different algorithms is correct, bit for bit. */
#include "test.h"

#include <string.h>

#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

/* auto-1: for many networks, W, sizes and sets of eligible algorithms, the
 * choice is the eligible algorithm with the smallest prediction, the lower
 * one on a tie, and the predictions it reports are predict's. */
static void test_choice_is_argmin(void **state) {
  (void)state;
  const rs_netmodel_t nets[] = {
      net_of("latency=50us,bandwidth=1GB/s", "2GB/s"),
      net_of("latency=1us,bandwidth=25GB/s", NULL),
      net_of("latency=10us,bandwidth=3GB/s", "10GB/s"),
      net_of("latency=100ns,bandwidth=100GB/s", "1GB/s")};
  const int workers[] = {2, 3, 4, 5, 8, 64, 4096};
  const unsigned masks[] = {0x1f, 0x01, 0x19, 0x06};
  const size_t seg_bytes[] = {256 * 1024, 4096};
  int changes = 0;
  for (size_t k = 0; k < sizeof nets / sizeof *nets; k++)
    for (size_t wi = 0; wi < sizeof workers / sizeof *workers; wi++)
      for (size_t mi = 0; mi < sizeof masks / sizeof *masks; mi++)
        for (size_t si = 0; si < 2; si++) {
          rs_algorithm_t last = RS_ALGO_COUNT;
          for (size_t elems = 1; elems <= ((size_t)1 << 24); elems *= 3) {
            const int W = workers[wi];
            uint64_t pred[RS_ALGO_COUNT];
            const rs_sim_setup_t on = {&nets[k], W, seg_bytes[si], 4};
            rs_algorithm_t got = rs_auto_choose(&on, elems, masks[mi], pred);
            size_t segs = rs_segs_per_chunk(elems, W, seg_bytes[si], 4);
            int want = -1;
            uint64_t want_ns = 0;
            for (int a = 0; a < RS_ALGO_COUNT; a++) {
              if (!(masks[mi] & (1u << a))) {
                assert_true(pred[a] == UINT64_MAX);
                continue;
              }
              uint64_t ns =
                  rs_netmodel_predict_algo((rs_algorithm_t)a, &nets[k], W,
                                           elems, segs, seg_bytes[si], 4);
              assert_true(pred[a] == ns);
              if (want < 0 || ns < want_ns) {
                want = a;
                want_ns = ns;
              }
            }
            if ((int)got != want)
              fail_msg("net %zu W=%d mask %#x %zu elems: chose %s, the "
                       "argmin is %s",
                       k, W, masks[mi], elems, rs_algorithm_name(got),
                       rs_algorithm_name((rs_algorithm_t)want));
            changes += last != RS_ALGO_COUNT && got != last;
            last = got;
          }
        }
  /* the grid is not degenerate: the best algorithm changes with size */
  assert_true(changes > 10);
}

/* A model of two params, a small one (bucket 0) and a large one (bucket
 * 1), and a network on which recursive doubling wins the small bucket and
 * a bandwidth-optimal algorithm the large one. */
static const char two_buckets[] =
    "{\"name\": \"two\", \"params\": [{\"name\": \"big\", \"shape\": "
    "[120001]}, {\"name\": \"small\", \"shape\": [7]}]}";

/* auto-2.W: every bucket runs the algorithm rs_auto_choose picks under
 * --net, the two buckets different ones, and with exact inputs every
 * worker holds the exact mean, bit for bit. */
static void run_mixed(int W, size_t seg_bytes) {
  char err[RS_ERRMSG_MAX];
  rs_model_t *m;
  assert_int_equal(
      rs_model_parse(two_buckets, strlen(two_buckets), "two", &m, err), RS_OK);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.algo = RS_ALGO_AUTO;
  cfg.segment_bytes = seg_bytes;
  cfg.first_bucket_bytes = 4; /* the last param alone first, as DDP */
  cfg.bucket_bytes = 64;
  cfg.net = net_of("latency=50us,bandwidth=1GB/s", "2GB/s");
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err))
    fail_msg("W=%d: %s", W, err);
  assert_int_equal(rs_run_result(run)->buckets, 2);
  int measured = 1;
  assert_non_null(rs_run_auto_model(run, &measured));
  assert_int_equal(measured, 0); /* --net's */
  rs_algorithm_t chosen[2];
  for (size_t b = 0; b < 2; b++) {
    const rs_bucket_t *k = rs_run_bucket(run, b);
    uint64_t pred[RS_ALGO_COUNT];
    /* (hier, refused without a topology, is not eligible: no prediction) */
    const rs_sim_setup_t on = {&cfg.net, W, cfg.segment_bytes, 4};
    chosen[b] = rs_auto_choose(&on, k->elems, (1u << RS_ALGO_HIER) - 1, pred);
    assert_int_equal(rs_run_bucket_algo(run, b), chosen[b]);
    for (int a = 0; a < RS_ALGO_COUNT; a++)
      assert_true(rs_run_bucket_predicted(run, b, (rs_algorithm_t)a) ==
                  pred[a]);
    assert_true(pred[RS_ALGO_HIER] == UINT64_MAX);
  }
  if (chosen[0] == chosen[1])
    fail_msg("W=%d: both buckets chose %s", W, rs_algorithm_name(chosen[0]));
  print_message(
      "W=%d, segments of %zu B: bucket 0 (7 elements) %s, bucket 1 %s\n", W,
      seg_bytes, rs_algorithm_name(chosen[0]), rs_algorithm_name(chosen[1]));
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 7), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  const rs_result_t *res = rs_run_result(run);
  assert_true(res->checked && res->identical && res->exact);
  for (size_t p = 0; p < 2; p++)
    assert_int_equal(rs_run_param_check(run, p)->wrong, 0);
  /* the simulated time's formula: each bucket its chosen algorithm's */
  assert_true(res->predicted_ns ==
              rs_run_bucket_predicted(run, 0, chosen[0]) +
                  rs_run_bucket_predicted(run, 1, chosen[1]));
  rs_run_free(run);
  rs_model_free(m);
}

static void test_mixed_run(void **state) {
  (void)state;
  const int workers[] = {2, 3, 4, 5, 8};
  for (size_t i = 0; i < sizeof workers / sizeof *workers; i++)
    for (int s = 0; s < 2; s++)
      run_mixed(workers[i], s ? 16 * 1024 : 1024 * 1024);
}

/* auto-3: what auto cannot do is refused before anything runs, and what
 * the options exclude it does not choose. */
static void test_refusals_and_eligibility(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  rs_model_t *m;
  assert_int_equal(
      rs_model_parse(two_buckets, strlen(two_buckets), "two", &m, err), RS_OK);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.algo = RS_ALGO_AUTO;
  cfg.net = net_of("latency=50us,bandwidth=1GB/s", "2GB/s");
  cfg.fault_count = 1;
  cfg.faults[0] = (rs_fault_t){RS_FAULT_CRASH, 1, 0, 0};
  rs_run_t *run;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_EINVAL);
  assert_non_null(strstr(err, "inject"));
  cfg.fault_count = 0;
  /* copy-free queues: rd and rhd are unsafe, so never chosen (the small
   * bucket would be rd's otherwise) */
  cfg.direct = 1;
  cfg.first_bucket_bytes = 4;
  cfg.bucket_bytes = 64;
  assert_int_equal(rs_run_create(&cfg, m, &run, err), RS_OK);
  for (size_t b = 0; b < rs_run_result(run)->buckets; b++) {
    rs_algorithm_t a = rs_run_bucket_algo(run, b);
    assert_true(a != RS_ALGO_RD && a != RS_ALGO_RHD);
    assert_true(rs_run_bucket_predicted(run, b, RS_ALGO_RD) == UINT64_MAX);
  }
  assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 3), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  assert_true(rs_run_result(run)->identical);
  rs_run_free(run);
  rs_model_free(m);
}

/* auto-4: the machine's own model is measured, positive and finite, and
 * used when no --net is given. */
static void test_measured(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  rs_netmodel_t m;
  assert_int_equal(rs_machine_measure(4, 256 * 1024, 8, 0, &m, err), RS_OK);
  assert_true(m.enabled && m.link.latency_ns > 0 && m.link.bandwidth > 0 &&
              m.reduce_rate > 0);
  rs_model_t *model;
  assert_int_equal(
      rs_model_parse(two_buckets, strlen(two_buckets), "two", &model, err),
      RS_OK);
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.algo = RS_ALGO_AUTO;
  rs_run_t *run;
  /* the run never measures: without a model it refuses */
  assert_int_equal(rs_run_create(&cfg, model, &run, err), RS_EINVAL);
  assert_non_null(strstr(err, "no network model"));
  assert_int_equal(rs_config_measure_machine(&cfg, err), RS_OK);
  assert_true(cfg.machine.enabled && cfg.machine.link.latency_ns > 0);
  assert_int_equal(rs_run_create(&cfg, model, &run, err), RS_OK);
  int measured = 0;
  const rs_netmodel_t *used = rs_run_auto_model(run, &measured);
  assert_non_null(used);
  assert_int_equal(measured, 1);
  assert_true(used->link.latency_ns > 0 && used->link.bandwidth > 0);
  rs_run_free(run);
  rs_model_free(model);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_choice_is_argmin),
      cmocka_unit_test(test_mixed_run),
      cmocka_unit_test(test_refusals_and_eligibility),
      cmocka_unit_test(test_measured),
  };
  return cmocka_run_group_tests_name("auto", tests, NULL, NULL);
}
