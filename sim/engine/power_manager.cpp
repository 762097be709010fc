#include "sim/engine/power_manager.h"

#include <algorithm>

namespace xpusim::engine {

PowerManager::PowerManager(const PowerParams& p, const energy::Table& table, int dies)
    : p_(p), table_(table), static_w_(table.static_power_w * dies) {}

int PowerManager::add_gpu(ClockDomain& clock) {
  gpus_.push_back(Gpu{&clock, Governor(p_, static_w_, table_.nominal_voltage)});
  clock.set_hz(gpus_.back().governor.clock_hz(), 0);
  return static_cast<int>(gpus_.size()) - 1;
}

const energy::RailWeights& PowerManager::weights_for(double switching) {
  std::unique_ptr<energy::RailWeights>& w = weights_[switching];
  if (!w) w = std::make_unique<energy::RailWeights>(energy::rail_weights(table_, switching));
  return *w;
}

void PowerManager::add_run(int gpu, KernelRun* run, double switching) {
  account_of_[run] = accounts_.size();
  accounts_.push_back(Account{run, gpu, &weights_for(switching)});
  run->submit_log = &submitted_;
}

void PowerManager::hold_steady(int gpu, double core_nominal_j_per_cycle, double offcore_w) {
  Gpu& g = gpus_[static_cast<size_t>(gpu)];
  g.governor.hold_steady(core_nominal_j_per_cycle, offcore_w);
  g.clock->set_hz(g.governor.clock_hz(), 0);
}

void PowerManager::tick(double start_s, double end_s) {
  // Only submitted kernels have counted anything (a kernel's counters are zero before), so the
  // window's energy is theirs: a long trace's later kernels cost nothing here until they run.
  // Accounts are summed in their order, as when every account was visited.
  if (submitted_seen_ < submitted_.size()) {
    for (; submitted_seen_ < submitted_.size(); ++submitted_seen_) open_.push_back(account_of_.at(submitted_[submitted_seen_]));
    std::sort(open_.begin(), open_.end());
  }
  std::vector<double> core(gpus_.size(), 0), offcore(gpus_.size(), 0);
  size_t kept = 0;
  for (const size_t i : open_) {
    Account& a = accounts_[i];
    const double c = a.weights->core_j(a.run->counters), o = a.weights->offcore_j(a.run->counters);
    const size_t g = static_cast<size_t>(a.gpu);
    core[g] += c - a.core_seen;
    offcore[g] += o - a.offcore_seen;
    a.core_scaled += (c - a.core_seen) * gpus_[g].governor.core_scale();
    a.core_seen = c;
    a.offcore_seen = o;
    a.settled = a.run->finished;
    if (!a.settled) open_[kept++] = i;
  }
  open_.resize(kept);
  for (size_t g = 0; g < gpus_.size(); ++g)
    gpus_[g].clock->set_hz(gpus_[g].governor.end_window(start_s, end_s, core[g], offcore[g]), end_s);
}

double PowerManager::core_scale(const KernelRun* run) const {
  const auto it = account_of_.find(run);
  if (it == account_of_.end()) return 1;
  const Account& a = accounts_[it->second];
  return a.core_seen > 0 ? a.core_scaled / a.core_seen : gpus_[static_cast<size_t>(a.gpu)].governor.core_scale();
}

}  // namespace xpusim::engine
