/* ringsim.h - public API of libringsim, an all-reduce simulator.
 *
 * A program loads a model (rs_model_load), creates a run for W workers
 * (rs_run_create), fills each worker's flat gradient buffer (rs_run_fill,
 * rs_run_load_grads, or by hand through rs_run_buffer, then
 * rs_run_mark_filled), executes the all-reduce with the config's algorithm
 * (rs_algorithm_t: the ring, recursive doubling, Rabenseifner, linear,
 * NCCL's tree, gloo's ring, the hierarchical ones, or a choice among them
 * per bucket) on one
 * thread per worker (rs_run_execute), and reads the result, the
 * statistics and the check.
 *
 * Every fallible function returns an int: RS_OK (0) on success, or one of
 * the negative codes below. Functions that fail before a run exists write a
 * one-line message into a caller buffer of RS_ERRMSG_MAX bytes; a run keeps
 * the text of its last error (rs_run_errmsg).
 *
 * The header is C11 and C++ alike (a test compiles every public header as
 * both). libringsim.so exports the functions marked RS_API here and in
 * the other headers of include/ringsim/ (explain.h, the teaching calls;
 * powersgd.h; step.h), and nothing else: not what internal/ declares
 * (command.h, the command's own calls; config.h, rs_config_t's layout),
 * which is not installed. A test compares its dynamic symbols with these
 * declarations.
 */
#ifndef RINGSIM_RINGSIM_H
#define RINGSIM_RINGSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the functions libringsim.so exports: the library is built with
 * -fvisibility=hidden, so a function without it (an internal rs__ one) is
 * not in the shared library's symbol table. */
#ifndef RS_API
#if defined(__GNUC__) || defined(__clang__)
#define RS_API __attribute__((visibility("default")))
#else
#define RS_API
#endif
#endif

/* RS_VERSION_MAJOR, _MINOR, _PATCH and RS_VERSION ("MAJOR.MINOR.PATCH"):
 * the version of the headers compiled against, generated from the build's
 * project(VERSION); rs_version() is the library's. */
#include "ringsim/version.h"

/* Largest number of simulated workers, and longest error message. */
#define RS_MAX_WORKERS 4096
#define RS_ERRMSG_MAX 512
/* Most dimensions a parameter may have. */
#define RS_MAX_DIMS 8

/* Error codes: name, value, message. One table feeds the enum, rs_errname()
 * and rs_strerror(). */
#define RS_ERRNO_MAP(X)                                                        \
  X(OK, 0, "success")                                                          \
  X(EINVAL, -1, "invalid argument")                                            \
  X(ENOMEM, -2, "out of memory")                                               \
  X(EIO, -3, "input/output error")                                             \
  X(EPARSE, -4, "malformed input")                                             \
  X(ETIMEDOUT, -5, "a worker timed out")                                       \
  X(EABORTED, -6, "the run was aborted")                                       \
  X(EPROTO, -7, "a message arrived out of sequence")                           \
  X(ECHECK, -8, "the result check failed")                                     \
  X(ESYS, -9, "system call failed")                                            \
  X(ECORRUPT, -10, "a message arrived damaged (checksum mismatch)")            \
  X(ETRACE, -11, "the trace could not be written")                             \
  X(EINTERRUPTED, -12, "interrupted by a signal")

enum {
#define RS_ERR_ENUM(name, value, msg) RS_##name = value,
  RS_ERRNO_MAP(RS_ERR_ENUM)
#undef RS_ERR_ENUM
};

/* The message and the symbolic name ("RS_ETIMEDOUT") of a code. Never NULL. */
RS_API const char *rs_strerror(int code);
/* The version of the library linked or loaded, "MAJOR.MINOR.PATCH", the
 * RS_VERSION it was built with (a program compiled against other headers
 * may compare the two). A static string, never NULL. */
RS_API const char *rs_version(void);
RS_API const char *rs_errname(int code);
/* A run's status code as its trace row and the --json report name it:
 * "ok" (RS_OK), "check_failed" (RS_ECHECK), "interrupted"
 * (RS_EINTERRUPTED) or "failed" (any other code). Never NULL. */
RS_API const char *rs_status_name(int status);

/* A stop flag: an int the caller owns, set non-zero by another thread (or
 * a signal handler) to ask a long call to give up: a cancellable write
 * (rs_safetensors_write_cancellable) or a schedule simulation (rs_netmodel_t's
 * stop). The library only reads it, with an atomic load (GCC's and clang's
 * __atomic_load_n); the caller writes it atomically too, so the two never
 * race (a TSan build stays clean):
 *
 *     C or C++, GCC or clang:  __atomic_store_n(&flag, 1, __ATOMIC_RELAXED);
 *     C++20:                   std::atomic_ref<int>(flag).store(1);
 *
 * (lock-free, so a signal handler may store it), and reads it back, if it
 * does, with __atomic_load_n. A plain int, not C11's atomic_int, which C++
 * has not got: C and C++ callers see one type. */
typedef int rs_stop_flag_t;

/* ---- element types --------------------------------------------------------
 */

/* f32, f64, or f16/bf16 as NCCL reduces them: float32 accumulation per hop,
 * rounded to the dtype when stored and sent (their buffers hold float32
 * values the dtype can represent; copying queues carry them packed in
 * the dtype's 2 bytes). An f64 model's buffers hold double, and every
 * algorithm adds in double. */
typedef enum rs_dtype {
  RS_DTYPE_F32,
  RS_DTYPE_F16,
  RS_DTYPE_BF16,
  RS_DTYPE_F64
} rs_dtype_t;

/* The name ("f32", "f16", "bf16", "f64"), the bytes on the wire (4, 2, 2,
 * 8) and the mantissa bits (24, 11, 8, 53). */
RS_API const char *rs_dtype_name(rs_dtype_t dtype);
RS_API size_t rs_dtype_size(rs_dtype_t dtype);
RS_API int rs_dtype_mantissa_bits(rs_dtype_t dtype);
/* How many values of dtype lie between a and b (finite, each rounded to
 * dtype first): 0 when they round alike, 1 for neighbours. The one ULP
 * distance of the library: the check's and ringsim diff's. */
RS_API uint64_t rs_dtype_ulps(rs_dtype_t dtype, double a, double b);
/* Bytes per element in a worker's buffer: 8 (double) for f64, else 4
 * (float). */
RS_API size_t rs_dtype_buffer_size(rs_dtype_t dtype);
/* x rounded to the nearest value of dtype (ties to even; overflow: inf);
 * f32 and f64 leave x as it is. For float buffers only. */
RS_API float rs_dtype_round(rs_dtype_t dtype, float x);
RS_API void rs_dtype_round_all(rs_dtype_t dtype, float *x, size_t n);

/* ---- model ------------------------------------------------------------- */

typedef struct rs_param {
  const char *name;
  int ndim;
  int64_t shape[RS_MAX_DIMS];
  size_t elem_offset; /* where the param starts in the flat buffer */
  size_t elems;       /* product of shape (1 for a scalar) */
  /* Its compute in a training step (step.h), in microseconds, as
   * model.json gives it (forward_us, backward_us); -1: not given. */
  double forward_us;
  double backward_us;
} rs_param_t;

typedef struct rs_model rs_model_t;

/* Parse a model.json file (see docs/model-json.md). On success *out owns a
 * new model, freed with rs_model_free. On error *out is NULL and errmsg holds
 * one line naming the file and, for syntax errors, line and column. */
RS_API int rs_model_load(const char *path, rs_model_t **out, char *errmsg);
/* The same from text in memory; source names the text in messages. */
RS_API int rs_model_parse(const char *text, size_t len, const char *source,
                          rs_model_t **out, char *errmsg);
