/* outcheck.c - a run's --out, refused before anything runs when any name
 * it will write cannot be written or would replace an input.
 *
 * The names --out writes: its text as given, or, with --hook powersgd
 * over --iterations K, each step's name where it holds {s} (step 1 to K).
 * The inputs: the model file, every grads file (each step's {s} and each
 * worker's {r}), every Q file (q=FILE, each step's {s}), and the trace
 * with its -wal, -shm and -journal files. An input that exists is known by
 * its identity (device and inode), so a link, "./x" and "x" are one file;
 * a name not yet made (the trace's side files) by its directory's identity
 * and its last name, as the file about to be made would be.
 *
 * Cost: one stat a name. The inputs' identities are sorted once, and each
 * output looked up among them, so K steps of W workers cost O(KW log KW),
 * not K times KW comparisons.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "ringsim/ringsim.h"

/* One input file, as found: what it is, for the message. */
typedef struct {
  dev_t dev;
  ino_t ino;
  int kind; /* INPUT_* */
  int step; /* 1..K where its name came from {s}, else 0 */
  int worker;
  char *path;
} input_t;

enum { INPUT_MODEL, INPUT_GRADS, INPUT_Q, INPUT_TRACE };

typedef struct input_list {
  input_t *item;
  size_t count, cap;
  int oom;
} inputs_t;

/* Add path as an input if it exists (an input that does not is refused
 * where it is read). */
static void add_input(inputs_t *in, const char *path, int kind, int step,
                      int worker) {
  struct stat st;
  if (in->oom || stat(path, &st) != 0)
    return;
  if (in->count == in->cap) {
    size_t cap = in->cap ? 2 * in->cap : 16;
    input_t *grown = realloc(in->item, cap * sizeof *grown);
    if (!grown) {
      in->oom = 1;
      return;
    }
    in->item = grown, in->cap = cap;
  }
  char *copy = strdup(path);
  if (!copy) {
    in->oom = 1;
    return;
  }
  in->item[in->count++] = (input_t){st.st_dev, st.st_ino, kind, step, worker,
                                    copy};
}

static int by_identity(const void *a, const void *b) {
  const input_t *x = a, *y = b;
  if (x->dev != y->dev)
    return x->dev < y->dev ? -1 : 1;
  if (x->ino != y->ino)
    return x->ino < y->ino ? -1 : 1;
  return 0;
}

static void free_inputs(inputs_t *in) {
  for (size_t i = 0; i < in->count; i++)
    free(in->item[i].path);
  free(in->item);
}

/* pattern with each {s} replaced by step; 0, or -1 if out is too small. */
int cli_step_path(const char *pattern, int step, char *out, size_t size) {
  size_t len = 0;
  char text[16];
  const int text_len = snprintf(text, sizeof text, "%d", step);
  for (const char *c = pattern; *c; c++) {
    const char *piece = c;
    size_t piece_len = 1;
    if (strncmp(c, "{s}", 3) == 0) {
      piece = text, piece_len = (size_t)text_len;
      c += 2;
    }
    if (len + piece_len >= size)
      return -1;
    memcpy(out + len, piece, piece_len);
    len += piece_len;
  }
  out[len] = '\0';
  return 0;
}

/* The steps whose names a {s} pattern takes: 1..K with --hook powersgd,
 * else none (the text is used as given). */
static int pattern_steps(const options_t *o, const char *pattern) {
  if (o->config.hook != RS_HOOK_POWERSGD || !strstr(pattern, "{s}"))
    return 0;
  return o->step.iterations > 1 ? o->step.iterations : 1;
}

/* Every grads file of step s (0: the pattern as given), each worker's. */
static void add_grads(inputs_t *in, const options_t *o, int s) {
  char path[PATH_MAX], rank_path[PATH_MAX];
  if (s ? cli_step_path(o->grads, s, path, sizeof path)
        : snprintf(path, sizeof path, "%s", o->grads) >= (int)sizeof path)
    return;
  for (int w = 0; w < o->config.workers; w++)
    if (rs_grads_path(path, w, rank_path, sizeof rank_path) == RS_OK)
      add_input(in, rank_path, INPUT_GRADS, s, w);
}

