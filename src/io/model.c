/* model.c - parse and validate model.json; lay the params out flat.
 *
 * The params are packed in file order into one flat buffer, as DDP's flat
 * view of a bucket: param i starts at the sum of the sizes before it. Inline
 * gradients ("grads") are flattened into one such buffer per worker. Parsing
 * uses jansson, which reports line and column of syntax errors; semantic
 * errors name the JSON path (params[1].shape[0]).
 *
 * Names live in an open-addressing hash table (linear probing, at most half
 * full), so the duplicate check and every lookup by name cost O(1) and
 * loading is linear in the number of params.
 */
#include <errno.h>
#include <float.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "io/model.h"
#include "ringsim/internal/command.h"

/* Largest model accepted: 2^36 elements (256 GiB of f32 per worker). Bigger
 * sizes are refused before anything is allocated. */
#define MAX_MODEL_ELEMS ((size_t)1 << 36)

struct rs_model {
  char *name;
  rs_dtype_t dtype; /* of every param */
  size_t param_count;
  rs_param_t *params;
  size_t elems;
  int inline_workers;
  double **inline_grads; /* inline_workers flat buffers, rounded to dtype */
  size_t *name_slots;    /* param index + 1 per slot, 0 if empty */
  size_t name_mask;      /* slot count - 1 (a power of two) */
  size_t load_compares;  /* name comparisons made while loading */
  /* "buckets": DDP's own, as a recorded job laid them out (0: none) */
  size_t bucket_count;
  rs_bucket_t *buckets;
  size_t *layout; /* bucket b's params in its layout order from layout_at[b] */
  size_t *layout_at;
};

/* FNV-1a over the name's bytes. */
static size_t name_hash(const char *name) {
  uint64_t h = 0xcbf29ce484222325u;
  for (const unsigned char *c = (const unsigned char *)name; *c; c++)
    h = (h ^ *c) * 0x100000001b3u;
  return (size_t)(h ^ (h >> 32));
}

/* The slot holding name, or the empty slot where it would go; adds the
 * names compared on the way to *compares when it is not NULL. */
static size_t *name_slot(const rs_model_t *m, const char *name,
                         size_t *compares) {
  size_t i = name_hash(name) & m->name_mask, n = 0;
  while (m->name_slots[i] &&
         (n++, strcmp(m->params[m->name_slots[i] - 1].name, name) != 0))
    i = (i + 1) & m->name_mask;
  if (compares)
    *compares += n;
  return &m->name_slots[i];
}

/* Room for count names, the table at most half full. */
static int names_init(rs_model_t *m, size_t count) {
  size_t slots = 16;
  while (slots < 2 * count)
    slots *= 2;
  m->name_slots = calloc(slots, sizeof *m->name_slots);
  m->name_mask = slots - 1;
  return m->name_slots ? RS_OK : RS_ENOMEM;
}

void rs_model_free(rs_model_t *model) {
  if (!model)
    return;
  for (size_t i = 0; i < model->param_count; i++)
    free((char *)model->params[i].name);
  free(model->params);
  for (int w = 0; w < model->inline_workers; w++)
    free(model->inline_grads[w]);
  free(model->inline_grads);
  free(model->name_slots);
  free(model->name);
  free(model->buckets);
  free(model->layout);
  free(model->layout_at);
  free(model);
}

const char *rs_model_name(const rs_model_t *m) { return m->name; }
size_t rs_model_param_count(const rs_model_t *m) { return m->param_count; }
size_t rs_model_elems(const rs_model_t *m) { return m->elems; }
rs_dtype_t rs_model_dtype(const rs_model_t *m) { return m->dtype; }
int rs_model_inline_workers(const rs_model_t *m) { return m->inline_workers; }

const rs_param_t *rs_model_param(const rs_model_t *m, size_t index) {
  return index < m->param_count ? &m->params[index] : NULL;
}

