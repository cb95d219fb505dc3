/* explain.c - narrate an all-reduce step by step, as a teacher would.
 *
 * Everything said here comes from the schedule the algorithm runs (its
 * pure functions in src/algo/NAME.h): which region each worker sends to
 * whom at each step, and what the receiver does with it. Each algorithm's
 * narration (rs_algo_t's narrate, in src/algo/NAME.c) only lists a step's
 * messages, and cuts the bucket into its regions (rs_algo_t's layout);
 * this file is the narrator those narrations are told to
 * (algo/narrate.h): one replay (the narration's engine) applies the
 * messages to a table of whose contributions every worker's copy of every
 * region holds and, for a small bucket, to the workers' values
 * themselves, with the run's own reduce kernels in the run's order: the
 * values narrated at the end are the run's result, bit for bit.
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

#include "algo/channels.h"
#include "algo/list.h"
#include "algo/narrate.h"
#include "algo/tree.h"
#include "base/reduce.h"
#include "base/util.h"
#include "core/runstate.h"
#include "ringsim/explain.h" /* what this file implements */
#include "ringsim/internal/command.h" /* rs_run_bucket_channel_regions */
#include "ringsim/ringsim.h"

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
  rs_narrator_t pub; /* first: what the algorithm's narrate sees (its
                        workers, op and steps narrated) */
  FILE *out;
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
  /* On one of NCCL's channels: the worker at each place of its ring (the
   * narration's ranks are places), and the channel's name before each
   * step's title ("channel 1, "). Else the identity, and "". */
  int ring[EXPLAIN_MAX_WORKERS];
  char title_prefix[32];
  /* rs_run_element_order follows one element, in column ecol (-1: none):
   * the node (in order->nodes) each worker's copy of it holds, and its
   * copy set aside. */
  int ecol;
  int expr[EXPLAIN_MAX_WORKERS];
  int stash_expr[EXPLAIN_MAX_WORKERS];
  rs_order_t *order;
} narr_t;

/* Whose contributions a copy holds, in the notation the pictures and the
 * viewer share (tools/ringsim_plot/replay.py ring_ranges): "all" when
 * every worker's is in; else the workers in braces, ascending, where a run
 * of 3 or more consecutive round the ring is written first-last: {1,3},
 * {0,1}, {0-6}, {3-1} (3, 0, 1 of 4), {2,4-0} (2, 4, 5, 0 of 6). */
