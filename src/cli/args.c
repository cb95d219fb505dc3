/* args.c - what every mode of the ringsim command says and reads the same
 * way: the usage error, the one number reader (integers, sizes), the
 * messages of a bad value, and the algorithm names the library's table
 * gives --algo. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "option.h"

int cli_usage_error(const char *fmt, ...) {
  char message[RS_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  /* A mode's message starts with its name: point at its own help. */
  const char *help = strncmp(message, "bench: ", 7) == 0   ? "bench "
                     : strncmp(message, "model: ", 7) == 0 ? "model "
                     : strncmp(message, "diff: ", 6) == 0  ? "diff "
                     : strncmp(message, "step: ", 6) == 0  ? "step "
                                                           : "";
  rs_one_line(message); /* the argument may hold ESC, CR, LF */
  fprintf(stderr, "ringsim: %s (see ringsim %s--help)\n", message, help);
  return EXIT_USAGE;
}

int cli_refuse(cli_mode_t mode, const char *fmt, ...) {
  char message[RS_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof message, fmt, ap);
  va_end(ap);
  return cli_usage_error("%s%s", cli_mode_prefix(mode), message);
}

const char *cli_mode_prefix(cli_mode_t mode) {
  static const char *const prefix[CLI_MODES] = {[CLI_RUN] = "",
                                                [CLI_BENCH] = "bench: ",
                                                [CLI_MODEL] = "model: ",
                                                [CLI_DIFF] = "diff: ",
                                                [CLI_STEP] = "step: "};
  return (unsigned)mode < CLI_MODES ? prefix[mode] : "";
}

int cli_read_size(const char *text, size_t min, size_t max, size_t *out) {
  long long v;
  const char *end;
  if (rs_read_digits(text, &v, &end))
    return -1;
  unsigned shift = 0;
  switch (*end) {
  case 'K':
  case 'k':
    shift = 10;
    break;
  case 'M':
  case 'm':
    shift = 20;
    break;
  case 'G':
  case 'g':
    shift = 30;
    break;
  }
  end += shift != 0;
  if (*end || (unsigned long long)v > (unsigned long long)max >> shift)
    return -1;
  size_t bytes = (size_t)v << shift;
  if (bytes < min)
    return -1;
  *out = bytes;
  return 0;
}

int cli_bad_value(char *msg, const cli_option_t *opt, const char *value,
                  const char *fmt, ...) {
  char quoted[RS_QUOTE_MAX + 16]; /* (a long value: its start, and "...") */
  rs_excerpt(value, 0, 0, quoted, sizeof quoted);
  int n =
      snprintf(msg, RS_ERRMSG_MAX, "--%s '%s': expected ", opt->name, quoted);
  va_list ap;
  va_start(ap, fmt);
  if (n > 0 && n < RS_ERRMSG_MAX)
    vsnprintf(msg + n, RS_ERRMSG_MAX - (size_t)n, fmt, ap);
  va_end(ap);
  return -1;
}

void cli_expect_int(long min, long max, char *buf, size_t size) {
  snprintf(buf, size, "an integer in %ld..%ld", min, max);
}

/* A size as a help text writes it: 1G, 64M, 256K, or bytes. */
static void size_text(size_t bytes, char *buf, size_t size) {
  static const char units[] = "GMK";
  for (int i = 0; i < 3; i++) {
    size_t unit = (size_t)1 << (10 * (3 - i));
    if (bytes >= unit && bytes % unit == 0) {
      snprintf(buf, size, "%zu%c", bytes / unit, units[i]);
      return;
    }
  }
  snprintf(buf, size, "%zu", bytes);
}

void cli_expect_size(size_t min, size_t max, char *buf, size_t size) {
  char lo[32], hi[32];
  size_text(min, lo, sizeof lo);
  size_text(max, hi, sizeof hi);
  snprintf(buf, size, "a size from %s to %s (K, M, G suffixes)", lo, hi);
}

int cli_algo_takes_auto(cli_mode_t mode) {
  return mode != CLI_MODEL && mode != CLI_STEP;
}

int cli_algo_takes_all(cli_mode_t mode) {
  return mode == CLI_MODEL || mode == CLI_BENCH || mode == CLI_STEP;
}

void cli_algo_names(cli_mode_t mode, int help, char *buf, size_t size) {
  rs_config_t defaults;
  rs_config_init(&defaults);
  const char *last[2];
  int extra = 0;
  if (cli_algo_takes_auto(mode))
    last[extra++] = rs_algorithm_name(RS_ALGO_AUTO);
  if (cli_algo_takes_all(mode))
    last[extra++] = "all";
  size_t len = 0;
  buf[0] = '\0';
  int names = RS_ALGO_COUNT + (help ? 0 : extra);
  for (int i = 0; i < names && len < size; i++) {
    const char *name = i < RS_ALGO_COUNT ? rs_algorithm_name((rs_algorithm_t)i)
                                         : last[i - RS_ALGO_COUNT];
    const char *sep = i == 0 ? "" : i == names - 1 && !help ? " or " : ", ";
    len +=
        (size_t)snprintf(buf + len, size - len, "%s%s%s", sep, name,
                         help && i == (int)defaults.algo ? " (default)" : "");
  }
}