const double *rs_model_inline_grads(const rs_model_t *m, int worker) {
  if (worker < 0 || worker >= m->inline_workers)
    return NULL;
  return m->inline_grads[worker];
}

size_t rs_model_fixed_buckets(const rs_model_t *m) { return m->bucket_count; }

const size_t *rs_model_bucket_layout(const rs_model_t *m, size_t b) {
  return b < m->bucket_count ? m->layout + m->layout_at[b] : NULL;
}

size_t rs_model_bucket_param(const rs_model_t *m, const rs_bucket_t *bucket,
                             size_t b, size_t j) {
  const size_t *order = rs_model_bucket_layout(m, b);
  return order ? order[j] : bucket->first_param + bucket->params - 1 - j;
}

long rs__model_find(const rs_model_t *m, const char *name) {
  if (!m->name_slots)
    return -1;
  return (long)*name_slot(m, name, NULL) - 1;
}

size_t rs__model_load_compares(const rs_model_t *m) { return m->load_compares; }

/* Refuse keys other than the allowed ones, naming the first stranger. */
static int check_keys(json_t *obj, const char *const *allowed,
                      const char *source, const char *where, char *errmsg) {
  const char *key;
  json_t *value;
  json_object_foreach(obj, key, value) {
    int known = 0;
    for (const char *const *a = allowed; *a; a++)
      known |= strcmp(key, *a) == 0;
    if (!known)
      return rs__err(errmsg, RS_EPARSE, "%s: %s: unknown field \"%s\"", source,
                     where, key);
  }
  return RS_OK;
}

static int parse_param(json_t *jp, size_t index, rs_param_t *p,
                       rs_dtype_t *dtype, const char *source, char *errmsg) {
  static const char *const keys[] = {"name",       "shape",       "dtype",
                                     "forward_us", "backward_us", NULL};
  char where[64];
  snprintf(where, sizeof where, "params[%zu]", index);
  if (!json_is_object(jp))
    return rs__err(errmsg, RS_EPARSE, "%s: %s: must be an object", source,
                   where);
  int rc = check_keys(jp, keys, source, where, errmsg);
  if (rc)
    return rc;

  json_t *jname = json_object_get(jp, "name");
  if (!json_is_string(jname) || json_string_length(jname) == 0)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: %s.name: missing or not a non-empty string", source,
                   where);
  json_t *jdtype = json_object_get(jp, "dtype");
  *dtype = RS_DTYPE_F32;
  if (jdtype) {
    const char *name = json_is_string(jdtype) ? json_string_value(jdtype) : "";
    if (strcmp(name, "f32") == 0)
      *dtype = RS_DTYPE_F32;
    else if (strcmp(name, "f16") == 0)
      *dtype = RS_DTYPE_F16;
    else if (strcmp(name, "bf16") == 0)
      *dtype = RS_DTYPE_BF16;
    else if (strcmp(name, "f64") == 0)
      *dtype = RS_DTYPE_F64;
    else if (!json_is_string(jdtype))
      return rs__err(errmsg, RS_EPARSE, "%s: %s.dtype: must be a string",
                     source, where);
    else
      return rs__err(errmsg, RS_EPARSE,
                     "%s: %s.dtype: \"%.20s\" is not supported (f32, f64, "
                     "f16 or bf16)",
                     source, where, name);
  }
  json_t *jshape = json_object_get(jp, "shape");
  if (!json_is_array(jshape))
    return rs__err(errmsg, RS_EPARSE,
                   "%s: %s.shape: missing or not a list of dimensions", source,
                   where);
  size_t ndim = json_array_size(jshape);
  if (ndim > RS_MAX_DIMS)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: %s.shape: %zu dimensions, at most %d allowed", source,
                   where, ndim, RS_MAX_DIMS);
  size_t elems = 1;
  for (size_t d = 0; d < ndim; d++) {
    json_t *jd = json_array_get(jshape, d);
    if (!json_is_integer(jd) || json_integer_value(jd) < 0)
      return rs__err(errmsg, RS_EPARSE,
                     "%s: %s.shape[%zu]: must be a non-negative integer",
                     source, where, d);
    json_int_t dim = json_integer_value(jd);
    if (dim > 0 && (uint64_t)dim > MAX_MODEL_ELEMS / (elems ? elems : 1))
      return rs__err(errmsg, RS_EPARSE, "%s: %s.shape: more than %zu elements",
                     source, where, MAX_MODEL_ELEMS);
    p->shape[d] = dim;
    elems *= (size_t)dim;
  }
  p->ndim = (int)ndim;
  p->elems = elems;
  static const char *const times[] = {"forward_us", "backward_us"};
  for (int k = 0; k < 2; k++) {
    json_t *jt = json_object_get(jp, times[k]);
    double us = jt ? json_number_value(jt) : -1;
    if (jt && (!json_is_number(jt) || !(us >= 0) || us > 3.6e9))
      return rs__err(errmsg, RS_EPARSE,
                     "%s: %s.%s (param \"%.100s\"): must be a number of "
                     "microseconds, 0 to 3.6e9 (an hour)",
                     source, where, times[k], json_string_value(jname));
    *(k ? &p->backward_us : &p->forward_us) = us;
  }
  p->name = strdup(json_string_value(jname));
  if (!p->name)
    return rs__err(errmsg, RS_ENOMEM, "%s: out of memory", source);
  return RS_OK;
}

