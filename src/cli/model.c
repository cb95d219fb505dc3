/* model.c - `ringsim model`: the simulated time of an algorithm's schedule
 * alone (--algo: any of them, or all side by side with the sizes where the
 * best one changes), without threads or data, for rings far larger than
 * the machine. */
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../algo/nccl.h" /* --like nccl */
#include "model_nccl.h"
#include "nccl_pick.h"
#include "option.h"        /* cli_datatype_name */
#include "ringsim/ringsim.h"

/* rs_parallel_for's pieces, counted for a progress line on a terminal
 * ("ringsim: model: simulating: 3/9 algorithms, 2 s"; none with --quiet
 * or off a terminal: progress.c). */
typedef struct counted {
  void (*fn)(void *ctx, int i);
  void *ctx;
  atomic_int done;
} counted_t;

static void counted_piece(void *ctx, int i) {
  counted_t *c = ctx;
  c->fn(c->ctx, i);
  atomic_fetch_add(&c->done, 1);
}

static void parallel_for(const options_t *opt, const char *unit, int n,
                         void (*fn)(void *ctx, int i), void *ctx) {
  counted_t c = {fn, ctx, 0};
  cli_progress_t *progress =
      opt->quiet ? NULL
                 : cli_progress_pieces("model: simulating", unit, &c.done, n);
  rs_parallel_for(n, counted_piece, &c);
  cli_progress_stop(progress);
}

/* A prediction for the JSON: null for an algorithm auto may not choose
 * (UINT64_MAX: one whose row says so, as gloo-ring's does). */
static json_t *ns_json(uint64_t ns) {
  return ns == UINT64_MAX ? json_null() : json_integer((json_int_t)ns);
}

/* One algorithm's simulated and predicted time over the buckets. */
typedef struct model_time {
  rs_algorithm_t algo;
  uint64_t sim;
  uint64_t predicted; /* (0 where not asked for: model_time's predict) */
  /* On a topology: the same schedule with a NIC of its own for every GPU
   * (nics = gpus), so no NIC is shared: what contention costs is sim -
   * uncontended. UINT64_MAX without a topology. */
  uint64_t uncontended;
  size_t segs; /* the ring's segments per chunk, over the buckets */
} model_time_t;

/* A time past what --json holds (2^63 ns, 292 years): the network is too
 * slow for the model (the clocks saturate rather than wrap). */
static int too_long(const model_time_t *t) {
  return (t->sim != UINT64_MAX && t->sim > (uint64_t)INT64_MAX) ||
         t->predicted > (uint64_t)INT64_MAX ||
         (t->uncontended != UINT64_MAX && t->uncontended > (uint64_t)INT64_MAX);
}

static int too_long_error(void) {
  return cli_usage_error(
      "model: %s", "the simulated time passes 2^63 ns (292 years), more than "
                   "the report holds: give faster links or a smaller model");
}

/* What `ringsim model` simulates an algorithm on (the arguments of
 * rs_netmodel_simulate_algo after the algorithm): the model's buckets, of
 * elem_size-byte elements cut into segments of at most segment_bytes, on
 * W workers of network net. */
typedef struct sim_args {
  const rs_netmodel_t *net;
  int workers;
  const rs_bucket_t *buckets;
  size_t bucket_count, segment_bytes, elem_size;
} sim_args_t;

/* (predict 0: not the predictions, which the text does not print for
 * --algo all on a topology, where each is a simulation of its own, nor
 * for rows) */
static model_time_t model_time(rs_algorithm_t algo, const sim_args_t *s,
                               int predict) {
  const rs_netmodel_t *net = s->net;
  const int W = s->workers;
  const rs_bucket_t *buckets = s->buckets;
  const size_t bucket_count = s->bucket_count, seg_bytes = s->segment_bytes,
               elem_size = s->elem_size;
  model_time_t t = {.algo = algo};
  t.sim = rs_netmodel_simulate_algo(algo, net, W, buckets, bucket_count,
                                    seg_bytes, elem_size);
  t.uncontended = UINT64_MAX;
  if (net->topo.enabled) {
    rs_netmodel_t own = *net;
    own.topo.nics = own.topo.gpus;
    t.uncontended =
        own.topo.nics == net->topo.nics
            ? t.sim
            : rs_netmodel_simulate_algo(algo, &own, W, buckets, bucket_count,
                                        seg_bytes, elem_size);
  }
  uint64_t last = 0; /* the bucket before's: DDP's buckets repeat a size */
  for (size_t b = 0; b < bucket_count && !cli_signal(); b++) {
    size_t k = rs_segs_per_chunk(buckets[b].elems, W, seg_bytes, elem_size);
    /* (On a topology a prediction is the bucket's schedule alone: one
     * bucket's is the run's.) */
    if (!predict)
      last = 0;
    else if (net->topo.enabled && bucket_count == 1)
      last = t.sim;
    else if (b == 0 || buckets[b].elems != buckets[b - 1].elems)
      last = rs_netmodel_predict_algo(algo, net, W, buckets[b].elems, k,
                                      seg_bytes, elem_size);
    t.predicted =
        t.predicted > UINT64_MAX - last ? UINT64_MAX : t.predicted + last;
    t.segs += k;
  }
  return t;
}

