// NCCL's CollNet over switches that reduce (InfiniBand SHARP): each GPU's part of a slice goes
// once through its NIC to its leaf and comes back reduced over every domain (hierarchical.h).
#include <algorithm>
#include <map>

#include "models/interconnect/hierarchical.h"

namespace xpusim {
namespace {

class Collnet : public Algorithm {
 public:
  CollectiveAlgo id() const override { return CollectiveAlgo::collnet; }
  std::string unsupported(const Topology& f, const CollectiveJob& job) const override {
    if (std::string why = hierarchical_refusal(id(), f, job); !why.empty()) return why;
    if (!f.sharp()) return "algorithm collnet needs switches that reduce in the network (network.sharp: true)";
    return "";
  }
  bool simple_only() const override { return true; }
  double estimate_s(const Topology& f, const CollectiveParams& p, const CollectiveJob& job,
                    CollectiveProto q) const override {
    const auto doms = by_domain(f, job.gpus);
    if (doms.size() < 2) return protocol(p, q).base_s;
    const size_t m = doms.front().size();
    const double part = job.bytes / static_cast<double>(m);
    // Per leaf, the parts that climb to the spine through it (one per GPU index whose GPUs
    // span leaves), each once whatever the domains below.
    std::map<int, int> climbing;
    for (size_t i = 0; i < m; ++i) {
      std::map<int, int> leaves;
      for (const auto& d : doms) leaves[f.leaf_of(d[i])] = 1;
      if (leaves.size() > 1)
        for (const auto& [l, one] : leaves) climbing[l] += one;
    }
    double spine = 0;
    for (const auto& [l, k] : climbing) spine = std::max(spine, k * part / f.uplink_rate());
    const double lat = f.nic_latency() + (climbing.empty() ? 0 : f.spine_latency());
    return start_s(f, p, job, q, 0) - p.launch_s + lat +
           std::max({domain_phases_s(f, job, static_cast<int>(m)), part / f.nic_rate(), spine});
  }
  double start_s(const Topology& f, const CollectiveParams& p, const CollectiveJob& job, CollectiveProto,
                 double now) const override {
    return now + p.launch_s + (nvls_inside(f, by_domain(f, job.gpus)) ? p.nvls_latency_s : 0) + p.sharp_latency_s;
  }
  double run(Fabric& f, const CollectiveParams&, const Wire& w, const CollectiveJob& job, double now, double start,
             CollectiveRun& run) const override {
    const Topology& t = f.topo();
    const auto doms = by_domain(t, job.gpus);
    const size_t D = doms.size(), m = doms.front().size();
    const Slicing sl = slicing(w.over(1), job.bytes);
    const double part = sl.bytes / static_cast<double>(m);
    const double half_way = t.nic_latency() / 2, switch_hop = t.network_switch_latency();
    run.slices = sl.slices;
    run.slice_bytes = sl.bytes;
    run.channels = static_cast<int>(m);
    bool climbed = false;
    const double end = run_two_level(f, w, doms, sl, now, start, run, [&](const DomainParts& ready, DomainParts& done) {
      for (size_t i = 0; i < m; ++i) {
        // Every domain's GPU i sends its part to its leaf, which reduces them as they arrive.
        std::map<int, double> at_leaf;
        for (size_t d = 0; d < D; ++d) {
          const int g = doms[d][i];
          double& l = at_leaf[t.leaf_of(g)];
          l = std::max(l, f.nic_up(now, ready[d][i], g, part, run.traffic) + half_way);
        }
        // Leaves of one GPU index in several groups reduce again at the spine.
        if (at_leaf.size() > 1) {
          climbed = true;
          double top = 0;
          for (const auto& [l, at] : at_leaf) top = std::max(top, f.leaf_up(now, at, l, part, run.traffic) + switch_hop);
          for (auto& [l, at] : at_leaf) at = f.leaf_down(now, top, l, part, run.traffic) + switch_hop;
          run.transfers += static_cast<double>(2 * at_leaf.size());
        }
        for (size_t d = 0; d < D; ++d) {
          const int g = doms[d][i];
          done[d][i] = f.nic_down(now, at_leaf[t.leaf_of(g)], g, part, run.traffic) + half_way;
        }
        run.transfers += static_cast<double>(2 * D);
      }
    });
    run.steps = (m > 1 ? 4 : 0) + (climbed ? 4 : 2);  // in the domain up and down twice; to the leaf (and spine) and back
    return end;
  }
  // NCCL's CollNet kernels run on its NVLS channels where the domain has NVLS, else on a
  // tree's channels (CollNet Direct).
  CollectiveCtas ctas(const Topology& f, const CollectiveParams& p, const CollectiveJob& job, CollectiveProto q) const override {
    return nvls_inside(f, by_domain(f, job.gpus)) ? nccl_kernel(p.nvls_channels, 640)
                                                  : nccl_ctas(p, job, CollectiveAlgo::tree, q);
  }
};

}  // namespace

const Algorithm& collnet_algorithm() {
  static const Collnet a;
  return a;
}

}  // namespace xpusim
