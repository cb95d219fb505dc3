/* explain.h - libringsim's teaching calls: an all-reduce told step by step.
 *
 * `ringsim run --explain` narrates a run's all-reduce with rs_explain, and
 * `ringsim diff` follows one element through two algorithms' orders with
 * rs_run_element_order and rs_run_bucket_regions. They replay the
 * algorithm's own schedule (src/algo/NAME.h) on the run's inputs; nothing
 * here runs the collective. They sit apart from ringsim.h because a
 * program that only runs and checks all-reduces never needs them; a
 * program that teaches (or a binding) may call them: they are exported
 * from libringsim.so and installed with ringsim.h. Errors as in ringsim.h.
 */
#ifndef RINGSIM_EXPLAIN_H
#define RINGSIM_EXPLAIN_H

#include <stddef.h>
#include <stdio.h>

#include "ringsim/ringsim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Can run's all-reduce be narrated (1..8 workers, an all-reduce)? RS_OK,
 * or RS_EINVAL with the reason in errmsg. Call it before the run starts,
 * to refuse --explain before anything runs. */
RS_API int rs_explain_check(const rs_run_t *run, char *errmsg);

/* Narrate run's all-reduce, whatever its algorithm (1..8 workers), step by
 * step to out, before executing it: who sends which region to whom, what
 * the receiver does, and whose contributions each worker's regions hold;
 * from the algorithm's own schedule. If the buffers are filled and the
 * bucket holds at most 8 elements, the workers' values after every step
 * too, computed as the run computes them (the last ones are the run's
 * result). With several buckets, bucket 0 is narrated (the others go
 * through the same steps). Fails only as rs_explain_check does. */
RS_API int rs_explain(FILE *out, const rs_run_t *run, char *errmsg);

/* One step of the order in which an all-reduce combines the workers'
 * contributions to one element (rs_run_element_order): a leaf, worker's
 * own contribution, or a fold of two earlier nodes, the receiver's own
 * value (left) and the value it received (right), as the run folds them:
 * in float32 for f32, f16 and bf16 (rounded to the dtype after each fold),
 * in double for f64. */
typedef struct rs_order_node {
  int worker;      /* a leaf: the worker; a fold: -1 */
  int left, right; /* a fold: the nodes folded, left op right */
  int mean;        /* a fold that then divides by W (--average post's last
                      addition) */
  double input;    /* a leaf: the worker's input */
  double value;    /* the value the run computes there (a leaf under
                      --average pre: the input divided by W) */
} rs_order_node_t;

typedef struct rs_order {
  int workers;
  rs_algorithm_t algo; /* the element's bucket's */
  rs_op_t op;
  rs_dtype_t dtype;
  int pre_divided;         /* --average pre: the leaves are inputs / W */
  size_t bucket;           /* the bucket holding the element */
  const char *region_word; /* "chunk", "part", "half"; NULL: the algorithm
                              moves the whole bucket at once */
  int region;              /* which chunk (part, half) holds the element */
  int root;                /* the node worker 0's result is */
  int count, capacity;     /* nodes */
  /* count nodes, in the same allocation; leaves 0..W-1 are workers
   * 0..W-1. A pointer, not a flexible array member, so that C++ reads
   * the header too. */
  rs_order_node_t *nodes;
  /* The one of NCCL's channels (--channels) whose part of the bucket
   * holds the element: the order is that channel's ring's (or tree's),
   * and region is one of that part's regions. -1: the bucket does not
   * run on channels. (Last, so a program built before it still reads
   * the fields above.) */
  int channel;
} rs_order_t;

/* The order in which run's algorithm (the bucket's, under --algo auto)
 * combines the workers' contributions to element elem (of the flat buffer)
 * of worker 0's result, with every partial value: the algorithm's own
 * schedule replayed as rs_explain does (1..8 workers, an all-reduce), on
 * the inputs in the run's buffers, so call it after filling them and
 * before rs_run_execute (which overwrites them). On success *out is
 * allocated (free it with rs_free); on error it is NULL and errmsg says
 * why. */
RS_API int rs_run_element_order(const rs_run_t *run, size_t elem,
                                rs_order_t **out, char *errmsg);
/* The regions the bucket's algorithm moves (the ring's W chunks, rhd's
 * parts, the tree's two halves), as offsets from the bucket's start:
 * offsets[0..count] (room for W + 1); *word names them ("chunk", "part",
 * "half"). Returns count; 1 with *word NULL for an algorithm that moves
 * the whole bucket at once (rd, linear); 0 for a bucket out of range. */
RS_API int rs_run_bucket_regions(const rs_run_t *run, size_t bucket,
                                 size_t *offsets, const char **word);

#ifdef __cplusplus
}
#endif
#endif /* RINGSIM_EXPLAIN_H */
