#include <catch2/catch.hpp>

#include <fstream>

#include "helpers.h"
#include "sim/config/chip_kind.h"
#include "sim/config/config_loader.h"
#include "sim/engine/target.h"
#include "sim/report/report_detail.h"

using namespace xpusim;
using xpusim::testing::error_of;
using xpusim::testing::source_path;
using xpusim::testing::temp_file;

namespace {

const std::string kMinimal = R"(name: tiny
kind: gpu
sm:
  count: 4
  clock: 1 GHz
tensor_core:
  macs_per_clock:
    bf16: 512
l2:
  size: 4 MiB
  bandwidth: 1 TB/s
hbm:
  capacity: 16 GiB
  stacks: 1
  data_rate: 2 GT/s
)";

std::string load_error(const std::string& yaml, const std::vector<std::string>& sets = {}) {
  const std::string path = temp_file(yaml);
  return error_of([&] { config::load_config(path, sets); });
}

// The minimal config with the first `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
  std::string y = kMinimal;
  const size_t at = y.find(from);
  REQUIRE(at != std::string::npos);
  return y.replace(at, from.size(), to);
}

// A config that extends the minimal one, with `yaml` added.
std::string child_error(const std::string& yaml) {
  static const std::string base = temp_file(kMinimal);
  return load_error("extends: " + base + "\n" + yaml);
}

}  // namespace

TEST_CASE("shipped configs load with their published figures", "[config]") {
  const auto h100 = config::load_config(source_path("configs/h100-sxm.yaml"));
  CHECK(h100.chip.gpu.sm.count == 132);
  CHECK(h100.chip.gpu.hbm.peak_bandwidth() == Approx(3.35e12).epsilon(2e-3));  // from the organisation and pin rate
  CHECK(h100.chip.gpu.l2.size_bytes == Approx(50.0 * 1024 * 1024));
  // The dense bf16 peak the datasheet quotes follows from the parameters.
  const auto& g = h100.chip.gpu;
  CHECK(2.0 * g.sm.count * g.tensor_core.per_sm * g.tensor_core.macs_per_clock.bf16 * g.sm.clock_hz == Approx(989.4e12).epsilon(1e-3));

  const auto b200 = config::load_config(source_path("configs/b200.yaml"));
  CHECK(b200.chip.gpu.sm.count == 148);
  CHECK(b200.chip.gpu.hbm.peak_bandwidth() == Approx(8e12).epsilon(2e-3));
  CHECK(b200.chip.gpu.sm.max_warps == 64);  // inherited through extends
  const auto& b = b200.chip.gpu;
  CHECK(2.0 * b.sm.count * b.tensor_core.per_sm * b.tensor_core.macs_per_clock.fp4 * b.sm.clock_hz == Approx(9e15).epsilon(2e-3));
  CHECK(b.tensor_core.generation == 5);
  CHECK(b.tensor_core.tensor_memory_bytes == Approx(256.0 * 1024));
  CHECK(b.kernels.gemm_mma == Mma::tcgen05);

  // The GB200's GPU: the B200 at the brief's 2.5 PFLOPS dense bf16, 186 GB, a 1200 W limit.
  const auto gb200 = config::load_config(source_path("configs/gb200.yaml"));
  const auto& gb = gb200.chip.gpu;
  CHECK(2.0 * gb.sm.count * gb.tensor_core.per_sm * gb.tensor_core.macs_per_clock.bf16 * gb.sm.clock_hz == Approx(2.5e15).epsilon(2e-3));
  CHECK(gb.hbm.capacity_bytes == Approx(186e9));
  CHECK(gb.power.limit_w == Approx(1200));
  CHECK(gb.power.boost_clock_hz >= gb.sm.clock_hz);

  // The H200: the H100's die and clocks with six HBM3e stacks at the datasheet's 4.8 TB/s and the
  // 60 MiB L2 the card reports.
  const auto h200 = config::load_config(source_path("configs/h200.yaml"));
  const auto& h2 = h200.chip.gpu;
  CHECK(h2.hbm.peak_bandwidth() == Approx(4.8e12).epsilon(2e-3));
  CHECK(h2.l2.size_bytes == Approx(60.0 * 1024 * 1024));
  CHECK(h2.sm.count == g.sm.count);
  CHECK(h2.sm.clock_hz == g.sm.clock_hz);
  CHECK(h2.power.limit_w == Approx(700));

  const auto magnet = config::load_config(source_path("configs/magnet-int4.yaml"));
  const auto& a = magnet.chip.accel.accelerator;
  CHECK(a.pes * a.vector_units_per_pe * a.vector_width == 1024);
}

