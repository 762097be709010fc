#pragma once
// The links between GPUs: in each NVLink domain every GPU's NVLink ports lead to the domain's
// NVSwitch chips, which are non-blocking (any port reaches any port at full rate); between
// domains each GPU has a NIC. Each GPU's working NVLink ports are ganged into one pipe per
// direction (NCCL spreads every transfer over all links, one channel per link group), and each
// NIC is a pipe per direction; pipes are `LinkPipe` calendars, so transfers of
// concurrent collectives queue behind one another. Collective algorithms (collective.h) are
// written as transfers over this fabric.
#include <utility>
#include <vector>

#include "models/common/bandwidth_resource.h"
#include "models/common/stats.h"
#include "models/common/systemc.h"
#include "models/interconnect/interconnect_params.h"

namespace xpusim {

// Bytes per GPU (or per leaf): a slot per index while a collective books its transfers, then
// only the indices with bytes (compact()). A run keeps every collective's result, and one over
// GPUs thousands apart (a data-parallel group of a 16,384-GPU system) would otherwise hold a
// slot for every GPU below its last.
class PerIndex {
 public:
  void add(int i, double bytes) {
    if (dense_.size() <= static_cast<size_t>(i)) dense_.resize(static_cast<size_t>(i) + 1, 0.0);
    dense_[static_cast<size_t>(i)] += bytes;
  }
  void compact() {
    for (size_t i = 0; i < dense_.size(); ++i)
      if (dense_[i] != 0) entries_.emplace_back(static_cast<int>(i), dense_[i]);
    std::vector<double>().swap(dense_);
  }
  // f(index, bytes) for each index with bytes, in increasing order (and, before compact(), for
  // each index below the last with its zeros).
  template <class F>
  void for_each(F&& f) const {
    for (size_t i = 0; i < dense_.size(); ++i) f(static_cast<int>(i), dense_[i]);
    for (const auto& [i, b] : entries_) f(i, b);
  }

 private:
  std::vector<double> dense_;
  std::vector<std::pair<int, double>> entries_;
};

// What one collective put on the wires.
struct Traffic {
  double nvlink_bytes = 0;  // payload bytes x NVLink hops (GPU -> switch and switch -> GPU are two hops)
  double nic_bytes = 0;     // payload bytes sent through NICs
  // Per GPU: payload through its NVLink ports and its NIC, each direction.
  PerIndex nvlink_tx, nvlink_rx, nic_tx, nic_rx;
  PerIndex leaf_up, leaf_down;  // per leaf: payload through its links to and from the spine (fat_tree)
  void compact() {
    for (PerIndex* v : {&nvlink_tx, &nvlink_rx, &nic_tx, &nic_rx, &leaf_up, &leaf_down}) v->compact();
  }
};

// Who reaches whom, how fast and how late: the system's structure without its calendars, so
// that a trace can be checked against a system before anything is simulated.
class Topology {
 public:
  Topology(const SystemParams& sys, const NvlinkParams& link, const NvswitchParams& sw, const NicParams& nic,
           const NetworkParams& net = NetworkParams());

  int gpus() const { return sys_.gpus(); }
  int domain_of(int gpu) const { return gpu / sys_.gpus_per_domain; }
  int working_links(int gpu) const { return working_[static_cast<size_t>(gpu)]; }
  // Payload bandwidth per direction of a GPU's working NVLink ports, and of a NIC.
  double nvlink_rate(int gpu) const { return working_links(gpu) * link_.link_bandwidth * link_.efficiency; }
  double nic_rate() const { return nic_.bandwidth * nic_.efficiency; }
  // One-way latency of a transfer's first byte from src to dst.
  double latency(int src, int dst) const;
  bool reachable(int src, int dst) const;
  bool nvls() const { return sw_.reduction && sw_.count > 0; }
  double link_latency() const { return link_.latency_s; }
  double switch_latency() const { return sw_.latency_s; }
  double nvls_efficiency() const { return sw_.nvls_efficiency; }
  double nic_latency() const { return nic_.latency_s; }

