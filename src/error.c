/* error.c - names and messages of ringsim's error codes (RS_ERRNO_MAP). */
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
