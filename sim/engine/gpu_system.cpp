#include "sim/engine/gpu_system.h"

#include <algorithm>
#include <queue>

namespace xpusim::engine {

WorkloadDriver::WorkloadDriver(sc_core::sc_module_name name, CtaDispatcher& dispatcher, std::vector<KernelRun>& runs,
                               std::vector<std::vector<size_t>> preds, double launch_gap_s)
    : sc_module(name), dispatcher_(dispatcher), runs_(runs), preds_(std::move(preds)), gap_s_(launch_gap_s) {
  SC_THREAD(run);
}

void WorkloadDriver::run() {
  const size_t n = runs_.size();
  std::vector<size_t> waiting(n);
  std::vector<std::vector<size_t>> succs(n);
  // Ready times are kept in the kernel's own time unit (quantised once): comparing seconds held
  // as doubles against the simulation clock could leave a sub-resolution gap that a timed wait
  // rounds to zero, and the loop would spin in delta cycles.
  using Ready = std::pair<sc_core::sc_time, size_t>;  // (time, op): earliest first, then trace order
  std::priority_queue<Ready, std::vector<Ready>, std::greater<Ready>> ready;
  for (size_t i = 0; i < n; ++i) {
    waiting[i] = preds_[i].size();
    for (size_t p : preds_[i]) succs[p].push_back(i);
    if (waiting[i] == 0) ready.push({sc_core::SC_ZERO_TIME, i});
  }
  while (done_ < n) {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    while (!ready.empty() && ready.top().first <= now) {
      dispatcher_.submit(&runs_[ready.top().second]);
      ready.pop();
    }
    if (!ready.empty())
      wait(ready.top().first - now, dispatcher_.kernel_finished);
    else
      wait(dispatcher_.kernel_finished);
    for (KernelRun* k : dispatcher_.take_finished()) {
      ++done_;
      for (size_t s : succs[static_cast<size_t>(k->index)]) {
        if (--waiting[s] > 0) continue;
        double t = 0;
        for (size_t p : preds_[s]) t = std::max(t, runs_[p].end_s);
        ready.push({std::max(sc_core::sc_time(t + gap_s_, sc_core::SC_SEC), sc_core::sc_time_stamp()), s});
      }
    }
  }
  sc_core::sc_stop();
}

AddressMap GpuSystem::address_map(const config::GpuConfig& cfg) {
  return AddressMap(static_cast<uint64_t>(cfg.hbm.interleave_bytes), static_cast<uint32_t>(cfg.hbm.channel_count()),
                    static_cast<uint32_t>(cfg.l2.slices), static_cast<uint32_t>(cfg.noc.dies));
}

GpuSystem::GpuSystem(sc_core::sc_module_name name, const config::GpuConfig& cfg, StatRegistry& stats)
    : sc_module(name), sm_stats_(SmStats::make(stats, std::string(this->name()) + ".sm")) {
  const double clk = cfg.sm.clock_hz;
  const AddressMap map = address_map(cfg);
  noc_ = std::make_unique<Crossbar>("noc", cfg.noc, cfg.sm.count, clk, map, stats);
  l2_ = std::make_unique<L2Cache>("l2", cfg.l2, map, clk, stats);
  hbm_ = std::make_unique<Hbm>("hbm", cfg.hbm, map, stats);
  std::vector<Sm*> raw;
  for (int i = 0; i < cfg.sm.count; ++i) {
    sms_.push_back(std::make_unique<Sm>(("sm" + std::to_string(i)).c_str(), i, cfg.sm, cfg.tensor_core, sm_stats_));
    sms_.back()->mem.bind(noc_->sm_side);
    raw.push_back(sms_.back().get());
  }
  noc_->l2_side.bind(l2_->socket);
  l2_->mem.bind(hbm_->socket);
  dispatcher_ = std::make_unique<CtaDispatcher>("dispatcher", raw);
}

}  // namespace xpusim::engine
