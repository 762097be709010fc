#pragma once
// Wires one GPU from its config: SMs -> crossbar -> L2 -> HBM over TLM-2.0 sockets, and the CTA
// dispatcher over the SMs.
#include <memory>
#include <vector>

#include "models/common/clock_domain.h"
#include "models/common/stats.h"
#include "models/memory/crossbar.h"
#include "models/memory/hbm.h"
#include "models/memory/l2_cache.h"
#include "models/sm/cta_dispatcher.h"
#include "models/sm/sm.h"
#include "sim/config/chip_config.h"

namespace xpusim::engine {

class GpuSystem : public sc_core::sc_module {
 public:
  GpuSystem(sc_core::sc_module_name name, const config::GpuConfig& cfg, StatRegistry& stats);

  CtaDispatcher& dispatcher() { return *dispatcher_; }
  ClockDomain& clock() { return clock_; }
  void finalize(double end_s) { hbm_->finalize(end_s); }
  static AddressMap address_map(const config::GpuConfig& cfg);
  // The fast fidelity (models/sm/fast_path.h) on this GPU's dispatcher.
  void enable_fast_path(const FastPathParams& p, MemoTable* memo);
  size_t stat_count() const { return end_stat_ - first_stat_; }  // statistics a replay's segment carries

 private:
  StatRegistry& registry_;
  size_t first_stat_;  // this GPU's statistics are the registry's from here to the end of construction
  size_t end_stat_ = 0;
  SmStats sm_stats_;
  ClockDomain clock_;  // the SMs' clock: sm.clock, or the governor's choice (power.mode: capped)
  double l2_size_;     // bytes: the batch in which work left out settles the L2's dirty lines
  double settle_ = 0;  // bytes of dirty data that work left out wrote back, not yet settled
  std::vector<std::unique_ptr<Sm>> sms_;
  std::unique_ptr<Crossbar> noc_;
  std::unique_ptr<L2Cache> l2_;
  std::unique_ptr<Hbm> hbm_;
  std::unique_ptr<CtaDispatcher> dispatcher_;
};

}  // namespace xpusim::engine
