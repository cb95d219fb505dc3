/* test_model.c - model.json: layout, inline grads, and every error. */
#include "test.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/model.h"
#include "ringsim/ringsim.h"

static rs_model_t *parse_ok(const char *text) {
  char err[RS_ERRMSG_MAX] = "";
  rs_model_t *m = NULL;
  int rc = rs_model_parse(text, strlen(text), "t.json", &m, err);
  if (rc)
    fail_msg("parse failed: %s", err);
  return m;
}

/* model-1: params are laid out flat in file order; scalars have 1 element
 * and zero-size dims 0; the name is kept. */
static void test_layout_in_file_order(void **state) {
  (void)state;
  rs_model_t *m = parse_ok(
      "{\"name\": \"tiny\", \"params\": ["
      "{\"name\": \"w\", \"shape\": [2]},"
      "{\"name\": \"fc.weight\", \"shape\": [4, 3], \"dtype\": \"f32\"},"
      "{\"name\": \"scale\", \"shape\": []},"
      "{\"name\": \"empty\", \"shape\": [0, 5]},"
      "{\"name\": \"b\", \"shape\": [3]}]}");
  assert_string_equal(rs_model_name(m), "tiny");
  assert_int_equal(rs_model_param_count(m), 5);
  const size_t offsets[] = {0, 2, 14, 15, 15}, elems[] = {2, 12, 1, 0, 3};
  for (size_t i = 0; i < 5; i++) {
    assert_int_equal(rs_model_param(m, i)->elem_offset, offsets[i]);
    assert_int_equal(rs_model_param(m, i)->elems, elems[i]);
  }
  assert_int_equal(rs_model_param(m, 1)->ndim, 2);
  assert_int_equal(rs_model_param(m, 1)->shape[1], 3);
  assert_int_equal(rs_model_elems(m), 18);
  assert_int_equal(rs__model_find(m, "b"), 4);
  assert_int_equal(rs__model_find(m, "nope"), -1);
  assert_int_equal(rs_model_inline_workers(m), 0);
  assert_null(rs_model_inline_grads(m, 0));
  rs_model_free(m);
}

/* model-2: inline grads, nested as the shape or flat, and a bare number
 * for a scalar, all land in the flat buffer in order. */
static void test_inline_grads_nested_and_flat(void **state) {
  (void)state;
  rs_model_t *m = parse_ok(
      "{\"params\": [{\"name\": \"w\", \"shape\": [2]},"
      "{\"name\": \"m\", \"shape\": [2, 3]}, {\"name\": \"s\", \"shape\": []}],"
      "\"grads\": [{\"w\": [1, 2], \"m\": [[1, 2, 3], [4, 5, 6]], \"s\": 7},"
      "{\"w\": [3, 4.5], \"m\": [6, 5, 4, 3, 2, 1], \"s\": [-1]}]}");
  assert_int_equal(rs_model_inline_workers(m), 2);
  const double want0[] = {1, 2, 1, 2, 3, 4, 5, 6, 7};
  const double want1[] = {3, 4.5, 6, 5, 4, 3, 2, 1, -1};
  assert_memory_equal(rs_model_inline_grads(m, 0), want0, sizeof want0);
  assert_memory_equal(rs_model_inline_grads(m, 1), want1, sizeof want1);
  assert_string_equal(rs_model_name(m), "model");
  rs_model_free(m);
}

typedef struct bad_case {
  const char *id;
  const char *text;
  const char *message; /* must appear in the error */
} bad_case_t;

