/* step_nccl.h - `ringsim step --like nccl` (step_nccl.c): each bucket's
 * all-reduce as NCCL's tuner picks it, timed by ringsim's prediction, for
 * step.c's report. */
#ifndef RINGSIM_CLI_STEP_NCCL_H
#define RINGSIM_CLI_STEP_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../algo/nccl.h"
#include "nccl_pick.h"
#include "option.h"

/* One all-reduce of `bytes` (a bucket's, as it moves: its elements in
 * the hook's dtype): NCCL's pick, ringsim's time for it, the runner-up
 * (nccl_pick.h). */
typedef cli_nccl_pick_t step_nccl_pick_t;

/* The machine as NCCL sees it, what the user forces, and the pick of
 * every distinct size the step's buckets move (ascending bytes). */
typedef struct step_nccl {
  rs_nccl_system_t sys;
  rs_nccl_force_t force;
  int slots;
  step_nccl_pick_t *picks;
  size_t count;
} step_nccl_t;

/* --like nccl's refusals that need no model (and, without it, --proto,
 * --channels and --algo nvls refused): -1 to go on, or EXIT_USAGE having
 * said why. Called once the topology's workers are known. */
int step_nccl_check(const options_t *o);

/* The picks of every bucket the step's rows move (step 1's one bucket,
 * and each cap's), computed before anything runs: 0, or the exit status
 * having said why (a pick ringsim cannot time: EXIT_USAGE). Free n with
 * step_nccl_free. */
int step_nccl_prepare(const options_t *o, const rs_model_t *model,
                      step_nccl_t *n);
void step_nccl_free(step_nccl_t *n);

/* rs_step_config_t's allreduce_ns: ctx a prepared step_nccl_t; the
 * pick's predicted time for bytes (UINT64_MAX: not prepared). Reads
 * only: safe from several threads. */
uint64_t step_nccl_ns(void *ctx, uint64_t bytes);
/* The pick for bytes (NULL: not prepared). */
const step_nccl_pick_t *step_nccl_find(const step_nccl_t *n, uint64_t bytes);

/* The report's lines: the machine as NCCL sees it, what a bucket's time
 * is, and how the buckets follow one another ("  topology ..."). */
void step_nccl_print_head(const options_t *o, const step_nccl_t *n);
/* A bucket's columns after the step's own: algo, proto, channels, the
 * runner-up and its time (header when p is NULL), into buf. */
void step_nccl_columns(const step_nccl_pick_t *p, char *buf, size_t size);
/* --json: the document's "nccl" object (topology, slots, forced), and a
 * bucket's "nccl" object (its pick and runner-up). */
json_t *step_nccl_json(const options_t *o, const step_nccl_t *n);
json_t *step_nccl_pick_json(const step_nccl_pick_t *p);

#endif /* RINGSIM_CLI_STEP_NCCL_H */