/* Where the best algorithm by the cost formulas (rs_auto_choose, as --algo
 * auto picks) changes, for one bucket of S bytes, S from 8 B (or one
 * element) to max_bytes: sampled at CROSS_STEPS sizes per doubling, then
 * each change located to the element by bisection. */
#define CROSS_STEPS 16
#define CROSS_MAX 64

typedef struct crossover {
  size_t elems;            /* the first size at which `to` is best */
  rs_algorithm_t from, to; /* best one element below, and at it */
  /* The predictions: every algorithm's (--json prints them all), or
   * from's and to's alone (the text; the rest UINT64_MAX). */
  uint64_t below[RS_ALGO_COUNT], at[RS_ALGO_COUNT];
} crossover_t;

/* (the argmin alone, which rs_auto_choose finds without running every
 * schedule to its end, trying `first` first (RS_ALGO_COUNT: none); among
 * the algorithms that run under net, those auto may choose) */
static rs_algorithm_t best_at(const options_t *opt, const rs_netmodel_t *net,
                              size_t elems, size_t elem_size,
                              rs_algorithm_t first) {
  unsigned fit = 0;
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    fit |= (unsigned)cli_algo_fits(net, (rs_algorithm_t)a) << a;
  const rs_sim_setup_t on = {net, opt->config.workers,
                             opt->config.segment_bytes, elem_size};
  return rs_auto_choose_first(&on, elems, fit, first);
}

/* One algorithm's prediction for one bucket of elems elements. */
static uint64_t predict_at(const options_t *opt, const rs_netmodel_t *net,
                           rs_algorithm_t algo, size_t elems,
                           size_t elem_size) {
  const rs_config_t *c = &opt->config;
  return rs_netmodel_predict_algo(
      algo, net, c->workers, elems,
      rs_segs_per_chunk(elems, c->workers, c->segment_bytes, elem_size),
      c->segment_bytes, elem_size);
}

/* The sizes the crossover search samples, from 8 B (or one element) to
 * max_elems, CROSS_STEPS a doubling, into at (NULL: only counted);
 * returns how many. */
static size_t cross_samples(size_t elem_size, size_t max_elems, size_t *at) {
  size_t lo = (8 + elem_size - 1) / elem_size, n = 0;
  max_elems = max_elems > lo ? max_elems : lo;
  if (at)
    at[n] = lo;
  n++;
  double x = (double)lo;
  while (lo < max_elems) {
    x *= 1.0 + 1.0 / CROSS_STEPS;
    size_t hi = (size_t)x > lo ? (size_t)x : lo + 1;
    lo = hi < max_elems ? hi : max_elems;
    if (at)
      at[n] = lo;
    n++;
  }
  return n;
}

/* The predictions at the crossovers: piece k is crossover k / (2 A),
 * one element below it or at it, algorithm k mod A (A = RS_ALGO_COUNT);
 * every algorithm's (all), or the two that cross's. As rs_auto_choose's
 * predictions: UINT64_MAX for one it never chooses. */
typedef struct cross_job {
  const options_t *opt;
  const rs_netmodel_t *net;
  size_t elem_size;
  int all;
  crossover_t *cross;
} cross_job_t;

static void cross_piece(void *ctx, int k) {
  const cross_job_t *j = ctx;
  crossover_t *c = &j->cross[k / (2 * RS_ALGO_COUNT)];
  const int at = k / RS_ALGO_COUNT % 2, a = k % RS_ALGO_COUNT;
  uint64_t *pred = at ? &c->at[a] : &c->below[a];
  *pred = UINT64_MAX;
  if (cli_signal() || !cli_algo_fits(j->net, (rs_algorithm_t)a) ||
      !cli_algo_info((rs_algorithm_t)a).auto_eligible ||
      (!j->all && a != (int)c->from && a != (int)c->to))
    return;
  *pred = predict_at(j->opt, j->net, (rs_algorithm_t)a, c->elems - !at,
                     j->elem_size);
}

/* --algo all's simulations, which do not depend on one another: the time
 * over the buckets (t, by algorithm) of each algorithm shown (the first
 * `shown` pieces, cli_algo_nth's), then the best algorithm at each
 * crossover sample (best): rs_parallel_for's pieces. */
typedef struct model_all {
  const options_t *opt;
  sim_args_t sim; /* (sim.net: the network of every piece) */
  int shown, predict;
  model_time_t *t;
  const size_t *sample;
  rs_algorithm_t *best;
  size_t samples;
} model_all_t;

