#pragma once
// Memory-system parameters. Declared (name, unit, range, meaning, source) in
// sim/config/schema.cpp; models only see these plain structs.
#include <string>

namespace xpusim {

// The on-chip network between SMs and L2 slices: a crossbar with per-port bandwidth and a
// traversal latency. A chip of two dies (B200) joins them by a die-to-die link: traffic between
// an SM and an L2 slice on the other die also crosses that link.
struct CrossbarParams {
  double port_bytes_per_cycle = 0;  // per-SM port bandwidth, SM clock
  double latency_cycles = 0;        // one-way traversal, SM clock
  int dies = 1;                     // SMs, L2 slices and DRAM channels split evenly across dies
  double d2d_bandwidth = 0;         // die-to-die link, B/s per direction
  double d2d_latency_s = 0;         // one-way crossing latency
};

// L2: address-interleaved slices, each set-associative with sectored lines and real tags, so
// that reuse yields the hit rate.
struct L2Params {
  double size_bytes = 0;
  int slices = 1;
  int associativity = 0;
  int line_bytes = 0;
  int sector_bytes = 0;
  double bandwidth = 0;          // aggregate hit bandwidth of all slices, B/s
  double hit_latency_cycles = 0; // slice tag lookup + data return, SM clock (network excluded)
  std::string hash = "xor";      // set-index hashing: "xor" (folded) or "modulo"
};

// HBM as stacks -> channels -> pseudo-channels -> bank groups -> banks with row buffers, timed
// by JEDEC-style parameters and scheduled FR-FCFS with an open-page policy.
struct HbmParams {
  double capacity_bytes = 0;
  int stacks = 0;
  int channels_per_stack = 0;
  int pseudo_channels = 0;       // per channel
  int bank_groups = 0;           // per pseudo-channel
  int banks_per_group = 0;
  double row_bytes = 0;          // row buffer (page) per pseudo-channel
  int bus_bits = 0;              // data pins per pseudo-channel
  double data_rate = 0;          // transfers/s per pin
  int burst_length = 0;
  double interleave_bytes = 0;   // address granule spread across pseudo-channels and L2 slices
  double tRCD = 0, tRP = 0, tRAS = 0, tCL = 0, tCCD_S = 0, tCCD_L = 0, tRRD_S = 0, tRRD_L = 0;
  double tFAW = 0, tRFC = 0, tREFI = 0, tWR = 0, tRTP = 0;  // seconds
  double controller_latency_s = 0;  // memory controller + PHY, request and return together
  std::string scheduler = "fr-fcfs";  // or "fcfs"
  std::string page_policy = "open";   // or "closed"

  int channel_count() const { return stacks * channels_per_stack * pseudo_channels; }  // pseudo-channels
  int banks() const { return bank_groups * banks_per_group; }
  double burst_bytes() const { return bus_bits / 8.0 * burst_length; }
  double burst_s() const { return burst_length / data_rate; }
  double peak_bandwidth() const { return channel_count() * bus_bits / 8.0 * data_rate; }
  // Streaming bound: the data bus of every pseudo-channel busy except while refreshing.
  double refresh_bound_bandwidth() const { return peak_bandwidth() * (1.0 - tRFC / tREFI); }
};

}  // namespace xpusim
