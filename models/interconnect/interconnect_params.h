#pragma once
// Multi-GPU system parameters: the GPUs and NVLink domains of a system, each GPU's NVLink ports,
// the NVSwitch chips of a domain, the scale-out NIC per GPU, and how collectives are cut into
// pipelined slices. Declared (name, unit, range, meaning) in sim/config/schema.cpp; models only
// see these plain structs.
#include <string>
#include <utility>
#include <vector>

namespace xpusim {

struct SystemParams {
  int domains = 1;          // NVLink domains (nodes of a DGX/HGX, racks of an NVL72), joined by NICs
  int gpus_per_domain = 1;  // GPUs sharing one NVSwitch fabric
  std::string detail = "full";  // "full": every GPU simulated; "representative": one GPU, others mirror it
  std::vector<std::string> failed_links_text;  // "gpu:link" as written
  std::vector<std::pair<int, int>> failed_links;  // (gpu, link), parsed and checked by the config layer
  int gpus() const { return domains * gpus_per_domain; }
};

// A GPU's NVLink ports. NCCL spreads a transfer over all of a GPU's links (one channel per
// link group), so the model gangs the working links into one pipe per direction.
struct NvlinkParams {
  int links = 0;              // ports per GPU
  double link_bandwidth = 0;  // B/s per link per direction (signalling rate)
  double latency_s = 0;       // one way, GPU port to switch port (PHY, flit packing, wire)
  double efficiency = 1;      // payload share of the signalling rate (flit headers, flow control, protocol)
};

// The NVSwitch chips of a domain. Link l of every GPU lands on switch chip l x count / links.
struct NvswitchParams {
  int count = 0;              // switch chips per domain
  int ports = 0;              // NVLink ports per chip
  double latency_s = 0;       // port to port
  bool reduction = false;     // in-switch reduction and multicast (NVLink SHARP, "NVLS")
  double nvls_efficiency = 1; // payload share of the links' rate that NVLS reduce-loads and multicast stores reach
};

// The scale-out network adapter of each GPU (InfiniBand or Ethernet), for traffic between domains.
struct NicParams {
  double bandwidth = 0;   // B/s per direction per GPU
  double latency_s = 0;   // one way, GPU to GPU through the network (adapters and switches)
  double efficiency = 1;  // payload share of the line rate
};

// The network that joins the domains' NICs. `nonblocking`: every NIC reaches every other at its
// line rate through one switch (nic.latency). `fat_tree`: a two-tier tree of leaf and spine
// switches. A leaf takes the NICs of `domains_per_leaf` domains (a scalable unit); with `rails`
// leaves per unit (rail-optimised), NIC i of a domain lands on leaf i mod rails, so traffic
// between GPUs of one rail index stays on its leaf. Traffic between leaves climbs to the spine
// through the leaf's uplinks, whose rate is its NICs' line rate over `oversubscription`, and
// crosses two more switches. A transfer to a GPU on another rail first moves over NVLink to the
// sending domain's GPU on the receiver's rail (NCCL's PXN) where `pxn` is set, and climbs to the
// spine otherwise.
struct NetworkParams {
  std::string topology = "nonblocking";  // nonblocking or fat_tree
  int rails = 0;                  // leaves per scalable unit; 0: one per GPU of a domain
  int domains_per_leaf = 32;      // domains whose NICs (of one rail) share a leaf
  double oversubscription = 1;    // a leaf's line rate down over its uplinks' rate
  double switch_latency_s = 0.2e-6;  // one switch's port-to-port latency (each hop through the spine adds two)
  bool pxn = true;                // cross-rail sends go over NVLink to the rail's GPU first
  bool sharp = false;             // the switches reduce in the network (SHARP): enables collnet
  bool fat_tree() const { return topology == "fat_tree"; }
};

// One of NCCL's protocols: how a step's data and the flag that says it has landed cross a hop.
// LL stores 8 bytes at a time, 4 of data and 4 of flag, so a line is usable the moment it lands;
// LL128 stores 128-byte lines of 120 bytes of data and an 8-byte flag; Simple moves plain data and
// then signals the peer with a flag behind a memory fence, costing a round of latency per step.
struct ProtocolParams {
  double efficiency = 1;   // data share of the bytes that cross the links
  double base_s = 0;       // fixed cost beyond collectives.launch
  double hop_s = 0;        // per dependent hop beyond the fabric's own latency (flag, fence, poll)
  double slice_bytes = 0;  // data per pipeline step
};

struct CollectiveParams {
  double slice_bytes = 0;  // Simple's pipeline slice (NCCL's chunk step); a chunk smaller than this is one slice
  int max_slices = 0;      // at most this many slices per chunk: bounds the events of huge collectives
  double launch_s = 0;     // fixed cost of a collective kernel (launch, handshake with peers)
  int channels = 1;        // channels (CTAs, each its own ring or tree) side by side over the same GPUs
  int nvls_channels = 16;  // CTAs of an nvls collective
  bool occupy_sms = true;  // a collective's CTAs hold SMs while it runs (collective_ctas)
  double nvls_latency_s = 0;  // fixed cost of an nvls all-reduce beyond launch_s (its warps' hand-offs); the tuner weighs it too
  double sharp_latency_s = 0;  // fixed cost of a collnet all-reduce's step through the network beyond launch_s; weighed too
  double p2p_launch_s = 0;  // one_shot and two_shot: a plain kernel's start and end (they need no NCCL handshake)
  std::string protocol = "auto";  // auto (the fastest by the tuner's estimate), ll, ll128 or simple
  ProtocolParams ll, ll128, simple;  // simple.slice_bytes is slice_bytes
};

}  // namespace xpusim
