#pragma once
// A MAGNet-style dataflow accelerator: PEs of vector MAC units with local buffers.
// The timing model arrives with the accelerator work; the parameters load and describe now.

namespace xpusim {

struct AcceleratorParams {
  int pes = 0;                       // processing elements
  int vector_units_per_pe = 0;       // vector MAC units per PE
  int vector_width = 0;              // MACs per vector unit per cycle (4-bit)
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
};

struct DramParams {
  double bandwidth = 0;
  double latency_s = 0;
  double capacity_bytes = 0;
};

}  // namespace xpusim