RS_API void rs_model_free(rs_model_t *model);

RS_API const char *rs_model_name(const rs_model_t *model);
RS_API size_t rs_model_param_count(const rs_model_t *model);
RS_API const rs_param_t *rs_model_param(const rs_model_t *model, size_t index);
RS_API size_t rs_model_elems(const rs_model_t *model);
/* The model's element type (all its params share one). */
RS_API rs_dtype_t rs_model_dtype(const rs_model_t *model);
/* Number of workers whose gradients the file gives inline (0: none), and
 * worker's flat gradients (rs_model_elems values, already rounded to the
 * model's dtype) or NULL. */
RS_API int rs_model_inline_workers(const rs_model_t *model);
RS_API const double *rs_model_inline_grads(const rs_model_t *model, int worker);

/* A gradient bucket, as PyTorch DDP forms them: params grouped in reverse
 * registration order (the order backward produces gradients) until the
 * bucket holds at least its cap; the first bucket's cap is small (1 MiB) so
 * its all-reduce starts early. Consecutive params, so one contiguous range
 * of the flat buffer. */
typedef struct rs_bucket {
  size_t elem_offset; /* where the bucket starts in the flat buffer */
  size_t elems;
  size_t first_param; /* params first_param .. first_param+params-1 */
  size_t params;
} rs_bucket_t;

#define RS_DEFAULT_BUCKET_BYTES ((size_t)25 << 20)      /* DDP bucket_cap_mb */
#define RS_DEFAULT_FIRST_BUCKET_BYTES ((size_t)1 << 20) /* DDP first bucket */

/* Group model's params into buckets of at least cap_bytes (the first of at
 * least first_bytes), in DDP's order: bucket 0 holds the last params. A
 * cap of 0 makes one bucket of the whole model. A model that lists its own
 * buckets (model.json's "buckets", as ringsim.torch.record_hook writes a
 * job's) gets those, whatever the caps. *out is allocated (free() it);
 * *count >= 1. */
RS_API int rs_model_buckets(const rs_model_t *model, size_t first_bytes,
                            size_t cap_bytes, rs_bucket_t **out, size_t *count);
/* The buckets model.json lists ("buckets"), or 0; and bucket b's params
 * (their indices) in the order its flat view lays them out, the bucket's
 * params in all (NULL when the model lists none, or b is not one). */
RS_API size_t rs_model_fixed_buckets(const rs_model_t *model);
RS_API const size_t *rs_model_bucket_layout(const rs_model_t *model, size_t b);
/* The param at place j (0 .. params-1) of bucket b's flat view, as DDP lays
 * a rebuilt bucket out: the model's listed order (rs_model_bucket_layout),
 * else last to first. bucket is rs_model_buckets' b. */
RS_API size_t rs_model_bucket_param(const rs_model_t *model,
                                    const rs_bucket_t *bucket, size_t b,
                                    size_t j);

/* ---- safetensors --------------------------------------------------------- */

/* Read every param of model from the safetensors file at path into data
 * (rs_model_elems values, flat, in model order: double for an f64 model,
 * float otherwise, as rs_dtype_buffer_size says). Tensors must have the
 * model's dtype (F32, F64, F16 or BF16) and the param's shape; extra tensors
 * are ignored. */
RS_API int rs_safetensors_read(const char *path, const rs_model_t *model,
                               void *data, char *errmsg);
/* Write data (flat, model order) as tensors of the model's dtype, named and
 * shaped as the params. Writes to a temporary file and renames it: on error
 * nothing is left at path. */
RS_API int rs_safetensors_write(const char *path, const rs_model_t *model,
                                const void *data, char *errmsg);
/* The same, giving up as soon as *cancel (if not NULL) is non-zero, as a
 * signal-handling thread sets it: then nothing is left at path or beside
 * it (the temporary file is removed), and RS_EINTERRUPTED is returned. */
RS_API int rs_safetensors_write_cancellable(const char *path,
                                            const rs_model_t *model,
                                            const void *data,
                                            const rs_stop_flag_t *cancel,
                                            char *errmsg);

/* ---- trace ----------------------------------------------------------------
 */

typedef struct rs_trace rs_trace_t;

/* Open (or create) the SQLite trace database at path, which may hold many
 * runs (docs/trace-schema.md). A file that is not SQLite, or a SQLite
 * database that is not a ringsim trace (its application_id and tables say
 * so), a trace of another schema version, a damaged trace, a file or
 * directory that cannot be written, and names that are not regular files
 * ("", ":memory:", "file:" URIs, devices) are refused (RS_EINVAL) and left
 * untouched, no -wal or -shm file created.
 * Several processes may append to one trace: each waits for the lock up to
 * five minutes (the command: RINGSIM_TRACE_WAIT seconds, if set).
 * On error *out is NULL and errmsg names the file and the problem. */
RS_API int rs_trace_open(const char *path, rs_trace_t **out, char *errmsg);
RS_API void rs_trace_close(rs_trace_t *trace);
RS_API const char *rs_trace_path(const rs_trace_t *trace);
/* Mark every run written through trace (this handle, this process) that
 * its row still calls "ok" as status ("failed" or "interrupted"), with
 * error: a job of several runs (ringsim step's, PowerSGD's all-reduces)
 * that fails after some of them were written (its report lost, a signal)
 * leaves no row saying ok. Rows another process wrote, and rows already
 * failed, are left as they are. RS_OK (also when nothing was written),
 * RS_EINVAL (status), or RS_EIO with errmsg. */
RS_API int rs_trace_mark_written(rs_trace_t *trace, const char *status,
                                 const char *error, char *errmsg);

/* ---- run ----------------------------------------------------------------- */

typedef enum rs_op {
  RS_OP_SUM,
  RS_OP_AVG, /* sum, divided by W (after the sum, or before: average) */
  RS_OP_MIN,
  RS_OP_MAX,
  RS_OP_PROD
} rs_op_t;

/* "sum", "avg", "min", "max", "prod"; the op for a name, or -1. */
RS_API const char *rs_op_name(rs_op_t op);
RS_API int rs_op_parse(const char *name);
typedef enum rs_init {
  RS_INIT_NORMAL,  /* N(0, 1) */
  RS_INIT_UNIFORM, /* U(-1, 1) */
  RS_INIT_EXACT    /* multiples of 1/16 in [-8, 8] (narrower for f16 and
                      bf16 at many workers): every sum is exact */
} rs_init_t;
typedef enum rs_collective {
  RS_COLL_ALLREDUCE,     /* the all-reduce (the ring's: reduce-scatter then
                            all-gather) */
  RS_COLL_REDUCE_SCATTER /* the ring alone: stop after its reduce-scatter
                            (NCCL's ReduceScatter) */
} rs_collective_t;

/* The all-reduce algorithm (--algo; docs/algorithms.md). What each needs
 * and offers is its row's to say: rs_algo_info. */
