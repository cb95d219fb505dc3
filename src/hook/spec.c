/* spec.c - the grammar of --hook powersgd:rank=R[,start=S][,feedback=on|off]
 * [,warm=on|off]: PowerSGDState's matrix_approximation_rank,
 * start_powerSGD_iter, use_error_feedback and warm_start, named as short
 * keys so that one --hook value says the whole state (docs/hooks.md).
 * The command's q=FILE is not the library's: the CLI takes it off first.
 */
#include "hook/spec.h"

#include <stdio.h>
#include <string.h>

#include "base/util.h"
#include "ringsim/internal/command.h" /* rs_read_int */
#include "ringsim/internal/config.h"  /* PowerSGD's fields */

static int on_off(const char *text, size_t len, int *out) {
  if (len == 2 && strncmp(text, "on", 2) == 0)
    *out = 1;
  else if (len == 3 && strncmp(text, "off", 3) == 0)
    *out = 0;
  else
    return -1;
  return 0;
}

int rs__powersgd_spec(const char *spec, rs_config_t *config, char *errmsg) {
  static const char *const keys[] = {"rank", "start", "feedback", "warm"};
  int value[4] = {0, 0, 0, 0}, seen[4] = {0, 0, 0, 0};
  const char *at = spec;
  for (;;) {
    const size_t len = strcspn(at, ",");
    const char *eq = memchr(at, '=', len);
    int k = -1;
    for (int i = 0; eq && i < 4; i++)
      if ((size_t)(eq - at) == strlen(keys[i]) &&
          strncmp(at, keys[i], strlen(keys[i])) == 0)
        k = i;
    if (k < 0)
      return rs__err(errmsg, RS_EINVAL,
                     "powersgd:%.100s: '%.*s' is not rank=R, start=S, "
                     "feedback=on|off or warm=on|off",
                     spec, (int)(len < 60 ? len : 60), at);
    if (seen[k]++)
      return rs__err(errmsg, RS_EINVAL, "powersgd:%.100s: %s= given twice",
                     spec, keys[k]);
    const char *v = eq + 1;
    const size_t vlen = len - (size_t)(v - at);
    char text[32];
    long n = 0;
    int bad;
    if (k >= 2) {
      bad = on_off(v, vlen, &value[k]);
    } else {
      bad = vlen == 0 || vlen >= sizeof text;
      if (!bad) {
        memcpy(text, v, vlen);
        text[vlen] = '\0';
        bad = rs_read_int(text, k == 0 ? 1 : 0, 1000000, &n) != 0;
      }
      value[k] = (int)n;
    }
    if (bad)
      return rs__err(errmsg, RS_EINVAL, "powersgd:%.100s: %s=%.*s: expected %s",
                     spec, keys[k], (int)(vlen < 40 ? vlen : 40), v,
                     k == 0   ? "a rank R from 1 to 1000000"
                     : k == 1 ? "a step S from 0 to 1000000"
                              : "on or off");
    if (!at[len])
      break;
    at += len + 1;
  }
  if (!seen[0])
    return rs__err(errmsg, RS_EINVAL,
                   "powersgd:%.100s: powersgd needs its rank: powersgd:rank=R",
                   spec);
  /* PowerSGDState's own refusal: DDP rebuilds its buckets after the first
   * backward, and state kept by bucket index must outlive that */
  if ((value[2] || value[3]) && value[1] < 2)
    return rs__err(errmsg, RS_EINVAL,
                   "powersgd:%.100s: %s needs start=2 or more (PyTorch's "
                   "PowerSGDState refuses start_powerSGD_iter <= 1 with "
                   "error feedback or warm start)",
                   spec, value[2] ? "feedback=on" : "warm=on");
  config->powersgd_rank = value[0];
  config->powersgd_start = value[1];
  config->powersgd_feedback = value[2];
  config->powersgd_warm = value[3];
  return RS_OK;
}