static const bad_case_t bad_cases[] = {
    {"model-3.1", "{\"params\": [", "t.json:1:12:"},
    {"model-3.2",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}],\n\"x\": 1,}",
     "t.json:2:8:"},
    {"model-3.3", "[1, 2]", "the top level must be an object"},
    {"model-3.4", "{\"params\": []}", "params: missing or not a non-empty"},
    {"model-3.5", "{}", "params: missing"},
    {"model-3.6",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"extra\": 1}",
     "unknown field \"extra\""},
    {"model-3.7",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2], \"size\": 2}]}",
     "params[0]: unknown field \"size\""},
    {"model-3.8", "{\"params\": [{\"shape\": [2]}]}",
     "params[0].name: missing"},
    {"model-3.9", "{\"params\": [{\"name\": 3, \"shape\": [2]}]}",
     "params[0].name"},
    {"model-3.10", "{\"params\": [{\"name\": \"w\"}]}",
     "params[0].shape: missing"},
    {"model-3.11", "{\"params\": [{\"name\": \"w\", \"shape\": [2, -3]}]}",
     "params[0].shape[1]: must be a non-negative integer"},
    {"model-3.12", "{\"params\": [{\"name\": \"w\", \"shape\": [2.5]}]}",
     "params[0].shape[0]: must be a non-negative integer"},
    {"model-3.13", "{\"params\": [{\"name\": \"w\", \"shape\": \"2\"}]}",
     "params[0].shape"},
    {"model-3.14",
     "{\"params\": [{\"name\": \"w\", \"shape\": [4294967296, 4294967296]}]}",
     "more than"},
    {"model-3.15",
     "{\"params\": [{\"name\": \"a\", \"shape\": [68719476736]},"
     "{\"name\": \"b\", \"shape\": [1]}]}",
     "more than 68719476736 elements in all"},
    {"model-3.16",
     "{\"params\": [{\"name\": \"w\", \"shape\": [1,1,1,1,1,1,1,1,1]}]}",
     "9 dimensions"},
    {"model-3.17",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}, {\"name\": \"w\", "
     "\"shape\": [3]}]}",
     "params[1].name: \"w\" is a duplicate"},
    {"model-3.18",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2], \"dtype\": \"i32\"}]}",
     "dtype: \"i32\" is not supported (f32, f64, f16 or bf16)"},
    {"model-3.19",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"grads\": []}",
     "grads: must be a non-empty list"},
    {"model-3.20",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"grads\": [{}]}",
     "grads[0].w: missing"},
    {"model-3.21",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"grads\": [{\"w\": "
     "[1]}]}",
     "grads[0].w: has 1 values, the shape needs 2"},
    {"model-3.22",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"grads\": [{\"w\": "
     "[1, "
     "\"x\"]}]}",
     "grads[0].w: element 1 is not a number"},
    {"model-3.23",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"grads\": [{\"w\": "
     "[1, "
     "2], \"v\": [1]}]}",
     "grads[0]: \"v\" is not a param of the model"},
    {"model-3.24",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"grads\": [{\"w\": "
     "[1, "
     "1e39]}]}",
     "does not fit in f32"},
    {"model-3.25",
     "{\"params\": [{\"name\": \"m\", \"shape\": [2, 2]}], \"grads\": [{\"m\": "
     "[[1, 2], [3]]}]}",
     "grads[0].m: dimension 1 must be a list of 2 values"},
    {"model-3.26",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"grads\": [{\"w\": "
     "[1, "
     "2], \"w\": [3, 4]}]}",
     "duplicate object key"},
    {"model-3.27",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"grads\": [{\"w\": "
     "3}]}",
     "grads[0].w: must be a list of numbers"},
    {"model-3.28",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2]}], \"grads\": [[1, 2]]}",
     "grads[0]: must be an object"},
    {"model-3.29", "", "t.json:1:0:"},
    {"model-3.31",
     "{\"params\": [{\"name\": \"a\", \"shape\": [2], \"dtype\": \"f16\"}, "
     "{\"name\": \"b\", \"shape\": [2]}]}",
     "params[1].dtype: f32, but params[0] is f16"},
    {"model-3.32",
     "{\"params\": [{\"name\": \"w\", \"shape\": [2], \"dtype\": \"f16\"}], "
     "\"grads\": [{\"w\": [1, 70000]}]}",
     "grads[0].w: element 1 (70000) does not fit in f16"},
    /* found by fuzz_model: a huge shape with inline grads once allocated
     * 240 GB before looking at the values */
    {"model-3.30",
     "{\"params\": [{\"name\": \"m\", \"shape\": [20000000000, 3]}], "
     "\"grads\": [{\"m\": [1]}, {\"m\": [2]}]}",
     "grads: 2 workers x 60000000000 elements cannot be given inline"},
};

/* model-3.N: each malformed model is refused with RS_EPARSE and a message
 * that names the file and the place; no model is returned. */
static void test_bad_models_are_refused_clearly(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad_cases / sizeof *bad_cases; i++) {
    const bad_case_t *c = &bad_cases[i];
    char err[RS_ERRMSG_MAX] = "";
    rs_model_t *m = (rs_model_t *)&err; /* must be reset to NULL */
    int rc = rs_model_parse(c->text, strlen(c->text), "t.json", &m, err);
    if (rc != RS_EPARSE || m != NULL || !strstr(err, c->message) ||
        strncmp(err, "t.json", 6) != 0 || strchr(err, '\n'))
      fail_msg("%s: rc %d, error \"%s\", wanted \"%s\"", c->id, rc, err,
               c->message);
  }
}

