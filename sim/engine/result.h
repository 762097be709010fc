#pragma once
// What a simulation leaves: each op's lowering, kernel run, counters, collective and times, the
// statistics, the power governors' tracks. The engine fills it (simulate.h); the report reads it.
#include <string>
#include <vector>

#include "models/accelerator/accelerator.h"
#include "models/common/stats.h"
#include "models/interconnect/collective.h"
#include "models/power/governor.h"
#include "models/sm/kernel_run.h"
#include "sim/lower/lowering.h"

namespace xpusim::engine {

// How closely the engine simulates (docs/performance.md). exact: every CTA of every kernel.
// fast: steady waves extrapolated and identical kernels reused (models/sm/fast_path.h).
enum class Fidelity { exact, fast };
const char* fidelity_name(Fidelity f);

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

}  // namespace xpusim::engine
