#pragma once
// What one op (kernel) did, counted by the models that served it, for the per-op report.
// Actions, never joules: the energy model prices them later.
#include <array>
#include <cstddef>

#include "models/common/dtype.h"

namespace xpusim {

struct OpCounters {
  // SM side
  double tensor_busy_s = 0;     // summed over SMs
  double simt_busy_s = 0;       // summed over SMs
  double cta_resident_s = 0;    // summed over CTAs
  std::array<double, kNumDtypes> tensor_macs{};  // executed, tile padding included
  double fp32_ops = 0;          // lane operations
  double hfma_ops = 0;          // FP16 FMA lane operations (SIMT)
  double dp4a_ops = 0;          // 4-way INT8 dot-product lane operations (SIMT)
  double sfu_ops = 0;
  double instr_mma = 0;         // warp-level instructions by class
  double instr_simt = 0;
  double instr_mem = 0;
  double lane_instr_simt = 0;   // the same, per active lane (SIMT instructions)
  double lane_instr_mem = 0;
  double rf_bytes = 0;          // register traffic beyond operand collection (MMA accumulators)
  double l1_read_bytes = 0;      // loads looked up in the L1 (TMA bypasses it)
  double l1_hit_sectors = 0;
  double l1_miss_sectors = 0;
  double smem_read_bytes = 0;    // shared memory: tensor-core operand reads, epilogue staging
  double smem_write_bytes = 0;   // shared memory: TMA and load data landing
  double sm_active_cycles = 0;   // SM cycles with this kernel's CTAs resident (each CTA's share of its SM)
  // memory side
  double noc_bytes = 0;
  double d2d_bytes = 0;          // crossing the die-to-die link
  double nvlink_bytes = 0;
  double l2_read_bytes = 0;
  double l2_write_bytes = 0;
  double l2_read_hit_sectors = 0;
  double l2_read_miss_sectors = 0;
  double hbm_read_bytes = 0;
  double hbm_write_bytes = 0;
  double hbm_bursts = 0;
  double hbm_activates = 0;
  double hbm_row_hit_bursts = 0;
  double l2_busy_s = 0;          // summed over L2 slices
  double hbm_busy_s = 0;         // data-bus time summed over pseudo-channels

  // Every field is a sum, so totals over ops and SMs add field by field.
  OpCounters& operator+=(const OpCounters& o) {
    static_assert(sizeof(OpCounters) % sizeof(double) == 0, "OpCounters holds doubles only");
    double* a = reinterpret_cast<double*>(this);
    const double* b = reinterpret_cast<const double*>(&o);
    for (size_t i = 0; i < sizeof(OpCounters) / sizeof(double); ++i) a[i] += b[i];
    return *this;
  }
  OpCounters& scale(double f) {
    double* a = reinterpret_cast<double*>(this);
    for (size_t i = 0; i < sizeof(OpCounters) / sizeof(double); ++i) a[i] *= f;
    return *this;
  }
};

}  // namespace xpusim