/* The largest finite value of a dtype, and the rounding threshold: half
 * an ulp above it, from where round-to-nearest (ties to even: the largest
 * value's last bit is odd) gives infinity. */
static double dtype_max(rs_dtype_t dtype) {
  return dtype == RS_DTYPE_F16    ? 0x1.ffcp15
         : dtype == RS_DTYPE_BF16 ? 0x1.fep127
         : dtype == RS_DTYPE_F64  ? DBL_MAX
                                  : FLT_MAX;
}
static double dtype_overflow(rs_dtype_t dtype) {
  return dtype == RS_DTYPE_F16    ? 0x1.ffep15
         : dtype == RS_DTYPE_BF16 ? 0x1.ffp127
         : dtype == RS_DTYPE_F64  ? INFINITY
                                  : 0x1.ffffffp127;
}

/* x rounded as a tensor of dtype holds it: to f32 (to nearest, ties to
 * even), then to f16 or bf16; infinite if it does not fit. A double
 * beyond FLT_MAX is converted by hand (C leaves that undefined). Below the
 * threshold but within an f32 half-ulp of it, the f32 lands on the
 * midpoint and the second rounding would overflow: one rounding gives the
 * largest value, and so does this. */
static double round_to_dtype(rs_dtype_t dtype, double x) {
  if (dtype == RS_DTYPE_F64)
    return x;
  if (!(fabs(x) < dtype_overflow(dtype)))
    return x > 0 ? INFINITY : -INFINITY;
  float f = fabs(x) <= FLT_MAX ? (float)x : x > 0 ? FLT_MAX : -FLT_MAX;
  double rounded = rs_dtype_round(dtype, f);
  if (isinf(rounded))
    rounded = copysign(dtype_max(dtype), x);
  return rounded;
}

/* One param's values being read: where they go (out, the next at pos),
 * its shape and dtype, and the names its messages give (source: where).
 */
typedef struct flatten {
  const rs_param_t *p;
  rs_dtype_t dtype;
  double *out;
  size_t pos;
  const char *source, *where;
  char *errmsg;
} flatten_t;

