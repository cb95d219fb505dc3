/* test_safetensors.c - safetensors write/read round trip and bad files. */
#include "test.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringsim/ringsim.h"

static const char model_json[] =
    "{\"params\": [{\"name\": \"w\", \"shape\": [2]},"
    "{\"name\": \"fc.weight\", \"shape\": [2, 3]}, {\"name\": \"s\", "
    "\"shape\": []}]}";

static rs_model_t *model(void) {
  char err[RS_ERRMSG_MAX];
  rs_model_t *m;
  assert_int_equal(
      rs_model_parse(model_json, strlen(model_json), "m.json", &m, err), RS_OK);
  return m;
}

static void temp_path(char *path, size_t size, const char *name) {
  snprintf(path, size, "/tmp/ringsim_st_%d_%s", (int)getpid(), name);
}

/* Write a file: 8-byte length, header text, then data_bytes bytes. */
static void write_raw(const char *path, uint64_t header_len, const char *header,
                      size_t data_bytes) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  unsigned char len[8];
  for (int i = 0; i < 8; i++)
    len[i] = (unsigned char)(header_len >> (8 * i));
  fwrite(len, 1, 8, f);
  fwrite(header, 1, strlen(header), f);
  for (size_t i = 0; i < data_bytes; i++)
    fputc(0, f);
  fclose(f);
}

/* safetensors-1: what rs_safetensors_write writes, rs_safetensors_read
 * reads back bit for bit; the data starts 8-byte aligned. */
static void test_round_trip(void **state) {
  (void)state;
  rs_model_t *m = model();
  char path[128], err[RS_ERRMSG_MAX];
  temp_path(path, sizeof path, "rt.safetensors");
  const float data[9] = {1, 2, -0.0f, 3.5f, 1e-40f, 7, 8, 9, 3.14159f};
  assert_int_equal(rs_safetensors_write(path, m, data, err), RS_OK);
  float back[9];
  memset(back, 0xff, sizeof back);
  assert_int_equal(rs_safetensors_read(path, m, back, err), RS_OK);
  assert_memory_equal(back, data, sizeof data);
  FILE *f = fopen(path, "rb");
  unsigned char len[8];
  assert_int_equal(fread(len, 1, 8, f), 8);
  fclose(f);
  assert_int_equal(len[0] % 8, 0);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal((size_t)st.st_size,
                   8 + len[0] + (len[1] << 8) + sizeof data);
  unlink(path);
  rs_model_free(m);
}

/* safetensors-1b: an f64 model writes F64 tensors of 8 bytes an element
 * and reads them back bit for bit (values no float can hold among them); a
 * file of F32 tensors is refused for it, naming both dtypes. */
static void test_f64_round_trip(void **state) {
  (void)state;
  static const char text[] =
      "{\"params\": [{\"name\": \"w\", \"shape\": [3], \"dtype\": \"f64\"}]}";
  char path[128], err[RS_ERRMSG_MAX];
  rs_model_t *m, *m32;
  assert_int_equal(rs_model_parse(text, strlen(text), "m.json", &m, err),
                   RS_OK);
  temp_path(path, sizeof path, "f64.safetensors");
  const double data[3] = {0.1, -1e300, 0x1p-1074};
  assert_int_equal(rs_safetensors_write(path, m, data, err), RS_OK);
  double back[3];
  memset(back, 0xff, sizeof back);
  assert_int_equal(rs_safetensors_read(path, m, back, err), RS_OK);
  assert_memory_equal(back, data, sizeof data);
  FILE *f = fopen(path, "rb");
  char header[256] = "";
  unsigned char len[8];
  assert_int_equal(fread(len, 1, 8, f), 8);
  for (int i = 1; i < 8; i++) /* the header fits with its NUL */
    assert_int_equal(len[i], 0);
  assert_int_equal(fread(header, 1, len[0], f), len[0]);
  fclose(f);
  assert_non_null(strstr(header, "\"dtype\":\"F64\""));
  assert_non_null(strstr(header, "\"data_offsets\":[0,24]"));

  /* the same tensor as F32 is not what an f64 model reads */
  m32 = model();
  const float data32[9] = {0};
  assert_int_equal(rs_safetensors_write(path, m32, data32, err), RS_OK);
  static const char w_only[] =
      "{\"params\": [{\"name\": \"w\", \"shape\": [2], \"dtype\": \"f64\"}]}";
  rs_model_t *mw;
  assert_int_equal(rs_model_parse(w_only, strlen(w_only), "m.json", &mw, err),
                   RS_OK);
  assert_int_equal(rs_safetensors_read(path, mw, back, err), RS_EPARSE);
  assert_non_null(strstr(err, "dtype F32, expected F64"));
  unlink(path);
  rs_model_free(mw);
  rs_model_free(m32);
  rs_model_free(m);
}

/* safetensors-2: writing into a directory that does not exist fails with
 * a message naming the path, and leaves no file behind. */
