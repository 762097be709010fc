#pragma once
// Runs one simulation: lower the trace, build the chip, simulate, collect results.
// SystemC elaborates once per process, so a process runs at most one simulation through
// `simulate`; `simulate_isolated` runs it in a forked child and returns the report JSON, for
// tests and sweeps that need many runs in one process.
#include <string>
#include <vector>

#include "models/accelerator/accelerator.h"
#include "models/common/stats.h"
#include "models/sm/kernel_run.h"
#include "sim/config/config_loader.h"
#include "sim/lower/lowering.h"
#include "sim/trace/trace.h"

namespace xpusim::engine {

struct OpResult {
  lower::LoweredOp lowered;
  KernelRun run;
};

struct SimResult {
  std::vector<OpResult> ops;              // kind gpu
  std::vector<accel::AccelOp> accel_ops;  // kind accelerator
  StatRegistry stats;
  double end_s = 0;
};

// Lowers every op (throws UserError if the chip cannot run one) without simulating.
std::vector<lower::LoweredOp> lower_all(const config::LoadedConfig& cfg, const trace::Trace& t);

void simulate(const config::LoadedConfig& cfg, const trace::Trace& t, SimResult& out);

// Forks, simulates in the child and returns the report JSON; a UserError in the child comes
// back as a UserError here.
std::string simulate_isolated(const config::LoadedConfig& cfg, const trace::Trace& t);

}  // namespace xpusim::engine
