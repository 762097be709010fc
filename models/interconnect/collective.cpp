#include "models/interconnect/collective.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "models/interconnect/p2p_all_reduce.h"

namespace xpusim {
namespace {

std::string bytes_text(double b) {
  const char* unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, b == std::floor(b) ? "%.0f %s" : "%.3g %s", b, unit[u]);
  return buf;
}

// How the chosen protocol moves data: the bytes that cross the links per byte of data, the cost
// each dependent hop adds beyond the fabric's latency, and the pipeline step.
// A slice here stands for one step of every channel NCCL runs side by side over the same
// GPUs: `channels` steps of slice_bytes each, booked together on the ganged ports.
struct Wire {
  double efficiency = 1, hop_s = 0, slice_bytes = 0;
  int max_slices = 1;
  int channels = 1;
  double carried(double data) const { return data / efficiency; }
  Wire over(int c) const {
    Wire w = *this;
    w.channels = std::max(1, c);
    return w;
  }
};

ProtocolParams protocol(const CollectiveParams& p, CollectiveProto q) {
  switch (q) {
    case CollectiveProto::ll: return p.ll;
    case CollectiveProto::ll128: return p.ll128;
    case CollectiveProto::simple:
    case CollectiveProto::automatic: break;
  }
  ProtocolParams s = p.simple;
  s.slice_bytes = p.slice_bytes;
  return s;
}

Wire wire(const CollectiveParams& p, CollectiveProto q) {
  const ProtocolParams pp = protocol(p, q);
  return {pp.efficiency, pp.hop_s, pp.slice_bytes, p.max_slices, p.channels};
}

struct Slicing {
  int slices = 1;
  double bytes = 0;
};

// A chunk moves as slices, each one step of the protocol on every channel (so a chunk smaller
// than channels x step is one slice), at most max_slices of them (bigger beyond).
Slicing slicing(const Wire& w, double chunk) {
  Slicing s;
  const double step = w.slice_bytes * w.channels;
  if (chunk > step) s.slices = static_cast<int>(std::min<double>(w.max_slices, std::ceil(chunk / step)));
  s.bytes = chunk / s.slices;
  return s;
}

bool one_domain(const Topology& f, const std::vector<int>& gpus) {
  for (int g : gpus)
    if (f.domain_of(g) != f.domain_of(gpus.front())) return false;
  return true;
}

// The rings a collective runs on. Within one domain: the group in its order. Across domains:
// each domain's GPUs in a row, and one ring (channel) per GPU of the smallest domain share;
// channel c rotates every domain's GPUs by c, so each channel leaves a domain through a
// different GPU and NIC, as NCCL's rings do.
std::vector<std::vector<int>> rings(const Topology& f, const std::vector<int>& gpus) {
  if (one_domain(f, gpus)) return {gpus};
  std::vector<int> order;
  std::map<int, std::vector<int>> by;
  for (int g : gpus) {
    if (!by.count(f.domain_of(g))) order.push_back(f.domain_of(g));
    by[f.domain_of(g)].push_back(g);
  }
  size_t channels = gpus.size();
  for (const auto& [d, m] : by) channels = std::min(channels, m.size());
  std::vector<std::vector<int>> out(channels);
  for (size_t c = 0; c < channels; ++c)
    for (int d : order) {
      const auto& m = by[d];
      for (size_t i = 0; i < m.size(); ++i) out[c].push_back(m[(i + c + 1) % m.size()]);
    }
  return out;
}

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

// A pipelined chain (broadcast from the first GPU, or send/recv): slice j leaves hop p as soon as
// it has landed there.
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

// Phases of later slices are booked before the last phase of earlier ones, `kWindow` slices
// ahead, as NCCL keeps NCCL_STEPS (8) slices in flight per channel: booking strictly slice by
// slice would leave every port idle while a slice's latency elapses.
constexpr int kWindow = 8;

// A balanced binary tree over positions lo..hi (in-order: the middle is the root).
int build_tree(int lo, int hi, int parent, std::vector<int>& parents, std::vector<int>& post) {
  if (lo > hi) return -1;
  const int mid = (lo + hi + 1) / 2;
  parents[static_cast<size_t>(mid)] = parent;
  build_tree(lo, mid - 1, mid, parents, post);
  build_tree(mid + 1, hi, mid, parents, post);
  post.push_back(mid);
  return mid;
}

int tree_depth(const std::vector<int>& parents, int node) {
  int d = 0;
  for (int x = node; parents[static_cast<size_t>(x)] >= 0; x = parents[static_cast<size_t>(x)]) ++d;
  return d;
}

// Double binary tree (NCCL's): half the data on each of two trees, the second shifted by one
// position so that most leaves of one are inner nodes of the other. Each slice is reduced up
// to the root, children before parents, and broadcast back down.
double run_tree(Fabric& f, const Wire& w, const CollectiveJob& job, double now, double start, CollectiveRun& run) {
  const int n = static_cast<int>(job.gpus.size());
  std::vector<int> parents(static_cast<size_t>(n), -1), post;
  const int root = build_tree(0, n - 1, -1, parents, post);
  int depth = 0;
  for (int i = 0; i < n; ++i) depth = std::max(depth, tree_depth(parents, i));
  const int trees = n > 2 ? 2 : 1;
  const Slicing sl = slicing(w.over(w.channels / trees), job.bytes / trees);
  run.slices = sl.slices;
  run.slice_bytes = sl.bytes;
  run.channels = trees;
  run.steps = 2 * depth;
  const size_t N = static_cast<size_t>(n);
  // reduced[(j * trees + tr) * n + node]: when every child's partial sum of slice j has landed.
  std::vector<double> reduced(static_cast<size_t>(sl.slices * trees) * N, start);
  auto gpu = [&](int tr, int pos) { return job.gpus[static_cast<size_t>((pos + tr) % n)]; };
  auto reduce = [&](int j) {
    for (int tr = 0; tr < trees; ++tr) {
      double* r = &reduced[static_cast<size_t>(j * trees + tr) * N];
      for (int node : post) {
        const int par = parents[static_cast<size_t>(node)];
        if (par < 0) continue;
        const double t = f.send(now, r[node], gpu(tr, node), gpu(tr, par), w.carried(sl.bytes), run.traffic) + w.hop_s;
        r[par] = std::max(r[par], t);
        run.transfers += 1;
      }
    }
  };
  for (int j = 0; j < std::min(kWindow, sl.slices); ++j) reduce(j);
  double end = start;
  std::vector<double> have(N);
  for (int j = 0; j < sl.slices; ++j) {
    if (j + kWindow < sl.slices) reduce(j + kWindow);
    for (int tr = 0; tr < trees; ++tr) {
      have[static_cast<size_t>(root)] = reduced[static_cast<size_t>(j * trees + tr) * N + static_cast<size_t>(root)];
      for (auto it = post.rbegin(); it != post.rend(); ++it) {  // parents before children
        const int node = *it;
        const int par = parents[static_cast<size_t>(node)];
        if (par < 0) continue;
        have[static_cast<size_t>(node)] =
            f.send(now, have[static_cast<size_t>(par)], gpu(tr, par), gpu(tr, node), w.carried(sl.bytes), run.traffic) + w.hop_s;
        run.transfers += 1;
      }
      end = std::max(end, *std::max_element(have.begin(), have.end()));
    }
  }
  return end;
}

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

}  // namespace

