// Pairwise exchanges: an all-to-all in rounds, and a send/recv as a chain of one hop.
#include <algorithm>

#include "models/interconnect/algorithm.h"

namespace xpusim {
namespace {

// Every GPU sends bytes / n to every other one, in rounds (round r: GPU i to i + r), so that each
// port receives from one peer per round.
double run_direct(Fabric& f, const Wire& w, const CollectiveJob& job, double now, double start, CollectiveRun& run) {
  const size_t n = job.gpus.size();
  const Slicing sl = slicing(w, job.bytes / static_cast<double>(n));
  run.slices = sl.slices;
  run.slice_bytes = sl.bytes;
  run.steps = 1;
  double end = start;
  for (size_t r = 1; r < n; ++r)
    for (int j = 0; j < sl.slices; ++j)
      for (size_t i = 0; i < n; ++i) {
        end = std::max(end, f.send(now, start, job.gpus[i], job.gpus[(i + r) % n], w.carried(sl.bytes), run.traffic) + w.hop_s);
        run.transfers += 1;
      }
  return end;
}

class Direct : public Algorithm {
 public:
  CollectiveAlgo id() const override { return CollectiveAlgo::direct; }
  std::string unsupported(const Topology&, const CollectiveJob& job) const override {
    return kind_refusal(id(), job, false);
  }
  double estimate_s(const Topology& f, const CollectiveParams& p, const CollectiveJob& job,
                    CollectiveProto q) const override {
    const ProtocolParams pp = protocol(p, q);
    const int n = static_cast<int>(job.gpus.size());
    const double per_port = job.kind == CollectiveKind::send_recv ? job.bytes : bus_factor(job.kind, n) * job.bytes;
    return hop_estimate_s(f, pp, job, 1, per_port, pp.efficiency);
  }
  double run(Fabric& f, const CollectiveParams&, const Wire& w, const CollectiveJob& job, double now, double start,
             CollectiveRun& r) const override {
    return job.kind == CollectiveKind::send_recv ? run_chain(f, w, job.gpus, job.bytes, now, start, r)
                                                 : run_direct(f, w, job, now, start, r);
  }
};

}  // namespace

const Algorithm& direct_algorithm() {
  static const Direct a;
  return a;
}

}  // namespace xpusim
