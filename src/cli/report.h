/* report.h - what the two forms of a run's report share (report.c prints
 * the text, report_json.c the JSON): the figures both show. */
#ifndef RINGSIM_CLI_REPORT_H
#define RINGSIM_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

/* Small models print their averaged values without --print. */
#define PRINT_VALUES_UP_TO 64

/* The figures every report shows, derived once. */
typedef struct figures {
  int workers;
  size_t elems;
  double bytes;                /* S: bytes per worker, in the dtype summed */
  double model_bytes;          /* the same elements in the model's dtype */
  double sent_theory;          /* 2(W-1)/W x S */
  uint64_t sent_min, sent_max; /* bytes one worker sent */
  /* messages one worker sent (linear's root, the tree's inner nodes,
   * gloo's uneven segments send more than the others) */
  uint64_t transfers_min, transfers_max;
  uint64_t planned; /* transfers of a complete run */
  double seconds, algbw, busbw;
} figures_t;
figures_t cli_report_figures(const report_t *r);

/* A DDP communication hook's figures (docs/hooks.md), once checked. */
typedef struct hook_figures {
  rs_dtype_t dtype;      /* what it summed in */
  uint64_t sum_overflow; /* summed first (divided after): elements whose
                            exact sum is beyond dtype's range */
  uint64_t saved;        /* of those, the ones the hook kept finite */
  double max_abs_mean;   /* the largest |exact mean| */
  double overflow_at;    /* dtype's smallest magnitude that rounds to inf */
  /* Summed first, the largest |mean| times W reaches overflow_at from this
   * W on (0 for a mean of 0). */
  double overflow_workers;
} hook_figures_t;
hook_figures_t cli_hook_figures(const report_t *r);

/* Element i of the values, whatever the model's buffer type. */
double cli_report_value_at(const rs_model_t *model, const void *values,
                           size_t i);

#endif /* RINGSIM_CLI_REPORT_H */
