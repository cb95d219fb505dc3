/* option.h - the command's one option table, and what reads values
 * through it: each option once, with its names, its value, the modes that
 * take it, how its value is read and stored, and its help line in each
 * mode's usage text. parse.c walks a command line through it, help.c
 * prints the usage texts from it, and the modes (options.c, bench.c,
 * model.c, diff.c) read only what it stored in options_t.
 *
 * An interface header, with no option.c: it declares what optable.c (the
 * rows), optset.c (the setters), args.c (numbers, messages, algorithm
 * names), parse.c (the walk) and options.c (a run's checks) give each
 * other, so the calls between them run one way (no module calls back).
 */
#ifndef RINGSIM_CLI_OPTION_H
#define RINGSIM_CLI_OPTION_H

#include <stddef.h>

#include "cli.h"

/* An option's help line in one mode's usage text: its value's name there
 * (NULL: the option's metavar) and its text, lines cut with '\n' (NULL:
 * not listed in that mode's text). "{algos}" in a text is the mode's
 * algorithm names (cli_algo_names), and a line longer than the usage
 * text's width is wrapped there. */
typedef struct cli_help {
  const char *metavar;
  const char *text;
} cli_help_t;

/* What else an option is (cli_option_t.flags). */
enum {
  CLI_REPEAT = 1,    /* each one given adds (--inject); else the last wins */
  CLI_DIFF_TWO = 2,  /* diff: A,B gives each side its own value */
  CLI_DIFF_SAME = 4, /* diff: A,B is refused unless A is B (diff_why) */
};

typedef struct cli_option cli_option_t;
struct cli_option {
  const char *name; /* the long name, without "--" */
  char letter;      /* the short name (-w), or 0 */
  unsigned modes;   /* CLI_IN(mode) for every mode that takes it */
  unsigned flags;
  const char *metavar; /* its value's name (FILE), or NULL: a flag */
  /* How the value is read and where it is stored: set(opt, o, value,
   * msg) with value NULL for a flag. Returns 0, or -1 with the message
   * in msg (RS_ERRMSG_MAX bytes), starting with the option's name:
   * "--slots '0': expected an integer in 1..1024". */
  int (*set)(const cli_option_t *opt, options_t *o, const char *value,
             char *msg);
  size_t field;         /* set_flag, set_text, set_int, set_size: where, in o */
  long min, max;        /* set_int, set_size: the range */
  const char *diff_why; /* CLI_DIFF_SAME: why both sides take one value */
  cli_help_t help[CLI_MODES];
  unsigned letter_modes; /* the modes its letter is in (0: all of modes):
                            bench's -o and -T, nccl-tests' letters */
};

/* A letter or name another program gives that a mode refuses, saying
 * why: nccl-tests' flags that mean nothing to `ringsim bench`. */
typedef struct cli_foreign {
  cli_mode_t mode;
  char letter;      /* or 0 */
  const char *name; /* the long name, without "--" */
  const char *why;  /* what it is and what to do instead */
} cli_foreign_t;

/* optset.c: the setters a row names (cli_option_t.set). A flag: 1 in the
 * int at field; text kept as given at field (a const char *); an integer
 * in [min, max] into the int at field; a size in [min, max] into the
 * size_t at field; one the library reads (rs_config_set) into config; and
 * those with their own value (--workers: N, or bench's and model's list;
 * --algo: the mode's names; --topo: the library's, and for model a list
 * of nodes). */
typedef int cli_setter_t(const cli_option_t *opt, options_t *o,
                         const char *value, char *msg);
cli_setter_t cli_set_flag, cli_set_text, cli_set_int, cli_set_size,
    cli_set_config, cli_set_workers, cli_set_seed, cli_set_init,
    cli_set_datatype, cli_set_dtype, cli_set_algo, cli_set_transport,
    cli_set_topo, cli_set_bucket_mb, cli_set_straggler, cli_set_compute,
    cli_set_hook, cli_set_like, cli_set_proto;

/* optable.c: the rows, indexed by cli_opt_t. */
extern const cli_option_t cli_options[OPT_COUNT];
/* optable.c: the foreign flags, ending with a row of no letter and no
 * name (parse.c refuses them with their why). */
extern const cli_foreign_t cli_foreign[];

/* optset.c: where a mode starts, before its command line: the library's
 * defaults, and the mode's own (bench: --op sum, --timeout 60, the slice
 * loop, its sweep). */
void cli_options_init(cli_mode_t mode, options_t *o);

