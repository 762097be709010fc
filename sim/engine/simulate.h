#pragma once
// Runs one simulation: lower the trace, build the chip, simulate, collect results.
// SystemC elaborates once per process, so a process runs at most one simulation through
// `simulate`; report::simulate_isolated (sim/report/isolated.h) runs it in a forked child and
// returns the report JSON, for the tests and the Python API, which run many in one process.
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "models/interconnect/collective.h"
#include "sim/config/config_loader.h"
#include "sim/engine/result.h"
#include "sim/lower/lowering.h"
#include "sim/trace/trace.h"

namespace xpusim::engine {

// Where a run stands, for progress lines: ops finished of all, per op class, and the share of
// the estimated simulation work (CTA steps) done.
struct Progress {
  size_t ops_done = 0, ops_total = 0;
  std::vector<std::pair<std::string, std::pair<size_t, size_t>>> by_class;  // kind -> (done, total)
  double work_done = 0;  // 0..1
  double simulated_s = 0;
};

struct SimOptions {
  Fidelity fidelity = Fidelity::exact;
  double tolerance = 0.01;  // fast: largest per-wave change that counts as a steady state
  // fast: the kernel cache (sim/engine/kernel_cache.h) whose records this run reuses, and the
  // file its new records are appended to (empty: the same file). Empty: none.
  std::string kernel_cache, kernel_cache_out;
  // Called now and then during the simulation (at most every quarter second of wall time); the
  // callee decides what to print.
  std::function<void(const Progress&)> progress;
};

// Where each op runs, checked against the system: every device exists, collectives can run
// over the system's links, and representative detail has one set of GPUs to mirror.
struct Placement {
  std::vector<std::vector<int>> devices;  // per op
  std::vector<int> simulated;             // GPUs that get SMs and memory
  bool representative = false;
};
Placement place(const config::LoadedConfig& cfg, const trace::Trace& t);

// The structure of the system `g` describes (links, switches, NICs), without calendars.
Topology topology(const config::GpuConfig& g);

// Lowers every op (throws UserError if the chip cannot run one, or the system cannot place
// it) without simulating.
std::vector<lower::LoweredOp> lower_all(const config::LoadedConfig& cfg, const trace::Trace& t);

void simulate(const config::LoadedConfig& cfg, const trace::Trace& t, SimResult& out, const SimOptions& opt = {});

}  // namespace xpusim::engine