typedef enum rs_algorithm {
  RS_ALGO_RING,      /* reduce-scatter then all-gather round a ring */
  RS_ALGO_RD,        /* recursive doubling: log2 W whole-buffer exchanges */
  RS_ALGO_RHD,       /* Rabenseifner: recursive halving, then doubling */
  RS_ALGO_LINEAR,    /* everything reduced at worker 0, then broadcast */
  RS_ALGO_TREE,      /* NCCL's double binary tree */
  RS_ALGO_GLOO_RING, /* gloo's ring (PyTorch's gloo backend), bit for bit */
  RS_ALGO_HIER,      /* hierarchical: reduce-scatter in the node, ring
                        all-reduce across nodes, all-gather in the node */
  RS_ALGO_HIER_RD,   /* the same, recursive doubling across nodes */
  RS_ALGO_HIER_RHD,  /* the same, Rabenseifner across nodes */
  RS_ALGO_NVLS,      /* NVLink SHARP: the node's switch reduces (one node) */
  RS_ALGO_NVLSTREE,  /* NVLS in each node, NCCL's tree across the nodes */
  /* (a new algorithm's value goes here, before the count) */
  RS_ALGO_COUNT, /* how many algorithms there are (not one of them) */
  /* Not an algorithm: per bucket, the one of the above the alpha-beta model
   * predicts fastest (rs_auto_choose; docs/algorithms.md). Its value stays
   * 255 whatever algorithms are added. */
  RS_ALGO_AUTO = 255
} rs_algorithm_t;
/* "ring", "rd", "rhd", "linear", "tree", "gloo-ring", "hier", "hier:rd",
 * "hier:rhd", "auto" ("?" for a value that names none); and back (-1: no
 * such name; "hier:ring" is "hier"). */
RS_API const char *rs_algorithm_name(rs_algorithm_t algo);
RS_API int rs_algorithm_parse(const char *name);

/* What an algorithm needs and offers, as its row in the algorithm table
 * says (src/algo/list.c): the command, the run and the Python package ask
 * this, never which algorithm it is. Each flag is 1 or 0. The struct only
 * grows at its end: a field, once here, keeps its place and meaning. */
typedef struct rs_algo_info {
  const char *name;  /* --algo's name: "ring" (rs_algorithm_name) */
  const char *title; /* --explain's: "ring all-reduce" */
  /* The segment size it runs with unless told (--segment-bytes): gloo's
   * ring cuts gloo's own (RS_GLOO_SEGMENT_BYTES), which decides its bits;
   * 0 for one that takes the run's (RS_DEFAULT_SEGMENT_BYTES). */
  size_t segment_bytes;
  int needs_topology; /* runs only on nodes (a topology, --topo): hier */
  int slices;         /* runs NCCL's slice loop order too (--loop slices) */
  int reduce_scatter; /* is a reduce-scatter then an all-gather, and stops
                         after the first when asked (RS_COLL_REDUCE_SCATTER) */
  int auto_eligible;  /* --algo auto may choose it (not gloo-ring: it is the
                         ring in gloo's order, there for PyTorch's bits) */
  int in_nccl;        /* NCCL runs it (NCCL_ALGO_RING, NCCL_ALGO_TREE); hier
                         is not NCCL's (NCCL has no algorithm by that name) */
  int closed_formula; /* its prediction is a closed formula (predict;
                         docs/algorithms.md), not its schedule simulated */
  /* It is DESIGN.md's ring: W chunks of sizes differing by at most one
   * element, each cut into segments, round the ring of neighbours in W-1
   * reduce-scatter and W-1 all-gather steps; so 2(W-1) W segments a bucket,
   * 2(W-1)/W x S bytes sent by each worker, RS_NETMODEL_FORMULA its cost,
   * and reports state those against what it did. */
  int textbook_ring;
  int needs_nvls_switch; /* runs only on one node whose NVLink switch
                            reduces (NVLink SHARP, --topo dgx-h100): nvls */
  int channels; /* runs on NCCL's channels (rs_netmodel_t's channels,
                   --channels): C rings (or trees), each on its part of a
                   bucket */
} rs_algo_info_t;
/* Algorithm algo's row into *info. RS_OK; RS_EINVAL (info untouched) for
 * RS_ALGO_AUTO, which is not one, or a value that names no algorithm. */
RS_API int rs_algo_info(rs_algorithm_t algo, rs_algo_info_t *info);

/* Faults a run can inject, to show how a collective fails (--inject). */
typedef enum rs_fault_kind {
  RS_FAULT_CRASH,   /* the worker stops at the step, telling nobody */
  RS_FAULT_STALL,   /* the worker sleeps ms milliseconds before the step */
  RS_FAULT_CORRUPT, /* one bit of the step's first segment flips in flight */
  RS_FAULT_DROP,    /* the step's first segment is lost in flight */
  RS_FAULT_DUP      /* the step's first segment is delivered twice */
} rs_fault_kind_t;

typedef struct rs_fault {
  rs_fault_kind_t kind;
  int worker; /* the worker that crashes, stalls, or sends the bad segment */
  int step;   /* the algorithm's step, counted over its phases from 0 (its
                 steps: docs/algorithms.md; the ring's 0..W-2 reduce-scatter,
                 W-1..2W-3 all-gather) */
  int ms;     /* stall length */
} rs_fault_t;

#define RS_MAX_FAULTS 16

/* ---- simulated network (alpha-beta model) ------------------------------ */

/* A worker's outgoing link, named r -> r+1 after the ring's: everything
 * worker r sends, to whichever peer its algorithm names, leaves on it. A
 * segment of b bytes that leaves at simulated time t arrives at t + latency
 * + b / bandwidth; the link serializes (a segment leaves only when the
 * previous one has been put on the wire). */
typedef struct rs_link_model {
  uint64_t latency_ns;
  uint64_t bandwidth; /* bytes per second */
} rs_link_model_t;

#define RS_MAX_NET_OVERRIDES 64
/* In a per-link override: this field keeps the default link's value. */
#define RS_NET_UNSET UINT64_MAX

/* ---- topology (--topo): nodes of GPUs, their links and NICs ------------ */

/* A cluster of nodes x gpus workers in blocks, as torchrun places ranks:
 * worker r is GPU r mod gpus of node r / gpus. Each GPU has a port into
 * its node's switch (intra, each way: NVLink through NVSwitch, or PCIe);
 * each node has nics NICs to the other nodes (nic, each way), shared by
 * its GPUs: GPU g sends and receives through NIC g mod nics. A transfer
 * within a node crosses the sender's port and the receiver's; one between
 * nodes crosses, in order, the sender's port, its NIC's send side, the
 * receiver's NIC's receive side and the receiver's port, and has the
 * NIC's latency. Contention: docs/algorithms.md. */
typedef struct rs_topo {
  int enabled;
  int nodes; /* N */
  int gpus;  /* G per node */
  int nics;  /* K per node, 1..G */
  rs_link_model_t intra;
  rs_link_model_t nic;
  /* What NCCL's model of the machine needs besides (src/algo/nccl.h);
   * the simulated clocks do not read them. */
  int cc;       /* the GPUs' compute capability x 10 (80 A100, 90 H100);
                   0: not known */
  int nvswitch; /* where a node's GPUs meet: RS_TOPO_SWITCH_* */
} rs_topo_t;

/* rs_topo_t.nvswitch: the GPUs' ports (intra) go to the host's PCIe, to
 * an NVLink switch, or to one that also reduces (NVLink SHARP, which
 * NCCL's NVLS and NVLSTree use). */
#define RS_TOPO_SWITCH_NONE 0
#define RS_TOPO_SWITCH_NVSWITCH 1
#define RS_TOPO_SWITCH_NVLS 2

/* The protocol a network model moves its bytes with (--proto;
 * docs/algorithms.md, "Protocols"): NONE, the bytes as they are over the
 * links' own latencies; NCCL's LL, LL128 and Simple, each with its wire
 * format, NCCL's launch latency, and on a topology whose GPUs NCCL's
 * model knows (its cc=) NCCL's hop latencies for the link's kind. */
typedef enum rs_protocol {
  RS_PROTOCOL_NONE,
  RS_PROTOCOL_LL,
  RS_PROTOCOL_LL128,
  RS_PROTOCOL_SIMPLE
} rs_protocol_t;

