/* step.c - `ringsim step`: DDP's training step on the simulated clock
 * (ringsim/step.h, docs/step.md). Per algorithm and bucket cap, the first
 * step (one bucket: DDP's first backward) and the later ones (its rebuilt
 * buckets), each timed by the step's simulation; for one configuration
 * of at most STEP_MAX_THREADS workers the all-reduces also run on
 * threads with the same ready times, checked as a run's are, and their
 * simulated end must be the simulation's. With --like nccl each bucket's
 * all-reduce is NCCL's pick, one collective of ringsim's predicted time
 * (step_nccl.c): the schedule alone.
 */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"
#include "option.h"
#include "ringsim/step.h"
#include "step_nccl.h"

/* The longest simulated time the report holds: 2^63 - 1 ns, as ringsim
 * model's. */
#define STEP_NS_MAX ((uint64_t)INT64_MAX)

/* The most workers whose all-reduces run on threads. */
#define STEP_MAX_THREADS 16

/* One row: an algorithm on one cap, its first and later steps. */
typedef struct step_row {
  rs_algorithm_t algo;
  size_t cap;
  rs_step_time_t first, later;
  uint64_t total_ns; /* first + (iterations - 1) later */
  int best;          /* the fastest total of its algorithm's rows (the
                        first of them that ties) */
  int shares_first;  /* first is its algorithm's first row's (one bucket
                        whatever the cap): not its own to free */
  int shares_later;  /* later is the row before's: its cap makes the same
                        buckets (not its own to free either) */
} step_row_t;

static int check_step(options_t *o) {
  rs_netmodel_t *net = &o->config.net;
  char err[RS_ERRMSG_MAX];
  if (!o->params)
    return cli_refuse(CLI_STEP, "--params MODEL.json is required");
  if (!net->enabled)
    return cli_refuse(CLI_STEP, "--net latency=...,bandwidth=... is required, "
                                "or a topology: give --net or --topo");
  int rc = cli_topo_workers(o);
  if (rc >= 0)
    return rc;
  if (rs_netmodel_check(net, o->config.workers, err))
    return cli_refuse(CLI_STEP, "%s", err);
  if ((rc = step_nccl_check(o)) >= 0 || (rc = cli_check_channels(o)) >= 0)
    return rc;
  if (!o->nccl.on && !o->algo_all && (unsigned)o->config.algo < RS_ALGO_COUNT &&
      rs_algo_fits(net, o->config.algo, err))
    return cli_refuse(CLI_STEP, "--algo %s", err);
  if (o->config.hook == RS_HOOK_POWERSGD &&
      (o->config.powersgd_start || o->config.powersgd_feedback ||
       o->config.powersgd_warm))
    return cli_refuse(CLI_STEP,
                      "--hook powersgd: ringsim step times every step "
                      "compressed, and error feedback and warm start move "
                      "the same elements: give powersgd:rank=R alone");
  if (o->config.hook == RS_HOOK_POWERSGD && o->trace)
    return cli_refuse(CLI_STEP,
                      "--trace records the threads' runs, and --hook "
                      "powersgd's step is the schedule alone (its "
                      "all-reduces run on threads in a run: ringsim --hook "
                      "powersgd --trace FILE)");
  if (o->trace && (o->step.no_threads || o->algo_all || o->step.cap_count > 1 ||
                   o->config.workers > STEP_MAX_THREADS))
    return cli_refuse(CLI_STEP,
                      "--trace records the threads' runs: one algorithm, one "
                      "cap, at most %d workers, without --no-threads",
                      STEP_MAX_THREADS);
  if (o->step.slow_worker >= o->config.workers)
    return cli_refuse(CLI_STEP,
                      "--straggler: worker %d does not exist (workers "
                      "0..%d)",
                      o->step.slow_worker, o->config.workers - 1);
  return -1;
}

/* Does the step run its all-reduces on threads? One configuration of a
 * few workers, unless --no-threads. */
static int on_threads(const options_t *o) {
  /* (powersgd's three all-reduces a bucket are runs of their own in a
   * run, rs_powersgd_execute; here the schedule alone times them; and
   * the threaded run has no NCCL algorithms yet) */
  return !o->step.no_threads && !o->algo_all && o->step.cap_count <= 1 &&
         o->config.workers <= STEP_MAX_THREADS &&
         o->config.hook != RS_HOOK_POWERSGD && !o->nccl.on;
}

/* A row's algorithm as the report names it: NCCL's pick per bucket, or
 * ringsim's own. */
