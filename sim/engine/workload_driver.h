#pragma once
// Launches a workload's ops as their dependencies finish: compute ops as kernels on the
// dispatchers of the GPUs they run on (one kernel per simulated GPU), collectives as traffic on
// the fabric. An op finishes when its last kernel (or its collective's last byte) does.
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
  double start_s = 0, end_s = 0;
};

class WorkloadDriver : public sc_core::sc_module {
 public:
  // preds[i]: ops that must finish before op i may start (explicit deps and the previous op on
  // each of its GPUs' streams). Each kernel's `index` is its op's index.
  SC_HAS_PROCESS(WorkloadDriver);
  WorkloadDriver(sc_core::sc_module_name name, std::vector<DriverOp>& ops, std::vector<std::vector<size_t>> preds,
                 double launch_gap_s, std::vector<CtaDispatcher*> dispatchers, Fabric* fabric,
                 const CollectiveParams& collectives);
  bool all_done() const { return done_ == ops_.size(); }

 private:
  void run();

  std::vector<DriverOp>& ops_;
  std::vector<std::vector<size_t>> preds_;
  double gap_s_;
  std::vector<CtaDispatcher*> dispatchers_;
  Fabric* fabric_;
  CollectiveParams collectives_;
  size_t done_ = 0;
};

}  // namespace xpusim::engine
