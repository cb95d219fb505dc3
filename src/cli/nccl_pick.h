/* nccl_pick.h - one all-reduce as NCCL would run it (nccl_pick.c), for
 * `ringsim model --like nccl` (model.c) and `ringsim step --like nccl`
 * (step_nccl.c): NCCL's tuner's pick among what the options force,
 * ringsim's prediction of it, and the runner-up's. */
#ifndef RINGSIM_CLI_NCCL_PICK_H
#define RINGSIM_CLI_NCCL_PICK_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../algo/nccl.h"
#include "option.h"


/* One all-reduce of `bytes`: NCCL's pick, ringsim's time for it, the
 * runner-up (the tuner's next best pair, forced alone). */
typedef struct cli_nccl_pick {
  uint64_t bytes;
  rs_nccl_choice_t pick; /* NCCL's (its time_us: NCCL's own estimate) */
  uint64_t ns;           /* ringsim's prediction of the pick */
  int has_runner;
  rs_nccl_choice_t runner;
  uint64_t runner_ns;
} cli_nccl_pick_t;

/* What --algo, --proto and --channels force, as NCCL_ALGO, NCCL_PROTO
 * and NCCL_MIN/MAX_NCHANNELS would. */
rs_nccl_force_t cli_nccl_force(const options_t *o);

/* What NCCL cannot run on sys that --algo forces (NVLS without a switch
 * that reduces, NVLS across nodes, NVLSTree on one), refused naming the
 * value: -1, or EXIT_USAGE having said why. */
int cli_nccl_check_force(const options_t *o, const rs_nccl_system_t *sys);

/* The pick for bytes on sys under force, `slots` a connection: 0, or
 * EXIT_USAGE having said why (nothing left to pick; a pick ringsim
 * cannot time). */
int cli_nccl_pick(const options_t *o, const rs_nccl_system_t *sys,
                  const rs_nccl_force_t *force, int slots, uint64_t bytes,
                  cli_nccl_pick_t *p);

/* --json's "forced": {"algo", "proto", "channels"}, each what --algo,
 * --proto and --channels force (NCCL's spelling) or null. */
json_t *cli_nccl_forced_json(const options_t *o);

/* "<lead>topology   --topo SPEC: ... NCCL sees ...": the machine as
 * NCCL's topology detection sees it, one line. */
void cli_nccl_print_system(const char *lead, const options_t *o,
                           const rs_nccl_system_t *sys);

#endif /* RINGSIM_CLI_NCCL_PICK_H */
