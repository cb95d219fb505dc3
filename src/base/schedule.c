/* schedule.c - chunk arithmetic and phase names (schedule.h). */
#include "base/schedule.h"

const char *rs__phase_name(rs_phase_t phase) {
  static const char *const names[RS_PHASE_COUNT] = {
      "reduce_scatter", "all_gather", "exchange", "reduce", "broadcast"};
  return (unsigned)phase < RS_PHASE_COUNT ? names[phase] : "?";
}

/* Chunk c of W over n elements: the first n mod W chunks get one extra. */
size_t rs__chunk_offset(size_t elem_count, int workers, int chunk) {
  size_t base = elem_count / (size_t)workers;
  size_t extra = elem_count % (size_t)workers;
  size_t c = (size_t)chunk;
  return c * base + (c < extra ? c : extra);
}

size_t rs__chunk_elems(size_t elem_count, int workers, int chunk) {
  return elem_count / (size_t)workers +
         ((size_t)chunk < elem_count % (size_t)workers);
}
