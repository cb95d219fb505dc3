/* test_binding.c - the calls for language bindings (src/binding.c): a
 * config set option by option equals the one set field by field, and reads
 * back option by option (rs_config_get); every bad value is refused with a
 * message naming it; the test knobs stay with the run; f16 and bf16 round
 * trip through pack and unpack, and a run's facts are its results. */
#include "test.h"

#include <jansson.h>
#include <math.h>
#include <string.h>

#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/powersgd.h"
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
  /* rs_config_init's defaults, and test knobs of its own, empty */
  assert_non_null(c->test);
  assert_null(d.test);
  assert_string_equal(c->test->flip, "");
  assert_string_equal(c->test->mpi_trace_batch, "");
  d.test = c->test;
  assert_memory_equal(c, &d, sizeof d);
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
  set_ok(c, "first-bucket-mb", "2");
  set_ok(c, "ddp_layout", "true");
  set_ok(c, "collective", "reduce-scatter");
  set_ok(c, "transport", "mpi");
  set_ok(c, "warmup", "3");
  set_ok(c, "iterations", "5");
  set_ok(c, "warmup-budget", "0.25");
  set_ok(c, "timed-budget", "1.5");
  set_ok(c, "ref-reps", "7");
  set_ok(c, "check-threads", "2");
  set_ok(c, "test-flip", "1:3,2:4");
  set_ok(c, "mpi-trace-batch", "16");
  assert_int_equal(c->first_bucket_bytes, 2 << 20);
  assert_int_equal(c->ddp_layout, 1);
  assert_int_equal(c->collective, RS_COLL_REDUCE_SCATTER);
  assert_int_equal(c->mpi, 1);
  assert_int_equal(c->warmup, 3);
  assert_int_equal(c->iterations, 5);
  assert_true(c->warmup_budget_s == 0.25 && c->timed_budget_s == 1.5);
  assert_int_equal(c->ref_reps, 7);
  assert_int_equal(c->check_threads, 2);
  assert_string_equal(c->test->flip, "1:3,2:4");
  assert_string_equal(c->test->mpi_trace_batch, "16");
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
      {"algo", "ringg", "algo 'ringg': expected ring, rd, rhd, linear, tree, gloo-ring, hier, hier:rd, hier:rhd, nvls, nvlstree or auto"},
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
      {"first_bucket_mb", "x",
       "first_bucket_mb 'x': expected MiB from 0 (one bucket) to 1048576"},
      {"ddp-layout", "on", "ddp-layout 'on': expected true or false"},
      {"collective", "allgather",
       "collective 'allgather': expected allreduce or reduce-scatter"},
      {"transport", "tcp", "transport 'tcp': expected shm or mpi"},
      {"warmup", "-1", "warmup '-1': expected an integer in 0..1000000"},
      {"iterations", "0", "iterations '0': expected an integer in 1..1000000"},
      {"ref_reps", "1001", "ref_reps '1001': expected an integer in 1..1000"},
      {"check-threads", "65",
       "check-threads '65': expected an integer in 0..64"},
      {"timed-budget", "-1",
       "timed-budget '-1': expected seconds in [0, 1e6] (0: none)"},
      {"mpi-trace-batch", "123456789012345678901234567890123",
       "mpi-trace-batch '123456789012345678901234567890123': longer than 31 "
       "bytes"},
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

/* rs_config_get's text of option, which must succeed. */
static const char *get_ok(const rs_config_t *c, const char *option) {
  static char value[2048];
  char err[RS_ERRMSG_MAX] = "";
  if (rs_config_get(c, option, value, sizeof value, err) != RS_OK)
    fail_msg("get %s refused: %s", option, err);
  return value;
}

/* binding-5: every option but the set-only ones reads back as the text
 * rs_config_set takes (the defaults', then a value set), and that text set
 * into a fresh config makes the same config */
