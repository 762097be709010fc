#pragma once
// Runs the power governor of each simulated GPU (power.mode: capped; docs/energy-model.md). At
// the end of every control window it prices what each GPU's kernels did in it (the action
// counts they added, at the nominal voltage, split by supply rail), hands the energy to that
// GPU's governor and sets the clock it picks on the GPU's clock domain. It keeps, per kernel,
// the energy-weighted (V / nominal)^2 its core-rail actions ran at, so the report prices each
// op at the voltages it actually ran.
#include <map>
#include <memory>
#include <vector>

#include "models/common/clock_domain.h"
#include "models/energy/energy_table.h"
#include "models/power/governor.h"
#include "models/sm/kernel_run.h"

namespace xpusim::engine {

class PowerManager {
 public:
  PowerManager(const PowerParams& p, const energy::Table& table, int dies);
  // The GPUs in the order of add_gpu; returns the GPU's index here.
  int add_gpu(ClockDomain& clock);
  // The run's energy counts towards its GPU's power once it is submitted (`run->submit_log`).
  void add_run(int gpu, KernelRun* run, double switching);
  // power.start steady: GPU `gpu`'s governor holds the clock at which this load (core energy
  // per cycle at the nominal voltage, off-core power) keeps to the limit (Governor::hold_steady).
  void hold_steady(int gpu, double core_nominal_j_per_cycle, double offcore_w);
  // End of the control window [start, end).
  void tick(double start_s, double end_s);

  const std::vector<PowerSample>& track(int gpu) const { return gpus_[static_cast<size_t>(gpu)].governor.track(); }
  // The (V / nominal)^2 that `run`'s core-rail energy ran at, weighted by that energy (1 if none).
  double core_scale(const KernelRun* run) const;

 private:
  struct Gpu {
    ClockDomain* clock;
    Governor governor;
  };
  struct Account {
    const KernelRun* run;
    int gpu;
    const energy::RailWeights* weights;
    double core_seen = 0, offcore_seen = 0;  // nominal joules already handed to the governor
    double core_scaled = 0;                  // the same at the voltages they ran
    bool settled = false;                    // finished and fully counted
  };
  const energy::RailWeights& weights_for(double switching);

  PowerParams p_;
  const energy::Table& table_;
  double static_w_;
  std::vector<Gpu> gpus_;
  std::vector<Account> accounts_;
  std::map<const KernelRun*, size_t> account_of_;
  std::vector<const KernelRun*> submitted_;  // runs in the order they were submitted
  size_t submitted_seen_ = 0;                // of which tick() has taken this many into open_
  std::vector<size_t> open_;                 // accounts submitted and not settled, in account order
  std::map<double, std::unique_ptr<energy::RailWeights>> weights_;  // by switching
};

}  // namespace xpusim::engine