typedef struct rs_netmodel {
  int enabled;
  rs_link_model_t link; /* every link, unless overridden */
  uint64_t reduce_rate; /* bytes reduced per second; 0: reducing is free */
  int link_count;       /* per-link overrides: worker src's outgoing link
                           (named src -> dst, dst = src+1 mod W) */
  struct {
    int src, dst;
    rs_link_model_t link;
  } links[RS_MAX_NET_OVERRIDES];
  int straggler_count; /* per-worker compute delay at the start of each step */
  struct {
    int worker;
    uint64_t delay_ns;
  } stragglers[RS_MAX_NET_OVERRIDES];
  /* The topology (--topo): when enabled, the workers are its nodes' GPUs
   * and a transfer takes its links and NICs (link is unused: --net and
   * --link are refused with it). */
  rs_topo_t topo;
  /* Segments in flight on one connection (NCCL_STEPS, --slots): a
   * streaming algorithm's segment leaves no sooner than the one `slots`
   * before it on its link arrived (docs/algorithms.md, "Pipelined
   * links"); 0 is the default, 8. A run takes its config's slots. */
  int slots;
  /* NCCL's protocol, or none (rs_protocol_t above). */
  rs_protocol_t proto;
  /* NCCL's channels the ring runs (--channels): C rings side by side, each
   * over its own part of every bucket (docs/algorithms.md, "Channels"), or
   * with the tree C trees. 0: the algorithm's own (rs_netmodel_channels:
   * NCCL's count for the ring and the tree on a topology NCCL's model
   * knows, else one); 1: one ring (one pair of trees). The ring and the
   * tree alone take more than one; a run and its schedule simulation read
   * it here, with or without a model. */
  int channels;
  /* Not part of the model: a schedule simulation under it
   * (rs_netmodel_simulate_algo) looks at *stop between its segments and,
   * once it is nonzero, returns at once, its result meaningless (a signal
   * stopped it: the caller set the flag and knows). NULL: it runs to its
   * end. */
  const rs_stop_flag_t *stop;
} rs_netmodel_t;

/* Parse "latency=5us,bandwidth=25GB/s" into m (enabling it). Units: ns, us,
 * ms, s; B/s, KB/s, MB/s, GB/s (powers of 1000), KiB/s, MiB/s, GiB/s, and
 * Gbps/Mbps (bits). */
RS_API int rs_netmodel_parse(const char *spec, rs_netmodel_t *m, char *errmsg);
/* "20GB/s": a rate in bytes per second. */
RS_API int rs_netmodel_parse_rate(const char *text, uint64_t *bytes_per_s,
                                  char *errmsg);
/* "2-3:bandwidth=1GB/s[,latency=20us]": override worker 2's outgoing link
 * (the ring's link 2 -> 3). */
RS_API int rs_netmodel_parse_link(const char *spec, rs_netmodel_t *m,
                                  char *errmsg);
/* "worker=1,us=200" (or ns=, ms=): that worker computes for so long at the
 * start of every step. */
RS_API int rs_netmodel_parse_straggler(const char *spec, rs_netmodel_t *m,
                                       char *errmsg);
/* Check m against W workers: overrides name existing links and workers. */
RS_API int rs_netmodel_check(const rs_netmodel_t *m, int workers, char *errmsg);

/* Parse a topology: an optional preset first ("dgx-h100", "dgx-a100",
 * "pcie"; docs/topology.md cites their numbers), then key=value items
 * that set or override: nodes=N, gpus=G, nics=K, intra=LATENCY/BANDWIDTH,
 * nic=LATENCY/BANDWIDTH, cc=CC (compute capability x 10),
 * switch=none|nvswitch|nvls (units as --net's: "dgx-h100,nodes=64",
 * "nodes=2,gpus=4,nics=1,intra=1us/100GB/s,nic=5us/25GB/s"). Enables t;
 * RS_EINVAL with a one-line message naming the item otherwise. */
RS_API int rs_topo_parse(const char *spec, rs_topo_t *t, char *errmsg);
/* Check t against W workers: W must be nodes x gpus. */
RS_API int rs_topo_check(const rs_topo_t *t, int workers, char *errmsg);

/* The ring's cost formula as reports print it: alpha the latency, beta the
 * bandwidth, gamma the reduce rate (docs/ring-walkthrough.md uses the same;
 * every algorithm's formula: docs/algorithms.md). */
#define RS_NETMODEL_FORMULA "alpha + k b/beta + (2W-3) max(alpha + b/beta, k b/beta) + reductions"

/* nccl-tests' bus bandwidth factor 2(W-1)/W: the share of its buffer each
 * worker of a ring all-reduce sends (0 for one worker). nccl-tests applies
 * the ring's factor whatever the algorithm, and so do ringsim's reports. */
RS_API double rs_busbw_factor(int workers);
/* The bus bandwidth of algbw at W workers: algbw x 2(W-1)/W, computed as
 * algbw x 2 x (W-1) / W, the order reports and traces have always used, so
 * their digits stay the same (a NaN algbw gives NaN). */
RS_API double rs_busbw(double algbw, int workers);

/* An algorithm's simulated time, without threads or data.
 * - predict: its cost formula for one bucket of elems elements of
 *   elem_size bytes, with segs_per_chunk segments of at most segment_bytes
 *   per chunk (the ring's is RS_NETMODEL_FORMULA, b = S/(W k) bytes, each
 *   of b/beta and b/gamma rounded up to a nanosecond; exact when W x k
 *   divides the element count; an upper bound for rd and rhd when W is
 *   not a power of two; every algorithm's: docs/algorithms.md).
 * - simulate: its schedule on simulated clocks (what `ringsim model`
 *   prints): the same clocks the threaded run keeps, over the buckets in
 *   order, each cut into segments of at most segment_bytes. */
RS_API uint64_t rs_netmodel_predict_algo(rs_algorithm_t algo,
                                         const rs_netmodel_t *m, int workers,
                                         size_t elems, size_t segs_per_chunk,
                                         size_t segment_bytes,
                                         size_t elem_size);
RS_API uint64_t rs_netmodel_simulate_algo(rs_algorithm_t algo,
                                          const rs_netmodel_t *m, int workers,
                                          const rs_bucket_t *buckets,
                                          size_t bucket_count,
                                          size_t segment_bytes,
                                          size_t elem_size);
/* What a schedule is timed on: network net, with `workers` workers,
 * moving elements of elem_size bytes in segments of at most
 * segment_bytes. */
typedef struct rs_sim_setup {
  const rs_netmodel_t *net;
  int workers;
  size_t segment_bytes;
  size_t elem_size;
} rs_sim_setup_t;
/* The channels algo runs on under m for W workers: m's channels where it
 * gives them (more than 0), else NCCL's count on m's topology for the
 * ring (where NCCL's model knows it: dgx-h100, dgx-a100; W its nodes x
 * GPUs), else 1; for RS_ALGO_AUTO, those its buckets of the ring run on.
 * rs_netmodel_predict_algo and rs_netmodel_simulate_algo time it on
 * these. */
RS_API int rs_netmodel_channels(rs_algorithm_t algo, const rs_netmodel_t *m,
                                int workers);
/* --algo auto (docs/algorithms.md): of the algorithms in the bit mask
 * eligible (bit a for rs_algorithm_t a < RS_ALGO_COUNT), the one whose cost
 * formula (rs_netmodel_predict_algo) on `on` is smallest for a bucket of
 * elems elements, each on its channels (rs_netmodel_channels); a tie goes to the lower rs_algorithm_t (the ring
 * first). predicted (room for RS_ALGO_COUNT, or NULL) gets every
 * algorithm's prediction, UINT64_MAX for one not eligible (gloo-ring
 * never is: it is the ring in gloo's order, for PyTorch's bits). Returns
 * RS_ALGO_RING if eligible is 0. */
