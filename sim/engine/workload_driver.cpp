#include "sim/engine/workload_driver.h"

#include <algorithm>
#include <queue>

namespace xpusim::engine {

WorkloadDriver::WorkloadDriver(sc_core::sc_module_name name, std::vector<DriverOp>& ops,
                               std::vector<std::vector<size_t>> preds, double launch_gap_s,
                               std::vector<CtaDispatcher*> dispatchers, Fabric* fabric,
                               const CollectiveParams& collectives)
    : sc_module(name),
      ops_(ops),
      preds_(std::move(preds)),
      gap_s_(launch_gap_s),
      dispatchers_(std::move(dispatchers)),
      fabric_(fabric),
      collectives_(collectives) {
  SC_THREAD(run);
}

void WorkloadDriver::run() {
  const size_t n = ops_.size();
  std::vector<size_t> waiting(n), pending(n);
  std::vector<std::vector<size_t>> succs(n);
  // Times are kept in the kernel's own time unit (quantised once): comparing seconds held as
  // doubles against the simulation clock could leave a sub-resolution gap that a timed wait
  // rounds to zero, and the loop would spin in delta cycles.
  using Due = std::pair<sc_core::sc_time, size_t>;  // (time, op): earliest first, then trace order
  using Queue = std::priority_queue<Due, std::vector<Due>, std::greater<Due>>;
  Queue ready, landing;  // ops whose dependencies are done; collectives in flight
  for (size_t i = 0; i < n; ++i) {
    waiting[i] = preds_[i].size();
    pending[i] = ops_[i].kernels.size();
    for (size_t p : preds_[i]) succs[p].push_back(i);
    if (waiting[i] == 0) ready.push({sc_core::SC_ZERO_TIME, i});
  }
  sc_core::sc_event_or_list any_kernel;
  for (CtaDispatcher* d : dispatchers_) any_kernel |= d->kernel_finished;

  auto finish = [&](size_t i) {
    ++done_;
    for (size_t s : succs[i]) {
      if (--waiting[s] > 0) continue;
      double t = 0;
      for (size_t p : preds_[s]) t = std::max(t, ops_[p].end_s);
      ready.push({std::max(sc_core::sc_time(t + gap_s_, sc_core::SC_SEC), sc_core::sc_time_stamp()), s});
    }
  };

  while (done_ < n) {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    for (bool progress = true; progress;) {
      progress = false;
      while (!ready.empty() && ready.top().first <= now) {
        const size_t i = ready.top().second;
        ready.pop();
        progress = true;
        DriverOp& op = ops_[i];
        op.start_s = now.to_seconds();
        if (op.collective) {
          *op.collective_run = run_collective(*fabric_, collectives_, *op.collective, op.start_s);
          op.end_s = op.collective_run->end_s;
          landing.push({std::max(sc_core::sc_time(op.end_s, sc_core::SC_SEC), now), i});
        } else {
          for (auto& [k, d] : op.kernels) d->submit(k);
        }
      }
      while (!landing.empty() && landing.top().first <= now) {
        const size_t i = landing.top().second;
        landing.pop();
        progress = true;
        finish(i);
      }
    }
    if (done_ == n) break;
    sc_core::sc_time next = sc_core::SC_ZERO_TIME;
    bool timed = false;
    for (const Queue* q : {&ready, &landing})
      if (!q->empty() && (!timed || q->top().first < next)) {
        next = q->top().first;
        timed = true;
      }
    if (dispatchers_.empty()) {
      if (!timed) break;  // nothing can happen any more; simulate() reports the unfinished ops
      wait(next - now);
    } else if (timed) {
      wait(next - now, any_kernel);
    } else {
      wait(any_kernel);
    }
    for (CtaDispatcher* d : dispatchers_)
      for (KernelRun* k : d->take_finished()) {
        const size_t i = static_cast<size_t>(k->index);
        ops_[i].end_s = std::max(ops_[i].end_s, k->end_s);
        if (--pending[i] == 0) finish(i);
      }
  }
  sc_core::sc_stop();
}

}  // namespace xpusim::engine
