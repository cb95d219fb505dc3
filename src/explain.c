/* explain.c - narrate a ring all-reduce step by step, as a teacher would.
 *
 * Everything said here comes from the schedule the ring runs (schedule.h):
 * which chunk each worker sends and receives at each step, and what it does
 * with it; the contribution table is replayed from the same functions. */
#include <stdio.h>
#include <string.h>

#include "ringsim/ringsim.h"
#include "algo/ring.h"
#include "runstate.h"
#include "schedule.h"
#include "util.h"

#define EXPLAIN_MAX_WORKERS 8

/* {0,1,3}, or "all" when every worker's contribution is in. */
static const char *set_text(unsigned mask, int W, char *buf, size_t size) {
  if (mask == (1u << W) - 1)
    return "all";
  size_t len = (size_t)snprintf(buf, size, "{");
  for (int w = 0; w < W; w++)
    if (mask & (1u << w))
      len += (size_t)snprintf(buf + len, size - len, "%s%d", len > 1 ? "," : "",
                              w);
  snprintf(buf + len, size - len, "}");
  return buf;
}

/* The narration's words for each op, in rs_op_t's order (sum, avg, min,
 * max, prod). */
static const struct op_words {
  const char *fold_verb;   /* a receiver: "which adds it to its own" */
  const char *fold_phrase; /* the phase: "... and adds to its own copy the
                              chunk it receives" */
  const char *cell_verb;   /* a cell's set of workers: "... that chunk sums" */
  const char *result;      /* the end: "every chunk summed over all W" */
} op_words[] = {
    {"adds it to its own", "adds to its own copy", "sums", "summed over"},
    {"adds it to its own", "adds to its own copy", "sums", "averaged over"},
    {"keeps the smaller of it and its own",
     "keeps the smaller, elementwise, of its own copy and", "is the minimum of",
     "as the minimum over"},
    {"keeps the larger of it and its own",
     "keeps the larger, elementwise, of its own copy and", "is the maximum of",
     "as the maximum over"},
    {"multiplies its own by it", "multiplies its own copy by",
     "is the product of", "as the product over"},
};

static const struct op_words *words_of(rs_op_t op) {
  return (unsigned)op < sizeof op_words / sizeof *op_words ? &op_words[op]
                                                           : &op_words[0];
}

static void print_table(FILE *out, unsigned held[][EXPLAIN_MAX_WORKERS],
                        int W) {
  char cell[32];
  /* Cells padded to a column, the last one not (no trailing spaces). */
  fprintf(out, "           ");
  for (int c = 0; c < W; c++)
    fprintf(out, c + 1 < W ? " chunk %-4d" : " chunk %d", c);
  fprintf(out, "\n");
  for (int r = 0; r < W; r++) {
    fprintf(out, "  worker %d ", r);
    for (int c = 0; c < W; c++)
      fprintf(out, c + 1 < W ? " %-10s" : " %s",
              set_text(held[r][c], W, cell, sizeof cell));
    fprintf(out, "\n");
  }
}

