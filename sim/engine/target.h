#pragma once
// A chip kind's part in the engine: how a trace's ops are lowered on it, and how the trace runs
// (build the chip and its system, simulate, harvest the results). Each kind that a config's
// `kind:` names has one Target, listed in targets.cpp; simulate() and lower_all() find it there
// (docs/architecture.md, "Chip kinds").
#include <string>
#include <vector>

#include "sim/engine/simulate.h"

namespace xpusim::engine {

class Target {
 public:
  virtual ~Target() = default;
  // Lowers every op without simulating (`xpusim check`); throws UserError naming the op that
  // the chip, or its system, cannot run.
  virtual std::vector<lower::LoweredOp> lower_all(const config::LoadedConfig& cfg, const trace::Trace& t) const = 0;
  // Simulates `t` on the chip `cfg` describes, into `out` (whose fidelity is already set).
  virtual void run(const config::LoadedConfig& cfg, const trace::Trace& t, SimResult& out, const SimOptions& opt) const = 0;
};

// The Target of chip kind `kind`; throws UserError for a kind that has none.
const Target& target_for(const std::string& kind);

// The kinds (gpu_target.cpp, accelerator_target.cpp).
const Target& gpu_target();
const Target& accelerator_target();

}  // namespace xpusim::engine