/* model-4: rs_model_load names the file when it is missing or a
 * directory, and gives line and column for a syntax error in a file. */
static void test_load_file_errors(void **state) {
  (void)state;
  char err[RS_ERRMSG_MAX];
  rs_model_t *m;
  assert_int_equal(rs_model_load("/nonexistent/m.json", &m, err), RS_EIO);
  assert_non_null(strstr(err, "/nonexistent/m.json: cannot open"));
  assert_int_equal(rs_model_load("/", &m, err), RS_EIO);
  assert_non_null(strstr(err, "/: cannot read"));
  char path[] = "/tmp/ringsim_model_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  const char text[] =
      "{\n  \"params\": [\n    {\"name\": \"w\" \"shape\": [2]}]}";
  assert_int_equal(write(fd, text, sizeof text - 1), (long)sizeof text - 1);
  close(fd);
  assert_int_equal(rs_model_load(path, &m, err), RS_EPARSE);
  char want[64];
  snprintf(want, sizeof want, "%s:3:", path);
  assert_non_null(strstr(err, want));
  assert_null(m);
  unlink(path);
}

/* model-5: buckets as DDP forms them: params in reverse order, a bucket
 * closing once it holds at least its cap (the first one's cap is smaller);
 * each bucket a contiguous range of the flat buffer; cap 0: one bucket. */
static void test_buckets_in_ddp_order(void **state) {
  (void)state;
  /* 5 params of 100, 300, 50, 50 and 10 floats */
  rs_model_t *m =
      parse_ok("{\"params\": [{\"name\": \"a\", \"shape\": [100]}, {\"name\": "
               "\"b\", \"shape\": [300]}, {\"name\": \"c\", \"shape\": [50]}, "
               "{\"name\": \"d\", \"shape\": [50]}, {\"name\": \"e\", "
               "\"shape\": [10]}]}");
  rs_bucket_t *b;
  size_t n;
  /* first cap 200 B: e (40 B) + d (200 B) reach it; then cap 1000 B: c + b
   * (1400 B); then a alone. */
  assert_int_equal(rs_model_buckets(m, 200, 1000, &b, &n), RS_OK);
  assert_int_equal(n, 3);
  const size_t first[] = {3, 1, 0}, params[] = {2, 2, 1};
  const size_t offset[] = {450, 100, 0}, elems[] = {60, 350, 100};
  for (size_t i = 0; i < 3; i++) {
    assert_int_equal(b[i].first_param, first[i]);
    assert_int_equal(b[i].params, params[i]);
    assert_int_equal(b[i].elem_offset, offset[i]);
    assert_int_equal(b[i].elems, elems[i]);
  }
  free(b);
  assert_int_equal(rs_model_buckets(m, 1 << 20, 0, &b, &n), RS_OK);
  assert_int_equal(n, 1);
  assert_int_equal(b[0].elems, 510);
  assert_int_equal(b[0].params, 5);
  free(b);
  /* a param bigger than the cap is a bucket of its own */
  assert_int_equal(rs_model_buckets(m, 4, 4, &b, &n), RS_OK);
  assert_int_equal(n, 5);
  assert_int_equal(b[4].first_param, 0);
  free(b);
  rs_model_free(m);
}

/* model-6: an f16 or bf16 model keeps its dtype, and inline values are
 * rounded to it (to nearest, ties to even) as torch's .half() would. */
static void test_low_precision_inline_values(void **state) {
  (void)state;
  rs_model_t *m =
      parse_ok("{\"params\": [{\"name\": \"w\", \"shape\": [4], \"dtype\": "
               "\"f16\"}], \"grads\": [{\"w\": [0.1, 2049, 65504, 3e-8]}]}");
  assert_int_equal(rs_model_dtype(m), RS_DTYPE_F16);
  const double *g = rs_model_inline_grads(m, 0);
  /* 0.1 -> 0.0999755859375; 2049 lies halfway between 2048 and 2050, and
   * the even one wins; 65504 is f16's largest; 3e-8 is 0.503 units of the
   * smallest subnormal, 2^-24, so it rounds up to it. */
  assert_true(g[0] == 0.0999755859375f);
  assert_true(g[1] == 2048.0f);
  assert_true(g[2] == 65504.0f);
  assert_true(g[3] == 0x1p-24f);
  rs_model_free(m);
  m = parse_ok("{\"params\": [{\"name\": \"w\", \"shape\": [2], "
               "\"dtype\": \"bf16\"}], \"grads\": [{\"w\": [1.00390625, "
               "3.1415926]}]}");
  assert_int_equal(rs_model_dtype(m), RS_DTYPE_BF16);
  /* 1 + 2^-8 is halfway between 1 and 1 + 2^-7: even (1) wins */
  assert_true(rs_model_inline_grads(m, 0)[0] == 1.0f);
  assert_true(rs_model_inline_grads(m, 0)[1] == 3.140625f);
  rs_model_free(m);
}

