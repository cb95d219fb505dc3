/* diff_report.c - what `ringsim diff` prints of a comparison: how many
 * elements differ, by how many ULPs, per param and per region of each
 * side's algorithm, and for the element that differs most each side's
 * order of additions written out with every partial value; as text, or as
 * one JSON object (--json; docs/cli.md lists its fields).
 */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff_parts.h"

/* A count of ULPs: whole, or with two decimals. */
static void ulps_text(double u, char *buf, size_t size) {
  snprintf(buf, size, u == floor(u) && u < 1e15 ? "%.0f" : "%.2f", u);
}

/* A number for JSON: null where it is not finite (a difference over a
 * scale of 0). */
static json_t *json_finite(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

/* What an element's scale is (diff_scale), in words. */
static const char *scale_words(const diff_t *d) {
  switch (d->s[0].config.op) {
  case RS_OP_AVG:
    return d->sizes ? "the mean of |c| over the contributions"
                    : "the mean of |g| over the workers";
  case RS_OP_PROD:
    return d->sizes ? "the product of max(1, |c|)"
                    : "the product of max(1, |g|)";
  default:
    return d->sizes ? "the sum of |c| over the contributions"
                    : "the sum of |g| over the workers";
  }
}

/* The shortest decimal that reads back as v in dtype's buffer type. */
static void number(double v, rs_dtype_t dtype, char *buf, size_t size) {
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, size, "%.*g", digits, v);
    double back = strtod(buf, NULL);
    if (dtype == RS_DTYPE_F64 ? back == v : (float)back == (float)v)
      return;
  }
}

/* How many contributions node k holds. */
static int leaf_count(const rs_order_t *o, int k) {
  const rs_order_node_t *node = &o->nodes[k];
  return node->worker >= 0
             ? 1
             : leaf_count(o, node->left) + leaf_count(o, node->right);
}

/* A fold's operands in written order: a sum or product writes the larger
 * partial first, and of two as large the one received, so ((g3+g0)+g1)+g2
 * reads as the ring's chain; that changes no bit, as a + b and b + a are
 * the same float. min and max keep the receiver's own value first. */
static void operands(const rs_order_t *o, const rs_order_node_t *node,
                     int *first, int *second) {
  int swap = o->op != RS_OP_MIN && o->op != RS_OP_MAX &&
             leaf_count(o, node->right) >= leaf_count(o, node->left);
  *first = swap ? node->right : node->left;
  *second = swap ? node->left : node->right;
}

/* An order as the report writes it: its folds (order), and how its
 * leaves are written (leaves; NULL: worker R's gR). */
typedef struct written_order {
  const rs_order_t *order;
  const leaves_t *leaves;
} written_t;

/* Worker r's local fold up to its contribution upto (0..k-1) as text:
 * c0, then (c0+c1), ((c0+c1)+c2), ...; the last fold of --op avg is
 * (a+b)/k; top: without the outermost brackets of a sum. */
static void local_text(const written_t *w, int r, int upto, int top, char *buf,
                       size_t size) {
  const rs_order_t *o = w->order;
  const leaves_t *lv = w->leaves;
  const int k = lv->local, first = r * k;
  char prev[2048];
  snprintf(buf, size, "c%d", first);
  for (int j = 1; j <= upto; j++) {
    snprintf(prev, sizeof prev, "%s", buf);
    if (o->op == RS_OP_MIN || o->op == RS_OP_MAX)
      snprintf(buf, size, "%s(%s,c%d)", o->op == RS_OP_MIN ? "min" : "max",
               prev, first + j);
    else if (o->op == RS_OP_AVG && j == k - 1)
      snprintf(buf, size, "(%s+c%d)/%d", prev, first + j, k);
    else
      snprintf(buf, size, top && j == upto ? "%s%s%s%d" : "(%s%s%s%d)", prev,
               o->op == RS_OP_PROD ? "*" : "+", "c", first + j);
  }
}

/* Node k of an order as an expression over g0..g{W-1}, or with its
 * leaves over the contributions. */
