// NCCL's NVLSTree: NVLink SHARP inside each domain, a double binary tree between the domains
// (hierarchical.h).
#include <algorithm>
#include <cmath>

#include "models/interconnect/hierarchical.h"

namespace xpusim {
namespace {

class NvlsTree : public Algorithm {
 public:
  CollectiveAlgo id() const override { return CollectiveAlgo::nvls_tree; }
  std::string unsupported(const Topology& f, const CollectiveJob& job) const override {
    if (std::string why = hierarchical_refusal(id(), f, job); !why.empty()) return why;
    if (!f.nvls()) return "algorithm nvls_tree needs NVSwitch chips with in-switch reduction (nvswitch.reduction: true)";
    if (by_domain(f, job.gpus).front().size() < 2)
      return "algorithm nvls_tree needs at least two of its devices in each NVLink domain (with one, use tree)";
    return "";
  }
  bool simple_only() const override { return true; }
  double estimate_s(const Topology& f, const CollectiveParams& p, const CollectiveJob& job,
                    CollectiveProto q) const override {
    const auto doms = by_domain(f, job.gpus);
    if (doms.size() < 2) return protocol(p, q).base_s;
    const double d = static_cast<double>(doms.size()), m = static_cast<double>(doms.front().size());
    const double lat = f.latency(doms[0][0], doms[1][0]) + protocol(p, q).hop_s;
    // Per NIC and direction: the part once between two domains, twice over a double tree (each
    // GPU an inner node of one tree, a leaf of the other).
    const double inter = (d > 2 ? 2 : 1) * job.bytes / m / f.nic_rate();
    return p.nvls_latency_s + 2 * std::ceil(std::log2(d)) * lat + std::max(domain_phases_s(f, job, doms.front().size()), inter);
  }
  double start_s(const Topology&, const CollectiveParams& p, const CollectiveJob&, CollectiveProto,
                 double now) const override {
    return now + p.launch_s + p.nvls_latency_s;
  }
  double run(Fabric& f, const CollectiveParams&, const Wire& w, const CollectiveJob& job, double now, double start,
             CollectiveRun& run) const override {
    const auto doms = by_domain(f.topo(), job.gpus);
    const int D = static_cast<int>(doms.size());
    const size_t m = doms.front().size();
    const Slicing sl = slicing(w.over(1), job.bytes);
    const int trees = D > 2 ? 2 : 1;
    std::vector<std::vector<int>> parents, post;
    int depth = 0;
    for (int tr = 0; tr < trees; ++tr) {
      parents.push_back(nccl_tree_parents(D, tr));
      post.push_back(children_first(parents.back()));
      depth = std::max(depth, tree_height(parents.back()));
    }
    run.slices = sl.slices;
    run.slice_bytes = sl.bytes;
    run.channels = static_cast<int>(m) * trees;
    run.steps = 4 + 2 * depth;  // reduce-scatter (up, down), the tree up and down, all-gather (up, down)
    const double half = sl.bytes / static_cast<double>(m) / trees;
    std::vector<double> r(static_cast<size_t>(D)), have(static_cast<size_t>(D));
    return run_two_level(f, w, doms, sl, now, start, run, [&](const DomainParts& ready, DomainParts& done) {
      for (size_t i = 0; i < m; ++i)
        for (int tr = 0; tr < trees; ++tr) {
          // Tree tr's node d is domain d; its GPU i carries the part.
          const std::vector<int>& par = parents[static_cast<size_t>(tr)];
          const std::vector<int>& order = post[static_cast<size_t>(tr)];
          auto gpu = [&](int d) { return doms[static_cast<size_t>(d)][i]; };
          int root = 0;
          for (int d = 0; d < D; ++d) {
            r[static_cast<size_t>(d)] = ready[static_cast<size_t>(d)][i];
            if (par[static_cast<size_t>(d)] < 0) root = d;
          }
          for (int node : order) {  // children before parents
            const int up = par[static_cast<size_t>(node)];
            if (up < 0) continue;
            const double t = f.send(now, r[static_cast<size_t>(node)], gpu(node), gpu(up), w.carried(half), run.traffic) + w.hop_s;
            r[static_cast<size_t>(up)] = std::max(r[static_cast<size_t>(up)], t);
            run.transfers += 1;
          }
          have[static_cast<size_t>(root)] = r[static_cast<size_t>(root)];
          for (auto it = order.rbegin(); it != order.rend(); ++it) {  // parents before children
            const int node = *it, up = par[static_cast<size_t>(node)];
            if (up < 0) continue;
            have[static_cast<size_t>(node)] =
                f.send(now, have[static_cast<size_t>(up)], gpu(up), gpu(node), w.carried(half), run.traffic) + w.hop_s;
            run.transfers += 1;
          }
          for (int d = 0; d < D; ++d)
            done[static_cast<size_t>(d)][i] = std::max(done[static_cast<size_t>(d)][i], have[static_cast<size_t>(d)]);
        }
    });
  }
  CollectiveCtas ctas(const Topology&, const CollectiveParams& p, const CollectiveJob&, CollectiveProto) const override {
    return nccl_kernel(p.nvls_channels, 640);
  }
};

}  // namespace

const Algorithm& nvls_tree_algorithm() {
  static const NvlsTree a;
  return a;
}

}  // namespace xpusim
