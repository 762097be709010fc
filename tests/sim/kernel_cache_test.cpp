// The kernel cache (sim/engine/kernel_cache.h): a second run replays what the first recorded,
// a run with another history or config reuses only what matches, and a damaged file is an
// error naming it.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "helpers.h"
#include "sim/config/config_loader.h"
#include "sim/engine/simulate.h"
#include "sim/error.h"
#include "sim/report/isolated.h"
#include "sim/trace/trace.h"

using xpusim::testing::source_path;
using xpusim::testing::temp_file;

namespace {

// A two-layer decode step in small: the attention's context is the one thing that changes.
std::string step(int context) {
  return R"(xpusim_trace: 1
name: kernel-cache-small
ops:
  - repeat: 2
    name: layer
    ops:
      - {name: norm, kind: layernorm, shape: [8, 2048], dtype: bf16, norm: rms}
      - {name: qkv, kind: gemm, m: 8, n: 3072, k: 2048, dtype: bf16}
      - {name: attention, kind: attention, batch: 8, heads: 16, seq_q: 1, head_dim: 128, kv_heads: 4, seq_kv: )" +
         std::to_string(context) + R"(, dtype: bf16}
      - {name: o_proj, kind: gemm, m: 8, n: 2048, k: 2048, dtype: bf16}
      - {name: up, kind: gemm, m: 8, n: 8192, k: 2048, dtype: bf16}
)";
}

// The report, without the line naming the trace's temporary file.
std::string run(const std::string& trace, const std::string& cache, const std::vector<std::string>& sets = {},
                const std::string& out = "", const char* config = "configs/h100-sxm.yaml") {
  const auto cfg = xpusim::config::load_config(source_path(config), sets);
  const auto tr = xpusim::trace::load_trace(temp_file(trace));
  xpusim::engine::SimOptions opt;
  opt.fidelity = xpusim::engine::Fidelity::fast;
  opt.kernel_cache = cache;
  opt.kernel_cache_out = out;
  std::string rep = xpusim::report::simulate_isolated(cfg, tr, opt);
  const size_t at = rep.find(tr.file);
  if (at != std::string::npos) rep.erase(at, tr.file.size());
  return rep;
}

int cached_ops(const YAML::Node& rep) {
  int n = 0;
  for (const auto& op : rep["ops"])
    if (op["fidelity"] && op["fidelity"]["reused_from_cache"]) ++n;
  return n;
}

std::string read(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string fresh_path(const char* name) {
  const std::string p = (std::filesystem::temp_directory_path() / name).string();
  std::remove(p.c_str());
  return p;
}

}  // namespace

TEST_CASE("a kernel cache replays what an earlier run recorded, where the state matches", "[fidelity]") {
  const std::string cache = fresh_path("xpusim-kernel-cache-test.kernels");
  const std::string plain = run(step(256), "");
  // An empty cache (none yet, or an empty file) changes nothing: the run records, and reports as
  // a run without one.
  write(cache, "");
  CHECK(run(step(256), cache) == plain);
  REQUIRE(std::filesystem::file_size(cache) > 0);

  // The same step again: every kernel replays its record, to the same time and energy.
  const YAML::Node again = YAML::Load(run(step(256), cache));
  const YAML::Node base = YAML::Load(plain);
  CHECK(cached_ops(again) == 10);
  CHECK(again["fidelity"]["cached_ops"].as<int>() == 10);
  CHECK(again["total"]["time_s"].as<double>() == base["total"]["time_s"].as<double>());
  CHECK(again["total"]["energy"]["total_j"].as<double>() == base["total"]["energy"]["total_j"].as<double>());

  // Another context: the attention is new and so is the projection after it (another kernel ran
  // before it); the rest replays, within 2% of the step simulated in full.
  const YAML::Node longer = YAML::Load(run(step(2048), cache));
  const YAML::Node full = YAML::Load(run(step(2048), ""));
  CHECK(cached_ops(longer) == 6);
  for (const auto& op : longer["ops"]) {
    const std::string name = op["name"].as<std::string>();
    const bool cached = op["fidelity"] && op["fidelity"]["reused_from_cache"];
    CHECK(cached == (name.find("attention") == std::string::npos && name.find("o_proj") == std::string::npos));
  }
  const double t = longer["total"]["time_s"].as<double>(), t_full = full["total"]["time_s"].as<double>();
  CHECK(std::abs(t / t_full - 1) < 0.02);

  // Another config: its records are filed under another digest and none is used.
  const YAML::Node other = YAML::Load(run(step(256), cache, {"hbm.data_rate=4.8 GT/s"}));
  CHECK(cached_ops(other) == 0);
  std::remove(cache.c_str());
}