static void gather_inputs(inputs_t *in, const options_t *o) {
  add_input(in, o->params, INPUT_MODEL, 0, 0);
  if (o->grads) {
    int K = pattern_steps(o, o->grads);
    for (int s = K ? 1 : 0; s <= K; s++)
      add_grads(in, o, s);
  }
  if (o->powersgd_q && o->config.hook == RS_HOOK_POWERSGD) {
    char path[PATH_MAX];
    int K = pattern_steps(o, o->powersgd_q);
    for (int s = K ? 1 : 0; s <= K; s++)
      if (s ? !cli_step_path(o->powersgd_q, s, path, sizeof path)
            : snprintf(path, sizeof path, "%s", o->powersgd_q) <
                  (int)sizeof path)
        add_input(in, path, INPUT_Q, s, 0);
  }
  if (o->trace)
    add_input(in, o->trace, INPUT_TRACE, 0, 0);
  qsort(in->item, in->count, sizeof *in->item, by_identity);
}

/* "--out 'o{s}.st' (step 2's 'o2.st')" or "--out 'o.st'", into buf. */
static const char *out_name(const options_t *o, const char *path, int step,
                            char *buf, size_t size) {
  char out[RS_QUOTE_MAX + 16], name[RS_QUOTE_MAX + 16];
  rs_quote_path(o->out, out, sizeof out);
  if (step)
    snprintf(buf, size, "--out '%s' (step %d's '%s')", out, step,
             rs_quote_path(path, name, sizeof name));
  else
    snprintf(buf, size, "--out '%s'", out);
  return buf;
}

/* Names as a message quotes them (rs_quote_path): a long one cut at its
 * start, so the line still says what is wrong. */
typedef char quoted_t[RS_QUOTE_MAX + 16];
#define QUOTE(text, buf) rs_quote_path((text), (buf), sizeof(buf))

static int refuse_input(const options_t *o, const char *name,
                        const input_t *in) {
  char what[4 * RS_QUOTE_MAX], step[32] = "";
  quoted_t a, b;
  if (in->step)
    snprintf(step, sizeof step, "step %d's ", in->step);
  switch (in->kind) {
  case INPUT_MODEL:
    snprintf(what, sizeof what, "the model file (--params '%s')",
             QUOTE(o->params, a));
    break;
  case INPUT_GRADS:
    snprintf(what, sizeof what, "%sworker %d's grads file '%s' (--grads '%s')",
             step, in->worker, QUOTE(in->path, a), QUOTE(o->grads, b));
    break;
  case INPUT_Q:
    snprintf(what, sizeof what, "%sQ file '%s' (--hook ...,q=%s)",
             in->step ? step : "the ", QUOTE(in->path, a),
             QUOTE(o->powersgd_q, b));
    break;
  default:
    snprintf(what, sizeof what, "the trace (--trace '%s')",
             QUOTE(o->trace, a));
  }
  return cli_usage_error("%s is %s: refusing to overwrite it", name, what);
}

/* Do a and b, neither of which exists, name one file to be made: the same
 * last name in the same directory? */