static void test_failed_write_leaves_nothing(void **state) {
  (void)state;
  rs_model_t *m = model();
  char err[RS_ERRMSG_MAX];
  const float data[9] = {0};
  const char *path = "/nonexistent_dir/out.safetensors";
  assert_int_equal(rs_safetensors_write(path, m, data, err), RS_EIO);
  assert_non_null(strstr(err, path));
  assert_int_equal(access(path, F_OK), -1);
  rs_model_free(m);
}

/* safetensors-2b: a write cancelled (a signal arrived) leaves nothing: no
 * file at the path, no temporary file beside it, and an existing file
 * there untouched. */
static void test_cancelled_write_leaves_nothing(void **state) {
  (void)state;
  rs_model_t *m = model();
  char dir[128], path[256], err[RS_ERRMSG_MAX];
  temp_path(dir, sizeof dir, "cancel");
  assert_int_equal(mkdir(dir, 0755), 0);
  snprintf(path, sizeof path, "%s/out.safetensors", dir);
  const float data[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  rs_stop_flag_t cancel = 1; /* set before the call: it gives up at once */
  assert_int_equal(
      rs_safetensors_write_cancellable(path, m, data, &cancel, err),
      RS_EINTERRUPTED);
  assert_non_null(strstr(err, "interrupted"));
  assert_int_equal(access(path, F_OK), -1);
  FILE *f = fopen(path, "w"); /* an earlier output, kept */
  fputs("earlier", f);
  fclose(f);
  assert_int_equal(
      rs_safetensors_write_cancellable(path, m, data, &cancel, err),
      RS_EINTERRUPTED);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_size, 7);
  __atomic_store_n(&cancel, 0, __ATOMIC_RELAXED); /* as ringsim.h says */
  assert_int_equal(
      rs_safetensors_write_cancellable(path, m, data, &cancel, err), RS_OK);
  unlink(path);
  assert_int_equal(rmdir(dir), 0); /* fails if a temporary file is left */
  rs_model_free(m);
}

typedef struct bad_file {
  const char *id;
  uint64_t header_len; /* 0: strlen(header) */
  const char *header;
  size_t data_bytes;
  const char *message;
} bad_file_t;

#define GOOD_W "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}"
#define GOOD_FC                                                                \
  "\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]}"
#define GOOD_S "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[32,36]}"

static const bad_file_t bad_files[] = {
    {"safetensors-3.1", 0, "{" GOOD_W "," GOOD_FC "," GOOD_S "}", 20,
     "past the file's 20 data bytes (truncated?)"},
    {"safetensors-3.2", 1ull << 40, "{}", 0,
     "header length 1099511627776 is larger than the file"},
    {"safetensors-3.3", 500, "{}", 0, "is larger than the file"},
    {"safetensors-3.4", 0, "{not json", 36, "bad header"},
    {"safetensors-3.5", 0,
     "{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}," GOOD_FC
     "," GOOD_S "}",
     36, "tensor \"w\": dtype F16, expected F32"},
    {"safetensors-3.6", 0,
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]}," GOOD_FC
     "," GOOD_S "}",
     36, "tensor \"w\": shape differs"},
    {"safetensors-3.7", 0, "{" GOOD_W "," GOOD_S "}", 36,
     "no tensor \"fc.weight\""},
    {"safetensors-3.8", 0,
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}," GOOD_FC
     "," GOOD_S "}",
     36, "tensor \"w\": 4 data bytes, the shape needs 8"},
    {"safetensors-3.9", 0,
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}," GOOD_FC
     "," GOOD_S "}",
     36, "bad data_offsets"},
    {"safetensors-3.10", 0, "[1,2]", 0, "not a JSON object"},
    /* the byte ranges of all the tensors must cover the data exactly */
    {"safetensors-3.13", 0,
     "{" GOOD_W ",\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],"
     "\"data_offsets\":[4,28]},\"s\":{\"dtype\":\"F32\",\"shape\":[],"
     "\"data_offsets\":[28,32]}}",
     32,
     "tensor \"fc.weight\": data_offsets [4, 28] overlap tensor \"w\"'s "
     "[0, 8] (the format lets no two tensors share bytes)"},
    {"safetensors-3.14", 0, "{" GOOD_W "," GOOD_FC "," GOOD_S "}", 40,
     ": 4 trailing bytes after tensor \"s\", the last (its data ends at 36 "
     "of the file's 40 data bytes; the format allows no trailing bytes)"},
    {"safetensors-3.15", 0,
     "{" GOOD_W "," GOOD_FC ",\"s\":{\"dtype\":\"F32\",\"shape\":[],"
     "\"data_offsets\":[36,40]}}",
     40,
     "tensor \"s\": data_offsets begin at 36, where tensor \"fc.weight\" "
     "ends at 32: the 4 bytes between belong to no tensor (the format allows "
     "no holes)"},
    {"safetensors-3.16", 0,
     "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]},"
     "\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],"
     "\"data_offsets\":[12,36]},\"s\":{\"dtype\":\"F32\",\"shape\":[],"
     "\"data_offsets\":[36,40]}}",
     40,
     "tensor \"w\": data_offsets begin at 4, not at 0: the first 4 data "
     "bytes belong to no tensor"},
    /* tensors the model does not read count in the layout too */
    {"safetensors-3.17", 0,
     "{" GOOD_W "," GOOD_FC "," GOOD_S
     ",\"extra\":{\"dtype\":\"I64\",\"shape\":[1],"
     "\"data_offsets\":[0,8]}}",
     36, "tensor \"w\": data_offsets [0, 8] overlap tensor \"extra\"'s "
         "[0, 8]"},
    {"safetensors-3.18", 0,
     "{" GOOD_W "," GOOD_FC "," GOOD_S
     ",\"empty\":{\"dtype\":\"F32\",\"shape\":[0],"
     "\"data_offsets\":[4,4]}}",
     36, "tensor \"empty\": data_offsets [4, 4] overlap tensor \"w\"'s "
         "[0, 8]"},
    {"safetensors-3.19", 0,
     "{" GOOD_W "," GOOD_FC "," GOOD_S
     ",\"extra\":{\"dtype\":\"F32\",\"shape\":[1]}}",
     36, "tensor \"extra\": bad data_offsets"},
    {"safetensors-3.20", 0, "{" GOOD_W "," GOOD_FC "," GOOD_S ",\"extra\":7}",
     36, "tensor \"extra\": not an object"},
};

