/* test_binding.c - the calls for language bindings (src/binding.c): a
 * config set option by option equals the one set field by field, every bad
 * value is refused with a message naming it, f16 and bf16 round trip
 * through pack and unpack, and a run's facts are its results. */
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "ringsim/ringsim.h"

static void set_ok(rs_config_t *c, const char *option, const char *value) {
  char err[RS_ERRMSG_MAX] = "";
  if (rs_config_set(c, option, value, err) != RS_OK)
    fail_msg("%s=%s refused: %s", option, value, err);
}

/* binding-1: every option lands in its field, spelled with '-' or '_' */
static void test_config_set(void **state) {
  (void)state;
  rs_config_t *c = rs_config_new();
  assert_non_null(c);
  rs_config_t d;
  rs_config_init(&d);
  assert_memory_equal(c, &d, sizeof d); /* rs_config_init's defaults */
  set_ok(c, "workers", "7");
  set_ok(c, "op", "max");
  set_ok(c, "average", "pre");
  set_ok(c, "algo", "rhd");
  set_ok(c, "bucket_mb", "0.5");
  set_ok(c, "segment-bytes", "4096");
  set_ok(c, "slots", "3");
  set_ok(c, "timeout", "2.5");
  set_ok(c, "loop", "slices");
  set_ok(c, "checksum", "true");
  set_ok(c, "direct", "1");
  set_ok(c, "order_report", "true");
  set_ok(c, "traced", "true");
  set_ok(c, "inject", "stall:worker=2,step=1,ms=5");
  set_ok(c, "net", "latency=5us,bandwidth=25GB/s");
  set_ok(c, "link", "1-2:bandwidth=1GB/s");
  set_ok(c, "straggler", "worker=1,us=200");
  set_ok(c, "reduce-rate", "10GB/s");
  assert_int_equal(c->workers, 7);
  assert_int_equal(c->op, RS_OP_MAX);
  assert_int_equal(c->average, 1);
  assert_int_equal(c->algo, RS_ALGO_RHD);
  assert_int_equal(c->bucket_bytes, 512 * 1024);
  assert_int_equal(c->segment_bytes, 4096);
  assert_int_equal(c->slots, 3);
  assert_true(c->timeout_s == 2.5);
  assert_int_equal(c->slices, 1);
  assert_int_equal(c->checksum, 1);
  assert_int_equal(c->direct, 1);
  assert_int_equal(c->order_report, 1);
  assert_int_equal(c->traced, 1);
  assert_int_equal(c->fault_count, 1);
  assert_int_equal(c->faults[0].kind, RS_FAULT_STALL);
  assert_int_equal(c->faults[0].worker, 2);
  assert_int_equal(c->faults[0].step, 1);
  assert_int_equal(c->faults[0].ms, 5);
  assert_int_equal(c->net.enabled, 1);
  assert_int_equal(c->net.link.latency_ns, 5000);
  assert_int_equal(c->net.link.bandwidth, 25000000000ull);
  assert_int_equal(c->net.link_count, 1);
  assert_int_equal(c->net.straggler_count, 1);
  assert_int_equal(c->net.reduce_rate, 10000000000ull);
  set_ok(c, "direct", "false");
  assert_int_equal(c->direct, 0);
  /* powersgd's keys in any order; another hook clears them */
  set_ok(c, "hook", "powersgd:warm=on,rank=3,start=4,feedback=off");
  assert_int_equal(c->hook, RS_HOOK_POWERSGD);
  assert_int_equal(c->powersgd_rank, 3);
  assert_int_equal(c->powersgd_start, 4);
  assert_int_equal(c->powersgd_feedback, 0);
  assert_int_equal(c->powersgd_warm, 1);
  set_ok(c, "hook", "fp16");
  assert_int_equal(c->hook, RS_HOOK_FP16);
  assert_int_equal(c->powersgd_rank + c->powersgd_start + c->powersgd_warm, 0);
  rs_config_free(c);
}

/* binding-2: a bad value is refused, the config unchanged, and the message
 * names the option, the value and what was expected */
