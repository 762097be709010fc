#include <catch2/catch.hpp>

#include <sstream>

#include "helpers.h"
#include "sim/cli/cli.h"

using xpusim::testing::source_path;

namespace {
struct Out {
  int status;
  std::string out, err;
};
Out cli(std::vector<std::string> args) {
  args.insert(args.begin(), "xpusim");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  std::ostringstream out, err;
  const int s = xpusim::cli::main(static_cast<int>(argv.size()), argv.data(), out, err);
  return {s, out.str(), err.str()};
}
}  // namespace

TEST_CASE("cli: version, help on every command", "[cli]") {
  CHECK_THAT(cli({"--version"}).out, Catch::StartsWith("xpusim 0."));
  for (const char* c : {"run", "check", "describe"}) {
    const Out o = cli({c, "--help"});
    CHECK(o.status == 0);
    CHECK_THAT(o.out, Catch::Contains(std::string("xpusim ") + c));
  }
  CHECK(cli({}).status == 2);
  CHECK_THAT(cli({"--help"}).out, Catch::Contains("commands:"));
}

TEST_CASE("cli: usage errors exit 2 with a hint", "[cli][errors]") {
  Out o = cli({"rnu"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("unknown command 'rnu'") && Catch::Contains("did you mean 'run'"));
  o = cli({"check", "--trase", "x.yaml"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("did you mean '--trace'"));
  o = cli({"run", "--config", source_path("configs/h100-sxm.yaml")});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--trace is required"));
  o = cli({"describe", "--model", "hmb"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("did you mean 'hbm'"));
  // Fidelity flags are checked before anything runs, a sweep's dry run included.
  const std::string cfg = source_path("configs/h100-sxm.yaml"), tr = source_path("tests/data/gemm-small.yaml");
  o = cli({"run", "--config", cfg, "--trace", tr, "--fidelity", "fats"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--fidelity must be fast or exact, got 'fats'"));
  o = cli({"run", "--config", cfg, "--trace", tr, "--tolerance", "-1"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("--tolerance must be above 0"));
  o = cli({"sweep", source_path("configs/sweeps/hbm-x-sms.yaml"), "--dry-run", "--fidelity", "x"});
  CHECK(o.status == 2);
  CHECK_THAT(o.err, Catch::Contains("xpusim sweep: --fidelity must be fast or exact"));
  // A stray word is an error, not ignored, in every command that takes no positional argument.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--config", cfg, "--trace", tr, "stray"}, {"check", "--config", cfg, "stray"},
        {"describe", "--config", cfg, "stray"}}) {
    o = cli(args);
    CHECK(o.status == 2);
    CHECK_THAT(o.err, Catch::Contains("too many positional options"));
  }
}

TEST_CASE("cli: check validates, bad input exits 1 naming the file", "[cli]") {
  Out o = cli({"check", "--config", source_path("configs/h100-sxm.yaml"), "--trace", source_path("traces/gemm/bf16-8192.yaml")});
  CHECK(o.status == 0);
  CHECK_THAT(o.out, Catch::Contains("every op lowers onto h100-sxm"));
  o = cli({"check", "--config", source_path("tests/data/bad/unknown-key.yaml")});
  CHECK(o.status == 1);
  CHECK_THAT(o.err, Catch::Contains("unknown-key.yaml:3:3: key 'sm.cout'"));
  o = cli({"check", "--config", source_path("configs/h100-sxm.yaml"), "--set", "hbm.data_rate=fast"});
  CHECK(o.status == 1);
  CHECK_THAT(o.err, Catch::Contains("--set hbm.data_rate"));
}

TEST_CASE("cli: describe lists every parameter with unit, default and range", "[cli]") {
  const Out o = cli({"describe"});
  REQUIRE(o.status == 0);
  for (const char* key : {"sm.count", "sm.clock (frequency)", "l2.size (size)", "hbm.data_rate (frequency)",
                          "tensor_core.macs_per_clock.fp8", "accelerator.vector_width", "dram.bandwidth"})
    CHECK_THAT(o.out, Catch::Contains(key));
  CHECK_THAT(o.out, Catch::Contains("range [1, 4096]"));
  const Out md = cli({"describe", "--format", "markdown", "--kind", "gpu"});
  CHECK_THAT(md.out, Catch::Contains("| `l2.hit_latency` | cycles | `150 cycles` |"));
  const Out c = cli({"describe", "--config", source_path("configs/magnet-int4.yaml")});
  CHECK(c.status == 0);
  CHECK_THAT(c.out, Catch::Contains("vsq_vector: 64"));
}
