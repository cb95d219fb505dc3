/* powersgd_int.h - what powersgd_json.c reads of a PowerSGD plan beyond
 * the public header (its config and model, as given to
 * rs_powersgd_create), and the rank's check that step/ shares. */
#ifndef RINGSIM_HOOK_POWERSGD_INT_H
#define RINGSIM_HOOK_POWERSGD_INT_H

#include "ringsim/internal/config.h" /* what the plan keeps */
#include "ringsim/powersgd.h"

const rs_config_t *rs__powersgd_config(const rs_powersgd_t *ps);
const rs_model_t *rs__powersgd_model(const rs_powersgd_t *ps);

/* Is rank R at most some param's min(n, m), so that the hook compresses
 * something (rs_powersgd_create's check, and ringsim step's)? RS_OK, or
 * RS_EINVAL with errmsg naming the largest. */
int rs__powersgd_check_rank(const rs_model_t *model, int R, char *errmsg);

#endif