RS_API rs_algorithm_t rs_auto_choose(const rs_sim_setup_t *on, size_t elems,
                                     unsigned eligible, uint64_t *predicted);
/* Measure this machine as a network model for --algo auto (tens of
 * milliseconds). latency_ns: one message's hand-off between worker
 * threads (the thread wake-up and the transfer primitive's work), from two
 * short ring runs of W worker threads (at most 16) through real queues
 * (slots per edge, the copying transport or, with direct, the copy-free
 * one) that differ only in messages per step; bandwidth: bytes per second
 * one thread copies a message (0, free, for direct); reduce_rate: bytes
 * per second it folds one; both divided among W workers that outnumber
 * the cores. On error (out of memory, threads) returns its code and errmsg
 * says why; *out is then unchanged. */
RS_API int rs_machine_measure(int workers, size_t segment_bytes, int slots,
                              int direct, rs_netmodel_t *out, char *errmsg);

/* Segments per chunk for a run of elems elements of elem_size bytes, W
 * workers and segments of at most segment_bytes (what rs_run_create uses). */
RS_API size_t rs_segs_per_chunk(size_t elems, int workers, size_t segment_bytes,
                                size_t elem_size);

/* When an average (RS_OP_AVG) divides by W: the config's average
 * (rs_config_set), --average post, pre or pre-mul. */
typedef enum rs_average {
  RS_AVERAGE_POST,   /* "post": the sum, divided by W at its last addition */
  RS_AVERAGE_PRE,    /* "pre": each worker's gradient divided by W before
                        the sum, as DDP's communication hooks do (guards
                        against overflow in low precision) */
  RS_AVERAGE_PRE_MUL /* "pre-mul": each multiplied by 1/W rounded to the
                        dtype before the sum, as PyTorch 1.13's DDP reducer
                        does without a hook (docs/ddp.md; --like ddp-gloo) */
} rs_average_t;
/* "post", "pre", "pre-mul" ("?" for a value not in the enum; never NULL);
 * and the value for a name, or -1. */
RS_API const char *rs_average_name(rs_average_t average);
RS_API int rs_average_parse(const char *name);
/* A DDP communication hook (the config's hook, --hook), as PyTorch 1.13
 * writes it (torch/distributed/algorithms/ddp_comm_hooks/; docs/hooks.md).
 * A hook averages: it needs RS_OP_AVG, and its division by W before the
 * sum replaces average (the reducer's own 1/W multiply is off). */
typedef enum rs_hook {
  RS_HOOK_NONE,      /* "none": op and average as given */
  RS_HOOK_ALLREDUCE, /* "allreduce": allreduce_hook: the bucket divided by
                        W, then summed */
  RS_HOOK_FP16,      /* "fp16": fp16_compress_hook: the bucket cast to
                        float16, divided by W in float16, summed in float16
                        (half the bytes), cast back to the model's dtype */
  RS_HOOK_BF16,      /* "bf16": bf16_compress_hook's arithmetic, in
                        bfloat16 */
  RS_HOOK_POWERSGD   /* "powersgd": powerSGD_hook's step, of rank R
                        (powersgd:rank=R): three all-reduces a
                        bucket, each a run of its own (ringsim/powersgd.h;
                        rs_run_create refuses it) */
} rs_hook_t;
/* "none", "allreduce", "fp16", "bf16", "powersgd" ("?" for a value not in
 * the enum; never NULL); the value for a name, or -1. */
RS_API const char *rs_hook_name(rs_hook_t hook);
RS_API int rs_hook_parse(const char *name);
/* The dtype a compressing hook sums in (RS_DTYPE_F16 for fp16, RS_DTYPE_BF16
 * for bf16); for no hook or allreduce, model_dtype. */
RS_API rs_dtype_t rs_hook_dtype(rs_hook_t hook, rs_dtype_t model_dtype);
/* gloo's largest ring segment (kMaxSegmentSize, which ProcessGroupGloo
 * leaves as it is): --algo gloo-ring's segment bytes unless given. */
#define RS_GLOO_SEGMENT_BYTES ((size_t)1 << 20)

/* A run's configuration, opaque: rs_config_new makes one with the
 * defaults below (4 workers, the ring, avg, ...), rs_config_set and
 * rs_config_get set and read a setting by the command's option name, and
 * a few typed setters (rs_config_set_ready, rs_config_set_on_iteration,
 * rs_config_set_machine) take what text cannot carry; rs_config_free
 * frees it. The layout is the library's own: it may grow without a
 * program noticing. */
typedef struct rs_config rs_config_t;

/* MPI (docs/mpi.md), for a program started by mpirun. rs_mpi_init
 * initialises MPI (MPI_THREAD_MULTIPLE) and says this process's rank and
 * the number of processes; RS_EINVAL with errmsg saying so when ringsim
 * was built without MPI or MPI cannot give threads. Call it once, before
 * any run with transport mpi (rs_config_set), and rs_mpi_finalize once at
 * the end. */
RS_API int rs_mpi_init(int *rank, int *procs, char *errmsg);
RS_API void rs_mpi_finalize(void);
/* Collective over every process: the largest of their codes. A process
 * whose code is not that largest gets, in msg (size bytes), the message
 * of the lowest-ranked process that has it; the others keep their own.
 * msg NULL: a gate (the caller's k-th); msg given: the job's last
 * agreement (its exit status). Processes at different gates, or one at
 * its last while another is at a gate, all get 2 or more and a message
 * saying so (once any is at its last, every later call returns at once).
 * Each waits at most a minute or the run's --timeout if longer; a process
 * that does not answer is named, and rs_mpi_finalize then ends the job
 * (MPI_Abort) rather than wait for it. */
RS_API int rs_mpi_agree(int code, char *msg, size_t size);

/* Defaults: 4 workers, RS_DEFAULT_SEGMENT_BYTES, 8 slots, 10 s, avg. */
#define RS_DEFAULT_SEGMENT_BYTES (256u * 1024u)
#define RS_DEFAULT_SLOTS 8
/* The limits rs_run_create accepts: slots 1..RS_MAX_SLOTS, segment_bytes
 * RS_MIN_SEGMENT_BYTES (one float) .. RS_MAX_SEGMENT_BYTES (1 GiB). */
#define RS_MAX_SLOTS 1024
/* The most channels the ring runs (rs_netmodel_t's channels): NCCL's
 * MAXCHANNELS (src/include/device.h: 32 up to v2.24, 64 since v2.25.1). */
#define RS_MAX_CHANNELS 64
#define RS_MIN_SEGMENT_BYTES 4
#define RS_MAX_SEGMENT_BYTES ((size_t)1 << 30)
#define RS_DEFAULT_TIMEOUT_S 10.0
/* What a caller does before rs_run_create for --algo auto: with neither
 * net nor machine set, measure this machine (rs_machine_measure, with the
 * config's workers, segment-bytes, slots and direct) into the config's
 * machine (as rs_config_set_machine); otherwise nothing. rs_run_create
 * refuses an auto run with no model (the run never measures: measuring
 * runs rings itself). */
RS_API int rs_config_measure_machine(rs_config_t *config, char *errmsg);

typedef struct rs_run rs_run_t;

/* Validate config and allocate the W flat buffers. The run keeps a pointer
 * to model, which must outlive it. On error *out is NULL and errmsg says
 * which setting is wrong. */
RS_API int rs_run_create(const rs_config_t *config, const rs_model_t *model,
                         rs_run_t **out, char *errmsg);
/* Would rs_run_create accept config and model? Every check it makes
 * (settings, memory, trace records included when config->traced, the
 * simulated time), nothing allocated for the run's buffers: RS_OK, or its
 * error with errmsg. For a job of several runs that must refuse before
 * the first runs (ringsim step's). */
