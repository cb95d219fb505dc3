/* net/proto.h - NCCL's protocols as a network model moves bytes with them
 * (--proto; docs/algorithms.md, "Protocols"): what each puts on the wire
 * for its data, and the latencies NCCL's own cost model charges it.
 *
 * - LL: 16-byte lines of 8 data bytes and 8 flag bytes, so the receiver
 *   sees each 8-byte word arrive whole (src/include/device.h, union
 *   ncclLLFifoLine; src/device/prims_ll.h): twice the data on the wire,
 *   the lowest latency.
 * - LL128: 128-byte lines of 120 data bytes and an 8-byte flag
 *   (device.h NCCL_LL128_LINESIZE, NCCL_LL128_DATAELEMS; prims_ll128.h):
 *   6.7% more on the wire.
 * - Simple: the data as it is; the receiver waits on a step counter
 *   (prims_simple.h), the highest latency.
 * The latencies are NCCL's tuner's constants (src/graph/tuning.cc,
 * ncclTunerConstantsDefaults, v2.30.7-1): a collective's launch
 * (baseLatencies) and each hop's, by the link's kind (hwLatencies), for
 * a ring. NVIDIA does not publish the hardware's; these are what NCCL's
 * own model charges.
 */
#ifndef RINGSIM_PROTO_H
#define RINGSIM_PROTO_H

#include <stdint.h>

#include "ringsim/ringsim.h"

/* The kinds of link tuning.cc's hwLatencies has a row for, and the
 * algorithms its tables have a row for (NCCL's Tree, Ring, NVLS,
 * NVLSTree: algo/nccl.h's rs_nccl_algo_t, in that order). */
enum { RS_HW_NVLINK, RS_HW_PCI, RS_HW_NET };
enum { RS_LAT_TREE, RS_LAT_RING, RS_LAT_NVLS, RS_LAT_NVLSTREE };

/* NCCL's latencies in us (tuning.cc ncclTunerConstantsDefaults,
 * v2.30.7-1) for algorithm row a and protocol index p (0 LL, 1 LL128,
 * 2 Simple: NCCL's NCCL_PROTO_* order): a collective's launch
 * (baseLatencies), and a hop over a link of kind hw (hwLatencies; NVLS's
 * and NVLSTree's NVLINK value is their whole switch stage). The one copy
 * of these numbers: the tuner, the prediction and the network model read
 * them here. */
double rs__nccl_base_us(int a, int p);
double rs__nccl_hw_us(int hw, int a, int p);

/* ceil(n / data) lines of `line` bytes each (UINT64_MAX where that
 * would not fit). */
static inline uint64_t rs__proto_lines(uint64_t n, uint64_t data,
                                       uint64_t line) {
  const uint64_t lines = n / data + (n % data != 0);
  return lines > UINT64_MAX / line ? UINT64_MAX : lines * line;
}

/* The bytes protocol p puts on the wire for n data bytes: LL
 * ceil(n/8) x 16 (device.h union ncclLLFifoLine: 4 + 4 + 4 + 4), LL128
 * ceil(n/120) x 128 (device.h: 16 uint64 a line, 15 of data), Simple and
 * none n (prims_simple.h). Inline: every simulated send asks it. */
static inline uint64_t rs__proto_wire_bytes(rs_protocol_t p, uint64_t n) {
  return p == RS_PROTOCOL_LL      ? rs__proto_lines(n, 8, 16)
         : p == RS_PROTOCOL_LL128 ? rs__proto_lines(n, 120, 128)
                                  : n;
}

/* NCCL's latencies of a ring all-reduce under p, in ns: its launch
 * (baseLatencies), and one hop over a link of kind hw (hwLatencies);
 * 0 for RS_PROTOCOL_NONE. */
uint64_t rs__proto_launch_ns(rs_protocol_t p);
uint64_t rs__proto_hop_ns(int hw, rs_protocol_t p);

/* The protocol's name as --proto and NCCL_PROTO spell it ("LL", "LL128",
 * "Simple"; "none"). */
const char *rs__proto_label(rs_protocol_t p);

#endif /* RINGSIM_PROTO_H */
