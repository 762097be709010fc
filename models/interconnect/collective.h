#pragma once
// Collectives as traffic: each algorithm is written as the transfers NCCL's would make (ring
// steps, tree edges, in-switch reduce-loads and multicast stores, pairwise exchanges), cut into
// pipelined slices, each slice forwarded as soon as it has landed, and every transfer booked on
// the fabric's link calendars. Time, bus bandwidth and link limits then follow from the traffic,
// not from a closed-form formula.
#include <string>
#include <vector>

#include "models/interconnect/collective_names.h"
#include "models/interconnect/fabric.h"
#include "models/interconnect/interconnect_params.h"

namespace xpusim {

// nccl-tests' conversion from algorithm bandwidth (size / time) to bus bandwidth, the rate each
// GPU's links must carry: 2(n-1)/n for all-reduce, (n-1)/n for all-gather, reduce-scatter and
// all-to-all, 1 for broadcast and send/recv.
double bus_factor(CollectiveKind k, int n);

struct CollectiveJob {
  CollectiveKind kind = CollectiveKind::all_reduce;
  CollectiveAlgo algo = CollectiveAlgo::automatic;
  CollectiveProto proto = CollectiveProto::automatic;  // automatic: collectives.protocol, then the tuner
  // nccl-tests' "size": the buffer each GPU reduces (all-reduce), the gathered output
  // (all-gather), the input (reduce-scatter), each GPU's whole send buffer (all-to-all), the
  // broadcast buffer, the message (send/recv).
  double bytes = 0;
  std::vector<int> gpus;  // participants; broadcast's root and send/recv's sender come first
  // one_shot and two_shot: the kernel first copies its input into its own shared buffer
  // (TensorRT-LLM's), taking copy_in_s (its HBM read and write); one-shot then ends without a
  // closing barrier, since no peer reads the caller's input in place.
  bool copy_in = false;
  double copy_in_s = 0;
};

struct CollectiveRun {
  CollectiveAlgo algo = CollectiveAlgo::ring;
  CollectiveProto proto = CollectiveProto::simple;
  double start_s = 0, end_s = 0;
  int steps = 0;          // dependent hops a slice takes from start to end
  int channels = 1;       // rings run side by side (one per NIC across domains)
  int slices = 1;         // per chunk
  double slice_bytes = 0;
  double transfers = 0;   // transfers booked
  Traffic traffic;
  std::string description;
};

// The algorithm `automatic` resolves to by the system's structure (nvls where the switches reduce
// and more than two GPUs take part, the ring across domains, direct for pairwise exchanges);
// choose() may still prefer the ring to nvls, and across domains the tree, nvls_tree or collnet.
CollectiveAlgo resolve_algo(const Topology& t, const CollectiveJob& job);

// The algorithm and protocol a collective runs, and the tuner's estimate that chose them.
struct Choice {
  CollectiveAlgo algo = CollectiveAlgo::ring;
  CollectiveProto proto = CollectiveProto::simple;
  double estimate_s = 0;
};
// What NCCL's tuner would run: the job's algorithm and protocol where it names them (else
// collectives.protocol), and among the rest the least estimated time, latency + size / bandwidth
// per algorithm and protocol. Where `auto` resolved to nvls, the ring competes with it; an
// all-reduce across domains weighs the ring, the tree, nvls_tree and collnet (where each can run
// it). In-switch algorithms run Simple only, as NCCL's do.
Choice choose(const Topology& t, const CollectiveParams& p, const CollectiveJob& job);
// The tuner's closed-form estimate (launch excluded).
double estimate_s(const Topology& t, const CollectiveParams& p, const CollectiveJob& job, CollectiveAlgo algo,
                  CollectiveProto proto);
// "" or the reason the job's named algorithm or protocol cannot run here.
std::string unsupported(const Topology& t, const CollectiveJob& job);

// The CTAs a collective's kernel holds on each GPU while it runs, as NCCL sizes them
// (src/enqueue.cc, topoGetAlgoInfo, 2.19-2.21; later releases give a tree 640 threads): one per channel, `threads` each, fewer channels
// and threads for small sizes; each CTA's registers and shared memory as NCCL's kernels are built.
// No CTAs for the direct exchanges and a runtime's own all-reduce kernels (not modelled).
struct CollectiveCtas {
  int ctas = 0;
  int threads = 0;
  int registers = 0;        // per CTA
  double shared_bytes = 0;  // per CTA
};
CollectiveCtas collective_ctas(const Topology& t, const CollectiveParams& p, const CollectiveJob& job, const Choice& c);

// Books the collective's transfers from `now` and returns when the last byte has landed.
// Precondition: unsupported(f, job) is empty and every participant is reachable.
CollectiveRun run_collective(Fabric& f, const CollectiveParams& p, const CollectiveJob& job, double now);

}  // namespace xpusim
