// NCCL's double binary tree: each slice reduced up to the root, children before parents, and
// broadcast back down.
#include <algorithm>
#include <cmath>

#include "models/interconnect/hierarchical.h"

namespace xpusim {

namespace {

// NCCL's binary tree (ncclGetBtree): rank 0 is the root with one child; a rank's lowest set bit
// places it.
int btree_parent(int n, int rank) {
  if (rank == 0) return -1;
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  const int up = (rank ^ bit) | (bit << 1);
  return up >= n ? rank ^ bit : up;
}

}  // namespace

std::vector<int> nccl_tree_parents(int n, int which) {
  std::vector<int> parents(static_cast<size_t>(n), -1);
  for (int r = 0; r < n; ++r) {
    if (which == 0) {
      parents[static_cast<size_t>(r)] = btree_parent(n, r);
    } else if (n % 2 == 1) {  // shifted by one
      const int u = btree_parent(n, (r - 1 + n) % n);
      parents[static_cast<size_t>(r)] = u < 0 ? -1 : (u + 1) % n;
    } else {  // mirrored
      const int u = btree_parent(n, n - 1 - r);
      parents[static_cast<size_t>(r)] = u < 0 ? -1 : n - 1 - u;
    }
  }
  return parents;
}

namespace {
int depth_of(const std::vector<int>& parents, int node) {
  int d = 0;
  for (int x = node; parents[static_cast<size_t>(x)] >= 0; x = parents[static_cast<size_t>(x)]) ++d;
  return d;
}
}  // namespace

std::vector<int> children_first(const std::vector<int>& parents) {
  std::vector<int> order(parents.size());
  std::vector<int> depth(parents.size());
  for (size_t i = 0; i < parents.size(); ++i) {
    order[i] = static_cast<int>(i);
    depth[i] = depth_of(parents, static_cast<int>(i));
  }
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return depth[static_cast<size_t>(a)] > depth[static_cast<size_t>(b)]; });
  return order;
}

int tree_height(const std::vector<int>& parents) {
  int h = 0;
  for (size_t i = 0; i < parents.size(); ++i) h = std::max(h, depth_of(parents, static_cast<int>(i)));
  return h;
}

