/* safetensors.c - read and write F32, F64, F16 and BF16 tensors in the
 * safetensors format (the model's dtype; values held as double for F64,
 * as float32 otherwise).
 *
 * The format (huggingface/safetensors): an 8-byte little-endian header
 * length N, N bytes of JSON {name: {"dtype", "shape", "data_offsets":
 * [begin, end]}, "__metadata__": {...}}, then the raw little-endian data,
 * offsets counted from the end of the header; the tensors' byte ranges
 * cover the data exactly (check_layout). This is what
 * safetensors.torch.save_file writes, so gradients dumped from PyTorch come
 * in directly, and what --out produces for numpy or torch to read.
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dtype.h"
#include "io/safetensors.h"
#include "base/util.h"
#include "ringsim/internal/command.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c assumes a little-endian machine"
#endif

/* The format's own limit on header size (100 MB), which also keeps a
 * hostile length from making us allocate gigabytes. */
#define MAX_HEADER_BYTES (100u * 1000u * 1000u)

/* The safetensors dtype name of a ringsim dtype. */
static const char *st_dtype(rs_dtype_t dtype) {
  return dtype == RS_DTYPE_F16    ? "F16"
         : dtype == RS_DTYPE_BF16 ? "BF16"
         : dtype == RS_DTYPE_F64  ? "F64"
                                  : "F32";
}

/* Read n elements of dtype into data (double for f64, float32 otherwise). */
static int read_elems(FILE *f, rs_dtype_t dtype, void *data, size_t n) {
  if (dtype == RS_DTYPE_F32 || dtype == RS_DTYPE_F64)
    return fread(data, rs_dtype_size(dtype), n, f) == n ? 0 : -1;
  float *out = data;
  uint16_t buf[1024];
  for (size_t done = 0; done < n;) {
    size_t k = n - done < 1024 ? n - done : 1024;
    if (fread(buf, sizeof *buf, k, f) != k)
      return -1;
    for (size_t i = 0; i < k; i++)
      out[done + i] = dtype == RS_DTYPE_F16 ? rs__f16_to_f32(buf[i])
                                            : rs__bf16_to_f32(buf[i]);
    done += k;
  }
  return 0;
}

/* Write n values (double for f64, float32 otherwise) as dtype (they are
 * representable in it). */
/* Has the caller set *cancel (NULL: it cannot)? An atomic load: another
 * thread stores the flag (rs_stop_flag_t). */
static int cancel_asked(const rs_stop_flag_t *cancel) {
  return cancel && __atomic_load_n(cancel, __ATOMIC_SEQ_CST);
}

/* Write n elements of data in blocks, stopping (1) when *cancel is set;
 * -1 on a write error. */
static int write_elems(FILE *f, rs_dtype_t dtype, const void *data, size_t n,
                       const rs_stop_flag_t *cancel) {
  const size_t block = 1 << 20; /* elements between looks at *cancel */
  if (dtype == RS_DTYPE_F32 || dtype == RS_DTYPE_F64) {
    const size_t size = rs_dtype_size(dtype);
    for (size_t done = 0; done < n;) {
      if (cancel_asked(cancel))
        return 1;
      size_t k = n - done < block ? n - done : block;
      if (fwrite((const char *)data + done * size, size, k, f) != k)
        return -1;
      done += k;
    }
    return 0;
  }
  const float *in = data;
  uint16_t buf[1024];
  for (size_t done = 0; done < n;) {
    if (done % block == 0 && cancel_asked(cancel))
      return 1;
    size_t k = n - done < 1024 ? n - done : 1024;
    for (size_t i = 0; i < k; i++)
      buf[i] = dtype == RS_DTYPE_F16 ? rs__f32_to_f16(in[done + i])
                                     : rs__f32_to_bf16(in[done + i]);
    if (fwrite(buf, sizeof *buf, k, f) != k)
      return -1;
    done += k;
  }
  return 0;
}

/* A file's header being checked: its JSON (root), the size of the data
 * buffer after it, and the names its messages give (path: errmsg). */
