#include "models/interconnect/hierarchical.h"

#include <algorithm>
#include <map>

namespace xpusim {

std::vector<std::vector<int>> by_domain(const Topology& f, const std::vector<int>& gpus) {
  std::vector<std::vector<int>> out;
  std::map<int, size_t> index;
  for (int g : gpus) {
    auto [it, fresh] = index.emplace(f.domain_of(g), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(g);
  }
  for (const auto& m : out)
    if (m.size() != out.front().size()) return {};
  return out;
}

std::string hierarchical_refusal(CollectiveAlgo a, const Topology& f, const CollectiveJob& job) {
  const std::string name = std::string("algorithm ") + collective_algo_name(a);
  if (std::string why = kind_refusal(a, job, true); !why.empty()) return why;
  if (job.algo == a && (job.proto == CollectiveProto::ll || job.proto == CollectiveProto::ll128))
    return name + " runs the simple protocol only (as NCCL's does), not " + collective_proto_name(job.proto);
  if (one_domain(f, job.gpus)) return name + " joins NVLink domains; these devices are all in one";
  if (by_domain(f, job.gpus).empty()) return name + " needs as many of its devices in each NVLink domain it spans";
  return "";
}

void domain_reduce_scatter(Fabric& f, const Wire& w, double now, double ready, const DomainSlice& d,
                           std::vector<double>& part_ready, CollectiveRun& run) {
  const std::vector<int>& m = *d.members;
  part_ready.assign(m.size(), ready);
  if (m.size() < 2) return;
  if (f.topo().nvls()) {
    const double link = f.topo().link_latency(), to_switch = link + f.topo().switch_latency();
    double reduced = ready;
    for (int g : m) reduced = std::max(reduced, f.up(now, ready, g, d.slice, run.traffic) + to_switch);
    for (size_t i = 0; i < m.size(); ++i) part_ready[i] = f.down(now, reduced, m[i], d.part(), run.traffic) + link;
    run.transfers += static_cast<double>(2 * m.size());
    return;
  }
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t j = 0; j < m.size(); ++j) {
      if (i == j) continue;
      part_ready[j] = std::max(part_ready[j], f.send(now, ready, m[i], m[j], w.carried(d.part()), run.traffic) + w.hop_s);
      run.transfers += 1;
    }
}

double domain_all_gather(Fabric& f, const Wire& w, double now, const std::vector<double>& part_done,
                         const DomainSlice& d, CollectiveRun& run) {
  const std::vector<int>& m = *d.members;
  double end = *std::max_element(part_done.begin(), part_done.end());
  if (m.size() < 2) return end;
  if (f.topo().nvls()) {
    // Each member stores its part once; the switches multicast it to every member.
    const double link = f.topo().link_latency(), to_switch = link + f.topo().switch_latency();
    double stored = 0;
    for (size_t i = 0; i < m.size(); ++i)
      stored = std::max(stored, f.up(now, part_done[i], m[i], d.part(), run.traffic) + to_switch);
    for (int g : m) end = std::max(end, f.down(now, stored, g, d.slice, run.traffic) + link);
    run.transfers += static_cast<double>(2 * m.size());
    return end;
  }
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t j = 0; j < m.size(); ++j) {
      if (i == j) continue;
      end = std::max(end, f.send(now, part_done[i], m[i], m[j], w.carried(d.part()), run.traffic) + w.hop_s);
      run.transfers += 1;
    }
  return end;
}

bool nvls_inside(const Topology& f, const std::vector<std::vector<int>>& doms) {
  return f.nvls() && !doms.empty() && doms.front().size() > 1;
}

double run_two_level(Fabric& f, const Wire& w, const std::vector<std::vector<int>>& doms, const Slicing& sl,
                     double now, double start, CollectiveRun& run,
                     const std::function<void(const DomainParts& ready, DomainParts& done)>& across) {
  const size_t D = doms.size();
  std::vector<DomainParts> ready(static_cast<size_t>(sl.slices), DomainParts(D));
  auto reduce_scatter = [&](int j) {
    for (size_t d = 0; d < D; ++d)
      domain_reduce_scatter(f, w, now, start, DomainSlice{&doms[d], sl.bytes}, ready[static_cast<size_t>(j)][d], run);
  };
  for (int j = 0; j < std::min(kWindow, sl.slices); ++j) reduce_scatter(j);
  DomainParts done(D);
  double end = start;
  for (int j = 0; j < sl.slices; ++j) {
    if (j + kWindow < sl.slices) reduce_scatter(j + kWindow);
    done = ready[static_cast<size_t>(j)];
    across(ready[static_cast<size_t>(j)], done);
    for (size_t d = 0; d < D; ++d)
      end = std::max(end, domain_all_gather(f, w, now, done[d], DomainSlice{&doms[d], sl.bytes}, run));
  }
  return end;
}

double domain_phases_s(const Topology& f, const CollectiveJob& job, int per_domain) {
  if (per_domain < 2) return 0;
  const double rate = slowest_nvlink_rate(f, job);
  const double m = per_domain;
  // NVLS: the slice up and a part down to reduce, a part up and the slice down to gather; direct:
  // (m-1) parts each way in each phase.
  if (f.nvls()) return (1 + 1 / m) * job.bytes / (rate * f.nvls_efficiency());
  return 2 * (m - 1) / m * job.bytes / rate;
}

}  // namespace xpusim