static const char *row_algo(const options_t *o, const step_row_t *row) {
  return o->nccl.on ? "nccl" : rs_algorithm_name(row->algo);
}

static uint64_t comm_end(const rs_step_time_t *t) {
  return t->bucket_count ? t->buckets[t->bucket_count - 1].end_ns : 0;
}

/* One of the step's two runs on threads: the first step's (one
 * iteration, DDP's first layout) or the later steps' together (the
 * iterations after the first, laid out as DDP lays out rebuilt
 * buckets), sc's all-reduces each. */
typedef struct thread_run {
  const rs_step_config_t *sc;
  int iters;
  int ddp_layout;
} thread_run_t;

/* The run tr on threads, into *c: each bucket starting at its ready
 * time (*ready, allocated: the caller frees it); traced or not. 0, or
 * EXIT_RUN having said so. */
static int thread_config(const options_t *o, const rs_model_t *model,
                         const thread_run_t *tr, int traced, rs_config_t *c,
                         uint64_t **ready) {
  const rs_step_config_t *sc = tr->sc;
  const int iters = tr->iters, ddp_layout = tr->ddp_layout;
  rs_bucket_t *buckets;
  size_t count;
  if (rs_step_ready(model, sc, ready, &buckets, &count)) {
    fprintf(stderr, "ringsim: step: out of memory\n");
    return EXIT_RUN;
  }
  free(buckets);
  *c = o->config;
  c->algo = sc->algo;
  c->bucket_bytes = sc->bucket_bytes;
  c->segment_bytes = sc->segment_bytes;
  c->iterations = iters;
  c->warmup = 0;
  c->ddp_layout = ddp_layout;
  c->ready_ns = *ready;
  c->traced = traced; /* (its records counted in the memory check) */
  return 0;
}

/* Can the threads' run tr be made: its memory,
 * trace records included, and every other check a run makes before it
 * starts (rs_run_check)? Asked before anything runs or the trace is opened,
 * so that a step refused for the later steps' run has not run (nor
 * traced) its first. Returns -1 to go on, or EXIT_USAGE having said why. */
static int threads_fit(const options_t *o, const rs_model_t *model,
                       const thread_run_t *tr) {
  uint64_t *ready;
  char err[RS_ERRMSG_MAX];
  rs_config_t c;
  if (thread_config(o, model, tr, o->trace != 0, &c, &ready))
    return EXIT_RUN;
  int rc = rs_run_check(&c, model, err);
  free(ready);
  if (rc == RS_OK)
    return -1;
  fprintf(stderr, "ringsim: step: %s%s\n",
          tr->iters > 1 ? "the threads' run of the later steps: " : "", err);
  return rc == RS_ENOMEM || rc == RS_EINVAL ? EXIT_USAGE : cli_exit_code(rc);
}

/* The threads' run of one step's buckets with its ready times (as
 * thread_config says); its simulated end must be the simulation's.
 * Returns 0, or an exit status (said on stderr). */
static int run_threads(const options_t *o, const rs_model_t *model,
                       const thread_run_t *tr, const rs_step_time_t *want,
                       rs_trace_t *trace) {
  const uint64_t want_ns = comm_end(want);
  uint64_t *ready;
  char err[RS_ERRMSG_MAX];
  rs_config_t c;
  if (thread_config(o, model, tr, trace != 0, &c, &ready))
    return EXIT_RUN;
  rs_run_t *run = NULL;
  int status = 0, rc;
  if ((rc = rs_run_create(&c, model, &run, err))) {
    fprintf(stderr, "ringsim: step: %s\n", err);
    status = cli_exit_code(rc);
  } else if (trace && (rc = rs_run_set_trace(run, trace, NULL))) {
    fprintf(stderr, "ringsim: step: %s\n", rs_run_errmsg(run));
    status = cli_exit_code(rc);
  } else if ((cli_signals_watch(run),
              rc = rs_run_fill(run, o->init, o->seed)) ||
             (rc = rs_run_execute(run)) || (rc = rs_run_result(run)->status)) {
    cli_signals_watch(NULL);
    if (!cli_signal())
      fprintf(stderr, "ringsim: step: the all-reduce on threads: %s\n",
              rs_run_errmsg(run));
    status = cli_exit_code(rc);
  } else if (c.workers > 1 && rs_run_result(run)->sim_ns != want_ns) {
    /* (one worker all-reduces nothing: its run keeps no clock) */
    fprintf(stderr,
            "ringsim: step: the threads' simulated time %" PRIu64
            " ns is not the step's %" PRIu64 " ns (a bug: please report it)\n",
            rs_run_result(run)->sim_ns, want_ns);
    status = EXIT_RUN;
  } else if (trace && (rc = rs_trace_add_step(trace, rs_run_trace_id(run), want,
                                              tr->iters, err))) {
    fprintf(stderr, "ringsim: step: %s\n", err);
    status = cli_exit_code(rc);
  }
  cli_signals_watch(NULL);
  rs_run_free(run);
  free(ready);
  return status;
}

