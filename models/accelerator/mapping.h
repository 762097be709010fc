#pragma once
// Mapping a GEMM onto the MAGNet-style array: tile sizes at the global buffer, the loop order
// between DRAM and the global buffer, and the dataflow inside a PE (weight- or
// output-stationary). A small search over legal tilings (every buffer within capacity) picks the
// one with the least energy x delay. Closed-form access counts per level come with each mapping;
// they are the actions the energy table prices.
#include <cstdint>
#include <string>

#include "models/accelerator/accelerator_params.h"
#include "models/energy/energy_table.h"

namespace xpusim::accel {

struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int bits = 4;                // 4 or 8 (weights and activations)
  double input_density = 1.0;  // share of non-zero input elements (zeros gate their MACs)
};

struct Mapping {
  bool weight_stationary = true;
  bool n_outer = true;            // DRAM loop order: N tiles outside M tiles
  int64_t mg = 0, ng = 0, kg = 0; // global-buffer tile
  int64_t np = 0, mi = 0;         // per PE: output columns, input rows resident (weight-stationary)
  int64_t tiles = 0;              // global-buffer tiles, all batches
  double cycles = 0;              // compute cycles, all tiles (tile padding included)
  double dram_read_bytes = 0, dram_write_bytes = 0;
  double macs = 0;                // useful MACs
  energy::AccelCounters counters;
  double est_time_s = 0, est_energy_j = 0;
  std::string describe() const;
};

// The legal mapping with the least estimated energy x delay. `table` may be null (then the
// least delay, then the least DRAM traffic). Throws std::invalid_argument if nothing fits.
Mapping map_gemm(const GemmShape& g, const AcceleratorParams& a, const DramParams& d, const energy::Table* table);

// Every legal mapping obeys these (for tests).
bool fits(const Mapping& m, const GemmShape& g, const AcceleratorParams& a);

// Bytes that any mapping must move over the DRAM interface: each operand read once and the
// output written once.
double compulsory_dram_bytes(const GemmShape& g);

}  // namespace xpusim::accel