/* model-7: f64 keeps every value as JSON's double gives it (0.1 is not
 * rounded to float, 1e300 fits), while f32 refuses what it cannot hold. */
static void test_f64_inline_values(void **state) {
  (void)state;
  rs_model_t *m =
      parse_ok("{\"params\": [{\"name\": \"w\", \"shape\": [3], \"dtype\": "
               "\"f64\"}], \"grads\": [{\"w\": [0.1, 1e300, -4.9e-324]}]}");
  assert_int_equal(rs_model_dtype(m), RS_DTYPE_F64);
  assert_int_equal(rs_dtype_size(RS_DTYPE_F64), 8);
  assert_int_equal(rs_dtype_buffer_size(RS_DTYPE_F64), 8);
  const double *g = rs_model_inline_grads(m, 0);
  assert_true(g[0] == 0.1);
  assert_true(g[0] != (double)0.1f);
  assert_true(g[1] == 1e300);
  assert_true(g[2] == -0x1p-1074);
  rs_model_free(m);
  char err[RS_ERRMSG_MAX];
  const char *f32 = "{\"params\": [{\"name\": \"w\", \"shape\": [1]}], "
                    "\"grads\": [{\"w\": [1e300]}]}";
  assert_int_equal(rs_model_parse(f32, strlen(f32), "m.json", &m, err),
                   RS_EPARSE);
  assert_non_null(strstr(err, "does not fit in f32"));
}

/* One inline value x (printed with 17 digits: the exact double) for a
 * one-element param of dtype: RS_OK and the stored value, or the error. */
static int parse_value(const char *dtype, double x, double *stored, char *err) {
  char text[256];
  snprintf(text, sizeof text,
           "{\"params\": [{\"name\": \"w\", \"shape\": [1], \"dtype\": "
           "\"%s\"}], \"grads\": [{\"w\": [%.17g]}]}",
           dtype, x);
  rs_model_t *m = NULL;
  int rc = rs_model_parse(text, strlen(text), "t.json", &m, err);
  if (rc == RS_OK)
    *stored = rs_model_inline_grads(m, 0)[0];
  rs_model_free(m);
  return rc;
}

/* model-9: a value fits when it rounds (to nearest, ties to even) to a
 * finite value of the dtype: anything below its largest value plus half an
 * ulp. The printed f32 maximum (3.4028235e+38, above FLT_MAX as a double)
 * reads back as FLT_MAX; the threshold itself and beyond are refused, with
 * either sign; the same for f16 (65504 + 16) and bf16. */
static void test_largest_values_round_trip(void **state) {
  (void)state;
  static const struct {
    const char *dtype;
    double largest, threshold;
  } cases[] = {{"f32", FLT_MAX, 0x1.ffffffp127},
               {"f16", 65504, 65520},
               {"bf16", 0x1.fep127, 0x1.ffp127}};
  char err[RS_ERRMSG_MAX];
  double got = 0;
  assert_int_equal(parse_value("f32", 3.4028235e+38, &got, err), RS_OK);
  assert_true(got == FLT_MAX);
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    for (double sign = -1; sign <= 1; sign += 2) {
      const double ok[] = {cases[i].largest, nextafter(cases[i].threshold, 0),
                           (cases[i].largest + cases[i].threshold) / 2};
      for (size_t k = 0; k < 3; k++) {
        int rc = parse_value(cases[i].dtype, sign * ok[k], &got, err);
        if (rc != RS_OK || got != sign * cases[i].largest)
          fail_msg("%s: %.17g gave rc %d, %.17g (%s); want %.17g",
                   cases[i].dtype, sign * ok[k], rc, got, rc ? err : "",
                   sign * cases[i].largest);
      }
      const double bad[] = {cases[i].threshold,
                            nextafter(cases[i].threshold, INFINITY),
                            2 * cases[i].threshold};
      for (size_t k = 0; k < 3; k++) {
        int rc = parse_value(cases[i].dtype, sign * bad[k], &got, err);
        if (rc != RS_EPARSE || !strstr(err, "does not fit in"))
          fail_msg("%s: %.17g gave rc %d (%s), want a refusal", cases[i].dtype,
                   sign * bad[k], rc, rc ? err : "accepted");
      }
    }
  }
  /* the message says why, and what the largest value is */
  assert_int_equal(parse_value("f16", 70000, &got, err), RS_EPARSE);
  assert_string_equal(err, "t.json: grads[0].w: element 0 (70000) does not "
                           "fit in f16: it rounds to infinity (the largest "
                           "f16 is 65504)");
}

