/* report.h - what the two forms of a run's report share (report.c prints
 * the text, report_json.c the library's JSON; both from rs_run_figures). */
#ifndef RINGSIM_CLI_REPORT_H
#define RINGSIM_CLI_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"


#endif /* RINGSIM_CLI_REPORT_H */
