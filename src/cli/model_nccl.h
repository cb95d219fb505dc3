/* model_nccl.h - `ringsim model --like nccl` and --algo all's NCCL line
 * (model_nccl.c), for model.c. */
#ifndef RINGSIM_CLI_MODEL_NCCL_H
#define RINGSIM_CLI_MODEL_NCCL_H

#include <stdint.h>

#include "nccl_pick.h"

/* `ringsim model --like nccl` (model_nccl.c): nccl-tests' sweep, or
 * model's buckets (model non-NULL); the network checked by the caller. */
int cli_model_nccl(const options_t *o, const rs_model_t *model);

/* What NCCL would do with model's buckets on net's topology (--algo
 * all's last line): its pick per bucket timed by ringsim's prediction,
 * the buckets in turn, into *ns, and the largest bucket's pick; 0 where
 * net's topology is not one NCCL's model knows. */
int cli_nccl_would(const options_t *o, const rs_netmodel_t *net,
                   const rs_model_t *model, uint64_t *ns,
                   cli_nccl_pick_t *largest);
void cli_print_nccl_would(const options_t *o, const rs_netmodel_t *net,
                          const rs_model_t *model, int workers);

#endif /* RINGSIM_CLI_MODEL_NCCL_H */
