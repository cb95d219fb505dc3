/* choose.c - the algorithm each bucket runs: the config's, or for
 * --algo auto the one the network model predicts fastest for the bucket's
 * size (algo/auto.c's argmin) among those the config allows.
 */
#include <stdlib.h>
#include <string.h>

#include "algo/list.h"
#include "base/util.h"
#include "run/run.h"

/* The algorithm of every bucket: config's, or (--algo auto) the one the
 * model predicts fastest for its size, the model this machine's, measured,
 * unless --net gives one. Then the depth and steps of those. */
int rs__run_choose_algos(rs_run_t *run, char *errmsg) {
  const rs_config_t *c = &run->config;
  const size_t buckets = run->result.buckets;
  const int autoc = c->algo == RS_ALGO_AUTO;
  run->bucket_choice = calloc(buckets + 1, sizeof *run->bucket_choice);
  run->bucket_algo = calloc(buckets + 1, sizeof *run->bucket_algo);
  if (autoc)
    run->bucket_predicted =
        calloc((buckets + 1) * RS_ALGO_COUNT, sizeof *run->bucket_predicted);
  if (!run->bucket_choice || !run->bucket_algo ||
      (autoc && !run->bucket_predicted))
    return rs__err(errmsg, RS_ENOMEM, "out of memory");
  if (autoc) {
    if (c->net.enabled) {
      run->auto_model = c->net;
      run->auto_model.channels = run->channels_given; /* (each its own) */
    } else if (c->machine.enabled) {
      run->auto_model = c->machine;
      run->auto_measured = 1;
    } else {
      return rs__err(errmsg, RS_EINVAL,
                     "algo auto: no network model to choose by: give net, "
                     "or measure this machine (rs_config_measure_machine)");
    }
  }
  /* (eligible under the channels given: those the run took are the
   * ring's alone) */
  rs_config_t given = *c;
  given.net.channels = run->channels_given;
  const unsigned mask = rs__run_eligible(&given);
  run->depth = 0;
  run->result.steps = 0;
  for (size_t b = 0; b < buckets; b++) {
    rs_algorithm_t a = c->algo;
    uint64_t *pred = autoc ? &run->bucket_predicted[b * RS_ALGO_COUNT] : NULL;
    if (autoc && b && run->buckets[b].elems == run->buckets[b - 1].elems) {
      /* the same size as the bucket before: its choice (DDP's buckets
       * repeat a size, and a topology's predictions are simulations) */
      a = run->bucket_choice[b - 1];
      memcpy(pred, pred - RS_ALGO_COUNT, RS_ALGO_COUNT * sizeof *pred);
    } else if (autoc) {
      const rs_sim_setup_t on = {&run->auto_model, c->workers, c->segment_bytes,
                                 run->elem_size};
      a = rs_auto_choose(&on, run->buckets[b].elems, mask, pred);
    }
    run->bucket_choice[b] = a;
    run->bucket_algo[b] = rs__algo_get(a);
    run->algos_used |= 1u << a;
    if (c->workers > 1) {
      int depth = run->bucket_algo[b]->depth(run->shape);
      int steps = run->bucket_algo[b]->steps(run->shape, c->collective);
      run->depth = depth > run->depth ? depth : run->depth;
      run->result.steps = steps > run->result.steps ? steps : run->result.steps;
    }
  }
  return RS_OK;
}
