#pragma once
// Launches a workload's ops as their dependencies finish: compute ops as kernels on the
// dispatchers of the GPUs they run on (one kernel per simulated GPU), collectives as traffic on
// the fabric. An op finishes when its last kernel (or its collective's last byte) does.
//
// A watchdog stops the simulation, instead of letting it hang or end quietly with work left,
// when no CTA and no op finishes for a window of simulated time, or when the driver keeps waking
// at one instant without anything finishing; stall() then says which ops were stuck where.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/common/systemc.h"
#include "models/interconnect/collective.h"
#include "models/sm/cta_dispatcher.h"

namespace xpusim::engine {

struct DriverOp {
  std::vector<std::pair<KernelRun*, CtaDispatcher*>> kernels;  // compute: one per simulated GPU
  const CollectiveJob* collective = nullptr;                    // or a collective
  CollectiveRun* collective_run = nullptr;                      // where its result goes
  std::string label;                                            // "'name' (file:line)" for the watchdog
  double start_s = 0, end_s = 0;
};

class WorkloadDriver : public sc_core::sc_module {
 public:
  // preds[i]: ops that must finish before op i may start (explicit deps and the previous op on
  // each of its GPUs' streams). Each kernel's `index` is its op's index. `stall_window_s`: the
  // simulated time without any CTA or op finishing after which the watchdog stops the run.
  SC_HAS_PROCESS(WorkloadDriver);
  WorkloadDriver(sc_core::sc_module_name name, std::vector<DriverOp>& ops, std::vector<std::vector<size_t>> preds,
                 double launch_gap_s, std::vector<CtaDispatcher*> dispatchers, Fabric* fabric,
                 const CollectiveParams& collectives, double stall_window_s);
  bool all_done() const { return done_ == ops_.size(); }
  // Why the simulation stopped with work left (the stuck ops, where each was); empty if it did
  // not. Also set when the events ran out with ops unfinished.
  const std::string& stall() const { return stall_; }
  // Called after sc_start returns: records a stall if ops are unfinished and the watchdog did not.
  void check_finished();

 private:
  enum class State : char { waiting, ready, running, done };
  void run();
  void watch();
  uint64_t progress() const;  // CTAs and ops finished so far
  void stop_stalled(const std::string& why);

  std::vector<DriverOp>& ops_;
  std::vector<std::vector<size_t>> preds_;
  double gap_s_;
  std::vector<CtaDispatcher*> dispatchers_;
  Fabric* fabric_;
  CollectiveParams collectives_;
  double window_s_;
  std::vector<State> state_;
  size_t done_ = 0;
  std::string stall_;
};

}  // namespace xpusim::engine
