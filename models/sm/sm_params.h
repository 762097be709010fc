#pragma once
// Streaming multiprocessor parameters. Declared (name, unit, range, meaning) in sim/config/schema.cpp.

namespace xpusim {

struct SmParams {
  int count = 0;                     // SMs enabled on the chip
  double clock_hz = 0;               // SM clock used for all SM-side timing
  int sub_partitions = 0;            // processing blocks, one warp scheduler each
  bool dual_issue = false;           // a scheduler may issue a second, independent instruction of a warp in a clock
  int max_warps = 0;                 // resident warps per SM
  int max_ctas = 0;                  // resident CTAs per SM
  int registers = 0;                 // 32-bit registers per SM
  double shared_memory_bytes = 0;    // shared memory a kernel may use per SM
  int fp32_lanes = 0;                // FP32 FMA lanes per SM
  double hfma_per_lane = 2;          // FP16 FMAs per FP32 lane per clock on the SIMT path (HFMA2: 2; 0: no FP16 math)
  double dp4a_per_lane = 1;          // DP4A instructions (4 INT8 MACs each) per FP32 lane per clock (0: no DP4A)
  int sfu_lanes = 0;                 // special-function (exp, rsqrt) lanes per SM
  int shared_memory_banks = 0;       // banks of the combined L1/shared-memory array
  double bank_bytes = 0;             // bytes per bank per clock
  double l1_cache_bytes = 0;         // L1 data cache capacity (the part not carved out as shared memory)
  int l1_associativity = 0;
  double l1_latency_cycles = 0;      // load-to-use latency of an L1 hit
  // Dependent-instruction latencies, for the chains a kernel cannot hide behind other warps (a
  // block-wide reduction, a loop whose iterations each wait for the last): issue to result.
  double fp32_latency_cycles = 0;          // FADD, FMUL, FFMA
  double sfu_latency_cycles = 0;           // MUFU (rsqrt, ex2, approximate reciprocal)
  double divide_latency_cycles = 0;        // IEEE-rounded FP32 reciprocal or division (MUFU.RCP and its fix-up)
  double shuffle_latency_cycles = 0;       // warp shuffle (SHFL)
  double shared_memory_latency_cycles = 0; // a shared-memory store and the load of it after a barrier
  double barrier_latency_cycles = 0;       // CTA barrier (BAR.SYNC) of one warp
  double barrier_per_warp_cycles = 0;      // and for each further warp it waits for
  // The GPU's block scheduler starts one CTA every this many seconds at most, over all SMs
  // (0: a CTA starts as soon as an SM has room for it).
  double cta_launch_interval_s = 0;
};

}  // namespace xpusim
