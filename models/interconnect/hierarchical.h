#pragma once
// All-reduces that join NVLink domains in NCCL's two levels: inside each domain the NVSwitch
// chips reduce-scatter a slice over the domain's GPUs (NVLS: every GPU loads the slice, the
// switches reduce it and return each GPU its part), each GPU carries its part across the
// domains, and the switches multicast the reduced parts back to every GPU of the domain.
//   nvls_tree  the parts cross the domains on NCCL's double binary tree, GPU i of each domain
//              with GPU i of the others (NVLSTree, NCCL 2.18 on: NVLink SHARP inside, a tree
//              between nodes, src/graph/tuning.cc).
//   collnet    the parts go once through each GPU's NIC to its leaf switch, which reduces them
//              with the other domains' (and again at the spine where they span leaves), and
//              come back reduced (CollNet with InfiniBand SHARP; with NVLS inside, NCCL's
//              multi-node NVLS). Without NVLS inside, the parts are scattered and gathered by
//              direct sends over NVLink (CollNet Direct).
// Each needs as many of its GPUs in every domain it spans.
#include <functional>
#include <string>
#include <vector>

#include "models/interconnect/algorithm.h"

namespace xpusim {

// The job's GPUs by domain, in the order they first appear; empty where a domain holds a
// different number of them than the first.
std::vector<std::vector<int>> by_domain(const Topology& f, const std::vector<int>& gpus);

// What nvls_tree and collnet refuse alike: kinds, protocols, one domain, uneven domains.
std::string hierarchical_refusal(CollectiveAlgo a, const Topology& f, const CollectiveJob& job);

// One domain's part of a slice: its GPUs (members), the slice's bytes, and when each member
// holds its reduced part (reduce-scatter) or has the whole slice (all-gather).
struct DomainSlice {
  const std::vector<int>* members = nullptr;
  double slice = 0;
  double part() const { return slice / static_cast<double>(members->size()); }
};

// Reduce-scatter of a slice inside a domain from `ready`: by the switches (NVLS) where they
// reduce, else by direct sends of each part to its owner. Writes when each member has its part.
void domain_reduce_scatter(Fabric& f, const Wire& w, double now, double ready, const DomainSlice& d,
                           std::vector<double>& part_ready, CollectiveRun& run);
// All-gather of the reduced parts inside a domain, each from when its member has it; returns
// when every member has the whole slice.
double domain_all_gather(Fabric& f, const Wire& w, double now, const std::vector<double>& part_done,
                         const DomainSlice& d, CollectiveRun& run);

// The domains reduce inside by NVLS: their switches reduce and each holds two GPUs or more.
bool nvls_inside(const Topology& f, const std::vector<std::vector<int>>& doms);

// One slice's parts, domain by domain: [d][i] is GPU i of domain d's.
using DomainParts = std::vector<std::vector<double>>;
// A two-level all-reduce, slice by slice: each domain's reduce-scatter (booked kWindow slices
// ahead, as NVLS's loads are), `across` for the slice's parts between the domains (it reads
// when each GPU holds its domain's sum, `ready`, and writes when it holds the total, `done`,
// which starts as `ready`), then each domain's all-gather. Returns when every GPU has the
// whole buffer.
double run_two_level(Fabric& f, const Wire& w, const std::vector<std::vector<int>>& doms, const Slicing& sl,
                     double now, double start, CollectiveRun& run,
                     const std::function<void(const DomainParts& ready, DomainParts& done)>& across);

// The estimate's part inside the domains: the NVLS phases' bytes per port at their rate.
double domain_phases_s(const Topology& f, const CollectiveJob& job, int per_domain);

}  // namespace xpusim