const char* collective_algo_name(CollectiveAlgo a) {
  switch (a) {
    case CollectiveAlgo::automatic: return "auto";
    case CollectiveAlgo::ring: return "ring";
    case CollectiveAlgo::tree: return "tree";
    case CollectiveAlgo::nvls: return "nvls";
    case CollectiveAlgo::direct: return "direct";
    case CollectiveAlgo::one_shot: return "one_shot";
    case CollectiveAlgo::two_shot: return "two_shot";
  }
  return "?";
}

const char* collective_proto_name(CollectiveProto p) {
  switch (p) {
    case CollectiveProto::automatic: return "auto";
    case CollectiveProto::ll: return "ll";
    case CollectiveProto::ll128: return "ll128";
    case CollectiveProto::simple: return "simple";
  }
  return "?";
}

double bus_factor(CollectiveKind k, int n) {
  switch (k) {
    case CollectiveKind::all_reduce: return 2.0 * (n - 1) / n;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::all_to_all: return static_cast<double>(n - 1) / n;
    case CollectiveKind::broadcast:
    case CollectiveKind::send_recv: return 1;
  }
  return 1;
}

CollectiveAlgo resolve_algo(const Topology& f, const CollectiveJob& job) {
  if (job.algo != CollectiveAlgo::automatic) return job.algo;
  switch (job.kind) {
    case CollectiveKind::all_to_all:
    case CollectiveKind::send_recv: return CollectiveAlgo::direct;
    case CollectiveKind::all_gather:
    case CollectiveKind::reduce_scatter:
    case CollectiveKind::broadcast: return CollectiveAlgo::ring;
    case CollectiveKind::all_reduce: break;
  }
  if (one_domain(f, job.gpus)) return f.nvls() && job.gpus.size() > 2 ? CollectiveAlgo::nvls : CollectiveAlgo::ring;
  // Across domains, NCCL's tuner weighs the ring's 2(n-1) latencies against the tree's
  // 4 log2(n); both move about 2 x size through each GPU's slowest port.
  const double n = static_cast<double>(job.gpus.size());
  double lat = 0;
  for (size_t i = 0; i + 1 < job.gpus.size(); ++i) lat = std::max(lat, f.latency(job.gpus[i], job.gpus[i + 1]));
  const double bw = f.nic_rate() > 0 ? f.nic_rate() : 1;
  const size_t channels = rings(f, job.gpus).size();
  const double ring = 2 * (n - 1) * lat + 2 * (n - 1) / n * job.bytes / (bw * static_cast<double>(channels));
  const double tree = 4 * std::ceil(std::log2(n)) * lat + job.bytes / bw;
  return tree < ring ? CollectiveAlgo::tree : CollectiveAlgo::ring;
}

