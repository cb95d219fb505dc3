/* run.h - between the files of one run (src/run/): what each does for
 * rs_run_create and rs_run_execute (run.c).
 *
 *   config.c  the config's defaults and its validation
 *   choose.c  each bucket's algorithm: config's, or --algo auto's choice
 *   edges.c   the edges those algorithms declare, sized, and every
 *             worker's links; the trace records they will carry
 *   flips.c   the test knob that flips result bits before the check
 *   pool.c    the worker threads: the gate, the iterations, the joins
 *   access.c  what a run reports (rs_run_result, rs_run_bucket, ...)
 *
 * Every function takes the run (core/runstate.h) and keeps no state of its
 * own.
 */
#ifndef RINGSIM_RUN_RUN_H
#define RINGSIM_RUN_RUN_H

#include <stddef.h>

#include "core/runstate.h"

/* config.c: RS_OK, or why the run cannot be made (errmsg says it). */
int rs__run_check_config(const rs_config_t *c, char *errmsg);
/* config.c: the algorithms --algo auto may choose under c: bit a for
 * algorithm a (those --algo NAME would not refuse). */
unsigned rs__run_eligible(const rs_config_t *c);

/* choose.c: the algorithm of every bucket, the depth and steps of those,
 * and run->algos_used. */
int rs__run_choose_algos(rs_run_t *run, char *errmsg);

/* load.c: the channels bucket b keeps busy (all for an algorithm that
 * runs on none: its load is the schedule's). */
int rs__run_bucket_busy(const rs_run_t *run, size_t b);

/* load.c: the NICs' load bucket b's clocks take (net/topo.h): its
 * algorithm's, on its busy channels alone (an idle one loads no NIC);
 * NULL without a topology of several nodes. */
const rs_topo_load_t *rs__run_bucket_load(const rs_run_t *run, size_t b);

/* edges.c: the most elements of any bucket. */
size_t rs__run_largest_bucket(const rs_run_t *run);
/* edges.c: the most elements one message carries: segment_bytes of the
 * dtype. */
size_t rs__run_seg_cap(const rs_run_t *run);
/* edges.c: trace records for worker r: at most one per message it
 * receives, in every iteration; and for every worker together. */
size_t rs__run_events_of(const rs_run_t *run, int r);
double rs__run_events_total(const rs_run_t *run);
/* edges.c: does some algorithm of the run keep worker r's bucket aside? */
int rs__run_stashes(const rs_run_t *run, int r);
/* edges.c: the directed edges of every algorithm the buckets run, and
 * *edge_elems (allocated: the caller frees it) the largest message of
 * each, in elements; peers is scratch for W peers. Not yet opened. */
int rs__run_list_edges(rs_run_t *run, int *peers, size_t **edge_elems);
/* edges.c: give every worker its links (after the edges are listed). */
int rs__run_link_workers(rs_run_t *run, int *peers);

/* flips.c: the test knob's bits, from config.test_flip; and flipping
 * them in this process's workers' results. */
int rs__run_parse_flips(rs_run_t *run, char *errmsg);
void rs__run_apply_flips(rs_run_t *run);

/* pool.c: run the algorithm on this process's workers' threads, warmup +
 * iterations times, checking after the first; the run's status. */
int rs__run_threads(rs_run_t *run);

#endif /* RINGSIM_RUN_RUN_H */
