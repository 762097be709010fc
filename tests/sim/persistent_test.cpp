// Persistent GEMM kernels (kernels.gemm.persistent, KernelProgram::hand_over): a resident CTA's
// producer loads its next tile while its consumers finish the last one.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "helpers.h"

using xpusim::testing::simulate;
using xpusim::testing::kH100;
using xpusim::testing::d;

namespace {

YAML::Node gemm(long m, long n, long k, bool persistent, const std::string& dtype = "fp8", const std::vector<std::string>& more = {}) {
  const std::string t = "xpusim_trace: 1\nops:\n  - {name: g, kind: gemm, m: " + std::to_string(m) + ", n: " + std::to_string(n) +
                        ", k: " + std::to_string(k) + ", dtype: " + dtype + "}\n";
  std::vector<std::string> sets = {"power.mode=fixed_clock", std::string("kernels.gemm.persistent=") + (persistent ? "true" : "false")};
  sets.insert(sets.end(), more.begin(), more.end());
  return simulate(kH100, t, sets)["ops"][0];
}
}  // namespace

TEST_CASE("a persistent GEMM loads each next tile during the last one: short K loops of many waves stop waiting on memory",
          "[sim][gemm][persistent]") {
  // 4096 x 32768 x 512 in fp8: 4096 tiles of four K steps, 31 per SM. One CTA per tile waits a
  // memory round trip for its first stages every tile; a persistent CTA has them in flight.
  const YAML::Node one = gemm(4096, 32768, 512, false), walk = gemm(4096, 32768, 512, true);
  INFO(d(one["time_s"]) * 1e6 << " us one CTA per tile, " << d(walk["time_s"]) * 1e6 << " us persistent");
  CHECK(d(walk["time_s"]) < 0.85 * d(one["time_s"]));
  CHECK_THAT(walk["lowering"]["description"].as<std::string>(), Catch::Contains("persistent: 132 CTAs"));
  // The same work either way: every tile once, the same MACs and the same outputs written.
  CHECK(d(walk["flops"]) == d(one["flops"]));
  CHECK(d(walk["memory"]["l2_write_bytes"]) == Approx(d(one["memory"]["l2_write_bytes"])).epsilon(1e-6));
  // and never past the tensor cores' peak.
  CHECK(d(walk["tflops"]) <= d(walk["peak_tflops"]));
}

TEST_CASE("a GEMM of one wave of tiles or less is not persistent, and runs as before", "[sim][gemm][persistent]") {
  const YAML::Node one = gemm(1024, 1024, 1024, false, "bf16"), walk = gemm(1024, 1024, 1024, true, "bf16");
  CHECK(d(walk["time_s"]) == d(one["time_s"]));
  CHECK_THAT(walk["lowering"]["description"].as<std::string>(), !Catch::Contains("persistent"));
}

TEST_CASE("a persistent turn fills its stages as its predecessor frees buffers, so deeper pipelines never lose",
          "[sim][gemm][persistent]") {
  // 32768 x 4096 x 512 in bf16: eight K steps a tile, bound by the L2. When the next turn issued
  // all its stages at the hand-over, four stages ran 8% slower than three (188 against 175 us):
  // its early loads took the L2 ahead of the finishing turn's output stores, which its compute
  // waits for. Filled one stage per freed buffer, as a producer can, four are no slower.
  const YAML::Node three = gemm(32768, 4096, 512, true, "bf16", {"kernels.gemm.max_stages=3"});
  const YAML::Node four = gemm(32768, 4096, 512, true, "bf16", {"kernels.gemm.max_stages=4"});
  INFO(d(three["time_s"]) * 1e6 << " us with 3 stages, " << d(four["time_s"]) * 1e6 << " us with 4");
  CHECK_THAT(four["lowering"]["description"].as<std::string>(), Catch::Contains("4 stages"));
  CHECK_THAT(three["lowering"]["description"].as<std::string>(), Catch::Contains("3 stages"));
  CHECK(d(four["time_s"]) <= 1.005 * d(three["time_s"]));
}

