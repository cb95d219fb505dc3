/* open.c - a run joins the MPI job: every process compares the run's
 * options and model before anything else (so the collectives cannot fall
 * out of step), takes its block of workers and the run's communicators;
 * before the workers start, the inputs are compared and the clocks and
 * the fault listener started.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "mpi/mpi_internal.h"
#include "net/proto.h"

/* Trace records per batch, and per worker's ring (the test knob
 * mpi_trace_batch, RINGSIM_MPI_TRACE_BATCH, sets it, up to BATCH_MAX). */
#define BATCH_DEFAULT 8192
#define BATCH_MAX (1 << 20)

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* The model as every process must have it: its params' names, shapes and
 * dtype, and its inline grads. */
static uint64_t model_digest(const rs_model_t *model) {
  uint64_t h = 14695981039346656037ull;
  const size_t params = rs_model_param_count(model);
  for (size_t i = 0; i < params; i++) {
    const rs_param_t *p = rs_model_param(model, i);
    h = fnv(h, p->name, strlen(p->name) + 1);
    h = fnv(h, &p->ndim, sizeof p->ndim);
    h = fnv(h, p->shape, (size_t)p->ndim * sizeof *p->shape);
  }
  rs_dtype_t dtype = rs_model_dtype(model);
  h = fnv(h, &dtype, sizeof dtype);
  const int inline_workers = rs_model_inline_workers(model);
  h = fnv(h, &inline_workers, sizeof inline_workers);
  for (int r = 0; r < inline_workers; r++)
    h = fnv(h, rs_model_inline_grads(model, r),
            rs_model_elems(model) * sizeof(double));
  return h;
}

/* What every process of a run must have the same (key=value lines, keys
 * named as the options that set them): the options that shape the
 * collective, and the model. */
