#include "models/interconnect/fabric.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace xpusim {

Topology::Topology(const SystemParams& sys, const NvlinkParams& link, const NvswitchParams& sw, const NicParams& nic)
    : sys_(sys), link_(link), sw_(sw), nic_(nic) {
  working_.assign(static_cast<size_t>(sys_.gpus()), link_.links);
  for (const auto& [gpu, l] : sys_.failed_links) --working_[static_cast<size_t>(gpu)];
}

bool Topology::reachable(int src, int dst) const {
  if (src == dst) return true;
  if (domain_of(src) != domain_of(dst)) return nic_rate() > 0;
  return working_links(src) > 0 && working_links(dst) > 0;
}

double Topology::latency(int src, int dst) const {
  if (src == dst) return 0;
  if (domain_of(src) != domain_of(dst)) return nic_.latency_s;
  return 2 * link_.latency_s + sw_.latency_s;
}

Fabric::Fabric(sc_core::sc_module_name name, const Topology& topo, StatRegistry& stats) : sc_module(name), topo_(topo) {
  const std::string base = this->name();
  for (int g = 0; g < topo_.gpus(); ++g) {
    const double rate = topo_.nvlink_rate(g);
    up_.emplace_back(rate > 0 ? rate : 1);  // a GPU without ports is never sent to (reachable())
    down_.emplace_back(rate > 0 ? rate : 1);
    nic_tx_.emplace_back(topo_.nic_rate());
    nic_rx_.emplace_back(topo_.nic_rate());
    const std::string p = base + ".gpu" + std::to_string(g);
    stats_.push_back(GpuStats{&stats.add(p + ".nvlink_tx_bytes", "bytes", "payload sent on the GPU's NVLink ports"),
                              &stats.add(p + ".nvlink_rx_bytes", "bytes", "payload received on the GPU's NVLink ports"),
                              &stats.add(p + ".nic_tx_bytes", "bytes", "payload sent through the GPU's NIC"),
                              &stats.add(p + ".nic_rx_bytes", "bytes", "payload received through the GPU's NIC")});
  }
}

double Fabric::send(double now, double ready, int src, int dst, double bytes, Traffic& t) {
  assert(topo_.reachable(src, dst));
  if (src == dst || bytes <= 0) return ready;
  const size_t s = static_cast<size_t>(src), d = static_cast<size_t>(dst);
  if (topo_.domain_of(src) != topo_.domain_of(dst)) {
    const double tx_end = nic_tx_[s].reserve(now, ready, bytes);
    const double tx_start = tx_end - bytes / nic_tx_[s].rate();
    const double rx_end = nic_rx_[d].reserve(now, tx_start + topo_.nic_latency(), bytes);
    t.nic_bytes += bytes;
    t.add(t.nic_tx, src, bytes);
    t.add(t.nic_rx, dst, bytes);
    stats_[s].nic_tx->value += bytes;
    stats_[d].nic_rx->value += bytes;
    return std::max(rx_end, tx_end + topo_.nic_latency());
  }
  // Cut-through: the switch forwards bytes as they arrive, so the destination's ports carry the
  // transfer one link-and-switch latency behind the source's.
  const double up_end = up_[s].reserve(now, ready, bytes);
  const double up_start = up_end - bytes / up_[s].rate();
  const double hop = topo_.link_latency() + topo_.switch_latency();
  const double down_end = down_[d].reserve(now, up_start + hop, bytes);
  t.nvlink_bytes += 2 * bytes;
  t.add(t.nvlink_tx, src, bytes);
  t.add(t.nvlink_rx, dst, bytes);
  stats_[s].nvlink_tx->value += bytes;
  stats_[d].nvlink_rx->value += bytes;
  return std::max(down_end, up_end + hop) + topo_.link_latency();
}

double Fabric::nvls_hop(BandwidthResource& pipe, std::vector<double>& per_gpu, Stat* stat, double now, double ready,
                        int gpu, double bytes, Traffic& t) {
  t.nvlink_bytes += bytes;
  t.add(per_gpu, gpu, bytes);
  stat->value += bytes;
  return pipe.reserve(now, ready, bytes / topo_.nvls_efficiency());
}

double Fabric::up(double now, double ready, int gpu, double bytes, Traffic& t) {
  const size_t g = static_cast<size_t>(gpu);
  return nvls_hop(up_[g], t.nvlink_tx, stats_[g].nvlink_tx, now, ready, gpu, bytes, t);
}

double Fabric::down(double now, double ready, int gpu, double bytes, Traffic& t) {
  const size_t g = static_cast<size_t>(gpu);
  return nvls_hop(down_[g], t.nvlink_rx, stats_[g].nvlink_rx, now, ready, gpu, bytes, t);
}

}  // namespace xpusim
