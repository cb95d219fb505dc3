/* report_json.c - a run's report as one JSON object (--json): the
 * library's (rs_run_report_json, src/api/report.c; docs/cli.md lists its
 * fields), which the Python package returns too. */
#include <jansson.h>
#include <stdio.h>

#include "report.h"

void cli_print_json(const report_t *r) {
  const rs_report_opts_t opts = {r->source, r->trace, r->status,
                                 r->opt->print_values};
  char *text = rs_run_report_json(r->run, r->model, &opts);
  if (text)
    printf("%s\n", text);
  else
    fprintf(stderr, "ringsim: the report: out of memory\n");
  rs_free(text);
}

/* (cli.h) Print o as --json does, and let it go. */
int cli_dump_json(struct json_t *o) {
  json_dumpf(o, stdout, JSON_INDENT(2));
  putchar('\n');
  json_decref(o);
  return 0;
}