static void expr_text(const written_t *w, int k, int top, char *buf,
                      size_t size) {
  const rs_order_t *o = w->order;
  const leaves_t *lv = w->leaves;
  const rs_order_node_t *node = &o->nodes[k];
  if (node->worker >= 0) {
    char leaf[2048];
    if (lv && lv->local)
      local_text(w, node->worker, lv->local - 1, 0, leaf, sizeof leaf);
    else
      snprintf(leaf, sizeof leaf, "g%d", node->worker);
    if (o->pre_divided)
      snprintf(buf, size, lv && lv->local > 1 ? "(%s)/%d" : "%s/%d", leaf,
               o->workers);
    else
      snprintf(buf, size, "%s", leaf);
    return;
  }
  size_t len = 2048;
  char *l = malloc(len), *r = malloc(len);
  if (!l || !r) {
    snprintf(buf, size, "?");
    free(l);
    free(r);
    return;
  }
  int first, second;
  operands(o, node, &first, &second);
  expr_text(w, first, 0, l, len);
  expr_text(w, second, 0, r, len);
  if (o->op == RS_OP_MIN || o->op == RS_OP_MAX)
    snprintf(buf, size, "%s(%s,%s)", o->op == RS_OP_MIN ? "min" : "max", l, r);
  else if (node->mean)
    snprintf(buf, size, "(%s+%s)/%d", l, r, o->workers);
  else
    snprintf(buf, size, top ? "%s%s%s" : "(%s%s%s)", l,
             o->op == RS_OP_PROD ? "*" : "+", r);
  free(l);
  free(r);
}

/* One fold's text and value, onto arr (JSON) or printed. */
static void partial(const char *text, double value, rs_dtype_t dtype,
                    json_t *arr, FILE *out) {
  char num[40];
  if (arr)
    json_array_append_new(
        arr, json_pack("{s:s, s:f}", "expr", text, "value", value));
  if (out) {
    number(value, dtype, num, sizeof num);
    fprintf(out, "      %s = %s\n", text, num);
  }
}

/* The folds under node k, in the order they are computed (children first;
 * with local leaves, a leaf's local folds too), onto arr (JSON) or
 * printed. */
static void partials(const written_t *w, int k, json_t *arr, FILE *out) {
  const rs_order_t *o = w->order;
  const leaves_t *lv = w->leaves;
  const rs_order_node_t *node = &o->nodes[k];
  char text[4096];
  if (node->worker >= 0) {
    if (!lv || lv->local < 2)
      return;
    double steps[MAX_CONTRIBS_WRITTEN];
    diff_local_fold(lv->contribs + (size_t)node->worker * (size_t)lv->local,
                    lv->local, o->op, o->dtype, steps);
    for (int j = 1; j < lv->local; j++) {
      local_text(w, node->worker, j, 1, text, sizeof text);
      partial(text, steps[j - 1], o->dtype, arr, out);
    }
    return;
  }
  int first, second;
  operands(o, node, &first, &second);
  partials(w, first, arr, out);
  partials(w, second, arr, out);
  expr_text(w, k, 1, text, sizeof text);
  partial(text, node->value, o->dtype, arr, out);
}

/* ---- JSON ------------------------------------------------------------ */

static json_t *sides_json(const diff_t *d) {
  json_t *sides = json_array();
  for (int k = 0; k < 2; k++) {
    const side_t *s = &d->s[k];
    const rs_config_t *c = &s->config;
    json_array_append_new(
        sides,
        json_pack("{s:s, s:s, s:s, s:i, s:s, s:s?, s:s}", "label", s->label,
                  "algo", rs_algorithm_name(c->algo), "dtype",
                  rs_dtype_name(rs_model_dtype(s->model)), "workers",
                  c->workers, "op", rs_op_name(c->op), "average",
                  c->op == RS_OP_AVG ? rs_average_name(c->average) : NULL,
                  "status", rs_status_name(s->status)));
  }
  return sides;
}

static json_t *params_json(const diff_t *d) {
  json_t *jp = json_array();
  for (size_t p = 0; p < d->params; p++) {
    const rs_param_t *param = rs_model_param(d->s[0].model, p);
    const param_diff_t *pd = &d->pd[p];
    json_array_append_new(
        jp, json_pack("{s:s, s:I, s:I, s:f, s:f, s:o}", "name", param->name,
                      "elems", (json_int_t)param->elems, "differing",
                      (json_int_t)pd->differing, "max_ulps", pd->max_ulps,
                      "max_rel", pd->max_rel, "max_scaled",
                      json_finite(pd->max_scaled)));
  }
  return jp;
}

static json_t *regions_json(const diff_t *d) {
  json_t *regions = json_array();
  for (int k = 0; k < 2; k++) {
    if (!d->region_word[k])
      continue;
    json_t *counts = json_array();
    for (int c = 0; c < d->region_n[k]; c++)
      json_array_append_new(counts,
                            json_integer((json_int_t)d->region_counts[k][c]));
    json_array_append_new(regions,
                          json_pack("{s:i, s:s, s:o}", "side", k, "region",
                                    d->region_word[k], "differing", counts));
  }
  return regions;
}

