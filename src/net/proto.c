/* net/proto.c - NCCL's protocols: their wire formats and the latencies
 * NCCL's cost model charges them (net/proto.h). */
#include "net/proto.h"

/* ceil(n / data) lines of `line` bytes each. */
static uint64_t lines_bytes(uint64_t n, uint64_t data, uint64_t line) {
  const uint64_t lines = n / data + (n % data != 0);
  return lines > UINT64_MAX / line ? UINT64_MAX : lines * line;
}

uint64_t rs__proto_wire_bytes(rs_protocol_t p, uint64_t n) {
  switch (p) {
  case RS_PROTOCOL_LL: /* device.h union ncclLLFifoLine: 4 + 4 + 4 + 4 */
    return lines_bytes(n, 8, 16);
  case RS_PROTOCOL_LL128: /* device.h: 16 uint64 a line, 15 of data */
    return lines_bytes(n, 120, 128);
  default: /* Simple (prims_simple.h) and none: the data as it is */
    return n;
  }
}

/* tuning.cc ncclTunerConstantsDefaults.baseLatencies[NCCL_ALGO_RING]
 * (us), by protocol LL, LL128, Simple. */
static const double ring_base_us[3] = {6.6, 14.0, 8.4};
/* tuning.cc ncclTunerConstantsDefaults.hwLatencies[hw][NCCL_ALGO_RING]
 * (us): NVLINK, PCI, NET by protocol. */
static const double ring_hop_us[3][3] = {
    {0.6, 1.9, 3.4}, {1.0, 2.5, 5.7}, {2.7, 4.0, 14.0}};

uint64_t rs__proto_launch_ns(rs_protocol_t p) {
  if (p < RS_PROTOCOL_LL || p > RS_PROTOCOL_SIMPLE)
    return 0;
  return (uint64_t)(ring_base_us[p - RS_PROTOCOL_LL] * 1000.0 + 0.5);
}

uint64_t rs__proto_hop_ns(int hw, rs_protocol_t p) {
  if (p < RS_PROTOCOL_LL || p > RS_PROTOCOL_SIMPLE || hw < RS_HW_NVLINK ||
      hw > RS_HW_NET)
    return 0;
  return (uint64_t)(ring_hop_us[hw][p - RS_PROTOCOL_LL] * 1000.0 + 0.5);
}

const char *rs__proto_label(rs_protocol_t p) {
  static const char *const names[] = {"none", "LL", "LL128", "Simple"};
  return p >= RS_PROTOCOL_NONE && p <= RS_PROTOCOL_SIMPLE ? names[p] : "?";
}
