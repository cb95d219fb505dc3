/* test_algo_table.c - an algorithm is its file and its row in the table,
 * and the library needs nothing else: this program links a table of its
 * own in place of src/algo/list.c's (the linker then takes no member of
 * libringsim.a that defines rs__algos, as the noclones build takes its own
 * objects first), the real rows with a toy algorithm in the last, and the
 * library names the toy, runs it, simulates it, refuses and chooses it by
 * its row alone. The toy is linear's schedule under another name, with a
 * cost formula of its own (1 ns: auto should always take it) and a
 * segment size of its own. */
#include "test.h"

#include "algo/list.h"
#include "run/run.h"

/* the toy takes the last row (the count is compiled into the library) */
#define TOY ((rs_algorithm_t)(RS_ALGO_COUNT - 1))

static rs_algo_t toy; /* filled by setup, from linear's row */

#define ROW(VALUE, id)                                                         \
  [RS_ALGO_##VALUE] = RS_ALGO_##VALUE == TOY ? &toy : &rs__algo_##id,
const rs_algo_t *const rs__algos[RS_ALGO_COUNT] = {RS__ALGO_TABLE(ROW)};

static uint64_t toy_predict(const rs_netmodel_t *m, rs_shape_t shape,
                            size_t elems, size_t segs, size_t cap,
                            size_t elem_size) {
  (void)m, (void)shape, (void)elems, (void)segs, (void)cap, (void)elem_size;
  return 1;
}

static int setup(void **state) {
  (void)state;
  toy = rs__algo_linear;
  toy.name = "toy";
  toy.alias = NULL;
  toy.title = "toy all-reduce (linear's schedule)";
  toy.caps = RS__CAP_AUTO | RS__CAP_FORMULA;
  toy.segment_bytes = 4096;
  toy.predict = toy_predict;
  return 0;
}

/* table-1: the toy is named, parsed and described by its row; the row it
 * took is gone. */
static void test_toy_is_named_by_its_row(void **state) {
  (void)state;
  assert_int_equal(rs_algorithm_parse("toy"), TOY);
  assert_string_equal(rs_algorithm_name(TOY), "toy");
  assert_int_equal(rs_algorithm_parse("nvlstree"), -1);
  rs_algo_info_t info;
  assert_int_equal(rs_algo_info(TOY, &info), RS_OK);
  assert_string_equal(info.name, "toy");
  assert_string_equal(info.title, "toy all-reduce (linear's schedule)");
  assert_int_equal(info.segment_bytes, 4096);
  assert_true(info.auto_eligible && info.closed_formula);
  assert_false(info.needs_topology || info.slices || info.reduce_scatter ||
               info.in_nccl || info.textbook_ring);
}

static rs_run_t *toy_run(rs_algorithm_t algo, int W, rs_model_t *m) {
  rs_config_t cfg;
  rs_config_init(&cfg);
  cfg.workers = W;
  cfg.algo = algo;
  cfg.net = net_of("latency=5us,bandwidth=25GB/s", NULL);
  char err[RS_ERRMSG_MAX];
  rs_run_t *run;
  if (rs_run_create(&cfg, m, &run, err))
    fail_msg("W=%d, %s: %s", W, rs_algorithm_name(algo), err);
  return run;
}

/* table-2: a run of the toy all-reduces, exactly, on the simulated clocks
 * of its schedule, its prediction its own formula's. */
static void test_toy_runs(void **state) {
  (void)state;
  rs_model_t *m = model_of(1000);
  for (int W = 1; W <= 7; W += 3) {
    rs_run_t *run = toy_run(TOY, W, m);
    assert_int_equal(rs_run_fill(run, RS_INIT_EXACT, 3), RS_OK);
    assert_int_equal(rs_run_execute(run), RS_OK);
    const rs_result_t *res = rs_run_result(run);
    assert_true(res->checked && res->identical && res->exact);
    assert_int_equal(rs_run_param_check(run, 0)->wrong, 0);
    assert_int_equal(rs_run_bucket_algo(run, 0), TOY);
    const rs_bucket_t *b = rs_run_bucket(run, 0);
    const rs_config_t *c = rs_run_config(run);
    const uint64_t linear = rs_netmodel_simulate_algo(
        RS_ALGO_LINEAR, &c->net, W, b, 1, c->segment_bytes, 4);
    print_message("W=%d: toy simulated %llu ns (linear's %llu), predicted "
                  "%llu\n",
                  W, (unsigned long long)res->sim_ns,
                  (unsigned long long)linear,
                  (unsigned long long)res->predicted_ns);
    assert_true(res->sim_ns == linear);
    assert_true(res->predicted_ns == 1); /* (its formula says 1 ns) */
    rs_run_free(run);
  }
  rs_model_free(m);
}

/* table-3: auto chooses the toy while its row lets it (its formula always
 * wins), and never once the row says no. */
static void test_auto_chooses_by_the_row(void **state) {
  (void)state;
  rs_model_t *m = model_of(1000);
  rs_run_t *run = toy_run(RS_ALGO_AUTO, 4, m);
  assert_int_equal(rs_run_bucket_algo(run, 0), TOY);
  rs_run_free(run);
  toy.caps &= ~RS__CAP_AUTO;
  run = toy_run(RS_ALGO_AUTO, 4, m);
  print_message("not eligible: auto chose %s\n",
                rs_algorithm_name(rs_run_bucket_algo(run, 0)));
  assert_int_not_equal(rs_run_bucket_algo(run, 0), TOY);
  assert_true(rs_run_bucket_predicted(run, 0, TOY) == UINT64_MAX);
  rs_run_free(run);
  rs_model_free(m);
}

/* table-4: the run refuses what the row does not offer, naming the toy. */
static void test_refusals_by_the_row(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  rs_config_t c;
  rs_config_init(&c);
  c.algo = TOY;
  assert_int_equal(rs__run_check_config(&c, err), RS_OK);
  c.slices = 1;
  assert_int_equal(rs__run_check_config(&c, err), RS_EINVAL);
  assert_string_equal(err, "loop: slices is NCCL's loop order for the ring, "
                           "not for toy");
  toy.caps |= RS__CAP_SLICES;
  assert_int_equal(rs__run_check_config(&c, err), RS_OK);
  c.slices = 0;
  toy.caps |= RS__CAP_TOPOLOGY;
  assert_int_equal(rs__run_check_config(&c, err), RS_EINVAL);
  assert_non_null(strstr(err, "toy is hierarchical and needs nodes"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup(test_toy_is_named_by_its_row, setup),
      cmocka_unit_test_setup(test_toy_runs, setup),
      cmocka_unit_test_setup(test_auto_chooses_by_the_row, setup),
      cmocka_unit_test_setup(test_refusals_by_the_row, setup),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
