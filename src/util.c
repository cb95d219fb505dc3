/* util.c - error formatting and aligned allocation. */
#include "util.h"

#include <string.h>

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
  for (unsigned char *c = (unsigned char *)text; *c; c++)
    if (*c < 0x20 || *c == 0x7f)
      *c = '?';
}

void *rs__aligned_alloc(size_t n) {
  size_t rounded = (n + 63) & ~(size_t)63;
  if (rounded < n)
    return NULL;
  return aligned_alloc(64, rounded ? rounded : 64);
}
