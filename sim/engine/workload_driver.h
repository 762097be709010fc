#pragma once
// Launches a workload's ops as their dependencies finish: compute ops as kernels on the
// dispatchers of the GPUs they run on (one kernel per simulated GPU), collectives as traffic on
// the fabric. An op finishes when its last kernel (or its collective's last byte) does.
//
// Watchdog: run() stops the simulation when it keeps waking at one simulated instant with
// nothing finishing (a livelock), and run_watched() runs the simulation in windows of simulated
// time, stopping it when a window passes with no CTA and no op finished or when the events run
// out with work left. stall() then says which ops were stuck where. The windows are slices of
// sc_start, not a process of their own: a timed event in the kernel's queue would reorder
// same-instant events and move results.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "models/common/systemc.h"
#include "models/interconnect/collective.h"
#include "models/sm/cta_dispatcher.h"
#include "models/sm/hold_program.h"

namespace xpusim::engine {

// Runs the simulation to `until`, stopping early at sc_stop or when the events run out. With
// `skip_empty` (a power governor's slices), a slice with no event in it is not started: sc_start
// would only warn. Before the first start the processes have not run, so nothing is pending yet:
// `started` says whether one has happened. The slice then ends at `until` even where time rests
// at the last event before it.
void start_slice(sc_core::sc_time until, bool& started, bool skip_empty);

struct DriverOp {
  std::vector<std::pair<KernelRun*, CtaDispatcher*>> kernels;  // compute: one per simulated GPU
  // A second kernel per simulated GPU (lower::LoweredOp::tail), launched when `kernels` are done:
  // after their end cost, the launch gap and its own start cost.
  std::vector<std::pair<KernelRun*, CtaDispatcher*>> tail;
  const CollectiveJob* collective = nullptr;                    // or a collective
  CollectiveRun* collective_run = nullptr;                      // where its result goes
  // A collective's CTAs on each simulated GPU, holding SMs from its start to its end (empty where
  // collectives.occupy_sms is off or its kernel is not modelled); the op ends when they are done.
  std::vector<std::pair<KernelRun*, CtaDispatcher*>> holds;
  std::shared_ptr<HoldProgram> hold;
  std::string label;                                            // "'name' (file:line)" for the watchdog
  bool kernel_costs = true;  // pays the per-kernel start and end costs (a delay op's duration already does)
  // Eager issue: whether the host issues this op (a kernel, or a delay standing for one), and the
  // host's own serial work it is (a host op on stream 0: the issuing thread is busy that long, so
  // the kernels after it are issued after it).
  bool issue_slot = true;
  double host_serial_s = 0;
  double start_s = 0, end_s = 0;
};

// When kernels start and end around their CTAs' work (KernelLibParams): the gap between
// dependent kernels, the grid's start and completion costs, and in eager mode the host's issue
// time per kernel.
struct LaunchCosts {
  double gap_s = 0, start_s = 0, end_s = 0;
  double eager_issue_s = 0;  // 0: kernels come from a CUDA graph
};

class WorkloadDriver : public sc_core::sc_module {
 public:
  // preds[i]: ops that must finish before op i may start (explicit deps and the previous op on
  // each of its GPUs' streams). Each kernel's `index` is its op's index.
  SC_HAS_PROCESS(WorkloadDriver);
  WorkloadDriver(sc_core::sc_module_name name, std::vector<DriverOp>& ops, std::vector<std::vector<size_t>> preds,
                 const LaunchCosts& launch, std::vector<CtaDispatcher*> dispatchers, Fabric* fabric,
                 const CollectiveParams& collectives);
  bool all_done() const { return done_ == ops_.size(); }
  // Runs the simulation to the end, or until the watchdog stops it: `window_s` of simulated time
  // with no CTA and no op finished, or no events left with ops unfinished. With `tick`, the
  // simulation also pauses every `tick_s` (and once at the end) and calls tick(start, end) for
  // the slice just run: the power governor's control windows. Without it, the slices are the
  // watchdog's alone, as before.
  // With `on_slice`, it is called after every slice; without a tick, slices are then at most
  // `slice_s` of simulated time (progress lines).
  using Tick = std::function<void(double start_s, double end_s)>;
  void run_watched(double window_s, double tick_s = 0, const Tick& tick = nullptr,
                   const std::function<void()>& on_slice = nullptr, double slice_s = 0);
  size_t ops_done() const { return done_; }
  bool op_done(size_t i) const { return state_[i] == State::done; }
  // Why the simulation stopped with work left (the stuck ops, where each was); empty if it did
  // not.
  const std::string& stall() const { return stall_; }

 private:
  enum class State : char { waiting, ready, running, done };
  void run();
  uint64_t progress() const;
  // Whether a collective is in flight: its end is priced when it starts, so it lands at a set
  // time and a watchdog window it spans is not a stall.
  bool collective_in_flight() const;  // CTAs and ops finished so far
  void record_stall(const std::string& why);

  std::vector<DriverOp>& ops_;
  std::vector<std::vector<size_t>> preds_;
  LaunchCosts launch_;
  std::vector<CtaDispatcher*> dispatchers_;
  Fabric* fabric_;
  CollectiveParams collectives_;
  std::vector<State> state_;
  size_t done_ = 0;
  std::string stall_;
};

}  // namespace xpusim::engine