TEST_CASE("a damaged kernel cache is an error naming the file, never trusted or rewritten", "[fidelity]") {
  const std::string cache = fresh_path("xpusim-kernel-cache-damaged.kernels");
  run(step(64), cache);
  const std::string good = read(cache);
  REQUIRE(good.size() > 100);
  auto refused = [&](const std::string& bytes, const std::string& why) {
    write(cache, bytes);
    CHECK_THROWS_WITH(run(step(64), cache),
                      Catch::Contains(cache) && Catch::Contains(why));
    CHECK(read(cache) == bytes);  // left as it was
  };
  refused("not a cache at all\n", "not a kernel cache");
  refused(good.substr(0, good.size() - 5), "cut short");
  std::string flipped = good;
  flipped[22 + 8 + 16] ^= 0x40;  // inside the first record's key: after the magic line, its tag and length, its digest
  refused(flipped, "checksum");

  // New records are never appended to a file that is not a kernel cache: it is left as it is,
  // and the run's report stands.
  const std::string notes = fresh_path("xpusim-kernel-cache-notes.txt");
  write(notes, "some notes\n");
  std::remove(cache.c_str());
  CHECK(YAML::Load(run(step(64), cache, {}, notes))["total"]["time_s"].as<double>() > 0);
  CHECK(read(notes) == "some notes\n");
  std::remove(cache.c_str());
  std::remove(notes.c_str());
}

TEST_CASE("a kernel cache where there are no kernels, or a probe's", "[fidelity]") {
  const std::string cache = fresh_path("xpusim-kernel-cache-probe.kernels");
  // A trace of collectives alone: no GPU's SMs are simulated, nothing is recorded.
  const char* collective = "xpusim_trace: 1\nname: one-all-reduce\nops:\n  - {name: ar, kind: all_reduce, bytes: 65536}\n";
  CHECK(YAML::Load(run(collective, cache, {}, "", "configs/systems/dgx-h100.yaml"))["total"]["time_s"].as<double>() > 0);
  CHECK(!std::filesystem::exists(cache));
  // Under power.start steady a probe runs the trace uncapped first: its kernels, filed under the
  // capped config's digest, would be replayed as the capped run's. They are not recorded.
  const std::vector<std::string> steady = {"power.start=steady"};
  CHECK(run(step(64), cache, steady) == run(step(64), "", steady));
  std::remove(cache.c_str());
}

// A GEMM that starts with a reduce-scatter and has an all-gather waiting behind its CTAs: the
// record keeps where the all-gather's CTAs got SMs (Replay::all_placed), and a run that replays
// it from the file places them there, not at the replay's end.
TEST_CASE("a kernel cache keeps where a kernel let a collective's CTAs in", "[fidelity]") {
  const std::string trace = R"(xpusim_trace: 1
name: kernel-cache-beside-collectives
ops:
  - {name: g0, kind: gemm, m: 4096, n: 4096, k: 2048, dtype: bf16, devices: [0]}
  - {name: rs, kind: reduce_scatter, bytes: 16777216, devices: 0-7, stream: 1, deps: [g0]}
  - {name: ag, kind: all_gather, bytes: 16777216, devices: 0-7, stream: 1}
  - {name: g1, kind: gemm, m: 4096, n: 4096, k: 2048, dtype: bf16, devices: [0]}
)";
  const std::string cache = fresh_path("xpusim-kernel-cache-beside.kernels");
  const char* dgx = "configs/systems/dgx-a100.yaml";
  const YAML::Node first = YAML::Load(run(trace, cache, {"power.mode=fixed_clock"}, "", dgx));
  const YAML::Node again = YAML::Load(run(trace, cache, {"power.mode=fixed_clock"}, "", dgx));
  std::remove(cache.c_str());
  REQUIRE(again["ops"][3]["fidelity"]["reused_from_cache"]);  // g1, beside the reduce-scatter's CTAs
  const double ag_end = first["ops"][2]["end_s"].as<double>(), g1_end = first["ops"][3]["end_s"].as<double>();
  REQUIRE(ag_end < g1_end);  // the all-gather's CTAs got SMs before the GEMM ended
  CHECK(std::abs(again["ops"][2]["end_s"].as<double>() / ag_end - 1) < 1e-3);
  CHECK(std::abs(again["ops"][3]["end_s"].as<double>() / g1_end - 1) < 1e-3);
}
