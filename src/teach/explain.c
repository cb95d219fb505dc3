/* explain.c - narrate an all-reduce step by step, as a teacher would.
 *
 * Everything said here comes from the schedule the algorithm runs (its
 * pure functions in src/algo/NAME.h): which region each worker sends to
 * whom at each step, and what the receiver does with it. Each algorithm's
 * part below only lists a step's messages; one replay (the narration's
 * engine) applies them to a table of whose contributions every worker's
 * copy of every region holds and, for a small bucket, to the workers'
 * values themselves, with the run's own reduce kernels in the run's order:
 * the values narrated at the end are the run's result, bit for bit.
 *
 * A step's messages are all sent before any is received (each sender
 * sends what it held when the step began), and a receiver folds its
 * messages in the order listed: the order the algorithm folds them in. */
#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/gloo_ring.h"
#include "algo/linear.h"
#include "algo/rd.h"
#include "algo/rhd.h"
#include "algo/ring.h"
#include "algo/tree.h"
#include "base/reduce.h"
#include "ringsim/explain.h" /* what this file implements */
#include "ringsim/ringsim.h"
#include "core/runstate.h"
#include "base/schedule.h"
#include "base/util.h"

#define EXPLAIN_MAX_WORKERS 8
#define MAX_COLS 8     /* ring: W chunks; rhd: P parts; tree: 2 halves */
#define MAX_MSGS 16    /* messages in one step */
#define VALUES_UP_TO 8 /* a bucket this small has its values narrated */

typedef struct narr_msg {
  int src, dst;   /* src == dst: the worker folds in the data it set aside */
  int first, end; /* the region: columns first .. end-1 */
  rs_recv_action_t action;
} msg_t;

/* The narration's state: the regions (columns), whose contributions each
 * worker's copy of each holds, and the values when the bucket is small. */
typedef struct narr {
  FILE *out;
  int W;
  rs_op_t op;
  rs_dtype_t dtype;
  size_t n, base, eb; /* bucket elements, first element, bytes each */
  int cols;
  size_t col_off[MAX_COLS + 1];
  const char *col_word;  /* "chunk", "part", "half"; NULL: one column */
  const char *col_words; /* its plural */
  unsigned held[EXPLAIN_MAX_WORKERS][MAX_COLS];
  unsigned stash_held[EXPLAIN_MAX_WORKERS];
  unsigned char *vals[EXPLAIN_MAX_WORKERS]; /* NULL: values not narrated */
  unsigned char *stash[EXPLAIN_MAX_WORKERS];
  unsigned char *sent; /* room for one snapshot of every worker */
  msg_t msgs[MAX_MSGS];
  int msg_count;
  int steps; /* steps narrated */
  /* rs_run_element_order follows one element, in column ecol (-1: none):
   * the node (in order->nodes) each worker's copy of it holds, and its
   * copy set aside. */
  int ecol;
  int expr[EXPLAIN_MAX_WORKERS];
  int stash_expr[EXPLAIN_MAX_WORKERS];
  rs_order_t *order;
} narr_t;

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

/* The shortest decimal that reads back as the same value of the buffer's
 * type (float or double). */
static void value_text(const narr_t *x, const unsigned char *p, char *buf,
                       size_t size) {
  double v;
  if (x->eb == sizeof(double))
    memcpy(&v, p, sizeof v);
  else {
    float f;
    memcpy(&f, p, sizeof f);
    v = f;
  }
  /* Positional (10, 0.25) where that reads well, as the report prints. */
  const int positional = v == 0 || (fabs(v) >= 1e-4 && fabs(v) < 1e16);
  for (int digits = positional ? 0 : 1; digits <= 24; digits++) {
    snprintf(buf, size, positional ? "%.*f" : "%.*g", digits, v);
    double back = strtod(buf, NULL);
    if (x->eb == sizeof(double) ? back == v : (float)back == (float)v)
      return;
  }
}

/* Column c's cell of worker r's values: its elements, ", "-separated. */
static void values_cell(const narr_t *x, int r, int c, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (size_t i = x->col_off[c]; i < x->col_off[c + 1] && len < size; i++) {
    char num[32];
    value_text(x, x->vals[r] + i * x->eb, num, sizeof num);
    len += (size_t)snprintf(buf + len, size - len, "%s%s",
                            i > x->col_off[c] ? ", " : "", num);
  }
  if (x->col_off[c] == x->col_off[c + 1])
    snprintf(buf, size, "-");
}

static void col_name(const narr_t *x, int c, char *buf, size_t size) {
  if (x->col_word)
    snprintf(buf, size, "%s %d", x->col_word, c);
  else
    snprintf(buf, size, "buffer");
}

/* The table of contributions, and under it the values: each column as
 * wide as its widest cell and at least 10 wide, the last not padded. */