typedef struct st_header {
  json_t *root;
  uint64_t data_bytes;
  const char *path;
  char *errmsg;
} st_header_t;

/* Tensor t of the header, the model's param p in dtype want: its data's
 * offset in the buffer into *begin. */
static int check_tensor(const st_header_t *h, json_t *t, const rs_param_t *p,
                        rs_dtype_t want, uint64_t *begin) {
  const uint64_t data_bytes = h->data_bytes;
  const char *path = h->path;
  char *errmsg = h->errmsg;
  if (!json_is_object(t))
    return rs__err(errmsg, RS_EPARSE, "%s: tensor \"%.100s\": not an object",
                   path, p->name);
  json_t *dtype = json_object_get(t, "dtype");
  if (!json_is_string(dtype) ||
      strcmp(json_string_value(dtype), st_dtype(want)) != 0)
    return rs__err(
        errmsg, RS_EPARSE, "%s: tensor \"%.100s\": dtype %s, expected %s", path,
        p->name, json_is_string(dtype) ? json_string_value(dtype) : "missing",
        st_dtype(want));
  json_t *shape = json_object_get(t, "shape");
  int same = json_is_array(shape) && json_array_size(shape) == (size_t)p->ndim;
  for (int d = 0; same && d < p->ndim; d++) {
    json_t *dim = json_array_get(shape, (size_t)d);
    same = json_is_integer(dim) && json_integer_value(dim) == p->shape[d];
  }
  if (!same)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: tensor \"%.100s\": shape differs from the model's",
                   path, p->name);
  json_t *offs = json_object_get(t, "data_offsets");
  json_t *jb = json_array_get(offs, 0), *je = json_array_get(offs, 1);
  if (!json_is_array(offs) || json_array_size(offs) != 2 ||
      !json_is_integer(jb) || !json_is_integer(je) ||
      json_integer_value(jb) < 0 ||
      json_integer_value(je) < json_integer_value(jb))
    return rs__err(errmsg, RS_EPARSE, "%s: tensor \"%.100s\": bad data_offsets",
                   path, p->name);
  uint64_t b = (uint64_t)json_integer_value(jb);
  uint64_t e = (uint64_t)json_integer_value(je);
  if (e > data_bytes)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: tensor \"%.100s\": data_offsets end %llu is past the "
                   "file's %llu data bytes (truncated?)",
                   path, p->name, (unsigned long long)e,
                   (unsigned long long)data_bytes);
  if (e - b != p->elems * rs_dtype_size(want))
    return rs__err(errmsg, RS_EPARSE,
                   "%s: tensor \"%.100s\": %llu data bytes, the shape needs "
                   "%zu",
                   path, p->name, (unsigned long long)(e - b),
                   p->elems * rs_dtype_size(want));
  *begin = b;
  return RS_OK;
}

/* One tensor's byte range in the data buffer, for the layout check. */
typedef struct st_range {
  uint64_t begin, end;
  const char *name;
} st_range_t;

