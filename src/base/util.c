/* util.c - error formatting, aligned allocation, opening files to read. */
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int rs__err(char *errmsg, int code, const char *fmt, ...) {
  if (errmsg) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(errmsg, RS_ERRMSG_MAX, fmt, ap);
    va_end(ap);
    rs_one_line(errmsg);
  }
  return code;
}

void rs_one_line(char *text) {
  /* C0 and DEL, and C1 as UTF-8 writes it (0xC2 0x80-0x9F, U+0080 to
   * U+009F: U+009B is CSI to a terminal) become one '?' each */
  unsigned char *to = (unsigned char *)text;
  for (const unsigned char *c = to; *c; c++) {
    if (c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f) {
      *to++ = '?';
      c++;
    } else {
      *to++ = *c < 0x20 || *c == 0x7f ? '?' : *c;
    }
  }
  *to = '\0';
}

/* ---- numbers ------------------------------------------------------------
 * THE GRAMMAR of every number a user gives ringsim (the command's options
 * and the specs inside them, rs_config_set's values, the test knobs and
 * RINGSIM_TRACE_WAIT); docs/reliability.md says it to users:
 *
 *   integer  = "0" | [1-9] [0-9]*
 *   decimal  = integer [ "." [0-9]+ ] [ ( "e" | "E" ) [ "+" | "-" ] [0-9]+ ]
 *
 * Nothing else: no sign ("-0", "+1"), no blank before or after, no
 * leading zero ("00", "01.5"), no hex ("0x10", "0x1p4"), no ".5" or "5.",
 * no inf or nan. An exponent may have a sign and leading zeros: "1e-05"
 * and "1e+16" are how Python's repr and C's %g write numbers. A unit, where
 * the option has one (25GB/s, 5us, 312T, 64K), follows at once; what
 * follows the number is the caller's to read.
 *
 * Values: an integer must fit a long long; a decimal is read as the
 * nearest double, which must be finite and, unless the text is zero,
 * not 0 ("1e400" and "1e-400" are out of range; "4.9e-324", the smallest
 * double, is in). Then each option's own range applies, in the unit it
 * keeps the value in: a positive size or time that would be kept as 0
 * where 0 means something else is refused (--bucket-mb 1e-300: less than
 * a byte, where 0 makes one bucket; --timeout 1e-12: less than the
 * nanosecond a worker's clock counts).
 */

/* The length of the integer at p (0: none there). */
static size_t scan_integer(const char *p) {
  if (p[0] == '0')
    return p[1] >= '0' && p[1] <= '9' ? 0 : 1;
  size_t n = 0;
  while (p[n] >= '0' && p[n] <= '9')
    n++;
  return n;
}

static size_t scan_digits(const char *p) {
  size_t n = 0;
  while (p[n] >= '0' && p[n] <= '9')
    n++;
  return n;
}

int rs_read_digits(const char *text, long long *value, const char **end) {
  const size_t n = scan_integer(text);
  if (n == 0)
    return -1;
  char *stop;
  errno = 0;
  long long v = strtoll(text, &stop, 10);
  if (errno || stop != text + n)
    return -1;
  *value = v;
  *end = stop;
  return 0;
}

int rs_read_int(const char *text, long min, long max, long *out) {
  long long v;
  const char *end;
  if (rs_read_digits(text, &v, &end) || *end || v < min || v > max)
    return -1;
  *out = (long)v;
  return 0;
}

int rs_read_decimal(const char *text, double *value, const char **end) {
  size_t n = scan_integer(text);
  if (n == 0)
    return -1;
  if (text[n] == '.') {
    const size_t fraction = scan_digits(text + n + 1);
    if (fraction == 0)
      return -1;
    n += 1 + fraction;
  }
  const size_t mantissa = n;
  if (text[n] == 'e' || text[n] == 'E') {
    size_t e = n + 1 + (text[n + 1] == '+' || text[n + 1] == '-');
    const size_t digits = scan_digits(text + e);
    if (digits == 0)
      return -1;
    n = e + digits;
  }
  char *stop;
  /* (our grammar is a part of strtod's; its ERANGE for a subnormal is no
   * error here: the value is the nearest double all the same) */
  double v = strtod(text, &stop);
  if (stop != text + n || !isfinite(v))
    return -1;
  /* nearest 0, where the text is not: below the smallest double */
  if (v == 0 && strcspn(text, "123456789") < mantissa)
    return -1;
  *value = v;
  *end = stop;
  return 0;
}

