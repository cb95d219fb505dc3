/* flips.c - the test knob that corrupts results on purpose: chosen
 * elements of chosen workers' results get their lowest bit flipped after
 * the first iteration's all-reduce, before the check, as silent memory
 * corruption would (docs/reliability.md), so the tests see the check list
 * the workers that differ.
 */
#include "base/util.h"
#include "run/run.h"

/* The test knob flip, RINGSIM_TEST_FLIP=WORKER:ELEMENT[,...]
 * (rs_test_knobs_t; docs/reliability.md): flip the lowest bit of those
 * elements of those workers' results after the all-reduce, before the
 * check, as silent memory corruption would, to test the check's listing
 * of workers that differ. Numbers as rs_read_digits reads them. */
int rs__run_parse_flips(rs_run_t *run, char *errmsg) {
  const char *text = run->test.flip;
  if (!text[0])
    return RS_OK;
  const int max = (int)(sizeof run->flips / sizeof *run->flips);
  const char *at = text;
  for (;;) {
    long long worker = 0, elem = 0;
    const char *end = at;
    int ok = !rs_read_digits(at, &worker, &end) && *end == ':' &&
             worker < run->config.workers && run->flip_count < max;
    if (ok) {
      at = end + 1;
      ok = !rs_read_digits(at, &elem, &end) &&
           (unsigned long long)elem < run->elems &&
           (*end == ',' || *end == '\0');
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