/* One number of the param, rounded to its dtype, appended at f->pos. */
static int flatten_number(json_t *v, flatten_t *f) {
  if (!json_is_number(v))
    return rs__err(f->errmsg, RS_EPARSE, "%s: %s: element %zu is not a number",
                   f->source, f->where, f->pos);
  double x = json_number_value(v);
  double rounded = round_to_dtype(f->dtype, x);
  if (!isfinite(x) || !isfinite(rounded)) {
    char text[32]; /* x in the fewest digits that read back as x */
    for (int digits = 6; digits <= 17; digits++) {
      snprintf(text, sizeof text, "%.*g", digits, x);
      if (strtod(text, NULL) == x)
        break;
    }
    return rs__err(f->errmsg, RS_EPARSE,
                   "%s: %s: element %zu (%s) does not fit in %s: it "
                   "rounds to infinity (the largest %s is %.9g)",
                   f->source, f->where, f->pos, text, rs_dtype_name(f->dtype),
                   rs_dtype_name(f->dtype), dtype_max(f->dtype));
  }
  f->out[f->pos++] = rounded;
  return RS_OK;
}

/* Flatten a nested list that must have the param's shape from dimension
 * dim on. */
static int flatten_nested(json_t *v, flatten_t *f, int dim) {
  const rs_param_t *p = f->p;
  if (dim == p->ndim)
    return flatten_number(v, f);
  if (!json_is_array(v) || json_array_size(v) != (size_t)p->shape[dim])
    return rs__err(f->errmsg, RS_EPARSE,
                   "%s: %s: dimension %d must be a list of %lld values, as "
                   "the shape says",
                   f->source, f->where, dim, (long long)p->shape[dim]);
  for (size_t i = 0; i < json_array_size(v); i++) {
    int rc = flatten_nested(json_array_get(v, i), f, dim + 1);
    if (rc)
      return rc;
  }
  return RS_OK;
}

/* A param's values into f (f.pos 0): nested as the shape, or one flat
 * list, or (for a scalar) a bare number. */
static int parse_values(json_t *v, flatten_t f) {
  const rs_param_t *p = f.p;
  const char *source = f.source, *where = f.where;
  char *errmsg = f.errmsg;
  int nested = p->ndim > 1 && json_is_array(v) && json_array_size(v) > 0 &&
               json_is_array(json_array_get(v, 0));
  if ((p->ndim == 0 && json_is_number(v)) || nested)
    return flatten_nested(v, &f, 0);
  if (!json_is_array(v))
    return rs__err(errmsg, RS_EPARSE, "%s: %s: must be a list of numbers",
                   source, where);
  if (json_array_size(v) != p->elems)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: %s: has %zu values, the shape needs %zu", source, where,
                   json_array_size(v), p->elems);
  rs_param_t flat = *p;
  flat.ndim = 1;
  flat.shape[0] = (int64_t)p->elems;
  f.p = &flat;
  return flatten_nested(v, &f, 0);
}

static int parse_grads(rs_model_t *m, json_t *jgrads, size_t text_len,
                       const char *source, char *errmsg) {
  if (!json_is_array(jgrads) || json_array_size(jgrads) == 0)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: grads: must be a non-empty list, one object per worker",
                   source);
  size_t workers = json_array_size(jgrads);
  if (workers > RS_MAX_WORKERS)
    return rs__err(errmsg, RS_EPARSE, "%s: grads: %zu workers, at most %d",
                   source, workers, RS_MAX_WORKERS);
  m->inline_grads = calloc(workers, sizeof *m->inline_grads);
  if (!m->inline_grads)
    return rs__err(errmsg, RS_ENOMEM, "%s: out of memory", source);
  m->inline_workers = (int)workers;
  /* Every inline value takes at least one character of the file: a model
   * whose values cannot all be in the text is refused before allocating
   * room for them. */
  if (m->elems > text_len / workers)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: grads: %zu workers x %zu elements cannot be given "
                   "inline in %zu bytes of JSON (use --grads files for big "
                   "models)",
                   source, workers, m->elems, text_len);
  for (size_t w = 0; w < workers; w++) {
    json_t *jw = json_array_get(jgrads, w);
    char where[RS_ERRMSG_MAX / 2];
    if (!json_is_object(jw))
      return rs__err(errmsg, RS_EPARSE,
                     "%s: grads[%zu]: must be an object {param name: values}",
                     source, w);
    const char *key;
    json_t *value;
    json_object_foreach(jw, key, value) {
      if (!m->name_slots || !*name_slot(m, key, &m->load_compares))
        return rs__err(errmsg, RS_EPARSE,
                       "%s: grads[%zu]: \"%.100s\" is not a param of the model",
                       source, w, key);
    }
    m->inline_grads[w] = malloc((m->elems ? m->elems : 1) * sizeof(double));
    if (!m->inline_grads[w])
      return rs__err(errmsg, RS_ENOMEM, "%s: out of memory", source);
    for (size_t i = 0; i < m->param_count; i++) {
      const rs_param_t *p = &m->params[i];
      snprintf(where, sizeof where, "grads[%zu].%.100s", w, p->name);
      json_t *jv = json_object_get(jw, p->name);
      if (!jv)
        return rs__err(errmsg, RS_EPARSE, "%s: %s: missing", source, where);
      int rc = parse_values(
          jv, (flatten_t){.p = p,
                          .dtype = m->dtype,
                          .out = m->inline_grads[w] + p->elem_offset,
                          .source = source,
                          .where = where,
                          .errmsg = errmsg});
      if (rc)
        return rc;
    }
  }
  return RS_OK;
}