/* sc for algo: gloo's ring cuts segments of gloo's own maximum, unless
 * told (as a run's does: cli_check_run). */
static void set_algo(const options_t *o, rs_step_config_t *sc,
                     rs_algorithm_t algo) {
  sc->algo = algo;
  sc->segment_bytes = cli_algo_info(algo).segment_bytes &&
                              !o->given[OPT_SEGMENT_BYTES]
                          ? cli_algo_info(algo).segment_bytes
                          : o->config.segment_bytes;
}

/* The step's runs on threads, if it has them (on_threads: one algorithm,
 * one cap), checked as a run checks itself before it starts: the first
 * step's, and the later steps' together. Returns -1 to go on, or the
 * exit status having said why not. */
static int check_threads(const options_t *o, const rs_model_t *model,
                         rs_step_config_t sc) {
  if (!on_threads(o))
    return -1;
  set_algo(o, &sc, o->config.algo);
  sc.bucket_bytes = 0;
  int rc = threads_fit(o, model, &(thread_run_t){&sc, 1, 0});
  sc.bucket_bytes = o->step.cap_count ? o->step.caps[0] : o->config.bucket_bytes;
  if (rc < 0 && o->step.iterations > 1)
    rc = threads_fit(o, model, &(thread_run_t){&sc, o->step.iterations - 1, 1});
  return rc;
}

/* One simulation of the step's, a piece of rs_parallel_for: piece i is
 * row piece[i] / 2's first step (even) or later steps (odd). */
typedef struct sim_job {
  const options_t *o;
  const rs_model_t *model;
  const rs_step_config_t *sc;
  step_row_t *rows;
  const int *piece;
  int *rc;
  char (*err)[RS_ERRMSG_MAX];
  atomic_int done; /* pieces done, for the progress line */
} sim_job_t;

static void sim_piece(void *ctx, int i) {
  sim_job_t *j = ctx;
  step_row_t *row = &j->rows[j->piece[i] / 2];
  const int later = j->piece[i] % 2;
  rs_step_config_t sc = *j->sc;
  set_algo(j->o, &sc, row->algo);
  sc.bucket_bytes = later ? row->cap : 0; /* step 1: DDP's one bucket */
  j->rc[i] = rs_step_simulate(j->model, &sc, later ? &row->later : &row->first,
                              j->err[i]);
  atomic_fetch_add(&j->done, 1);
}

/* Every row's steps simulated, the distinct ones on the machine's cores
 * (a row shares its first step with its algorithm's first row, and its
 * later ones with the row before when their caps make the same buckets),
 * with a progress line on a terminal. Returns 0, or the exit status
 * having said why. */
static int simulate_rows(const options_t *o, const rs_model_t *model,
                         const rs_step_config_t *sc, step_row_t *rows,
                         int count) {
  int *piece = malloc(2 * (size_t)count * sizeof *piece + 1);
  int *rc = calloc(2 * (size_t)count + 1, sizeof *rc);
  char(*err)[RS_ERRMSG_MAX] = calloc(2 * (size_t)count + 1, sizeof *err);
  if (!piece || !rc || !err) {
    free(piece);
    free(rc);
    free(err);
    fprintf(stderr, "ringsim: step: out of memory\n");
    return EXIT_RUN;
  }
  int n = 0;
  for (int r = 0; r < count; r++) {
    if (!rows[r].shares_first)
      piece[n++] = 2 * r;
    if (!rows[r].shares_later)
      piece[n++] = 2 * r + 1;
  }
  sim_job_t job = {o, model, sc, rows, piece, rc, err, 0};
  cli_progress_t *progress =
      o->quiet
          ? NULL
          : cli_progress_count("step: simulating the schedules", &job.done, n);
  rs_parallel_for(n, sim_piece, &job);
  cli_progress_stop(progress);
  int status = 0;
  for (int i = 0; i < n && !status; i++)
    if (rc[i]) {
      fprintf(stderr, "ringsim: step: %s\n", err[i]);
      status = rc[i] == RS_ENOMEM ? EXIT_RUN : EXIT_USAGE;
    }
  /* the shared steps, in order (a row's later ones may be its
   * predecessor's, which may be its own predecessor's) */
  int first_of_algo = 0;
  for (int r = 0; r < count; r++) {
    if (!rows[r].shares_first)
      first_of_algo = r;
    else
      rows[r].first = rows[first_of_algo].first;
    if (rows[r].shares_later)
      rows[r].later = rows[r - 1].later;
  }
  free(piece);
  free(rc);
  free(err);
  return status;
}

