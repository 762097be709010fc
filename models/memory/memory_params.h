#pragma once
#include <string>

namespace xpusim {

// The on-chip network between SMs and L2 slices, at bandwidth-and-latency level.
struct CrossbarParams {
  double port_bytes_per_cycle = 0;  // per-SM port bandwidth, SM clock
  double latency_cycles = 0;        // one-way traversal, SM clock
};

// L2: set-associative, sectored lines with real tags so that reuse yields the hit rate.
struct L2Params {
  double size_bytes = 0;
  int associativity = 0;
  int line_bytes = 0;
  int sector_bytes = 0;
  double bandwidth = 0;          // aggregate hit bandwidth, B/s
  double hit_latency_cycles = 0; // load-to-use latency of an L2 hit seen by an SM, SM clock
  std::string hash = "xor";      // set-index hashing: "xor" (folded) or "modulo"
};

// HBM at bandwidth-and-latency level (the DRAM timing model refines it).
struct HbmParams {
  double capacity_bytes = 0;
  double bandwidth = 0;           // peak, B/s
  double achievable_fraction = 0; // sustained share of peak for streaming access
  double latency_s = 0;           // latency added to an L2 miss
};

}  // namespace xpusim