/* "buckets": [[name, ...], ...], DDP's buckets in launch order, each
 * bucket's params in its flat view's order: every param in exactly one,
 * each bucket's params consecutive in the params' order (ringsim
 * all-reduces a bucket as one range of the flat buffer). */
static int parse_buckets(rs_model_t *m, json_t *jb, const char *source,
                         char *errmsg) {
  if (!json_is_array(jb) || json_array_size(jb) == 0)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: buckets: must be a non-empty list of lists of param "
                   "names",
                   source);
  const size_t n = json_array_size(jb), P = m->param_count;
  m->buckets = calloc(n, sizeof *m->buckets);
  m->layout = malloc(P * sizeof *m->layout);
  m->layout_at = calloc(n, sizeof *m->layout_at);
  size_t *seen = calloc(P, sizeof *seen); /* each param's bucket + 1 */
  int rc = !m->buckets || !m->layout || !m->layout_at || !seen
               ? rs__err(errmsg, RS_ENOMEM, "%s: out of memory", source)
               : RS_OK;
  size_t placed = 0;
  for (size_t b = 0; rc == RS_OK && b < n; b++) {
    json_t *names = json_array_get(jb, b);
    if (!json_is_array(names) || json_array_size(names) == 0) {
      rc = rs__err(errmsg, RS_EPARSE,
                   "%s: buckets[%zu]: must be a non-empty list of param names",
                   source, b);
      break;
    }
    size_t lo = P, hi = 0;
    m->layout_at[b] = placed;
    for (size_t k = 0; rc == RS_OK && k < json_array_size(names); k++) {
      json_t *jn = json_array_get(names, k);
      long i =
          json_is_string(jn) ? rs__model_find(m, json_string_value(jn)) : -1;
      if (!json_is_string(jn))
        rc = rs__err(errmsg, RS_EPARSE,
                     "%s: buckets[%zu][%zu]: must be a param name (a string)",
                     source, b, k);
      else if (i < 0)
        rc = rs__err(errmsg, RS_EPARSE,
                     "%s: buckets[%zu][%zu]: \"%.100s\" is not a param of the "
                     "model",
                     source, b, k, json_string_value(jn));
      else if (seen[i])
        rc = rs__err(errmsg, RS_EPARSE,
                     "%s: buckets[%zu][%zu]: \"%.100s\" is in %s too", source,
                     b, k, m->params[i].name,
                     seen[i] == b + 1 ? "this bucket" : "an earlier bucket");
      else {
        seen[i] = b + 1;
        m->layout[placed++] = (size_t)i;
        lo = (size_t)i < lo ? (size_t)i : lo;
        hi = (size_t)i > hi ? (size_t)i : hi;
      }
    }
    if (rc)
      break;
    rs_bucket_t *bk = &m->buckets[b];
    bk->first_param = lo;
    bk->params = json_array_size(names);
    if (hi - lo + 1 != bk->params) {
      rc = rs__err(errmsg, RS_EPARSE,
                   "%s: buckets[%zu]: its params are not consecutive in the "
                   "params' order (\"%.100s\" .. \"%.100s\" hold others): "
                   "ringsim all-reduces a bucket as one range of the flat "
                   "buffer",
                   source, b, m->params[lo].name, m->params[hi].name);
      break;
    }
    bk->elem_offset = m->params[lo].elem_offset;
    bk->elems =
        m->params[hi].elem_offset + m->params[hi].elems - bk->elem_offset;
    m->bucket_count = b + 1;
  }
  for (size_t i = 0; rc == RS_OK && i < P; i++)
    if (!seen[i])
      rc = rs__err(errmsg, RS_EPARSE, "%s: buckets: \"%.100s\" is in none",
                   source, m->params[i].name);
  free(seen);
  if (rc)
    m->bucket_count = 0;
  return rc;
}