/* Side k sums its inputs cast to a compressing hook's dtype. */
static int hook_casts(const diff_t *d, int k) {
  const rs_dtype_t model = rs_model_dtype(d->s[k].model);
  return rs_hook_dtype(d->s[k].config.hook, model) != model;
}

/* Side k's input r, as its additions take it: cast under a compressing
 * hook (what its partial sums start from). */
static double shown_input(const diff_t *d, int k, int r) {
  const rs_order_t *o = d->order[k];
  const leaves_t *lv = &d->lv[k];
  const double in = lv->local ? lv->contribs[r] : o->nodes[r].input;
  return hook_casts(d, k) ? (double)rs_dtype_round(o->dtype, (float)in) : in;
}

/* Side k's order of the worst element. */
static json_t *order_json(const diff_t *d, int k) {
  const rs_order_t *o = d->order[k];
  const leaves_t *lv = &d->lv[k];
  if (!o)
    return json_pack("{s:i, s:s}", "side", k, "error", d->order_err[k]);
  const written_t w = {o, lv};
  char text[4096];
  expr_text(&w, o->root, 1, text, sizeof text);
  json_t *inputs = json_array(), *parts = json_array();
  for (int r = 0; r < (lv->local ? d->big : o->workers); r++)
    json_array_append_new(inputs, json_real(shown_input(d, k, r)));
  partials(&w, o->root, parts, NULL);
  json_t *jo =
      json_pack("{s:i, s:s, s:s, s:f, s:o, s:o, s:I, s:s?, s:i}", "side", k,
                "algo", rs_algorithm_name(o->algo), "expr", text, "value",
                o->nodes[o->root].value, "inputs", inputs, "partials", parts,
                "bucket", (json_int_t)o->bucket, "region_word", o->region_word,
                "region", o->region);
  if (o->channel >= 0)
    json_object_set_new(jo, "channel", json_integer(o->channel));
  if (lv->local)
    json_object_set_new(jo, "local", json_integer(lv->local));
  return jo;
}

/* The element that differs most, or null. */
static json_t *element_json(const diff_t *d) {
  if (d->worst == SIZE_MAX)
    return json_null();
  const rs_param_t *param = rs_model_param(d->s[0].model, d->worst_param);
  double a = diff_value_at(d->s[0].result, d->da, d->worst),
         b = diff_value_at(d->s[1].result, d->db, d->worst);
  const double scale = d->s[0].scale[d->worst];
  const char *caveat = diff_ulps_caveat(a, b, scale);
  json_t *orders = json_array();
  for (int k = 0; k < 2; k++)
    json_array_append_new(orders, order_json(d, k));
  return json_pack("{s:I, s:s, s:I, s:f, s:f, s:f, s:f, s:f, s:o, s:s?, s:o}",
                   "index", (json_int_t)d->worst, "param", param->name,
                   "param_index", (json_int_t)(d->worst - param->elem_offset),
                   "a", a, "b", b, "ulps", diff_ulps(a, d->da, b, d->db), "rel",
                   diff_relative(a, b), "scale", scale, "scaled",
                   json_finite(diff_scaled(a, b, scale)), "ulps_caveat", caveat,
                   "orders", orders);
}

json_t *diff_json(const diff_t *d) {
  const double pct =
      d->elems ? 100.0 * (double)d->differing / (double)d->elems : 0;
  /* the document's kind first (docs/json.md): also each comparison of
   * diff_report_json_each's, a pair's whole report */
  json_t *j = json_pack("{s:s}", "schema", "ringsim.diff/1");
  json_object_set_new(j, "sides", sides_json(d));
  json_object_set_new(j, "contributions", json_integer(d->big));
  json_object_set_new(j, "compared", json_integer((json_int_t)d->elems));
  json_object_set_new(j, "differing", json_integer((json_int_t)d->differing));
  json_object_set_new(j, "differing_pct", json_real(pct));
  json_object_set_new(j, "identical", json_boolean(d->differing == 0));
  json_object_set_new(j, "max_ulps", json_real(d->max_ulps));
  json_object_set_new(j, "ulps_of", json_string(rs_dtype_name(d->coarse)));
  json_object_set_new(j, "max_rel", json_real(d->max_rel));
  json_object_set_new(j, "max_scaled", json_finite(d->max_scaled));
  json_object_set_new(j, "near_zero_below", json_real(DIFF_NEAR_ZERO));
  json_object_set_new(j, "ulps_caveats",
                      json_pack("{s:I, s:I}", "sign_change",
                                (json_int_t)d->sign_changes, "near_zero",
                                (json_int_t)d->near_zero));
  json_object_set_new(j, "params", params_json(d));
  json_object_set_new(j, "regions", regions_json(d));
  json_object_set_new(j, "element", element_json(d));
  return j;
}

