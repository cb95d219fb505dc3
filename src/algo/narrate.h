/* algo/narrate.h - what an algorithm tells its narration with (rs_algo_t's
 * narrate: `ringsim --explain`, and the order diff follows one element
 * through).
 *
 * An algorithm's narrate lists each step's messages (who sends which of
 * its regions to whom, and what the receiver does with it) and says in
 * words what the steps do. The narrator replays the messages: it keeps the
 * table of whose contributions every worker's copy of every region holds
 * and, for a small bucket, the workers' values, and prints them. It is the
 * teach layer's (src/teach/explain.c), which hands it down as a table of
 * functions: nothing in algo/ includes teach/, and the arrows point one
 * way. A region is a column of the layout (rs_algo_t's layout):
 * columns first .. end-1.
 *
 * A step's messages are all sent before any is received (each sender
 * sends what it held when the step began), and a receiver folds its
 * messages in the order listed: the order the algorithm folds them in.
 */
#ifndef RINGSIM_ALGO_NARRATE_H
#define RINGSIM_ALGO_NARRATE_H

#include <stdarg.h>

#include "net/xfer.h"
#include "ringsim/ringsim.h"

typedef struct rs_narrator rs_narrator_t;

/* The narrator's primitives (explain.c implements them). */
typedef struct rs_narrate_ops {
  /* Words, printf-style (nothing when an element's order is followed
   * silently). */
  void (*vsay)(rs_narrator_t *n, const char *fmt, va_list ap);
  /* A step begins: no messages yet. */
  void (*step_begin)(rs_narrator_t *n);
  /* Worker src sends columns first .. end-1 to dst, which does action
   * (src == dst: the worker folds in the data it set aside). */
  void (*send)(rs_narrator_t *n, int src, int dst, int first, int end,
               rs_recv_action_t action);
  /* Worker rank sets its own data aside (the linear root's). */
  void (*stash)(rs_narrator_t *n, int rank);
  /* The step's messages replayed and narrated, under title, and the
   * table printed. */
  void (*step_end)(rs_narrator_t *n, const char *title);
  /* After a phase that leaves each worker with complete regions: which. */
  void (*say_owners)(rs_narrator_t *n, const char *phase);
} rs_narrate_ops_t;

/* What a narration sees: the primitives, the run's shape and the op's
 * words. The narrator's own state lies beyond (explain.c's narr_t begins
 * with it). */
struct rs_narrator {
  const rs_narrate_ops_t *ops;
  int workers;
  rs_shape_t shape; /* the workers and their nodes (net/topo.h) */
  rs_op_t op;
  int steps;               /* steps narrated so far */
  const char *fold_phrase; /* "adds to its own copy" (and the chunk...) */
  const char *result;      /* "summed over" (all W workers) */
  const char *whole;       /* what the regions cut: "its buffer", or on
                              one of NCCL's channels "its part" */
  /* The one of NCCL's channels (--channels) narrated, over its part of
   * the bucket; -1: none. The ring narrates the places of its ring, which
   * the narrator turns into the channel's workers; the tree narrates the
   * channel's own tree (tree.h) by its workers, its part one region. */
  int channel;
};

static inline void rs__narr_say(rs_narrator_t *n, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void rs__narr_say(rs_narrator_t *n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  n->ops->vsay(n, fmt, ap);
  va_end(ap);
}
static inline void rs__narr_begin(rs_narrator_t *n) { n->ops->step_begin(n); }
static inline void rs__narr_send(rs_narrator_t *n, int src, int dst, int first,
                                 int end, rs_recv_action_t action) {
  n->ops->send(n, src, dst, first, end, action);
}
static inline void rs__narr_stash(rs_narrator_t *n, int rank) {
  n->ops->stash(n, rank);
}
static inline void rs__narr_end(rs_narrator_t *n, const char *title) {
  n->ops->step_end(n, title);
}
static inline void rs__narr_owners(rs_narrator_t *n, const char *phase) {
  n->ops->say_owners(n, phase);
}

/* A layout of one region, the whole bucket of elems elements (rs_algo_t's
 * layout for rd and linear, which move whole buckets). */
static inline int rs__layout_whole(size_t elems, size_t *offsets,
                                   const char **word, const char **words) {
  *word = *words = NULL;
  offsets[0] = 0;
  offsets[1] = elems;
  return 1;
}

/* The fold-in's and fold-out's introduction, when W is not a power of two
 * (P workers take part; how: what the fold-in does), shared by rd and rhd
 * (rd.c has it). */
void rs__narrate_pof2_fold(rs_narrator_t *n, int P, const char *how);

#endif /* RINGSIM_ALGO_NARRATE_H */
