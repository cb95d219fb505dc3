/* spec.h - the text of --hook powersgd:KEY=VALUE,... (spec.c). */
#ifndef RINGSIM_HOOK_SPEC_H
#define RINGSIM_HOOK_SPEC_H

#include "ringsim/ringsim.h"

/* spec after "powersgd:": rank=R (required), start=S, feedback=on|off,
 * warm=on|off, comma-separated, each at most once, in any order, into
 * config's powersgd fields (hook left to the caller). On error returns
 * RS_EINVAL with errmsg naming the key and what it takes; config is then
 * unchanged. */
int rs__powersgd_spec(const char *spec, rs_config_t *config, char *errmsg);

#endif
