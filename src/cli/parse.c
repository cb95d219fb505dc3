/* parse.c - a command line read through the option table, the same way in
 * every mode: the same spellings (as getopt_long takes them), and one
 * message for each mistake, whatever the mode (with its name first, and
 * its own --help named last):
 *
 *   unknown option '--bogus'
 *   option '--s' is ambiguous: --seed, --segment-bytes, --slots, ...
 *   --iters does not apply to a run       (another mode's option)
 *   option '--workers' needs a value
 *   option '--json' takes no value
 *   --trace and --no-trace contradict each other
 *   --slots '0': expected an integer in 1..1024
 *   unexpected argument 'extra'
 *
 * An option is named by its long name, however it was written (-n 0,
 * --iters=0 and --it 0 are one mistake, one message). An option given
 * again replaces its value, as getopt's callers do (the last one wins,
 * a list whole), but the repeatable ones (--inject), which add to it.
 * `ringsim diff`'s A,B values are split here too, so each side's value is
 * read as a run reads it.
 */
#include <stdio.h>
#include <string.h>

#include "option.h"

typedef struct walk {
  cli_mode_t mode;
  options_t *side[CLI_DIFF_MAX];
  int sides;      /* diff's: CLI_DIFF_MAX (two->sides of them used) */
  cli_two_t *two; /* diff's, else NULL */
  char *arena;    /* the rest of two->arena */
  /* diff: each option's values as last given A,B,... (n 0: not so), and
   * the options in the order they were first given so */
  int n[OPT_COUNT];
  const char *v[OPT_COUNT][CLI_DIFF_MAX];
  const char *text[OPT_COUNT]; /* A,B,... as given */
  int order[OPT_COUNT];
  int ordered;
} walk_t;

/* What each mode's options are about, for another mode's option. */
static const char *const what_mode_is[CLI_MODES] = {
    [CLI_RUN] = "a run",
    [CLI_BENCH] = "a sweep",
    [CLI_MODEL] = "the schedule alone",
    [CLI_DIFF] = "a comparison",
    [CLI_STEP] = "a training step"};

static int refuse_elsewhere(const walk_t *w, const cli_option_t *opt) {
  return cli_refuse(w->mode, "--%s does not apply to %s", opt->name,
                    what_mode_is[w->mode]);
}

/* A foreign flag of the mode (cli_foreign: letter c, or the long name
 * name[0..len)), refused saying why; 0 if it is none. */
static int refuse_foreign(const walk_t *w, char c, const char *name,
                          size_t len) {
  for (const cli_foreign_t *f = cli_foreign; f->letter || f->name; f++)
    if (f->mode == w->mode &&
        (c ? f->letter == c
           : strlen(f->name) == len && strncmp(f->name, name, len) == 0)) {
      if (c)
        cli_refuse(w->mode, "-%c (nccl-tests' --%s) %s", c, f->name, f->why);
      else
        cli_refuse(w->mode, "--%s (nccl-tests' -%c) %s", f->name, f->letter,
                   f->why);
      return 1;
    }
  return 0;
}

/* The option named name[0..len), as getopt_long finds it: the exact
 * name (the mode's, where two modes' options share it), or else the one
 * option of the mode that it abbreviates. NULL if none (said). */
static const cli_option_t *find_long(const walk_t *w, const char *name,
                                     size_t len) {
  const cli_option_t *elsewhere = NULL;
  for (int i = 0; i < OPT_COUNT; i++)
    if (strlen(cli_options[i].name) == len &&
        strncmp(cli_options[i].name, name, len) == 0) {
      if (cli_options[i].modes & CLI_IN(w->mode))
        return &cli_options[i];
      elsewhere = elsewhere ? elsewhere : &cli_options[i];
    }
  if (refuse_foreign(w, 0, name, len))
    return NULL;
  if (elsewhere) {
    refuse_elsewhere(w, elsewhere);
    return NULL;
  }
  const cli_option_t *found = NULL;
  char names[RS_ERRMSG_MAX] = "";
  size_t n = 0, count = 0;
  for (int i = 0; i < OPT_COUNT && len > 0; i++) {
    if (!(cli_options[i].modes & CLI_IN(w->mode)) ||
        strncmp(cli_options[i].name, name, len) != 0)
      continue;
    found = &cli_options[i];
    count++;
    if (n < sizeof names)
      n += (size_t)snprintf(names + n, sizeof names - n, "%s--%s",
                            count > 1 ? ", " : "", found->name);
  }
  if (count == 1)
    return found;
  if (count > 1)
    cli_refuse(w->mode, "option '--%.*s' is ambiguous: %s", (int)len, name,
               names);
  else
    cli_refuse(w->mode, "unknown option '--%.*s'", (int)len, name);
  return NULL;
}

/* The option of letter c in the mode (a letter may be one mode's alone:
 * letter_modes), or NULL (said). */