RS_API int rs_run_check(const rs_config_t *config, const rs_model_t *model,
                        char *errmsg);
RS_API void rs_run_free(rs_run_t *run);
RS_API const char *rs_run_errmsg(const rs_run_t *run);

/* Worker's flat gradient buffer: rs_model_elems values, 64-byte aligned:
 * double for an f64 model, float otherwise (for f16/bf16 models, values the
 * dtype can represent); NULL for a worker that does not exist. A caller
 * that fills the buffers through it says so with rs_run_mark_filled.
 * Taking it before rs_run_execute, even after rs_run_fill, means the
 * inputs may change: the check then keeps its reference from before the
 * run (12 bytes an element) instead of generating the inputs again after
 * it. */
RS_API void *rs_run_buffer(rs_run_t *run, int worker);
/* The caller has written every worker's buffer itself (through
 * rs_run_buffer): rs_run_execute may run. Without it, or one of the fills
 * below, rs_run_execute refuses the run (RS_EINVAL, "not filled"). */
RS_API void rs_run_mark_filled(rs_run_t *run);
/* Fill every worker's buffer: generated from seed, deterministically per
 * (seed, worker, param, element); or copied from the model's inline grads;
 * or read from safetensors files, pattern holding "{r}" for the worker. */
RS_API int rs_run_fill(rs_run_t *run, rs_init_t init, uint64_t seed);
RS_API int rs_run_fill_inline(rs_run_t *run);
RS_API int rs_run_load_grads(rs_run_t *run, const char *pattern);
/* Worker's file under a --grads pattern: each "{r}" replaced by worker.
 * RS_EINVAL if it does not fit in out_size bytes. */
RS_API int rs_grads_path(const char *pattern, int worker, char *out,
                         size_t out_size);

/* Record this run into trace (which must outlive the run): every transfer,
 * the totals and the outcome. config_json (may be NULL) is stored as the
 * run's configuration. Call before rs_run_execute. */
RS_API int rs_run_set_trace(rs_run_t *run, rs_trace_t *trace,
                            const char *config_json);
/* The run's id in its trace (after rs_run_execute), or 0. */
RS_API int64_t rs_run_trace_id(const rs_run_t *run);
/* NULL, or the message of a failure to write the run's trace rows (they
 * were rolled back), saying whether the run's row could be marked failed.
 * A run that had completed then fails with RS_ETRACE and this message. */
RS_API const char *rs_run_trace_error(const rs_run_t *run);

/* Stop the run from another thread (a signal's: SIGINT or SIGTERM, named in
 * the error as signal_name): its workers stop at once, wherever they wait
 * or stall, and rs_run_execute returns RS_EINTERRUPTED; the trace records
 * the run as "interrupted". Safe to call at any time between rs_run_create
 * and rs_run_free, from any thread, more than once. */
RS_API void rs_run_interrupt(rs_run_t *run, const char *signal_name);

/* What a run is doing, for a progress line drawn by another thread. */
typedef enum rs_stage {
  RS_STAGE_IDLE,      /* between the phases below, or done */
  RS_STAGE_GENERATE,  /* rs_run_fill: generating every worker's gradients */
  RS_STAGE_REFERENCE, /* the reference, before the run (inputs that were
                         not generated: they cannot be made again after) */
  RS_STAGE_ALLREDUCE, /* the workers run the collective */
  RS_STAGE_CHECK,     /* the result compared with the reference */
  RS_STAGE_TRACE      /* writing the trace */
} rs_stage_t;

/* From any thread, at any time between rs_run_create and rs_run_free: the
 * run's stage and, in *fraction, how much of it is done, in [0, 1], or -1
 * when the phase does not count its work. */
RS_API rs_stage_t rs_run_progress(const rs_run_t *run, double *fraction);

/* Compute the reference from the buffers, run the collective on W threads,
 * then (for an all-reduce) check the result. Returns RS_OK when the run
 * completed and the check passed, RS_ECHECK when it completed but the check
 * failed, or the run's error (RS_ETIMEDOUT, RS_EPROTO, ...; RS_ETRACE when
 * its trace could not be written). Once only. */
RS_API int rs_run_execute(rs_run_t *run);

typedef struct rs_worker_stats {
  uint64_t transfers_sent;
  uint64_t bytes_sent;
  uint64_t bytes_received;
  uint64_t wait_ns; /* time blocked on a full or empty queue */
  /* With a topology of several nodes (--topo): of bytes_sent and
   * bytes_received, those to and from another node, through the NICs
   * (the rest crossed the node's own links); else 0. */
  uint64_t bytes_sent_off_node;
  uint64_t bytes_received_off_node;
  /* Of those, the simulated time on the wire of the messages whose NIC
   * side other GPUs shared in their step (the trace's share > 1), sent
   * and received, and the most GPUs that shared one. */
  uint64_t sent_shared_ns;
  uint64_t received_shared_ns;
  uint64_t most_sharing;
} rs_worker_stats_t;

typedef struct rs_param_check {
  double max_abs_err; /* largest |result - reference| */
  double max_rel_err; /* largest |result - reference| / |reference| */
  double bound;       /* largest per-element error bound */
  double worst_ratio; /* largest error / bound (<= 1 passes) */
  uint64_t differing; /* elements not bitwise equal to the rounded reference */
  uint64_t wrong;     /* elements that fail the check: outside their bound
                         (or, for exact inputs, differing) */
  /* With order_report: elements whose result (in the algorithm's order)
   * differs from the fixed order's, and the largest difference in units in
   * the last place. */
  uint64_t order_differing;
  uint64_t order_max_ulps;
  /* A compressing hook's run (fp16, bf16): elements whose exact sum (W
   * times the reference) is beyond the hook's dtype's range, which summed
   * first and divided after would overflow in any order; of those, the
   * ones the hook's result holds finite (dividing first saved them); and
   * the largest |reference|. 0 for other runs. */
  uint64_t sum_overflow, sum_overflow_saved;
  double max_abs_ref;
} rs_param_check_t;

typedef struct rs_result {
  int status;         /* what rs_run_execute returned */
  int checked;        /* the result was checked (the all-reduce completed);
                         if 0, the check's fields below mean nothing */
  int identical;      /* every worker's buffer bitwise equal to worker 0's */
  int exact;          /* inputs were RS_INIT_EXACT: the bound is zero */
  double max_abs_err; /* over all params */
  double bound;       /* largest per-element bound over all params */
  double worst_ratio;
  uint64_t wall_ns;     /* an iteration's time, averaged over the timed
                           iterations: the slowest worker's own time, from
                           its start to the end of its all-reduce (as an
                           MPI loop times MPI_Allreduce) */
  uint64_t wall_min_ns; /* the fastest timed iteration */
  /* The warm-up and timed iterations that ran: config's, or fewer (a time
   * budget). */
  int warmup, iterations;
  /* The reference over the same buffers before the run (the direct mean,
   * for exact inputs), on check_threads threads, averaged over ref_reps;
   * 0 when the check made it after the run, block by block from the
   * generated inputs made again (its time is then in check_ns). */
  uint64_t ref_ns;
  /* The check after the run, and the threads it (and the reference) ran
   * on. */
  uint64_t check_ns;
  int check_threads;
  uint64_t transfers;
  size_t buckets;
  uint64_t sim_ns;       /* simulated time of the first iteration (net on) */
  uint64_t predicted_ns; /* the cost formula's time (net on) */
  uint64_t trace_ns;     /* writing the trace, before and after the run */
  uint64_t trace_rows;   /* transfer rows written */
  size_t segs_per_chunk; /* segments per chunk, summed over the buckets */
  int steps;             /* the algorithm's steps per bucket */
  size_t seg_elems;      /* largest segment in elements */
  int slots; /* slots per queue in use: config's, or fewer in direct mode */
  /* Making the workers' inputs: rs_run_fill (generating them, on every
   * core, and the kernel's first touch of the buffers), or reading them
   * (rs_run_load_grads, rs_run_fill_inline); 0 if the caller filled them. */
  uint64_t fill_ns;
  /* A compressing hook (fp16, bf16), over every worker's inputs in the
   * checked iteration: elements its cast made infinite (beyond the
   * dtype's range), elements its cast flushed to zero (nonzero, rounded
   * to 0), elements its division by W flushed to zero; and the largest
   * |input| after the cast. 0 for other runs. */
  uint64_t hook_cast_overflow, hook_cast_flushed, hook_div_flushed;
  double hook_max_abs;
} rs_result_t;