static void print_json(json_t *j) {
  char *text = json_dumps(j, JSON_COMPACT);
  if (text)
    puts(text);
  free(text);
  json_decref(j);
}

void diff_report_json(const diff_t *d) { print_json(diff_json(d)); }

void diff_report_json_each(const diff_t *d, json_t *comparisons) {
  json_t *j = json_pack("{s:s}", "schema", "ringsim.diff.each/1");
  json_t *sides = sides_json(d);
  json_object_set(j, "reference", json_array_get(sides, 0));
  json_decref(sides);
  json_object_set_new(j, "contributions", json_integer(d->big));
  json_object_set(j, "comparisons", comparisons);
  print_json(j);
}

/* ---- text ------------------------------------------------------------ */

/* The per param and per region lines. */
static void print_where(const diff_t *d) {
  char name[CLI_SAFE_MAX], num[40];
  printf("per param\n");
  for (size_t p = 0; p < d->params; p++) {
    const param_diff_t *pd = &d->pd[p];
    if (!pd->differing)
      continue;
    const rs_param_t *param = rs_model_param(d->s[0].model, p);
    ulps_text(pd->max_ulps, num, sizeof num);
    printf("  %-24s %" PRIu64 " of %zu differ, largest %s ULPs, %.3g of the "
           "scale\n",
           cli_safe(param->name, name, sizeof name), pd->differing,
           param->elems, num, pd->max_scaled);
  }
  for (int k = 0; k < 2; k++) {
    if (!d->region_word[k])
      continue;
    /* (on NCCL's channels the ring's chunks are of each channel's part;
     * the tree's region is a channel's part, whole) */
    const int parts =
        d->region_channels[k] && strcmp(d->region_word[k], "channel") != 0;
    printf("per %s of side %c's %s (%s):", d->region_word[k],
           k == 0 ? 'A' : 'B', parts ? "channels' parts" : "buckets",
           rs_algorithm_name(d->s[k].config.algo));
    for (int c = 0; c < d->region_n[k]; c++)
      printf(" %d: %" PRIu64 "%s", c, d->region_counts[k][c],
             c + 1 < d->region_n[k] ? "," : "\n");
  }
}

/* Side k's order of the worst element: the expression, its inputs, and
 * every partial value. */
static void print_order(const diff_t *d, int k) {
  const rs_order_t *o = d->order[k];
  const leaves_t *lv = &d->lv[k];
  if (!o) {
    printf("  side %c: %s\n", k == 0 ? 'A' : 'B', d->order_err[k]);
    return;
  }
  const written_t w = {o, lv};
  char text[4096], num[40];
  expr_text(&w, o->root, 1, text, sizeof text);
  number(o->nodes[o->root].value, o->dtype, num, sizeof num);
  printf("  side %c (%s", k == 0 ? 'A' : 'B', rs_algorithm_name(o->algo));
  if (o->channel >= 0 && o->region_word) /* its channel's ring (or tree) */
    printf(", %s %d of channel %d's part of bucket %zu", o->region_word,
           o->region, o->channel, o->bucket);
  else if (o->channel >= 0)
    printf(", channel %d's part of bucket %zu", o->channel, o->bucket);
  else if (o->region_word)
    printf(", %s %d of bucket %zu", o->region_word, o->region, o->bucket);
  else
    printf(", bucket %zu", o->bucket);
  printf("): %s = %s\n", text, num);
  printf("    with%s", hook_casts(d, k) ? " (cast to the hook's dtype)" : "");
  const int n_in = lv->local ? d->big : o->workers;
  for (int r = 0; r < n_in; r++) {
    number(shown_input(d, k, r), o->dtype, num, sizeof num);
    printf(" %c%d = %s%s", lv->local ? 'c' : 'g', r, num,
           r + 1 < n_in ? "," : "\n");
  }
  partials(&w, o->root, NULL, stdout);
}

/* Side s's label and what runs: "  B: --algo rd  (rd, f32)", no newline. */
static void side_text(const side_t *s) {
  char name[CLI_SAFE_MAX];
  const rs_dtype_t model = rs_model_dtype(s->model),
                   sum = rs_hook_dtype(s->config.hook, model);
  printf("  %s  (%s, %s%s%s)", cli_safe(s->label, name, sizeof name),
         rs_algorithm_name(s->config.algo), rs_dtype_name(model),
         sum != model ? " summed in " : "",
         sum != model ? rs_dtype_name(sum) : "");
}

