/* consumer.c - the two-worker example through ringsim's public API alone:
 * worker 0 holds w = [1, 2], worker 1 w = [3, 4]; after the all-reduce
 * (avg) both hold [2, 3]. Prints each worker's result; exit 1 on any error
 * or a wrong value. */
#include <stdio.h>
#include <string.h>

#include "ringsim/ringsim.h"

int main(void) {
  static const char model_text[] =
      "{\"name\": \"two_workers\", \"params\": [{\"name\": \"w\", "
      "\"shape\": [2]}]}";
  static const float grads[2][2] = {{1, 2}, {3, 4}};
  char err[RS_ERRMSG_MAX] = "";
  rs_model_t *model = NULL;
  rs_run_t *run = NULL;
  rs_config_t *config = rs_config_new();
  int bad = 0;
  if (!config ||
      rs_model_parse(model_text, strlen(model_text), "consumer", &model,
                     err) != RS_OK ||
      rs_config_set(config, "workers", "2", err) != RS_OK ||
      rs_run_create(config, model, &run, err) != RS_OK) {
    fprintf(stderr, "consumer: %s\n", err);
    return 1;
  }
  for (int w = 0; w < 2; w++)
    memcpy(rs_run_buffer(run, w), grads[w], sizeof grads[w]);
  rs_run_mark_filled(run);
  if (rs_run_execute(run) != RS_OK) {
    fprintf(stderr, "consumer: %s\n", rs_run_errmsg(run));
    return 1;
  }
  for (int w = 0; w < 2; w++) {
    const float *got = rs_run_buffer(run, w);
    printf("worker %d: w = [%g, %g]\n", w, got[0], got[1]);
    bad |= got[0] != 2.0f || got[1] != 3.0f;
  }
  rs_run_free(run);
  rs_config_free(config);
  rs_model_free(model);
  return bad;
}