int rs_read_real(const char *text, double *out) {
  double v;
  const char *end;
  if (rs_read_decimal(text, &v, &end) || *end)
    return -1;
  *out = v;
  return 0;
}

/* ---- quoting what the user gave --------------------------------------- */

/* A byte where a UTF-8 character starts (not a continuation byte). */
static int starts_char(const char *p) {
  return ((unsigned char)*p & 0xc0) != 0x80;
}

void rs_excerpt(const char *text, size_t at, size_t len, char *buf,
                size_t size) {
  const size_t total = strlen(text);
  if (at > total)
    at = total;
  if (len > total - at)
    len = total - at;
  if (len > RS_EXCERPT_ITEM)
    len = RS_EXCERPT_ITEM;
  size_t from = at > RS_EXCERPT_BEFORE ? at - RS_EXCERPT_BEFORE : 0;
  size_t to = at + len + RS_EXCERPT_AFTER;
  if (to > total)
    to = total;
  if (total <= RS_QUOTE_MAX) { /* short: all of it */
    from = 0;
    to = total;
  }
  while (from > 0 && !starts_char(text + from)) /* whole characters */
    from--;
  while (to < total && !starts_char(text + to))
    to++;
  snprintf(buf, size, "%s%.*s%s", from ? "..." : "", (int)(to - from),
           text + from, to < total ? "..." : "");
}

const char *rs_quote_path(const char *path, char *buf, size_t size) {
  const size_t total = strlen(path);
  size_t from = total > RS_QUOTE_MAX ? total - (RS_QUOTE_MAX - 20) : 0;
  while (from > 0 && !starts_char(path + from)) /* whole characters */
    from++;
  snprintf(buf, size, "%s%s", from ? "..." : "", path + from);
  return buf;
}

int rs__err_where(char *errmsg, int code, const rs_err_where_t *where,
                  const char *fmt, ...) {
  if (!errmsg)
    return code;
  const char *option = where->option, *input = where->input;
  const size_t at = where->at, len = where->len;
  char problem[RS_ERRMSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(problem, sizeof problem, fmt, ap);
  va_end(ap);
  const size_t total = strlen(input);
  if (total <= RS_QUOTE_MAX)
    return rs__err(errmsg, code, "%s '%s': %s", option, input, problem);
  char excerpt[RS_QUOTE_MAX + 16];
  rs_excerpt(input, at, len, excerpt, sizeof excerpt);
  /* (the problem first: the excerpt is bounded, the problem whole) */
  return rs__err(errmsg, code, "%s: %.*s (at byte %zu of %zu: '%s')", option,
                 RS_ERRMSG_MAX - 2 * RS_QUOTE_MAX, problem, at, total, excerpt);
}

/* Transparent huge pages: a large buffer on 2 MiB boundaries, marked for
 * the kernel to back with 2 MiB pages where it offers them (its setting
 * "madvise", or "always"). First touching a 2 MiB page costs one fault
 * where 4 KiB pages cost 512: most of the time a large run spent in the
 * kernel before (see docs/performance.md). */
#define HUGE_PAGE ((size_t)2 << 20)

void *rs__aligned_alloc(size_t n) {
  size_t rounded = (n + 63) & ~(size_t)63;
  if (rounded < n)
    return NULL;
  if (rounded >= RS_HUGE_ALLOC) {
    size_t huge = (rounded + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
    void *p = huge < rounded ? NULL : aligned_alloc(HUGE_PAGE, huge);
#ifdef MADV_HUGEPAGE
    if (p)
      (void)madvise(p, huge, MADV_HUGEPAGE); /* advice: may be refused */
#endif
    return p;
  }
  return aligned_alloc(64, rounded ? rounded : 64);
}

int rs__populate(void *p, size_t n) {
#ifdef MADV_POPULATE_WRITE
  uintptr_t start = (uintptr_t)p & ~(uintptr_t)4095;
  uintptr_t end = ((uintptr_t)p + n + 4095) & ~(uintptr_t)4095;
  return n && madvise((void *)start, end - start, MADV_POPULATE_WRITE) == 0;
#else
  (void)p;
  (void)n;
  return 0;
#endif
}

FILE *rs__fopen_read(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return NULL;
  int flags = fcntl(fd, F_GETFL);
  FILE *f = flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0
                ? NULL
                : fdopen(fd, "rb");
  if (!f) {
    int saved = errno;
    close(fd);
    errno = saved;
  }
  return f;
}
