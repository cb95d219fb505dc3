/* net/proto.c - NCCL's protocols: their wire formats and the latencies
 * NCCL's cost model charges them (net/proto.h). */
#include "net/proto.h"

/* tuning.cc ncclTunerConstantsDefaults.baseLatencies (us), by algorithm
 * (Tree, Ring, NVLS, NVLSTree) and protocol (LL, LL128, Simple). NVLS and
 * NVLSTree have none: their hwLatency is their whole latency
 * (ncclTopoTuneModel). */
static const double base_us[4][3] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}};
/* tuning.cc ncclTunerConstantsDefaults.hwLatencies (us): NVLINK, PCI,
 * NET, each by algorithm and protocol. */
static const double hw_us[3][4][3] = {
    {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 25}, {0, 0, 25}},
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 0}, {0, 0, 0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 18}, {0, 0, 20.9}}};

double rs__nccl_base_us(int a, int p) {
  return a >= 0 && a < 4 && p >= 0 && p < 3 ? base_us[a][p] : 0;
}

double rs__nccl_hw_us(int hw, int a, int p) {
  return hw >= 0 && hw < 3 && a >= 0 && a < 4 && p >= 0 && p < 3
             ? hw_us[hw][a][p]
             : 0;
}

uint64_t rs__proto_launch_ns(rs_protocol_t p) {
  if (p < RS_PROTOCOL_LL || p > RS_PROTOCOL_SIMPLE)
    return 0;
  return (uint64_t)(base_us[RS_LAT_RING][p - RS_PROTOCOL_LL] * 1000.0 + 0.5);
}

uint64_t rs__proto_hop_ns(int hw, rs_protocol_t p) {
  if (p < RS_PROTOCOL_LL || p > RS_PROTOCOL_SIMPLE || hw < RS_HW_NVLINK ||
      hw > RS_HW_NET)
    return 0;
  return (uint64_t)(hw_us[hw][RS_LAT_RING][p - RS_PROTOCOL_LL] * 1000.0 + 0.5);
}

const char *rs__proto_label(rs_protocol_t p) {
  static const char *const names[] = {"none", "LL", "LL128", "Simple"};
  return p >= RS_PROTOCOL_NONE && p <= RS_PROTOCOL_SIMPLE ? names[p] : "?";
}
