/* fuzz_model.c - libFuzzer target: model.json text into rs_model_parse, and,
 * when it parses into something small, a whole all-reduce over it.
 *
 * Invariants checked (abort on failure, which the fuzzer reports): a refused
 * model gives a one-line message and no model; a small accepted model with
 * inline grads all-reduces to bitwise identical workers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ringsim/internal/config.h" /* stack configs */
#include "ringsim/ringsim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[RS_ERRMSG_MAX] = "";
  rs_model_t *m = NULL;
  int rc = rs_model_parse((const char *)data, size, "fuzz.json", &m, err);
  if (rc != RS_OK) {
    if (m != NULL || err[0] == '\0' || strchr(err, '\n'))
      abort();
    return 0;
  }
  int inline_workers = rs_model_inline_workers(m);
  int workers = inline_workers ? inline_workers : 3;
  if (rs_model_elems(m) <= 4096 && workers <= 8) {
    rs_config_t cfg;
    rs_config_init(&cfg);
    cfg.workers = workers;
    cfg.segment_bytes = 64;
    rs_run_t *run;
    if (rs_run_create(&cfg, m, &run, err) == RS_OK) {
      rc = inline_workers ? rs_run_fill_inline(run)
                          : rs_run_fill(run, RS_INIT_EXACT, size);
      if (rc == RS_OK) {
        rc = rs_run_execute(run);
        /* Inline values are finite: the run must complete (its check may
         * fail where a sum overflows the dtype), and every worker must
         * hold the same bits. */
        if (rc != RS_OK && rc != RS_ECHECK)
          abort();
        if (!rs_run_result(run)->identical)
          abort();
      }
      rs_run_free(run);
    }
  }
  rs_model_free(m);
  return 0;
}