static const cli_option_t *find_short(const walk_t *w, char c) {
  const cli_option_t *elsewhere = NULL;
  for (int i = 0; i < OPT_COUNT; i++) {
    const cli_option_t *opt = &cli_options[i];
    if (opt->letter != c)
      continue;
    unsigned modes = opt->letter_modes ? opt->letter_modes : opt->modes;
    if (modes & opt->modes & CLI_IN(w->mode))
      return opt;
    if (!opt->letter_modes)
      elsewhere = elsewhere ? elsewhere : opt;
  }
  if (refuse_foreign(w, c, NULL, 0))
    return NULL;
  if (elsewhere)
    refuse_elsewhere(w, elsewhere);
  else
    cli_refuse(w->mode, "unknown option '-%c'", c);
  return NULL;
}

/* A copy of text[0..len) in the walk's arena. */
static char *keep(walk_t *w, const char *text, size_t len) {
  char *copy = w->arena;
  memcpy(copy, text, len);
  copy[len] = '\0';
  w->arena += len + 1;
  return copy;
}

size_t cli_two_room(int argc, char **argv) {
  size_t size = 1;
  for (int i = 0; i < argc; i++)
    size += strlen(argv[i]) + 2;
  return size;
}

/* Side k's label gets " --NAME value" (an option given as A,B). */
static void label_add(walk_t *w, int k, const char *name, const char *value) {
  char *label = w->two->label[k];
  size_t len = strlen(label);
  snprintf(label + len, sizeof w->two->label[k] - len, " --%s %s", name, value);
}

/* diff: the options given as A,B,... (their last values) into two: how
 * many, how many sides, the first, and each side's label (--dtype's
 * last). Every one gives as many values, or it is refused: -1 to go on,
 * or the exit status. */
static int two_finish(walk_t *w) {
  cli_two_t *two = w->two;
  two->count = two->sides = 0;
  two->first = NULL;
  for (int i = 0; i < w->ordered; i++) {
    const int id = w->order[i];
    if (!w->n[id])
      continue;
    if (two->first && w->n[id] != two->sides)
      return cli_refuse(w->mode,
                        "--%s %.60s: %d values, where --%s gave %d: each "
                        "option given so gives one value per side",
                        cli_options[id].name, w->text[id], w->n[id],
                        two->first, two->sides);
    two->count++;
    two->sides = w->n[id];
    two->first = two->first ? two->first : cli_options[id].name;
  }
  for (int last = 0; last < 2; last++)
    for (int i = 0; i < w->ordered; i++) {
      const int id = w->order[i];
      if (w->n[id] && (id == OPT_DTYPE) == last)
        for (int k = 0; k < w->n[id]; k++)
          label_add(w, k, cli_options[id].name, w->v[id][k]);
    }
  return -1;
}

/* diff: value "A,B[,C...]" of opt: A to side 0, B to side 1, and so on. */
static int set_two(walk_t *w, const cli_option_t *opt, const char *value) {
  const char *v[CLI_DIFF_MAX];
  int n = 0;
  for (const char *at = value;; n++) {
    const char *comma = strchr(at, ',');
    size_t len = comma ? (size_t)(comma - at) : strlen(at);
    if (len == 0 || n == CLI_DIFF_MAX)
      return cli_refuse(w->mode,
                        "--%s '%.100s': expected two to %d values A,B,...",
                        opt->name, value, CLI_DIFF_MAX);
    v[n] = keep(w, at, len);
    if (!comma) {
      n++;
      break;
    }
    at = comma + 1;
  }
  for (int k = 1; k < n && (opt->flags & CLI_DIFF_SAME); k++)
    if (strcmp(v[0], v[k]) != 0)
      return cli_refuse(w->mode, "--%s %.60s: %s", opt->name, value,
                        opt->diff_why);
  if (opt->flags & CLI_DIFF_SAME) { /* one value, on every side */
    char msg[RS_ERRMSG_MAX];
    for (int k = 0; k < w->sides; k++)
      if (opt->set(opt, w->side[k], v[0], msg))
        return cli_refuse(w->mode, "%s", msg);
    return -1;
  }
  const int id = (int)(opt - cli_options);
  int seen = 0;
  for (int i = 0; i < w->ordered; i++)
    seen |= w->order[i] == id;
  if (!seen)
    w->order[w->ordered++] = id;
  w->n[id] = n;
  w->text[id] = value;
  for (int k = 0; k < n; k++)
    w->v[id][k] = v[k];
  char msg[RS_ERRMSG_MAX];
  for (int k = 0; k < n; k++)
    if (opt->set(opt, w->side[k], v[k], msg))
      return cli_refuse(w->mode, "%s", msg);
  return -1;
}

/* opt given, with value (NULL for a flag): stored on every side. Returns
 * -1 to go on, or the exit status. */