// A GEMM CTA's set-up (kernels.gemm.cta_setup) and the chained MMAs of a K step
// (tensor_core.mma_latency), which set what small GEMMs cost.
TEST_CASE("a GEMM CTA's set-up overlaps its first loads, and a persistent kernel pays it once per slot, not per tile",
          "[sim][gemm][persistent]") {
  // 64^3: one K step. With no set-up the first loads' round trip from HBM is on the path; a
  // set-up longer than it hides it, so the kernel grows by less than the set-up.
  const YAML::Node none = gemm(64, 64, 64, false, "bf16", {"kernels.gemm.cta_setup=0 s"});
  const YAML::Node some = gemm(64, 64, 64, false, "bf16", {"kernels.gemm.cta_setup=2 us"});
  const double grew = d(some["time_s"]) - d(none["time_s"]);
  INFO(d(none["time_s"]) * 1e6 << " us without a set-up, " << d(some["time_s"]) * 1e6 << " us with 2 us");
  CHECK(grew > 1.0e-6);
  CHECK(grew < 1.9e-6);
  // 4096 x 32768 x 512 in fp8: 31 tiles per slot. A set-up per tile would add 31 of them.
  const YAML::Node walk0 = gemm(4096, 32768, 512, true, "fp8", {"kernels.gemm.cta_setup=0 s"});
  const YAML::Node walk2 = gemm(4096, 32768, 512, true, "fp8", {"kernels.gemm.cta_setup=2 us"});
  INFO(d(walk0["time_s"]) * 1e6 << " us persistent without a set-up, " << d(walk2["time_s"]) * 1e6 << " us with 2 us");
  CHECK(d(walk2["time_s"]) - d(walk0["time_s"]) < 2.5e-6);
  CHECK(d(walk2["time_s"]) > d(walk0["time_s"]));
}

TEST_CASE("a wgmma tile's K steps cost their chained MMAs' latency, each its fill and its MACs", "[sim][gemm]") {
  // 64 x N in one 64xN tile: each K step four wgmmas of 64xNx16 chained on one accumulator,
  // each tensor_core.mma_latency plus its 64 x N x 16 MACs at the SM's 2048 bf16 MACs a clock
  // (4 tensor cores x 512). From K = 1024 to 4096, 48 steps more.
  auto run = [](long n, long k, const std::string& lat) {
    return gemm(64, n, k, false, "bf16",
                {"kernels.gemm.tiles=[64x" + std::to_string(n) + "]", "kernels.gemm.split_k=false", "tensor_core.mma_latency=" + lat});
  };
  const double clock = 1.83e9;  // power.mode fixed_clock: sm.clock
  for (const long n : {8L, 48L})
    for (const std::string lat : {"40 cycles", "80 cycles"}) {
      const double cycles = lat == "40 cycles" ? 40 : 80;
      const double macs = 64.0 * static_cast<double>(n) * 16.0 / 2048.0;
      const double slope = (d(run(n, 4096, lat)["time_s"]) - d(run(n, 1024, lat)["time_s"])) / 48;
      INFO("64x" << n << ", " << lat << ": " << slope * 1e9 << " ns per K step");
      CHECK(slope == Approx(4 * (cycles + macs) / clock).epsilon(0.05));
    }
  CHECK_THAT(run(8, 1024, "40 cycles")["lowering"]["description"].as<std::string>(), Catch::Contains("tile 64x8x64"));
}

TEST_CASE("an fp8 GEMM's epilogue waits for its per-tensor scales: one memory round trip after the K loop", "[sim][gemm]") {
  // 64^3 in one K step either way (bf16 K steps of 64, fp8 of 128): the same kernel but for the
  // scales' load, whose page nothing else touched (a DRAM round trip, about 0.35 us).
  const double bf16 = d(gemm(64, 64, 64, false, "bf16")["time_s"]);
  const double fp8 = d(gemm(64, 64, 64, false, "fp8")["time_s"]);
  INFO("bf16 " << bf16 * 1e6 << " us, fp8 " << fp8 * 1e6 << " us");
  CHECK(fp8 - bf16 > 0.25e-6);
  CHECK(fp8 - bf16 < 0.6e-6);
}
