#pragma once
// What one op (kernel) did, counted by the models that served it, for the per-op report.
// Actions, never joules: the energy model prices them later.
#include <array>

#include "models/common/dtype.h"

namespace xpusim {

struct OpCounters {
  // SM side
  double tensor_busy_s = 0;     // summed over SMs
  double simt_busy_s = 0;       // summed over SMs
  double cta_resident_s = 0;    // summed over CTAs
  std::array<double, kNumDtypes> tensor_macs{};  // executed, tile padding included
  double fp32_ops = 0;          // lane operations
  double sfu_ops = 0;
  double instr_mma = 0;         // warp-level instructions by class
  double instr_simt = 0;
  double instr_mem = 0;
  // memory side
  double noc_bytes = 0;
  double l2_read_bytes = 0;
  double l2_write_bytes = 0;
  double l2_read_hit_sectors = 0;
  double l2_read_miss_sectors = 0;
  double hbm_read_bytes = 0;
  double hbm_write_bytes = 0;
  double l2_busy_s = 0;
  double hbm_busy_s = 0;
};

}  // namespace xpusim