static int range_order(const void *a, const void *b) {
  const st_range_t *x = a, *y = b;
  if (x->begin != y->begin)
    return x->begin < y->begin ? -1 : 1;
  if (x->end != y->end)
    return x->end < y->end ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* The format's layout rule, as the reference implementation (the Rust
 * safetensors crate's Metadata::validate) applies it: the byte ranges of
 * ALL the header's tensors, the model's and any others, sorted by offset,
 * cover the data buffer exactly: the first begins at 0, each begins where
 * the one before it ends (no hole, no overlap), the last ends at the end
 * of the file (no trailing bytes). */
static int check_layout(const st_header_t *h) {
  json_t *root = h->root;
  const uint64_t data_bytes = h->data_bytes;
  const char *path = h->path;
  char *errmsg = h->errmsg;
  size_t n = 0;
  const char *key;
  json_t *t;
  st_range_t *r = malloc((json_object_size(root) + 1) * sizeof *r);
  if (!r)
    return rs__err(errmsg, RS_ENOMEM, "%s: out of memory for the header",
                   path);
  json_object_foreach(root, key, t) {
    if (strcmp(key, "__metadata__") == 0)
      continue;
    if (!json_is_object(t)) {
      free(r);
      return rs__err(errmsg, RS_EPARSE, "%s: tensor \"%.100s\": not an object",
                     path, key);
    }
    json_t *offs = json_object_get(t, "data_offsets");
    json_t *jb = json_array_get(offs, 0), *je = json_array_get(offs, 1);
    if (!json_is_array(offs) ||
        json_array_size(offs) != 2 || !json_is_integer(jb) ||
        !json_is_integer(je) || json_integer_value(jb) < 0 ||
        json_integer_value(je) < json_integer_value(jb)) {
      free(r);
      return rs__err(errmsg, RS_EPARSE,
                     "%s: tensor \"%.100s\": bad data_offsets", path, key);
    }
    r[n].begin = (uint64_t)json_integer_value(jb);
    r[n].end = (uint64_t)json_integer_value(je);
    r[n].name = key;
    n++;
  }
  qsort(r, n, sizeof *r, range_order);
  int rc = RS_OK;
  uint64_t end = 0; /* where the tensors so far end */
  for (size_t i = 0; i < n && rc == RS_OK; i++) {
    if (r[i].begin < end)
      rc = rs__err(errmsg, RS_EPARSE,
                   "%s: tensor \"%.100s\": data_offsets [%llu, %llu] overlap "
                   "tensor \"%.100s\"'s [%llu, %llu] (the format lets no two "
                   "tensors share bytes)",
                   path, r[i].name, (unsigned long long)r[i].begin,
                   (unsigned long long)r[i].end, r[i - 1].name,
                   (unsigned long long)r[i - 1].begin,
                   (unsigned long long)r[i - 1].end);
    else if (r[i].begin > end && i == 0)
      rc = rs__err(errmsg, RS_EPARSE,
                   "%s: tensor \"%.100s\": data_offsets begin at %llu, not "
                   "at 0: the first %llu data bytes belong to no tensor (the "
                   "format allows no holes)",
                   path, r[i].name, (unsigned long long)r[i].begin,
                   (unsigned long long)r[i].begin);
    else if (r[i].begin > end)
      rc = rs__err(errmsg, RS_EPARSE,
                   "%s: tensor \"%.100s\": data_offsets begin at %llu, where "
                   "tensor \"%.100s\" ends at %llu: the %llu bytes between "
                   "belong to no tensor (the format allows no holes)",
                   path, r[i].name, (unsigned long long)r[i].begin,
                   r[i - 1].name, (unsigned long long)end,
                   (unsigned long long)(r[i].begin - end));
    end = r[i].end;
  }
  if (rc == RS_OK && end > data_bytes)
    rc = rs__err(errmsg, RS_EPARSE,
                 "%s: tensor \"%.100s\": data_offsets end %llu is past the "
                 "file's %llu data bytes (truncated?)",
                 path, r[n - 1].name, (unsigned long long)end,
                 (unsigned long long)data_bytes);
  else if (rc == RS_OK && end < data_bytes && n == 0)
    rc = rs__err(errmsg, RS_EPARSE,
                 "%s: %llu data bytes after a header of no tensor (the "
                 "format allows no trailing bytes)",
                 path, (unsigned long long)data_bytes);
  else if (rc == RS_OK && end < data_bytes)
    rc = rs__err(errmsg, RS_EPARSE,
                 "%s: %llu trailing bytes after tensor \"%.100s\", the last "
                 "(its data ends at %llu of the file's %llu data bytes; the "
                 "format allows no trailing bytes)",
                 path, (unsigned long long)(data_bytes - end), r[n - 1].name,
                 (unsigned long long)end, (unsigned long long)data_bytes);
  free(r);
  return rc;
}

int rs__safetensors_read_stream(FILE *f, uint64_t file_size, const char *path,
                                const rs_model_t *model, void *data,
                                char *errmsg) {
  int rc = RS_OK;
  char *header = NULL;
  json_t *root = NULL;
  uint64_t *begins = NULL;
  unsigned char len_bytes[8];
  if (file_size < 8 || fread(len_bytes, 1, 8, f) != 8)
    return rs__err(errmsg, RS_EPARSE, "%s: truncated: no 8-byte header length",
                   path);
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; i--)
    header_len = header_len << 8 | len_bytes[i];
  if (header_len > MAX_HEADER_BYTES || header_len > file_size - 8)
    return rs__err(errmsg, RS_EPARSE,
                   "%s: header length %llu is larger than the file (%llu "
                   "bytes) or the format's 100 MB limit",
                   path, (unsigned long long)header_len,
                   (unsigned long long)file_size);
  header = malloc(header_len + 1);
  if (!header)
    return rs__err(errmsg, RS_ENOMEM, "%s: out of memory for the header", path);
  if (fread(header, 1, header_len, f) != header_len) {
    rc = rs__err(errmsg, RS_EIO, "%s: cannot read the header", path);
    goto done;
  }
  json_error_t jerr;
  root = json_loadb(header, header_len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root || !json_is_object(root)) {
    rc = rs__err(errmsg, RS_EPARSE, "%s: bad header: %s", path,
                 root ? "not a JSON object" : jerr.text);
    goto done;
  }
  uint64_t data_start = 8 + header_len;
  const st_header_t h = {root, file_size - data_start, path, errmsg};
  size_t count = rs_model_param_count(model);
  begins = malloc((count + 1) * sizeof *begins);
  if (!begins) {
    rc = rs__err(errmsg, RS_ENOMEM, "%s: out of memory for the header", path);
    goto done;
  }
  /* The model's tensors first (a missing or misshapen one is what a user
   * most needs to hear of), then the layout of all, then the data. */
  for (size_t i = 0; i < count; i++) {
    const rs_param_t *p = rs_model_param(model, i);
    json_t *t = json_object_get(root, p->name);
    if (!t) {
      rc =
          rs__err(errmsg, RS_EPARSE, "%s: no tensor \"%.100s\"", path, p->name);
      goto done;
    }
    rc = check_tensor(&h, t, p, rs_model_dtype(model), &begins[i]);
    if (rc)
      goto done;
  }
  rc = check_layout(&h);
  if (rc)
    goto done;
  for (size_t i = 0; i < count; i++) {
    const rs_param_t *p = rs_model_param(model, i);
    if (p->elems == 0)
      continue;
    if (fseeko(f, (off_t)(data_start + begins[i]), SEEK_SET) != 0 ||
        read_elems(f, rs_model_dtype(model),
                   (unsigned char *)data +
                       p->elem_offset *
                           rs_dtype_buffer_size(rs_model_dtype(model)),
                   p->elems) != 0) {
      rc = rs__err(errmsg, RS_EIO, "%s: cannot read tensor \"%.100s\"", path,
                   p->name);
      goto done;
    }
  }
done:
  free(begins);
  json_decref(root);
  free(header);
  return rc;
}

