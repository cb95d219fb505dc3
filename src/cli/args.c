/* args.c - what the ringsim command's modes (run, bench, model) share to
 * read their command lines: the usage error and the value parsers. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int cli_usage_error(const char *fmt, const char *arg) {
  /* A subcommand's message starts with its name: point at its own help. */
  char message[RS_ERRMSG_MAX];
  snprintf(message, sizeof message, fmt, arg);
  const char *help = strncmp(message, "bench: ", 7) == 0   ? "bench "
                     : strncmp(message, "model: ", 7) == 0 ? "model "
                     : strncmp(message, "diff: ", 6) == 0  ? "diff "
                                                           : "";
  rs_one_line(message); /* the argument may hold ESC, CR, LF */
  fprintf(stderr, "ringsim: %s (see ringsim %s--help)\n", message, help);
  return EXIT_USAGE;
}

int cli_parse_long(const char *text, long min, long max, long *out) {
  /* A number given is the number alone, as written in decimal: an
   * optional '-', then digits, no leading zero ("01"), sign ("+2") or
   * blank (strtol would take all three). */
  const char *digits = text + (text[0] == '-');
  if (!isdigit((unsigned char)digits[0]) ||
      (digits[0] == '0' && digits[1] != '\0'))
    return -1;
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (errno || *end || v < min || v > max)
    return -1;
  *out = v;
  return 0;
}

int cli_parse_seconds(const char *text, double *out) {
  char *end;
  errno = 0;
  double t = strtod(text, &end);
  if (errno || end == text || *end || !(t > 0 && t <= 1e6))
    return -1;
  *out = t;
  return 0;
}

int cli_parse_loop(const char *text, int *slices) {
  if (strcmp(text, "steps") && strcmp(text, "slices"))
    return -1;
  *slices = strcmp(text, "slices") == 0;
  return 0;
}

int cli_parse_bytes(const char *text, size_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  if (errno || end == text || text[0] == '-')
    return -1;
  unsigned shift = 0;
  if (*end == 'K' || *end == 'k')
    shift = 10;
  else if (*end == 'M' || *end == 'm')
    shift = 20;
  else if (*end == 'G' || *end == 'g')
    shift = 30;
  if (shift)
    end++;
  if (*end || v > (1ull << 40) >> shift)
    return -1;
  *out = (size_t)(v << shift);
  return 0;
}