static void test_config_refusals(void **state) {
  (void)state;
  static const struct {
    const char *option, *value, *message;
  } cases[] = {
      {"workers", "0", "workers '0': expected an integer in 1..4096"},
      {"workers", "4097", "workers '4097': expected an integer in 1..4096"},
      {"op", "mean", "op 'mean': expected sum, avg, min, max or prod"},
      {"average", "middle", "average 'middle': expected pre, post or pre-mul"},
      {"algo", "ringg", "algo 'ringg': expected ring, rd, rhd, linear, tree, gloo-ring, hier, hier:rd, hier:rhd or auto"},
      {"bucket_mb", "-1",
       "bucket_mb '-1': expected MiB from 0 (one bucket) to 1048576"},
      {"bucket_mb", "nan",
       "bucket_mb 'nan': expected MiB from 0 (one bucket) to 1048576"},
      {"segment_bytes", "3",
       "segment_bytes '3': expected a number of bytes from 4 to 1073741824"},
      {"slots", "1025", "slots '1025': expected an integer in 1..1024"},
      {"timeout", "0", "timeout '0': expected seconds in (0, 1e6]"},
      {"loop", "rounds", "loop 'rounds': expected steps or slices"},
      {"checksum", "yes", "checksum 'yes': expected true or false"},
      {"inject", "stall:worker=1",
       "inject 'stall:worker=1': expected KIND:worker=N,step=S[,ms=M]"},
      {"inject", "crash:worker=-1", "inject 'crash:worker=-1': expected"},
      {"net", "latency=5us",
       "--net 'latency=5us': give both latency= and "
       "bandwidth="},
      {"reduce_rate", "fast", "reduce_rate 'fast': expected a rate"},
      {"hook", "powersgd:rank=2,feedback=on",
       "feedback=on needs start=2 or more (PyTorch's PowerSGDState refuses"},
      {"hook", "powersgd:rank=2,start=1,warm=on", "warm=on needs start=2"},
      {"hook", "powersgd:rank=2,rank=3", "rank=3: rank= given twice"},
      {"hook", "powersgd:rank=2,start=-1", "start=-1: expected a step S"},
      {"hook", "powersgd:rank=2,start=2,warm=maybe", "warm=maybe: expected on"},
      {"hook", "powersgd:rank=2,", "'' is not rank=R, start=S"},
      {"hook", "powersgd:start=2", "powersgd needs its rank"},
      {"seed", "1", "unknown option 'seed'"},
      {"workers_", "1", "unknown option 'workers_'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_config_t *c = rs_config_new();
    rs_config_t before;
    memcpy(&before, c, sizeof before);
    char err[RS_ERRMSG_MAX] = "";
    assert_int_equal(rs_config_set(c, cases[i].option, cases[i].value, err),
                     RS_EINVAL);
    if (!strstr(err, cases[i].message))
      fail_msg("%s=%s: got \"%s\", expected \"%s\"", cases[i].option,
               cases[i].value, err, cases[i].message);
    assert_null(strchr(err, '\n'));
    if (strcmp(cases[i].option, "net"))
      assert_memory_equal(c, &before, sizeof before);
    rs_config_free(c);
  }
  /* the seventeenth fault */
  rs_config_t *c = rs_config_new();
  char err[RS_ERRMSG_MAX];
  for (int i = 0; i < RS_MAX_FAULTS; i++)
    set_ok(c, "inject", "crash:worker=0");
  assert_int_equal(rs_config_set(c, "inject", "crash:worker=0", err),
                   RS_EINVAL);
  assert_string_equal(err, "inject: at most 16 faults");
  rs_config_free(c);
}

/* binding-3: every f16 and bf16 bit pattern unpacks to the float
 * rs_dtype_round keeps, and packs back to itself (NaNs stay NaNs) */
static void test_pack_unpack(void **state) {
  (void)state;
  static uint16_t bits[65536], back[65536];
  static float values[65536];
  for (unsigned i = 0; i < 65536; i++)
    bits[i] = (uint16_t)i;
  rs_dtype_t half[] = {RS_DTYPE_F16, RS_DTYPE_BF16};
  for (int d = 0; d < 2; d++) {
    rs_dtype_unpack(half[d], values, bits, 65536);
    rs_dtype_pack(half[d], back, values, 65536);
    for (unsigned i = 0; i < 65536; i++) {
      if (isnan(values[i])) {
        assert_true((back[i] & 0x7fff) >
                    (half[d] == RS_DTYPE_F16 ? 0x7c00 : 0x7f80));
        continue;
      }
      if (back[i] != bits[i])
        fail_msg("%s %#x -> %g -> %#x", rs_dtype_name(half[d]), i,
                 (double)values[i], back[i]);
      assert_true(rs_dtype_round(half[d], values[i]) == values[i]);
    }
  }
  /* known values */
  uint16_t one_f16 = 0x3c00, one_bf16 = 0x3f80;
  float x;
  rs_dtype_unpack(RS_DTYPE_F16, &x, &one_f16, 1);
  assert_true(x == 1.0f);
  rs_dtype_unpack(RS_DTYPE_BF16, &x, &one_bf16, 1);
  assert_true(x == 1.0f);
  /* f32 and f64 copy */
  double in[3] = {1.5, -2.25, 1e300}, out[3];
  rs_dtype_unpack(RS_DTYPE_F64, out, in, 3);
  assert_memory_equal(in, out, sizeof in);
  float fin[2] = {3.5f, -0.0f}, fout[2];
  rs_dtype_pack(RS_DTYPE_F32, fout, fin, 2);
  assert_memory_equal(fin, fout, sizeof fin);
}

/* binding-4: a run's facts are its result, stats, checks and buckets */
static void test_facts(void **state) {
  (void)state;
  const char *text = "{\"name\": \"f\", \"params\": [{\"name\": \"a\", "
                     "\"shape\": [5, 3]}, {\"name\": \"b\", \"shape\": []}]}";
  char err[RS_ERRMSG_MAX];
  rs_model_t *m;
  assert_int_equal(rs_model_parse(text, strlen(text), "m", &m, err), RS_OK);
  rs_config_t *c = rs_config_new();
  set_ok(c, "workers", "3");
  set_ok(c, "net", "latency=1us,bandwidth=1GB/s");
  rs_run_t *run;
  if (rs_run_create(c, m, &run, err))
    fail_msg("create: %s", err);
  for (int w = 0; w < 3; w++) { /* filled by hand, as a binding does */
    float *buf = rs_run_buffer(run, w);
    for (size_t i = 0; i < rs_model_elems(m); i++)
      buf[i] = (float)(w + 1) * (float)i;
  }
  rs_run_mark_filled(run);
  assert_int_equal(rs_run_execute(run), RS_OK);
  char *facts_text = rs_run_facts_json(run, m);
  assert_non_null(facts_text);
  json_error_t jerr;
  json_t *facts = json_loads(facts_text, 0, &jerr);
  rs_free(facts_text);
  assert_non_null(facts);
  const rs_result_t *res = rs_run_result(run);
  json_t *r = json_object_get(facts, "result");
  assert_string_equal(json_string_value(json_object_get(facts, "version")),
                      RS_VERSION);
  assert_string_equal(json_string_value(json_object_get(facts, "status_name")),
                      "ok");
  assert_true(json_is_null(json_object_get(facts, "error")));
  assert_int_equal(json_integer_value(json_object_get(r, "transfers")),
                   res->transfers);
  assert_int_equal(json_integer_value(json_object_get(r, "sim_ns")),
                   res->sim_ns);
  assert_true(res->sim_ns > 0);
  assert_true(json_is_true(json_object_get(r, "identical")));
  assert_true(json_real_value(json_object_get(r, "bound")) == res->bound);
  json_t *workers = json_object_get(facts, "workers");
  assert_int_equal(json_array_size(workers), 3);
  for (int w = 0; w < 3; w++) {
    json_t *wk = json_array_get(workers, (size_t)w);
    assert_int_equal(json_integer_value(json_object_get(wk, "bytes_sent")),
                     rs_run_worker_stats(run, w)->bytes_sent);
    assert_string_equal(json_string_value(json_object_get(wk, "state")),
                        "done");
  }
  json_t *params = json_object_get(facts, "params");
  assert_int_equal(json_array_size(params), 2);
  json_t *b = json_array_get(params, 1);
  assert_string_equal(json_string_value(json_object_get(b, "name")), "b");
  assert_int_equal(json_integer_value(json_object_get(b, "elem_offset")), 15);
  assert_true(json_real_value(json_object_get(b, "bound")) ==
              rs_run_param_check(run, 1)->bound);
  assert_int_equal(json_array_size(json_object_get(facts, "buckets")),
                   res->buckets);
  json_t *cfg = json_object_get(facts, "config");
  assert_string_equal(json_string_value(json_object_get(cfg, "algo")), "ring");
  assert_true(json_is_true(json_object_get(cfg, "net_enabled")));
  json_decref(facts);
  rs_run_free(run);
  rs_config_free(c);
  rs_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_config_set),
      cmocka_unit_test(test_config_refusals),
      cmocka_unit_test(test_pack_unpack),
      cmocka_unit_test(test_facts),
  };
  return cmocka_run_group_tests_name("binding", tests, NULL, NULL);
}