static void model_all_piece(void *ctx, int i) {
  const model_all_t *m = ctx;
  if (cli_signal())
    return; /* (stopped: the caller prints nothing) */
  if (i < m->shown) {
    const rs_algorithm_t a = cli_algo_nth(m->sim.net, i);
    m->t[a] = model_time(a, &m->sim, m->predict);
  } else
    m->best[i - m->shown] = best_at(m->opt, m->sim.net, m->sample[i - m->shown],
                                    m->sim.elem_size, RS_ALGO_COUNT);
}

/* The crossovers (at most CROSS_MAX) along m's samples (cross_samples)
 * and the best algorithm at each (m->best), and the best at the smallest;
 * every algorithm's predictions at each (all), or the two that cross's.
 * Between two samples whose best differ, the change is found by
 * bisection; the predictions are worked out on the cores. */
static size_t crossovers(const model_all_t *m, int all, crossover_t *out,
                         rs_algorithm_t *first) {
  const options_t *opt = m->opt;
  const rs_netmodel_t *net = m->sim.net;
  const size_t elem_size = m->sim.elem_size, *sample = m->sample;
  const rs_algorithm_t *sample_best = m->best;
  const size_t samples = m->samples;
  size_t count = 0, lo = sample[0];
  rs_algorithm_t best = *first = sample_best[0];
  for (size_t i = 1; i < samples && count < CROSS_MAX && !cli_signal(); i++) {
    const size_t hi = sample[i];
    const rs_algorithm_t b = sample_best[i];
    while (b != best && count < CROSS_MAX) {
      /* best at lo, not at hi: the first size in (lo, hi] it is not */
      size_t a = lo, z = hi;
      rs_algorithm_t to = b;
      while (z - a > 1 && !cli_signal()) {
        size_t mid = a + (z - a) / 2;
        const rs_algorithm_t at = best_at(opt, net, mid, elem_size, best);
        if (at == best) {
          a = mid;
        } else {
          z = mid;
          to = at;
        }
      }
      crossover_t *c = &out[count++];
      c->elems = z;
      c->from = best;
      c->to = to;
      best = c->to;
      lo = z;
    }
    lo = hi;
  }
  cross_job_t job = {opt, net, elem_size, all, out};
  parallel_for(opt, "crossover predictions", (int)count * 2 * RS_ALGO_COUNT,
               cross_piece, &job);
  return count;
}

/* The table's algorithms NCCL does not run, said under it: ringsim's
 * own (rd, rhd, linear, hier) and gloo's ring. NCCL runs the ring, the
 * tree and nvls of this table, and NVLSTree (--like nccl). */
static void print_not_nccl(const rs_netmodel_t *net) {
  int n = 0;
  for (int a = 0; a < RS_ALGO_COUNT; a++)
    if (cli_algo_fits(net, (rs_algorithm_t)a) &&
        !cli_algo_info((rs_algorithm_t)a).in_nccl)
      printf("%s%s", n++ ? ", " : "\n  not in NCCL: ",
             rs_algorithm_name((rs_algorithm_t)a));
  if (n)
    printf(" (NCCL runs ring, tree, nvls and nvlstree: ringsim model "
           "--like nccl)\n");
}

/* Under --algo all's table: the algorithms shown that run on NCCL's
 * channels, and how many (their count is the topology's). */
static void print_channels_line(const options_t *opt, const rs_netmodel_t *net,
                                int W) {
  int channels = 1, on = 0;
  for (int a = 0; a < RS_ALGO_COUNT; a++) {
    const int C = rs_netmodel_channels((rs_algorithm_t)a, net, W);
    if (!cli_algo_fits(&opt->config.net, (rs_algorithm_t)a) || C < 2)
      continue;
    printf("%s%s", on++ ? ", " : "\n  channels   ",
           rs_algorithm_name((rs_algorithm_t)a));
    channels = C;
  }
  if (on)
    printf(" on %d channels, NCCL's count on this topology (--algo A "
           "--channels C sets them); the others on one\n",
           channels);
}

