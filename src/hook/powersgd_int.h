/* powersgd_int.h - what powersgd_json.c reads of a PowerSGD plan beyond
 * the public header: its config and model, as given to
 * rs_powersgd_create. */
#ifndef RINGSIM_HOOK_POWERSGD_INT_H
#define RINGSIM_HOOK_POWERSGD_INT_H

#include "ringsim/powersgd.h"

const rs_config_t *rs__powersgd_config(const rs_powersgd_t *ps);
const rs_model_t *rs__powersgd_model(const rs_powersgd_t *ps);

#endif