static void print_table(const narr_t *x) {
  enum { CELL = 512 }; /* 8 values of up to 25 characters */
  if (!x->out)         /* an order followed silently */
    return;
  char cell[CELL];
  int width[MAX_COLS];
  for (int c = 0; c < x->cols; c++) {
    col_name(x, c, cell, sizeof cell);
    width[c] = (int)strlen(cell) + 1;
    for (int r = 0; r < x->W; r++) {
      int len = (int)strlen(set_text(x->held[r][c], x->W, cell, sizeof cell));
      width[c] = len + 1 > width[c] ? len + 1 : width[c];
      if (x->vals[0]) {
        values_cell(x, r, c, cell, sizeof cell);
        len = (int)strlen(cell);
        width[c] = len + 1 > width[c] ? len + 1 : width[c];
      }
    }
    width[c] = width[c] < 10 ? 10 : width[c];
  }
  fprintf(x->out, "           ");
  for (int c = 0; c < x->cols; c++) {
    col_name(x, c, cell, sizeof cell);
    fprintf(x->out, " %-*s", c + 1 < x->cols ? width[c] : 0, cell);
  }
  fprintf(x->out, "\n");
  for (int r = 0; r < x->W; r++) {
    fprintf(x->out, "  worker %d ", r);
    for (int c = 0; c < x->cols; c++)
      fprintf(x->out, " %-*s", c + 1 < x->cols ? width[c] : 0,
              set_text(x->held[r][c], x->W, cell, sizeof cell));
    fprintf(x->out, "\n");
  }
  if (!x->vals[0])
    return;
  fprintf(x->out, "  values\n");
  for (int r = 0; r < x->W; r++) {
    fprintf(x->out, "  worker %d ", r);
    for (int c = 0; c < x->cols; c++) {
      values_cell(x, r, c, cell, sizeof cell);
      fprintf(x->out, " %-*s", c + 1 < x->cols ? width[c] : 0, cell);
    }
    fprintf(x->out, "\n");
  }
}

static void region_text(const narr_t *x, int first, int end, char *buf,
                        size_t size) {
  if (!x->col_word)
    snprintf(buf, size, "its whole buffer");
  else if (end - first == 1)
    snprintf(buf, size, "%s %d", x->col_word, first);
  else if (first == 0 && end == x->cols)
    snprintf(buf, size, "its whole buffer");
  else
    snprintf(buf, size, "%s %d..%d", x->col_words, first, end - 1);
}