/* How a worker ended. rs_wstate_name gives the name in quotes, which the
 * --json report and the trace's worker table print. */
typedef enum rs_wstate {
  RS_WSTATE_DONE,            /* "done" */
  RS_WSTATE_CRASHED,         /* "crashed": an injected crash */
  RS_WSTATE_STALLED,         /* "stalled": stopped in an injected stall */
  RS_WSTATE_TIMED_OUT,       /* "timed_out" */
  RS_WSTATE_ABORTED,         /* "aborted": another worker failed first */
  RS_WSTATE_BAD_MESSAGE,     /* "bad_message": out of sequence */
  RS_WSTATE_DAMAGED_MESSAGE, /* "damaged_message": checksum mismatch */
  RS_WSTATE_NOT_STARTED,     /* "not_started": the run stopped before its
                                all-reduce began */
  RS_WSTATE_FAILED           /* "failed": any other error */
} rs_wstate_t;

/* The state's name ("done", "timed_out", ...); "failed" for a value not in
 * the enum. Never NULL. */
RS_API const char *rs_wstate_name(rs_wstate_t state);

/* Where a worker ended, for the watchdog report (PyTorch's Flight Recorder
 * in spirit): after rs_run_execute. */
typedef struct rs_worker_state {
  rs_wstate_t wstate;  /* how it ended */
  const char *state;   /* rs_wstate_name(wstate) */
  const char *phase;   /* the algorithm's phase: reduce_scatter,
                          all_gather, exchange, reduce or broadcast (which
                          are whose: docs/algorithms.md); NULL if it never
                          ran */
  int step;            /* within the phase */
  int chunk;           /* the region it was sending or receiving (the
                          ring's chunk, rhd's part, the tree's half) */
  const char *waiting; /* "send", "receive" or "finish" (its steps done,
                          waiting for its peers' end of stream):
                          what it was doing when it stopped (blocked, or
                          handling a bad message); NULL if it finished,
                          crashed or stalled */
  int peer;            /* the peer it was waiting on, or -1 */
  int stall_ms;        /* state stalled: the injected stall's length */
} rs_worker_state_t;

RS_API void rs_run_worker_state(const rs_run_t *run, int worker,
                                rs_worker_state_t *out);

RS_API const rs_result_t *rs_run_result(const rs_run_t *run);
/* The algorithm bucket index runs: config's, or --algo auto's choice
 * (RS_ALGO_COUNT past the last bucket). */
RS_API rs_algorithm_t rs_run_bucket_algo(const rs_run_t *run, size_t index);
/* --algo auto: algorithm algo's predicted time for bucket index under the
 * model auto chose by (UINT64_MAX: not eligible for this run); 0 when the
 * run is not auto's or the index is out of range. */
RS_API uint64_t rs_run_bucket_predicted(const rs_run_t *run, size_t index,
                                        rs_algorithm_t algo);
/* --algo auto: the model it chose by, and whether it was this machine's,
 * measured (1), or --net's (0); NULL when the run is not auto's. */
RS_API const rs_netmodel_t *rs_run_auto_model(const rs_run_t *run,
                                              int *measured);

/* Narrating a run's all-reduce, and the order in which it combines one
 * element (--explain, `ringsim diff`): ringsim/explain.h. */

/* The run's buckets, in the order they are all-reduced. */
RS_API const rs_bucket_t *rs_run_bucket(const rs_run_t *run, size_t index);
RS_API const rs_worker_stats_t *rs_run_worker_stats(const rs_run_t *run,
                                                    int worker);
RS_API const rs_param_check_t *rs_run_param_check(const rs_run_t *run,
                                                  size_t param);
/* The run's config (rs_config_get reads it). */
RS_API const rs_config_t *rs_run_config(const rs_run_t *run);
/* The processes a run is spread over: 1 unless transport mpi (then the MPI
 * job's, after rs_run_create). */
RS_API int rs_run_procs(const rs_run_t *run);

/* When the check finds workers that do not hold identical results: an
 * element where a worker's result differs, bit for bit, from worker 0's. */
#define RS_MISMATCH_LIST 10
typedef struct rs_mismatch {
  int worker;
  size_t param; /* the param the element belongs to */
  size_t elem;  /* its index in the flat buffer (the param's elem_offset
                   plus its index in the param) */
  double value; /* the worker's, and worker 0's */
  double worker0_value;
} rs_mismatch_t;
/* After a checked run: how many elements of worker's result differ from
 * worker 0's (0 for worker 0, and when every worker is identical). Over
 * MPI, rank 0 has every worker's count. */
RS_API uint64_t rs_run_worker_mismatches(const rs_run_t *run, int worker);
/* ... and the first of them (at most RS_MISMATCH_LIST, in element order,
 * then worker order) in *first; returns how many. */
RS_API size_t rs_run_mismatches(const rs_run_t *run,
                                const rs_mismatch_t **first);

/* ---- for language bindings (python/ringsim; src/api/binding.c) ----------
 *
 * Calls that take and return only numbers, strings and opaque pointers, so
 * a binding without a C compiler (ctypes) never depends on the layout of
 * rs_config_t or rs_result_t. */

/* A configuration on the heap, with the defaults (4 workers, the ring, avg,
 * RS_DEFAULT_SEGMENT_BYTES, RS_DEFAULT_SLOTS, RS_DEFAULT_TIMEOUT_S, DDP's
 * buckets, one iteration); NULL when out of memory. Free it with
 * rs_config_free (NULL is fine). rs_config_t is opaque: this is the one
 * way to make one. */
RS_API rs_config_t *rs_config_new(void);
RS_API void rs_config_free(rs_config_t *config);
/* Set one option of config from text, by the command's long option name
 * ("bucket-mb", or "bucket_mb"):
 * - workers; op; average (pre, post, pre-mul); algo; hook (none,
 *   allreduce, fp16, bf16, powersgd:rank=R[,start=S][,feedback=on|off]
 *   [,warm=on|off]); like (ddp-gloo: sets algo, op, average and
 *   ddp-layout, as --like does); collective (allreduce, reduce-scatter);
 *   transport (shm, mpi: the run spreads over the MPI job's processes,
 *   rs_mpi_init first; docs/mpi.md);
 * - bucket-mb and first-bucket-mb (MiB; 0 for one bucket); segment-bytes
 *   (a plain number of bytes); slots; timeout (seconds); loop (steps,
 *   slices);
 * - checksum, direct, order-report, ddp-layout (DDP's bucket layout,
 *   reversed params) and traced (the run will have a trace: its records
 *   are counted in the memory rs_run_create checks): true, false, 1, 0;
 * - warmup (0..) and iterations (1..): runs of the collective on the same
 *   threads, the result checked after the first and timed over the last
 *   iterations; warmup-budget and timed-budget (seconds, 0 for none: with
 *   warmup 1 or more, the warm-up ends once it has taken its budget, and
 *   only as many timed iterations run as fit in theirs; rs_result_t says
 *   what ran); ref-reps (1..1000: the reference computed so many times,
 *   for a steadier ref_ns); check-threads (0, one per core, ..64);
 * - inject (adds a fault, as --inject); net, link, straggler, topo,
 *   reduce-rate, proto (as --net, --link, --straggler, --topo,
 *   --reduce-rate, --proto);
 * - test-flip and mpi-trace-batch: test knobs (RINGSIM_TEST_FLIP and
 *   RINGSIM_MPI_TRACE_BATCH, which the command and the Python package copy
 *   here: docs/reliability.md, docs/mpi.md); rs_run_create refuses a value
 *   it cannot read.
 * On error (RS_EINVAL) the config is unchanged, but for a half-parsed net,
 * link or straggler, and errmsg holds one line naming the option, the
 * value and what was expected. Checks across options (average applies to
 * op avg only) are rs_run_create's. The command parses these options
 * through it too, so both say the same. */
