/* nccl_pick.c - one all-reduce as NCCL would run it: the tuner's pick,
 * ringsim's prediction, the runner-up (nccl_pick.h). */
#include <stdio.h>

#include "cli.h"
#include "nccl_pick.h"

int cli_nccl_check_force(const options_t *o, const rs_nccl_system_t *sys) {
  const int a = o->nccl.algo;
  const char *name = o->nccl.algo_text; /* (as given) */
  if ((a == RS_NCCL_NVLS || a == RS_NCCL_NVLSTREE) && !sys->nvls)
    return cli_refuse(
        o->mode,
        "--algo %s: NVLink SHARP needs GPUs on an NVLink switch that "
        "reduces (NVSwitch 3, compute capability 9.0 and later); on --topo "
        "%s the GPUs %s",
        name, o->topo_spec ? o->topo_spec : "",
        sys->nvswitch ? "meet at a switch that does not reduce"
                      : "have no NVLink switch");
  if (a == RS_NCCL_NVLS && sys->nodes > 1)
    return cli_refuse(o->mode,
                      "--algo nvls runs within one node (across nodes NCCL "
                      "needs CollNet for it): on %d nodes give --algo "
                      "nvlstree",
                      sys->nodes);
  if (a == RS_NCCL_NVLSTREE && sys->nodes == 1)
    return cli_refuse(o->mode, "--algo nvlstree is NVLS within each node "
                                "and a tree across nodes: on one node give "
                                "--algo nvls");
  return -1;
}

rs_nccl_force_t cli_nccl_force(const options_t *o) {
  rs_nccl_force_t f = {0};
  if (o->nccl.algo >= 0)
    f.algos = 1u << o->nccl.algo;
  if (o->nccl.proto >= 0)
    f.protos = 1u << o->nccl.proto;
  f.min_channels = f.max_channels = o->nccl.channels;
  return f;
}

int cli_nccl_pick(const options_t *o, const rs_nccl_system_t *sys,
                  const rs_nccl_force_t *force, int slots, uint64_t bytes,
                  cli_nccl_pick_t *p) {
  char err[RS_ERRMSG_MAX] = "";
  *p = (cli_nccl_pick_t){.bytes = bytes};
  if (rs_nccl_choose(sys, force, bytes, &p->pick, err) != RS_OK)
    return cli_refuse(o->mode, "--like nccl%s%.40s%s%s: %s",
                      o->nccl.algo >= 0 ? " --algo " : "",
                      o->nccl.algo >= 0 ? o->nccl.algo_text : "",
                      o->nccl.proto >= 0 ? " --proto " : "",
                      o->nccl.proto >= 0
                          ? rs_proto_name((rs_proto_t)o->nccl.proto)
                          : "",
                      err);
  p->ns = rs_nccl_predict_ns(sys, p->pick.algo, p->pick.proto,
                             p->pick.channels, slots, bytes);
  if (p->ns == UINT64_MAX)
    return cli_refuse(o->mode,
                      "--like nccl: NCCL picks %s/%s for %llu bytes, which "
                      "ringsim cannot run on this topology",
                      rs_nccl_algo_name(p->pick.algo),
                      rs_proto_name(p->pick.proto), (unsigned long long)bytes);
  if (p->pick.runner_time_us < 0)
    return 0;
  rs_nccl_force_t alone = *force;
  alone.algos = 1u << p->pick.runner_algo;
  alone.protos = 1u << p->pick.runner_proto;
  if (rs_nccl_choose(sys, &alone, bytes, &p->runner, err) != RS_OK)
    return 0; /* (none to show) */
  p->runner_ns = rs_nccl_predict_ns(sys, p->runner.algo, p->runner.proto,
                                    p->runner.channels, slots, bytes);
  p->has_runner = p->runner_ns != UINT64_MAX;
  return 0;
}

void cli_nccl_print_system(const char *lead, const options_t *o,
                           const rs_nccl_system_t *sys) {
  printf("%stopology   --topo %s: %d node%s x %d GPUs, %d NIC%s a node; "
         "NCCL sees compute capability %d.%d, %s, NVLink %.1f GB/s a GPU, "
         "NIC %.1f GB/s\n",
         lead, o->topo_spec ? o->topo_spec : "", sys->nodes,
         sys->nodes == 1 ? "" : "s", sys->gpus, sys->nics,
         sys->nics == 1 ? "" : "s", sys->cc / 10, sys->cc % 10,
         sys->nvls       ? "an NVLink switch that reduces (NVLS)"
         : sys->nvswitch ? "an NVLink switch (no NVLS)"
                         : "no NVLink switch",
         sys->nvlink_gbs, sys->nic_gbs);
}

json_t *cli_nccl_forced_json(const options_t *o) {
  const int a = o->nccl.algo, p = o->nccl.proto;
  return json_pack(
      "{s:o, s:o, s:o}", "algo",
      a >= 0 ? json_string(rs_nccl_algo_name((rs_nccl_algo_t)a)) : json_null(),
      "proto", p >= 0 ? json_string(rs_proto_name((rs_proto_t)p)) : json_null(),
      "channels",
      o->nccl.channels ? json_integer(o->nccl.channels) : json_null());
}