int rs_safetensors_read(const char *path, const rs_model_t *model, void *data,
                        char *errmsg) {
  char qpath[RS_QUOTE_MAX + 16]; /* the name as messages quote it */
  rs_quote_path(path, qpath, sizeof qpath);
  FILE *f = rs__fopen_read(path);
  struct stat st;
  if (!f)
    return rs__err(errmsg, RS_EIO, "%s: cannot open: %s", qpath,
                   strerror(errno));
  int rc;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
    rc = rs__err(errmsg, RS_EIO, "%s: not a regular file", qpath);
  else
    rc = rs__safetensors_read_stream(f, (uint64_t)st.st_size, path, model, data,
                                     errmsg);
  fclose(f);
  return rc;
}

static json_t *make_header(const rs_model_t *model) {
  json_t *root = json_object();
  json_t *meta = json_pack("{s:s, s:s}", "format", "pt", "producer",
                           "ringsim " RS_VERSION);
  if (!root || !meta || json_object_set_new(root, "__metadata__", meta)) {
    json_decref(root);
    return NULL;
  }
  for (size_t i = 0; i < rs_model_param_count(model); i++) {
    const rs_param_t *p = rs_model_param(model, i);
    json_t *shape = json_array();
    for (int d = 0; shape && d < p->ndim; d++)
      json_array_append_new(shape, json_integer(p->shape[d]));
    size_t size = rs_dtype_size(rs_model_dtype(model));
    json_int_t begin = (json_int_t)(p->elem_offset * size);
    json_int_t end = begin + (json_int_t)(p->elems * size);
    json_t *t = json_pack("{s:s, s:o, s:[I,I]}", "dtype",
                          st_dtype(rs_model_dtype(model)), "shape", shape,
                          "data_offsets", begin, end);
    if (!t || json_object_set_new(root, p->name, t)) {
      json_decref(root);
      return NULL;
    }
  }
  return root;
}