/* A row simulated: its total over the steps, and its run on threads when
 * it has one. */
static int finish_row(const options_t *o, const rs_model_t *model,
                      rs_step_config_t *sc, step_row_t *row,
                      rs_trace_t *trace) {
  int rc;
  const uint64_t later = o->step.iterations > 1 ? row->later.step_ns : 0;
  uint64_t rest;
  if (row->first.step_ns > STEP_NS_MAX || row->later.step_ns > STEP_NS_MAX ||
      __builtin_mul_overflow(later, (uint64_t)(o->step.iterations - 1),
                             &rest) ||
      __builtin_add_overflow(row->first.step_ns, rest, &row->total_ns) ||
      row->total_ns > STEP_NS_MAX) {
    cli_refuse(CLI_STEP,
               "the simulated time of %d step%s passes 2^63 ns (292 "
               "years), more than the report holds: give faster "
               "links, less compute or fewer --iterations",
               o->step.iterations, o->step.iterations == 1 ? "" : "s");
    return EXIT_USAGE;
  }
  if (!on_threads(o) || cli_signal())
    return 0;
  set_algo(o, sc, row->algo);
  sc->bucket_bytes = 0;
  rc = run_threads(o, model, &(thread_run_t){sc, 1, 0}, &row->first, trace);
  sc->bucket_bytes = row->cap;
  if (!rc && o->step.iterations > 1)
    rc = run_threads(o, model, &(thread_run_t){sc, o->step.iterations - 1, 1},
                     &row->later, trace);
  return rc;
}

/* ---- the report --------------------------------------------------------- */

/* ns as microseconds to the ns, "1234.567", from the integer (a double
 * loses digits past 2^53 ns); the text lives until the 16th call after. */
static const char *us(uint64_t ns) {
  static char text[16][32];
  static unsigned next;
  char *t = text[next++ % 16];
  snprintf(t, sizeof text[0], "%llu.%03llu", (unsigned long long)(ns / 1000),
           (unsigned long long)(ns % 1000));
  return t;
}

static void print_iteration(const char *label, const rs_step_time_t *t,
                            const char *what) {
  const uint64_t hidden = t->comm_ns - t->exposed_ns;
  printf("  %-10s %s us: compute %s us, communication %s us, %s us "
         "hidden (%.1f%%), %s us exposed (%s)\n",
         label, us(t->step_ns), us(t->forward_ns + t->backward_ns),
         us(t->comm_ns), us(hidden),
         t->comm_ns ? 100.0 * (double)hidden / (double)t->comm_ns : 0.0,
         us(t->exposed_ns), what);
}

/* The buckets' table; with --like nccl (nccl not NULL) each one's pick,
 * for the bytes it moves (its elements of move_size bytes). */
static void print_buckets(const rs_step_time_t *t, size_t elem_size,
                          int powersgd, const step_nccl_t *nccl,
                          size_t move_size) {
  char cols[160] = "";
  if (nccl)
    step_nccl_columns(NULL, cols, sizeof cols);
  printf("  %8s %7s %12s %12s %12s %12s %12s%s%s\n", "bucket", "params",
         "bytes", "ready us", "start us", "end us", "exposed us",
         powersgd ? "  all-reduced elements (uncompressed, P, Q)" : "", cols);
  for (size_t b = 0; b < t->bucket_count; b++) {
    const rs_step_bucket_t *k = &t->buckets[b];
    printf("  %8zu %7zu %12zu %12s %12s %12s %12s", b, k->params,
           k->elems * elem_size, us(k->ready_ns), us(k->start_ns),
           us(k->end_ns), us(k->exposed_ns));
    if (powersgd)
      printf("  %zu, %zu, %zu", k->reduce_elems[0], k->reduce_elems[1],
             k->reduce_elems[2]);
    if (nccl) {
      step_nccl_columns(
          step_nccl_find(nccl, (uint64_t)k->elems * move_size), cols,
          sizeof cols);
      fputs(cols, stdout);
    }
    putchar('\n');
  }
}

