#pragma once
// Runs one simulation: lower the trace, build the chip, simulate, collect results.
// SystemC elaborates once per process, so a process runs at most one simulation through
// `simulate`; report::simulate_isolated (sim/report/isolated.h) runs it in a forked child and
// returns the report JSON, for the tests and the Python API, which run many in one process.
#include "models/power/governor.h"
#include <functional>
#include <string>
#include <vector>

#include "models/accelerator/accelerator.h"
#include "models/common/stats.h"
#include "models/interconnect/collective.h"
#include "models/sm/kernel_run.h"
#include "sim/config/config_loader.h"
#include "sim/lower/lowering.h"
#include "sim/trace/trace.h"

namespace xpusim::engine {

// How closely the engine simulates (docs/performance.md). exact: every CTA of every kernel.
// fast: steady waves extrapolated and identical kernels reused (models/sm/fast_path.h).
enum class Fidelity { exact, fast };
const char* fidelity_name(Fidelity f);

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
  // Called now and then during the simulation (at most every quarter second of wall time); the
  // callee decides what to print.
  std::function<void(const Progress&)> progress;
};

struct OpResult {
  lower::LoweredOp lowered;  // compute ops (program is null for a collective)
  KernelRun run;             // compute: the kernel on the op's first GPU (the per-device view)
  OpCounters all_devices;    // compute: the counters summed over every GPU it ran on
  std::vector<int> devices;  // the GPUs it ran on
  bool collective = false;
  CollectiveJob job;
  CollectiveRun coll;
  double start_s = 0, end_s = 0;  // the whole op, over all its GPUs
  // power.mode capped: the (V / nominal)^2 its core-rail energy ran at on its first GPU (1 at
  // a fixed clock, where the configured voltage applies).
  double core_scale = 1;
};

struct SimResult {
  std::vector<OpResult> ops;              // kind gpu
  std::vector<accel::AccelOp> accel_ops;  // kind accelerator
  StatRegistry stats;
  double end_s = 0;
  int gpus = 1;                      // GPUs in the system
  std::vector<int> simulated_gpus;   // GPUs whose SMs and memory were simulated
  bool representative = false;       // one GPU simulated, the others mirror it
  // power.mode capped: each simulated GPU's governor windows, in simulated_gpus order.
  std::vector<std::vector<PowerSample>> power_tracks;
  // Set when the watchdog stopped a simulation that could not finish (the stuck ops, where);
  // nothing else in the result is then meaningful. Returned rather than thrown: an exception
  // raised after SystemC has switched coroutine stacks confuses AddressSanitizer.
  std::string stall;
  Fidelity fidelity = Fidelity::exact;
  double tolerance = 0;
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
