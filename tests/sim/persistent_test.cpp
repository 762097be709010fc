// Persistent GEMM kernels (kernels.gemm.persistent, KernelProgram::hand_over): a resident CTA's
// producer loads its next tile while its consumers finish the last one.
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "helpers.h"

using xpusim::testing::simulate;
using xpusim::testing::source_path;

namespace {
const std::string kH100 = source_path("configs/h100-sxm.yaml");

YAML::Node gemm(long m, long n, long k, bool persistent, const std::string& dtype = "fp8", const std::vector<std::string>& more = {}) {
  const std::string t = "xpusim_trace: 1\nops:\n  - {name: g, kind: gemm, m: " + std::to_string(m) + ", n: " + std::to_string(n) +
                        ", k: " + std::to_string(k) + ", dtype: " + dtype + "}\n";
  std::vector<std::string> sets = {"power.mode=fixed_clock", std::string("kernels.gemm.persistent=") + (persistent ? "true" : "false")};
  sets.insert(sets.end(), more.begin(), more.end());
  return simulate(kH100, t, sets)["ops"][0];
}
double d(const YAML::Node& n) { return n.as<double>(); }
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
