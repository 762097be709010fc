// Golden report: the shipped small trace on the H100 config must keep giving the figures in
// tests/golden/, within a numeric tolerance. A model change that moves them must update the
// golden file (scripts/update-golden.sh) and say why in its commit.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

#include "helpers.h"
#include "sim/config/config_loader.h"
#include "sim/engine/simulate.h"
#include "sim/report/isolated.h"
#include "sim/trace/trace.h"

using xpusim::testing::source_path;

TEST_CASE("golden report for tests/data/gemm-small.yaml on h100-sxm", "[sim][golden]") {
  const auto cfg = xpusim::config::load_config(source_path("configs/h100-sxm.yaml"));
  const auto tr = xpusim::trace::load_trace(source_path("tests/data/gemm-small.yaml"));
  const YAML::Node got = YAML::Load(xpusim::report::simulate_isolated(cfg, tr));
  const YAML::Node want = YAML::LoadFile(source_path("tests/golden/h100-gemm-small.json"));
  REQUIRE(got["ops"].size() == want["ops"].size());
  auto near = [](const YAML::Node& a, const YAML::Node& b) {
    const double x = a.as<double>(), y = b.as<double>();
    return std::abs(x - y) <= 0.02 * std::abs(y) + 1e-12;
  };
  for (size_t i = 0; i < want["ops"].size(); ++i) {
    const YAML::Node g = got["ops"][i], w = want["ops"][i];
    INFO("op " << w["name"].as<std::string>());
    CHECK(g["name"].as<std::string>() == w["name"].as<std::string>());
    CHECK(g["bound"].as<std::string>() == w["bound"].as<std::string>());
    CHECK(g["lowering"]["description"].as<std::string>() == w["lowering"]["description"].as<std::string>());
    for (const char* f : {"time_s", "flops", "tflops"}) {
      INFO(f << ": got " << g[f].as<double>() << ", golden " << w[f].as<double>());
      CHECK(near(g[f], w[f]));
    }
    for (const char* f : {"hbm_read_bytes", "l2_read_bytes", "l2_hit_rate"}) {
      INFO(f << ": got " << g["memory"][f].as<double>() << ", golden " << w["memory"][f].as<double>());
      CHECK(near(g["memory"][f], w["memory"][f]));
    }
    INFO("tensor util");
    CHECK(near(g["utilisation"]["tensor_cores"], w["utilisation"]["tensor_cores"]));
  }
  CHECK(near(got["total"]["time_s"], want["total"]["time_s"]));
}
