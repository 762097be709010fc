#pragma once
// The accelerator as a SystemC module: ops run one after another; each is a sequence of
// global-buffer tiles, double-buffered, so the DRAM transfer of tile i+1 overlaps the compute of
// tile i. Tiles of one op are alike (the mapping's), so an op is described by its tile count and
// per-tile work; the action counts come whole from the mapping.
#include <string>
#include <vector>

#include "models/accelerator/accelerator_params.h"
#include "models/accelerator/mapping.h"
#include "models/common/bandwidth_resource.h"
#include "models/common/clock_domain.h"
#include "models/common/systemc.h"
#include "models/energy/energy_table.h"

namespace xpusim::accel {

struct AccelOp {
  std::string description;
  double tiles = 1;
  double tile_dram_bytes = 0;   // moved per tile (reads and writes)
  double tile_cycles = 0;       // compute (MAC array or SFU) per tile
  double mac_cycles = 0;        // of all tiles' compute, cycles on the MAC array
  double sfu_cycles = 0;        // and on the special-function units
  double macs = 0;              // useful MACs
  int bits = 8;
  energy::AccelCounters counters;
  struct Part {
    std::string name;        // e.g. "QK^T" within an attention op
    GemmShape shape;
    Mapping mapping;
  };
  std::vector<Part> gemms;      // the GEMMs in this op with their chosen mappings
  // results
  double start_s = 0, end_s = 0, dram_busy_s = 0;
  double tiles_done = 0;   // progress, for the power governor's windows
  double core_scale = 1;   // power.mode capped: the (V / nominal)^2 its energy ran at
};

class Accelerator : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(Accelerator);
  // `clock` is the array's clock (accelerator.clock, or the power governor's choice).
  Accelerator(sc_core::sc_module_name name, const AcceleratorParams& a, const DramParams& d, std::vector<AccelOp>& ops,
              const ClockDomain& clock);

 private:
  void run();
  AcceleratorParams a_;
  DramParams d_;
  std::vector<AccelOp>& ops_;
  BandwidthResource dram_;
  const ClockDomain& clock_;
};

}  // namespace xpusim::accel
