#pragma once
// Collectives as traffic: each algorithm is written as the transfers NCCL's would make (ring
// steps, tree edges, in-switch reduce-loads and multicast stores, pairwise exchanges), cut into
// pipelined slices, each slice forwarded as soon as it has landed, and every transfer booked on
// the fabric's link calendars. Time, bus bandwidth and link limits then follow from the traffic,
// not from a closed-form formula.
#include <string>
#include <vector>

#include "models/interconnect/fabric.h"
#include "models/interconnect/interconnect_params.h"

namespace xpusim {

enum class CollectiveKind { all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv };
enum class CollectiveAlgo { automatic, ring, tree, nvls, direct };

const char* collective_algo_name(CollectiveAlgo a);

// nccl-tests' conversion from algorithm bandwidth (size / time) to bus bandwidth, the rate each
// GPU's links must carry: 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
// all-to-all, 1 for broadcast and send/recv.
double bus_factor(CollectiveKind k, int n);

struct CollectiveJob {
  CollectiveKind kind = CollectiveKind::all_reduce;
  CollectiveAlgo algo = CollectiveAlgo::automatic;
  // nccl-tests' "size": the buffer each GPU reduces (all-reduce), the gathered output
  // (all-gather), the input (reduce-scatter), each GPU's whole send buffer (all-to-all), the
  // broadcast buffer, the message (send/recv).
  double bytes = 0;
  std::vector<int> gpus;  // participants; broadcast's root and send/recv's sender come first
};

struct CollectiveRun {
  CollectiveAlgo algo = CollectiveAlgo::ring;
  double start_s = 0, end_s = 0;
  int steps = 0;          // dependent hops a slice takes from start to end
  int channels = 1;       // rings run side by side (one per NIC across domains)
  int slices = 1;         // per chunk
  double slice_bytes = 0;
  double transfers = 0;   // transfers booked
  Traffic traffic;
  std::string description;
};

// Which algorithm `automatic` resolves to, or "" and the reason a named one cannot run here.
CollectiveAlgo resolve_algo(const Topology& t, const CollectiveJob& job);
std::string unsupported(const Topology& t, const CollectiveJob& job);

// Books the collective's transfers from `now` and returns when the last byte has landed.
// Precondition: unsupported(f, job) is empty and every participant is reachable.
CollectiveRun run_collective(Fabric& f, const CollectiveParams& p, const CollectiveJob& job, double now);

}  // namespace xpusim
