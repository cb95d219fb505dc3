/* fuzz_safetensors.c - libFuzzer target: bytes as a safetensors file read
 * for a fixed three-param model. A refused file gives a one-line message;
 * nothing may crash, hang or read out of bounds. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringsim/ringsim.h"
#include "safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char model_json[] =
    "{\"params\": [{\"name\": \"w\", \"shape\": [2]},"
    "{\"name\": \"fc.weight\", \"shape\": [2, 3]},"
    "{\"name\": \"s\", \"shape\": []}]}";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static rs_model_t *model;
  char err[RS_ERRMSG_MAX] = "";
  if (!model &&
      rs_model_parse(model_json, strlen(model_json), "m", &model, err))
    abort();
  if (size == 0)
    return 0;
  FILE *f = fmemopen((void *)data, size, "rb");
  if (!f)
    return 0;
  float values[9];
  int rc = rs__safetensors_read_stream(f, size, "fuzz.safetensors", model,
                                       values, err);
  fclose(f);
  if (rc != RS_OK && (err[0] == '\0' || strchr(err, '\n')))
    abort();
  return 0;
}
