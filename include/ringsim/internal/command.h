/* command.h - calls libringsim makes for its own command (src/cli) only:
 * NOT part of the public API. Not installed (CMakeLists.txt excludes
 * include/ringsim/internal/), not exported (no RS_API: hidden in
 * libringsim.so, which the Python package loads); the command links
 * libringsim.a, where hidden symbols link as any other.
 *
 * Why here and not in src/: these calls are implemented in several of the
 * library's layers (rs_one_line in base, rs_run_fail_after in run, the MPI
 * calls in mpi) and called by the command above them all. A header inside
 * one layer of src/ would make the lower layers include a higher one's
 * header (an arrow pointing up: tests/test_layers.py), and would give
 * the command src/ on its include path, where it sees only include/. Beside
 * ringsim.h, under internal/, it is one more contract between the library
 * and the command, and its path says it is nobody else's.
 */
#ifndef RINGSIM_INTERNAL_COMMAND_H
#define RINGSIM_INTERNAL_COMMAND_H

#include <stdint.h>

#include "ringsim/ringsim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* fn(ctx, i) for i in 0..n-1 on as many threads as this process has
 * cores (the caller's among them), in no set order; returns when all are
 * done. The pieces must not share what they write: ringsim model's
 * simulations (src/base/parallel.c). */
void rs_parallel_for(int n, void (*fn)(void *ctx, int i), void *ctx);

/* Replace control characters (ESC, CR, a newline in a param name; C1's
 * U+0080 to U+009F as UTF-8) with '?', in place (the text may shorten):
 * every error message, and every name a text report prints, stays one
 * line and cannot drive the terminal. The library's own messages go
 * through it too. */
void rs_one_line(char *text);

/* Can algorithm a run under net, as its row says what it needs (nodes, an
 * NVLink switch that reduces, Simple's bytes)? RS_OK, or RS_EINVAL and
 * the reason in errmsg (NULL: not wanted), one line that begins with the
 * algorithm's name ("hier is hierarchical and needs nodes: ..."): what a
 * run refuses ("algo: " before it), and what `ringsim model`, `step` and
 * `--algo all` test before they simulate (src/run/config.c). */
int rs_algo_fits(const rs_netmodel_t *net, rs_algorithm_t a, char *errmsg);

/* Numbers as ringsim reads them everywhere: the command's options and
 * the specs inside them, rs_config_set's values and the test knobs; the
 * grammar is written once, above these functions in src/base/util.c (and
 * for users in docs/reliability.md). In short: an integer is "0" or
 * digits without a leading zero; no sign, blank or hex. A decimal is such
 * an integer, an optional fraction (".25") and an optional exponent
 * ("e-05", "E3"). rs_read_digits reads an integer at text (*value, and
 * *end the byte after it: a unit may follow); rs_read_int the whole text,
 * one in min..max; rs_read_decimal a decimal at text (*value finite, and
 * not 0 unless the text is zero; *end after it); rs_read_real the whole
 * text. Each returns 0, or -1 and leaves *value / *out alone. */
int rs_read_digits(const char *text, long long *value, const char **end);
int rs_read_int(const char *text, long min, long max, long *out);
int rs_read_decimal(const char *text, double *value, const char **end);
int rs_read_real(const char *text, double *out);

/* How much of a user's input a message quotes: all of it up to
 * RS_QUOTE_MAX bytes; past that an excerpt (rs_excerpt) of the fault
 * (at most RS_EXCERPT_ITEM bytes of it) with RS_EXCERPT_BEFORE bytes
 * before and RS_EXCERPT_AFTER after, so the line still has room to say
 * what is wrong. */
#define RS_QUOTE_MAX 100
#define RS_EXCERPT_BEFORE 30
#define RS_EXCERPT_ITEM 40
#define RS_EXCERPT_AFTER 30

/* The part of text to quote for a fault at bytes at .. at+len into buf
 * (size bytes; RS_QUOTE_MAX + 16 hold any): the whole text if it has at
 * most RS_QUOTE_MAX bytes, else the excerpt around the fault, with "..."
 * where it was cut (never inside a UTF-8 character). */
void rs_excerpt(const char *text, size_t at, size_t len, char *buf,
                size_t size);
/* A file name as a message quotes it, into buf (RS_QUOTE_MAX + 16 bytes
 * hold any): all of it up to RS_QUOTE_MAX bytes, else "..." and its last
 * bytes (whole UTF-8 characters), so that the line still says what is
 * wrong with it. Returns buf. */
const char *rs_quote_path(const char *path, char *buf, size_t size);

/* rs_topo_parse for ringsim model, whose --topo may list node counts
 * after nodes= (dgx-h100,nodes=1,8,64: a row each): up to room of them,
 * nodes='s first, into rows and their number into *row_count (0 without
 * a nodes= item). rows NULL: rs_topo_parse, which refuses a list. Each
 * message quotes spec as given. */
int rs_topo_parse_rows(const char *spec, rs_topo_t *t, int *rows, int room,
                       int *row_count, char *errmsg);
/* The name of --topo's i-th preset ("dgx-h100"), or NULL past the last:
 * shell completion offers them. */
const char *rs_topo_preset_name(int i);

/* rs_trace_open, with the longest a writer waits for the trace's lock:
 * wait_s seconds (0 to 1e6; negative: the default, 5 minutes). The
 * command passes RINGSIM_TRACE_WAIT's (the library reads no environment). */
int rs_trace_open_waiting(const char *path, double wait_s, rs_trace_t **out,
                          char *errmsg);

/* After rs_run_execute: the run failed after all, once its result was in
 * (its output could not be written, a signal came): set its status to code
 * (RS_EINTERRUPTED, or another error) and its error to error, and record
 * both in its trace row ("interrupted" or "failed"), so the report and the
 * trace agree. A run that had failed already keeps its status. Returns the
 * run's status; rs_run_trace_error says if the row could not be updated. */
int rs_run_fail_after(rs_run_t *run, int code, const char *error);

/* The run's NVLink switches (--algo nvls, nvlstree): node n's is
 * participant W + n, whose state rs_run_worker_state gives as a worker's
 * (the watchdog lists them after the GPUs); 0 for every other run. */
int rs_run_switches(const rs_run_t *run);

/* diff's per-region counts on NCCL's channels (a bucket of the ring or
 * the tree, --channels C > 1), which cut each channel's part, not the
 * bucket: *channels gets C (1: the bucket does not run on channels), and
 * channel ch's regions are written as rs_run_bucket_regions writes a
 * bucket's (include/ringsim/explain.h), as offsets from the bucket's
 * start, offsets[0..count] (room for W + 1): the ring's W chunks of the
 * channel's part; the tree's part whole (one region, *word NULL: a
 * channel's tree carries it whole). Returns count: 0 for an idle channel,
 * ch out of range or a bucket off channels. */
int rs_run_bucket_channel_regions(const rs_run_t *run, size_t bucket, int ch,
                                  size_t *offsets, const char **word,
                                  int *channels);

/* rs_auto_choose's choice without predictions, algorithm `first` timed
 * first (RS_ALGO_COUNT: none): the same choice, found sooner where first
 * is likely to win (it bounds the rest: `ringsim model --algo all`'s
 * crossover search, between two sizes, tries the smaller's best). */
rs_algorithm_t rs_auto_choose_first(const rs_sim_setup_t *on, size_t elems,
                                    unsigned eligible, rs_algorithm_t first);

/* After rs_run_execute of a config.mpi run (collective): MPI_Allreduce's
 * own time over the run's processes, on this process's first worker's
 * buffer (a copy), the run's dtype (f32 or f64) and op (avg as sum), on
 * the run's communicator: warmup untimed calls, then *ns = the slowest
 * process's mean over iterations (what `ringsim bench` over MPI prints
 * beside its own time). RS_EINVAL for another dtype or a run not over
 * MPI. */
int rs_run_time_mpi_allreduce(rs_run_t *run, int warmup, int iterations,
                              uint64_t *ns, char *errmsg);

/* For a process not given --transport mpi: when mpirun started it with
 * other processes, learn whether all of them were given --transport mpi
 * or none was (MPI starts and ends inside). RS_EINVAL when some were:
 * rank 0 gets the message (naming a rank) in errmsg, the others "". */
int rs_mpi_check_alone(char *errmsg);

#ifdef __cplusplus
}
#endif
#endif /* RINGSIM_INTERNAL_COMMAND_H */
