/* cli.h - what the ringsim command's two modes (run, bench) share. */
#ifndef RINGSIM_CLI_H
#define RINGSIM_CLI_H

#include <stddef.h>

enum { EXIT_CHECK = 1, EXIT_USAGE = 2, EXIT_RUN = 3 };

/* Print "ringsim: <fmt with arg> (see ringsim --help)"; returns EXIT_USAGE. */
int cli_usage_error(const char *fmt, const char *arg);
/* Strict decimal in [min, max]; 0 on success. */
int cli_parse_long(const char *text, long min, long max, long *out);
/* A byte count with optional K, M, G (powers of 1024) up to 1 TiB. */
int cli_parse_bytes(const char *text, size_t *out);

/* `ringsim bench ...`: argv[0] is "bench". Returns the exit status. */
int cli_bench(int argc, char **argv);

#endif /* RINGSIM_CLI_H */