/* A model of count params "layer.<i>.w" (2 elements each) with one worker's
 * inline grads: a few hundred bytes per param of JSON. */
static char *many_params_text(size_t count, size_t *len) {
  size_t cap = 64 + count * 96;
  char *text = malloc(cap);
  assert_non_null(text);
  size_t n = (size_t)snprintf(text, cap, "{\"params\": [");
  for (size_t i = 0; i < count; i++)
    n += (size_t)snprintf(text + n, cap - n,
                          "%s{\"name\": \"layer.%zu.w\", \"shape\": [2]}",
                          i ? "," : "", i);
  n += (size_t)snprintf(text + n, cap - n, "], \"grads\": [{");
  for (size_t i = 0; i < count; i++)
    n += (size_t)snprintf(text + n, cap - n, "%s\"layer.%zu.w\": [%zu, 1]",
                          i ? "," : "", count - 1 - i, i);
  n += (size_t)snprintf(text + n, cap - n, "}]}");
  assert_true(n < cap);
  *len = n;
  return text;
}

/* Names compared while loading a model of count params with one worker's
 * inline grads: two lookups per param (the duplicate check, then the grads'
 * key). */
static size_t load_compares(size_t count) {
  size_t len;
  char *text = many_params_text(count, &len);
  rs_model_t *m = parse_ok(text);
  free(text);
  size_t compares = rs__model_load_compares(m);
  rs_model_free(m);
  return compares;
}

/* model-8: names are found in constant time, so loading is linear in the
 * number of params (the duplicate check and the inline grads' lookups were
 * quadratic: 80k params took 10 s). Counted, not timed: the names compared
 * per lookup stay about one at every size (quadratic would be count / 2),
 * and every name is found at its index. */
static void test_load_is_linear_in_params(void **state) {
  (void)state;
  size_t len;
  char *text = many_params_text(1000, &len);
  rs_model_t *m = parse_ok(text);
  free(text);
  char name[32];
  for (size_t i = 0; i < 1000; i++) {
    snprintf(name, sizeof name, "layer.%zu.w", i);
    assert_int_equal(rs__model_find(m, name), (long)i);
    assert_true(rs_model_inline_grads(m, 0)[2 * i] == (double)(999 - i));
  }
  assert_int_equal(rs__model_find(m, "layer.1000.w"), -1);
  assert_int_equal(rs__model_find(m, ""), -1);
  rs_model_free(m);

  for (size_t count = 1000; count <= 64000; count *= 4) {
    size_t compares = load_compares(count), lookups = 2 * count;
    print_message("%zu params: %zu names compared in %zu lookups (%.2f each)\n",
                  count, compares, lookups, (double)compares / lookups);
    /* Each param's grads lookup compares at least its own name. */
    assert_true(compares >= count);
    if (compares > 2 * lookups)
      fail_msg("%zu params: %zu names compared in %zu lookups; a hash "
               "lookup compares about one",
               count, compares, lookups);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_layout_in_file_order),
      cmocka_unit_test(test_f64_inline_values),
      cmocka_unit_test(test_inline_grads_nested_and_flat),
      cmocka_unit_test(test_bad_models_are_refused_clearly),
      cmocka_unit_test(test_load_file_errors),
      cmocka_unit_test(test_buckets_in_ddp_order),
      cmocka_unit_test(test_low_precision_inline_values),
      cmocka_unit_test(test_load_is_linear_in_params),
      cmocka_unit_test(test_largest_values_round_trip),
  };
  return cmocka_run_group_tests_name("model", tests, NULL, NULL);
}
