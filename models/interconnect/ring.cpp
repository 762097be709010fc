// NCCL's ring: every GPU forwards to the next what it received from the one before, reduced
// with its own data in a reduce-scatter and copied in an all-gather; a broadcast is a chain.
#include <algorithm>
#include <cmath>

#include "models/interconnect/algorithm.h"

namespace xpusim {
namespace {

// `steps` ring steps over every ring at once: at each step the GPU at position p forwards to
// p+1 what it received from p-1 at the step before (reduced with its own data in a
// reduce-scatter, copied in an all-gather). Returns when the last slice lands.
double ring_steps(Fabric& f, const Wire& w, double now, double start, const std::vector<std::vector<int>>& rs,
                  int steps, const Slicing& sl, CollectiveRun& run) {
  const size_t n = rs.front().size(), J = static_cast<size_t>(sl.slices), C = rs.size();
  std::vector<double> have(C * n * J, start), next(C * n * J, start);
  auto at = [&](size_t c, size_t p, size_t j) { return (c * n + p) * J + j; };
  for (int s = 0; s < steps; ++s) {
    for (size_t j = 0; j < J; ++j)
      for (size_t c = 0; c < C; ++c)
        for (size_t p = 0; p < n; ++p) {
          const size_t q = (p + 1) % n;
          next[at(c, q, j)] = f.send(now, have[at(c, p, j)], rs[c][p], rs[c][q], w.carried(sl.bytes), run.traffic) + w.hop_s;
          run.transfers += 1;
        }
    std::swap(have, next);
  }
  return *std::max_element(have.begin(), have.end());
}

double run_ring(Fabric& f, const Wire& w, const CollectiveJob& job, double now, double start, CollectiveRun& run) {
  const auto rs = rings(f.topo(), job.gpus);
  const int n = static_cast<int>(job.gpus.size());
  run.channels = static_cast<int>(rs.size());
  const Slicing sl = slicing(w.over(w.channels / run.channels), job.bytes / run.channels / n);
  run.slices = sl.slices;
  run.slice_bytes = sl.bytes;
  run.steps = job.kind == CollectiveKind::all_reduce ? 2 * (n - 1) : n - 1;
  return ring_steps(f, w, now, start, rs, run.steps, sl, run);
}

class Ring : public Algorithm {
 public:
  CollectiveAlgo id() const override { return CollectiveAlgo::ring; }
  std::string unsupported(const Topology&, const CollectiveJob& job) const override {
    return kind_refusal(id(), job, false);
  }
  double estimate_s(const Topology& f, const CollectiveParams& p, const CollectiveJob& job,
                    CollectiveProto q) const override {
    const ProtocolParams pp = protocol(p, q);
    const int n = static_cast<int>(job.gpus.size());
    const double steps = job.kind == CollectiveKind::all_reduce ? 2 * (n - 1) : n - 1;
    const double per_port = job.kind == CollectiveKind::broadcast ? job.bytes : bus_factor(job.kind, n) * job.bytes;
    // NCCL's tuner weighs LL below what its line format carries (src/graph/tuning.cc): a ring's
    // at a quarter of Simple's bandwidth for reductions and across nodes, a third otherwise. The
    // choice follows NCCL's; the run itself moves LL's lines as they are.
    double efficiency = pp.efficiency;
    if (q == CollectiveProto::ll) {
      const bool reduces = job.kind == CollectiveKind::all_reduce || !one_domain(f, job.gpus);
      efficiency = std::min(efficiency, reduces ? 1.0 / 4.0 : 1.0 / 3.0);
    }
    // Across domains a ring's hops are NVLink's but for one per domain it leaves through a NIC.
    double lat = -1;
    if (!one_domain(f, job.gpus)) {
      const auto ring = rings(f, job.gpus).front();
      double sum = 0;
      for (size_t i = 0; i < ring.size(); ++i) sum += f.latency(ring[i], ring[(i + 1) % ring.size()]);
      lat = sum / static_cast<double>(ring.size());
    }
    return hop_estimate_s(f, pp, job, steps, per_port, efficiency, lat);
  }
  double run(Fabric& f, const CollectiveParams&, const Wire& w, const CollectiveJob& job, double now, double start,
             CollectiveRun& r) const override {
    return job.kind == CollectiveKind::broadcast ? run_chain(f, w, job.gpus, job.bytes, now, start, r)
                                                 : run_ring(f, w, job, now, start, r);
  }
  CollectiveCtas ctas(const Topology&, const CollectiveParams& p, const CollectiveJob& job, CollectiveProto q) const override {
    return nccl_ctas(p, job, id(), q);
  }
};

}  // namespace

double run_chain(Fabric& f, const Wire& w, const std::vector<int>& chain, double bytes, double now, double start,
                 CollectiveRun& run) {
  const Slicing sl = slicing(w, bytes);
  run.slices = sl.slices;
  run.slice_bytes = sl.bytes;
  run.steps = static_cast<int>(chain.size()) - 1;
  std::vector<double> have(static_cast<size_t>(sl.slices), start);
  for (size_t h = 0; h + 1 < chain.size(); ++h)
    for (auto& t : have) {
      t = f.send(now, t, chain[h], chain[h + 1], w.carried(sl.bytes), run.traffic) + w.hop_s;
      run.transfers += 1;
    }
  return have.empty() ? start : *std::max_element(have.begin(), have.end());
}

const Algorithm& ring_algorithm() {
  static const Ring a;
  return a;
}

}  // namespace xpusim