int rs_explain(FILE *out, const rs_run_t *run, char *errmsg) {
  const rs_model_t *model = run->model;
  const int W = run->config.workers;
  const rs_op_t op = run->config.op;
  if (run->config.algo != RS_ALGO_RING)
    return rs__err(errmsg, RS_EINVAL,
                   "--explain narrates the ring; --algo %s is not narrated",
                   rs_algorithm_name(run->config.algo));
  if (W < 1 || W > EXPLAIN_MAX_WORKERS)
    return rs__err(errmsg, RS_EINVAL,
                   "--explain narrates rings of 1 to %d workers, not %d",
                   EXPLAIN_MAX_WORKERS, W);
  const rs_bucket_t *bucket = &run->buckets[0];
  const size_t n = bucket->elems, base = bucket->elem_offset;
  unsigned held[EXPLAIN_MAX_WORKERS][EXPLAIN_MAX_WORKERS];
  char a[32], b[32], name[256];
  const size_t total = rs_model_elems(model);
  snprintf(name, sizeof name, "%s", rs_model_name(model));
  rs_one_line(name); /* a name holding ESC or CR cannot drive the terminal */
  fprintf(out,
          "explain: ring all-reduce (%s) of \"%s\" on %d worker%s, %zu "
          "element%s per worker\n",
          rs_op_name(op), name, W, W == 1 ? "" : "s", total,
          total == 1 ? "" : "s");
  if (run->result.buckets > 1 && W > 1)
    fprintf(out,
            "\nThe model is all-reduced in %zu buckets, as DDP does; each "
            "goes through the steps below. Bucket 0, elements %zu..%zu, is "
            "shown.\n",
            run->result.buckets, base, base + n - 1);
  if (W == 1) {
    fprintf(out, "\nWith one worker its gradient already is the mean: no "
                 "step, no transfer.\n");
    return RS_OK;
  }
  fprintf(out, "\nEach worker's %s is cut into %d chunks:",
          run->result.buckets > 1 ? "bucket" : "flat buffer", W);
  for (int c = 0; c < W; c++) {
    size_t off = base + rs__chunk_offset(n, W, c);
    size_t len = rs__chunk_elems(n, W, c);
    if (len == 0)
      fprintf(out, "%s chunk %d empty", c ? "," : "", c);
    else
      fprintf(out, "%s chunk %d = elements %zu..%zu", c ? "," : "", c, off,
              off + len - 1);
  }
  fprintf(out,
          ".\nA cell lists whose gradients that worker's copy of that "
          "chunk %s.\n\nstart\n",
          words_of(op)->cell_verb);
  for (int r = 0; r < W; r++)
    for (int c = 0; c < W; c++)
      held[r][c] = 1u << r;
  print_table(out, held, W);

  for (int phase = 0; phase < 2; phase++) {
    rs_phase_t ph = (rs_phase_t)phase;
    fprintf(out,
            "\n%s: %d step%s; in each, every worker sends one chunk to "
            "the next worker and %s the chunk it receives.\n",
            ph == RS_PHASE_REDUCE_SCATTER ? "reduce-scatter" : "all-gather",
            W - 1, W == 2 ? "" : "s",
            ph == RS_PHASE_REDUCE_SCATTER ? words_of(op)->fold_phrase
                                          : "copies over its own copy");
    for (int step = 0; step < W - 1; step++) {
      unsigned sent[EXPLAIN_MAX_WORKERS];
      fprintf(out, "\n%s step %d\n",
              ph == RS_PHASE_REDUCE_SCATTER ? "reduce-scatter" : "all-gather",
              step);
      for (int r = 0; r < W; r++)
        sent[r] = held[r][rs__ring_send_chunk(W, r, ph, step)];
      for (int r = 0; r < W; r++) {
        int dst = rs__ring_next(W, r), c = rs__ring_send_chunk(W, r, ph, step);
        unsigned before = held[dst][c];
        unsigned after =
            ph == RS_PHASE_REDUCE_SCATTER ? before | sent[r] : sent[r];
        held[dst][c] = after;
        int completes = ph == RS_PHASE_REDUCE_SCATTER && step == W - 2;
        fprintf(out,
                "  worker %d sends chunk %d, holding %s, to worker %d, "
                "which %s -> %s",
                r, c, set_text(sent[r], W, a, sizeof a), dst,
                ph == RS_PHASE_REDUCE_SCATTER ? words_of(op)->fold_verb
                                              : "copies it",
                set_text(after, W, b, sizeof b));
        if (completes && op == RS_OP_AVG)
          fprintf(out, ", and divides by %d: the mean", W);
        fprintf(out, "\n");
      }
      print_table(out, held, W);
    }
    if (ph == RS_PHASE_REDUCE_SCATTER) {
      fprintf(out, "\nAfter reduce-scatter each worker owns one complete "
                   "chunk:");
      for (int r = 0; r < W; r++)
        fprintf(out, "%s worker %d chunk %d", r ? "," : "", r, (r + 1) % W);
      fprintf(out, ".\n");
    }
  }
  fprintf(out,
          "\nEvery worker now holds every chunk %s all %d "
          "workers: %d steps, each worker sending %d chunks, 2(W-1)/W of "
          "its buffer.\n\n",
          words_of(op)->result, W, 2 * (W - 1), 2 * (W - 1));
  return RS_OK;
}