static int same_new_file(const char *a, const char *b) {
  char da[PATH_MAX], db[PATH_MAX], na[PATH_MAX], nb[PATH_MAX];
  struct stat sa, sb;
  if (snprintf(da, sizeof da, "%s", a) >= (int)sizeof da ||
      snprintf(db, sizeof db, "%s", b) >= (int)sizeof db ||
      stat(a, &sa) == 0 || stat(b, &sb) == 0)
    return 0;
  memcpy(na, da, sizeof na);
  memcpy(nb, db, sizeof nb);
  return strcmp(basename(na), basename(nb)) == 0 &&
         stat(dirname(da), &sa) == 0 && stat(dirname(db), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* path with its symbolic links followed into out, the last one too where
 * its target does not exist yet (SQLite creates a trace through a
 * dangling link: the file it makes is the link's target). 1 if path was
 * a link, else 0 (out untouched). */
static int follow_links(const char *path, char *out, size_t size) {
  char at[PATH_MAX], target[PATH_MAX];
  struct stat st;
  if (snprintf(at, sizeof at, "%s", path) >= (int)sizeof at)
    return 0;
  int links = 0;
  while (links < 40 && lstat(at, &st) == 0 && S_ISLNK(st.st_mode)) {
    ssize_t n = readlink(at, target, sizeof target - 1);
    if (n < 0)
      return 0;
    target[n] = '\0';
    if (target[0] != '/') { /* relative to the link's own directory */
      char dir[PATH_MAX];
      memcpy(dir, at, sizeof dir);
      if (snprintf(at, sizeof at, "%s/%s", dirname(dir), target) >=
          (int)sizeof at)
        return 0;
    } else if (snprintf(at, sizeof at, "%s", target) >= (int)sizeof at) {
      return 0;
    }
    links++;
  }
  if (!links || snprintf(out, size, "%s", at) >= (int)size)
    return 0;
  return 1;
}

/* Is path the trace or one of SQLite's files beside it (beside the file
 * its path resolves to, through links, too)? Returns -1, or EXIT_USAGE
 * having said so. */
static int check_trace_sides(const options_t *o, const char *path,
                             const char *name) {
  static const char *const sides[] = {"", "-wal", "-shm", "-journal"};
  static const char *const said[] = {"", "'s write-ahead log",
                                     "'s shared-memory index",
                                     "'s rollback journal"};
  char real[PATH_MAX];
  const char *traces[2] = {o->trace, NULL};
  if (!o->trace)
    return -1;
  if (follow_links(o->trace, real, sizeof real))
    traces[1] = real;
  struct stat out_st;
  const int out_exists = stat(path, &out_st) == 0;
  for (int t = 0; t < 2 && traces[t]; t++)
    for (size_t i = 0; i < sizeof sides / sizeof *sides; i++) {
      char side[PATH_MAX];
      struct stat st;
      if (snprintf(side, sizeof side, "%s%s", traces[t], sides[i]) >=
          (int)sizeof side)
        continue;
      int same = out_exists ? stat(side, &st) == 0 &&
                                  st.st_dev == out_st.st_dev &&
                                  st.st_ino == out_st.st_ino
                            : same_new_file(path, side);
      quoted_t trace;
      if (same)
        return cli_usage_error("%s is the trace%s (--trace '%s'): refusing "
                               "to overwrite it",
                               name, said[i], QUOTE(o->trace, trace));
    }
  return -1;
}

/* The most bytes path's last name may have in its directory, if it has
 * more (else the write after the run fails, "File name too long"); else
 * 0. */
static long name_too_long(const char *path, size_t *name_len) {
  char copy[PATH_MAX], dir[PATH_MAX];
  if (snprintf(copy, sizeof copy, "%s", path) >= (int)sizeof copy)
    return 0; /* (too long a path: said when it is created) */
  memcpy(dir, copy, sizeof dir);
  long name_max = pathconf(dirname(dir), _PC_NAME_MAX);
  *name_len = strlen(basename(copy));
  return name_max > 0 && *name_len > (size_t)name_max ? name_max : 0;
}

/* Can a file be made at path: not a directory or a device, in a
 * directory we may write, its name not too long? Returns -1, or
 * EXIT_USAGE having said why not. */
static int check_writable(const char *path, const char *name) {
  char copy[PATH_MAX];
  struct stat st;
  size_t len = strlen(path), name_len;
  if (len == 0)
    return cli_usage_error("%s: an empty file name", name);
  if (path[len - 1] == '/')
    return cli_usage_error("%s: names a directory, not a file", name);
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return cli_usage_error("%s: is a directory", name);
  if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
    return cli_usage_error("%s: not a regular file", name);
  if (snprintf(copy, sizeof copy, "%s", path) >= (int)sizeof copy)
    return cli_usage_error("%s: path too long", name);
  if (access(dirname(copy), W_OK) != 0)
    return cli_usage_error("%s: cannot create a file there", name);
  long name_max = name_too_long(path, &name_len);
  if (name_max)
    return cli_usage_error("%s: its file name is %zu bytes, more than the "
                           "%ld its directory allows",
                           name, name_len, name_max);
  return -1;
}

/* One name --out writes, against everything. */
static int check_one(const options_t *o, const inputs_t *in, const char *path,
                     int step) {
  char name[3 * RS_QUOTE_MAX];
  struct stat st;
  int rc;
  out_name(o, path, step, name, sizeof name);
  if ((rc = check_writable(path, name)) >= 0)
    return rc;
  if (stat(path, &st) == 0) {
    input_t key = {.dev = st.st_dev, .ino = st.st_ino};
    const input_t *hit =
        bsearch(&key, in->item, in->count, sizeof *in->item, by_identity);
    if (hit)
      return refuse_input(o, name, hit);
  }
  return check_trace_sides(o, path, name);
}

int cli_check_out(const options_t *o) {
  if (!o->out)
    return -1;
  inputs_t in = {0};
  gather_inputs(&in, o);
  int rc = -1;
  if (in.oom) {
    fprintf(stderr, "ringsim: --out '%s': out of memory listing the inputs\n",
            o->out);
    rc = EXIT_RUN;
  }
  const int K = pattern_steps(o, o->out);
  char path[PATH_MAX];
  for (int s = K ? 1 : 0; rc < 0 && s <= K; s++) {
    if (s && cli_step_path(o->out, s, path, sizeof path)) {
      quoted_t out;
      rc = cli_usage_error("--out '%s': path too long", QUOTE(o->out, out));
      break;
    }
    rc = check_one(o, &in, s ? path : o->out, s);
  }
  free_inputs(&in);
  return rc;
}