/* "diff: MODEL, 4 workers, avg" (or "16 contributions on 4, 8 and 16
 * workers"), no newline. */
static void head_text(const diff_t *d) {
  char name[CLI_SAFE_MAX];
  const side_t *s = d->s;
  printf("diff: %s", cli_safe(rs_model_name(s[0].model), name, sizeof name));
  if (d->sizes)
    printf(", %d contributions on %s workers, %s", d->big, d->workers_words,
           rs_op_name(s[0].config.op));
  else
    printf(", %d workers, %s", s[0].config.workers, rs_op_name(s[0].config.op));
}

void diff_report_line(const diff_t *d, int first, int n) {
  char num[40], name[CLI_SAFE_MAX];
  if (first) {
    head_text(d);
    printf("; B%s%c each against A, on the same gradients\n",
           n > 3 ? " to " : " and ", 'A' + n - 1);
    side_text(&d->s[0]);
    printf("\n");
  }
  side_text(&d->s[1]);
  if (!d->differing) {
    printf(": identical, bit for bit\n");
    return;
  }
  const rs_param_t *param = rs_model_param(d->s[0].model, d->worst_param);
  ulps_text(d->max_ulps, num, sizeof num);
  printf(
      ": %" PRIu64 " of %zu differ (%.2f%%), largest %s ULPs (of %s), "
      "relative %.3g, %.3g of the scale, at %s[%zu]",
      d->differing, d->elems, 100.0 * (double)d->differing / (double)d->elems,
      num, rs_dtype_name(d->coarse), d->max_rel, d->max_scaled,
      cli_safe(param->name, name, sizeof name), d->worst - param->elem_offset);
  if (d->sign_changes + d->near_zero)
    printf("; ULPs mean little for %" PRIu64 " (sign change or near zero)",
           d->sign_changes + d->near_zero);
  printf("\n");
}

void diff_report_text(const diff_t *d) {
  const side_t *s = d->s;
  char name[CLI_SAFE_MAX], num[40];
  head_text(d);
  printf("\n");
  for (int k = 0; k < 2; k++) {
    side_text(&s[k]);
    printf("\n");
  }
  const double pct =
      d->elems ? 100.0 * (double)d->differing / (double)d->elems : 0;
  printf("compared   %zu elements\n", d->elems);
  printf("differing  %" PRIu64 " (%.2f%%)%s\n", d->differing, pct,
         d->differing ? "" : ": identical, bit for bit");
  if (!d->differing)
    return;
  ulps_text(d->max_ulps, num, sizeof num);
  printf("largest    %s ULPs (of %s), relative %.3g\n", num,
         rs_dtype_name(d->coarse), d->max_rel);
  printf("scaled     largest %.3g of the scale (|a - b| / %s)\n", d->max_scaled,
         scale_words(d));
  if (d->sign_changes + d->near_zero)
    printf("caveat     ULPs mean little for %" PRIu64 " of the %" PRIu64
           ": %" PRIu64 " change sign, %" PRIu64
           " near zero (under 1/%.0f of the scale)\n",
           d->sign_changes + d->near_zero, d->differing, d->sign_changes,
           d->near_zero, 1 / DIFF_NEAR_ZERO);
  print_where(d);
  const rs_param_t *param = rs_model_param(s[0].model, d->worst_param);
  double a = diff_value_at(s[0].result, d->da, d->worst),
         b = diff_value_at(s[1].result, d->db, d->worst);
  const double scale = s[0].scale[d->worst];
  const char *caveat = diff_ulps_caveat(a, b, scale);
  char scale_num[40];
  ulps_text(diff_ulps(a, d->da, b, d->db), num, sizeof num);
  number(scale, RS_DTYPE_F32, scale_num, sizeof scale_num);
  printf("element %zu (%s[%zu]) differs most: %s ULPs, %.3g of its scale "
         "%s",
         d->worst, cli_safe(param->name, name, sizeof name),
         d->worst - param->elem_offset, num, diff_scaled(a, b, scale),
         scale_num);
  if (caveat && caveat[0] == 's')
    printf(" (ULPs mean little: the sides differ in sign)");
  else if (caveat)
    printf(" (ULPs mean little: near zero, under 1/%.0f of the scale)",
           1 / DIFF_NEAR_ZERO);
  printf("\n");
  for (int k = 0; k < 2; k++)
    print_order(d, k);
}