static int parse_root(rs_model_t *m, json_t *root, size_t text_len,
                      const char *source, char *errmsg) {
  static const char *const keys[] = {"name",  "description", "params",
                                     "grads", "buckets",     NULL};
  if (!json_is_object(root))
    return rs__err(errmsg, RS_EPARSE, "%s: the top level must be an object",
                   source);
  int rc = check_keys(root, keys, source, "top level", errmsg);
  if (rc)
    return rc;
  json_t *jname = json_object_get(root, "name");
  if (jname && !json_is_string(jname))
    return rs__err(errmsg, RS_EPARSE, "%s: name: must be a string", source);
  json_t *jdesc = json_object_get(root, "description");
  if (jdesc && !json_is_string(jdesc))
    return rs__err(errmsg, RS_EPARSE, "%s: description: must be a string",
                   source);
  m->name = strdup(jname ? json_string_value(jname) : "model");
  if (!m->name)
    return rs__err(errmsg, RS_ENOMEM, "%s: out of memory", source);

  json_t *jparams = json_object_get(root, "params");
  if (!json_is_array(jparams) || json_array_size(jparams) == 0)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: params: missing or not a non-empty list", source);
  size_t count = json_array_size(jparams);
  m->params = calloc(count, sizeof *m->params);
  if (!m->params || names_init(m, count))
    return rs__err(errmsg, RS_ENOMEM, "%s: out of memory", source);
  for (size_t i = 0; i < count; i++) {
    rs_param_t *p = &m->params[i];
    rs_dtype_t dtype = RS_DTYPE_F32;
    rc = parse_param(json_array_get(jparams, i), i, p, &dtype, source, errmsg);
    if (rc)
      return rc;
    if (i == 0)
      m->dtype = dtype;
    else if (dtype != m->dtype) {
      m->param_count = i + 1;
      return rs__err(errmsg, RS_EPARSE,
                     "%s: params[%zu].dtype: %s, but params[0] is %s; a model "
                     "has one dtype (DDP buckets are per dtype)",
                     source, i, rs_dtype_name(dtype), rs_dtype_name(m->dtype));
    }
    m->param_count = i + 1;
    size_t *slot = name_slot(m, p->name, &m->load_compares);
    if (*slot)
      return rs__err(errmsg, RS_EPARSE,
                     "%s: params[%zu].name: \"%.100s\" is a duplicate", source,
                     i, p->name);
    *slot = i + 1;
    if (p->elems > MAX_MODEL_ELEMS - m->elems)
      return rs__err(errmsg, RS_EPARSE,
                     "%s: params: more than %zu elements in all", source,
                     MAX_MODEL_ELEMS);
    p->elem_offset = m->elems;
    m->elems += p->elems;
  }
  json_t *jbuckets = json_object_get(root, "buckets");
  if (jbuckets && (rc = parse_buckets(m, jbuckets, source, errmsg)))
    return rc;
  json_t *jgrads = json_object_get(root, "grads");
  if (jgrads)
    return parse_grads(m, jgrads, text_len, source, errmsg);
  return RS_OK;
}

