#include "sim/engine/gpu_system.h"

#include <algorithm>

namespace xpusim::engine {

AddressMap GpuSystem::address_map(const config::GpuConfig& cfg) {
  return AddressMap(static_cast<uint64_t>(cfg.hbm.interleave_bytes), static_cast<uint32_t>(cfg.hbm.channel_count()),
                    static_cast<uint32_t>(cfg.l2.slices), static_cast<uint32_t>(cfg.noc.dies));
}

GpuSystem::GpuSystem(sc_core::sc_module_name name, const config::GpuConfig& cfg, StatRegistry& stats)
    : sc_module(name),
      registry_(stats),
      first_stat_(stats.all().size()),
      sm_stats_(SmStats::make(stats, std::string(this->name()) + ".sm")),
      clock_(cfg.power.capped() ? cfg.power.boost_clock_hz : cfg.sm.clock_hz),
      l2_size_(cfg.l2.size_bytes) {
  const double clk = cfg.sm.clock_hz;
  const AddressMap map = address_map(cfg);
  noc_ = std::make_unique<Crossbar>("noc", cfg.noc, cfg.sm.count, clk, map, stats);
  l2_ = std::make_unique<L2Cache>("l2", cfg.l2, map, clk, stats);
  hbm_ = std::make_unique<Hbm>("hbm", cfg.hbm, map, stats);
  std::vector<Sm*> raw;
  for (int i = 0; i < cfg.sm.count; ++i) {
    sms_.push_back(std::make_unique<Sm>(("sm" + std::to_string(i)).c_str(), i, cfg.sm, cfg.tensor_core, clock_, sm_stats_,
                                        cfg.noc.port_bytes_per_cycle));
    sms_.back()->mem.bind(noc_->sm_side);
    raw.push_back(sms_.back().get());
  }
  noc_->l2_side.bind(l2_->socket);
  l2_->mem.bind(hbm_->socket);
  dispatcher_ = std::make_unique<CtaDispatcher>("dispatcher", raw);
  dispatcher_->set_launch_interval(cfg.sm.cta_launch_interval_s);
  end_stat_ = stats.all().size();
}

void GpuSystem::enable_fast_path(const FastPathParams& p, MemoTable* memo) {
  std::vector<Stat*> own;
  for (size_t i = first_stat_; i < end_stat_; ++i) own.push_back(&registry_.at(i));
  // A replay's evictions were counted, not simulated: the L2's oldest dirty lines it would have
  // written back are clean afterwards, or the next kernel would write them back again.
  size_t wb = own.size();
  for (size_t i = 0; i < own.size(); ++i)
    if (own[i] == &l2_->writeback_stat()) wb = i;
  // Settled in batches of a sixteenth of the L2 (each takes a pass over its tags), and at the
  // end of every kernel that left work out.
  if (wb < own.size())
    dispatcher_->on_replayed = [this, wb, batch = l2_size_ / 16](const std::vector<double>& d, bool flush) {
      if (wb < d.size()) settle_ += d[wb];
      if (settle_ > 0 && (flush || settle_ >= batch)) {
        l2_->settle_writebacks(settle_);
        settle_ = 0;
      }
      if (flush) settle_ = std::max(0.0, settle_);  // a placement's evictions beyond the replay's own
    };
  // A reused kernel's output is placed in the L2, dirty, as running it would have left it (the
  // next kernel writes it back when it evicts it). What the placement evicts dirty is part of
  // the reused kernel's counted write-backs: that much less to settle. A large output (more
  // than a 64th of the L2) is placed as dirty data on the youngest lines instead, line by line
  // lookups costing too much: no op reads another's output by address (each op's tensors are
  // allocated anew), so only its amount matters.
  dispatcher_->on_reuse = [this](const KernelProgram& prog) {
    std::vector<Strided> out;
    prog.written(l2_size_, out);
    const double bytes = static_cast<double>(total_bytes(out));
    settle_ -= bytes <= l2_size_ / 64 ? l2_->place(out, true) : l2_->place_dirty(std::min(bytes, l2_size_));
  };
  dispatcher_->enable_fast_path(p, memo, &clock_, std::move(own));
}

}  // namespace xpusim::engine