TEST_CASE("defaults fill what a config leaves out, and sources are recorded", "[config]") {
  const std::string path = temp_file(kMinimal);
  const auto cfg = config::load_config(path);
  CHECK(cfg.chip.gpu.sm.sub_partitions == 4);
  CHECK(cfg.chip.gpu.l2.line_bytes == 128);
  bool saw_default = false, saw_file = false;
  for (const auto& e : cfg.entries) {
    if (e.spec->key == "l2.line_bytes") saw_default = e.source.file.empty();
    if (e.spec->key == "sm.count") saw_file = e.source.file == path && e.source.line == 4;
  }
  CHECK(saw_default);
  CHECK(saw_file);
}

TEST_CASE("command-line overrides change a value and the resolved config loads again", "[config]") {
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"), {"hbm.data_rate=6 GT/s", "sm.count=100"});
  CHECK(cfg.chip.gpu.hbm.data_rate == Approx(6e9));
  CHECK(cfg.chip.gpu.sm.count == 100);
  const std::string resolved = config::resolved_yaml(cfg, "test");
  CHECK_THAT(resolved, Catch::Contains("data_rate: 6 GT/s  # --set hbm.data_rate"));
  const auto again = config::load_config(temp_file(resolved));
  CHECK(again.chip.gpu.hbm.data_rate == Approx(6e9));
  CHECK(again.chip.gpu.sm.count == 100);
  CHECK(again.chip.gpu.kernels.gemm_tiles == cfg.chip.gpu.kernels.gemm_tiles);
}

