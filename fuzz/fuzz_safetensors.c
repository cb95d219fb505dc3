/* fuzz_safetensors.c - libFuzzer target: bytes as a safetensors file read
 * for a fixed three-param model, as f32 and as f64 (8-byte elements). A
 * refused file gives a one-line message; nothing may crash, hang or read
 * out of bounds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringsim/ringsim.h"
#include "io/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const model_json[2] = {
    "{\"params\": [{\"name\": \"w\", \"shape\": [2]},"
    "{\"name\": \"fc.weight\", \"shape\": [2, 3]},"
    "{\"name\": \"s\", \"shape\": []}]}",
    "{\"params\": [{\"name\": \"w\", \"shape\": [2], \"dtype\": \"f64\"},"
    "{\"name\": \"fc.weight\", \"shape\": [2, 3], \"dtype\": \"f64\"},"
    "{\"name\": \"s\", \"shape\": [], \"dtype\": \"f64\"}]}"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static rs_model_t *models[2];
  char err[RS_ERRMSG_MAX] = "";
  for (int k = 0; k < 2; k++)
    if (!models[k] && rs_model_parse(model_json[k], strlen(model_json[k]),
                                     "m", &models[k], err))
      abort();
  if (size == 0)
    return 0;
  for (int k = 0; k < 2; k++) {
    FILE *f = fmemopen((void *)data, size, "rb");
    if (!f)
      return 0;
    double values[9]; /* room for 9 elements of either type */
    int rc = rs__safetensors_read_stream(f, size, "fuzz.safetensors",
                                         models[k], values, err);
    fclose(f);
    if (rc != RS_OK && (err[0] == '\0' || strchr(err, '\n')))
      abort();
  }
  return 0;
}
