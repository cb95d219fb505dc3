/* error.c - names and messages of ringsim's error codes (RS_ERRNO_MAP),
 * ops, averages, run statuses and worker states. */
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

const char *rs_average_name(rs_average_t average) {
  static const char *const names[] = {
      [RS_AVERAGE_POST] = "post",
      [RS_AVERAGE_PRE] = "pre",
      [RS_AVERAGE_PRE_MUL] = "pre-mul",
  };
  return (unsigned)average < sizeof names / sizeof *names ? names[average]
                                                          : "?";
}

int rs_average_parse(const char *name) {
  for (int a = RS_AVERAGE_POST; a <= RS_AVERAGE_PRE_MUL; a++)
    if (strcmp(name, rs_average_name((rs_average_t)a)) == 0)
      return a;
  return -1;
}

const char *rs_hook_name(rs_hook_t hook) {
  static const char *const names[] = {
      [RS_HOOK_NONE] = "none",
      [RS_HOOK_ALLREDUCE] = "allreduce",
      [RS_HOOK_FP16] = "fp16",
      [RS_HOOK_BF16] = "bf16",
      [RS_HOOK_POWERSGD] = "powersgd",
  };
  return (unsigned)hook < sizeof names / sizeof *names ? names[hook] : "?";
}

int rs_hook_parse(const char *name) {
  for (int h = RS_HOOK_NONE; h <= RS_HOOK_POWERSGD; h++)
    if (strcmp(name, rs_hook_name((rs_hook_t)h)) == 0)
      return h;
  return -1;
}

rs_dtype_t rs_hook_dtype(rs_hook_t hook, rs_dtype_t model_dtype) {
  return hook == RS_HOOK_FP16   ? RS_DTYPE_F16
         : hook == RS_HOOK_BF16 ? RS_DTYPE_BF16
                                : model_dtype;
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

const char *rs_wstate_name(rs_wstate_t state) {
  static const char *const names[] = {
      [RS_WSTATE_DONE] = "done",
      [RS_WSTATE_CRASHED] = "crashed",
      [RS_WSTATE_STALLED] = "stalled",
      [RS_WSTATE_TIMED_OUT] = "timed_out",
      [RS_WSTATE_ABORTED] = "aborted",
      [RS_WSTATE_BAD_MESSAGE] = "bad_message",
      [RS_WSTATE_DAMAGED_MESSAGE] = "damaged_message",
      [RS_WSTATE_NOT_STARTED] = "not_started",
      [RS_WSTATE_FAILED] = "failed",
  };
  return (unsigned)state < sizeof names / sizeof *names ? names[state]
                                                        : "failed";
}