/* The critical path, in words. */
static void print_critical(const rs_step_time_t *t) {
  const uint64_t last_grad = t->forward_ns + t->backward_ns;
  size_t b = t->bucket_count;
  while (b > 0 && t->buckets[b - 1].exposed_ns == 0)
    b--;
  if (b == 0) {
    printf("  critical   the compute: every all-reduce ends by the last "
           "gradient (%s us); nothing exposed\n",
           us(last_grad));
    return;
  }
  printf("  critical   bucket %zu's all-reduce ends %s us after the last "
         "gradient (%s us): %s us exposed\n",
         b - 1, us(t->step_ns - last_grad), us(last_grad), us(t->exposed_ns));
}

/* --hook: what the hook does to the bytes each bucket moves. */
static void print_hook(const options_t *o, const rs_model_t *model) {
  const rs_hook_t h = o->config.hook;
  const rs_dtype_t d = rs_model_dtype(model), sum = rs_hook_dtype(h, d);
  if (h == RS_HOOK_NONE)
    return;
  if (h == RS_HOOK_POWERSGD) {
    printf("  hook       powersgd:rank=%d: each bucket's all-reduce is the "
           "hook's three, back to back (uncompressed, P, Q: the elements "
           "below); the matmuls' compute is not charged\n",
           o->config.powersgd_rank);
    return;
  }
  if (sum != d)
    printf("  hook       %s: each bucket moves in %s, %zu bytes an element "
           "(the model's %s: %zu)\n",
           rs_hook_name(h), rs_dtype_name(sum), rs_dtype_size(sum),
           rs_dtype_name(d), rs_dtype_size(d));
  else
    printf("  hook       %s: each bucket divided by %d, then summed; the "
           "same bytes\n",
           rs_hook_name(h), o->config.workers);
}

/* The bytes an element of model moves under the hook. */
static size_t move_size(const options_t *o, const rs_model_t *model) {
  return rs_dtype_size(rs_hook_dtype(o->config.hook, rs_model_dtype(model)));
}

/* What the network is: the topology as NCCL sees it and what a bucket's
 * time is (--like nccl), or the network model's line. */
static void print_network(const options_t *o, const step_nccl_t *nccl) {
  if (nccl) {
    step_nccl_print_head(o, nccl);
    return;
  }
  cli_print_network(&o->config.net);
  putchar('\n');
}

static void print_one(const options_t *o, const rs_model_t *model,
                      const step_row_t *row, int threads,
                      const step_nccl_t *nccl) {
  char name[CLI_SAFE_MAX];
  const size_t elem_size = rs_dtype_size(rs_model_dtype(model));
  const int K = o->step.iterations;
  printf("ringsim step: %s all-reduce of \"%s\" on %d worker%s, %d step%s "
         "(%s)\n",
         nccl ? "NCCL's" : rs_algorithm_name(row->algo),
         cli_safe(rs_model_name(model), name, sizeof name), o->config.workers,
         o->config.workers == 1 ? "" : "s", K, K == 1 ? "" : "s",
         threads ? "the all-reduces ran on threads and were checked"
         : nccl  ? "the schedule alone: no threads, no data; the threaded "
                   "run has no NCCL algorithms yet"
                 : "the schedule alone: no threads, no data");
  print_network(o, nccl);
  print_hook(o, model);
  printf("  compute    forward %s us, backward %s us (%s)",
         us(row->later.forward_ns), us(row->later.backward_ns),
         o->step.flops > 0 ? "--compute" : "model.json's");
  if (o->step.slow_worker >= 0)
    printf("; worker %d computes %g times as long", o->step.slow_worker,
           o->step.slow);
  putchar('\n');
  print_iteration("step 1", &row->first, "1 bucket: DDP's first backward");
  char label[32], what[96];
  if (K > 1) {
    snprintf(label, sizeof label, K == 2 ? "step 2" : "steps 2-%d", K);
    if (row->cap)
      snprintf(what, sizeof what, "%zu bucket%s, cap %.2f MiB, rebuilt",
               row->later.bucket_count, row->later.bucket_count == 1 ? "" : "s",
               (double)row->cap / (1 << 20));
    else
      snprintf(what, sizeof what, "1 bucket: --bucket-mb 0");
    print_iteration(label, &row->later, what);
  }
  printf("  %-10s %s us\n", "in all", us(row->total_ns));
  const rs_step_time_t *t = K > 1 ? &row->later : &row->first;
  printf("  buckets of step %d, in launch order (us from the step's start):\n",
         K > 1 ? 2 : 1);
  print_buckets(t, elem_size, o->config.hook == RS_HOOK_POWERSGD, nccl,
                move_size(o, model));
  print_critical(t);
}

