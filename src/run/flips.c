/* flips.c - the test knob that corrupts results on purpose: chosen
 * elements of chosen workers' results get their lowest bit flipped after
 * the first iteration's all-reduce, before the check, as silent memory
 * corruption would (docs/reliability.md), so the tests see the check list
 * the workers that differ.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "base/util.h"
#include "run/run.h"

/* The test knob RINGSIM_TEST_FLIP=WORKER:ELEMENT[,...] (docs/reliability.md):
 * flip the lowest bit of those elements of those workers' results after
 * the all-reduce, before the check, as silent memory corruption would,
 * to test the check's listing of workers that differ. */
int rs__run_parse_flips(rs_run_t *run, char *errmsg) {
  const char *text = getenv("RINGSIM_TEST_FLIP");
  if (!text)
    return RS_OK;
  const int max = (int)(sizeof run->flips / sizeof *run->flips);
  const char *at = text;
  for (;;) {
    char *end;
    errno = 0;
    long worker = strtol(at, &end, 10);
    int ok = end != at && *end == ':' && worker >= 0 &&
             worker < run->config.workers && run->flip_count < max;
    unsigned long long elem = 0;
    if (ok) {
      at = end + 1;
      elem = strtoull(at, &end, 10);
      ok = end != at && isdigit((unsigned char)*at) && !errno &&
           elem < run->elems && (*end == ',' || *end == '\0');
    }
    if (!ok)
      return rs__err(errmsg, RS_EINVAL,
                     "RINGSIM_TEST_FLIP '%s': expected up to %d "
                     "WORKER:ELEMENT pairs, comma-separated, with WORKER "
                     "below %d and ELEMENT below %zu",
                     text, max, run->config.workers, run->elems);
    run->flips[run->flip_count].worker = (int)worker;
    run->flips[run->flip_count++].elem = (size_t)elem;
    if (*end == '\0')
      return RS_OK;
    at = end + 1;
  }
}

/* Flip the test knob's bits in this process's workers' results. */
void rs__run_apply_flips(rs_run_t *run) {
  for (int k = 0; k < run->flip_count; k++) {
    if (!rs__run_local(run, run->flips[k].worker))
      continue;
    /* the lowest byte of the element (little-endian: its lowest bit) */
    unsigned char *elem = run->bufs[run->flips[k].worker] +
                          run->flips[k].elem * run->buf_elem_bytes;
    elem[0] ^= 1;
  }
}
