/* optable.c - the ringsim command's options, each once: its names, the
 * modes that take it, how its value is read and where it is stored (a
 * setter of optset.c, and a field), and its line in each mode's usage
 * text (option.h says what a row holds).
 */
#include <stddef.h>

#include "option.h"

#define FIELD(name) offsetof(options_t, name)

#define RUN CLI_IN(CLI_RUN)
#define BENCH CLI_IN(CLI_BENCH)
#define MODEL CLI_IN(CLI_MODEL)
#define DIFF CLI_IN(CLI_DIFF)
#define STEP CLI_IN(CLI_STEP)
#define ALL (RUN | BENCH | MODEL | DIFF | STEP)
/* A help line of a mode, with the option's own metavar. */
#define H(text)                                                                \
  { NULL, text }
/* diff's line for an option that never changes a sum */
#define SAME_SUMS H("never changes a sum: the sides agree")
#define SAME_GRADS "the two sides would not get the same gradients"

const cli_option_t cli_options[OPT_COUNT] = {
    [OPT_PARAMS] =
        {"params",
         'p',
         RUN | MODEL | DIFF | STEP,
         CLI_DIFF_SAME,
         "FILE",
         cli_set_text,
         FIELD(params),
         0,
         0,
         "both sides all-reduce one model's gradients",
         {[CLI_RUN] = H("model.json: params, and optionally inline grads"),
          [CLI_MODEL] = H("model.json: the params' names, shapes, dtype"),
          [CLI_STEP] = H("model.json: params, and optionally each one's\n"
                         "forward_us and backward_us (docs/step.md)")}},
    [OPT_WORKERS] =
        {"workers",
         'w',
         ALL,
         CLI_DIFF_TWO,
         "N",
         cli_set_workers,
         0,
         0,
         0,
         NULL,
         {[CLI_RUN] = H("number of workers W, 1.." CLI_MAX_WORKERS_TEXT
                        " (default: the\nnumber of inline grads, else 4)"),
          [CLI_BENCH] = {"LIST", "W, or a list to sweep: 4 or 4,8,16 "
                                 "(default 4;\nnot nccl-tests' -w, which "
                                 "is --warmup here)"},
          [CLI_MODEL] = {"LIST",
                         "number of workers W, 1.." CLI_MODEL_MAX_WORKERS_TEXT
                         ", or a list\n(4,8,16: a row each; default 4, "
                         "or --topo's nodes x gpus)"},
          [CLI_DIFF] = H("two world sizes, one dividing the other, on one\n"
                         "global batch: L = max(A,B) contributions c0..\n"
                         "c{L-1} (the grads of L workers); each worker of\n"
                         "the smaller world S first folds its L/S\n"
                         "contiguous ones locally (op avg: their mean),\n"
                         "then the S workers all-reduce"),
          [CLI_STEP] = H("number of workers W, 1.." CLI_MODEL_MAX_WORKERS_TEXT
                         " (threads up to 16:\ndocs/step.md)")}},
    [OPT_MINBYTES] = {"minbytes",
                      'b',
                      BENCH | MODEL,
                      0,
                      "N",
                      cli_set_size,
                      FIELD(bench.min_bytes),
                      4,
                      1L << 40,
                      NULL,
                      {[CLI_BENCH] = H("smallest size per worker (default "
                                       "8)"),
                       [CLI_MODEL] = H("--like nccl without --params: "
                                       "nccl-tests' sweep,\nits smallest "
                                       "buffer (default 8)")}},
    [OPT_MAXBYTES] = {"maxbytes",
                      'e',
                      BENCH | MODEL,
                      0,
                      "N",
                      cli_set_size,
                      FIELD(bench.max_bytes),
                      4,
                      1L << 40,
                      NULL,
                      {[CLI_BENCH] = H("largest size per worker (default "
                                       "64M)"),
                       [CLI_MODEL] = H("--like nccl: the sweep's largest "
                                       "buffer (default\n64M)")}},
    [OPT_STEPFACTOR] = {"stepfactor",
                        'f',
                        BENCH | MODEL,
                        0,
                        "F",
                        cli_set_int,
                        FIELD(bench.factor),
                        1,
                        1024,
                        NULL,
                        {[CLI_BENCH] = H("multiply the size by F each step "
                                         "(default 2; 1: add\n--stepbytes' "
                                         "bytes instead, 1M unless given)"),
                         [CLI_MODEL] = H("--like nccl: multiply the size by "
                                         "F each step\n(default 2; 1: add "
                                         "--stepbytes' bytes, 1M unless "
                                         "given)")}},
    [OPT_STEPBYTES] = {"stepbytes",
                       'i',
                       BENCH | MODEL,
                       0,
                       "N",
                       cli_set_size,
                       FIELD(bench.step_bytes),
                       0,
                       1L << 40,
                       NULL,
                       {[CLI_BENCH] = H("or add N bytes each step instead"),
                        [CLI_MODEL] = H("--like nccl: or add N bytes each "
                                        "step instead")}},
    [OPT_ITERS] = {"iters",
                   'n',
                   BENCH,
                   0,
                   "N",
                   cli_set_int,
                   FIELD(bench.iters),
                   1,
                   1000000,
                   NULL,
                   {[CLI_BENCH] = H("timed iterations per size (default 20, "
                                    "fewer\nwhere they would take more than "
                                    "2 s)")}},
    [OPT_WARMUP] = {"warmup",
                    0,
                    BENCH,
                    0,
                    "N",
                    cli_set_int,
                    FIELD(bench.warmup),
                    0,
                    1000000,
                    NULL,
                    {[CLI_BENCH] = H("warm-up iterations per size (default "
                                     "5, fewer\nwhere they would take more "
                                     "than 1 s): nccl-tests'\n-w, "
                                     "--warmup_iters")}},
    [OPT_DATATYPE] = {"datatype",
                      'd',
                      BENCH | MODEL,
                      0,
                      "TYPE",
                      cli_set_datatype,
                      0,
                      0,
                      0,
                      NULL,
                      {[CLI_BENCH] = H("float (default), double, half or "
                                       "bfloat16\n(nccl-tests' names for "
                                       "f32, f64, f16, bf16)"),
                       [CLI_MODEL] = H("--like nccl: the sweep's type, "
                                       "float (default),\ndouble, half or "
                                       "bfloat16 (its count column)")}},
    [OPT_NGPUS] = {"ngpus",
                   'g',
                   BENCH,
                   0,
                   "N",
                   cli_set_int,
                   FIELD(bench.workers[0]),
                   1,
                   RS_MAX_WORKERS,
                   NULL,
                   {[CLI_BENCH] = H("nccl-tests' -g: W, one process driving N "
                                    "workers\n(as -w N; not with -w)")}},
    [OPT_NTHREADS] = {"nthreads",
                      't',
                      BENCH,
                      0,
                      "N",
                      cli_set_int,
                      FIELD(bench.nthreads),
                      1,
                      1000000,
                      NULL,
                      {[CLI_BENCH] = H("nccl-tests' -t: 1 only (one process "
                                       "drives every\nworker; give the total "
                                       "as -g)")}},
    [OPT_CHECK] = {"check",
                   'c',
                   BENCH,
                   0,
                   "0|1",
                   cli_set_int,
                   FIELD(bench.check),
                   0,
                   1,
                   NULL,
                   {[CLI_BENCH] = H("nccl-tests' -c: 1 (default) reports "
                                    "#wrong; 0\nprints N/A and the exit "
                                    "status ignores it")}},
    [OPT_RANK_AVERAGE] = {"average",
                          'a',
                          BENCH,
                          0,
                          "0..3",
                          cli_set_int,
                          FIELD(bench.rank_average),
                          0,
                          3,
                          NULL,
                          {[CLI_BENCH] = H("nccl-tests' -a: rank 0, avg, min "
                                           "or max over\nprocesses; one here, "
                                           "so all four are one time:\nthe "
                                           "slowest worker's (over MPI: rank "
                                           "0's, -a 0)")}},
    [OPT_OUTPUT_FILE] = {"output_file",
                         'J',
                         BENCH,
                         0,
                         "FILE.json",
                         cli_set_text,
                         FIELD(bench.output_file),
                         0,
                         0,
                         NULL,
                         {[CLI_BENCH] = H("nccl-tests' -J: its JSON, its "
                                          "keys, written\nwhole at the end "
                                          "(replaces FILE; one W)")}},
    [OPT_DTYPE] = {"dtype",
                   0,
                   DIFF,
                   CLI_DIFF_TWO,
                   "DTYPE",
                   cli_set_dtype,
                   0,
                   0,
                   0,
                   NULL,
                   {[CLI_DIFF] = H("f32, f16, bf16 or f64: the model's "
                                   "params as that\ndtype, the same "
                                   "gradients rounded to it\n(generated or "
                                   "inline grads)")}},
    [OPT_INIT] = {"init",
                  0,
                  RUN | DIFF | STEP,
                  CLI_DIFF_SAME,
                  "KIND",
                  cli_set_init,
                  0,
                  0,
                  0,
                  SAME_GRADS,
                  {[CLI_RUN] = H("generated grads: normal (default), "
                                 "uniform, or\nexact (sums exactly "
                                 "representable: the result\nmust equal the "
                                 "reference bit for bit)"),
                   [CLI_STEP] =
                       H("the threads' generated grads (as a run's)")}},
    [OPT_SEED] = {"seed",
                  0,
                  RUN | DIFF | STEP,
                  CLI_DIFF_SAME,
                  "N",
                  cli_set_seed,
                  0,
                  0,
                  9223372036854775807L,
                  SAME_GRADS,
                  {[CLI_RUN] = H("seed of the generated grads (default 0)"),
                   [CLI_STEP] = H("seed of the threads' grads (default 0)")}},
    [OPT_GRADS] = {"grads",
                   0,
                   RUN | DIFF,
                   CLI_DIFF_SAME,
                   "PATTERN",
                   cli_set_text,
                   FIELD(grads),
                   0,
                   0,
                   SAME_GRADS,
                   {[CLI_RUN] = H("read worker r's grads from a safetensors "
                                  "file,\n{r} replaced by r: "
                                  "grads/worker{r}.safetensors")}},
    [OPT_OUT] = {"out",
                 0,
                 RUN,
                 0,
                 "FILE",
                 cli_set_text,
                 FIELD(out),
                 0,
                 0,
                 NULL,
                 {[CLI_RUN] = H("write the averaged grads as safetensors")}},
    [OPT_OP] = {"op",
                'o',
                RUN | BENCH | MODEL | DIFF,
                CLI_DIFF_SAME,
                "OP",
                cli_set_config,
                0,
                0,
                0,
                "the two sides would compute two different reductions, not "
                "one in two orders",
                {[CLI_RUN] = H("sum, avg (SUM / W, the default), min, max, "
                               "prod"),
                 [CLI_BENCH] = H("sum (default, as nccl-tests), avg, min, "
                                 "max,\nprod (-o: bench's alone)"),
                 [CLI_MODEL] = H("--like nccl: the redop column, sum "
                                 "(default), avg,\nmin, max, prod (one "
                                 "time for all: NCCL's tuner\ndoes not ask)")},
                BENCH | MODEL},
    [OPT_ORDER_REPORT] =
        {"order-report",
         0,
         RUN,
         0,
         NULL,
         cli_set_flag,
         FIELD(config.order_report),
         0,
         0,
         NULL,
         {[CLI_RUN] = H("count how the ring's summation order changes\nthe "
                        "result against worker 0, 1, ... order")}},
    [OPT_AVERAGE] = {"average",
                     0,
                     RUN | DIFF,
                     CLI_DIFF_TWO,
                     "pre|post|pre-mul",
                     cli_set_config,
                     0,
                     0,
                     0,
                     NULL,
                     {[CLI_RUN] = H("avg: divide by W before the sum "
                                    "(DDP's\nhooks), after it (the "
                                    "default), or multiply\nby 1/W rounded "
                                    "before it (PyTorch 1.13's DDP\n"
                                    "reducer)"),
                      [CLI_DIFF] = H("post,pre (with --op avg, the "
                                     "default)")}},
    [OPT_LIKE] = {"like",
                  0,
                  RUN | MODEL | DIFF | STEP,
                  0,
                  "ddp-gloo",
                  cli_set_like,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("PyTorch 1.13 DDP on gloo, bit for bit: "
                                 "--algo\ngloo-ring --op avg --average "
                                 "pre-mul, and\nDDP's bucket order (the "
                                 "params reversed)"),
                   [CLI_MODEL] = {"nccl",
                                  "NCCL on a --topo: per buffer (or per "
                                  "bucket of --params) the algorithm, "
                                  "protocol and channels NCCL's tuner "
                                  "picks, timed by ringsim; without "
                                  "--params nccl-tests' all_reduce_perf "
                                  "table (-b, -e, -f, -i, -d, -o)"},
                   [CLI_STEP] = {"nccl",
                                 "NCCL on a --topo: each bucket's all-reduce "
                                 "the algorithm, protocol and channels "
                                 "NCCL's tuner picks, timed by ringsim, one "
                                 "after another (the schedule alone: "
                                 "docs/step.md)"}}},
    [OPT_HOOK] = {"hook",
                  0,
                  RUN | DIFF | STEP,
                  CLI_DIFF_TWO,
                  "NAME",
                  cli_set_hook,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("a DDP communication hook, as PyTorch 1.13's:"
                                 "\nallreduce (divide by W, then sum), fp16 "
                                 "or\nbf16 (the same in float16 or bfloat16: "
                                 "half\nthe bytes), none, or PowerSGD's "
                                 "steps:\npowersgd:rank=R[,start=S,"
                                 "feedback=on|off,\nwarm=on|off][,q=FILE] "
                                 "(docs/hooks.md)"),
                   [CLI_DIFF] = H("allreduce,fp16 (none: without a hook)"),
                   [CLI_STEP] = H("a DDP communication hook: fp16 and bf16 "
                                  "move\nhalf the bytes; powersgd:rank=R "
                                  "three all-reduces\na bucket (its matmuls "
                                  "not charged)")}},
    [OPT_SEGMENT_BYTES] =
        {"segment-bytes",
         0,
         ALL,
         CLI_DIFF_TWO,
         "N",
         cli_set_size,
         FIELD(config.segment_bytes),
         RS_MIN_SEGMENT_BYTES,
         (long)RS_MAX_SEGMENT_BYTES,
         NULL,
         {[CLI_RUN] = H("largest message through a queue (default\n256K; "
                        "suffixes K, M, G are powers of 1024)"),
          [CLI_BENCH] = H("largest message (default 256K)"),
          [CLI_MODEL] = H("largest message (default 256K)"),
          [CLI_DIFF] = SAME_SUMS,
          [CLI_STEP] = H("largest message (default 256K)")}},
    [OPT_SLOTS] = {"slots",
                   0,
                   RUN | BENCH | DIFF | MODEL | STEP,
                   CLI_DIFF_TWO,
                   "K",
                   cli_set_config,
                   0,
                   0,
                   0,
                   NULL,
                   {[CLI_RUN] = H("slots per queue (default 8), and the "
                                  "network model's:\na segment waits for "
                                  "the one K before it to arrive"),
                    [CLI_BENCH] = H("slots per queue (default 8)"),
                    [CLI_MODEL] = H("segments in flight on a connection "
                                    "(NCCL_STEPS; default 8):\na segment "
                                    "waits for the one K before it to "
                                    "arrive"),
                    [CLI_STEP] = H("segments in flight on a connection "
                                   "(NCCL_STEPS; default 8)"),
                    [CLI_DIFF] = SAME_SUMS}},
    [OPT_TIMEOUT] = {"timeout",
                     'T',
                     RUN | BENCH | DIFF,
                     0,
                     "SEC",
                     cli_set_config,
                     0,
                     0,
                     0,
                     NULL,
                     {[CLI_RUN] = H("longest a worker waits for a "
                                    "neighbour\n(default 10)"),
                      [CLI_BENCH] = H("per wait (default 60; -T: bench's "
                                      "alone)")},
                     BENCH},
    [OPT_TRACE] = {"trace",
                   0,
                   RUN | BENCH | STEP,
                   0,
                   "FILE",
                   cli_set_text,
                   FIELD(trace),
                   0,
                   0,
                   NULL,
                   {[CLI_RUN] = H("append the run to this SQLite trace "
                                  "(default\nringsim-trace.db in the working "
                                  "directory)"),
                    [CLI_BENCH] = H("trace every run into FILE (off by "
                                    "default)"),
                    [CLI_STEP] = H("append the threads' runs to this trace, "
                                   "with\nthe step's intervals (off by "
                                   "default)")}},
    [OPT_NO_TRACE] = {"no-trace",
                      0,
                      ALL,
                      0,
                      NULL,
                      cli_set_flag,
                      FIELD(no_trace),
                      0,
                      0,
                      NULL,
                      {[CLI_RUN] = H("do not write a trace"),
                       [CLI_BENCH] = H("write no trace (the default)"),
                       [CLI_MODEL] = H("taken, and changes nothing: the "
                                       "schedule alone\nwrites no trace"),
                       [CLI_DIFF] = H("taken, and changes nothing: diff "
                                      "writes no\ntrace"),
                       [CLI_STEP] = H("write no trace (the default)")}},
    [OPT_INJECT] = {"inject",
                    0,
                    RUN,
                    CLI_REPEAT,
                    "SPEC",
                    cli_set_config,
                    0,
                    0,
                    0,
                    NULL,
                    {[CLI_RUN] = H("inject a fault (repeatable): crash, "
                                   "stall,\ncorrupt, drop or dup, e.g. "
                                   "crash:worker=2,step=3\n"
                                   "stall:worker=1,step=2,ms=500 "
                                   "corrupt:worker=0\n(step: 0..W-2 "
                                   "reduce-scatter, then all-gather)")}},
    [OPT_CHECKSUM] = {"checksum",
                      0,
                      RUN | DIFF,
                      0,
                      NULL,
                      cli_set_flag,
                      FIELD(config.checksum),
                      0,
                      0,
                      NULL,
                      {[CLI_RUN] = H("checksum every segment (on with "
                                     "--inject)")}},
    [OPT_NET] = {"net",
                 0,
                 RUN | MODEL | DIFF | STEP,
                 0,
                 "SPEC",
                 cli_set_config,
                 0,
                 0,
                 0,
                 NULL,
                 {[CLI_RUN] = H("simulate the network: "
                                "latency=5us,bandwidth=25GB/s\n(ns/us/ms/s; "
                                "B/s, KB/s, MB/s, GB/s, GiB/s, Gbps)"),
                  [CLI_MODEL] = H("the network (this or --topo): "
                                  "latency=5us,bandwidth=25GB/s\n"
                                  "(ns/us/ms/s; B/s, KB/s, MB/s, GB/s, "
                                  "GiB/s, Gbps)"),
                  [CLI_STEP] = H("the network (this or --topo): "
                                 "latency=5us,bandwidth=25GB/s")}},
    [OPT_TOPO] = {"topo",
                  0,
                  RUN | MODEL | DIFF | STEP,
                  0,
                  "SPEC",
                  cli_set_topo,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] =
                       H("nodes of GPUs, their links and NICs, "
                         "instead of --net: dgx-h100,nodes=64 or "
                         "nodes=2,gpus=4,nics=1,intra=1us/100GB/s,"
                         "nic=5us/25GB/s (presets dgx-h100, dgx-a100, pcie; "
                         "W must be nodes x gpus)"),
                   [CLI_MODEL] =
                       H("nodes of GPUs, their links and NICs, "
                         "instead of --net: dgx-h100,nodes=64 "
                         "(nodes=1,8,64: a row each) or "
                         "nodes=2,gpus=4,nics=1,intra=1us/100GB/s,"
                         "nic=5us/25GB/s (presets dgx-h100, dgx-a100, pcie; "
                         "W must be nodes x gpus)"),
                   [CLI_STEP] = H("nodes of GPUs, their links and NICs, "
                                  "instead of --net: dgx-h100,nodes=8")}},
    [OPT_REDUCE_RATE] = {"reduce-rate",
                         0,
                         RUN | MODEL | DIFF | STEP,
                         0,
                         "RATE",
                         cli_set_config,
                         0,
                         0,
                         0,
                         NULL,
                         {[CLI_RUN] =
                              H("charge reductions, e.g. 20GB/s (needs --net "
                                "or --topo)"),
                          [CLI_MODEL] = H("charge reductions, e.g. 20GB/s"),
                          [CLI_STEP] = H("charge reductions, e.g. 20GB/s")}},
    [OPT_LINK] = {"link",
                  0,
                  RUN | MODEL | DIFF,
                  CLI_REPEAT,
                  "SPEC",
                  cli_set_config,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("one slower link (repeatable): "
                                 "2-3:bandwidth=1GB/s"),
                   [CLI_MODEL] = H("one slower link (repeatable): "
                                   "2-3:bandwidth=1GB/s")}},
    [OPT_STRAGGLER] = {"straggler",
                       0,
                       RUN | MODEL | DIFF | STEP,
                       CLI_REPEAT,
                       "SPEC",
                       cli_set_straggler,
                       0,
                       0,
                       0,
                       NULL,
                       {[CLI_RUN] = H("a slow worker (repeatable): "
                                      "worker=1,us=200"),
                        [CLI_MODEL] = H("a slow worker (repeatable): "
                                        "worker=1,us=200"),
                        [CLI_STEP] =
                            H("worker=1,compute=1.3: worker 1 computes 1.3 "
                              "times as long (once); or worker=1,us=200, as "
                              "a run's")}},
    [OPT_EXPLAIN] = {"explain",
                     0,
                     RUN,
                     0,
                     NULL,
                     cli_set_flag,
                     FIELD(explain),
                     0,
                     0,
                     NULL,
                     {[CLI_RUN] = H("narrate the all-reduce step by step "
                                    "(W <= 8)")}},
    [OPT_BUCKET_MB] =
        {"bucket-mb",
         0,
         RUN | MODEL | DIFF | STEP,
         CLI_DIFF_TWO,
         "MB",
         cli_set_bucket_mb,
         0,
         0,
         0,
         NULL,
         {[CLI_RUN] = H("DDP gradient buckets of MB MiB "
                        "(default 25, the\nfirst 1 MiB; 0: "
                        "one bucket for the whole model)"),
          [CLI_MODEL] = H("DDP gradient buckets of MB MiB "
                          "(default 25; 0:\none bucket)"),
          [CLI_DIFF] = H("DDP bucket caps in MiB"),
          [CLI_STEP] = {"MB", "DDP's bucket_cap_mb (default 25; 0: one "
                              "bucket), a list (1,5,25: a row each), or "
                              "sweep: 1, 2, 5, 10, 25, 50, 100 and 250, "
                              "the best marked"}}},
    [OPT_DIRECT] = {"direct",
                    0,
                    RUN | BENCH | DIFF,
                    0,
                    NULL,
                    cli_set_flag,
                    FIELD(config.direct),
                    0,
                    0,
                    NULL,
                    {[CLI_RUN] = H("copy-free queues: receivers reduce "
                                   "straight\nfrom the sender's buffer "
                                   "(NCCL's direct mode)"),
                     [CLI_BENCH] = H("copy-free queues (NCCL's direct "
                                     "mode)")}},
    [OPT_ALGO] =
        {"algo",
         0,
         ALL,
         CLI_DIFF_TWO,
         "NAME",
         cli_set_algo,
         0,
         0,
         0,
         NULL,
         {[CLI_RUN] = H("the all-reduce algorithm: {algos} (docs/"
                        "algorithms.md), or auto: per bucket the one the "
                        "alpha-beta model predicts fastest on this machine "
                        "(measured), or on --net's network"),
          [CLI_BENCH] = H("{algos}; all: each in turn, the fastest marked; "
                          "auto: per size the one the alpha-beta model "
                          "predicts fastest on this machine (measured once "
                          "per W), named in the row"),
          [CLI_MODEL] = H("{algos}, or all: every algorithm, the fastest "
                          "marked, and the crossovers: the sizes where the "
                          "best one by the predictions (--algo auto's pick) "
                          "changes; with --like nccl one of NCCL's (as "
                          "NCCL_ALGO): ring, tree, nvls, nvlstree"),
          [CLI_DIFF] = H("e.g. ring,rd (any name --algo accepts)"),
          [CLI_STEP] = H("{algos}, or all: a row each; with --like nccl "
                         "one of NCCL's (as NCCL_ALGO): ring, tree, nvls, "
                         "nvlstree")}},
    [OPT_PROTO] = {"proto",
                   0,
                   RUN | MODEL | STEP,
                   0,
                   "NAME",
                   cli_set_proto,
                   0,
                   0,
                   0,
                   NULL,
                   {[CLI_RUN] = H("NCCL's protocol the network model "
                                  "moves bytes with: LL,\nLL128 or Simple "
                                  "(its wire bytes and latencies;\ndefault: "
                                  "none, the bytes as they are)"),
                    [CLI_MODEL] = H("NCCL's protocol the network model "
                                    "moves bytes with: LL,\nLL128 or Simple; "
                                    "with --like nccl it forces NCCL's\n"
                                    "(NCCL_PROTO), or auto (default: the "
                                    "tuner's)"),
                    [CLI_STEP] = H("NCCL's protocol the network model "
                                   "moves bytes with: LL,\nLL128 or Simple; "
                                   "with --like nccl it forces NCCL's\n"
                                   "(NCCL_PROTO), or auto (default: the "
                                   "tuner's)")}},
    /* (MAXCHANNELS, src/include/device.h: 64 since NCCL 2.25) */
    [OPT_CHANNELS] = {"channels",
                      0,
                      RUN | MODEL | STEP,
                      0,
                      "C",
                      cli_set_int,
                      FIELD(nccl.channels),
                      1,
                      RS_MAX_CHANNELS,
                      NULL,
                      {[CLI_RUN] = H("the ring or the tree on C of NCCL's "
                                     "channels (1..64,\nMAXCHANNELS; "
                                     "default: NCCL's count on a --topo\n"
                                     "NCCL knows, else 1): each bucket "
                                     "cut between them\nas NCCL cuts it, "
                                     "each channel a ring (a tree) on\n"
                                     "its part, along its own order"),
                       [CLI_MODEL] =
                           H("the ring and the tree on C of NCCL's\n"
                             "channels (1..64, MAXCHANNELS; default:\n"
                             "NCCL's count on a --topo NCCL knows, else\n"
                             "1); with --like nccl, C channels, as\n"
                             "NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = C"),
                       [CLI_STEP] =
                           H("the ring and the tree on C of NCCL's\n"
                             "channels (1..64, MAXCHANNELS; default:\n"
                             "NCCL's count on a --topo NCCL knows, else\n"
                             "1); with --like nccl, C channels, as\n"
                             "NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS = C")}},
    [OPT_LOOP] = {"loop",
                  0,
                  RUN | BENCH | DIFF,
                  CLI_DIFF_TWO,
                  "ORDER",
                  cli_set_config,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("steps (default): each step moves whole "
                                 "chunks;\nslices: NCCL's loop, all steps "
                                 "on one slice of\nthe buffer at a time "
                                 "(same sums, cache-warm)"),
                   [CLI_BENCH] = H("slices (default: NCCL's loop, all "
                                   "steps on one\nslice at a time) or "
                                   "steps (as ringsim runs\nby default: "
                                   "each step moves whole chunks)"),
                   [CLI_DIFF] = SAME_SUMS}},
    [OPT_PRINT] = {"print",
                   0,
                   RUN,
                   0,
                   NULL,
                   cli_set_flag,
                   FIELD(print_values),
                   0,
                   0,
                   NULL,
                   {[CLI_RUN] = H("print the averaged values of every "
                                  "param")}},
    [OPT_JSON] = {"json",
                  0,
                  ALL,
                  0,
                  NULL,
                  cli_set_flag,
                  FIELD(json),
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("print the report as one JSON object"),
                   [CLI_BENCH] = H("one JSON object per size (JSON Lines)"),
                   [CLI_MODEL] = H("print the result as one JSON object"),
                   [CLI_DIFF] = H("print the comparison as one JSON "
                                  "object"),
                   [CLI_STEP] = H("print the result as one JSON object")}},
    [OPT_FAIL_ON_DIFF] = {"fail-on-diff",
                          0,
                          DIFF,
                          0,
                          NULL,
                          cli_set_flag,
                          FIELD(fail_on_diff),
                          0,
                          0,
                          NULL,
                          {[CLI_DIFF] = H("exit 1 when some element differs "
                                          "(as cmp does)")}},
    [OPT_TRANSPORT] = {"transport",
                       0,
                       RUN | BENCH,
                       0,
                       "KIND",
                       cli_set_transport,
                       0,
                       0,
                       0,
                       NULL,
                       {[CLI_RUN] = H("shm (default): one process; mpi: "
                                      "under mpirun,\nthe workers spread "
                                      "over the MPI processes in\nblocks, "
                                      "one trace by rank 0 (docs/mpi.md)"),
                        [CLI_BENCH] = H("shm (default) or mpi: under "
                                        "mpirun, the\nworkers spread over "
                                        "the processes, and per\nsize "
                                        "MPI_Allreduce's time over the "
                                        "processes\non the same buffers "
                                        "(column mpi; docs/mpi.md)")}},
    /* --help and --version are answered by parse.c, which prints them */
    [OPT_COMPUTE] = {"compute",
                     0,
                     STEP,
                     0,
                     "SPEC",
                     cli_set_compute,
                     0,
                     0,
                     0,
                     NULL,
                     {[CLI_STEP] =
                          H("flops=312T,rows=4096: each param's compute "
                            "from a rate (G, T, P FLOP/s) and the "
                            "batch's rows, instead of model.json's "
                            "times (docs/step.md)")}},
    [OPT_ITERATIONS] = {"iterations",
                        0,
                        RUN | STEP,
                        0,
                        "K",
                        cli_set_int,
                        FIELD(step.iterations),
                        1,
                        1000000,
                        NULL,
                        {[CLI_RUN] = H("--hook powersgd's steps (default "
                                       "1), its state\ncarried from one to "
                                       "the next; --grads's {s}\nis the step "
                                       "(docs/hooks.md)"),
                         [CLI_STEP] = H("training steps (default 2): the "
                                        "first on one bucket,\nas DDP's first "
                                        "backward, the rest on its\nrebuilt "
                                        "buckets")}},
    [OPT_NO_THREADS] = {"no-threads",
                        0,
                        STEP,
                        0,
                        NULL,
                        cli_set_flag,
                        FIELD(step.no_threads),
                        0,
                        0,
                        NULL,
                        {[CLI_STEP] = H("the schedule alone, as ringsim model "
                                        "(the same\nclocks): no threads, no "
                                        "data, no check")}},
    [OPT_QUIET] = {"quiet",
                   0,
                   ALL,
                   0,
                   NULL,
                   cli_set_flag,
                   FIELD(quiet),
                   0,
                   0,
                   NULL,
                   {[CLI_RUN] = H("no progress line on stderr (drawn only "
                                  "on a\nterminal, for work over a second)"),
                    [CLI_BENCH] = H("no progress line on stderr"),
                    [CLI_MODEL] = H("no progress line on stderr"),
                    [CLI_DIFF] = H("no progress line on stderr"),
                    [CLI_STEP] = H("no progress line on stderr")}},
    [OPT_HELP] = {"help",
                  'h',
                  ALL,
                  0,
                  NULL,
                  NULL,
                  0,
                  0,
                  0,
                  NULL,
                  {[CLI_RUN] = H("this help"),
                   [CLI_BENCH] = H("this help"),
                   [CLI_MODEL] = H("this help"),
                   [CLI_DIFF] = H("this help"),
                   [CLI_STEP] = H("this help")}},
    [OPT_VERSION] = {"version",
                     'V',
                     ALL,
                     0,
                     NULL,
                     NULL,
                     0,
                     0,
                     0,
                     NULL,
                     {[CLI_RUN] = H("the version"),
                      [CLI_BENCH] = H("the version"),
                      [CLI_MODEL] = H("the version"),
                      [CLI_DIFF] = H("the version")}},
};