/* safetensors-3.N: each damaged file is refused with a one-line message
 * naming the file and what is wrong with it. */
static void test_bad_files_are_refused(void **state) {
  (void)state;
  rs_model_t *m = model();
  char path[128];
  temp_path(path, sizeof path, "bad.safetensors");
  for (size_t i = 0; i < sizeof bad_files / sizeof *bad_files; i++) {
    const bad_file_t *b = &bad_files[i];
    write_raw(path, b->header_len ? b->header_len : strlen(b->header),
              b->header, b->data_bytes);
    char err[RS_ERRMSG_MAX] = "";
    float data[9];
    int rc = rs_safetensors_read(path, m, data, err);
    if (rc == RS_OK || !strstr(err, b->message) || !strstr(err, path))
      fail_msg("%s: rc %d, error \"%s\", wanted \"%s\"", b->id, rc, err,
               b->message);
  }
  /* safetensors-3.11: shorter than the 8-byte length */
  FILE *f = fopen(path, "wb");
  fputs("abc", f);
  fclose(f);
  char err[RS_ERRMSG_MAX];
  float data[9];
  assert_int_equal(rs_safetensors_read(path, m, data, err), RS_EPARSE);
  assert_non_null(strstr(err, "truncated"));
  unlink(path);
  /* safetensors-3.12: missing file and a directory */
  assert_int_equal(rs_safetensors_read("/nonexistent.st", m, data, err),
                   RS_EIO);
  assert_non_null(strstr(err, "/nonexistent.st: cannot open"));
  assert_int_equal(rs_safetensors_read("/tmp", m, data, err), RS_EIO);
  assert_non_null(strstr(err, "/tmp: not a regular file"));
  rs_model_free(m);
}

/* safetensors-4: what the format allows is read: tensors in any order in
 * the header and in the data, other tensors than the model's (of any
 * dtype) among them, empty ones at the end of another's range; every
 * model tensor's values come from its own range. */
static void test_other_layouts_are_read(void **state) {
  (void)state;
  rs_model_t *m = model();
  char path[128], err[RS_ERRMSG_MAX];
  temp_path(path, sizeof path, "layout.safetensors");
  static const char header[] =
      "{\"__metadata__\":{\"format\":\"pt\"},"
      "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},"
      "\"extra\":{\"dtype\":\"I64\",\"shape\":[1],"
      "\"data_offsets\":[4,12]},"
      "\"none\":{\"dtype\":\"F32\",\"shape\":[0],"
      "\"data_offsets\":[12,12]},"
      "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[36,44]},"
      "\"fc.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],"
      "\"data_offsets\":[12,36]}}";
  /* s = 9; extra = two floats' bytes (7, 7); fc.weight = 3..8; w = 1, 2 */
  const float bytes[11] = {9, 7, 7, 3, 4, 5, 6, 7, 8, 1, 2};
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  unsigned char len[8] = {0};
  len[0] = (unsigned char)(strlen(header) & 0xff);
  len[1] = (unsigned char)(strlen(header) >> 8);
  fwrite(len, 1, 8, f);
  fwrite(header, 1, strlen(header), f);
  fwrite(bytes, sizeof *bytes, 11, f);
  fclose(f);
  float back[9];
  assert_int_equal(rs_safetensors_read(path, m, back, err), RS_OK);
  const float want[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  assert_memory_equal(back, want, sizeof want);
  unlink(path);
  rs_model_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_f64_round_trip),
      cmocka_unit_test(test_failed_write_leaves_nothing),
      cmocka_unit_test(test_cancelled_write_leaves_nothing),
      cmocka_unit_test(test_bad_files_are_refused),
      cmocka_unit_test(test_other_layouts_are_read),
  };
  return cmocka_run_group_tests_name("safetensors", tests, NULL, NULL);
}
