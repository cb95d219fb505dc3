/* algo/auto.c - --algo auto: per bucket, the algorithm the alpha-beta cost
 * formulas predict fastest (as NCCL's tuner picks an algorithm per size),
 * under a network model: --net's, or this machine's as src/machine.c
 * measures it (with real runs, so from a layer above the run: the command
 * and the bindings measure, the run only chooses).
 *
 * DESIGN
 * - The choice is an argmin over the eligible algorithms' predict (algo.h)
 *   for the bucket: no other rule, so `ringsim model --algo all`, the
 *   report and the tests can recompute it from the printed predictions.
 * - Each on the channels it runs on unless told (rs_netmodel_channels:
 *   the ring on NCCL's count on a topology NCCL's model knows, the others
 *   on one), as `ringsim model --algo all` prints them: a run's buckets
 *   of the ring take its channels, the others none (run/run.c).
 * - The machine's model is measured, not assumed: src/machine.c.
 * - Only the algorithms whose row says so (RS__CAP_AUTO). Never gloo-ring:
 *   it is the ring with gloo's direction, layout and order of additions,
 *   there to reproduce PyTorch's bits, not to be faster; its cost is the
 *   ring's within a segment's rounding, so choosing it would only change
 *   which bits a user gets.
 */
#include "algo/algo.h"
#include "algo/list.h"
#include "ringsim/internal/command.h" /* rs_auto_choose_first */

/* The argmin alone (no predictions wanted). On a topology a prediction
 * is a simulation: the eligible algorithms are taken by their lower
 * bounds (rs__algo_least), the least first, since it most likely wins
 * and then bounds the rest; one whose bound the best so far already
 * beats is not simulated, and the rest only while they can still win
 * (rs__predict_bounded). Those without a bound come last, cheapest to
 * simulate first (rs_algo_t's sim_work). A tie goes to the lower index,
 * as in rs_auto_choose's own loop. */
static rs_algorithm_t argmin(const rs_sim_setup_t *on, size_t elems,
                             size_t segs, unsigned eligible, int first) {
  const rs_netmodel_t *m = on->net;
  const int workers = on->workers;
  const size_t segment_bytes = on->segment_bytes, elem_size = on->elem_size;
  const rs_shape_t shape = rs__shape_of(m, workers);
  int order[RS_ALGO_COUNT], n = 0;
  uint64_t least[RS_ALGO_COUNT];
  double work[RS_ALGO_COUNT];
  for (int a = 0; a < RS_ALGO_COUNT; a++) {
    const rs_algo_t *algo = rs__algo_get((rs_algorithm_t)a);
    if (!(eligible & (1u << a)) || !(algo->caps & RS__CAP_AUTO))
      continue;
    const int bounded = m->topo.enabled && (algo->least || algo->step_least);
    const uint64_t lb = bounded ? rs__algo_least(algo, m, workers, elems, segs,
                                                 segment_bytes, elem_size)
                                : 0;
    const double w =
        algo->sim_work
            ? algo->sim_work(shape, elems, segs)
            : (double)algo->steps(shape, RS_COLL_ALLREDUCE) * shape.workers;
    /* (the key: the bound, or past every bound and then the work) */
    const uint64_t key = bounded ? lb : UINT64_MAX;
    int i = n++;
    for (; i > 0 &&
           (least[i - 1] > key ||
            (least[i - 1] == key && key == UINT64_MAX && work[i - 1] > w));
         i--) { /* (stable: ties by index) */
      order[i] = order[i - 1];
      least[i] = least[i - 1];
      work[i] = work[i - 1];
    }
    order[i] = a;
    least[i] = key;
    work[i] = w;
  }
  for (int i = n - 1; i > 0; i--) /* (first, to the front) */
    if (order[i] == first) {
      const uint64_t key = least[i];
      for (; i > 0; i--) {
        order[i] = order[i - 1];
        least[i] = least[i - 1];
      }
      order[0] = first;
      least[0] = key;
    }
  rs_algorithm_t best = RS_ALGO_RING;
  uint64_t best_ns = UINT64_MAX;
  for (int i = 0; i < n; i++) {
    const int a = order[i];
    /* a wins with less than best_ns, or as much from a lower index */
    const int lower = best_ns == UINT64_MAX || a < (int)best;
    if (!lower && best_ns == 0)
      continue;
    if (best_ns != UINT64_MAX && least[i] != UINT64_MAX &&
        (least[i] > best_ns || (least[i] == best_ns && !lower)))
      continue; /* (its bound: it cannot win) */
    const uint64_t ns = rs__predict_bounded(
        (rs_algorithm_t)a, m, workers, elems, segs, segment_bytes, elem_size,
        lower ? best_ns : best_ns - 1);
    if (best_ns == UINT64_MAX || ns < best_ns || (ns == best_ns && lower)) {
      best_ns = ns;
      best = (rs_algorithm_t)a;
    }
  }
  return best;
}

rs_algorithm_t rs_auto_choose(const rs_sim_setup_t *on, size_t elems,
                              unsigned eligible, uint64_t *predicted) {
  const rs_netmodel_t *m = on->net;
  const int workers = on->workers;
  const size_t segment_bytes = on->segment_bytes, elem_size = on->elem_size;
  const size_t segs =
      rs_segs_per_chunk(elems, workers, segment_bytes, elem_size);
  if (!predicted)
    return argmin(on, elems, segs, eligible, RS_ALGO_COUNT);
  rs_algorithm_t best = RS_ALGO_RING;
  uint64_t best_ns = UINT64_MAX;
  for (int a = 0; a < RS_ALGO_COUNT; a++) {
    uint64_t ns = UINT64_MAX;
    if ((eligible & (1u << a)) &&
        (rs__algo_get((rs_algorithm_t)a)->caps & RS__CAP_AUTO)) {
      ns = rs_netmodel_predict_algo((rs_algorithm_t)a, m, workers, elems, segs,
                                    segment_bytes, elem_size);
      if (ns < best_ns || best_ns == UINT64_MAX) {
        best_ns = ns;
        best = (rs_algorithm_t)a;
      }
    }
    if (predicted)
      predicted[a] = ns;
  }
  return best;
}

rs_algorithm_t rs_auto_choose_first(const rs_sim_setup_t *on, size_t elems,
                                    unsigned eligible, rs_algorithm_t first) {
  return argmin(on, elems,
                rs_segs_per_chunk(elems, on->workers, on->segment_bytes,
                                  on->elem_size),
                eligible, (int)first);
}