TEST_CASE("config errors name file, line, column and key", "[config][errors]") {
  SECTION("unknown key, with a suggestion") {
    const std::string e = load_error(kMinimal + "sm2:\n  cout: 3\n");
    CHECK_THAT(e, Catch::Matches(".*xpusim-test-.*\\.yaml:17:3: key 'sm2.cout': unknown key.*"));
    CHECK_THAT(child_error("l2:\n  asociativity: 8\n"),
               Catch::Contains(":3:3: key 'l2.asociativity': unknown key") && Catch::Contains("did you mean 'l2.associativity'"));
  }
  SECTION("typo inside a known section gets a did-you-mean") {
    CHECK_THAT(load_error(edited("  count: 4", "  cuont: 4")), Catch::Contains("key 'sm.cuont': unknown key") && Catch::Contains("did you mean 'sm.count'"));
  }
  SECTION("missing required key") {
    CHECK_THAT(load_error(edited("  clock: 1 GHz\n", "")), Catch::Contains("missing required key 'sm.clock'"));
  }
  SECTION("value out of range") {
    CHECK_THAT(load_error(edited("count: 4", "count: 0")), Catch::Contains(":4:10: key 'sm.count': value 0 is out of range [1, 4096]"));
    CHECK_THAT(load_error(edited("count: 4", "count: -3")), Catch::Contains("key 'sm.count': value -3 is out of range"));
  }
  SECTION("bare number where a unit is due") {
    CHECK_THAT(load_error(edited("clock: 1 GHz", "clock: 1.5")), Catch::Contains(":5:10: key 'sm.clock': '1.5' needs a unit of frequency"));
  }
  SECTION("wrong unit dimension") {
    CHECK_THAT(load_error(edited("clock: 1 GHz", "clock: 1 TB/s")), Catch::Contains("is a bandwidth, but a frequency is due"));
  }
  SECTION("type errors") {
    CHECK_THAT(load_error(edited("count: 4", "count: many")), Catch::Contains("key 'sm.count': 'many' is not an integer"));
    CHECK_THAT(load_error(edited("count: 4", "count: 4.5")), Catch::Contains("'4.5' must be a whole number"));
    CHECK_THAT(load_error(edited("count: 4", "count: [1, 2]")), Catch::Contains("expected a single value"));
    CHECK_THAT(child_error("kernels:\n  gemm:\n    tiles: 128x128\n"), Catch::Contains("key 'kernels.gemm.tiles': expected a list"));
    CHECK_THAT(child_error("kernels:\n  gemm:\n    tiles: []\n"), Catch::Contains("key 'kernels.gemm.tiles': expected a non-empty list"));
    CHECK_THAT(child_error("l2:\n  hash: crc\n"), Catch::Contains("'crc' is not one of: xor, modulo"));
  }
  SECTION("enum and bool values") {
    CHECK_THAT(child_error("tensor_core:\n  sparse_2_4: yes\n"), Catch::Contains("key 'tensor_core.sparse_2_4': 'yes' must be true or false"));
    CHECK_THAT(load_error(kMinimal + "l2:\n  hash: xor\n"), Catch::Contains(":16:1: key 'l2': duplicate key"));
    const std::string base = source_path("configs/h100-sxm.yaml");
    CHECK_THAT(error_of([&] { config::load_config(base, {"tensor_core.sparse_2_4=maybe"}); }), Catch::Contains("must be true or false"));
    CHECK_THAT(error_of([&] { config::load_config(base, {"l2.hash=xro"}); }), Catch::Contains("did you mean 'xor'"));
  }
  SECTION("a section given a scalar") {
    CHECK_THAT(load_error("name: x\nkind: gpu\nsm: 132\n"), Catch::Contains("key 'sm': is a section"));
  }
  SECTION("malformed YAML, empty file, missing file, unknown kind") {
    CHECK_THAT(load_error("name: x\nkind: gpu\nsm: {count: 4\n"), Catch::Contains("malformed YAML"));
    CHECK_THAT(load_error(""), Catch::Contains("file is empty"));
    CHECK_THAT(error_of([] { config::load_config("/nonexistent/chip.yaml"); }), Catch::Contains("does not exist"));
    CHECK_THAT(load_error("name: x\nkind: gpuu\n"), Catch::Contains("did you mean 'gpu'"));
    CHECK_THAT(load_error("- a\n- b\n"), Catch::Contains("must be a mapping"));
  }
  SECTION("bad --set and extends cycles") {
    const std::string base = source_path("configs/h100-sxm.yaml");
    CHECK_THAT(error_of([&] { config::load_config(base, {"hbm.data_rate"}); }), Catch::Contains("expected key.path=value"));
    CHECK_THAT(error_of([&] { config::load_config(base, {"hbm.data_rte=4 GT/s"}); }),
               Catch::Contains("--set hbm.data_rte") && Catch::Contains("did you mean 'hbm.data_rate'"));
    const std::string a = temp_file("");
    const std::string b = temp_file("extends: " + a + "\n");
    std::ofstream(a) << "extends: " << b << "\n";
    CHECK_THAT(error_of([&] { config::load_config(a); }), Catch::Contains("cycle"));
    CHECK_THAT(load_error("extends: no-such-parent.yaml\nname: x\n"), Catch::Contains("does not exist"));
  }
}

TEST_CASE("parameters that must agree with each other are checked together", "[config][errors]") {
  CHECK_THAT(child_error("l2:\n  slices: 3\nnoc:\n  dies: 2\n"), Catch::Contains("key 'l2.slices': must be a multiple of noc.dies"));
  CHECK_THAT(child_error("hbm:\n  interleave: 2 KiB\n"), Catch::Contains("key 'hbm.interleave'") && Catch::Contains("at most hbm.row_size"));
  CHECK_THAT(child_error("hbm:\n  row_size: 1000 B\n"), Catch::Contains("key 'hbm.row_size': must be a multiple of the burst"));
  CHECK_THAT(child_error("hbm:\n  tRFC: 5 us\n"), Catch::Contains("key 'hbm.tRFC': must be shorter than hbm.tREFI"));
  CHECK_THAT(child_error("l2:\n  sector_bytes: 48\n"), Catch::Contains("key 'l2.sector_bytes'"));
  // The error points at the line that set the value.
  CHECK_THAT(child_error("hbm:\n  tRFC: 5 us\n"), Catch::Matches(".*\\.yaml:3:9: key 'hbm.tRFC'.*"));
}

