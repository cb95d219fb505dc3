/* error.c - names and messages of ringsim's error codes (RS_ERRNO_MAP),
 * ops and run statuses. */
#include <string.h>

#include "ringsim/ringsim.h"

const char *rs_strerror(int code) {
  switch (code) {
#define RS_ERR_MSG(name, value, msg)                                           \
  case RS_##name:                                                              \
    return msg;
    RS_ERRNO_MAP(RS_ERR_MSG)
#undef RS_ERR_MSG
  }
  return "unknown error";
}

const char *rs_op_name(rs_op_t op) {
  static const char *const names[] = {"sum", "avg", "min", "max", "prod"};
  return (unsigned)op < sizeof names / sizeof *names ? names[op] : "?";
}

int rs_op_parse(const char *name) {
  for (int op = RS_OP_SUM; op <= RS_OP_PROD; op++)
    if (strcmp(name, rs_op_name((rs_op_t)op)) == 0)
      return op;
  return -1;
}

const char *rs_errname(int code) {
  switch (code) {
#define RS_ERR_NAME(name, value, msg)                                          \
  case RS_##name:                                                              \
    return "RS_" #name;
    RS_ERRNO_MAP(RS_ERR_NAME)
#undef RS_ERR_NAME
  }
  return "RS_UNKNOWN";
}

const char *rs_status_name(int status) {
  return status == RS_OK             ? "ok"
         : status == RS_ECHECK       ? "check_failed"
         : status == RS_EINTERRUPTED ? "interrupted"
                                     : "failed";
}