static void describe_config(const rs_run_t *run, const char *batch, char *buf,
                            size_t cap) {
  const rs_config_t *c = &run->config;
  static const char *const kinds[] = {"crash", "stall", "corrupt", "drop",
                                      "dup"};
  char faults[1024] = "none";
  size_t len = 0;
  for (int i = 0; i < c->fault_count && i < RS_MAX_FAULTS; i++) {
    const rs_fault_t *f = &c->faults[i];
    const char *kind =
        (unsigned)f->kind < sizeof kinds / sizeof *kinds ? kinds[f->kind] : "?";
    len += (size_t)snprintf(
        faults + len, len < sizeof faults ? sizeof faults - len : 0,
        "%s%s:worker=%d,step=%d", i ? " " : "", kind, f->worker, f->step);
    if (f->kind == RS_FAULT_STALL && len < sizeof faults)
      len +=
          (size_t)snprintf(faults + len, sizeof faults - len, ",ms=%d", f->ms);
  }
  const rs_netmodel_t *n = &c->net;
  char net[128] = "off", topo[192] = "off", links[64] = "none",
       stragglers[64] = "none", rate[48] = "free";
  if (n->enabled && n->link.bandwidth)
    snprintf(net, sizeof net, "latency=%lluns,bandwidth=%lluB/s",
             (unsigned long long)n->link.latency_ns,
             (unsigned long long)n->link.bandwidth);
  if (n->topo.enabled)
    snprintf(topo, sizeof topo,
             "nodes=%d,gpus=%d,nics=%d,intra=%lluns/%lluB/s,nic=%lluns/"
             "%lluB/s",
             n->topo.nodes, n->topo.gpus, n->topo.nics,
             (unsigned long long)n->topo.intra.latency_ns,
             (unsigned long long)n->topo.intra.bandwidth,
             (unsigned long long)n->topo.nic.latency_ns,
             (unsigned long long)n->topo.nic.bandwidth);
  /* (the overrides, up to 64 each, by their count and a digest) */
  const int link_count = n->link_count < RS_MAX_NET_OVERRIDES
                             ? n->link_count
                             : RS_MAX_NET_OVERRIDES;
  const int straggler_count = n->straggler_count < RS_MAX_NET_OVERRIDES
                                  ? n->straggler_count
                                  : RS_MAX_NET_OVERRIDES;
  uint64_t h = 14695981039346656037ull; /* (field by field: no padding) */
  for (int i = 0; i < link_count; i++) {
    h = fnv(h, &n->links[i].src, sizeof n->links[i].src);
    h = fnv(h, &n->links[i].dst, sizeof n->links[i].dst);
    h = fnv(h, &n->links[i].link, sizeof n->links[i].link);
  }
  if (link_count > 0)
    snprintf(links, sizeof links, "%d given, digest %016llx", link_count,
             (unsigned long long)h);
  h = 14695981039346656037ull;
  for (int i = 0; i < straggler_count; i++) {
    h = fnv(h, &n->stragglers[i].worker, sizeof n->stragglers[i].worker);
    h = fnv(h, &n->stragglers[i].delay_ns, sizeof n->stragglers[i].delay_ns);
  }
  if (straggler_count > 0)
    snprintf(stragglers, sizeof stragglers, "%d given, digest %016llx",
             straggler_count, (unsigned long long)h);
  if (n->reduce_rate)
    snprintf(rate, sizeof rate, "%lluB/s", (unsigned long long)n->reduce_rate);
  char bucket[64] = "0 (one bucket)";
  if (c->bucket_bytes)
    snprintf(bucket, sizeof bucket, "%.17g MiB, %zu bytes",
             (double)c->bucket_bytes / 1048576.0, c->bucket_bytes);
  const rs_model_t *m = run->model;
  /* (keys as the user typed the options; what no option sets says so) */
  snprintf(
      buf, cap,
      "--workers=%d\n--algo=%s\n--op=%s\n--average=%s\n--segment-bytes=%zu\n"
      "--slots=%d\n--timeout=%g\n--inject=%s\n--checksum=%s\n--direct=%s\n"
      "--loop=%s\n--bucket-mb=%s\nthe first bucket's cap=%zu bytes\n"
      "--warmup=%d\n--iters=%d\nbench's warm-up budget=%g s\nbench's "
      "timed budget=%g s\n"
      "--trace or --no-trace=%s\n--order-report=%s\n--like's bucket "
      "layout=%s\n--net=%s\n--topo=%s\n--link=%s\n--straggler=%s\n"
      "--reduce-rate=%s\n--channels=%d\n--proto=%s\ncollective=%d\n"
      "ref reps=%d\n"
      "model=%s, %zu params, %zu elements, %s, digest %016llx\n"
      "RINGSIM_MPI_TRACE_BATCH=%s\n",
      c->workers, rs_algorithm_name(c->algo), rs_op_name(c->op),
      rs_average_name(c->average), c->segment_bytes, c->slots, c->timeout_s,
      faults, c->checksum ? "on" : "off", c->direct ? "on" : "off",
      c->slices ? "slices" : "steps", bucket, c->first_bucket_bytes, c->warmup,
      c->iterations, c->warmup_budget_s, c->timed_budget_s,
      c->traced ? "--trace" : "--no-trace", c->order_report ? "on" : "off",
      c->ddp_layout ? "ddp" : "none", net, topo, links, stragglers, rate,
      n->channels > 1 ? n->channels : 1, rs__proto_label(n->proto),
      (int)c->collective, c->ref_reps, rs_model_name(m),
      rs_model_param_count(m), rs_model_elems(m),
      rs_dtype_name(rs_model_dtype(m)), (unsigned long long)model_digest(m),
      batch[0] ? batch : "unset");
}

/* An agreement's failure as a run's error message (without "ringsim: "). */
int rs__mpi_agree_err(const agree_out_t *out, char *errmsg) {
  const char *msg = out->msg;
  if (strncmp(msg, "ringsim: ", 9) == 0)
    msg += 9;
  return rs__err(errmsg, out->code == 2 ? RS_EINVAL : RS_EABORTED, "%s",
                 msg[0] ? msg : "another MPI process could not set up the run");
}

/* Free a run's MPI state (NULL: nothing) once MPI holds none of it. */
static void free_state(struct rs_mpi *m) {
  if (!m)
    return;
  free(m->msg);
  free(m->counts);
  free(m->ended);
  free(m->hosts);
  free(m->offsets);
  free(m->rtt_ns);
  free(m->tell);
  free(m);
}

/* Before anything else, and before this process refuses anything: every
 * process must have the same options and model, or the collectives fall
 * out of step. Then each refuses what it refuses alike. *batch: the
 * records per trace batch (text: the test knob, "" if not given), which every
 * process must agree on too (rank 0 receives whole batches). */