double estimate_s(const Topology& f, const CollectiveParams& p, const CollectiveJob& job, CollectiveAlgo algo,
                  CollectiveProto proto) {
  if (algo == CollectiveAlgo::one_shot || algo == CollectiveAlgo::two_shot) return p2p_estimate_s(f, job, algo);
  const ProtocolParams pp = protocol(p, proto);
  const int n = static_cast<int>(job.gpus.size());
  if (n < 2 || job.bytes <= 0) return pp.base_s;
  // The slowest port a step crosses and the longest hop between neighbours.
  double rate = std::numeric_limits<double>::infinity(), lat = 0;
  for (int g : job.gpus) rate = std::min(rate, f.nvlink_rate(g));
  for (size_t i = 0; i + 1 < job.gpus.size(); ++i) lat = std::max(lat, f.latency(job.gpus[i], job.gpus[i + 1]));
  if (!one_domain(f, job.gpus)) rate = std::min(rate, f.nic_rate() * static_cast<double>(rings(f, job.gpus).size()));
  double steps = 1, per_port = job.bytes;  // dependent hops, and data through the busiest port
  switch (algo) {
    case CollectiveAlgo::ring:
      steps = job.kind == CollectiveKind::all_reduce ? 2 * (n - 1) : n - 1;
      per_port = job.kind == CollectiveKind::broadcast ? job.bytes : bus_factor(job.kind, n) * job.bytes;
      break;
    case CollectiveAlgo::tree: steps = 2 * std::ceil(std::log2(n)); break;
    case CollectiveAlgo::nvls:
      // In-switch reduction costs one fixed latency, whatever its size, as NCCL's tuner charges it.
      return p.nvls_latency_s + (1 + 1.0 / n) * job.bytes / (rate * f.nvls_efficiency());
    case CollectiveAlgo::direct:
      if (job.kind != CollectiveKind::send_recv) per_port = bus_factor(job.kind, n) * job.bytes;
      break;
    case CollectiveAlgo::one_shot:
    case CollectiveAlgo::two_shot:
    case CollectiveAlgo::automatic: break;
  }
  // NCCL's tuner weighs LL below what its line format carries (src/graph/tuning.cc): a ring's
  // at a quarter of Simple's bandwidth for reductions and across nodes, a third otherwise; a
  // tree's at 1/3.8. The choice follows NCCL's; the run itself moves LL's lines as they are.
  double efficiency = pp.efficiency;
  if (proto == CollectiveProto::ll && algo == CollectiveAlgo::ring) {
    const bool reduces = job.kind == CollectiveKind::all_reduce || !one_domain(f, job.gpus);
    efficiency = std::min(efficiency, reduces ? 1.0 / 4.0 : 1.0 / 3.0);
  }
  if (proto == CollectiveProto::ll && algo == CollectiveAlgo::tree) efficiency = std::min(efficiency, 1.0 / 3.8);
  return pp.base_s + steps * (lat + pp.hop_s) + per_port / (rate * efficiency);
}