/* A row per algorithm and cap: the best of each algorithm marked, and
 * DDP's default cap. */
static void print_rows(const options_t *o, const rs_model_t *model,
                       const step_row_t *rows, int n,
                       const step_nccl_t *nccl) {
  char name[CLI_SAFE_MAX];
  printf("ringsim step: \"%s\" on %d workers, %d step%s each (the schedule "
         "alone: no threads, no data)\n",
         cli_safe(rs_model_name(model), name, sizeof name), o->config.workers,
         o->step.iterations, o->step.iterations == 1 ? "" : "s");
  print_network(o, nccl);
  print_hook(o, model);
  printf("  steps after the first (DDP's rebuilt buckets), us:\n");
  printf("  %-10s %8s %8s %12s %12s %12s %7s\n", "algo", "cap MiB", "buckets",
         "step", "exposed", "comm", "hidden");
  for (int i = 0; i < n; i++) {
    const rs_step_time_t *t = &rows[i].later;
    const uint64_t hidden = t->comm_ns - t->exposed_ns;
    printf("  %-10s %8g %8zu %12s %12s %12s %6.1f%%%s%s\n",
           row_algo(o, &rows[i]), (double)rows[i].cap / (1 << 20),
           t->bucket_count, us(t->step_ns), us(t->exposed_ns), us(t->comm_ns),
           t->comm_ns ? 100.0 * (double)hidden / (double)t->comm_ns : 0.0,
           rows[i].best ? "  best" : "",
           rows[i].cap == RS_DEFAULT_BUCKET_BYTES ? "  DDP's default" : "");
  }
}

/* The most workers whose lanes --json lists (ringsim-plot step draws
 * them). */
#define STEP_JSON_LANES 64

/* Each worker's forward end, last gradient and all-reduces. */
static json_t *lanes_json(const rs_step_time_t *t) {
  json_t *lanes = json_array();
  const size_t W = (size_t)t->workers;
  for (size_t r = 0; r < W; r++) {
    json_t *spans = json_array();
    for (size_t b = 0; b < t->bucket_count; b++)
      json_array_append_new(
          spans, json_pack("[I I]", (json_int_t)t->worker_start[b * W + r],
                           (json_int_t)t->worker_end[b * W + r]));
    json_array_append_new(lanes, json_pack("{sI sI so}", "forward_ns",
                                           (json_int_t)t->worker_forward[r],
                                           "last_grad_ns",
                                           (json_int_t)t->worker_last_grad[r],
                                           "allreduce", spans));
  }
  return lanes;
}

static json_t *timeline_json(const rs_step_time_t *t, size_t elem_size,
                             int powersgd, const step_nccl_t *nccl,
                             size_t move_size) {
  json_t *buckets = json_array();
  for (size_t b = 0; b < t->bucket_count; b++) {
    const rs_step_bucket_t *k = &t->buckets[b];
    json_t *o = json_pack(
        "{sI sI sI sI sI sI sI}", "first_param", (json_int_t)k->first_param,
        "params", (json_int_t)k->params, "bytes",
        (json_int_t)(k->elems * elem_size), "ready_ns", (json_int_t)k->ready_ns,
        "start_ns", (json_int_t)k->start_ns, "end_ns", (json_int_t)k->end_ns,
        "exposed_ns", (json_int_t)k->exposed_ns);
    if (o && powersgd) /* its three all-reduces' elements */
      json_object_set_new(o, "allreduce_elems",
                          json_pack("[I I I]", (json_int_t)k->reduce_elems[0],
                                    (json_int_t)k->reduce_elems[1],
                                    (json_int_t)k->reduce_elems[2]));
    if (o && nccl) /* NCCL's pick for the bytes it moves */
      json_object_set_new(o, "nccl",
                          step_nccl_pick_json(step_nccl_find(
                              nccl, (uint64_t)k->elems * move_size)));
    json_array_append_new(buckets, o);
  }
  json_t *o =
      json_pack("{sI sI sI sI sI sI so}", "step_ns", (json_int_t)t->step_ns,
                "forward_ns", (json_int_t)t->forward_ns, "backward_ns",
                (json_int_t)t->backward_ns, "comm_ns", (json_int_t)t->comm_ns,
                "exposed_ns", (json_int_t)t->exposed_ns, "hidden_ns",
                (json_int_t)(t->comm_ns - t->exposed_ns), "buckets", buckets);
  if (o && t->workers <= STEP_JSON_LANES)
    json_object_set_new(o, "workers", lanes_json(t));
  return o;
}