namespace {

// One tree of GPUs: each node's GPU and parent (-1 at the root), its nodes in post-order.
struct GpuTree {
  std::vector<int> gpu, parent, post;
  int root = 0;
};

// The trees a tree all-reduce runs, each carrying an equal share of the data. Within one
// domain: NCCL's double binary tree over the GPUs. Across domains (as many GPUs in each),
// NCCL's trees: one pair per GPU of a domain (a channel through its NIC), each a chain through
// the domain's GPUs from that GPU, whose head joins a double binary tree over the domains (so
// the trees between domains join GPUs of one rail). `depth`: the longest path to a root.
std::vector<GpuTree> trees_of(const Topology& f, const CollectiveJob& job, int& depth) {
  const auto doms = one_domain(f, job.gpus) ? std::vector<std::vector<int>>{} : by_domain(f, job.gpus);
  const int n = static_cast<int>(doms.empty() ? job.gpus.size() : doms.size());  // positions of the binary trees
  const int m = doms.empty() ? 1 : static_cast<int>(doms.front().size());       // chain length
  const int pairs = n > 2 ? 2 : 1;
  std::vector<std::vector<int>> parents;
  depth = 0;
  for (int tr = 0; tr < pairs; ++tr) {
    parents.push_back(nccl_tree_parents(n, tr));
    depth = std::max(depth, tree_height(parents.back()));
  }
  depth += m - 1;
  std::vector<GpuTree> out;
  for (int c = 0; c < m; ++c)
    for (int tr = 0; tr < pairs; ++tr) {
      const std::vector<int>& up = parents[static_cast<size_t>(tr)];
      GpuTree t;
      // Node p * m + k: the k-th GPU of the chain at position p.
      t.gpu.resize(static_cast<size_t>(n * m));
      t.parent.assign(static_cast<size_t>(n * m), -1);
      for (int p = 0; p < n; ++p) {
        const int u = up[static_cast<size_t>(p)];
        if (u < 0) t.root = p * m;
        for (int k = 0; k < m; ++k) {
          const size_t node = static_cast<size_t>(p * m + k);
          t.gpu[node] = doms.empty() ? job.gpus[static_cast<size_t>(p)]
                                     : doms[static_cast<size_t>(p)][static_cast<size_t>((c + k) % m)];
          t.parent[node] = k > 0 ? p * m + k - 1 : u < 0 ? -1 : u * m;
        }
      }
      for (int p : children_first(up))
        for (int k = m - 1; k >= 0; --k) t.post.push_back(p * m + k);
      out.push_back(std::move(t));
    }
  return out;
}

// Each slice of each tree is reduced up to the root, children before parents, and broadcast
// back down. With LL and LL128 a hop over NVLink streams: a node passes a slice's lines on as
// they come (and, reducing, as every child's have come), so a chain costs a hop's latency per
// GPU rather than a slice's time.
double run_tree(Fabric& f, const Wire& w, const CollectiveJob& job, double now, double start, CollectiveRun& run) {
  int depth = 0;
  const std::vector<GpuTree> ts = trees_of(f.topo(), job, depth);
  const int trees = static_cast<int>(ts.size());
  // Across domains each slice is one channel's step, as the network's proxies post them.
  const bool across = !one_domain(f.topo(), job.gpus);
  const Slicing sl = slicing(w.over(across ? 1 : w.channels / trees), job.bytes / trees);
  run.slices = sl.slices;
  run.slice_bytes = sl.bytes;
  run.channels = trees;
  run.steps = 2 * depth;
  const size_t N = ts.front().gpu.size();
  // One hop from a to b of data whose first and last bytes are at a by `first` and `last`;
  // returns when they are at b.
  auto hop = [&](double first, double last, int a, int b) -> Fabric::Landing {
    run.transfers += 1;
    if (!w.lines) {
      const double at = f.send(now, last, a, b, w.carried(sl.bytes), run.traffic) + w.hop_s;
      return {at, at};
    }
    const Fabric::Landing l = f.stream(now, first, last, a, b, w.carried(sl.bytes), run.traffic);
    return {l.first + w.hop_s, l.last + w.hop_s};
  };
  // reduced[(j * trees + tr) * N + node]: when every child's partial sum of slice j has landed
  // (its last byte; `head`, its first).
  std::vector<double> reduced(static_cast<size_t>(sl.slices * trees) * N, start), head(reduced);
  auto reduce = [&](int j) {
    for (int tr = 0; tr < trees; ++tr) {
      const GpuTree& t = ts[static_cast<size_t>(tr)];
      double* r = &reduced[static_cast<size_t>(j * trees + tr) * N];
      double* h = &head[static_cast<size_t>(j * trees + tr) * N];
      for (int node : t.post) {
        const int par = t.parent[static_cast<size_t>(node)];
        if (par < 0) continue;
        const Fabric::Landing at = hop(h[node], r[node], t.gpu[static_cast<size_t>(node)], t.gpu[static_cast<size_t>(par)]);
        r[par] = std::max(r[par], at.last);
        h[par] = std::max(h[par], at.first);
      }
    }
  };
  for (int j = 0; j < std::min(kWindow, sl.slices); ++j) reduce(j);
  double end = start;
  std::vector<double> have(N), have_head(N);
  for (int j = 0; j < sl.slices; ++j) {
    if (j + kWindow < sl.slices) reduce(j + kWindow);
    for (int tr = 0; tr < trees; ++tr) {
      const GpuTree& t = ts[static_cast<size_t>(tr)];
      const size_t at_root = static_cast<size_t>(j * trees + tr) * N + static_cast<size_t>(t.root);
      have[static_cast<size_t>(t.root)] = reduced[at_root];
      have_head[static_cast<size_t>(t.root)] = head[at_root];
      for (auto it = t.post.rbegin(); it != t.post.rend(); ++it) {  // parents before children
        const size_t node = static_cast<size_t>(*it);
        const int par = t.parent[node];
        if (par < 0) continue;
        const size_t p = static_cast<size_t>(par);
        const Fabric::Landing at = hop(have_head[p], have[p], t.gpu[p], t.gpu[node]);
        have[node] = at.last;
        have_head[node] = at.first;
      }
      end = std::max(end, *std::max_element(have.begin(), have.end()));
    }
  }
  return end;
}

class Tree : public Algorithm {
 public:
  CollectiveAlgo id() const override { return CollectiveAlgo::tree; }
  std::string unsupported(const Topology&, const CollectiveJob& job) const override {
    return kind_refusal(id(), job, true);
  }
  double estimate_s(const Topology& f, const CollectiveParams& p, const CollectiveJob& job,
                    CollectiveProto q) const override {
    const ProtocolParams pp = protocol(p, q);
    const int n = static_cast<int>(job.gpus.size());
    // NCCL's tuner weighs a tree's LL at 1/3.8 of Simple's bandwidth (src/graph/tuning.cc).
    double efficiency = pp.efficiency;
    if (q == CollectiveProto::ll) efficiency = std::min(efficiency, 1.0 / 3.8);
    const auto doms = one_domain(f, job.gpus) ? std::vector<std::vector<int>>{} : by_domain(f, job.gpus);
    if (doms.empty()) return hop_estimate_s(f, pp, job, 2 * std::ceil(std::log2(n)), job.bytes, efficiency);
    // Across domains: each domain's chain, up and down, then the trees between the domains. Each
    // GPU's NIC carries its channel's data once between two domains and twice over a double
    // tree; its NVLink ports carry every channel's data up and down its chains.
    const double d = static_cast<double>(doms.size()), m = static_cast<double>(doms.front().size());
    const double chain = m > 1 ? f.latency(doms[0][0], doms[0][1]) : 0;
    const double across = f.latency(doms[0][0], doms[1][0]);
    const double nvlink = slowest_nvlink_rate(f, job);
    const double busiest = std::max((d > 2 ? 2 : 1) * job.bytes / m / f.nic_rate(), m > 1 ? 2 * job.bytes / nvlink : 0);
    // A slice crosses each NIC whole (and, with Simple, each GPU of a chain): the pipeline fills
    // for one slice's time per such hop after the first.
    const double across_hops = 2 * std::ceil(std::log2(d)), chain_hops = q == CollectiveProto::simple ? 2 * (m - 1) : 0;
    const double trees = m * (d > 2 ? 2 : 1);
    const Slicing sl = slicing(wire(p, q).over(1), job.bytes / trees);
    const double fill = (across_hops - 1) * sl.bytes / f.nic_rate() + chain_hops * sl.bytes / nvlink;
    return pp.base_s + 2 * (m - 1) * (chain + pp.hop_s) + across_hops * (across + pp.hop_s) + fill +
           busiest / efficiency;
  }
  double run(Fabric& f, const CollectiveParams&, const Wire& w, const CollectiveJob& job, double now, double start,
             CollectiveRun& r) const override {
    return run_tree(f, w, job, now, start, r);
  }
  CollectiveCtas ctas(const Topology&, const CollectiveParams& p, const CollectiveJob& job, CollectiveProto q) const override {
    return nccl_ctas(p, job, id(), q);
  }
};

}  // namespace

const Algorithm& tree_algorithm() {
  static const Tree a;
  return a;
}

}  // namespace xpusim