static int take(walk_t *w, const cli_option_t *opt, const char *value) {
  const int id = (int)(opt - cli_options);
  /* given again: this value replaces the last (a list whole; diff's A,B
   * too), as the setters store it (those of CLI_REPEAT add to it) */
  for (int k = 0; k < w->sides; k++)
    w->side[k]->given[id] = 1;
  w->n[id] = 0;
  if (id == OPT_HELP) {
    cli_print_help(w->mode);
    return 0;
  }
  if (id == OPT_VERSION) {
    printf("ringsim %s\n", RS_VERSION);
    return 0;
  }
  /* (diff would split powersgd:rank=R,start=S at its commas, and name a
   * piece of it: the hook is refused whole, as one run cannot hold it) */
  if (w->mode == CLI_DIFF && id == OPT_HOOK && value &&
      strstr(value, "powersgd:"))
    return cli_refuse(w->mode,
                      "--hook '%.100s': powersgd all-reduces three times a "
                      "bucket, each a run of its own: the ringsim command's "
                      "--hook powersgd, not diff's sides",
                      value);
  if (w->two && value && (opt->flags & (CLI_DIFF_TWO | CLI_DIFF_SAME)) &&
      strchr(value, ','))
    return set_two(w, opt, value);
  char msg[RS_ERRMSG_MAX];
  for (int k = 0; k < w->sides; k++)
    if (opt->set(opt, w->side[k], value, msg))
      return cli_refuse(w->mode, "%s", msg);
  return -1;
}

/* argv[*i], "--name[=value]": its option taken (with argv[*i + 1] as its
 * value, if it needs one and has no "="). */
static int take_long(walk_t *w, int argc, char **argv, int *i) {
  const char *name = argv[*i] + 2, *eq = strchr(name, '=');
  size_t len = eq ? (size_t)(eq - name) : strlen(name);
  const cli_option_t *opt = find_long(w, name, len);
  if (!opt)
    return EXIT_USAGE;
  if (!opt->metavar && eq)
    return cli_refuse(w->mode, "option '--%s' takes no value", opt->name);
  const char *value = eq ? eq + 1 : NULL;
  if (opt->metavar && !value) {
    if (*i + 1 >= argc)
      return cli_refuse(w->mode, "option '--%s' needs a value", opt->name);
    value = argv[++*i];
  }
  return take(w, opt, value);
}

/* argv[*i], "-x", "-xVALUE" or flags together ("-hV"). */
static int take_short(walk_t *w, int argc, char **argv, int *i) {
  for (const char *c = argv[*i] + 1; *c; c++) {
    const cli_option_t *opt = find_short(w, *c);
    if (!opt)
      return EXIT_USAGE;
    const char *value = NULL;
    if (opt->metavar) {
      if (c[1])
        value = c + 1;
      else if (*i + 1 < argc)
        value = argv[++*i];
      else
        return cli_refuse(w->mode, "option '--%s' needs a value", opt->name);
    }
    int rc = take(w, opt, value);
    if (rc >= 0 || value)
      return rc;
  }
  return -1;
}

int cli_walk(cli_mode_t mode, int argc, char **argv, options_t *o,
             cli_two_t *two) {
  walk_t w = {.mode = mode,
              .side = {o},
              .sides = two ? CLI_DIFF_MAX : 1,
              .two = two,
              .arena = two ? two->arena : NULL};
  if (two) {
    two->count = two->sides = 0;
    two->first = NULL;
    for (int k = 0; k < CLI_DIFF_MAX; k++) {
      snprintf(two->label[k], sizeof two->label[k], "%c:", 'A' + k);
      if (k)
        w.side[k] = two->side[k];
    }
  }
  char msg[RS_ERRMSG_MAX];
  for (int k = 0; k < w.sides; k++)
    if (cli_test_knobs(&w.side[k]->config, msg))
      return cli_refuse(mode, "%s", msg);
  const char *extra = NULL; /* the first argument that is no option */
  int options_end = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    int rc = -1;
    if (options_end || arg[0] != '-' || arg[1] == '\0')
      extra = extra ? extra : arg;
    else if (strcmp(arg, "--") == 0)
      options_end = 1;
    else if (arg[1] == '-')
      rc = take_long(&w, argc, argv, &i);
    else
      rc = take_short(&w, argc, argv, &i);
    if (rc >= 0)
      return rc;
  }
  if (extra)
    return cli_refuse(mode, "unexpected argument '%s'", extra);
  if (o->given[OPT_TRACE] && o->given[OPT_NO_TRACE])
    return cli_refuse(mode, "--trace and --no-trace contradict each other");
  /* nccl-tests' -f 1: step by -i's bytes instead, 1M unless given */
  if (o->bench.factor == 1 && !o->bench.step_bytes)
    o->bench.step_bytes = (size_t)1 << 20;
  return two ? two_finish(&w) : -1;
}