RS_API int rs_config_set(rs_config_t *config, const char *option,
                         const char *value, char *errmsg);
/* The value of one option of config as text that rs_config_set takes back
 * (the same names), NUL-terminated into value (size bytes): every option
 * above but like, inject, net, link, straggler, topo and reduce-rate,
 * which add to or parse into several settings (RS_EINVAL; a run's
 * report, rs_run_report_json, says what it used). RS_EINVAL with errmsg
 * for an unknown option or a value longer than size - 1. */
RS_API int rs_config_get(const rs_config_t *config, const char *option,
                         char *value, size_t size, char *errmsg);
/* What text cannot carry:
 * - ready_ns: a training step (ringsim/step.h): bucket b starts on worker
 *   r's simulated clock no earlier than ready_ns[b W + r], when its last
 *   gradient is ready there (rs_step_ready, for these buckets), in every
 *   iteration; NULL (the default): at once. The caller keeps the array
 *   until the run is freed.
 * - on_iteration: fn(arg, done, warmup, iterations), on the thread that
 *   calls rs_run_execute, with the iterations done and the warm-up and
 *   timed counts planned then: after each iteration that thread starts
 *   (the first; with a time budget, the warm-up's), and while the workers
 *   run the others back to back, every 100 ms and after the last; fn NULL
 *   (the default) for none.
 * - machine: --algo auto's model of this machine when there is no net
 *   (rs_machine_measure's, measured once for several configs; or
 *   rs_config_measure_machine measures into the config); NULL for none. */
RS_API void rs_config_set_ready(rs_config_t *config, const uint64_t *ready_ns);
RS_API void rs_config_set_on_iteration(rs_config_t *config,
                                       void (*fn)(void *arg, int done,
                                                  int warmup, int iterations),
                                       void *arg);
RS_API void rs_config_set_machine(rs_config_t *config,
                                  const rs_netmodel_t *machine);
/* A fault as --inject writes it, KIND:key=value,... (crash, stall, corrupt,
 * drop, dup; keys worker and step, default 0, and ms, a stall's length,
 * required for stall) into f. Returns 0, or -1 if spec is not one. */
RS_API int rs_fault_parse(const char *spec, rs_fault_t *f);

/* Move n values of dtype between its packed form (2 bytes for f16 and bf16,
 * as a tensor stores them) and a run's buffer form (rs_run_buffer: float for
 * f32, f16, bf16; double for f64). Unpacking is exact; packing assumes the
 * values are the dtype's (a run's buffers hold only such values) and does
 * not round. For f32 and f64 both are a copy. */
RS_API void rs_dtype_unpack(rs_dtype_t dtype, void *dst, const void *src,
                            size_t n);
RS_API void rs_dtype_pack(rs_dtype_t dtype, void *dst, const void *src,
                          size_t n);

/* The facts of run (after rs_run_execute; model is the run's) as one JSON
 * object, for a binding to build its report from: version (RS_VERSION),
 * status_name, error, run_id, trace_error; config (the settings used);
 * result (rs_result_t's fields); workers (rs_worker_stats_t's and
 * rs_worker_state_t's fields, per worker); params (name, offset, elems and
 * rs_param_check_t's fields); mismatches (workers: rs_run_worker_mismatches
 * per worker; first: rs_run_mismatches' list, param as its index);
 * buckets (rs_bucket_t's). Values that are not
 * finite are null. Returns a string the caller frees with rs_free, or NULL
 * when out of memory. */
RS_API char *rs_run_facts_json(const rs_run_t *run, const rs_model_t *model);
/* A run's figures, derived once for every report (src/api/report.c): the
 * command's text and JSON and the Python package's report read these. */
typedef struct rs_run_figures {
  int workers;
  size_t elems;
  double bytes;                /* S: bytes per worker, in the dtype summed */
  double model_bytes;          /* the same elements in the model's dtype */
  double sent_theory;          /* 2(W-1)/W x S */
  uint64_t sent_min, sent_max; /* bytes one worker sent */
  /* messages one worker sent (linear's root, the tree's inner nodes,
   * gloo's uneven segments send more than the others) */
  uint64_t transfers_min, transfers_max;
  uint64_t planned; /* transfers of a complete ring run (0: not the ring) */
  double seconds, algbw, busbw; /* the wall time per iteration; GB/s */
  /* A DDP communication hook's (docs/hooks.md), once checked: */
  rs_dtype_t hook_dtype;      /* what it summed in */
  uint64_t hook_sum_overflow; /* summed first (divided after): elements
                                 whose exact sum is beyond its range */
  uint64_t hook_saved;        /* of those, the ones the hook kept finite */
  double hook_max_abs_mean;   /* the largest |exact mean| */
  double hook_overflow_at;    /* its smallest magnitude that rounds to inf */
  /* Summed first, the largest |mean| times W reaches hook_overflow_at from
   * this W on (0 for a mean of 0). */
  double hook_overflow_workers;
} rs_run_figures_t;
RS_API void rs_run_figures(const rs_run_t *run, const rs_model_t *model,
                           rs_run_figures_t *out);

/* A report shows the result's values up to this many elements (more with
 * print_values). */
#define RS_REPORT_VALUES_UP_TO 64

/* What a report says that the run does not know. */
typedef struct rs_report_opts {
  const char *grads_source; /* where the grads came from, in words */
  const char *trace;        /* the trace's path, or NULL */
  int status;               /* how the run ended, as its caller saw it */
  int print_values;         /* the result's values whatever its size */
} rs_report_opts_t;

/* The run's whole report as JSON text (docs/cli.md lists its fields: the
 * command's --json prints it, and the Python package returns it parsed),
 * its first key "schema": "ringsim.run/1" (docs/json.md; its JSON Schema
 * docs/schema/run.json), indented; reals with 9 significant digits (17 for
 * an f64 model), non-finite values null. A string the caller frees with
 * rs_free, or NULL when out of memory. */
RS_API char *rs_run_report_json(rs_run_t *run, const rs_model_t *model,
                                const rs_report_opts_t *opts);
/* --algo auto's choices as one JSON object (the --json report's "auto"):
 * model ("measured" or "net"), latency_ns, bandwidth_Bps, reduce_Bps and
 * per bucket its elems, algo and every algorithm's predicted_ns (null: not
 * eligible); NULL when run is not auto's (or out of memory). Freed with
 * rs_free. */
RS_API char *rs_run_auto_json(const rs_run_t *run);
RS_API void rs_free(void *p);

#ifdef __cplusplus
}
#endif
#endif /* RINGSIM_RINGSIM_H */
