/* algo/list.c - the algorithm table (algo.h's RS__ALGO_TABLE), indexed by
 * rs_algorithm_t, and nothing else: algo.c finds an algorithm here by
 * number or name, and a test links a table of its own in its place (a toy
 * row among the real ones) to show that the run needs nothing else. */
#include "algo/list.h"

#define ROW(VALUE, id) [RS_ALGO_##VALUE] = &rs__algo_##id,
const rs_algo_t *const rs__algos[RS_ALGO_COUNT] = {RS__ALGO_TABLE(ROW)};