static int print_json(const options_t *o, const rs_model_t *model,
                      const step_row_t *rows, int n, int threads,
                      const step_nccl_t *nccl) {
  const size_t elem_size = rs_dtype_size(rs_model_dtype(model));
  const size_t moved = move_size(o, model);
  const int psgd = o->config.hook == RS_HOOK_POWERSGD;
  char hook[48]; /* powersgd with its rank, as --hook takes it */
  snprintf(hook, sizeof hook, psgd ? "%s:rank=%d" : "%s",
           rs_hook_name(o->config.hook), o->config.powersgd_rank);
  json_t *list = json_array();
  for (int i = 0; i < n; i++)
    json_array_append_new(
        list,
        json_pack("{ss sI so so sI sb sb}", "algo", row_algo(o, &rows[i]),
                  "cap_bytes", (json_int_t)rows[i].cap, "first",
                  timeline_json(&rows[i].first, elem_size, psgd, nccl, moved),
                  "later",
                  timeline_json(&rows[i].later, elem_size, psgd, nccl, moved),
                  "total_ns",
                  (json_int_t)rows[i].total_ns, "best", rows[i].best,
                  "ddp_default", rows[i].cap == RS_DEFAULT_BUCKET_BYTES));
  json_t *root =
      json_pack("{ss ss si si sb ss so}", "schema", "ringsim.step/1", "model",
                rs_model_name(model), "workers", o->config.workers,
                "iterations", o->step.iterations, "threads", threads, "hook",
                hook, "rows", list);
  if (root && nccl) /* the machine as NCCL sees it, what was forced */
    json_object_set_new(root, "nccl", step_nccl_json(o, nccl));
  if (!root)
    return EXIT_RUN;
  json_dumpf(root, stdout, JSON_INDENT(2));
  putchar('\n');
  json_decref(root);
  return 0;
}

/* ---- the command -------------------------------------------------------- */

static void mark_best(const options_t *o, step_row_t *rows, int n) {
  (void)o;
  for (int i = 0; i < n; i++) {
    int best = 1;
    for (int j = 0; j < n; j++)
      if (rows[j].algo == rows[i].algo &&
          (rows[j].total_ns < rows[i].total_ns ||
           (rows[j].total_ns == rows[i].total_ns && j < i)))
        best = 0;
    rows[i].best = best;
  }
}

/* Do caps a and b make the same buckets of model (1), or not (0)? -1:
 * out of memory. */
static int same_buckets(const rs_model_t *model, const rs_config_t *c, size_t a,
                        size_t b) {
  rs_bucket_t *x = NULL, *y = NULL;
  size_t nx = 0, ny = 0;
  int same = -1;
  if (!rs_model_buckets(model, c->first_bucket_bytes, a, &x, &nx) &&
      !rs_model_buckets(model, c->first_bucket_bytes, b, &y, &ny))
    same = nx == ny && memcmp(x, y, nx * sizeof *x) == 0;
  free(x);
  free(y);
  return same;
}