Choice choose(const Topology& f, const CollectiveParams& p, const CollectiveJob& job) {
  const CollectiveAlgo structural = resolve_algo(f, job);
  CollectiveProto forced = job.proto;
  if (forced == CollectiveProto::automatic && p.protocol != "auto")
    forced = p.protocol == "ll" ? CollectiveProto::ll : p.protocol == "ll128" ? CollectiveProto::ll128 : CollectiveProto::simple;
  Choice best{structural, CollectiveProto::simple, std::numeric_limits<double>::infinity()};
  auto consider = [&](CollectiveAlgo a, CollectiveProto q) {
    const double t = estimate_s(f, p, job, a, q);
    if (t < best.estimate_s) best = {a, q, t};
  };
  // In-switch collectives run Simple only, as NCCL's do. Where `auto` resolved to one, the ring
  // competes with it by the tuner's estimates, as NCCL's tuner weighs NVLS against the ring.
  std::vector<CollectiveAlgo> algos{structural};
  if (structural == CollectiveAlgo::nvls && job.algo == CollectiveAlgo::automatic) algos.push_back(CollectiveAlgo::ring);
  for (CollectiveAlgo a : algos) {
    if (a == CollectiveAlgo::nvls || a == CollectiveAlgo::one_shot || a == CollectiveAlgo::two_shot) {
      if (forced == CollectiveProto::automatic || forced == CollectiveProto::simple) consider(a, CollectiveProto::simple);
      continue;
    }
    if (forced != CollectiveProto::automatic) consider(a, forced);
    else
      for (CollectiveProto q : {CollectiveProto::simple, CollectiveProto::ll128, CollectiveProto::ll}) consider(a, q);
  }
  return best;
}

std::string unsupported(const Topology& f, const CollectiveJob& job) {
  const CollectiveAlgo a = resolve_algo(f, job);
  const bool reduces = job.kind == CollectiveKind::all_reduce;
  const bool pairwise = job.kind == CollectiveKind::all_to_all || job.kind == CollectiveKind::send_recv;
  if (job.kind == CollectiveKind::send_recv && job.gpus.size() != 2)
    return "send_recv needs exactly two devices (sender, receiver)";
  if (pairwise && a != CollectiveAlgo::direct) return std::string("algorithm ") + collective_algo_name(a) + " does not apply; use direct";
  if (!pairwise && a == CollectiveAlgo::direct) return "algorithm direct applies to all_to_all and send_recv only";
  if (!reduces && (a == CollectiveAlgo::tree || a == CollectiveAlgo::nvls))
    return std::string("algorithm ") + collective_algo_name(a) + " is for all_reduce only; use ring";
  const bool p2p = a == CollectiveAlgo::one_shot || a == CollectiveAlgo::two_shot;
  if (p2p) {
    if (!reduces) return std::string("algorithm ") + collective_algo_name(a) + " is for all_reduce only; use ring";
    if (job.proto == CollectiveProto::ll || job.proto == CollectiveProto::ll128)
      return std::string("algorithm ") + collective_algo_name(a) + " is a runtime's own kernel and has no NCCL protocol; "
             "leave protocol out (or simple), not " + collective_proto_name(job.proto);
    if (!one_domain(f, job.gpus))
      return std::string("algorithm ") + collective_algo_name(a) +
             " loads from its peers' memory over NVLink, within one NVLink domain; these devices span several";
  }
  if (a == CollectiveAlgo::nvls) {
    if (job.algo == CollectiveAlgo::nvls && (job.proto == CollectiveProto::ll || job.proto == CollectiveProto::ll128))
      return std::string("algorithm nvls runs the simple protocol only (as NCCL's does), not ") + collective_proto_name(job.proto);
    if (!f.nvls()) return "algorithm nvls needs NVSwitch chips with in-switch reduction (nvswitch.reduction: true)";
    if (!one_domain(f, job.gpus)) return "algorithm nvls runs within one NVLink domain; these devices span several";
  }
  for (int g : job.gpus)
    for (int h : job.gpus)
      if (!f.reachable(g, h))
        return "GPU " + std::to_string(f.working_links(g) == 0 ? g : h) +
               " has no working NVLink port (system.failed_links), so it cannot reach GPU " +
               std::to_string(f.working_links(g) == 0 ? h : g);
  return "";
}