static void test_config_get(void **state) {
  (void)state;
  static const struct {
    const char *option, *fresh, *set, *got;
  } cases[] = {
      {"workers", "4", "7", "7"},
      {"op", "avg", "max", "max"},
      {"average", "post", "pre-mul", "pre-mul"},
      {"algo", "ring", "hier:rd", "hier:rd"},
      {"hook", "none", "bf16", "bf16"},
      {"hook", "none", "powersgd:warm=on,rank=3,start=4",
       "powersgd:rank=3,start=4,feedback=off,warm=on"},
      {"bucket-mb", "25", "0.5", "0.5"},
      {"bucket_mb", "25", "0.000001", "3.814697265625e-06"}, /* (a cap
                                      below an element is one element) */
      {"first-bucket-mb", "1", "0.1", "0.099999427795410156"},
      {"segment-bytes", "262144", "4096", "4096"},
      {"slots", "8", "3", "3"},
      {"timeout", "10", "0.1", "0.10000000000000001"},
      {"loop", "steps", "slices", "slices"},
      {"checksum", "false", "1", "true"},
      {"direct", "false", "true", "true"},
      {"order-report", "false", "true", "true"},
      {"traced", "false", "true", "true"},
      {"ddp-layout", "false", "true", "true"},
      {"transport", "shm", "mpi", "mpi"},
      {"collective", "allreduce", "reduce-scatter", "reduce-scatter"},
      {"warmup", "0", "3", "3"},
      {"iterations", "1", "5", "5"},
      {"warmup-budget", "0", "0.5", "0.5"},
      {"timed_budget", "0", "2", "2"},
      {"ref-reps", "1", "9", "9"},
      {"check-threads", "0", "2", "2"},
      {"proto", "none", "LL128", "LL128"},
      {"test-flip", "", "0:1,1:2", "0:1,1:2"},
      {"mpi-trace-batch", "", "64", "64"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rs_config_t *c = rs_config_new(), *back = rs_config_new();
    const char *o = cases[i].option;
    if (strcmp(get_ok(c, o), cases[i].fresh))
      fail_msg("%s of a fresh config: got \"%s\", expected \"%s\"", o,
               get_ok(c, o), cases[i].fresh);
    set_ok(c, o, cases[i].set);
    if (strcmp(get_ok(c, o), cases[i].got))
      fail_msg("%s after %s: got \"%s\", expected \"%s\"", o, cases[i].set,
               get_ok(c, o), cases[i].got);
    set_ok(back, o, get_ok(c, o));
    back->test = c->test; /* (the knobs compared below, by value) */
    if (memcmp(c, back, sizeof *c))
      fail_msg("%s: %s read back as %s, which sets another config", o,
               cases[i].set, cases[i].got);
    rs_config_t *k = rs_config_new();
    set_ok(k, o, get_ok(c, o));
    assert_string_equal(get_ok(k, "test-flip"), get_ok(c, "test-flip"));
    rs_config_free(k);
    rs_config_free(back);
    rs_config_free(c);
  }
  /* set-only options, unknown ones, and a buffer too small */
  rs_config_t *c = rs_config_new();
  char value[8], err[RS_ERRMSG_MAX];
  static const char *const set_only[] = {
      "like", "inject", "net", "link", "straggler", "topo", "reduce-rate"};
  for (size_t i = 0; i < sizeof set_only / sizeof *set_only; i++) {
    assert_int_equal(rs_config_get(c, set_only[i], value, sizeof value, err),
                     RS_EINVAL);
    assert_non_null(strstr(err, "set only"));
    assert_non_null(strstr(err, set_only[i]));
  }
  assert_int_equal(rs_config_get(c, "seed", value, sizeof value, err),
                   RS_EINVAL);
  assert_string_equal(err, "unknown option 'seed'");
  set_ok(c, "test-flip", "12:34,56:78");
  assert_int_equal(rs_config_get(c, "test-flip", value, sizeof value, err),
                   RS_EINVAL);
  assert_string_equal(err, "test-flip: its value takes 11 bytes and a NUL, "
                           "the buffer has 8");
  assert_int_equal(rs_config_get(c, "workers", value, sizeof value, err),
                   RS_OK);
  assert_string_equal(value, "4");
  rs_config_free(c);
}

static void count_iterations(void *arg, int done, int warmup, int iterations) {
  (void)warmup;
  (void)iterations;
  *(int *)arg = done;
}

/* binding-6: what text cannot carry: the ready times, the iteration
 * callback (called: a run of 2 + 3 iterations reports 5 done) and the
 * machine --algo auto chooses by */
static void test_typed_setters(void **state) {
  (void)state;
  rs_config_t *c = rs_config_new();
  static const uint64_t ready[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  rs_config_set_ready(c, ready);
  assert_ptr_equal(c->ready_ns, ready);
  rs_config_set_ready(c, NULL);
  assert_null(c->ready_ns);
  rs_netmodel_t m;
  memset(&m, 0, sizeof m);
  char err[RS_ERRMSG_MAX];
  assert_int_equal(rs_netmodel_parse("latency=2us,bandwidth=3GB/s", &m, err),
                   RS_OK);
  rs_config_set_machine(c, &m);
  assert_int_equal(c->machine.enabled, 1);
  assert_int_equal(c->machine.link.latency_ns, 2000);
  rs_config_set_machine(c, NULL);
  assert_int_equal(c->machine.enabled, 0);
  const char *text =
      "{\"name\": \"t\", \"params\": [{\"name\": \"a\", \"shape\": [9]}]}";
  rs_model_t *model;
  assert_int_equal(rs_model_parse(text, strlen(text), "m", &model, err), RS_OK);
  int done = 0;
  rs_config_set_on_iteration(c, count_iterations, &done);
  assert_ptr_equal(c->on_iteration_arg, &done);
  set_ok(c, "warmup", "2");
  set_ok(c, "iterations", "3");
  rs_run_t *run;
  if (rs_run_create(c, model, &run, err))
    fail_msg("create: %s", err);
  assert_int_equal(rs_run_fill(run, RS_INIT_UNIFORM, 1), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_OK);
  assert_int_equal(done, 5);
  rs_run_free(run);
  rs_config_free(c);
  rs_model_free(model);
}

/* binding-7: the test knobs are the run's own once it is created (its
 * config, rs_run_config, makes a run that flips the result after the
 * config it was made from had them cleared and was freed) and a PowerSGD
 * plan's; a config made by rs_config_init has none to set */
static void test_knobs_stay(void **state) {
  (void)state;
  const char *text =
      "{\"name\": \"t\", \"params\": [{\"name\": \"a\", \"shape\": [6, 4]}, "
      "{\"name\": \"b\", \"shape\": [5]}]}";
  char err[RS_ERRMSG_MAX];
  rs_model_t *model;
  assert_int_equal(rs_model_parse(text, strlen(text), "m", &model, err), RS_OK);
  rs_config_t *c = rs_config_new();
  set_ok(c, "workers", "3");
  set_ok(c, "test-flip", "2:5");
  rs_run_t *first, *run;
  if (rs_run_create(c, model, &first, err))
    fail_msg("create: %s", err);
  set_ok(c, "test-flip", "");
  rs_config_free(c);
  if (rs_run_create(rs_run_config(first), model, &run, err))
    fail_msg("create from the run's config: %s", err);
  rs_run_free(first);
  assert_int_equal(rs_run_fill(run, RS_INIT_UNIFORM, 1), RS_OK);
  assert_int_equal(rs_run_execute(run), RS_ECHECK);
  assert_int_equal(rs_run_worker_mismatches(run, 2), 1);
  assert_int_equal(rs_run_worker_mismatches(run, 1), 0);
  rs_run_free(run);
  /* a PowerSGD plan keeps its own copy: its all-reduces flip a bit */
  c = rs_config_new();
  set_ok(c, "workers", "3");
  set_ok(c, "hook", "powersgd:rank=1");
  set_ok(c, "test-flip", "1:0");
  rs_powersgd_t *ps;
  if (rs_powersgd_create(c, model, &ps, err))
    fail_msg("powersgd: %s", err);
  set_ok(c, "test-flip", "");
  rs_config_free(c);
  rs_config_t *plain_config = rs_config_new();
  set_ok(plain_config, "workers", "3");
  set_ok(plain_config, "hook", "allreduce");
  rs_run_t *plain;
  if (rs_run_create(plain_config, model, &plain, err))
    fail_msg("plain: %s", err);
  assert_int_equal(rs_run_fill(plain, RS_INIT_UNIFORM, 1), RS_OK);
  rs_powersgd_random_q(ps, 1);
  int rc = rs_powersgd_execute(ps, plain, NULL, err);
  if (rc != RS_ECHECK)
    fail_msg("powersgd's step: %s (%s), expected a failed check",
             rs_errname(rc), err);
  rs_run_free(plain);
  rs_config_free(plain_config);
  rs_powersgd_free(ps);
  /* a config on the stack has no knobs until its owner gives it some */
  rs_config_t d;
  rs_config_init(&d);
  assert_int_equal(rs_config_set(&d, "test-flip", "0:0", err), RS_EINVAL);
  assert_string_equal(err, "test-flip: this config has no test knobs "
                           "(rs_config_new's has)");
  rs_model_free(model);
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
      cmocka_unit_test(test_config_get),
      cmocka_unit_test(test_typed_setters),
      cmocka_unit_test(test_knobs_stay),
      cmocka_unit_test(test_pack_unpack),
      cmocka_unit_test(test_facts),
  };
  return cmocka_run_group_tests_name("binding", tests, NULL, NULL);
}