static int step_model(const options_t *o, const rs_model_t *model) {
  const size_t n = rs_model_param_count(model);
  uint64_t *fwd = malloc(n * sizeof *fwd), *bwd = malloc(n * sizeof *bwd);
  const int algos = o->algo_all ? cli_algos(&o->config.net) : 1;
  const int caps = o->step.cap_count ? o->step.cap_count : 1;
  step_row_t *rows = calloc((size_t)(algos * caps), sizeof *rows);
  char err[RS_ERRMSG_MAX] = "";
  int status = 0;
  if (!fwd || !bwd || !rows) {
    fprintf(stderr, "ringsim: step: out of memory\n");
    status = EXIT_RUN;
  } else {
    const rs_compute_t c = {o->step.flops, o->step.rows};
    if (rs_step_compute(model, &c, fwd, bwd, err)) {
      fprintf(stderr, "ringsim: step: %s\n", err);
      status = EXIT_USAGE;
    }
  }
  rs_step_config_t sc = {.workers = o->config.workers,
                         .net = o->config.net,
                         .first_bucket_bytes = o->config.first_bucket_bytes,
                         .segment_bytes = o->config.segment_bytes,
                         .forward_ns = fwd,
                         .backward_ns = bwd,
                         .slow_worker = o->step.slow_worker,
                         .slow = o->step.slow,
                         .hook = o->config.hook,
                         .powersgd_rank = o->config.powersgd_rank};
  sc.net.stop = cli_signal_flag();
  /* --like nccl: every bucket's pick, made before anything runs */
  step_nccl_t nccl_picks = {0};
  const step_nccl_t *nccl = NULL;
  if (!status && o->nccl.on &&
      !(status = step_nccl_prepare(o, model, &nccl_picks))) {
    nccl = &nccl_picks;
    sc.allreduce_ns = step_nccl_ns;
    sc.allreduce_ctx = &nccl_picks;
  }
  if (!status) {
    const int fits = check_threads(o, model, sc);
    status = fits < 0 ? 0 : fits;
  }
  /* the trace, once the inputs are known good (bad input writes nothing) */
  rs_trace_t *trace = NULL;
  int opened = status || !o->trace ? 0 : cli_trace_open(o->trace, &trace, err);
  if (opened) {
    fprintf(stderr, "ringsim: step: %s\n", err);
    status = cli_exit_code(opened);
  }
  int count = 0;
  for (int a = 0; a < algos && !status; a++)
    for (int k = 0; k < caps && !status; k++) {
      step_row_t *row = &rows[count++];
      row->algo =
          o->algo_all ? cli_algo_nth(&o->config.net, a) : o->config.algo;
      row->cap = o->step.cap_count ? o->step.caps[k] : o->config.bucket_bytes;
      if (k > 0) { /* step 1 is one bucket, whatever the cap */
        row->shares_first = 1;
        const int same = same_buckets(model, &o->config, row[-1].cap, row->cap);
        if (same < 0) {
          fprintf(stderr, "ringsim: step: out of memory\n");
          status = EXIT_RUN;
        }
        row->shares_later = same > 0;
      }
    }
  if (!status)
    status = simulate_rows(o, model, &sc, rows, count);
  for (int i = 0; i < count && !status && !cli_signal(); i++)
    status = finish_row(o, model, &sc, &rows[i], trace);
  if (!status && cli_signal())
    status = EXIT_RUN; /* (main exits 128 + the signal) */
  if (!status) {
    mark_best(o, rows, count);
    if (o->json)
      status = print_json(o, model, rows, count, on_threads(o), nccl);
    else if (count == 1)
      print_one(o, model, &rows[0], on_threads(o), nccl);
    else
      print_rows(o, model, rows, count, nccl);
    if (cli_stdout_lost("the report", err, sizeof err)) {
      fprintf(stderr, "ringsim: step: %s\n", err);
      status = EXIT_RUN;
    }
  }
  /* A step is one job: a failure anywhere leaves none of its runs ok. */
  if (status && cli_signal()) {
    snprintf(err, sizeof err, "interrupted by %s",
             cli_signal_name(cli_signal()));
    cli_trace_mark_job(trace, 1, err);
  } else if (status) {
    cli_trace_mark_job(trace, 0,
                       err[0] ? err : "ringsim step failed after this run");
  }
  for (int i = 0; rows && i < algos * caps; i++) {
    if (!rows[i].shares_first)
      rs_step_time_free(&rows[i].first);
    if (!rows[i].shares_later)
      rs_step_time_free(&rows[i].later);
  }
  free(rows);
  free(fwd);
  free(bwd);
  step_nccl_free(&nccl_picks);
  rs_trace_close(trace);
  return status;
}

int cli_step(int argc, char **argv) {
  options_t o = {0};
  cli_options_init(CLI_STEP, &o);
  int rc = cli_walk(CLI_STEP, argc, argv, &o, NULL);
  if (rc < 0)
    rc = check_step(&o);
  if (rc >= 0)
    return rc;
  char err[RS_ERRMSG_MAX];
  rs_model_t *model = NULL;
  if (rs_model_load(o.params, &model, err)) {
    fprintf(stderr, "ringsim: %s\n", err);
    return EXIT_USAGE;
  }
  rc = cli_check_model_buckets(&o, model);
  if (rc < 0 && o.config.hook == RS_HOOK_POWERSGD &&
      rs_model_dtype(model) != RS_DTYPE_F32)
    rc = cli_refuse(CLI_STEP,
                    "--hook powersgd:rank=%d computes in float32, as the hook "
                    "does on float32 grads; the model is %s",
                    o.config.powersgd_rank,
                    rs_dtype_name(rs_model_dtype(model)));
  if (rc < 0)
    rc = step_model(&o, model);
  rs_model_free(model);
  return rc;
}