TEST_CASE("tcgen05 kernels are refused on a chip without fifth-generation tensor cores", "[config][errors][blackwell]") {
  const std::string h100 = source_path("configs/h100-sxm.yaml"), b200 = source_path("configs/b200.yaml");
  CHECK_THAT(error_of([&] { config::load_config(h100, {"kernels.gemm.mma=tcgen05"}); }),
             Catch::Contains("key 'kernels.gemm.mma'") && Catch::Contains("fifth-generation tensor cores"));
  CHECK_THAT(error_of([&] { config::load_config(h100, {"kernels.attention.mma=tcgen05"}); }),
             Catch::Contains("key 'kernels.attention.mma'"));
  CHECK_THAT(error_of([&] { config::load_config(h100, {"kernels.gemm.mma=tcgen05", "tensor_core.generation=5"}); }),
             Catch::Contains("key 'tensor_core.tensor_memory'"));
  CHECK_THAT(error_of([&] { config::load_config(h100, {"kernels.gemm.cta_pair=true"}); }),
             Catch::Contains("key 'kernels.gemm.cta_pair'") && Catch::Contains("tcgen05"));
  CHECK_THAT(error_of([&] { config::load_config(b200, {"kernels.gemm.cluster_m=3"}); }),
             Catch::Contains("key 'kernels.gemm.cluster_m'") && Catch::Contains("2-SM pairs"));
  CHECK_THAT(error_of([&] { config::load_config(h100, {"kernels.gemm.mma=tcgen5"}); }), Catch::Contains("did you mean 'tcgen05'"));
  // The error names the file and line that asked for it.
  const std::string child = temp_file("extends: " + h100 + "\nkernels:\n  gemm:\n    mma: tcgen05\n");
  CHECK_THAT(error_of([&] { config::load_config(child); }), Catch::Matches(".*\\.yaml:4:\\d+: key 'kernels.gemm.mma'.*"));
  // Blackwell may run Hopper's kernels (an ablation).
  CHECK_NOTHROW(config::load_config(b200, {"kernels.gemm.mma=wgmma", "kernels.gemm.cta_pair=false", "kernels.attention.mma=wgmma"}));
}

TEST_CASE("persistent GEMM kernels are refused where the GEMMs are mma_sync's", "[config][errors]") {
  const std::string a100 = source_path("configs/a100.yaml"), h100 = source_path("configs/h100-sxm.yaml");
  CHECK_THAT(error_of([&] { config::load_config(a100, {"kernels.gemm.persistent=true"}); }),
             Catch::Contains("key 'kernels.gemm.persistent'") && Catch::Contains("mma_sync"));
  CHECK_NOTHROW(config::load_config(h100, {"kernels.gemm.persistent=false"}));
  // The B200 inherits the key from the H100; its tcgen05 kernels are persistent anyway.
  CHECK_NOTHROW(config::load_config(source_path("configs/b200.yaml")));
}

TEST_CASE("every chip kind a config may name has its engine target and its report", "[config]") {
  // The three lists (sim/config/chip_kinds.cpp, sim/engine/targets.cpp, sim/report/report.cpp)
  // must agree: a kind in the first alone would load and then fail to run.
  const std::vector<std::string> kinds = config::chip_kinds();
  CHECK(kinds == std::vector<std::string>{"gpu", "accelerator"});
  for (const std::string& k : kinds) {
    INFO(k);
    CHECK_NOTHROW(engine::target_for(k));
    CHECK_NOTHROW(report::detail::builder_for(k));
    CHECK(config::schema_for(k).kind == k);
  }
  CHECK_THROWS_AS(engine::target_for("tpu"), UserError);
  CHECK_THROWS_AS(report::detail::builder_for("tpu"), UserError);
  CHECK_THROWS_AS(config::chip_kind("tpu"), UserError);
}
