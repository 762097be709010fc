// Memory-system bounds in the style of Ramulator's analytic tests, end to end through the SM,
// network, L2 and DRAM: unloaded latencies equal the sum of the configured components, and the
// memory levels show up in a pointer chase as the footprint grows.
#include <catch2/catch.hpp>

#include "helpers.h"
#include "sim/config/config_loader.h"

using xpusim::testing::simulate;
using xpusim::testing::kH100;
using xpusim::testing::source_path;

namespace {
// Latencies are sums of components given in cycles of sm.clock: run at that clock, as latency
// microbenchmarks on real cards are run with locked clocks.
const std::string kFixed = "power.mode=fixed_clock";

std::string chase(long footprint, long stride, long loads, bool warmup = true) {
  return "xpusim_trace: 1\nops:\n  - {name: chase, kind: pointer_chase, footprint: " + std::to_string(footprint) +
         ", stride: " + std::to_string(stride) + ", loads: " + std::to_string(loads) +
         ", warmup: " + (warmup ? "true" : "false") + "}\n";
}
double cycles_per_load(const YAML::Node& r) { return r["ops"][0]["microbenchmark"]["access_latency_cycles"].as<double>(); }
}  // namespace

TEST_CASE("pointer chase: an L1 hit, an L2 hit and a DRAM access cost the sum of their components",
          "[sim][memory]") {
  const auto cfg = xpusim::config::load_config(kH100);
  const auto& g = cfg.chip.gpu;
  const double clk = g.sm.clock_hz;
  // One dependent load also issues two instructions (load, address arithmetic) from the chasing
  // warp's one scheduler: two cycles.
  const double issue = 2.0;

  const double l1 = cycles_per_load(simulate(kH100, chase(16 << 10, 128, 2000), {kFixed}));
  CHECK(l1 == Approx(g.sm.l1_latency_cycles + issue).epsilon(0.01));

  // 4 MiB: far beyond the L1, well inside the L2.
  const double l2 = cycles_per_load(simulate(kH100, chase(4 << 20, 128, 2000), {kFixed}));
  CHECK(l2 == Approx(g.sm.l1_latency_cycles + 2 * g.noc.latency_cycles + g.l2.hit_latency_cycles + issue).epsilon(0.01));

  // Cold: every load misses the L2 and opens a row (closed-page policy, refresh out of the way).
  const double dram = cycles_per_load(
      simulate(kH100, chase(256 << 20, 1 << 16, 2000, false), {"hbm.page_policy=closed", "hbm.tRFC=0 ns", kFixed}));
  const double dram_s = g.hbm.controller_latency_s + g.hbm.tRCD + g.hbm.tCL + g.hbm.burst_s();
  CHECK(dram == Approx(g.sm.l1_latency_cycles + 2 * g.noc.latency_cycles + g.l2.hit_latency_cycles + dram_s * clk + issue)
                    .epsilon(0.01));
  CHECK(l1 < l2);
  CHECK(l2 < dram);
}

TEST_CASE("pointer chase on two dies: far-die L2 hits pay the die-to-die latency both ways", "[sim][memory]") {
  const std::string b200 = source_path("configs/b200.yaml");
  const auto cfg = xpusim::config::load_config(b200);
  const auto& g = cfg.chip.gpu;
  const double near = g.sm.l1_latency_cycles + 2 * g.noc.latency_cycles + g.l2.hit_latency_cycles;
  const double l2 = cycles_per_load(simulate(b200, chase(4 << 20, 128, 4000), {kFixed}));
  // Half the granules live on the other die: on average one crossing each way per two loads.
  CHECK(l2 > near + 0.3 * 2 * g.noc.d2d_latency_s * g.sm.clock_hz);
  CHECK(l2 < near + 0.7 * 2 * g.noc.d2d_latency_s * g.sm.clock_hz + 2);
  const double one_die = cycles_per_load(simulate(b200, chase(4 << 20, 128, 4000), {"noc.dies=1", kFixed}));
  CHECK(one_die == Approx(near + 2.0).epsilon(0.01));  // and two instructions from the warp's one scheduler
}

TEST_CASE("GEMM and elementwise reports carry hit rates and bytes at each level", "[sim][memory]") {
  const YAML::Node g = simulate(kH100, "xpusim_trace: 1\nops:\n  - {name: g, kind: gemm, m: 2048, n: 2048, k: 2048}\n");
  const YAML::Node m = g["ops"][0]["memory"];
  CHECK(m["l2_hit_rate"].as<double>() > 0.5);  // tiles re-read by neighbouring CTAs
  CHECK(m["hbm_row_hit_rate"].as<double>() > 0);
  CHECK(m["hbm_row_hit_rate"].as<double>() <= 1);
  CHECK(m["smem_bytes"].as<double>() > 0);
  CHECK(m["noc_bytes"].as<double>() >= m["l2_read_bytes"].as<double>());
  const YAML::Node e = simulate(kH100, "xpusim_trace: 1\nops:\n  - {name: e, kind: elementwise, shape: [16777216]}\n");
  const YAML::Node em = e["ops"][0]["memory"];
  CHECK(em["l1_read_bytes"].as<double>() == Approx(16777216.0 * 2));
  CHECK(em["l1_hit_rate"].as<double>() == 0);  // streaming: nothing is read twice
  CHECK(em["l2_hit_rate"].as<double>() == 0);
  CHECK(em["hbm_read_bytes"].as<double>() == Approx(16777216.0 * 2));
  CHECK(em["hbm_row_hit_rate"].as<double>() > 0.5);
}
