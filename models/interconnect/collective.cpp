#include "models/interconnect/collective.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "models/interconnect/algorithm.h"

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

}  // namespace

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
  return {pp.efficiency, pp.hop_s, pp.slice_bytes, p.max_slices, p.channels,
          q == CollectiveProto::ll || q == CollectiveProto::ll128};
}

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

double slowest_nvlink_rate(const Topology& f, const CollectiveJob& job) {
  double rate = std::numeric_limits<double>::infinity();
  for (int g : job.gpus) rate = std::min(rate, f.nvlink_rate(g));
  return rate;
}

double slowest_port_rate(const Topology& f, const CollectiveJob& job) {
  double rate = slowest_nvlink_rate(f, job);
  if (!one_domain(f, job.gpus)) rate = std::min(rate, f.nic_rate() * static_cast<double>(rings(f, job.gpus).size()));
  return rate;
}

double hop_estimate_s(const Topology& f, const ProtocolParams& pp, const CollectiveJob& job, double steps,
                      double per_port, double efficiency, double lat) {
  const double rate = slowest_port_rate(f, job);
  if (lat < 0) {
    lat = 0;  // the longest hop between neighbours
    for (size_t i = 0; i + 1 < job.gpus.size(); ++i) lat = std::max(lat, f.latency(job.gpus[i], job.gpus[i + 1]));
  }
  return pp.base_s + steps * (lat + pp.hop_s) + per_port / (rate * efficiency);
}

std::string kind_refusal(CollectiveAlgo a, const CollectiveJob& job, bool all_reduce_only) {
  const bool pairwise = job.kind == CollectiveKind::all_to_all || job.kind == CollectiveKind::send_recv;
  if (a == CollectiveAlgo::direct) return pairwise ? "" : "algorithm direct applies to all_to_all and send_recv only";
  if (pairwise) return std::string("algorithm ") + collective_algo_name(a) + " does not apply; use direct";
  if (all_reduce_only && job.kind != CollectiveKind::all_reduce)
    return std::string("algorithm ") + collective_algo_name(a) + " is for all_reduce only; use ring";
  return "";
}

const std::vector<std::pair<CollectiveAlgo, std::string>>& collective_algo_names() {
  static const std::vector<std::pair<CollectiveAlgo, std::string>> names{
      {CollectiveAlgo::automatic, "auto"}, {CollectiveAlgo::ring, "ring"},         {CollectiveAlgo::tree, "tree"},
      {CollectiveAlgo::nvls, "nvls"},      {CollectiveAlgo::direct, "direct"},     {CollectiveAlgo::one_shot, "one_shot"},
      {CollectiveAlgo::two_shot, "two_shot"}, {CollectiveAlgo::nvls_tree, "nvls_tree"},
      {CollectiveAlgo::collnet, "collnet"}};
  return names;
}

const char* collective_algo_name(CollectiveAlgo a) {
  for (const auto& [id, name] : collective_algo_names())
    if (id == a) return name.c_str();
  return "?";
}

CollectiveAlgo collective_algo_named(const std::string& name) {
  for (const auto& [id, n] : collective_algo_names())
    if (n == name) return id;
  return CollectiveAlgo::automatic;
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
  // Across domains the ring; choose() weighs the tree and the domains' two-level algorithms
  // against it.
  return CollectiveAlgo::ring;
}