static void say(narr_t *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(narr_t *x, const char *fmt, ...) {
  va_list ap;
  if (!x->out) /* an order followed silently */
    return;
  va_start(ap, fmt);
  vfprintf(x->out, fmt, ap);
  va_end(ap);
}

static void step_begin(narr_t *x) { x->msg_count = 0; }

/* Worker src sends columns first .. end-1 to dst, which does action. */
static void send(narr_t *x, int src, int dst, int first, int end,
                 rs_recv_action_t action) {
  assert(x->msg_count < MAX_MSGS && 0 <= first && first < end &&
         end <= x->cols);
  x->msgs[x->msg_count++] = (msg_t){src, dst, first, end, action};
}

/* Worker r sets its own data aside (linear's root). */
static void stash(narr_t *x, int r) {
  x->stash_held[r] = x->held[r][0];
  x->stash_expr[r] = x->expr[r];
  if (x->vals[r])
    memcpy(x->stash[r], x->vals[r], x->n * x->eb);
}

/* One element's value in the buffer's type: a fold of src into dst as the
 * run's kernels do it (divisor > 0: the sum divided by it), or, for a
 * leaf of --average pre, dst divided by -divisor. */
static double fold_one(rs_dtype_t dtype, rs_op_t op, double dst, double src,
                       int divisor) {
  if (dtype == RS_DTYPE_F64) {
    if (divisor < 0)
      rs__scale_div(dtype, &dst, 1, -divisor);
    else
      rs__fold(dtype, &dst, &src, 1, op, divisor);
    return dst;
  }
  float d = (float)dst, s = (float)src;
  if (divisor < 0)
    rs__scale_div(dtype, &d, 1, -divisor);
  else
    rs__fold(dtype, &d, &s, 1, op, divisor);
  return d;
}

/* The followed element's new node: the receiver's own (left) folded with
 * what it received (right). */
static int order_fold(narr_t *x, int left, int right, int mean) {
  rs_order_t *o = x->order;
  assert(o->count < o->capacity);
  rs_order_node_t *node = &o->nodes[o->count];
  *node = (rs_order_node_t){
      .worker = -1,
      .left = left,
      .right = right,
      .mean = mean,
      .value = fold_one(x->dtype, x->op, o->nodes[left].value,
                        o->nodes[right].value, mean ? x->W : 0)};
  return o->count++;
}

/* Replay the step's messages, narrate each, then print the table. */
static void step_end(narr_t *x, const char *title) {
  char a[32], b[32], what[64];
  unsigned sent_held[MAX_MSGS];
  int sent_expr[MAX_MSGS];
  say(x, "\n%s\n", title);
  x->steps++;
  /* What each sender holds as the step begins. */
  for (int i = 0; i < x->msg_count; i++) {
    const msg_t *m = &x->msgs[i];
    sent_held[i] =
        m->src == m->dst ? x->stash_held[m->src] : x->held[m->src][m->first];
    sent_expr[i] = m->src == m->dst ? x->stash_expr[m->src] : x->expr[m->src];
    if (x->vals[0])
      memcpy(x->sent + (size_t)i * x->n * x->eb,
             m->src == m->dst ? x->stash[m->src] : x->vals[m->src],
             x->n * x->eb);
  }
  for (int i = 0; i < x->msg_count; i++) {
    const msg_t *m = &x->msgs[i];
    const int first = m->first, end = m->end;
    const size_t off = x->col_off[first], len = x->col_off[end] - off;
    unsigned after = m->action == RS_RECV_COPY
                         ? sent_held[i]
                         : x->held[m->dst][first] | sent_held[i];
    for (int c = first; c < end; c++)
      x->held[m->dst][c] = after;
    if (x->order && first <= x->ecol && x->ecol < end)
      x->expr[m->dst] = m->action == RS_RECV_COPY
                            ? sent_expr[i]
                            : order_fold(x, x->expr[m->dst], sent_expr[i],
                                         m->action == RS_RECV_REDUCE_MEAN);
    if (x->vals[0] && len) {
      unsigned char *dst = x->vals[m->dst] + off * x->eb;
      const unsigned char *src = x->sent + ((size_t)i * x->n + off) * x->eb;
      if (m->action == RS_RECV_COPY)
        memcpy(dst, src, len * x->eb);
      else
        rs__fold(x->dtype, dst, src, len, x->op,
                 m->action == RS_RECV_REDUCE_MEAN ? x->W : 0);
    }
    const char *verb =
        m->action == RS_RECV_COPY ? "copies it" : words_of(x->op)->fold_verb;
    region_text(x, first, end, what, sizeof what);
    if (m->src == m->dst)
      say(x,
          "  worker %d takes its own data, set aside at the start, "
          "holding %s, and %s",
          m->src, set_text(sent_held[i], x->W, a, sizeof a), verb);
    else
      say(x, "  worker %d sends %s, holding %s, to worker %d, which %s", m->src,
          what, set_text(sent_held[i], x->W, a, sizeof a), m->dst, verb);
    say(x, " -> %s", set_text(after, x->W, b, sizeof b));
    if (m->action == RS_RECV_REDUCE_MEAN)
      say(x, ", and divides by %d: the mean", x->W);
    say(x, "\n");
  }
  print_table(x);
}

/* After a phase that leaves each worker with complete regions: which. */
static void say_owners(narr_t *x, const char *phase) {
  char name[32];
  say(x, "\nAfter %s each worker owns, complete:", phase);
  for (int r = 0; r < x->W; r++) {
    int any = 0;
    say(x, "%s worker %d", r ? "," : "", r);
    for (int c = 0; c < x->cols; c++)
      if (x->held[r][c] == (1u << x->W) - 1) {
        col_name(x, c, name, sizeof name);
        say(x, "%s %s", any++ ? " and" : "", name);
      }
    if (!any)
      say(x, " nothing complete");
  }
  say(x, ".\n");
}

/* A ring's direction: which chunk worker r sends at a step, to whom, and
 * how the narration says it. */
typedef struct ring_way {
  int (*send_chunk)(int workers, int rank, rs_phase_t phase, int step);
  int (*next)(int workers, int rank);
  const char *sends; /* "every worker <sends> and folds ..." */
  const char *from;  /* after "the chunk it receives" */
} ring_way_t;

/* A ring's two phases: W-1 steps of reduce-scatter, W-1 of all-gather,
 * every worker sending one chunk along way in each. */
static void ring_phases(narr_t *x, int mean, const ring_way_t *way) {
  const int W = x->W;
  char title[64];
  for (int phase = 0; phase < 2; phase++) {
    rs_phase_t ph = (rs_phase_t)phase;
    const int rs = ph == RS_PHASE_REDUCE_SCATTER;
    say(x,
        "\n%s: %d step%s; in each, every worker %s and %s the chunk it "
        "receives%s.\n",
        rs ? "reduce-scatter" : "all-gather", W - 1, W == 2 ? "" : "s",
        way->sends,
        rs ? words_of(x->op)->fold_phrase : "copies over its own copy",
        way->from);
    for (int step = 0; step < W - 1; step++) {
      step_begin(x);
      for (int r = 0; r < W; r++) {
        int c = way->send_chunk(W, r, ph, step);
        rs_recv_action_t action = !rs                     ? RS_RECV_COPY
                                  : mean && step == W - 2 ? RS_RECV_REDUCE_MEAN
                                                          : RS_RECV_REDUCE;
        send(x, r, way->next(W, r), c, c + 1, action);
      }
      snprintf(title, sizeof title, "%s step %d",
               rs ? "reduce-scatter" : "all-gather", step);
      step_end(x, title);
    }
    if (rs)
      say_owners(x, "reduce-scatter");
  }
}

/* The ring (algo/ring.h): every worker sends to the next. */
static void explain_ring(narr_t *x, int mean) {
  static const ring_way_t way = {rs__ring_send_chunk, rs__ring_next,
                                 "sends one chunk to the next worker", ""};
  ring_phases(x, mean, &way);
  say(x,
      "\nEvery worker now holds every chunk %s all %d "
      "workers: %d steps, each worker sending %d chunks, 2(W-1)/W of "
      "its buffer.\n",
      words_of(x->op)->result, x->W, 2 * (x->W - 1), 2 * (x->W - 1));
}

/* gloo's ring (algo/gloo_ring.h): the ring the other way round, each chunk
 * starting at the worker below its owner. */
static void explain_gloo_ring(narr_t *x, int mean) {
  static const ring_way_t way = {
      rs__gloo_send_chunk, rs__gloo_next,
      "r sends one chunk to worker r-1 (gloo's direction)", " from r+1"};
  ring_phases(x, mean, &way);
  say(x,
      "\nEvery worker now holds every chunk %s all %d workers, in gloo's "
      "order: chunk c summed from worker c-1 down to worker c.\n",
      words_of(x->op)->result, x->W);
}

/* The fold-in's and fold-out's explanation, shared by rd and rhd. */
static void say_fold(narr_t *x, int P, const char *how) {
  const int E = x->W - P;
  say(x,
      "\n%d workers are not a power of two: the E = %d extra worker%s fold%s "
      "into %s neighbour%s first, as Open MPI does. %s Then %d workers "
      "take part, renumbered 0..%d, and at the end the result goes back to "
      "the %d that sat out.\n",
      x->W, E, E == 1 ? "" : "s", E == 1 ? "s" : "", E == 1 ? "its" : "their",
      E == 1 ? "" : "s", how, P, P - 1, E);
}

/* Recursive doubling (algo/rd.h). */
static void explain_rd(narr_t *x, int mean) {
  const int W = x->W, P = rs__pof2(W), E = W - P;
  char title[96];
  if (E) {
    say_fold(x, P,
             "Each even worker r below 2E sends its whole buffer to r+1, "
             "which adds it to its own and stands for both.");
    step_begin(x);
    for (int r = 0; r < W; r++)
      if (rs__pof2_fold_peer(W, r) > r)
        send(x, r, rs__pof2_fold_peer(W, r), 0, 1, RS_RECV_REDUCE);
    step_end(x, "fold-in");
  }
  say(x,
      "\nexchanges: %d step%s; in the step at distance d = 1, 2, 4, ..., "
      "each worker taking part (renumbered rank v) swaps its whole buffer "
      "with renumbered rank v xor d, and both %s.\n",
      rs__log2(P), P == 2 ? "" : "s",
      x->op == RS_OP_SUM || x->op == RS_OP_AVG ? "add"
                                               : "fold it into their own");
  for (int d = 1, k = 0; d < P; d *= 2, k++) {
    step_begin(x);
    for (int v = 0; v < P; v++)
      send(x, rs__rd_rank(W, v), rs__rd_rank(W, v ^ d), 0, 1,
           mean && 2 * d == P ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE);
    snprintf(title, sizeof title, "exchange %d (distance %d)", k, d);
    step_end(x, title);
  }
  if (E) {
    say(x, "\nfold-out: each odd worker r below 2E sends the result back to "
           "r-1, which copies it.\n");
    step_begin(x);
    for (int r = 0; r < W; r++)
      if (rs__pof2_fold_peer(W, r) >= 0 && rs__pof2_fold_peer(W, r) < r)
        send(x, r, rs__pof2_fold_peer(W, r), 0, 1, RS_RECV_COPY);
    step_end(x, "fold-out");
  }
  say(x,
      "\nEvery worker now holds the whole buffer %s all %d workers: %d "
      "step%s, each worker taking part sending its whole buffer %d "
      "time%s, where the ring sends 2(W-1)/W of it.\n",
      words_of(x->op)->result, W, x->steps, x->steps == 1 ? "" : "s",
      rs__log2(P), rs__log2(P) == 1 ? "" : "s");
}

/* Rabenseifner's (algo/rhd.h): the columns are the P parts the halvings
 * cut the bucket into. A window is a run of parts: the halving of a bucket
 * of P elements (rs__rhd_halving) gives it in parts, since every window of
 * an n-element bucket is cut where the part boundaries are (rs_explain). */
static void explain_rhd(narr_t *x, int mean) {
  const int W = x->W, P = rs__pof2(W), E = W - P, K = rs__log2(P);
  char title[96];
  if (E) {
    say_fold(x, P,
             "Each pair r, r+1 (even r below 2E) swaps halves, the even one "
             "keeping and adding the left half, the odd one the right; then "
             "the odd one sends its summed right half to the even one, which "
             "copies it and stands for both.");
    step_begin(x);
    for (int r = 0; r < 2 * E; r += 2) {
      send(x, r, r + 1, P / 2, P, RS_RECV_REDUCE);
      send(x, r + 1, r, 0, P / 2, RS_RECV_REDUCE);
    }
    step_end(x, "fold-in step 0");
    step_begin(x);
    for (int r = 0; r < 2 * E; r += 2)
      send(x, r + 1, r, P / 2, P, RS_RECV_COPY);
    step_end(x, "fold-in step 1");
  }
  say(x,
      "\nreduce-scatter by recursive halving: %d step%s; at distance m = 1, "
      "2, 4, ... each worker taking part (virtual rank v) sends half of its "
      "window to v xor m and %s the other half it receives: the lower "
      "worker keeps the left half. The window halves every step.\n",
      K, K == 1 ? "" : "s", words_of(x->op)->fold_phrase);
  for (int k = 0; k < K; k++) {
    step_begin(x);
    for (int v = 0; v < P; v++) {
      const int r = rs__rhd_rank(W, v);
      size_t go = 0, gl = 0, ko = 0, kl = 0;
      rs__rhd_halving(W, r, (size_t)P, k, &go, &gl, &ko, &kl);
      send(x, r, rs__rhd_rank(W, v ^ (1 << k)), (int)go, (int)(go + gl),
           mean && k == K - 1 ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE);
    }
    snprintf(title, sizeof title, "reduce-scatter step %d (distance %d)", k,
             1 << k);
    step_end(x, title);
  }
  say_owners(x, "reduce-scatter");
  say(x,
      "\nall-gather by recursive doubling: %d step%s, the same partners in "
      "reverse order; each sends what it holds and copies what it gave "
      "away, so the window doubles back to the whole buffer.\n",
      K, K == 1 ? "" : "s");
  for (int k = K - 1, j = 0; k >= 0; k--, j++) {
    step_begin(x);
    for (int v = 0; v < P; v++) {
      const int r = rs__rhd_rank(W, v);
      size_t go = 0, gl = 0, ko = 0, kl = 0;
      rs__rhd_halving(W, r, (size_t)P, k, &go, &gl, &ko, &kl);
      send(x, r, rs__rhd_rank(W, v ^ (1 << k)), (int)ko, (int)(ko + kl),
           RS_RECV_COPY);
    }
    snprintf(title, sizeof title, "all-gather step %d (distance %d)", j,
             1 << k);
    step_end(x, title);
  }
  if (E) {
    say(x, "\nfold-out: each even worker r below 2E sends the result to "
           "r+1, which copies it.\n");
    step_begin(x);
    for (int r = 0; r < 2 * E; r += 2)
      send(x, r, r + 1, 0, P, RS_RECV_COPY);
    step_end(x, "fold-out");
  }
  say(x,
      "\nEvery worker now holds every part %s all %d workers: %d steps; "
      "each worker taking part sends (P-1)/P of its buffer in the "
      "halvings and as much in the doublings, as the ring does, in "
      "2 log2 P steps instead of 2(W-1).\n",
      words_of(x->op)->result, W, x->steps);
}

/* The linear all-reduce (algo/linear.h). */
static void explain_linear(narr_t *x, int mean) {
  const int W = x->W, root = RS_LINEAR_ROOT;
  char title[64];
  say(x,
      "\nreduce: %d step%s; in each, one worker sends its whole buffer to "
      "worker %d, the root. The root sets its own data aside, copies the "
      "first buffer it receives over its own, %s each next one, and folds "
      "its own in last, as Open MPI's basic linear reduce does.\n",
      W - 1, W == 2 ? "" : "s", root,
      x->op == RS_OP_SUM || x->op == RS_OP_AVG ? "adds" : "folds in");
  stash(x, root);
  for (int j = 0; j < W - 1; j++) {
    step_begin(x);
    send(x, rs__linear_sender(W, j), root, 0, 1,
         j == 0 ? RS_RECV_COPY : RS_RECV_REDUCE);
    snprintf(title, sizeof title, "reduce step %d", j);
    step_end(x, title);
  }
  step_begin(x);
  send(x, root, root, 0, 1, mean ? RS_RECV_REDUCE_MEAN : RS_RECV_REDUCE);
  step_end(x, "the root's own data, last");
  say(x,
      "\nbroadcast: %d step%s; in each the root sends the result to one "
      "worker, which copies it.\n",
      W - 1, W == 2 ? "" : "s");
  for (int j = 0; j < W - 1; j++) {
    step_begin(x);
    send(x, root, rs__linear_receiver(j), 0, 1, RS_RECV_COPY);
    snprintf(title, sizeof title, "broadcast step %d", j);
    step_end(x, title);
  }
  say(x,
      "\nEvery worker now holds the whole buffer %s all %d workers: the "
      "root took in %d buffer%s and sent out %d, all through its own "
      "link.\n",
      words_of(x->op)->result, W, W - 1, W == 2 ? "" : "s", W - 1);
}

/* The double binary tree (algo/tree.h): the columns are the two halves,
 * half t all-reduced by tree t. */
static void explain_tree(narr_t *x, int mean) {
  const int W = x->W;
  char title[96];
  int most[2] = {0, 0};
  for (int t = 0; t < 2; t++) {
    say(x, "\ntree %d (root worker %d):", t, rs__tree_root(W, t));
    int any = 0;
    for (int r = 0; r < W; r++) {
      int children[2];
      const int k = rs__tree_children(W, t, r, children);
      const int d = rs__tree_depth(W, t, r);
      most[t] = d > most[t] ? d : most[t];
      if (k == 1)
        say(x, "%s worker %d's child %d", any++ ? ";" : "", r, children[0]);
      else if (k == 2)
        say(x, "%s worker %d's children %d, %d", any++ ? ";" : "", r,
            children[0], children[1]);
    }
    say(x, ".");
  }
  say(x,
      "\nHalf t of the bucket goes up tree t (reduce) and back down "
      "(broadcast), as %d chunk%s of segments, pipelined: a segment climbs "
      "one level while the next climbs the level below. The steps below "
      "follow the data level by level; a worker folds its own data first, "
      "then its children's in order.\n",
      rs__tree_chunks(W), rs__tree_chunks(W) == 1 ? "" : "s");
  for (int phase = 0; phase < 2; phase++)
    for (int t = 0; t < 2; t++) {
      for (int i = 0; i < most[t]; i++) {
        /* reduce: the deepest level first; broadcast: the root's first */
        const int L = phase == 0 ? most[t] - i : i + 1;
        step_begin(x);
        for (int p = 0; p < W; p++) {
          int children[2];
          if (rs__tree_depth(W, t, p) != L - 1)
            continue;
          const int k = rs__tree_children(W, t, p, children);
          const int root = rs__tree_parent(W, t, p) < 0;
          for (int j = 0; j < k; j++)
            if (phase == 0)
              send(x, children[j], p, t, t + 1,
                   mean && root && j == k - 1 ? RS_RECV_REDUCE_MEAN
                                              : RS_RECV_REDUCE);
            else
              send(x, p, children[j], t, t + 1, RS_RECV_COPY);
        }
        snprintf(title, sizeof title, "tree %d %s, level %d %s level %d", t,
                 phase == 0 ? "reduce" : "broadcast", phase == 0 ? L : L - 1,
                 phase == 0 ? "up to" : "down to", phase == 0 ? L - 1 : L);
        step_end(x, title);
      }
    }
  say(x,
      "\nEvery worker now holds both halves %s all %d workers; each half "
      "crossed %d and %d levels up and as many down.\n",
      words_of(x->op)->result, W, most[0], most[1]);
}

/* The regions algo moves in a bucket of n elements at W workers (the
 * narration's columns): their offsets, col_off[0..cols], and their name
 * (NULL: the whole bucket moves at once). Returns cols; col_off has room
 * for W + 1. */
static int layout(rs_algorithm_t algo, int W, size_t n, size_t cap,
                  size_t *col_off, const char **word, const char **words) {
  int cols;
  *word = *words = NULL;
  switch (algo) {
  case RS_ALGO_RING:
    cols = W;
    *word = "chunk";
    *words = "chunks";
    for (int c = 0; c <= W; c++)
      col_off[c] = c < W ? rs__chunk_offset(n, W, c) : n;
    break;
  case RS_ALGO_GLOO_RING: {
    /* gloo's chunks: P equal segments each, the last ones short or empty */
    rs_gloo_layout_t l = rs__gloo_layout(n, W, cap ? cap : 1);
    cols = W;
    *word = "chunk";
    *words = "chunks";
    for (int c = 0; c <= W; c++) {
      size_t off = n, len;
      if (c < W)
        rs__gloo_chunk(&l, n, c, &off, &len);
      col_off[c] = off;
    }
    break;
  }
  case RS_ALGO_RHD: {
    /* The halvings' cuts: window [s, s+len) splits at s + len/2; the
     * leaves in order are the parts. */
    const int P = rs__pof2(W);
    cols = P;
    *word = "part";
    *words = "parts";
    col_off[0] = 0;
    col_off[P] = n;
    for (int span = P; span > 1; span /= 2)
      for (int c = 0; c < P; c += span) {
        size_t lo = col_off[c], hi = col_off[c + span];
        col_off[c + span / 2] = lo + (hi - lo) / 2;
      }
    break;
  }
  case RS_ALGO_TREE:
    cols = 2;
    *word = "half";
    *words = "halves";
    for (int c = 0; c <= 2; c++)
      col_off[c] = c < 2 ? rs__chunk_offset(n, 2, c) : n;
    break;
  default: /* rd, linear: the whole buffer moves at once */
    cols = 1;
    col_off[0] = 0;
    col_off[1] = n;
    break;
  }
  return cols;
}

/* Play algo's schedule on x: narrated, or an element followed. */
static void replay(narr_t *x, rs_algorithm_t algo, int mean) {
  switch (algo) {
  case RS_ALGO_RING:
    explain_ring(x, mean);
    break;
  case RS_ALGO_RD:
    explain_rd(x, mean);
    break;
  case RS_ALGO_RHD:
    explain_rhd(x, mean);
    break;
  case RS_ALGO_LINEAR:
    explain_linear(x, mean);
    break;
  case RS_ALGO_TREE:
    explain_tree(x, mean);
    break;
  case RS_ALGO_GLOO_RING:
    explain_gloo_ring(x, mean);
    break;
  case RS_ALGO_AUTO: /* not an algorithm: refused before */
    assert(0);
    break;
  }
}

int rs_explain_check(const rs_run_t *run, char *errmsg) {
  const int W = run->config.workers;
  if (W < 1 || W > EXPLAIN_MAX_WORKERS)
    return rs__err(errmsg, RS_EINVAL,
                   "--explain narrates 1 to %d workers, not %d",
                   EXPLAIN_MAX_WORKERS, W);
  if (run->config.collective != RS_COLL_ALLREDUCE)
    return rs__err(errmsg, RS_EINVAL,
                   "--explain narrates an all-reduce, not a reduce-scatter");
  if (run->config.algo == RS_ALGO_AUTO)
    return rs__err(errmsg, RS_EINVAL,
                   "--explain narrates one algorithm, not auto's choice per "
                   "bucket");
  if (run->config.ddp_layout)
    return rs__err(errmsg, RS_EINVAL,
                   "--explain narrates the model's layout, not DDP's "
                   "reversed buckets (--like ddp-gloo): give --algo "
                   "gloo-ring --op avg --average pre-mul instead");
  return RS_OK;
}

int rs_explain(FILE *out, const rs_run_t *run, char *errmsg) {
  const rs_model_t *model = run->model;
  const int W = run->config.workers;
  const rs_op_t op = run->config.op;
  const rs_algorithm_t algo = run->config.algo;
  int rc = rs_explain_check(run, errmsg);
  if (rc)
    return rc;
  const rs_bucket_t *bucket = &run->buckets[0];
  narr_t x = {.out = out,
              .ecol = -1,
              .W = W,
              .op = op,
              .dtype = run->dtype,
              .n = bucket->elems,
              .base = bucket->elem_offset,
              .eb = run->buf_elem_bytes};
  const size_t n = x.n, base = x.base;
  char name[256];
  const size_t total = rs_model_elems(model);
  snprintf(name, sizeof name, "%s", rs_model_name(model));
  rs_one_line(name); /* a name holding ESC or CR cannot drive the terminal */
  static const char *const titles[] = {
      [RS_ALGO_RING] = "ring all-reduce",
      [RS_ALGO_RD] = "recursive doubling all-reduce",
      [RS_ALGO_RHD] = "Rabenseifner's all-reduce (recursive halving, then "
                      "doubling)",
      [RS_ALGO_LINEAR] = "linear all-reduce (reduce to worker 0, then "
                         "broadcast)",
      [RS_ALGO_TREE] = "double binary tree all-reduce",
      [RS_ALGO_GLOO_RING] = "gloo's ring all-reduce (PyTorch's gloo backend)"};
  fprintf(out,
          "explain: %s (%s) of \"%s\" on %d worker%s, %zu "
          "element%s per worker\n",
          titles[algo], rs_op_name(op), name, W, W == 1 ? "" : "s", total,
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
  /* The columns: the regions the algorithm moves. */
  const char *what = run->result.buckets > 1 ? "bucket" : "flat buffer";
  x.cols = layout(algo, W, n, run->config.segment_bytes / run->elem_size,
                  x.col_off, &x.col_word, &x.col_words);
  if (x.cols > 1) {
    fprintf(out, "\nEach worker's %s is cut into %d %s:", what, x.cols,
            x.col_words);
    for (int c = 0; c < x.cols; c++) {
      size_t off = base + x.col_off[c], len = x.col_off[c + 1] - x.col_off[c];
      if (len == 0)
        fprintf(out, "%s %s %d empty", c ? "," : "", x.col_word, c);
      else
        fprintf(out, "%s %s %d = elements %zu..%zu", c ? "," : "", x.col_word,
                c, off, off + len - 1);
    }
    fprintf(out,
            ".\nA cell lists whose gradients that worker's copy of that "
            "%s %s.\n",
            x.col_word, words_of(op)->cell_verb);
  } else {
    fprintf(out,
            "\nEvery message carries a worker's whole %s, elements "
            "%zu..%zu.\nA cell lists whose gradients that worker's copy "
            "%s.\n",
            what, base, base + n - 1, words_of(op)->cell_verb);
  }
  /* The values, when the bucket is small and the buffers are filled. */
  const int mean = op == RS_OP_AVG && !run->config.average_pre;
  int values = run->filled && n <= VALUES_UP_TO;
  for (int r = 0; r < W && values; r++) {
    x.vals[r] = malloc(n * x.eb);
    x.stash[r] = malloc(n * x.eb);
    values = x.vals[r] && x.stash[r];
  }
  if (values && (x.sent = malloc(MAX_MSGS * n * x.eb)) == NULL)
    values = 0;
  if (!values)
    for (int r = 0; r < W; r++) {
      free(x.vals[r]);
      free(x.stash[r]);
      x.vals[r] = x.stash[r] = NULL;
    }
  for (int r = 0; r < W; r++) {
    for (int c = 0; c < x.cols; c++)
      x.held[r][c] = 1u << r;
    if (values) {
      memcpy(x.vals[r], run->bufs[r] + base * x.eb, n * x.eb);
      if (op == RS_OP_AVG && run->config.average_pre)
        rs__pre_average(x.dtype, x.vals[r], n, W, run->config.average_pre);
    }
  }
  if (values)
    fprintf(out, "Under it, each worker's values%s.\n",
            op != RS_OP_AVG || !run->config.average_pre ? ""
            : run->config.average_pre == RS_AVERAGE_PRE_MUL
                ? ", each already multiplied by 1/W rounded, as DDP's "
                  "reducer does (--average pre-mul)"
                : ", each already divided by the number of workers "
                  "(--average pre)");
  fprintf(out, "\nstart\n");
  print_table(&x);
  replay(&x, algo, mean);
  fprintf(out, "\n");
  for (int r = 0; r < W; r++)
    for (int c = 0; c < x.cols; c++)
      assert(x.held[r][c] == (1u << W) - 1); /* the schedule all-reduces */
  for (int r = 0; r < W; r++) {
    free(x.vals[r]);
    free(x.stash[r]);
  }
  free(x.sent);
  return RS_OK;
}

int rs_run_bucket_regions(const rs_run_t *run, size_t bucket, size_t *offsets,
                          const char **word) {
  const char *words;
  rs_algorithm_t algo = rs_run_bucket_algo(run, bucket);
  if (bucket >= run->result.buckets || algo == RS_ALGO_AUTO) {
    *word = NULL;
    return 0;
  }
  return layout(algo, run->config.workers, run->buckets[bucket].elems,
                run->config.segment_bytes / run->elem_size, offsets, word,
                &words);
}

int rs_run_element_order(const rs_run_t *run, size_t elem, rs_order_t **out,
                         char *errmsg) {
  const int W = run->config.workers;
  *out = NULL;
  /* as rs_explain_check, but --algo auto is fine: the bucket's choice is
   * one algorithm */
  if (W < 1 || W > EXPLAIN_MAX_WORKERS)
    return rs__err(errmsg, RS_EINVAL,
                   "the order of an element is followed for 1 to %d "
                   "workers, not %d",
                   EXPLAIN_MAX_WORKERS, W);
  if (run->config.collective != RS_COLL_ALLREDUCE)
    return rs__err(errmsg, RS_EINVAL,
                   "the order of an element is followed in an all-reduce, "
                   "not a reduce-scatter");
  if (!run->filled)
    return rs__err(errmsg, RS_EINVAL,
                   "the order of an element needs the workers' inputs: the "
                   "run is not filled");
  if (elem >= rs_model_elems(run->model))
    return rs__err(errmsg, RS_EINVAL, "element %zu: the model has %zu", elem,
                   rs_model_elems(run->model));
  size_t b = 0;
  while (elem >= run->buckets[b].elem_offset + run->buckets[b].elems)
    b++;
  const rs_algorithm_t algo = rs_run_bucket_algo(run, b);
  narr_t x = {.out = NULL,
              .W = W,
              .op = run->config.op,
              .dtype = run->dtype,
              .n = run->buckets[b].elems,
              .base = run->buckets[b].elem_offset,
              .eb = run->buf_elem_bytes};
  x.cols = layout(algo, W, x.n, run->config.segment_bytes / run->elem_size,
                  x.col_off, &x.col_word, &x.col_words);
  const size_t i = elem - x.base;
  for (x.ecol = 0; !(i < x.col_off[x.ecol + 1]); x.ecol++)
    ;
  /* A leaf per worker, and at most a fold per message per step: the
   * schedules take at most 2W + 2 steps. */
  const int capacity = W + MAX_MSGS * (2 * W + 4);
  rs_order_t *o = calloc(1, sizeof *o + (size_t)capacity * sizeof *o->nodes);
  if (!o)
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  o->nodes = (rs_order_node_t *)(o + 1); /* after it (explain.h) */
  o->capacity = capacity;
  o->workers = W;
  o->algo = algo;
  o->op = run->config.op;
  o->dtype = run->dtype;
  o->pre_divided = run->config.op == RS_OP_AVG && run->config.average_pre;
  o->bucket = b;
  o->region_word = x.col_word;
  o->region = x.col_word ? x.ecol : 0;
  x.order = o;
  for (int r = 0; r < W; r++) {
    double v;
    if (x.eb == sizeof(double))
      memcpy(&v, run->bufs[r] + elem * x.eb, sizeof v);
    else {
      float f;
      memcpy(&f, run->bufs[r] + elem * x.eb, sizeof f);
      v = f;
    }
    o->nodes[r] = (rs_order_node_t){
        .worker = r,
        .left = -1,
        .right = -1,
        .input = v,
        .value = o->pre_divided ? fold_one(x.dtype, x.op, v, 0, -W) : v};
    x.expr[r] = r;
    for (int c = 0; c < x.cols; c++)
      x.held[r][c] = 1u << r;
  }
  o->count = W;
  const int mean = x.op == RS_OP_AVG && !run->config.average_pre;
  if (W > 1)
    replay(&x, algo, mean);
  o->root = x.expr[0];
  *out = o;
  return RS_OK;
}