CollectiveCtas collective_ctas(const CollectiveParams& p, const CollectiveJob& job, const Choice& c) {
  CollectiveCtas out;
  const int n = static_cast<int>(job.gpus.size());
  if (n < 2 || job.bytes <= 0) return out;
  // NCCL 2.21's kernels: at most 96 registers a thread (makefiles/common.mk, -maxrregcount=96),
  // and 20 warps of 4,112 bytes of dynamic shared memory ((8 x 32 + 1) x 16 B a warp for Simple's
  // unrolled copies, ncclShmemDynamicSize on sm_80 and sm_90): 82,240 bytes a CTA.
  constexpr int kRegistersPerThread = 96, kWarp = 32;
  constexpr double kSharedBytes = 82240;
  int nc = 0, nt = 0;
  switch (c.algo) {
    case CollectiveAlgo::nvls:
      nc = p.nvls_channels;  // whatever the size (NCCL_NVLS_NCHANNELS)
      nt = 640;              // NCCL_MAX_NTHREADS
      break;
    case CollectiveAlgo::ring:
    case CollectiveAlgo::tree: {
      // maxThreads (src/graph/tuning.cc): 512 for Simple over NVLink and for LL, 640 for LL128;
      // threadThresholds (src/include/comm.h): bytes a thread must have, 64 for Simple, 8 for
      // LL128, 8 for LL (times the ranks on a ring).
      nt = c.proto == CollectiveProto::ll128 ? 640 : 512;
      const double threshold = c.proto == CollectiveProto::ll128 ? 8
                               : c.proto == CollectiveProto::ll ? (c.algo == CollectiveAlgo::ring ? 8.0 * n : 8.0)
                                                                : 64;
      nc = p.channels;
      while (job.bytes < static_cast<double>(nc) * nt * threshold && nc >= 2) --nc;
      while (job.bytes < static_cast<double>(nc) * nt * threshold && nt % 128 == 0) nt /= 2;
      if (c.proto == CollectiveProto::simple) nt += c.algo == CollectiveAlgo::ring ? kWarp : 4 * kWarp;  // sync warps
      nt = std::max(nt, 3 * kWarp);
      break;
    }
    case CollectiveAlgo::direct:
    case CollectiveAlgo::one_shot:
    case CollectiveAlgo::two_shot:
    case CollectiveAlgo::automatic: return out;
  }
  out.ctas = nc;
  out.threads = nt;
  out.registers = nt * kRegistersPerThread;
  out.shared_bytes = kSharedBytes;
  return out;
}

CollectiveRun run_collective(Fabric& f, const CollectiveParams& p, const CollectiveJob& job, double now) {
  CollectiveRun run;
  const Choice c = choose(f.topo(), p, job);
  run.algo = c.algo;
  run.proto = c.proto;
  run.start_s = now;
  const bool nvls = run.algo == CollectiveAlgo::nvls;
  const bool p2p = run.algo == CollectiveAlgo::one_shot || run.algo == CollectiveAlgo::two_shot;
  // In-switch collectives have no GPU-to-GPU steps to flag: their hops are the fabric's own.
  Wire w = wire(p, run.proto);
  if (nvls) w.hop_s = 0;
  const double start = p2p    ? now + p.p2p_launch_s
                       : nvls ? now + p.launch_s + p.nvls_latency_s
                              : now + p.launch_s + protocol(p, run.proto).base_s;
  const int n = static_cast<int>(job.gpus.size());
  double end = start;
  if (n > 1 && job.bytes > 0) {
    switch (run.algo) {
      case CollectiveAlgo::ring:
        end = job.kind == CollectiveKind::broadcast ? run_chain(f, w, job.gpus, job.bytes, now, start, run)
                                                    : run_ring(f, w, job, now, start, run);
        break;
      case CollectiveAlgo::tree: end = run_tree(f, w, job, now, start, run); break;
      case CollectiveAlgo::nvls: end = run_nvls(f, w, job, now, start, run); break;
      case CollectiveAlgo::direct:
        end = job.kind == CollectiveKind::send_recv ? run_chain(f, w, job.gpus, job.bytes, now, start, run)
                                                    : run_direct(f, w, job, now, start, run);
        break;
      case CollectiveAlgo::one_shot: end = run_one_shot(f, job, now, start, run); break;
      case CollectiveAlgo::two_shot: end = run_two_shot(f, job, now, start, run); break;
      case CollectiveAlgo::automatic: break;
    }
  }
  run.end_s = end;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s/%s over %d GPUs%s: %d dependent hops, %d slice%s of %s per chunk, %.0f transfers",
                collective_algo_name(run.algo), collective_proto_name(run.proto), n,
                run.channels > 1 ? (", " + std::to_string(run.channels) + (run.algo == CollectiveAlgo::tree ? " trees" : " channels")).c_str() : "",
                run.steps, run.slices, run.slices == 1 ? "" : "s", bytes_text(run.slice_bytes).c_str(), run.transfers);
  run.description = buf;
  return run;
}

}  // namespace xpusim