/* nccl-tests' flags that mean nothing here, each refused with why (-w,
 * -V and -h are ringsim's own: --workers, --version, --help). */
#define NCCL(letter, name, why) {CLI_BENCH, letter, name, why}
const cli_foreign_t cli_foreign[] = {
    NCCL('m', "agg_iters",
         "aggregates operations in one NCCL group: ringsim runs one "
         "all-reduce per iteration; drop it"),
    NCCL('N', "run_cycles", "repeats the sweep: run the command again"),
    NCCL('p', "parallel_init",
         "initializes NCCL communicators in parallel: there are none here; "
         "drop it"),
    NCCL('r', "root", "names a root: an all-reduce has none; drop it"),
    NCCL('z', "blocking",
         "sets CUDA stream blocking: every iteration here ends when its "
         "workers are done; drop it"),
    NCCL('y', "stream_null", "picks a CUDA stream: there are none; drop it"),
    NCCL('G', "cudagraph", "launches CUDA graphs: there are none; drop it"),
    NCCL('C', "report_cputime",
         "reports CPU time: the time column already is the host's clock; "
         "drop it"),
    NCCL('S', "report_timestamps",
         "adds a timestamp column: not here; drop it"),
    NCCL('R', "local_register",
         "registers NCCL buffers: there are none; drop it"),
    NCCL('x', "cta_policy", "sets NCCL's CTA policy: no GPU here; drop it"),
    NCCL('D', "device_implementation",
         "picks NCCL's device API: no GPU here; drop it"),
    NCCL('M', "memory", "reports GPU memory: no GPU here; drop it"),
    NCCL('u', "unalign",
         "misaligns CUDA buffers: the library allocates the workers' "
         "buffers; drop it"),
    NCCL('I', "per_iter_timing",
         "times each iteration with CUDA events: --json gives min_time_us "
         "beside the mean"),
    NCCL('K', "per_iter_skip",
         "skips -I's first samples: no -I here; drop it"),
    NCCL('w', "warmup_iters",
         "is --warmup here (ringsim's -w is --workers)"),
    NCCL('V', "device_cta_count",
         "sets CTAs for NCCL's device API: no GPU here (ringsim's -V is "
         "--version)"),
    {CLI_BENCH, 0, NULL, NULL},
};