  // The network between domains (fat_tree; a non-blocking network is one leaf that all NICs share).
  bool fat_tree() const { return fat_tree_; }
  int rails() const { return rails_; }
  int rail_of(int gpu) const { return (gpu % sys_.gpus_per_domain) % rails_; }
  int leaf_of(int gpu) const;
  int leaves() const;
  // The payload rate of a leaf's uplinks to the spine, per direction.
  double uplink_rate() const;
  // The GPU whose NIC sends from src to dst in another domain: the sender, or with PXN the
  // sender's domain's GPU on the receiver's rail; and whether the send climbs to the spine.
  int nic_gpu(int src, int dst) const;
  bool through_spine(int src, int dst) const { return leaf_of(nic_gpu(src, dst)) != leaf_of(dst); }
  double spine_latency() const { return 2 * net_.switch_latency_s; }
  double network_switch_latency() const { return net_.switch_latency_s; }
  bool sharp() const { return net_.sharp && nic_rate() > 0; }

 private:
  SystemParams sys_;
  NvlinkParams link_;
  NvswitchParams sw_;
  NicParams nic_;
  NetworkParams net_;
  bool fat_tree_ = false;  // net_.fat_tree(), and its leaves per group, once
  int rails_ = 1;
  std::vector<int> working_;
};

class Fabric : public sc_core::sc_module {
 public:
  Fabric(sc_core::sc_module_name name, const Topology& topo, StatRegistry& stats);
  const Topology& topo() const { return topo_; }

  // Moves `bytes` from GPU src to dst, starting no earlier than `ready` (>= now); returns when the
  // last byte has landed. Within a domain: src's ports -> switch -> dst's ports, cut through;
  // between domains: src's NIC -> network -> dst's NIC. Both must be reachable().
  double send(double now, double ready, int src, int dst, double bytes, Traffic& t);

  // A send that streams: its first byte may leave at `first` and its last once `last` has
  // come (NCCL's LL and LL128 forward each line as its flag lands). Within a domain it returns
  // when its first and last bytes land; between domains it leaves at `last` (the network's
  // proxies post whole steps) and lands whole.
  struct Landing {
    double first = 0, last = 0;
  };
  Landing stream(double now, double first, double last, int src, int dst, double bytes, Traffic& t);

  // In-switch collectives (NVLS): a GPU's ports towards the switches (up) and back (down). The
  // switches in between reduce (loads) or multicast (stores); the caller adds their latency.
  // Bytes are payload, carried at nvswitch.nvls_efficiency of the links' payload rate.
  double up(double now, double ready, int gpu, double bytes, Traffic& t);
  double down(double now, double ready, int gpu, double bytes, Traffic& t);

  // A GPU's NIC towards its leaf switch and back, and a leaf's uplinks towards the spine and
  // back: the hops of a send between domains, and of in-network reduction (SHARP). Each returns
  // when its pipe has carried the bytes; the caller adds the latencies between them.
  double nic_up(double now, double ready, int gpu, double bytes, Traffic& t);
  double nic_down(double now, double ready, int gpu, double bytes, Traffic& t);
  double leaf_up(double now, double ready, int leaf, double bytes, Traffic& t);
  double leaf_down(double now, double ready, int leaf, double bytes, Traffic& t);

 private:
  // One hop of an in-switch collective on `pipe` (a GPU's up or down ports).
  double nvls_hop(LinkPipe& pipe, PerIndex& per_gpu, Stat* stat, double now, double ready, int gpu, double bytes,
                  Traffic& t);

  // A send between domains from the NIC of GPU `via`: NIC, leaf uplink and downlink where it
  // climbs to the spine, NIC.
  double send_network(double now, double ready, int via, int dst, double bytes, Traffic& t);

  Topology topo_;
  std::vector<LinkPipe> up_, down_, nic_tx_, nic_rx_, leaf_up_, leaf_down_;
  struct LeafStats {
    Stat* up;
    Stat* down;
  };
  std::vector<LeafStats> leaf_stats_;
  struct GpuStats {
    Stat* nvlink_tx;
    Stat* nvlink_rx;
    Stat* nic_tx;
    Stat* nic_rx;
  };
  std::vector<GpuStats> stats_;
};

}  // namespace xpusim
