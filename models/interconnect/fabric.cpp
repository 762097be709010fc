#include "models/interconnect/fabric.h"

#include <algorithm>
#include <cassert>
#include <string>

namespace xpusim {

Topology::Topology(const SystemParams& sys, const NvlinkParams& link, const NvswitchParams& sw, const NicParams& nic,
                   const NetworkParams& net)
    : sys_(sys), link_(link), sw_(sw), nic_(nic), net_(net), fat_tree_(net.fat_tree()) {
  if (fat_tree_) rails_ = net_.rails > 0 ? net_.rails : sys_.gpus_per_domain;
  assert(sys_.gpus_per_domain % rails_ == 0);  // the config layer refuses rails that do not divide a domain
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
  const double nvlink = 2 * link_.latency_s + sw_.latency_s;
  if (domain_of(src) == domain_of(dst)) return nvlink;
  const int via = nic_gpu(src, dst);
  return (via != src ? nvlink : 0) + nic_.latency_s + (through_spine(src, dst) ? spine_latency() : 0);
}

int Topology::leaf_of(int gpu) const {
  if (!fat_tree_) return 0;
  return domain_of(gpu) / net_.domains_per_leaf * rails() + rail_of(gpu);
}

int Topology::leaves() const {
  if (!fat_tree_) return 1;
  return (sys_.domains + net_.domains_per_leaf - 1) / net_.domains_per_leaf * rails();
}

double Topology::uplink_rate() const {
  const double nics = static_cast<double>(net_.domains_per_leaf) * (sys_.gpus_per_domain / rails());
  return nics * nic_rate() / net_.oversubscription;
}

int Topology::nic_gpu(int src, int dst) const {
  if (!fat_tree_ || !net_.pxn || domain_of(src) == domain_of(dst) || rail_of(src) == rail_of(dst)) return src;
  // The GPU of the sender's domain on the receiver's rail, among the sender's own group of rails.
  const int local = src % sys_.gpus_per_domain;
  const int via = src - local + local / rails() * rails() + rail_of(dst);
  return working_links(src) > 0 && working_links(via) > 0 ? via : src;
}

Fabric::Fabric(sc_core::sc_module_name name, const Topology& topo, StatRegistry& stats) : sc_module(name), topo_(topo) {
  const std::string base = this->name();
  if (topo_.fat_tree())
    for (int l = 0; l < topo_.leaves(); ++l) {
      leaf_up_.emplace_back(topo_.uplink_rate());
      leaf_down_.emplace_back(topo_.uplink_rate());
      const std::string p = base + ".leaf" + std::to_string(l);
      leaf_stats_.push_back(LeafStats{&stats.add(p + ".spine_tx_bytes", "bytes", "payload the leaf sent up to the spine"),
                                      &stats.add(p + ".spine_rx_bytes", "bytes", "payload the leaf received from the spine")});
    }
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

double Fabric::send_network(double now, double ready, int via, int dst, double bytes, Traffic& t) {
  const double tx_end = nic_up(now, ready, via, bytes, t);
  double head = tx_end - bytes / nic_tx_[static_cast<size_t>(via)].rate();  // when the first byte leaves the pipe last booked
  double tail = tx_end;
  if (topo_.leaf_of(via) != topo_.leaf_of(dst)) {
    // Through the spine: the sender's leaf's uplinks, then the spine and the receiver's leaf (two
    // more switches) and that leaf's downlinks, cut through.
    const int lu = topo_.leaf_of(via), ld = topo_.leaf_of(dst);
    const double up_end = leaf_up(now, head, lu, bytes, t);
    const double up_start = up_end - bytes / leaf_up_[static_cast<size_t>(lu)].rate();
    const double down_end = leaf_down(now, up_start + topo_.spine_latency(), ld, bytes, t);
    head = down_end - bytes / leaf_down_[static_cast<size_t>(ld)].rate();
    tail = std::max(tail + topo_.spine_latency(), down_end);
  }
  const double rx_end = nic_down(now, head + topo_.nic_latency(), dst, bytes, t);
  return std::max(rx_end, tail + topo_.nic_latency());
}

double Fabric::send(double now, double ready, int src, int dst, double bytes, Traffic& t) {
  return stream(now, ready, ready, src, dst, bytes, t).last;
}

Fabric::Landing Fabric::stream(double now, double first, double last, int src, int dst, double bytes, Traffic& t) {
  assert(topo_.reachable(src, dst));
  if (src == dst || bytes <= 0) return {first, last};
  const size_t s = static_cast<size_t>(src), d = static_cast<size_t>(dst);
  if (topo_.domain_of(src) != topo_.domain_of(dst)) {
    // PXN: to the GPU on the receiver's rail over NVLink first, then out of its NIC.
    const int via = topo_.nic_gpu(src, dst);
    const double at_nic = via == src ? last : send(now, last, src, via, bytes, t);
    const double landed = send_network(now, at_nic, via, dst, bytes, t);
    return {landed, landed};
  }
  // Cut-through: the switch forwards bytes as they arrive, so the destination's ports carry the
  // transfer one link-and-switch latency behind the source's; the last byte leaves no earlier
  // than it came.
  const double up_booked = up_[s].reserve(now, first, bytes);
  const double up_start = up_booked - bytes / up_[s].rate();
  const double up_end = std::max(up_booked, last);
  const double hop = topo_.link_latency() + topo_.switch_latency();
  const double down_booked = down_[d].reserve(now, up_start + hop, bytes);
  t.nvlink_bytes += 2 * bytes;
  t.nvlink_tx.add(src, bytes);
  t.nvlink_rx.add(dst, bytes);
  stats_[s].nvlink_tx->value += bytes;
  stats_[d].nvlink_rx->value += bytes;
  return {down_booked - bytes / down_[d].rate() + topo_.link_latency(),
          std::max(down_booked, up_end + hop) + topo_.link_latency()};
}

double Fabric::nvls_hop(LinkPipe& pipe, PerIndex& per_gpu, Stat* stat, double now, double ready, int gpu,
                        double bytes, Traffic& t) {
  t.nvlink_bytes += bytes;
  per_gpu.add(gpu, bytes);
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

double Fabric::nic_up(double now, double ready, int gpu, double bytes, Traffic& t) {
  const size_t g = static_cast<size_t>(gpu);
  t.nic_bytes += bytes;
  t.nic_tx.add(gpu, bytes);
  stats_[g].nic_tx->value += bytes;
  return nic_tx_[g].reserve(now, ready, bytes);
}

double Fabric::nic_down(double now, double ready, int gpu, double bytes, Traffic& t) {
  const size_t g = static_cast<size_t>(gpu);
  t.nic_rx.add(gpu, bytes);
  stats_[g].nic_rx->value += bytes;
  return nic_rx_[g].reserve(now, ready, bytes);
}

double Fabric::leaf_up(double now, double ready, int leaf, double bytes, Traffic& t) {
  t.leaf_up.add(leaf, bytes);
  leaf_stats_[static_cast<size_t>(leaf)].up->value += bytes;
  return leaf_up_[static_cast<size_t>(leaf)].reserve(now, ready, bytes);
}

double Fabric::leaf_down(double now, double ready, int leaf, double bytes, Traffic& t) {
  t.leaf_down.add(leaf, bytes);
  leaf_stats_[static_cast<size_t>(leaf)].down->value += bytes;
  return leaf_down_[static_cast<size_t>(leaf)].reserve(now, ready, bytes);
}

}  // namespace xpusim
