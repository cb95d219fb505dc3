/* load.c - the NICs' load a bucket's clocks take in a threaded run
 * (net/topo.h): its algorithm's, on its busy channels alone (an idle
 * channel loads no NIC). run.c makes the loads, pool.c's workers take
 * them. */
#include "algo/channels.h"
#include "run/run.h"

/* The channels bucket b runs on: its busy ones (algo/channels.h), or
 * all of the shape's. */
int rs__run_bucket_busy(const rs_run_t *run, size_t b) {
  if (!(run->bucket_algo[b]->caps & RS__CAP_CHANNELS))
    return rs__shape_channels(run->shape);
  return rs__shape_channels(
      rs__rings_busy_shape(run->shape, run->buckets[b].elems));
}

const rs_topo_load_t *rs__run_bucket_load(const rs_run_t *run, size_t b) {
  const int busy = rs__run_bucket_busy(run, b);
  const rs_topo_load_t *load =
      busy < rs__shape_channels(run->shape) && run->busy_load
          ? &run->busy_load[busy]
          : &run->topo_load[run->bucket_choice[b]];
  return load->pattern ? load : NULL;
}