/* `ringsim model --algo all`: every algorithm's time, the fastest marked. */
static int print_all(const model_all_t *m, const rs_model_t *model,
                     double bytes) {
  const options_t *opt = m->opt;
  const rs_netmodel_t *net = m->sim.net;
  const model_time_t *t = m->t;
  const size_t elem_size = rs_dtype_size(rs_model_dtype(model));
  crossover_t cross[CROSS_MAX];
  rs_algorithm_t first;
  const size_t min_elems = m->sample[0];
  size_t ncross = crossovers(m, opt->json, cross, &first);
  if (cli_signal())
    return EXIT_RUN;
  const int W = opt->config.workers;
  /* (every loop over t: the algorithms shown, t's others unset) */
#define SHOWN(a)                                                               \
  for (int a = 0; a < RS_ALGO_COUNT; a++)                                      \
    if (cli_algo_fits(&opt->config.net, (rs_algorithm_t)a))
  int best = cli_algo_nth(&opt->config.net, 0);
  SHOWN(a) {
    if (t[a].sim == UINT64_MAX)
      return EXIT_RUN;
    best = t[a].sim < t[best].sim ? a : best;
  }
  /* Algorithms whose simulated time equals the best's, to the nanosecond,
   * tie: none of them is "the fastest" (rhd ties the ring at W = 4). */
  int tied = 0;
  SHOWN(a) { tied += t[a].sim == t[best].sim; }
  if (opt->json) {
    json_t *list = json_array(), *fastest = json_array();
    SHOWN(a) {
      if (t[a].sim == t[best].sim)
        json_array_append_new(fastest,
                              json_string(rs_algorithm_name(t[a].algo)));
    }
    SHOWN(a) {
      double algbw = t[a].sim ? bytes / (double)t[a].sim : 0;
      json_t *row = json_pack(
          "{s:s, s:I, s:I, s:f, s:f, s:b}", "algo",
          rs_algorithm_name(t[a].algo), "sim_ns", (json_int_t)t[a].sim,
          "predicted_ns", (json_int_t)t[a].predicted, "algbw_gbs", algbw,
          "busbw_gbs", rs_busbw(algbw, W), "in_nccl",
          cli_algo_info(t[a].algo).in_nccl);
      json_object_set_new(
          row, "channels",
          json_integer(rs_netmodel_channels(t[a].algo, net, W)));
      if (t[a].uncontended != UINT64_MAX)
        json_object_set_new(row, "uncontended_ns",
                            json_integer((json_int_t)t[a].uncontended));
      json_array_append_new(list, row);
    }
    json_t *cl = json_array();
    for (size_t i = 0; i < ncross; i++) {
      json_t *below = json_object(), *at = json_object();
      SHOWN(a) {
        const char *name = rs_algorithm_name((rs_algorithm_t)a);
        json_object_set_new(below, name, ns_json(cross[i].below[a]));
        json_object_set_new(at, name, ns_json(cross[i].at[a]));
      }
      json_array_append_new(cl,
                            json_pack("{s:I, s:s, s:s, s:o, s:o}", "bytes",
                                      (json_int_t)(cross[i].elems * elem_size),
                                      "from", rs_algorithm_name(cross[i].from),
                                      "to", rs_algorithm_name(cross[i].to),
                                      "predicted_ns_one_element_below", below,
                                      "predicted_ns_at", at));
    }
    uint64_t nccl_ns;
    cli_nccl_pick_t big = {0};
    json_t *nccl = json_null();
    if (cli_nccl_would(opt, net, model, &nccl_ns, &big))
      nccl = json_pack("{s:I, s:s, s:s, s:i}", "sim_ns", (json_int_t)nccl_ns,
                       "algo", rs_nccl_algo_name(big.pick.algo), "proto",
                       rs_proto_name(big.pick.proto), "channels",
                       big.pick.channels);
    json_t *o = json_pack(
        "{s:s, s:s, s:i, s:I, s:o, s:s, s:o, s:{s:I, s:I, s:s, s:o}, s:o}",
        "schema",
        "ringsim.model.all/1", "model", rs_model_name(model), "workers", W,
        "bytes", (json_int_t)bytes, "algos", list, "fastest",
        rs_algorithm_name(t[best].algo), "fastest_tied", fastest, "crossovers",
        "min_bytes", (json_int_t)(min_elems * elem_size), "max_bytes",
        (json_int_t)(rs_model_elems(model) * elem_size), "best_at_min",
        rs_algorithm_name(first), "changes", cl, "nccl", nccl);
    return cli_dump_json(o);
  }
  char size[32], name[CLI_SAFE_MAX];
  cli_human_bytes(bytes, size, sizeof size);
  printf("ringsim model: every algorithm on \"%s\", %d workers, %s per "
         "worker (the schedules alone: no threads, no data)\n",
         cli_safe(rs_model_name(model), name, sizeof name), W, size);
  cli_print_network(&opt->config.net);
  /* on a topology the prediction is the schedule (print the time without
   * contention instead); else the cost formula */
  const int topo = opt->config.net.topo.enabled;
  /* the names' column as wide as the longest ("gloo-ring") */
  int width = 4;
  SHOWN(a) {
    if ((int)strlen(rs_algorithm_name(t[a].algo)) > width)
      width = (int)strlen(rs_algorithm_name(t[a].algo));
  }
  printf("\n  %-*s %14s %14s %12s\n", width, "algo", "simulated us",
         topo ? "own NICs us" : "predicted us", "busbw GB/s");
  SHOWN(a) {
    double algbw = t[a].sim ? bytes / (double)t[a].sim : 0;
    printf("  %-*s %14.3f %14.3f %12.3f%s\n", width,
           rs_algorithm_name(t[a].algo),
           (double)t[a].sim / 1e3,
           (double)(topo ? t[a].uncontended : t[a].predicted) / 1e3,
           rs_busbw(algbw, W),
           t[a].sim != t[best].sim ? ""
           : tied > 1              ? "  tie: fastest"
                                   : "  fastest");
  }
  print_channels_line(opt, net, W);
  printf(
      "\n  crossovers: the best algorithm by the predictions (as --algo "
      "auto picks) for one bucket of S bytes, %zu B <= S <= %zu B\n",
      min_elems * elem_size,
      (rs_model_elems(model) > min_elems ? rs_model_elems(model) : min_elems) *
          elem_size);
  printf("    from %12zu B  %s\n", min_elems * elem_size,
         rs_algorithm_name(first));
  for (size_t i = 0; i < ncross; i++) {
    const crossover_t *c = &cross[i];
    printf("    from %12zu B  %-8s (predicted us at %zu B: %s %.3f, %s %.3f;"
           " at %zu B: %s %.3f, %s %.3f)\n",
           c->elems * elem_size, rs_algorithm_name(c->to),
           (c->elems - 1) * elem_size, rs_algorithm_name(c->from),
           (double)c->below[c->from] / 1e3, rs_algorithm_name(c->to),
           (double)c->below[c->to] / 1e3, c->elems * elem_size,
           rs_algorithm_name(c->from), (double)c->at[c->from] / 1e3,
           rs_algorithm_name(c->to), (double)c->at[c->to] / 1e3);
  }
  if (ncross == CROSS_MAX)
    printf("    (stopped at %d changes)\n", CROSS_MAX);
  print_not_nccl(net);
  cli_print_nccl_would(opt, net, model, W);
  return 0;
#undef SHOWN
}

