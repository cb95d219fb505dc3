/* diff_parts.h - the pieces of `ringsim diff`: its command line and sides
 * (diff.c), the two runs and their comparison (diff_compare.c), and the
 * report of it, text or JSON (diff_report.c). An interface header, with
 * no .c of its own, so that the calls between the three run one way. */
#ifndef RINGSIM_CLI_DIFF_PARTS_H
#define RINGSIM_CLI_DIFF_PARTS_H

#include <stdint.h>

#include "cli.h"

/* The most contributions whose orders are written out in a comparison of
 * two world sizes (each worker's local fold expands into its own). */
enum { MAX_CONTRIBS_WRITTEN = 64 };

/* A result under this share of its element's scale (diff_scale) is near
 * zero: its additions cancelled more than 10 of its bits, so one rounding
 * of a partial sum, about u x scale, is more than 1024 of its ULPs, and
 * a count of ULPs says how far it cancelled, not how wrong it is. */
#define DIFF_NEAR_ZERO (1.0 / 1024)

/* One side: its options, model and, after its run, its result. */
typedef struct diff_side {
  options_t opt; /* opt.dtype_name: --dtype's value, or NULL: the model's */
  rs_model_t *model;
  rs_config_t config; /* measured once (--algo auto), then reused */
  int use_inline;
  /* Two world sizes (--workers A,B): the larger one, L, is the number of
   * contributions c_0..c_{L-1} (the gradients ringsim gives L workers);
   * each of this side's workers first folds local of them, contiguous,
   * locally (1: its own contribution, as in every other comparison). */
  int contribs, local;
  size_t at;           /* the element whose contributions to keep, */
  double *at_contribs; /* there (NULL: none kept) */
  int want_scale;      /* keep the scale of every element (side A) */
  float *scale;        /* per element, diff_scale's of the contributions */
  int status;
  void *result; /* worker 0's buffer, copied */
  char label[160];
} side_t;

/* How an order's leaves are written: worker R's gR; or, comparing two
 * world sizes, worker R's local fold of the contributions c_{Rk} ..
 * c_{Rk+k-1} (k = local; 1: the contribution cR itself), whose values are
 * contribs[]. */
typedef struct leaves {
  int local; /* 0: gR */
  const double *contribs;
} leaves_t;

typedef struct param_diff {
  uint64_t differing;
  double max_ulps, max_rel;
  double max_scaled; /* the largest |a - b| / scale */
} param_diff_t;

/* A comparison: the two sides, and what their results are found to be. */
typedef struct diff {
  side_t s[2];
  int sizes, big;            /* several world sizes (--workers A,B,...); L, the
                                largest */
  const char *workers_given; /* --workers as given: "4,8" */
  const char *workers_words; /* and in words: "4 and 8" */
  /* the results, element by element (diff_compare) */
  rs_dtype_t da, db, coarse; /* each side's dtype; the coarser one */
  size_t elems, params;
  param_diff_t *pd; /* per param */
  uint64_t differing;
  double max_ulps, max_rel, max_scaled;
  /* differing elements whose ULPs mean little (diff_ulps_caveat): the
   * results differ in sign; either is near zero */
  uint64_t sign_changes, near_zero;
  size_t worst;       /* the element that differs most (SIZE_MAX: none) */
  size_t worst_param; /* its param */
  /* per region (chunk, part, half) of each side's algorithm, and the
   * order of the worst element (diff_explain) */
  uint64_t *region_counts[2];
  int region_n[2];
  const char *region_word[2]; /* NULL: the algorithm cuts no regions */
  int region_channels[2];     /* the regions are of NCCL's channels' parts
                                 (some bucket runs on channels) */
  rs_order_t *order[2];       /* NULL: order_err says why */
  char order_err[2][RS_ERRMSG_MAX];
  leaves_t lv[2];
} diff_t;

/* diff_compare.c */
/* Worker 0's value i of a result buffer, as a double. */
double diff_value_at(const void *buf, rs_dtype_t dtype, size_t i);
/* How far a (of dtype da) is from b (of db), in ULPs of the coarser dtype:
 * the same dtype, the count of its values from one to the other; two
 * dtypes, |a - b| over the coarser one's spacing at max(|a|, |b|). */
double diff_ulps(double a, rs_dtype_t da, double b, rs_dtype_t db);
double diff_relative(double a, double b);
/* The scale of an element, as the check's bound takes it (src/check/
 * check_reference.c): the sum of the magnitudes of its n contributions c,
 * over n for --op avg (the scale of a mean); for prod the product of
 * max(1, |c|). */
double diff_scale(const double *c, int n, rs_op_t op);
/* Why a and b's distance in ULPs means little, or NULL: "sign change" (a
 * and b differ in sign: the count crosses every tiny value between),
 * "near zero" (either is under DIFF_NEAR_ZERO x scale). */
const char *diff_ulps_caveat(double a, double b, double scale);
/* |a - b| over the scale (inf when the scale is 0 and they differ). */
double diff_scaled(double a, double b, double scale);
/* One worker's local fold of its k contributions c[0..k-1] (see
 * diff_compare.c); steps[j - 1] gets the value after folding c[j] (steps
 * may be NULL). */
double diff_local_fold(const double *c, int k, rs_op_t op, rs_dtype_t dtype,
                       double *steps);
/* The model of path, with every param's dtype set to dtype unless it is
 * NULL. Returns -1 to go on, or the exit status, having said why. */
int diff_load_model(const char *path, const char *dtype, rs_model_t **out);
/* One side's run: fill, execute; its worker 0's result copied. Returns -1
 * to go on, or the exit status. keep: do not execute, leave the filled
 * run in *keep (for the order). */
int diff_run_side(side_t *s, rs_run_t **keep);
/* d's results compared, param by param. Returns -1, or the exit status. */
int diff_compare(diff_t *d);
/* Where the results differ, per region of each side's algorithm, and the
 * worst element's order on each side (a fresh run of each, filled, not
 * executed). Returns -1, or the exit status. */
int diff_explain(diff_t *d);

/* diff_report.c: the comparison on stdout, as text or JSON. */
void diff_report_text(const diff_t *d);
void diff_report_json(const diff_t *d);
/* The comparison as the JSON object diff_report_json prints. */
struct json_t *diff_json(const diff_t *d);
/* Of several comparisons of side A (B, C, ... each with A): the line of
 * comparison d (the i-th of n - 1; the first prints the head, A's line);
 * --json's one object, of comparisons (diff_json's, an array), d any one
 * of them. */
void diff_report_line(const diff_t *d, int first, int n);
void diff_report_json_each(const diff_t *d, struct json_t *comparisons);

#endif /* RINGSIM_CLI_DIFF_PARTS_H */