int rs_safetensors_write(const char *path, const rs_model_t *model,
                         const void *data, char *errmsg) {
  return rs_safetensors_write_cancellable(path, model, data, NULL, errmsg);
}

int rs_safetensors_write_cancellable(const char *path, const rs_model_t *model,
                                     const void *data,
                                     const rs_stop_flag_t *cancel,
                                     char *errmsg) {
  json_t *header = make_header(model);
  char *text = header ? json_dumps(header, JSON_COMPACT) : NULL;
  json_decref(header);
  if (!text)
    return rs__err(errmsg, RS_ENOMEM, "%s: out of memory", path);
  /* Pad the header with spaces so the data starts 8-byte aligned, as the
   * reference implementation does. */
  size_t len = strlen(text);
  size_t padded = (len + 7) & ~(size_t)7;

  /* The temporary file: the name and ".tmp.XXXXXX" beside it, the name cut
   * so that the whole fits in a directory entry (a legal 250-byte name
   * must not fail for its temporary's 261). */
  enum { TMP_SUFFIX = sizeof ".tmp.XXXXXX" - 1 };
  const char *slash = strrchr(path, '/');
  size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
  size_t name_len = strlen(path + dir_len);
  if (name_len > NAME_MAX - TMP_SUFFIX)
    name_len = NAME_MAX - TMP_SUFFIX;
  char tmp[PATH_MAX];
  int rc = RS_OK;
  if (snprintf(tmp, sizeof tmp, "%.*s.tmp.XXXXXX", (int)(dir_len + name_len),
               path) >= (int)sizeof tmp) {
    free(text);
    return rs__err(errmsg, RS_EINVAL, "%.200s: path too long", path);
  }
  int fd = mkstemp(tmp);
  if (fd < 0) {
    free(text);
    return rs__err(errmsg, RS_EIO, "%s: cannot create: %s", path,
                   strerror(errno));
  }
  fchmod(fd, 0644); /* mkstemp makes 0600; an output file is for sharing */
  FILE *f = fdopen(fd, "wb");
  unsigned char len_bytes[8];
  for (int i = 0; i < 8; i++)
    len_bytes[i] = (unsigned char)((uint64_t)padded >> (8 * i));
  size_t elems = rs_model_elems(model);
  int ok =
      f && fwrite(len_bytes, 1, 8, f) == 8 && fwrite(text, 1, len, f) == len;
  for (size_t i = len; ok && i < padded; i++)
    ok = fputc(' ', f) != EOF;
  int written = ok ? write_elems(f, rs_model_dtype(model), data, elems, cancel)
                   : -1;
  int saved_errno = errno;
  ok = written == 0;
  if (f ? fclose(f) != 0 : close(fd) != 0)
    ok = 0;
  int cancelled = written == 1 || cancel_asked(cancel);
  if (ok && !cancelled && rename(tmp, path) != 0) {
    saved_errno = errno;
    ok = 0;
  }
  if (cancelled) {
    unlink(tmp);
    rc = rs__err(errmsg, RS_EINTERRUPTED, "%s: not written: interrupted",
                 path);
  } else if (!ok) {
    unlink(tmp);
    rc = rs__err(errmsg, RS_EIO, "%s: cannot write: %s", path,
                 strerror(saved_errno));
  }
  free(text);
  return rc;
}