/* `ringsim model` with a list of sizes (--workers 8,64,512 under --net,
 * or --topo ...,nodes=1,8,64): a row per size, the algorithm's time (or
 * every algorithm's with --algo all, and the fastest), net as given but
 * for each row's workers (and nodes). Every row is computed before any is
 * printed, so a failure prints nothing on stdout. */
typedef struct model_rows {
  model_time_t t[CLI_MODEL_MAX_ROWS][RS_ALGO_COUNT];
  /* An algorithm of the columns that does not run on a row's nodes (nvls
   * on one node alone): no time, "-" */
  unsigned char absent[CLI_MODEL_MAX_ROWS][RS_ALGO_COUNT];
  int best[CLI_MODEL_MAX_ROWS];
  rs_algorithm_t algos[RS_ALGO_COUNT]; /* the algorithms of the rows */
  int count;
} model_rows_t;

/* Each row's times; 0, or the exit status (having said why). */
/* compute_rows' pieces (rs_parallel_for): one row's algorithm each. */
typedef struct rows_job {
  const options_t *opt;
  sim_args_t sim; /* (net and workers: each row's own) */
  model_rows_t *m;
} rows_job_t;

static void rows_piece(void *ctx, int k) {
  const rows_job_t *j = ctx;
  const int i = k / j->m->count;
  const rs_algorithm_t a = j->m->algos[k % j->m->count];
  if (cli_signal())
    return;
  rs_netmodel_t row = *j->sim.net;
  if (j->sim.net->topo.enabled)
    row.topo.nodes = j->opt->rows.nodes[i];
  if (!cli_algo_fits(&row, a)) {
    j->m->absent[i][a % RS_ALGO_COUNT] = 1; /* (a is one: cli_algo_fits) */
    return;
  }
  sim_args_t sim = j->sim;
  sim.net = &row;
  sim.workers = j->opt->rows.workers[i];
  j->m->t[i][a] = model_time(a, &sim, j->opt->json);
}

/* Every row's times, on the machine's cores, then the best of each. */
static int compute_rows(const options_t *opt, const rs_model_t *model,
                        const rs_netmodel_t *net, const rs_bucket_t *buckets,
                        size_t bucket_count, model_rows_t *m) {
  rows_job_t job = {opt,
                    {net, opt->config.workers, buckets, bucket_count,
                     opt->config.segment_bytes,
                     rs_dtype_size(rs_model_dtype(model))},
                    m};
  parallel_for(opt, m->count > 1 ? "rows x algorithms" : "rows",
               opt->rows.count * m->count, rows_piece, &job);
  if (cli_signal())
    return EXIT_RUN;
  for (int i = 0; i < opt->rows.count; i++) {
    m->best[i] = -1;
    for (int k = 0; k < m->count; k++) {
      const int a = m->algos[k];
      const model_time_t *t = &m->t[i][a];
      if (m->absent[i][a])
        continue;
      if (t->sim == UINT64_MAX) {
        fprintf(stderr, "ringsim: out of memory\n");
        return EXIT_RUN;
      }
      if (too_long(t))
        return too_long_error();
      m->best[i] =
          m->best[i] < 0 || t->sim < m->t[i][m->best[i]].sim ? a : m->best[i];
    }
  }
  return 0;
}

