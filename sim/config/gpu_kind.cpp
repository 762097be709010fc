#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "sim/config/chip_kind.h"
#include "sim/config/units.h"

// The GPU (kind: gpu): SMs, tensor cores, L2, HBM and, for a system of several, NVLink,
// NVSwitch and NICs (sim/config/schema.cpp lists its parameters).
namespace xpusim::config {
namespace {

// Rules that tie the GPU's parameters together; each names the key whose value breaks it.
void check_consistency(const LoadedConfig& cfg) {
  auto bad = [&](const std::string& key, const std::string& msg) { fail_at_key(cfg, key, msg); };
  const GpuConfig& g = cfg.chip.gpu;
  if (g.l2.line_bytes % g.l2.sector_bytes != 0 || g.l2.line_bytes / g.l2.sector_bytes > 32)
    bad("l2.sector_bytes", "must divide l2.line_bytes into at most 32 sectors");
  if (g.l2.size_bytes / g.l2.slices < static_cast<double>(g.l2.line_bytes) * g.l2.associativity)
    bad("l2.slices", "each slice must hold at least one set (size / slices >= line_bytes x associativity)");
  if (g.l2.slices % g.noc.dies != 0) bad("l2.slices", "must be a multiple of noc.dies");
  if (g.hbm.channel_count() % g.noc.dies != 0)
    bad("hbm.stacks", "stacks x channels_per_stack x pseudo_channels must be a multiple of noc.dies");
  const double burst = g.hbm.burst_bytes();
  // A burst is the DRAM model's unit of transfer (an integer count of bytes): below one byte,
  // or a fraction of one, every division by it is meaningless.
  if (burst < 1 || burst != std::floor(burst))
    bad("hbm.burst_length", "hbm.bus_bits/8 x hbm.burst_length must be a whole number of bytes, at least 1 (here " +
                                units::format(burst, units::Dim::Size) + ")");
  if (std::fmod(g.hbm.row_bytes, burst) != 0) bad("hbm.row_size", "must be a multiple of the burst (bus_bits/8 x burst_length)");
  if (std::fmod(g.hbm.interleave_bytes, burst) != 0 || g.hbm.interleave_bytes > g.hbm.row_bytes)
    bad("hbm.interleave", "must be a multiple of the burst and at most hbm.row_size");
  if (g.hbm.tRFC >= g.hbm.tREFI) bad("hbm.tRFC", "must be shorter than hbm.tREFI");
  if (g.sm.l1_cache_bytes < 128.0 * g.sm.l1_associativity) bad("sm.l1_cache", "must hold at least one set of 128 B lines");
  // tcgen05 kernels need Blackwell's tensor cores; Blackwell may run Hopper's kernels (an
  // ablation: what the old kernels would do on the new chip).
  for (const auto& [key, mma] : {std::pair<std::string, Mma>{"kernels.gemm.mma", g.kernels.gemm_mma},
                                 {"kernels.attention.mma", g.kernels.attention_mma}}) {
    if (mma != Mma::tcgen05) continue;
    if (g.tensor_core.generation < 5)
      bad(key, "tcgen05 needs fifth-generation tensor cores, and tensor_core.generation is " +
                   std::to_string(g.tensor_core.generation) + " (Hopper's kernels are wgmma)");
    if (g.tensor_core.tensor_memory_bytes < 128.0 * 4 * 32)
      bad("tensor_core.tensor_memory", "tcgen05 kernels (" + key + ") keep accumulators in tensor memory; it must hold at least 32 columns (16 KiB)");
  }
  if (g.kernels.gemm_mma == Mma::wgmma && g.tensor_core.per_sm > 0 && g.tensor_core.generation < 4)
    bad("kernels.gemm.mma", "wgmma needs Hopper's tensor cores (generation 4 or more), and tensor_core.generation is " +
                                std::to_string(g.tensor_core.generation) + ": its kernels are mma_sync");
  if (g.kernels.gemm_persistent && g.kernels.gemm_mma == Mma::mma_sync)
    bad("kernels.gemm.persistent", "persistent GEMM kernels are wgmma's (Hopper's); kernels.gemm.mma is mma_sync");
  if (g.kernels.gemm_cta_pair && g.kernels.gemm_mma != Mma::tcgen05)
    bad("kernels.gemm.cta_pair", "the 2-SM MMA is a tcgen05 instruction; kernels.gemm.mma is " + mma_name(g.kernels.gemm_mma));
  if (g.kernels.gemm_cta_pair && g.kernels.gemm_cluster_m % 2 != 0)
    bad("kernels.gemm.cluster_m", "must be even with kernels.gemm.cta_pair (a cluster holds whole 2-SM pairs)");
  const SystemParams& sys = g.system;
  if (sys.gpus() > 131072) bad("system.domains", "domains x gpus_per_domain must be at most 131072 GPUs");
  if (sys.gpus_per_domain > 1) {
    if (g.nvlink.links == 0) bad("nvlink.links", "a domain of several GPUs needs NVLink ports (nvlink.links > 0)");
    if (g.nvswitch.count == 0) bad("nvswitch.count", "a domain of several GPUs needs NVSwitch chips (nvswitch.count > 0)");
    if (g.nvswitch.count > g.nvlink.links)
      bad("nvswitch.count", "is more than nvlink.links: every switch chip needs a link from each GPU");
    // Link l of every GPU lands on chip l x count / links: the busiest chip takes ceil(links / count)
    // links from each GPU.
    const int per_chip = (g.nvlink.links + g.nvswitch.count - 1) / g.nvswitch.count;
    if (static_cast<long long>(per_chip) * sys.gpus_per_domain > g.nvswitch.ports)
      bad("nvswitch.ports", "too few: " + std::to_string(sys.gpus_per_domain) + " GPUs x " + std::to_string(per_chip) +
                                " links each need " + std::to_string(per_chip * sys.gpus_per_domain) + " ports on a switch chip");
  }
  const NetworkParams& net = g.network;
  // What shapes a fat tree means nothing to a non-blocking network: a value other than the
  // default there is refused rather than ignored (a resolved config, which writes the defaults
  // out, loads again).
  if (!net.fat_tree()) {
    const NetworkParams plain;
    const std::pair<const char*, bool> shaped[] = {
        {"network.rails", net.rails != plain.rails},
        {"network.domains_per_leaf", net.domains_per_leaf != plain.domains_per_leaf},
        {"network.oversubscription", net.oversubscription != plain.oversubscription},
        {"network.switch_latency", std::abs(net.switch_latency_s - plain.switch_latency_s) > 1e-15},
        {"network.pxn", net.pxn != plain.pxn}};
    for (const auto& [key, set] : shaped)
      if (set) bad(key, "shapes a fat tree, and network.topology is " + net.topology + " (set network.topology: fat_tree)");
  }
  if (net.fat_tree() && net.rails > 0 && sys.gpus_per_domain % net.rails != 0)
    bad("network.rails", "must divide system.gpus_per_domain (" + std::to_string(sys.gpus_per_domain) +
                             "): a domain's NICs spread evenly over the rails");
}

// Parses system.failed_links ("gpu:link") into pairs, each checked against the system.
void resolve_failed_links(LoadedConfig& cfg) {
  SystemParams& sys = cfg.chip.gpu.system;
  sys.failed_links.clear();
  for (const auto& t : sys.failed_links_text) {
    int gpu = -1, link = -1;
    char tail = 0;
    if (std::sscanf(t.c_str(), "%d:%d%c", &gpu, &link, &tail) != 2)
      fail_at_key(cfg, "system.failed_links", "'" + t + "' is not gpu:link (e.g. \"3:0\")");
    if (gpu < 0 || gpu >= sys.gpus())
      fail_at_key(cfg, "system.failed_links", "'" + t + "': no GPU " + std::to_string(gpu) + " in a system of " +
                                                  std::to_string(sys.gpus()));
    if (link < 0 || link >= cfg.chip.gpu.nvlink.links)
      fail_at_key(cfg, "system.failed_links", "'" + t + "': no link " + std::to_string(link) + " (nvlink.links is " +
                                                  std::to_string(cfg.chip.gpu.nvlink.links) + ")");
    const std::pair<int, int> p{gpu, link};
    if (std::find(sys.failed_links.begin(), sys.failed_links.end(), p) != sys.failed_links.end())
      fail_at_key(cfg, "system.failed_links", "'" + t + "' is listed twice");
    sys.failed_links.push_back(p);
  }
}

void resolve_gpu(LoadedConfig& cfg) {
  const double v = cfg.chip.gpu.energy.voltage_v;
  if (cfg.energy_table && v > 0 && v <= cfg.energy_table->threshold_voltage)
    fail_at_key(cfg, "energy.voltage", "is at or below the table's threshold voltage");
  check_consistency(cfg);
  resolve_failed_links(cfg);
}

}  // namespace

const ChipKind& gpu_kind() {
  static const ChipKind kind{
      "gpu",
      gpu_schema,
      [](ChipConfig& c) -> EnergyConfig& { return c.gpu.energy; },
      [](ChipConfig& c) -> PowerParams& { return c.gpu.power; },
      resolve_gpu,
      [](const ChipConfig&, PowerParams&) {},  // a GPU's curve and boost are its config's
      [](const ChipConfig& c) { return c.gpu.noc.dies; },
  };
  return kind;
}

}  // namespace xpusim::config
