#include "models/interconnect/p2p_all_reduce.h"

#include <algorithm>

#include "models/interconnect/algorithm.h"

namespace xpusim {
namespace {

// The longest one-way latency between two of the GPUs: what a barrier's last flag takes.
double barrier_s(const Topology& t, const std::vector<int>& gpus) {
  double lat = 0;
  for (int g : gpus)
    for (int h : gpus) lat = std::max(lat, t.latency(g, h));
  return lat;
}

// Every GPU loads `bytes` from every peer, each load issued at `ready[i]` (GPU i's own time),
// in rounds (round r: GPU i reads from i + r), so that each port serves one peer per round.
// Returns, per GPU, when its last load's data has landed.
std::vector<double> load_from_peers(Fabric& f, const CollectiveJob& job, double now, const std::vector<double>& ready,
                                    double bytes, CollectiveRun& run) {
  const size_t n = job.gpus.size();
  std::vector<double> done(ready);
  for (size_t r = 1; r < n; ++r)
    for (size_t i = 0; i < n; ++i) {
      const int reader = job.gpus[i], peer = job.gpus[(i + r) % n];
      // The request crosses to the peer; its data comes back over the peer's outgoing ports.
      const double asked = ready[i] + f.topo().latency(reader, peer);
      done[i] = std::max(done[i], f.send(now, asked, peer, reader, bytes, run.traffic));
      run.transfers += 1;
    }
  return done;
}

}  // namespace

double run_one_shot(Fabric& f, const CollectiveJob& job, double now, double start, CollectiveRun& run) {
  const size_t n = job.gpus.size();
  const double barrier = barrier_s(f.topo(), job.gpus);
  // The barrier's flag, a load's request and its data; the closing barrier's flag where the peers
  // read the caller's input in place.
  run.steps = job.copy_in ? 3 : 4;
  run.slices = 1;
  run.slice_bytes = job.bytes;
  const double ready = start + job.copy_in_s + barrier;
  const std::vector<double> loaded = load_from_peers(f, job, now, std::vector<double>(n, ready), job.bytes, run);
  const double last = *std::max_element(loaded.begin(), loaded.end());
  // The closing barrier: no GPU leaves (and reuses its input) before every peer has loaded it. A
  // kernel that copied its input into its own buffer leaves at once.
  return job.copy_in ? last : last + barrier;
}

double run_two_shot(Fabric& f, const CollectiveJob& job, double now, double start, CollectiveRun& run) {
  const size_t n = job.gpus.size();
  const double barrier = barrier_s(f.topo(), job.gpus);
  const double part = job.bytes / static_cast<double>(n);
  run.steps = 6;  // a barrier, loads (request, data), a barrier, loads (request, data)
  run.slices = 1;
  run.slice_bytes = part;
  // Reduce-scatter: each GPU loads its part from every peer and reduces it.
  const std::vector<double> reduced =
      load_from_peers(f, job, now, std::vector<double>(n, start + job.copy_in_s + barrier), part, run);
  // A GPU may load a peer's reduced part once every GPU has flagged its own as written.
  const double all = *std::max_element(reduced.begin(), reduced.end()) + barrier;
  const std::vector<double> gathered = load_from_peers(f, job, now, std::vector<double>(n, all), part, run);
  return *std::max_element(gathered.begin(), gathered.end());
}

double p2p_estimate_s(const Topology& t, const CollectiveJob& job, CollectiveAlgo algo) {
  const int n = static_cast<int>(job.gpus.size());
  if (n < 2 || job.bytes <= 0) return 0;
  const double rate = slowest_nvlink_rate(t, job);
  const double lat = barrier_s(t, job.gpus);
  // Per round: a barrier's flag, a load's request and its data's latency; one-shot's closing
  // barrier one more.
  if (algo == CollectiveAlgo::one_shot) return job.copy_in_s + (job.copy_in ? 3 : 4) * lat + (n - 1) * job.bytes / rate;
  return job.copy_in_s + 6 * lat + 2.0 * (n - 1) / n * job.bytes / rate;
}

namespace {

// A runtime's own kernel: no NCCL protocol, its own launch, its loads booked by run_one_shot or
// run_two_shot.
class PeerToPeer : public Algorithm {
 public:
  explicit PeerToPeer(CollectiveAlgo a) : a_(a) {}
  CollectiveAlgo id() const override { return a_; }
  std::string unsupported(const Topology& f, const CollectiveJob& job) const override {
    if (std::string why = kind_refusal(a_, job, true); !why.empty()) return why;
    if (job.proto == CollectiveProto::ll || job.proto == CollectiveProto::ll128)
      return std::string("algorithm ") + collective_algo_name(a_) + " is a runtime's own kernel and has no NCCL protocol; "
             "leave protocol out (or simple), not " + collective_proto_name(job.proto);
    if (!one_domain(f, job.gpus))
      return std::string("algorithm ") + collective_algo_name(a_) +
             " loads from its peers' memory over NVLink, within one NVLink domain; these devices span several";
    return "";
  }
  bool simple_only() const override { return true; }
  double estimate_s(const Topology& f, const CollectiveParams&, const CollectiveJob& job, CollectiveProto) const override {
    return p2p_estimate_s(f, job, a_);
  }
  double start_s(const Topology&, const CollectiveParams& p, const CollectiveJob&, CollectiveProto,
                 double now) const override {
    return now + p.p2p_launch_s;
  }
  double run(Fabric& f, const CollectiveParams&, const Wire&, const CollectiveJob& job, double now, double start,
             CollectiveRun& r) const override {
    return a_ == CollectiveAlgo::one_shot ? run_one_shot(f, job, now, start, r) : run_two_shot(f, job, now, start, r);
  }

 private:
  CollectiveAlgo a_;
};

}  // namespace

const Algorithm& one_shot_algorithm() {
  static const PeerToPeer a(CollectiveAlgo::one_shot);
  return a;
}

const Algorithm& two_shot_algorithm() {
  static const PeerToPeer a(CollectiveAlgo::two_shot);
  return a;
}

}  // namespace xpusim