static int rows_json(const options_t *opt, const rs_model_t *model,
                     const model_rows_t *m, double bytes) {
  json_t *rows = json_array();
  for (int i = 0; i < opt->rows.count; i++) {
    const int W = opt->rows.workers[i], best = m->best[i];
    const double algbw =
        m->t[i][best].sim ? bytes / (double)m->t[i][best].sim : 0;
    json_t *times = json_object();
    for (int k = 0; k < m->count; k++) {
      const rs_algorithm_t a = m->algos[k];
      const model_time_t *t = &m->t[i][a];
      if (m->absent[i][a])
        continue;
      json_t *one = json_pack("{s:I, s:I}", "sim_ns", (json_int_t)t->sim,
                              "predicted_ns", (json_int_t)t->predicted);
      if (t->uncontended != UINT64_MAX)
        json_object_set_new(one, "uncontended_ns",
                            json_integer((json_int_t)t->uncontended));
      json_object_set_new(times, rs_algorithm_name(a), one);
    }
    json_t *r = json_pack("{s:i, s:o, s:s, s:f}", "workers", W, "algos", times,
                          "fastest", rs_algorithm_name((rs_algorithm_t)best),
                          "busbw_gbs", rs_busbw(algbw, W));
    if (opt->rows.nodes[0])
      json_object_set_new(r, "nodes", json_integer(opt->rows.nodes[i]));
    json_array_append_new(rows, r);
  }
  return cli_dump_json(json_pack("{s:s, s:s, s:I, s:o}", "schema",
                              "ringsim.model.rows/1", "model",
                              rs_model_name(model), "bytes", (json_int_t)bytes,
                              "rows", rows));
}

static void rows_text(const options_t *opt, const rs_model_t *model,
                      const rs_netmodel_t *net, const model_rows_t *m,
                      double bytes) {
  const int topo = net->topo.enabled, all = opt->algo_all;
  char size[32], name[CLI_SAFE_MAX];
  cli_human_bytes(bytes, size, sizeof size);
  printf("ringsim model: %s on \"%s\", %s per worker, %d sizes (the "
         "schedules alone: no threads, no data)\n",
         all ? "every algorithm" : rs_algorithm_name(opt->config.algo),
         cli_safe(rs_model_name(model), name, sizeof name), size,
         opt->rows.count);
  rs_netmodel_t shown = *net;
  shown.topo.nodes = 0; /* (cli_print_network: each row's) */
  cli_print_network(&shown);
  printf("\n  %7s %6s  simulated us%s\n  %7s %6s", "", "",
         topo && !all ? ", and with a NIC for every GPU (no NIC shared)" : "",
         "workers", topo ? "nodes" : "");
  for (int k = 0; k < m->count; k++)
    printf(" %10s", rs_algorithm_name(m->algos[k]));
  if (topo && !all)
    printf(" %12s", "own NICs");
  printf(" %11s%s\n", all ? "best busbw" : "busbw GB/s",
         all ? "  fastest" : "");
  for (int i = 0; i < opt->rows.count; i++) {
    const int W = opt->rows.workers[i], best = m->best[i];
    const double algbw =
        m->t[i][best].sim ? bytes / (double)m->t[i][best].sim : 0;
    printf("  %7d", W);
    if (topo)
      printf(" %6d", opt->rows.nodes[i]);
    else
      printf(" %6s", "");
    for (int k = 0; k < m->count; k++)
      if (m->absent[i][m->algos[k]])
        printf(" %10s", "-");
      else
        printf(" %10.3f", (double)m->t[i][m->algos[k]].sim / 1e3);
    if (topo && !all)
      printf(" %12.3f", (double)m->t[i][m->algos[0]].uncontended / 1e3);
    printf(" %11.3f%s%s\n", rs_busbw(algbw, W), all ? "  " : "",
           all ? rs_algorithm_name((rs_algorithm_t)best) : "");
  }
}