/* diff's command line beyond what each side's options hold (cli_walk):
 * the room its A,B (or A,B,C,...) values are split into, and what was
 * given so. The sides are A, B, ... up to CLI_DIFF_MAX. */
enum { CLI_DIFF_MAX = 8 };
typedef struct cli_two {
  options_t *side[CLI_DIFF_MAX]; /* (in) each side's options; side[0]
                                    is cli_walk's o */
  char *arena;       /* (in) room for the split values: cli_two_room */
  int count;         /* (out) options given as A,B,... (CLI_DIFF_TWO) */
  int sides;         /* (out) how many values each of them gave (0: none) */
  const char *first; /* (out) the first one's name */
  char label[CLI_DIFF_MAX][160]; /* each side's: "A: --algo ring" */
} cli_two_t;
/* The room cli_two_t.arena needs for argv. */
size_t cli_two_room(int argc, char **argv);

/* parse.c: walk argv (argv[0] the program or the mode) through the table
 * into o, as mode takes its options: --name value, --name=value, an
 * unambiguous abbreviation of a name, -x value, -xvalue, flags together
 * ("-hV"), "--" ending the options. With two (diff), every option is
 * stored on every side (o is side A), and an A,B,... value of a
 * CLI_DIFF_TWO option gives A to side A, B to side B, and so on; every
 * option given so gives as many values. Each side starts as
 * cli_options_init made it.
 * Checks across options are the mode's, after. Returns -1 to go on, or
 * the exit status, having said why (--help, --version: 0). */
int cli_walk(cli_mode_t mode, int argc, char **argv, options_t *o,
             cli_two_t *two);

/* options.c: a run's checks across its options (also each side of diff's,
 * and model's): --like's, --explain's, --trace and --no-trace, --params
 * required, ... Returns -1 to go on, or EXIT_USAGE having said why. */
int cli_check_run(options_t *o);
/* On a topology W is its nodes x gpus (each row's, for model's list),
 * unless --workers says: sets it, or refuses more workers than the mode
 * takes. Returns -1 to go on, or the exit status. */
int cli_topo_workers(options_t *o);
/* options.c: --algo auto over MPI without --net, refused (run, bench). */
int cli_check_auto_mpi(const options_t *o);

/* optset.c: nccl-tests' name of an element type (bench -d): "float",
 * "double", "half", "bfloat16". */
const char *cli_datatype_name(rs_dtype_t dtype);

/* optset.c: the test knobs, copied from the environment into config's
 * (rs_test_knobs_t: the library reads no environment):
 * RINGSIM_TEST_FLIP and RINGSIM_MPI_TRACE_BATCH; rs_run_create reads
 * them. -1 with msg (RS_ERRMSG_MAX bytes) when one is too long. */
int cli_test_knobs(rs_config_t *config, char *msg);

/* args.c: a size, read as the library reads every integer
 * (rs_read_digits, internal/command.h: decimal digits alone), unsigned,
 * with an optional K, M or G (powers of 1024) after it: 0 with the value
 * in *out, or -1 when the text is not one or is outside [min, max]. */
int cli_read_size(const char *text, size_t min, size_t max, size_t *out);
/* The message for a value that is not one of them, into msg
 * (RS_ERRMSG_MAX bytes): "--NAME 'VALUE': expected " and what is.
 * Returns -1, for a setter to return. */
int cli_bad_value(char *msg, const cli_option_t *opt, const char *value,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* What a range expects: "an integer in 1..4096", "a size from 4 to 1G
 * (K, M, G suffixes)". */
void cli_expect_int(long min, long max, char *buf, size_t size);
void cli_expect_size(size_t min, size_t max, char *buf, size_t size);

/* args.c: the algorithms a mode's --algo takes, from the library's table
 * (rs_algorithm_name over RS_ALGO_COUNT, then RS_ALGO_AUTO where the mode
 * takes auto, then "all" where it takes all):
 * "ring, rd, rhd, linear, tree, gloo-ring, hier, hier:rd, hier:rhd, nvls,
 * nvlstree or auto". With help set, the usage text's form: the default marked, and
 * no last "or" part, which
 * the help line writes itself ("ring (default), rd, ..., gloo-ring"). */
void cli_algo_names(cli_mode_t mode, int help, char *buf, size_t size);
int cli_algo_takes_auto(cli_mode_t mode);
int cli_algo_takes_all(cli_mode_t mode);

#endif /* RINGSIM_CLI_OPTION_H */
