#pragma once
// A collective algorithm is a plug-in, as ASTRA-sim makes each collective an Algorithm: one
// class per algorithm says what it refuses, what NCCL's tuner estimates for it, the CTAs its
// kernel holds, when its transfers may start and which transfers it books. collective.cpp keeps
// what all share (the tuner's choice among them, the common checks, the run's description) and
// finds each by its CollectiveAlgo through algorithm() (algorithms.cpp lists them, once).
//
// Adding an algorithm: a CollectiveAlgo value (collective_names.h) and its name in
// collective_algo_names() (collective.cpp), a file with its class, a line in algorithms.cpp, a
// line in models/CMakeLists.txt, and the name in docs/schemas/trace.schema.json.
#include <string>
#include <vector>

#include "models/interconnect/collective.h"

namespace xpusim {

// How the chosen protocol moves data: the bytes that cross the links per byte of data, the cost
// each dependent hop adds beyond the fabric's latency, and the pipeline step.
// A slice here stands for one step of every channel NCCL runs side by side over the same
// GPUs: `channels` steps of slice_bytes each, booked together on the ganged ports.
// `lines`: the protocol forwards each line as its flag lands (LL, LL128), so a hop over NVLink
// may pass a slice on before all of it has come.
struct Wire {
  double efficiency = 1, hop_s = 0, slice_bytes = 0;
  int max_slices = 1;
  int channels = 1;
  bool lines = false;
  double carried(double data) const { return data / efficiency; }
  Wire over(int c) const {
    Wire w = *this;
    w.channels = c > 1 ? c : 1;
    return w;
  }
};

ProtocolParams protocol(const CollectiveParams& p, CollectiveProto q);
Wire wire(const CollectiveParams& p, CollectiveProto q);

struct Slicing {
  int slices = 1;
  double bytes = 0;
};

// A chunk moves as slices, each one step of the protocol on every channel (so a chunk smaller
// than channels x step is one slice), at most max_slices of them (bigger beyond).
Slicing slicing(const Wire& w, double chunk);

bool one_domain(const Topology& f, const std::vector<int>& gpus);

// The rings a collective runs on. Within one domain: the group in its order. Across domains:
// each domain's GPUs in a row, and one ring (channel) per GPU of the smallest domain share;
// channel c rotates every domain's GPUs by c, so each channel leaves a domain through a
// different GPU and NIC, as NCCL's rings do.
std::vector<std::vector<int>> rings(const Topology& f, const std::vector<int>& gpus);

// A pipelined chain (broadcast from the first GPU, or send/recv): slice j leaves hop p as soon as
// it has landed there.
double run_chain(Fabric& f, const Wire& w, const std::vector<int>& chain, double bytes, double now, double start,
                 CollectiveRun& run);

// NCCL's double binary tree over positions 0..n-1 (src/graph/trees.cc): tree 0 is its binary
// tree of ranks, tree 1 that tree mirrored (n even) or shifted by one (n odd), so that each
// position is an inner node of at most one of them. Each position's parent, -1 at the root.
std::vector<int> nccl_tree_parents(int n, int which);
// The positions of a tree with children before their parents, and the longest path to its root.
std::vector<int> children_first(const std::vector<int>& parents);
int tree_height(const std::vector<int>& parents);

// Phases of later slices are booked before the last phase of earlier ones, `kWindow` slices
// ahead, as NCCL keeps NCCL_STEPS (8) slices in flight per channel: booking strictly slice by
// slice would leave every port idle while a slice's latency elapses.
constexpr int kWindow = 8;

// The tuner's estimate of an algorithm of hops between GPUs: the protocol's base cost, `steps`
// dependent hops of latency `lat` (by default the longest between neighbours; plus the
// protocol's cost per hop), and `per_port` bytes through the slowest port a step crosses at
// `efficiency`.
double hop_estimate_s(const Topology& f, const ProtocolParams& pp, const CollectiveJob& job, double steps,
                      double per_port, double efficiency, double lat = -1);
// The slowest NVLink ports of the job's GPUs, and the slowest port a step of the job crosses
// (those, and the NICs' rings across domains).
double slowest_nvlink_rate(const Topology& f, const CollectiveJob& job);
double slowest_port_rate(const Topology& f, const CollectiveJob& job);

// "algorithm X is for all_reduce only; use ring" and the like: the refusal of a job whose kind
// the algorithm does not run, or "".
std::string kind_refusal(CollectiveAlgo a, const CollectiveJob& job, bool all_reduce_only);

class Algorithm {
 public:
  virtual ~Algorithm() = default;
  virtual CollectiveAlgo id() const = 0;
  // "" or why it cannot run `job` here. Reachability between the GPUs is checked after it.
  virtual std::string unsupported(const Topology& t, const CollectiveJob& job) const = 0;
  // It runs NCCL's Simple protocol only (in-switch collectives) or none (a runtime's own kernel).
  virtual bool simple_only() const { return false; }
  // The tuner's closed-form estimate (launch excluded), for jobs of two GPUs or more and bytes
  // (estimate_s() gives the others the protocol's fixed cost).
  virtual double estimate_s(const Topology& t, const CollectiveParams& p, const CollectiveJob& job,
                            CollectiveProto q) const = 0;
  // When its first transfer may start: NCCL's launch and the protocol's fixed cost.
  virtual double start_s(const Topology&, const CollectiveParams& p, const CollectiveJob&, CollectiveProto q,
                         double now) const {
    return now + p.launch_s + protocol(p, q).base_s;
  }
  // Books its transfers from `start` and returns when the last byte has landed (bytes > 0, two
  // GPUs or more).
  virtual double run(Fabric& f, const CollectiveParams& p, const Wire& w, const CollectiveJob& job, double now,
                     double start, CollectiveRun& run) const = 0;
  // The CTAs its kernel holds on each GPU (none by default).
  virtual CollectiveCtas ctas(const Topology&, const CollectiveParams&, const CollectiveJob&, CollectiveProto) const {
    return {};
  }
};

// The algorithm behind a CollectiveAlgo other than `automatic` (algorithms.cpp).
const Algorithm& algorithm(CollectiveAlgo a);

// The CTAs of NCCL's ring and tree kernels (collective.cpp): channels of 512-640 threads, fewer
// of both for small sizes.
CollectiveCtas nccl_ctas(const CollectiveParams& p, const CollectiveJob& job, CollectiveAlgo a, CollectiveProto q);
// One CTA's registers and shared memory as NCCL's kernels are built, for `ctas` of `threads`.
CollectiveCtas nccl_kernel(int ctas, int threads);

}  // namespace xpusim