static int compare_config(const rs_run_t *run, const char *text, long *batch,
                          char *errmsg) {
  const int W = run->config.workers, procs = rs__mpi_job.procs;
  *batch = BATCH_DEFAULT;
  if (text[0] && rs_read_int(text, 1, BATCH_MAX, batch))
    *batch = -1;
  char local[RS_ERRMSG_MAX] = "";
  int code = 0;
  if (*batch < 0)
    code = rs__err(local, RS_EINVAL,
                   "RINGSIM_MPI_TRACE_BATCH '%s': expected records per trace "
                   "batch, 1 to %d",
                   text, BATCH_MAX);
  else if (procs > W)
    code = rs__err(local, RS_EINVAL,
                   "workers: %d cannot be spread over %d MPI processes "
                   "(each process needs a worker: give --workers %d or "
                   "more)",
                   W, procs, procs);
  /* Each channel's edge r -> q its own tag (transport.c): C W^2 of them,
   * at most 64 x 4096^2 = 2^30, within Open MPI's 2^31 - 1; an MPI with
   * the standard's least, 32767, holds 181 workers on one channel, 22 on
   * 64. */
  const int C = run->config.net.channels > 1 ? run->config.net.channels : 1;
  const int64_t tags = (int64_t)C * W * W;
  int *tag_ub = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
  if (!code && flag && tags > *tag_ub && C == 1)
    code = rs__err(local, RS_EINVAL,
                   "workers: %d workers need %lld MPI tags; this MPI has %d", W,
                   (long long)tags, *tag_ub);
  else if (!code && flag && tags > *tag_ub)
    code = rs__err(local, RS_EINVAL,
                   "channels: %d channels of %d workers need %lld MPI tags "
                   "(one per channel's edge); this MPI has %d: give fewer "
                   "channels or workers",
                   C, W, (long long)tags, *tag_ub);
  char *desc = malloc(AGREE_DATA);
  if (!desc)
    code = rs__err(local, RS_ENOMEM, "out of memory");
  else
    describe_config(run, text, desc, AGREE_DATA);
  char line[RS_ERRMSG_MAX + 16] = "";
  if (code)
    snprintf(line, sizeof line, "ringsim: %s", local);
  agree_out_t out;
  rs__mpi_agree_on(
      &(agree_mine_t){.stage = STAGE_CONFIG,
                      .code = code ? (code == RS_EINVAL ? 2 : 3) : 0,
                      .msg = line,
                      .data = desc},
      rs__mpi_job.wait_ns, &out);
  free(desc);
  if (out.code && code && out.from == rs__mpi_job.rank)
    return rs__err(errmsg, code, "%s", local); /* (said once, by rank 0) */
  if (out.code)
    return rs__mpi_agree_err(&out, errmsg);
  return RS_OK;
}

/* The run's MPI state for procs processes (a trace message of batch
 * records if traced); NULL when out of memory. */
static struct rs_mpi *new_state(int procs, int traced, long batch) {
  struct rs_mpi *m = calloc(1, sizeof *m);
  if (!m || !(m->hosts = calloc((size_t)procs, sizeof *m->hosts)) ||
      !(m->offsets = calloc((size_t)procs, sizeof *m->offsets)) ||
      !(m->rtt_ns = calloc((size_t)procs, sizeof *m->rtt_ns)) ||
      !(m->tell = calloc((size_t)procs, sizeof *m->tell)) ||
      !(m->counts = calloc((size_t)procs, sizeof *m->counts)) ||
      !(m->ended = calloc((size_t)procs, sizeof *m->ended)) ||
      (traced && !(m->msg = malloc(sizeof *m->msg +
                                   (size_t)batch * sizeof(rs_event_t))))) {
    free_state(m);
    return NULL;
  }
  m->batch = (size_t)batch;
  m->lost = -1;
  for (int p = 0; p < procs; p++)
    m->tell[p] = MPI_REQUEST_NULL;
  atomic_init(&m->stop, 0);
  atomic_init(&m->told, 0);
  atomic_init(&m->workers_done, 0);
  return m;
}

/* The run's communicators (every process is here: an agreement said so),
 * and every process's host. */