static int print_rows(const options_t *opt, const rs_model_t *model,
                      const rs_netmodel_t *net, const rs_bucket_t *buckets,
                      size_t bucket_count) {
  model_rows_t *m = calloc(1, sizeof *m);
  if (!m) {
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  /* the columns: every algorithm that runs on some row (nvls on one
   * node, nvlstree on several), in the table's order */
  m->count = 0;
  for (int a = 0; a < RS_ALGO_COUNT && opt->algo_all; a++) {
    int fits = 0;
    for (int i = 0; i < opt->rows.count && !fits; i++) {
      rs_netmodel_t row = *net;
      if (net->topo.enabled)
        row.topo.nodes = opt->rows.nodes[i];
      fits = cli_algo_fits(&row, (rs_algorithm_t)a);
    }
    if (fits)
      m->algos[m->count++] = (rs_algorithm_t)a;
  }
  if (!opt->algo_all)
    m->algos[m->count++] = opt->config.algo;
  const double bytes = (double)rs_model_elems(model) *
                       (double)rs_dtype_size(rs_model_dtype(model));
  int rc = compute_rows(opt, model, net, buckets, bucket_count, m);
  if (rc == 0 && opt->json)
    rc = rows_json(opt, model, m, bytes);
  else if (rc == 0)
    rows_text(opt, model, net, m, bytes);
  free(m);
  return rc;
}

/* The network and the rows, checked: -1, or the exit status (said). */
static int check_network(const options_t *opt, const rs_netmodel_t *net) {
  char err[RS_ERRMSG_MAX];
  if (!net->enabled)
    return cli_usage_error("model: %s",
                           "--net latency=...,bandwidth=... is required, or "
                           "a topology: give --net or --topo");
  if (opt->rows.count > 1 && opt->rows.nodes[0] && opt->given[OPT_WORKERS])
    return cli_usage_error("model: %s",
                           "--workers with a list of nodes: each row's "
                           "workers are its nodes x gpus; leave --workers "
                           "out");
  if (opt->rows.count > 1 && !opt->rows.nodes[0] && net->topo.enabled)
    return cli_usage_error("model: %s",
                           "a list of --workers with --topo: list its nodes "
                           "instead (nodes=1,8,64), W = nodes x gpus each");
  for (int i = 0; i < opt->rows.count; i++) {
    rs_netmodel_t row = *net;
    if (opt->rows.nodes[0])
      row.topo.nodes = opt->rows.nodes[i];
    if (rs_netmodel_check(&row, opt->rows.workers[i], err))
      return cli_usage_error("model: %s", err);
    if (!opt->algo_all && (unsigned)opt->config.algo < RS_ALGO_COUNT &&
        rs_algo_fits(&row, opt->config.algo, err))
      return cli_usage_error("model: --algo %s", err);
  }
  if (rs_netmodel_check(net, opt->config.workers, err))
    return cli_usage_error("model: %s", err);
  /* (as a run, step and diff refuse it: its nodes are the topology's) */
  if (!opt->algo_all && (unsigned)opt->config.algo < RS_ALGO_COUNT &&
      rs_algo_fits(net, opt->config.algo, err))
    return cli_usage_error("model: --algo %s", err);
  return -1;
}

/* One algorithm's time, as text or --json. */
static int print_one(const options_t *opt, const rs_model_t *model,
                     const rs_netmodel_t *net, const model_time_t *t,
                     size_t bucket_count) {
  const int W = opt->config.workers;
  const rs_algorithm_t algo = opt->config.algo;
  const size_t elems = rs_model_elems(model);
  const size_t elem_size = rs_dtype_size(rs_model_dtype(model));
  const double bytes = (double)elems * (double)elem_size;
  const uint64_t sim = t->sim;
  double algbw = sim ? bytes / (double)sim : 0; /* bytes per ns = GB/s */
  double busbw = rs_busbw(algbw, W); /* algbw is finite: 0 for one worker */
  if (opt->json) {
    json_t *o = json_pack(
        "{s:s, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f}",
        "schema", "ringsim.model/1", "model", rs_model_name(model), "algo",
        rs_algorithm_name(algo), "workers", W, "elems", (json_int_t)elems,
        "bytes", (json_int_t)(elems * elem_size), "buckets",
        (json_int_t)bucket_count, "segs_per_chunk", (json_int_t)t->segs,
        "sim_ns", (json_int_t)sim, "predicted_ns", (json_int_t)t->predicted,
        "algbw_gbs", algbw, "busbw_gbs", busbw);
    if (o && t->uncontended != UINT64_MAX)
      json_object_set_new(o, "uncontended_ns",
                          json_integer((json_int_t)t->uncontended));
    json_object_set_new(o, "in_nccl",
                        json_boolean(cli_algo_info(algo).in_nccl));
    json_object_set_new(o, "channels",
                        json_integer(rs_netmodel_channels(algo, net, W)));
    return cli_dump_json(o);
  }
  char size[32], name[CLI_SAFE_MAX];
  cli_human_bytes(bytes, size, sizeof size);
  printf("ringsim model: %s all-reduce of \"%s\" on %d workers, %s per "
         "worker (the schedule alone: no threads, no data)\n",
         rs_algorithm_name(algo),
         cli_safe(rs_model_name(model), name, sizeof name), W, size);
  cli_print_network(net);
  const rs_algo_info_t info = cli_algo_info(algo);
  if (!info.in_nccl)
    printf("\n  nccl       %s is not in NCCL (it runs ring and tree, and "
           "nvls, nvlstree: ringsim model --like nccl)",
           rs_algorithm_name(algo));
  const int channels = rs_netmodel_channels(algo, net, W);
  if (info.textbook_ring)
    printf("\n  schedule   %zu bucket%s x %d steps, %zu segment%s per chunk "
           "over the buckets\n",
           bucket_count, bucket_count == 1 ? "" : "s", W > 1 ? 2 * (W - 1) : 0,
           t->segs, t->segs == 1 ? "" : "s");
  if (channels > 1)
    printf("  channels   %d of NCCL's (%s), each a ring on its part of every "
           "bucket\n",
           channels,
           opt->given[OPT_CHANNELS] ? "--channels"
                                    : "NCCL's count on this topology");
  else
    printf("\n  schedule   %zu bucket%s of %s\n", bucket_count,
           bucket_count == 1 ? "" : "s", rs_algorithm_name(algo));
  printf("  simulated  %.3f us   algbw %.3f GB/s   busbw %.3f GB/s\n",
         (double)sim / 1e3, algbw, busbw);
  printf("  predicted  %.3f us   %s%s\n", (double)t->predicted / 1e3,
         net->topo.enabled    ? "each bucket's schedule alone (a topology has "
                                "no closed formula)"
         : info.textbook_ring ? RS_NETMODEL_FORMULA
                              : "the algorithm's cost formula (algorithms.md)",
         net->link_count || net->straggler_count
             ? " (for a uniform ring: the overrides are not in it)"
             : "");
  if (t->uncontended != UINT64_MAX)
    printf("  own NICs   %.3f us   the same schedule with a NIC for every GPU "
           "(no NIC shared): contention costs %.3f us\n",
           (double)t->uncontended / 1e3,
           (double)(sim - (t->uncontended < sim ? t->uncontended : sim)) / 1e3);
  return 0;
}

int cli_run_model(const options_t *opt, const rs_model_t *model) {
  if (opt->nccl.on) { /* (model_nccl.c) */
    const int rc = check_network(opt, &opt->config.net);
    return rc >= 0 ? rc : cli_model_nccl(opt, model);
  }
  /* The simulations stop at a signal (signals.c): nothing is printed, and
   * main exits 128 + the signal. */
  rs_netmodel_t stoppable = opt->config.net;
  stoppable.stop = cli_signal_flag();
  const rs_netmodel_t *net = &stoppable;
  const int W = opt->config.workers;
  int rc = check_network(opt, net);
  if (rc >= 0)
    return rc;
  rs_bucket_t *buckets;
  size_t bucket_count;
  if (rs_model_buckets(model, opt->config.first_bucket_bytes,
                       opt->config.bucket_bytes, &buckets, &bucket_count)) {
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  const size_t elem_size = rs_dtype_size(rs_model_dtype(model));
  const sim_args_t sim = {
      net, W, buckets, bucket_count, opt->config.segment_bytes, elem_size};
  if (opt->rows.count > 1) {
    rc = print_rows(opt, model, net, buckets, bucket_count);
    free(buckets);
    return rc;
  }
  if (opt->algo_all) {
    /* every algorithm's time and the best at each crossover sample, on
     * the machine's cores; then the crossovers between the samples */
    model_time_t t[RS_ALGO_COUNT];
    const size_t samples =
        cross_samples(elem_size, rs_model_elems(model), NULL);
    size_t *sample = malloc(samples * sizeof *sample);
    rs_algorithm_t *best = malloc(samples * sizeof *best);
    if (!sample || !best || samples > INT_MAX - RS_ALGO_COUNT) {
      free(sample);
      free(best);
      free(buckets);
      fprintf(stderr, "ringsim: out of memory\n");
      return EXIT_RUN;
    }
    cross_samples(elem_size, rs_model_elems(model), sample);
    model_all_t m = {.opt = opt,
                     .sim = sim,
                     .shown = cli_algos(net),
                     .predict = opt->json || !net->topo.enabled,
                     .t = t,
                     .sample = sample,
                     .best = best,
                     .samples = samples};
    parallel_for(opt, "algorithms and size samples", m.shown + (int)samples,
                 model_all_piece, &m);
    free(buckets);
    rc = cli_signal() ? EXIT_RUN : -1;
    for (int i = 0; rc < 0 && i < m.shown; i++)
      if (too_long(&t[cli_algo_nth(net, i)]))
        rc = too_long_error();
    if (rc < 0) {
      rc = print_all(&m, model,
                     (double)rs_model_elems(model) * (double)elem_size);
      if (rc && !cli_signal())
        fprintf(stderr, "ringsim: out of memory\n");
    }
    free(sample);
    free(best);
    return rc;
  }
  cli_progress_t *progress =
      opt->quiet ? NULL : cli_progress_count("model: simulating", NULL, 0);
  model_time_t t = model_time(opt->config.algo, &sim, 1);
  cli_progress_stop(progress);
  free(buckets);
  if (cli_signal())
    return EXIT_RUN;
  if (t.sim == UINT64_MAX) {
    fprintf(stderr, "ringsim: out of memory\n");
    return EXIT_RUN;
  }
  if (too_long(&t))
    return too_long_error();
  return print_one(opt, model, net, &t, bucket_count);
}