static const char *set_text(unsigned mask, int W, char *buf, size_t size) {
  if (mask == (1u << W) - 1)
    return "all";
  size_t len = (size_t)snprintf(buf, size, "{");
  for (int w = 0; w < W; w++) {
    if (!(mask & (1u << w)))
      continue;
    /* the run round the ring that w is in: its first member, its length */
    int first = w, n = 1;
    while (mask & (1u << ((first + W - 1) % W)))
      first = (first + W - 1) % W;
    while (mask & (1u << ((first + n) % W)))
      n++;
    const char *sep = len > 1 ? "," : "";
    if (n < 3)
      len += (size_t)snprintf(buf + len, size - len, "%s%d", sep, w);
    else if (w == first) /* listed once, at its first member */
      len += (size_t)snprintf(buf + len, size - len, "%s%d-%d", sep, w,
                              (w + n - 1) % W);
  }
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

/* What one column is, when the algorithm moves it whole: a worker's
 * buffer, or on one of NCCL's channels its part of it. */
static const char *whole_word(const narr_t *x) {
  return x->pub.channel >= 0 ? "part" : "buffer";
}

static void col_name(const narr_t *x, int c, char *buf, size_t size) {
  if (x->col_word)
    snprintf(buf, size, "%s %d", x->col_word, c);
  else
    snprintf(buf, size, "%s", whole_word(x));
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
    for (int r = 0; r < x->pub.workers; r++) {
      int len = (int)strlen(
          set_text(x->held[r][c], x->pub.workers, cell, sizeof cell));
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
  for (int r = 0; r < x->pub.workers; r++) {
    fprintf(x->out, "  worker %d ", r);
    for (int c = 0; c < x->cols; c++)
      fprintf(x->out, " %-*s", c + 1 < x->cols ? width[c] : 0,
              set_text(x->held[r][c], x->pub.workers, cell, sizeof cell));
    fprintf(x->out, "\n");
  }
  if (!x->vals[0])
    return;
  fprintf(x->out, "  values\n");
  for (int r = 0; r < x->pub.workers; r++) {
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
    snprintf(buf, size, "its whole %s", whole_word(x));
  else if (end - first == 1)
    snprintf(buf, size, "%s %d", x->col_word, first);
  else if (first == 0 && end == x->cols)
    snprintf(buf, size, "its whole %s", whole_word(x));
  else
    snprintf(buf, size, "%s %d..%d", x->col_words, first, end - 1);
}

static void vsay(rs_narrator_t *n, const char *fmt, va_list ap) {
  narr_t *x = (narr_t *)n;
  if (x->out) /* else an order followed silently */
    vfprintf(x->out, fmt, ap);
}

static void say(narr_t *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(narr_t *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsay(&x->pub, fmt, ap);
  va_end(ap);
}

static void step_begin(rs_narrator_t *n) { ((narr_t *)n)->msg_count = 0; }

/* Worker src sends columns first .. end-1 to dst, which does action (on a
 * channel, src and dst are places in its ring: the workers there). */
static void send(rs_narrator_t *n, int src, int dst, int first, int end,
                 rs_recv_action_t action) {
  narr_t *x = (narr_t *)n;
  assert(x->msg_count < MAX_MSGS && 0 <= first && first < end &&
         end <= x->cols);
  x->msgs[x->msg_count++] =
      (msg_t){x->ring[src], x->ring[dst], first, end, action};
}

/* Worker r sets its own data aside (linear's root). */
static void stash(rs_narrator_t *n, int r) {
  narr_t *x = (narr_t *)n;
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
      .value = fold_one(x->dtype, x->pub.op, o->nodes[left].value,
                        o->nodes[right].value, mean ? x->pub.workers : 0)};
  return o->count++;
}

/* Replay the step's messages, narrate each, then print the table. */
static void step_end(rs_narrator_t *n, const char *title) {
  narr_t *x = (narr_t *)n;
  char a[32], b[32], what[64];
  unsigned sent_held[MAX_MSGS];
  int sent_expr[MAX_MSGS];
  say(x, "\n%s%s\n", x->title_prefix, title);
  x->pub.steps++;
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
        rs__fold(x->dtype, dst, src, len, x->pub.op,
                 m->action == RS_RECV_REDUCE_MEAN ? x->pub.workers : 0);
    }
    const char *verb = m->action == RS_RECV_COPY
                           ? "copies it"
                           : words_of(x->pub.op)->fold_verb;
    region_text(x, first, end, what, sizeof what);
    if (m->src == m->dst)
      say(x,
          "  worker %d takes its own data, set aside at the start, "
          "holding %s, and %s",
          m->src, set_text(sent_held[i], x->pub.workers, a, sizeof a), verb);
    else
      say(x, "  worker %d sends %s, holding %s, to worker %d, which %s", m->src,
          what, set_text(sent_held[i], x->pub.workers, a, sizeof a), m->dst,
          verb);
    say(x, " -> %s", set_text(after, x->pub.workers, b, sizeof b));
    if (m->action == RS_RECV_REDUCE_MEAN)
      say(x, ", and divides by %d: the mean", x->pub.workers);
    say(x, "\n");
  }
  print_table(x);
}

/* After a phase that leaves each worker with complete regions: which. */
static void say_owners(rs_narrator_t *n, const char *phase) {
  narr_t *x = (narr_t *)n;
  char name[32];
  say(x, "\nAfter %s each worker owns, complete:", phase);
  for (int r = 0; r < x->pub.workers; r++) {
    int any = 0;
    say(x, "%s worker %d", r ? "," : "", r);
    for (int c = 0; c < x->cols; c++)
      if (x->held[r][c] == (1u << x->pub.workers) - 1) {
        col_name(x, c, name, sizeof name);
        say(x, "%s %s", any++ ? " and" : "", name);
      }
    if (!any)
      say(x, " nothing complete");
  }
  say(x, ".\n");
}

/* The primitives an algorithm's narrate calls (algo/narrate.h). */
static const rs_narrate_ops_t narr_ops = {.vsay = vsay,
                                          .step_begin = step_begin,
                                          .send = send,
                                          .stash = stash,
                                          .step_end = step_end,
                                          .say_owners = say_owners};

/* x's columns: the algorithm's regions (its layout) of x's elements, every
 * worker's copy of each holding its own contribution alone. */
static void narr_layout(narr_t *x, const rs_run_t *run, const rs_algo_t *a) {
  x->cols =
      a->layout(run->shape, x->n, run->config.segment_bytes / run->elem_size,
                x->col_off, &x->col_word, &x->col_words);
  assert(x->cols <= MAX_COLS);
  for (int r = 0; r < x->pub.workers; r++)
    for (int c = 0; c < x->cols; c++)
      x->held[r][c] = 1u << r;
}

/* x, ready to replay bucket b of run under algo (out NULL: an element
 * followed silently): the columns are the algorithm's regions (its
 * layout), and every worker's copy of each holds its own contribution
 * alone. Returns the algorithm. */
static const rs_algo_t *narr_init(narr_t *x, FILE *out, const rs_run_t *run,
                                  rs_algorithm_t algo, size_t b) {
  const rs_algo_t *a = rs__algo_get(algo);
  const int W = run->config.workers;
  const rs_op_t op = run->config.op;
  assert(a); /* auto is refused before, or is a bucket's choice */
  *x = (narr_t){.pub = {.ops = &narr_ops,
                        .workers = W,
                        .shape = run->shape,
                        .op = op,
                        .fold_phrase = words_of(op)->fold_phrase,
                        .result = words_of(op)->result,
                        .whole = "its buffer",
                        .channel = -1},
                .out = out,
                .ecol = -1,
                .dtype = run->dtype,
                .n = run->buckets[b].elems,
                .base = run->buckets[b].elem_offset,
                .eb = run->buf_elem_bytes};
  for (int p = 0; p < W; p++)
    x->ring[p] = p;
  narr_layout(x, run, a);
  return a;
}

/* x (just made by narr_init) narrowed to elements [off, off + len) of its
 * bucket: one channel's part, cut into the algorithm's regions. */
static void narr_part(narr_t *x, const rs_run_t *run, const rs_algo_t *a,
                      size_t off, size_t len) {
  x->base += off;
  x->n = len;
  narr_layout(x, run, a);
}

/* Of the algorithms that run on NCCL's channels (RS__CAP_CHANNELS), does
 * a run channel by channel trees (NCCL's tree), not rings (the textbook
 * ring, RS__CAP_TEXTBOOK_RING)? The ring narrates the places of each
 * channel's ring; the tree each channel's tree by its workers, the part
 * one region (algo/narrate.h). */
static int channel_trees(const rs_algo_t *a) {
  return (a->caps & RS__CAP_CHANNELS) && !(a->caps & RS__CAP_TEXTBOOK_RING);
}

/* x (just made by narr_init for a) narrowed to channel ch's part,
 * elements [off, off + len) of its bucket: the ring's places are the
 * channel's ring (algo/channels.h); the tree's part is one region, which
 * the channel's tree carries (its narrate names the channel's workers:
 * tree.h). */
static void narr_channel(narr_t *x, const rs_run_t *run, const rs_algo_t *a,
                         int ch, size_t off, size_t len) {
  narr_part(x, run, a, off, len);
  x->pub.channel = ch;
  x->pub.whole = "its part";
  snprintf(x->title_prefix, sizeof x->title_prefix, "channel %d, ", ch);
  if (channel_trees(a)) {
    x->cols = rs__layout_whole(len, x->col_off, &x->col_word, &x->col_words);
    return;
  }
  for (int p = 0; p < x->pub.workers; p++)
    x->ring[p] = rs__rings_worker(run->shape, ch, p);
}

/* Does each sum's last fold divide by W (op avg, not averaged before)? */
static int mean_of(const rs_run_t *run) {
  return run->config.op == RS_OP_AVG && !run->config.average;
}

static void narr_free(narr_t *x) {
  for (int r = 0; r < x->pub.workers; r++) {
    free(x->vals[r]);
    free(x->stash[r]);
    x->vals[r] = x->stash[r] = NULL;
  }
  free(x->sent);
  x->sent = NULL;
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

/* The narration's first lines: what is all-reduced, on how many workers,
 * and which bucket is shown. */
static void explain_title(narr_t *x, const rs_run_t *run, const char *title) {
  const int W = x->pub.workers;
  const size_t total = rs_model_elems(run->model);
  char name[256];
  snprintf(name, sizeof name, "%s", rs_model_name(run->model));
  rs_one_line(name); /* a name holding ESC or CR cannot drive the terminal */
  fprintf(x->out,
          "explain: %s (%s) of \"%s\" on %d worker%s, %zu "
          "element%s per worker\n",
          title, rs_op_name(x->pub.op), name, W, W == 1 ? "" : "s", total,
          total == 1 ? "" : "s");
  if (run->result.buckets > 1 && W > 1)
    fprintf(x->out,
            "\nThe model is all-reduced in %zu buckets, as DDP does; each "
            "goes through the steps below. Bucket 0, elements %zu..%zu, is "
            "shown.\n",
            run->result.buckets, x->base, x->base + x->n - 1);
}

/* The columns: the regions the algorithm moves, where they lie in what
 * (the bucket, or the flat buffer), and what a cell lists; and, with
 * notation, how a run of workers is written. */
static void explain_columns(const narr_t *x, const char *what, int notation) {
  const char *cell_verb = words_of(x->pub.op)->cell_verb;
  if (x->cols > 1) {
    fprintf(x->out, "\nEach worker's %s is cut into %d %s:", what, x->cols,
            x->col_words);
    for (int c = 0; c < x->cols; c++) {
      size_t off = x->base + x->col_off[c];
      size_t len = x->col_off[c + 1] - x->col_off[c];
      if (len == 0)
        fprintf(x->out, "%s %s %d empty", c ? "," : "", x->col_word, c);
      else
        fprintf(x->out, "%s %s %d = elements %zu..%zu", c ? "," : "",
                x->col_word, c, off, off + len - 1);
    }
    fprintf(x->out,
            ".\nA cell lists whose gradients that worker's copy of that "
            "%s %s.\n",
            x->col_word, cell_verb);
  } else {
    fprintf(x->out,
            "\nEvery message carries a worker's whole %s, elements "
            "%zu..%zu.\nA cell lists whose gradients that worker's copy "
            "%s.\n",
            what, x->base, x->base + x->n - 1, cell_verb);
  }
  if (notation && x->pub.workers >= 4) /* set_text's: W >= 4 holds one */
    fprintf(x->out,
            "Three or more workers in a row round the ring are written "
            "first-last: {%d-1} is %d, 0, 1.\n",
            x->pub.workers - 1, x->pub.workers - 1);
}

/* The values, when the bucket is small and the buffers are filled: each
 * worker's (averaged first, under --average pre), said under the table. */
static void explain_values(narr_t *x, const rs_run_t *run) {
  const int W = x->pub.workers;
  const size_t n = x->n;
  int values = run->filled && n <= VALUES_UP_TO;
  for (int r = 0; r < W && values; r++) {
    x->vals[r] = malloc(n * x->eb);
    x->stash[r] = malloc(n * x->eb);
    values = x->vals[r] && x->stash[r];
  }
  if (values && (x->sent = malloc(MAX_MSGS * n * x->eb)) == NULL)
    values = 0;
  if (!values) {
    narr_free(x);
    return;
  }
  for (int r = 0; r < W; r++) {
    memcpy(x->vals[r], run->bufs[r] + x->base * x->eb, n * x->eb);
    if (x->pub.op == RS_OP_AVG && run->config.average)
      rs__pre_average(x->dtype, x->vals[r], n, W, run->config.average);
  }
  fprintf(x->out, "Under it, each worker's values%s.\n",
          x->pub.op != RS_OP_AVG || !run->config.average ? ""
          : run->hook_cast && run->dtype == RS_DTYPE_F16
              ? ", each already cast to float16 and divided by the number "
                "of workers in it (--hook fp16)"
          : run->hook_cast
              ? ", each already cast to bfloat16 and divided by the number "
                "of workers in it (--hook bf16)"
          : run->config.hook == RS_HOOK_ALLREDUCE
              ? ", each already divided by the number of workers (--hook "
                "allreduce)"
          : run->config.average == RS_AVERAGE_PRE_MUL
              ? ", each already multiplied by 1/W rounded, as DDP's "
                "reducer does (--average pre-mul)"
              : ", each already divided by the number of workers "
                "(--average pre)");
}

/* Do channels a and b run the same steps: one ring order (the same
 * worker at every place), or for the tree one tree over one order? */
static int same_steps(const rs_run_t *run, int a, int b) {
  const rs_shape_t shape = run->shape;
  if (channel_trees(rs__algo_get(run->config.algo)))
    return rs__tree_ch_tree(shape, a) == rs__tree_ch_tree(shape, b) &&
           rs__tree_ch_head(shape, a) == rs__tree_ch_head(shape, b);
  for (int p = 0; p < shape.workers; p++)
    if (rs__rings_worker(shape, a, p) != rs__rings_worker(shape, b, p))
      return 0;
  return 1;
}

/* Channel ch's part of bucket 0 and its ring (or its tree: which, its
 * root, and on several nodes the local GPU each node's chain starts
 * from), on one line. */
static void channel_line(FILE *out, const rs_run_t *run, int ch, size_t base,
                         size_t off, size_t len) {
  const rs_shape_t shape = run->shape;
  fprintf(out, "channel %d: elements %zu..%zu, ", ch, base + off,
          base + off + len - 1);
  if (channel_trees(rs__algo_get(run->config.algo))) {
    const int t = rs__tree_ch_tree(shape, ch);
    fprintf(out, "tree %d, root worker %d", t, rs__tree_ch_root(shape, ch, t));
    if (rs__tree_nodes_of(shape) > 1)
      fprintf(out, ", each node's chain from its GPU %d",
              rs__tree_ch_head(shape, ch));
    fprintf(out, "\n");
    return;
  }
  fprintf(out, "ring");
  for (int p = 0; p < run->config.workers; p++)
    fprintf(out, " %d", rs__rings_worker(shape, ch, p));
  fprintf(out, "\n");
}

/* On NCCL's channels (--channels): how the bucket is cut between them,
 * each one's ring (or tree), and the rule the narration follows. */
static void explain_channels(const narr_t *x, const rs_run_t *run) {
  const int C = rs__shape_channels(run->shape), W = x->pub.workers;
  const int tree = channel_trees(rs__algo_get(run->config.algo));
  if (tree)
    fprintf(x->out,
            "\nThe tree runs on %d of NCCL's channels: the bucket is cut "
            "between them as NCCL cuts an all-reduce's data (whole cells of "
            "16 KiB, a channel at least 32 KiB of traffic, the last the "
            "rest), and each channel all-reduces its part, whole, up and "
            "down one of the two trees (the first half of the channels "
            "tree 0, the others tree 1), %s, sharing each link with the "
            "other channels.\n",
            C,
            rs__tree_nodes_of(run->shape) > 1
                ? "its chain through each node starting at a GPU of its own "
                  "(the worker at position i of a node's chain doing what "
                  "local rank i does in the tree)"
                : "over the workers as they are numbered");
  else
    fprintf(x->out,
            "\nThe ring runs on %d of NCCL's channels: the bucket is cut "
            "between them as NCCL cuts an all-reduce's data (whole cells of "
            "16 KiB, a channel at least 32 KiB of traffic, the last the "
            "rest), and each channel runs the ring's steps on its part along "
            "its own ring (the worker at place p of it doing what rank p does "
            "in a ring), sharing each link with the other channels.\n",
            C);
  for (int c = 0; c < C; c++) {
    size_t off, len;
    rs__rings_part(x->n, run->elem_size, C, run->config.net.proto, c, &off,
                   &len);
    if (len == 0) {
      fprintf(x->out, "  channel %d: idle (the bucket is too small for it)\n",
              c);
      continue;
    }
    fprintf(x->out, "  ");
    channel_line(x->out, run, c, x->base, off, len);
  }
  const rs_rings_t *g = run->shape.rings;
  if (tree)
    fprintf(x->out, "%s\n",
            g && g->nccl && rs__tree_nodes_of(run->shape) > 1
                ? "(the chains NCCL's graph search builds on this topology: "
                  "docs/algorithms.md, \"The channels' trees\")"
                : "(every channel's tree over the same workers: on this "
                  "network the channels share every link)");
  else
    fprintf(x->out, "%s\n",
            g && g->nccl
                ? "(the rings NCCL's graph search builds on this topology: "
                  "docs/algorithms.md, \"The channels' rings\")"
                : "(every ring 0, 1, ..., W-1: on this network the channels "
                  "share every link)");
  /* A channel on an earlier channel's ring order (or tree) sends the same
   * regions between the same workers at every step: its tables would be
   * that channel's again, over other elements. A teacher shows each ring
   * once, and says which channels repeat it. */
  if (tree)
    fprintf(x->out,
            "The channels run side by side, each a tree of its own. Below, "
            "each busy channel in turn, its part one region: its steps in "
            "full where its tree is new; a channel on an earlier channel's "
            "tree runs that channel's steps on its own part, said in one "
            "line.\n");
  else
    fprintf(x->out,
            "The channels run side by side, each a ring of its own. Below, "
            "each busy channel in turn, its part cut into %d chunks: its "
            "steps in full where its ring order is new; a channel on an "
            "earlier channel's ring order runs that channel's steps on its "
            "own chunks, said in one line.\n",
            W);
  if (W >= 4) /* set_text's ranges, which count workers, not places */
    fprintf(x->out,
            "Three or more workers numbered in a row (%d wrapping round to "
            "0) are written first-last: {%d-1} is %d, 0, 1.\n",
            W - 1, W - 1, W - 1);
}

/* Every busy channel's narration (explain_channels's rule): its part
 * (bucket 0's), cut into the algorithm's regions (the tree's: one),
 * replayed along its ring (or its tree). */
static int explain_each_channel(FILE *out, const rs_run_t *run,
                                const narr_t *bucket) {
  const int C = rs__shape_channels(run->shape), W = bucket->pub.workers;
  const int tree = channel_trees(rs__algo_get(run->config.algo));
  explain_channels(bucket, run);
  for (int c = 0; c < C; c++) {
    size_t off, len;
    rs__rings_part(bucket->n, run->elem_size, C, run->config.net.proto, c, &off,
                   &len);
    if (len == 0)
      continue; /* (an idle channel has no part after it) */
    int earlier = -1;
    for (int j = 0; j < c && earlier < 0; j++)
      if (same_steps(run, j, c))
        earlier = j;
    narr_t x;
    const rs_algo_t *a = narr_init(&x, out, run, run->config.algo, 0);
    narr_channel(&x, run, a, c, off, len);
    fprintf(out, "\n");
    channel_line(out, run, c, bucket->base, off, len);
    char what[32];
    snprintf(what, sizeof what, "part of channel %d", c);
    explain_columns(&x, what, 0);
    if (earlier >= 0 && tree) {
      fprintf(out,
              "Its tree is channel %d's: its steps are channel %d's, the "
              "same workers sending to the same workers, on channel %d's "
              "part.\n",
              earlier, earlier, c);
      continue;
    }
    if (earlier >= 0) {
      fprintf(out,
              "Its ring is channel %d's: its steps are channel %d's, the "
              "same workers sending the same chunk numbers to the same "
              "workers, on channel %d's chunks.\n",
              earlier, earlier, c);
      continue;
    }
    explain_values(&x, run);
    fprintf(out, "\nchannel %d, start\n", c);
    print_table(&x);
    a->narrate(&x.pub, mean_of(run));
    for (int r = 0; r < W; r++)
      for (int k = 0; k < x.cols; k++)
        assert(x.held[r][k] == (1u << W) - 1); /* the schedule all-reduces */
    narr_free(&x);
  }
  fprintf(out, "\n");
  return RS_OK;
}

int rs_explain(FILE *out, const rs_run_t *run, char *errmsg) {
  int rc = rs_explain_check(run, errmsg);
  if (rc)
    return rc;
  narr_t x;
  const rs_algo_t *a = narr_init(&x, out, run, run->config.algo, 0);
  const int W = x.pub.workers;
  explain_title(&x, run, a->title);
  if (W == 1) {
    fprintf(out, "\nWith one worker its gradient already is the mean: no "
                 "step, no transfer.\n");
    return RS_OK;
  }
  if (rs__shape_channels(run->shape) > 1)
    return explain_each_channel(out, run, &x);
  explain_columns(&x, run->result.buckets > 1 ? "bucket" : "flat buffer", 1);
  explain_values(&x, run);
  fprintf(out, "\nstart\n");
  print_table(&x);
  a->narrate(&x.pub, mean_of(run));
  fprintf(out, "\n");
  for (int r = 0; r < W; r++)
    for (int c = 0; c < x.cols; c++)
      assert(x.held[r][c] == (1u << W) - 1); /* the schedule all-reduces */
  narr_free(&x);
  return RS_OK;
}

int rs_run_bucket_regions(const rs_run_t *run, size_t bucket, size_t *offsets,
                          const char **word) {
  const char *words;
  const rs_algo_t *a = rs__algo_get(rs_run_bucket_algo(run, bucket));
  if (bucket >= run->result.buckets || !a) {
    *word = NULL;
    return 0;
  }
  return a->layout(run->shape, run->buckets[bucket].elems,
                   run->config.segment_bytes / run->elem_size, offsets, word,
                   &words);
}

int rs_run_bucket_channel_regions(const rs_run_t *run, size_t bucket, int ch,
                                  size_t *offsets, const char **word,
                                  int *channels) {
  const int C = rs__shape_channels(run->shape);
  const rs_algo_t *a = rs__algo_get(rs_run_bucket_algo(run, bucket));
  *word = NULL;
  *channels = 1;
  if (bucket >= run->result.buckets || !a || C < 2 ||
      !(a->caps & RS__CAP_CHANNELS))
    return 0;
  *channels = C;
  size_t off, len;
  if (ch < 0 || ch >= C)
    return 0;
  rs__rings_part(run->buckets[bucket].elems, run->elem_size, C,
                 run->config.net.proto, ch, &off, &len);
  if (len == 0)
    return 0; /* idle: the bucket is too small for it */
  /* the part cut as narr_channel cuts it */
  const char *words;
  const int count =
      channel_trees(a)
          ? rs__layout_whole(len, offsets, word, &words)
          : a->layout(run->shape, len,
                      run->config.segment_bytes / run->elem_size, offsets,
                      word, &words);
  for (int c = 0; c <= count; c++)
    offsets[c] += off;
  return count;
}

/* Can the order of element elem of run be followed? As rs_explain_check,
 * but --algo auto is fine: the bucket's choice is one algorithm. */
static int order_check(const rs_run_t *run, size_t elem, char *errmsg) {
  const int W = run->config.workers;
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
  return RS_OK;
}

/* The order's leaves: worker r's input to element elem (divided by W
 * under --average pre; cast to its dtype first under a compressing hook),
 * each worker's copy of the element holding its own. */
static void order_leaves(narr_t *x, rs_order_t *o, const rs_run_t *run,
                         size_t elem) {
  const int W = x->pub.workers;
  for (int r = 0; r < W; r++) {
    double v;
    if (x->eb == sizeof(double))
      memcpy(&v, run->bufs[r] + elem * x->eb, sizeof v);
    else {
      float f;
      memcpy(&f, run->bufs[r] + elem * x->eb, sizeof f);
      v = f;
    }
    /* a compressing hook divides its cast of the input */
    const double q =
        run->hook_cast ? (double)rs_dtype_round(x->dtype, (float)v) : v;
    o->nodes[r] = (rs_order_node_t){
        .worker = r,
        .left = -1,
        .right = -1,
        .input = v,
        .value = o->pre_divided ? fold_one(x->dtype, x->pub.op, q, 0, -W) : q};
    x->expr[r] = r;
  }
  o->count = W;
}

/* On NCCL's channels (a bucket of the ring or the tree, --channels C > 1),
 * element i of x's bucket is in one channel's part, which runs that
 * channel's ring (or tree): x narrowed to it (narr_channel). Returns the
 * channel, or -1 (x as it was) off channels. */
static int element_channel(narr_t *x, const rs_run_t *run, const rs_algo_t *a,
                           size_t i) {
  const int C = rs__shape_channels(run->shape);
  if (C < 2 || !(a->caps & RS__CAP_CHANNELS))
    return -1;
  for (int c = 0; c < C; c++) {
    size_t off, len;
    rs__rings_part(x->n, run->elem_size, C, run->config.net.proto, c, &off,
                   &len);
    if (off <= i && i < off + len) {
      narr_channel(x, run, a, c, off, len);
      return c;
    }
  }
  assert(0); /* the parts cover the bucket */
  return -1;
}

int rs_run_element_order(const rs_run_t *run, size_t elem, rs_order_t **out,
                         char *errmsg) {
  const int W = run->config.workers;
  *out = NULL;
  int rc = order_check(run, elem, errmsg);
  if (rc)
    return rc;
  size_t b = 0;
  while (elem >= run->buckets[b].elem_offset + run->buckets[b].elems)
    b++;
  const rs_algorithm_t algo = rs_run_bucket_algo(run, b);
  narr_t x;
  const rs_algo_t *a = narr_init(&x, NULL, run, algo, b);
  const int ch = element_channel(&x, run, a, elem - x.base);
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
  o->pre_divided = run->config.op == RS_OP_AVG && run->config.average;
  o->bucket = b;
  o->region_word = x.col_word;
  o->region = x.col_word ? x.ecol : 0;
  o->channel = ch;
  x.order = o;
  order_leaves(&x, o, run, elem);
  if (W > 1)
    a->narrate(&x.pub, mean_of(run));
  o->root = x.expr[0];
  *out = o;
  return RS_OK;
}