static int from_json(json_t *root, size_t text_len, const char *source,
                     rs_model_t **out, char *errmsg) {
  rs_model_t *m = calloc(1, sizeof *m);
  if (!m) {
    json_decref(root);
    return rs__err(errmsg, RS_ENOMEM, "%s: out of memory", source);
  }
  int rc = parse_root(m, root, text_len, source, errmsg);
  json_decref(root);
  if (rc) {
    rs_model_free(m);
    return rc;
  }
  *out = m;
  return RS_OK;
}

int rs_model_parse(const char *text, size_t len, const char *source,
                   rs_model_t **out, char *errmsg) {
  json_error_t jerr;
  *out = NULL;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root)
    return rs__err(errmsg, RS_EPARSE, "%s:%d:%d: %s", source, jerr.line,
                   jerr.column, jerr.text);
  return from_json(root, len, source, out, errmsg);
}

/* A file read for jansson, counting its bytes (ftell cannot, on a pipe). */
typedef struct counted {
  FILE *f;
  size_t bytes;
} counted_t;

static size_t read_counted(void *buffer, size_t len, void *data) {
  counted_t *c = data;
  size_t n = fread(buffer, 1, len, c->f);
  c->bytes += n;
  return n == 0 && ferror(c->f) ? (size_t)-1 : n;
}

int rs_model_load(const char *path, rs_model_t **out, char *errmsg) {
  char qpath[RS_QUOTE_MAX + 16]; /* the name as messages quote it */
  rs_quote_path(path, qpath, sizeof qpath);
  *out = NULL;
  counted_t text = {.f = rs__fopen_read(path)};
  if (!text.f)
    return rs__err(errmsg, RS_EIO, "%s: cannot open: %s", qpath,
                   strerror(errno));
  json_error_t jerr;
  json_t *root =
      json_load_callback(read_counted, &text, JSON_REJECT_DUPLICATES, &jerr);
  int read_error = ferror(text.f);
  fclose(text.f);
  if (!root) {
    if (read_error)
      return rs__err(errmsg, RS_EIO, "%s: cannot read (is it a directory?)",
                     qpath);
    return rs__err(errmsg, RS_EPARSE, "%s:%d:%d: %s", qpath, jerr.line,
                   jerr.column, jerr.text);
  }
  return from_json(root, text.bytes, path, out, errmsg);
}

int rs_model_buckets(const rs_model_t *m, size_t first_bytes, size_t cap_bytes,
                     rs_bucket_t **out, size_t *count) {
  *out = calloc(m->param_count, sizeof **out);
  *count = 0;
  if (!*out)
    return RS_ENOMEM;
  if (m->bucket_count) { /* the model's own ("buckets") */
    memcpy(*out, m->buckets, m->bucket_count * sizeof **out);
    *count = m->bucket_count;
    return RS_OK;
  }
  rs_bucket_t *b = NULL;
  size_t limit = first_bytes;
  /* Backward produces gradients last layer first: walk params in reverse,
   * closing a bucket once it reaches its limit (DDP's
   * compute_bucket_assignment_by_size). */
  for (size_t k = m->param_count; k-- > 0;) {
    const rs_param_t *p = &m->params[k];
    if (!b) {
      b = &(*out)[(*count)++];
      b->first_param = k + 1;
    }
    b->first_param--;
    b->params++;
    b->elem_offset = p->elem_offset;
    b->elems += p->elems;
    if (cap_bytes && b->elems * rs_dtype_size(m->dtype) >= limit) {
      b = NULL;
      limit = cap_bytes;
    }
  }
  return RS_OK;
}

size_t rs__model_param_at(const rs_model_t *model, size_t elem) {
  size_t lo = 0, hi = rs_model_param_count(model) - 1;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (rs_model_param(model, mid)->elem_offset <= elem)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}
