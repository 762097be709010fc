// NVLink SHARP (NCCL's NVLS): the NVSwitch chips reduce what the GPUs load and multicast what
// they store.
#include <algorithm>

#include "models/interconnect/algorithm.h"

namespace xpusim {
namespace {

// NVLink SHARP: every GPU owns 1/n of each slice. The switches read every GPU's copy of it
// (multimem load-reduce: each GPU sends the whole slice up), reduce, and return each owner its
// part; each owner then stores its reduced part once (up) and the switches multicast it to every
// GPU (down). Per GPU and slice: (1 + 1/n) x slice up and as much down. The multicast is booked
// as one stream per GPU once every owner has stored (a little late for the first owners).
double run_nvls(Fabric& f, const Wire& w, const CollectiveJob& job, double now, double start, CollectiveRun& run) {
  const size_t n = job.gpus.size();
  const Slicing sl = slicing(w.over(1), job.bytes);
  run.slices = sl.slices;
  run.slice_bytes = sl.bytes;
  run.steps = 4;
  const double part = sl.bytes / static_cast<double>(n);
  const double link = f.topo().link_latency(), to_switch = link + f.topo().switch_latency();
  const int J = sl.slices;
  std::vector<double> reduced(static_cast<size_t>(J), start), stored(n);
  auto load = [&](int j) {
    for (int g : job.gpus)
      reduced[static_cast<size_t>(j)] = std::max(reduced[static_cast<size_t>(j)], f.up(now, start, g, sl.bytes, run.traffic) + to_switch);
  };
  for (int j = 0; j < std::min(kWindow, J); ++j) load(j);
  double end = start;
  for (int j = 0; j < J; ++j) {
    if (j + kWindow < J) load(j + kWindow);
    for (size_t o = 0; o < n; ++o) {
      const double got = f.down(now, reduced[static_cast<size_t>(j)], job.gpus[o], part, run.traffic) + link;
      stored[o] = f.up(now, got, job.gpus[o], part, run.traffic) + to_switch;
    }
    const double last = *std::max_element(stored.begin(), stored.end());
    for (int g : job.gpus) end = std::max(end, f.down(now, last, g, sl.bytes, run.traffic) + link);
    run.transfers += static_cast<double>(4 * n);
  }
  return end;
}

class Nvls : public Algorithm {
 public:
  CollectiveAlgo id() const override { return CollectiveAlgo::nvls; }
  std::string unsupported(const Topology& f, const CollectiveJob& job) const override {
    if (std::string why = kind_refusal(id(), job, true); !why.empty()) return why;
    if (job.algo == CollectiveAlgo::nvls && (job.proto == CollectiveProto::ll || job.proto == CollectiveProto::ll128))
      return std::string("algorithm nvls runs the simple protocol only (as NCCL's does), not ") + collective_proto_name(job.proto);
    if (!f.nvls()) return "algorithm nvls needs NVSwitch chips with in-switch reduction (nvswitch.reduction: true)";
    if (!one_domain(f, job.gpus)) return "algorithm nvls runs within one NVLink domain; these devices span several";
    return "";
  }
  bool simple_only() const override { return true; }
  double estimate_s(const Topology& f, const CollectiveParams& p, const CollectiveJob& job,
                    CollectiveProto) const override {
    const int n = static_cast<int>(job.gpus.size());
    // In-switch reduction costs one fixed latency, whatever its size, as NCCL's tuner charges it.
    return p.nvls_latency_s + (1 + 1.0 / n) * job.bytes / (slowest_port_rate(f, job) * f.nvls_efficiency());
  }
  double start_s(const Topology&, const CollectiveParams& p, const CollectiveJob&, CollectiveProto,
                 double now) const override {
    return now + p.launch_s + p.nvls_latency_s;
  }
  double run(Fabric& f, const CollectiveParams&, const Wire& w, const CollectiveJob& job, double now, double start,
             CollectiveRun& r) const override {
    // In-switch collectives have no GPU-to-GPU steps to flag: their hops are the fabric's own.
    Wire in_switch = w;
    in_switch.hop_s = 0;
    return run_nvls(f, in_switch, job, now, start, r);
  }
  CollectiveCtas ctas(const Topology&, const CollectiveParams& p, const CollectiveJob&, CollectiveProto) const override {
    return nccl_kernel(p.nvls_channels, 640);  // whatever the size (NCCL_NVLS_NCHANNELS), NCCL_MAX_NTHREADS
  }
};

}  // namespace

const Algorithm& nvls_algorithm() {
  static const Nvls a;
  return a;
}

}  // namespace xpusim
