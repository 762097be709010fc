#pragma once
// A MAGNet-style dataflow accelerator: PEs of vector MAC units with weight, input and
// accumulation buffers, a global buffer, special-function units and a DRAM interface.
// Declared (name, unit, range, meaning) in sim/config/schema.cpp.

namespace xpusim {

struct AcceleratorParams {
  int pes = 0;                       // processing elements
  int vector_units_per_pe = 0;       // vector MAC units per PE
  int vector_width = 0;              // 4-bit MACs per vector unit per cycle (8-bit: half)
  double clock_hz = 0;               // operating frequency
  double voltage_v = 0;              // operating supply voltage
  double min_voltage_v = 0, max_voltage_v = 0;
  double min_clock_hz = 0, max_clock_hz = 0;
  double weight_buffer_bytes = 0;    // per PE
  double input_buffer_bytes = 0;     // per PE
  double accum_buffer_bytes = 0;     // per PE
  double global_buffer_bytes = 0;    // shared
  double area_m2 = 0;
  int vsq_vector = 0;                // elements per VS-Quant scale vector
  int accum_bits = 24;               // partial-sum width in the accumulation buffer
  int collector_depth = 1;           // K-chunks summed in a vector unit's collector (weights in registers) per accumulation-buffer update
  int sfu_lanes = 0;                 // special-function operations per cycle (softmax, layernorm, GELU)

  int macs_per_cycle(int bits) const { return pes * vector_units_per_pe * vector_width * 4 / (bits < 4 ? 4 : bits); }
};

// Highest clock at voltage v: linear between the two published operating points.
inline double accelerator_max_clock(const AcceleratorParams& a, double v) {
  return a.min_clock_hz + (a.max_clock_hz - a.min_clock_hz) * (v - a.min_voltage_v) / (a.max_voltage_v - a.min_voltage_v);
}

struct DramParams {
  double bandwidth = 0;
  double latency_s = 0;
  double capacity_bytes = 0;
};

}  // namespace xpusim
