/* schedule.c - chunk arithmetic and phase names (schedule.h). */
#include "base/schedule.h"

const char *rs__phase_name(rs_phase_t phase) {
  static const char *const names[RS_PHASE_COUNT] = {
      "reduce_scatter", "all_gather", "exchange", "reduce", "broadcast"};
  return (unsigned)phase < RS_PHASE_COUNT ? names[phase] : "?";
}
