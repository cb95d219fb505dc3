/* util.c - error formatting, aligned allocation, opening files to read. */
#include "base/util.h"

#include <ctype.h>
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

int rs_read_digits(const char *text, int negative_ok, long long *value,
                   const char **end) {
  const char *digits = text + (negative_ok && text[0] == '-');
  size_t n = 0;
  while (isdigit((unsigned char)digits[n]))
    n++;
  if (n == 0 || (digits[0] == '0' && n > 1))
    return -1;
  char *stop;
  errno = 0;
  long long v = strtoll(text, &stop, 10);
  if (errno || stop != digits + n)
    return -1;
  *value = v;
  *end = stop;
  return 0;
}

int rs_read_int(const char *text, long min, long max, long *out) {
  long long v;
  const char *end;
  if (rs_read_digits(text, 1, &v, &end) || *end || v < min || v > max)
    return -1;
  *out = (long)v;
  return 0;
}

int rs_read_real(const char *text, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  if (errno || end == text || *end || isnan(v))
    return -1;
  *out = v;
  return 0;
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
