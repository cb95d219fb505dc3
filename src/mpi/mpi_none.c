/* mpi_none.c - mpi_run.h for a ringsim built without MPI: --transport mpi is
 * refused, saying so; nothing else here is ever reached. */
#include "mpi/mpi_run.h"

#include <stdio.h>

#include "core/runstate.h"
#include "base/util.h"

static const char no_mpi[] =
    "transport mpi: this ringsim was built without MPI (install "
    "libopenmpi-dev and rebuild)";

int rs_mpi_init(int *rank, int *procs, char *errmsg) {
  *rank = 0;
  *procs = 1;
  return rs__err(errmsg, RS_EINVAL, "%s", no_mpi);
}

void rs_mpi_finalize(void) {}

int rs_run_procs(const rs_run_t *run) { return run->procs; }

int rs_mpi_check_alone(char *errmsg) {
  if (errmsg)
    errmsg[0] = '\0';
  return RS_OK;
}

int rs_mpi_agree(int code, char *msg, size_t size) {
  (void)msg;
  (void)size;
  return code;
}

int rs__mpi_open(rs_run_t *run, char *errmsg) {
  (void)run;
  return rs__err(errmsg, RS_EINVAL, "%s", no_mpi);
}

void rs__mpi_close(rs_run_t *run) { (void)run; }

int rs__mpi_edge_open(rs_run_t *run, rs_edge_t *e, size_t payload_bytes,
                      int slots) {
  (void)run, (void)e, (void)payload_bytes, (void)slots;
  return RS_EINVAL;
}

void rs__mpi_edge_close(rs_edge_t *e) { (void)e; }
int rs__mpi_inputs(rs_run_t *run) {
  (void)run;
  return RS_OK;
}

int rs__mpi_start(rs_run_t *run) {
  (void)run;
  return RS_OK;
}
size_t rs__mpi_trace_batch(const rs_run_t *run) {
  (void)run;
  return 0;
}
int rs__mpi_trace_start(rs_run_t *run) {
  (void)run;
  return RS_OK;
}
void rs__mpi_finish(rs_run_t *run) { (void)run; }
int rs__mpi_trace_json(const rs_run_t *run, char *buf, size_t cap) {
  (void)run, (void)buf, (void)cap;
  return 0;
}
void rs__mpi_tell_fault(rs_run_t *run, int worker, int code,
                        const char *message) {
  (void)run, (void)worker, (void)code, (void)message;
}
int rs__mpi_all(rs_run_t *run, int ok) {
  (void)run;
  return ok;
}
void rs__mpi_check_merge(rs_run_t *run, int *identical) {
  (void)run, (void)identical;
}
const char *rs__mpi_host(const rs_run_t *run, int proc) {
  (void)run, (void)proc;
  return "";
}
int64_t rs__mpi_offset(const rs_run_t *run, int proc) {
  (void)run, (void)proc;
  return 0;
}

uint64_t rs__mpi_rtt(const rs_run_t *run, int proc) {
  (void)run, (void)proc;
  return 0;
}

int rs_run_time_mpi_allreduce(rs_run_t *run, int warmup, int iterations,
                              uint64_t *ns, char *errmsg) {
  (void)run, (void)warmup, (void)iterations, (void)ns;
  return rs__err(errmsg, RS_EINVAL, "%s", no_mpi);
}

void rs__mpi_reduce_sums(const rs_run_t *run, void *acc, void *amp, size_t len,
                         int f64) {
  (void)run, (void)acc, (void)amp, (void)len, (void)f64;
}

/* Never called: a run without MPI has no MPI edges. */
static int none_send(rs_edge_t *e, const rs_msg_t *hdr, const void *src,
                     rs_wire_t wire, uint64_t timeout_ns, uint64_t *wait_ns) {
  (void)e, (void)hdr, (void)src, (void)wire, (void)timeout_ns, (void)wait_ns;
  return RS_EINVAL;
}
static int none_recv(rs_edge_t *e, rs_msg_t **msg, uint64_t timeout_ns,
                     uint64_t *wait_ns) {
  (void)e, (void)msg, (void)timeout_ns, (void)wait_ns;
  return RS_EINVAL;
}
static void none_edge(rs_edge_t *e) { (void)e; }
static int none_end(rs_edge_t *e, uint64_t timeout_ns, uint64_t *wait_ns) {
  (void)e, (void)timeout_ns, (void)wait_ns;
  return RS_EINVAL;
}
static int none_pause(rs_edge_t *e, uint64_t ns) {
  (void)e, (void)ns;
  return RS_EINVAL;
}
const rs_transport_t rs__transport_mpi = {"mpi",      none_send, none_recv,
                                          none_edge,  none_edge, none_end,
                                          none_pause, none_edge};
