/* version.c - rs_version(): the version the library was built as, from
 * the generated ringsim/version.h (project(VERSION) in CMakeLists.txt). */
#include "ringsim/ringsim.h"

const char *rs_version(void) { return RS_VERSION; }
