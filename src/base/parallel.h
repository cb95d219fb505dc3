/* parallel.h - the helper threads that generate inputs and check results.
 *
 * DESIGN: every thread runs the same function on the same argument and
 * takes its work from a counter in it (an atomic), so the work is shared
 * however many threads start, and what is computed does not depend on
 * which thread computes it. The calling thread works too, so a machine
 * that cannot start a thread still finishes (on one).
 */
#ifndef RINGSIM_PARALLEL_H
#define RINGSIM_PARALLEL_H

#define RS_PARALLEL_MAX 64

/* Run fn(arg) on threads threads at once (the caller's among them; at
 * most RS_PARALLEL_MAX), and return when every one has returned. */
void rs__parallel(int threads, void *(*fn)(void *), void *arg);

/* The cores this process may run on (its affinity mask: taskset and
 * cpusets count; at least 1). */
int rs__cores(void);

#endif /* RINGSIM_PARALLEL_H */