static void join_comms(struct rs_mpi *m, int procs) {
  MPI_Comm_dup(MPI_COMM_WORLD, &m->data);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->ctrl);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->coll);
  MPI_Comm_dup(MPI_COMM_WORLD, &m->trace);
  /* a bad message returns an error here, rather than killing the job */
  MPI_Comm_set_errhandler(m->data, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(m->trace, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(m->ctrl, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(m->coll, MPI_ERRORS_RETURN);
  host_t me = "";
  int len = 0;
  MPI_Get_processor_name(me, &len);
  MPI_Request req;
  MPI_Iallgather(me, (int)sizeof me, MPI_CHAR, m->hosts, (int)sizeof me,
                 MPI_CHAR, m->coll, &req);
  rs__mpi_coll_wait(&req, "gathering the hosts' names");
  for (int p = 0; p < procs; p++)
    m->hosts[p][sizeof *m->hosts - 1] = '\0';
}

int rs__mpi_open(rs_run_t *run, char *errmsg) {
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited || rs__mpi_job.comm == MPI_COMM_NULL)
    return rs__err(errmsg, RS_EINVAL,
                   "transport mpi: MPI is not initialised (rs_mpi_init)");
  const int W = run->config.workers;
  const int rank = rs__mpi_job.rank, procs = rs__mpi_job.procs;
  /* Agreements wait up to the longest a worker waits, or a minute. */
  rs__mpi_job.wait_ns = run->config.timeout_s * 1e9 > (double)AGREE_WAIT_NS
                            ? (uint64_t)(run->config.timeout_s * 1e9)
                            : AGREE_WAIT_NS;
  long batch;
  int rc = compare_config(run, run->test.mpi_trace_batch, &batch, errmsg);
  if (rc)
    return rc;
  struct rs_mpi *m = new_state(procs, run->config.traced, batch);
  /* (out of memory here: every process learns it, and none goes on) */
  agree_out_t out;
  rs__mpi_agree_on(
      &(agree_mine_t){.stage = STAGE_ALL,
                      .code = m ? 0 : 3,
                      .msg = m ? NULL
                               : "ringsim: out of memory for the run's MPI "
                                 "state"},
      rs__mpi_job.wait_ns, &out);
  if (!m || out.code) {
    free_state(m);
    return !m ? rs__err(errmsg, RS_ENOMEM, "out of memory")
              : rs__mpi_agree_err(&out, errmsg);
  }
  join_comms(m, procs);
  run->mpi = m;
  run->proc = rank;
  run->procs = procs;
  run->first_local = rs__job_first(W, procs, rank);
  run->local_end = rs__job_first(W, procs, rank + 1);
  return RS_OK;
}

void rs__mpi_close(rs_run_t *run) {
  struct rs_mpi *m = run->mpi;
  if (!m)
    return;
  int kept = m->msg_kept; /* (a send MPI still holds: its memory stays) */
  for (int p = 0; p < run->procs; p++) /* (a process gone: MPI keeps it) */
    if (m->tell[p] != MPI_REQUEST_NULL &&
        rs__mpi_poll(&m->tell[p], rs__now_ns() + 1000000000u, NULL) != 1) {
      MPI_Request_free(&m->tell[p]);
      kept = 1;
    }
  MPI_Comm_free(&m->data);
  MPI_Comm_free(&m->ctrl);
  MPI_Comm_free(&m->coll);
  MPI_Comm_free(&m->trace);
  run->mpi = NULL;
  if (kept) /* the job is ending (rs_mpi_finalize aborts it) */
    return;
  free_state(m);
}

int rs_run_procs(const rs_run_t *run) { return run->procs; }

const char *rs__mpi_host(const rs_run_t *run, int proc) {
  return run->mpi ? ctx(run)->hosts[proc] : "";
}

/* An agreement's refusal as the run's failure. */
int rs__mpi_fail_agreed(rs_run_t *run, const agree_out_t *out) {
  const char *msg = out->msg;
  if (strncmp(msg, "ringsim: ", 9) == 0)
    msg += 9;
  return rs__run_fail(run, out->code == 2 ? RS_EINVAL : RS_EABORTED, "%s",
                      msg[0] ? msg : "another MPI process could not go on");
}

int rs__mpi_inputs(rs_run_t *run) {
  /* The inputs, as the options were (rs__mpi_open): the check's
   * collectives depend on how they were made. */
  char desc[256];
  if (run->generated)
    snprintf(desc, sizeof desc, "grads=generated: init %d, seed %llu\n",
             (int)run->init, (unsigned long long)run->seed);
  else
    snprintf(desc, sizeof desc, "grads=given: --grads files or inline\n");
  agree_out_t out;
  rs__mpi_agree_on(&(agree_mine_t){.stage = STAGE_INPUTS, .data = desc},
                   rs__mpi_job.wait_ns, &out);
  return out.code ? rs__mpi_fail_agreed(run, &out) : RS_OK;
}

int rs__mpi_start(rs_run_t *run) {
  rs__mpi_measure_offsets(run);
  return rs__mpi_listen_start(run);
}

int rs__mpi_all(rs_run_t *run, int ok) {
  (void)run;
  agree_out_t out;
  rs__mpi_agree_on(&(agree_mine_t){.stage = STAGE_ALL, .code = ok ? 0 : 3},
                   rs__mpi_job.wait_ns, &out);
  return out.code == 0;
}
