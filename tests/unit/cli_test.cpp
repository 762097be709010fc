#include <catch2/catch.hpp>

#include <sstream>

#include "helpers.h"
#include "sim/cli/cli.h"
#include "sim/config/units.h"

using xpusim::testing::source_path;

namespace {
struct Out {
  int status;
  std::string out, err;
};
Out run_cli(std::vector<std::string> args) {
  args.insert(args.begin(), "xpusim");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  const int s = xpusim::cli::main(static_cast<int>(argv.size()), argv.data(), out, err);
  return {s, out.str(), err.str()};
}
}  // namespace

TEST_CASE("cli: version, help on every command", "[cli]") {
  CHECK_THAT(run_cli({"--version"}).out, Catch::StartsWith("xpusim 0."));
  for (const char* c : {"run", "check", "describe"}) {
    const Out o = run_cli({c, "--help"});
    CHECK(o.status == 0);
    CHECK_THAT(o.out, Catch::Contains(std::string("xpusim ") + c));
  }
  CHECK(run_cli({}).status == 2);
  CHECK_THAT(run_cli({"--help"}).out, Catch::Contains("commands:"));
}

TEST_CASE("cli: usage errors exit 2 with a hint", "[cli][errors]") {
  Out o = run_cli({"rnu"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("unknown command 'rnu'") && Catch::Contains("did you mean 'run'"));
  o = run_cli({"check", "--trase", "x.yaml"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("did you mean '--trace'"));
  o = run_cli({"run", "--config", source_path("configs/h100-sxm.yaml")});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--trace is required"));
  o = run_cli({"describe", "--model", "hmb"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("did you mean 'hbm'"));
  // Fidelity flags are checked before anything runs, a sweep's dry run included.
  const std::string cfg = source_path("configs/h100-sxm.yaml"), tr = source_path("tests/data/gemm-small.yaml");
  o = run_cli({"run", "--config", cfg, "--trace", tr, "--fidelity", "fats"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--fidelity must be fast or exact, got 'fats'"));
  o = run_cli({"run", "--config", cfg, "--trace", tr, "--tolerance", "-1"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--tolerance must be above 0"));
  o = run_cli({"sweep", source_path("configs/sweeps/hbm-x-sms.yaml"), "--dry-run", "--fidelity", "x"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("xpusim sweep: --fidelity must be fast or exact"));
  // A stray word is an error, not ignored, in every command that takes no positional argument.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--config", cfg, "--trace", tr, "stray"}, {"check", "--config", cfg, "stray"},
        {"describe", "--config", cfg, "stray"}}) {
    o = run_cli(args);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Catch::Contains("too many positional options"));
  }
}

TEST_CASE("cli: check validates, bad input exits 1 naming the file", "[cli]") {
  Out o = run_cli({"check", "--config", source_path("configs/h100-sxm.yaml"), "--trace", source_path("traces/gemm/bf16-8192.yaml")});
  CHECK(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("every op lowers onto h100-sxm"));
  o = run_cli({"check", "--config", source_path("tests/data/bad/unknown-key.yaml")});
  CHECK(o.status == 1);
  CHECK_THAT(o.err, Catch::Contains("unknown-key.yaml:3:3: key 'sm.cout'"));
  o = run_cli({"check", "--config", source_path("configs/h100-sxm.yaml"), "--set", "hbm.data_rate=fast"});
  CHECK(o.status == 1);
  CHECK_THAT(o.err, Catch::Contains("--set hbm.data_rate"));
}

TEST_CASE("cli: describe lists every parameter with unit, default and range", "[cli]") {
  const Out o = run_cli({"describe"});
  REQUIRE(o.status == 0);
  for (const char* key : {"sm.count", "sm.clock (frequency)", "l2.size (size)", "hbm.data_rate (frequency)",
                          "tensor_core.macs_per_clock.fp8", "accelerator.vector_width", "dram.bandwidth"})
    CHECK_THAT(o.out, Catch::Contains(key));
  CHECK_THAT(o.out, Catch::Contains("range [1, 4096]"));
  const Out md = run_cli({"describe", "--format", "markdown", "--kind", "gpu"});
  CHECK_THAT(md.out, Catch::Contains("| `l2.hit_latency` | cycles | `150 cycles` |"));
  const Out c = run_cli({"describe", "--config", source_path("configs/magnet-int4.yaml")});
  CHECK(c.status == 0);
  CHECK_THAT(c.out, Catch::Contains("vsq_vector: 64"));
}

namespace {
// Three layers of two ops and a head: 7 ops. (One run per test case: SystemC elaborates once a process.)
std::string layered_trace() {
  return xpusim::testing::temp_file(R"(xpusim_trace: 1
name: grouped
ops:
  - repeat: 3
    name: layer
    ops:
      - {name: up, kind: gemm, m: 512, n: 512, k: 512}
      - {name: act, kind: elementwise, shape: [512, 512], inputs: 1}
  - {name: head, kind: gemm, m: 128, n: 1024, k: 512}
)");
}
}  // namespace

// The terminal's table of a trace longer than it sums each repeated op's instances into one row,
// as Nsight sums a kernel's, instead of listing copies of one layer's longest kernel.
TEST_CASE("cli: the run's table groups the instances of repeated ops when the trace is longer than it", "[cli]") {
  const std::string trace = layered_trace(), out = trace + ".out";
  const Out o = run_cli({"run", "--config", source_path("configs/h100-sxm.yaml"), "--trace", trace, "--out", out,
                     "--show-ops", "2", "--set", "power.mode=fixed_clock"});
  REQUIRE(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("(2 longest of 3 rows shown, the 7 ops with the instances of each repeated op summed"));
  CHECK_THAT(o.out, !Catch::Contains("layer[1]."));
  // The group's time is its three instances' sum, as report.json has them.
  const YAML::Node rep = YAML::LoadFile(out + "/report.json");
  double up = 0;
  for (const auto& op : rep["ops"])
    if (op["name"].as<std::string>().find("].up") != std::string::npos) up += op["time_s"].as<double>();
  CHECK_THAT(o.out, Catch::Contains("layer[*].up x3") && Catch::Contains(xpusim::units::format(up, xpusim::units::Dim::Time)));
}

TEST_CASE("cli: the run's table lists every op as it is when the trace fits it", "[cli]") {
  const std::string trace = layered_trace();
  const Out all = run_cli({"run", "--config", source_path("configs/h100-sxm.yaml"), "--trace", trace, "--out", trace + ".out",
                       "--show-ops", "7", "--set", "power.mode=fixed_clock"});
  REQUIRE(all.status == 0);
  CHECK_THAT(all.out, Catch::Contains("layer[2].act") && !Catch::Contains(" x3") && !Catch::Contains("rows shown"));
}