double estimate_s(const Topology& f, const CollectiveParams& p, const CollectiveJob& job, CollectiveAlgo algo,
                  CollectiveProto proto) {
  if (job.gpus.size() < 2 || job.bytes <= 0) return protocol(p, proto).base_s;
  return algorithm(algo == CollectiveAlgo::automatic ? resolve_algo(f, job) : algo).estimate_s(f, p, job, proto);
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
  // An all-reduce across domains: NCCL's tuner weighs the ring against its tree and, where the
  // switches reduce, NVLSTree and CollNet (each where it can run the job).
  if (job.kind == CollectiveKind::all_reduce && job.algo == CollectiveAlgo::automatic && !one_domain(f, job.gpus))
    for (CollectiveAlgo a : {CollectiveAlgo::tree, CollectiveAlgo::nvls_tree, CollectiveAlgo::collnet})
      if (algorithm(a).unsupported(f, job).empty()) algos.push_back(a);
  for (CollectiveAlgo a : algos) {
    if (algorithm(a).simple_only()) {
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
  if (job.kind == CollectiveKind::send_recv && job.gpus.size() != 2)
    return "send_recv needs exactly two devices (sender, receiver)";
  if (std::string why = algorithm(resolve_algo(f, job)).unsupported(f, job); !why.empty()) return why;
  for (int g : job.gpus)
    for (int h : job.gpus)
      if (!f.reachable(g, h))
        return "GPU " + std::to_string(f.working_links(g) == 0 ? g : h) +
               " has no working NVLink port (system.failed_links), so it cannot reach GPU " +
               std::to_string(f.working_links(g) == 0 ? h : g);
  return "";
}

CollectiveCtas nccl_kernel(int ctas, int threads) {
  // NCCL 2.21's kernels: at most 96 registers a thread (makefiles/common.mk, -maxrregcount=96),
  // and 20 warps of 4,112 bytes of dynamic shared memory ((8 x 32 + 1) x 16 B a warp for Simple's
  // unrolled copies, ncclShmemDynamicSize on sm_80 and sm_90): 82,240 bytes a CTA.
  constexpr int kRegistersPerThread = 96;
  constexpr double kSharedBytes = 82240;
  CollectiveCtas out;
  out.ctas = ctas;
  out.threads = threads;
  out.registers = threads * kRegistersPerThread;
  out.shared_bytes = kSharedBytes;
  return out;
}

CollectiveCtas nccl_ctas(const CollectiveParams& p, const CollectiveJob& job, CollectiveAlgo a, CollectiveProto q) {
  constexpr int kWarp = 32;
  const int n = static_cast<int>(job.gpus.size());
  // maxThreads (src/graph/tuning.cc): 512 for Simple over NVLink and for LL, 640 for LL128;
  // threadThresholds (src/include/comm.h): bytes a thread must have, 64 for Simple, 8 for
  // LL128, 8 for LL (times the ranks on a ring).
  int nt = q == CollectiveProto::ll128 ? 640 : 512;
  const double threshold = q == CollectiveProto::ll128 ? 8
                           : q == CollectiveProto::ll ? (a == CollectiveAlgo::ring ? 8.0 * n : 8.0)
                                                      : 64;
  int nc = p.channels;
  while (job.bytes < static_cast<double>(nc) * nt * threshold && nc >= 2) --nc;
  while (job.bytes < static_cast<double>(nc) * nt * threshold && nt % 128 == 0) nt /= 2;
  if (q == CollectiveProto::simple) nt += a == CollectiveAlgo::ring ? kWarp : 4 * kWarp;  // sync warps
  nt = std::max(nt, 3 * kWarp);
  return nccl_kernel(nc, nt);
}

CollectiveCtas collective_ctas(const Topology& t, const CollectiveParams& p, const CollectiveJob& job, const Choice& c) {
  const int n = static_cast<int>(job.gpus.size());
  if (n < 2 || job.bytes <= 0 || c.algo == CollectiveAlgo::automatic) return {};
  return algorithm(c.algo).ctas(t, p, job, c.proto);
}

CollectiveRun run_collective(Fabric& f, const CollectiveParams& p, const CollectiveJob& job, double now) {
  CollectiveRun run;
  const Choice c = choose(f.topo(), p, job);
  run.algo = c.algo;
  run.proto = c.proto;
  run.start_s = now;
  const Algorithm& a = algorithm(run.algo);
  const double start = a.start_s(f.topo(), p, job, run.proto, now);
  const int n = static_cast<int>(job.gpus.size());
  double end = start;
  if (n > 1 && job.bytes > 0) end = a.run(f, p, wire(p, run.proto), job, now, start, run);
  run.traffic.compact();
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
