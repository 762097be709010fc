// Analytic bounds: whatever the model does inside, a run can never beat the peaks derived from
// its own config, and more work can never take less time.
#include <array>
#include <vector>

#include <catch2/catch.hpp>

#include "helpers.h"
#include "sim/config/config_loader.h"
#include "sim/engine/simulate.h"
#include "sim/report/isolated.h"
#include "sim/trace/trace.h"

using xpusim::testing::error_of;
using xpusim::testing::simulate;
using xpusim::testing::source_path;
using xpusim::testing::kH100;
using xpusim::testing::d;

namespace {

std::string gemm_trace(long m, long n, long k, const std::string& dtype = "bf16", const std::string& extra = "") {
  return "xpusim_trace: 1\nops:\n  - {name: g, kind: gemm, m: " + std::to_string(m) + ", n: " + std::to_string(n) +
         ", k: " + std::to_string(k) + ", dtype: " + dtype + extra + "}\n";
}
std::string copy_trace(long elements, int inputs = 1) {
  return "xpusim_trace: 1\nops:\n  - {name: e, kind: elementwise, shape: [" + std::to_string(elements) +
         "], inputs: " + std::to_string(inputs) + ", dtype: fp32}\n";
}
}  // namespace

TEST_CASE("a GEMM never beats the tensor-core peak", "[sim][bounds]") {
  for (const char* dtype : {"bf16", "fp8", "int8", "tf32"}) {
    const YAML::Node r = simulate(kH100, gemm_trace(4096, 4096, 4096, dtype));
    const YAML::Node op = r["ops"][0];
    INFO(dtype << ": " << d(op["tflops"]) << " of " << d(op["peak_tflops"]));
    CHECK(d(op["tflops"]) <= d(op["peak_tflops"]));
    CHECK(d(op["utilisation"]["tensor_cores"]) <= 1.0 + 1e-9);
    CHECK(d(op["fraction_of_peak"]) > 0.3);  // and it is not absurdly slow either
  }
  const YAML::Node sparse = simulate(kH100, gemm_trace(4096, 4096, 4096, "fp8", ", sparsity: \"2:4\""));
  CHECK(d(sparse["ops"][0]["tflops"]) <= d(sparse["ops"][0]["peak_tflops"]));
  CHECK(d(sparse["ops"][0]["peak_tflops"]) == Approx(2 * 1978.86).epsilon(1e-3));
}

TEST_CASE("a copy never beats peak HBM bandwidth and is HBM-bound", "[sim][bounds][heavy]") {
  const YAML::Node r = simulate(kH100, copy_trace(1L << 27));
  const YAML::Node op = r["ops"][0];
  const double peak = d(r["chip"]["hbm_peak_bandwidth"]);
  CHECK(d(op["memory"]["hbm_bandwidth"]) <= peak);
  CHECK(d(op["time_s"]) >= d(op["min_bytes"]) / peak);
  CHECK(op["bound"].as<std::string>() == "HBM bandwidth");
  // A streaming copy runs at over 80% of the refresh-bound rate the DRAM timings allow.
  CHECK(d(op["memory"]["hbm_bandwidth"]) > 0.8 * d(r["chip"]["hbm_sustained_bandwidth"]));
  // Twice the stacks (twice the channels and peak) speeds it up.
  const YAML::Node fast = simulate(kH100, copy_trace(1L << 27), {"hbm.stacks=10"});
  CHECK(d(fast["ops"][0]["time_s"]) < 0.6 * d(op["time_s"]));
}

TEST_CASE("simulated time grows with work", "[sim][bounds]") {
  double last = 0;
  for (long n : {512L, 1024L, 2048L, 4096L}) {
    const double t = d(simulate(kH100, gemm_trace(n, n, n))["total"]["time_s"]);
    CHECK(t > last);
    last = t;
  }
  last = 0;
  for (long n : {1L << 16, 1L << 20, 1L << 24}) {
    const double t = d(simulate(kH100, copy_trace(n, 2))["total"]["time_s"]);
    CHECK(t > last);
    last = t;
  }
}

TEST_CASE("wave quantisation emerges: one tile more than a wave costs a second wave", "[sim][bounds]") {
  // 128x128 tiles, one CTA per SM: 132 tiles fill one wave of 132 SMs exactly. Data-parallel
  // (one CTA per tile, no stream-K, and no split-K for the tile alone; not persistent, whose
  // 133rd tile would have its first loads in flight before the first wave ends):
  const std::vector<std::string> one_tile = {"kernels.gemm.tiles=[128x128]", "kernels.gemm.stream_k=false",
                                             "kernels.gemm.split_k=false", "kernels.gemm.persistent=false"};
  const double full = d(simulate(kH100, gemm_trace(128 * 12, 128 * 11, 4096), one_tile)["total"]["time_s"]);
  const double spill = d(simulate(kH100, gemm_trace(128 * 12 + 1, 128 * 11, 4096), one_tile)["total"]["time_s"]);
  const double alone = d(simulate(kH100, gemm_trace(128, 128, 4096), one_tile)["total"]["time_s"]);
  // The 133rd tile runs in a second wave of its own: the run takes a full wave plus one tile.
  CHECK(spill == Approx(full + alone).epsilon(0.1));
  CHECK(spill / full > 1.3);
  // Two waves and one tile: stream-K spreads the last wave and the extra tile's K steps over
  // the 132 SMs, about 1/132 of a wave more than two waves (and its fixup), not a third wave.
  const std::vector<std::string> sk = {"kernels.gemm.tiles=[128x128]"};
  const double two = d(simulate(kH100, gemm_trace(128 * 24, 128 * 11, 4096), one_tile)["total"]["time_s"]);
  const double two_spill = d(simulate(kH100, gemm_trace(128 * 24 + 1, 128 * 11, 4096), one_tile)["total"]["time_s"]);
  const double two_sk = d(simulate(kH100, gemm_trace(128 * 24 + 1, 128 * 11, 4096), sk)["total"]["time_s"]);
  CHECK(two_spill / two > 1.2);
  CHECK(two_sk < 0.9 * two_spill);
}

TEST_CASE("a GEMM that accumulates reads its output from HBM once more, in its tiles or its split-K reduction",
          "[sim][bounds]") {
  // 4096^3: persistent tiles, C read in each tile's epilogue; 32 x 1280 x 8192: split-K, C read by
  // the reduction kernel.
  for (const auto& mnk : std::vector<std::array<long, 3>>{{4096, 4096, 4096}, {32, 1280, 8192}}) {
    const YAML::Node plain = simulate(kH100, gemm_trace(mnk[0], mnk[1], mnk[2], "bf16", ", out_dtype: fp32"));
    const YAML::Node acc = simulate(kH100, gemm_trace(mnk[0], mnk[1], mnk[2], "bf16", ", out_dtype: fp32, accumulate: true"));
    const double c_bytes = 4.0 * mnk[0] * mnk[1];
    const std::string how = acc["ops"][0]["lowering"]["description"].as<std::string>();
    INFO(mnk[0] << "x" << mnk[1] << "x" << mnk[2] << ": " << how);
    CHECK_THAT(how, Catch::Contains(mnk[0] == 32 ? "split-K reduction kernel" : "persistent"));
    CHECK(d(acc["ops"][0]["memory"]["hbm_read_bytes"]) - d(plain["ops"][0]["memory"]["hbm_read_bytes"]) ==
          Approx(c_bytes).epsilon(0.05));
    CHECK(d(acc["ops"][0]["min_bytes"]) - d(plain["ops"][0]["min_bytes"]) == Approx(c_bytes));
    CHECK(d(acc["ops"][0]["time_s"]) > d(plain["ops"][0]["time_s"]));
  }
}

TEST_CASE("TMA multicast lowers L2 traffic and never slows a GEMM", "[sim][bounds]") {
  const YAML::Node solo = simulate(kH100, gemm_trace(4096, 4096, 4096), {"kernels.gemm.cluster_m=1"});
  const YAML::Node pair = simulate(kH100, gemm_trace(4096, 4096, 4096), {"kernels.gemm.cluster_m=2"});
  CHECK(d(pair["ops"][0]["memory"]["l2_read_bytes"]) < 0.85 * d(solo["ops"][0]["memory"]["l2_read_bytes"]));
  CHECK(d(pair["ops"][0]["time_s"]) <= d(solo["ops"][0]["time_s"]) * 1.001);
  CHECK(d(pair["ops"][0]["tflops"]) <= d(pair["ops"][0]["peak_tflops"]));
}

TEST_CASE("number formats and sparsity change compute-bound time as the peaks say", "[sim][bounds]") {
  const double bf16 = d(simulate(kH100, gemm_trace(4096, 4096, 8192, "bf16"))["total"]["time_s"]);
  const double fp8 = d(simulate(kH100, gemm_trace(4096, 4096, 8192, "fp8"))["total"]["time_s"]);
  CHECK(fp8 < 0.75 * bf16);
  CHECK(fp8 > 0.45 * bf16);  // never better than the 2x the tensor cores offer
  const YAML::Node b200 = simulate(source_path("configs/b200.yaml"), gemm_trace(4096, 4096, 8192, "fp4"));
  CHECK(d(b200["ops"][0]["tflops"]) <= d(b200["ops"][0]["peak_tflops"]));
  CHECK(d(b200["ops"][0]["peak_tflops"]) == Approx(9000).epsilon(3e-3));
}

TEST_CASE("ops on two streams overlap, dependent ops do not", "[sim][bounds]") {
  const std::string two_streams =
      "xpusim_trace: 1\nops:\n"
      "  - {name: a, kind: gemm, m: 256, n: 256, k: 8192, stream: 0}\n"
      "  - {name: b, kind: gemm, m: 256, n: 256, k: 8192, stream: 1}\n";
  const std::string dependent =
      "xpusim_trace: 1\nops:\n"
      "  - {name: a, kind: gemm, m: 256, n: 256, k: 8192, stream: 0}\n"
      "  - {name: b, kind: gemm, m: 256, n: 256, k: 8192, stream: 1, deps: [a]}\n";
  const YAML::Node par = simulate(kH100, two_streams);
  const YAML::Node seq = simulate(kH100, dependent);
  CHECK(d(par["ops"][1]["start_s"]) < d(par["ops"][0]["end_s"]));
  CHECK(d(seq["ops"][1]["start_s"]) >= d(seq["ops"][0]["end_s"]));
  CHECK(d(par["total"]["time_s"]) < d(seq["total"]["time_s"]));
}

TEST_CASE("the same inputs give byte-identical reports", "[sim][determinism]") {
  const auto cfg = xpusim::config::load_config(kH100);
  const auto tr = xpusim::trace::load_trace(source_path("tests/data/gemm-small.yaml"));
  CHECK(xpusim::report::simulate_isolated(cfg, tr) == xpusim::report::simulate_isolated(cfg, tr));
}

TEST_CASE("a dependent chain of mixed ops runs to the end, each after the last", "[sim][driver]") {
  // Regression: ready times that differ from the clock by less than its resolution once made
  // the workload driver spin in delta cycles; a chain of varied ops exercises many such gaps.
  std::string t = "xpusim_trace: 1\nops:\n  - repeat: 3\n    name: l\n    ops:\n"
                  "      - {name: n, kind: layernorm, shape: [512, 1024]}\n"
                  "      - {name: q, kind: gemm, m: 512, n: 1536, k: 1024, deps: [n]}\n"
                  "      - {name: a, kind: attention, heads: 8, kv_heads: 2, seq_q: 512, head_dim: 128, causal: true, deps: [q]}\n"
                  "      - {name: p, kind: gemm, m: 512, n: 1024, k: 1024, deps: [a]}\n"
                  "      - {name: r, kind: elementwise, shape: [512, 1024], inputs: 2, deps: [p]}\n"
                  "      - {name: s, kind: softmax, shape: [512, 1024], deps: [r]}\n";
  const YAML::Node r = simulate(kH100, t);
  REQUIRE(r["ops"].size() == 18);
  for (size_t i = 1; i < r["ops"].size(); ++i) {
    INFO("op " << i);
    CHECK(d(r["ops"][i]["start_s"]) >= d(r["ops"][i - 1]["end_s"]));
  }
  CHECK(d(r["total"]["time_s"]) == Approx(d(r["ops"][17]["end_s"])));
}

TEST_CASE("weight-only int4 speeds up a memory-bound GEMM by its bytes, not a compute-bound one", "[sim][bounds]") {
  // Decode-shaped: 16 tokens through an 8192 x 8192 layer, bound by streaming the weights.
  const YAML::Node bf16 = simulate(kH100, gemm_trace(16, 8192, 8192));
  const YAML::Node w4 = simulate(kH100, gemm_trace(16, 8192, 8192, "bf16", ", weight_dtype: int4"));
  const double t16 = d(bf16["total"]["time_s"]), t4 = d(w4["total"]["time_s"]);
  CHECK(t4 < 0.45 * t16);
  // Never faster than the int4 weights and their scales over peak HBM bandwidth.
  const double peak = d(w4["chip"]["hbm_peak_bandwidth"]);
  CHECK(t4 >= 8192.0 * 8192 * (4 + 16.0 / 128) / 8 / peak);
  CHECK(d(w4["ops"][0]["memory"]["hbm_read_bytes"]) < 0.3 * d(bf16["ops"][0]["memory"]["hbm_read_bytes"]));
  CHECK(w4["ops"][0]["weight_dtype"].as<std::string>() == "int4");
  // Compute-bound: the math is bf16 either way, and the conversions cost a little.
  const double big16 = d(simulate(kH100, gemm_trace(4096, 4096, 4096))["total"]["time_s"]);
  const double big4 = d(simulate(kH100, gemm_trace(4096, 4096, 4096, "bf16", ", weight_dtype: int4"))["total"]["time_s"]);
  CHECK(big4 >= 0.97 * big16);
  CHECK(big4 <= 1.3 * big16);
}

TEST_CASE("instruction loops reach each SIMT path's peak from lanes x clock, and SGEMM stays under it", "[sim][bounds][simt]") {
  const std::string k40 = source_path("configs/k40.yaml");
  const double lanes_x_clock = 15 * 192 * 745e6;  // configs/k40.yaml: 2880 lanes at the base clock
  auto loop = [](const std::string& instr) {
    return "xpusim_trace: 1\nops:\n  - {name: l, kind: instruction_loop, instruction: " + instr + ", count: 4000, warps: 4096}\n";
  };
  // FFMA: two FLOPs per lane per clock (K40's 4.29 TFLOPS single precision), which its four
  // schedulers reach only by dual-issuing the loop's independent FFMAs (48 lanes each).
  const YAML::Node f = simulate(k40, loop("ffma"));
  CHECK(d(f["ops"][0]["tflops"]) * 1e12 == Approx(2 * lanes_x_clock).epsilon(0.03));
  const YAML::Node single = simulate(k40, loop("ffma"), {"sm.dual_issue=false"});
  CHECK(d(single["ops"][0]["tflops"]) * 1e12 == Approx(2 * lanes_x_clock * 128 / 192).epsilon(0.03));
  // With HFMA2 (two fp16 FMAs per lane slot) and DP4A (8 ops each), as Pascal GP102 has them.
  const std::vector<std::string> pascal = {"sm.hfma_per_lane=2", "sm.dp4a_per_lane=1"};
  CHECK(d(simulate(k40, loop("hfma2"), pascal)["ops"][0]["tflops"]) * 1e12 == Approx(4 * lanes_x_clock).epsilon(0.03));
  CHECK(d(simulate(k40, loop("hdp4a"), pascal)["ops"][0]["tflops"]) * 1e12 == Approx(8 * lanes_x_clock).epsilon(0.03));
  // Kepler itself has neither.
  CHECK_THROWS_WITH(simulate(k40, loop("hdp4a")), Catch::Contains("no hdp4a (sm.dp4a_per_lane is 0)"));
  // An SGEMM on the lanes: never above the FFMA peak, and not absurdly below it.
  const YAML::Node g = simulate(k40, gemm_trace(4096, 4096, 4096, "fp32"));
  const YAML::Node op = g["ops"][0];
  INFO(op["lowering"]["description"].as<std::string>() << ": " << d(op["tflops"]) << " of " << d(op["peak_tflops"]));
  CHECK(d(op["peak_tflops"]) * 1e12 == Approx(2 * lanes_x_clock).epsilon(1e-3));
  CHECK(d(op["tflops"]) <= d(op["peak_tflops"]));
  // Its FFMAs pair with its loads but not with one another: one per scheduler per clock, 128 of
  // the 192 lanes, less the loads' share of the issue slots.
  CHECK(d(op["fraction_of_peak"]) <= 128.0 / 192 + 1e-9);
  CHECK(d(op["fraction_of_peak"]) > 0.55);
}

TEST_CASE("a warp issues from one scheduler: a CTA of fewer warps than schedulers reaches their share of the lanes", "[sim][bounds][simt]") {
  // One CTA on one SM of the H100 (four schedulers of 32 lanes each): two warps of FFMAs occupy
  // two schedulers and take as long as four warps of them, which occupy all four.
  auto loop_s = [](int warps) {
    const std::string t = "xpusim_trace: 1\nops:\n  - {name: l, kind: instruction_loop, instruction: ffma, count: 100000, warps: " +
                          std::to_string(warps) + "}\n";
    return d(simulate(kH100, t)["ops"][0]["time_s"]);
  };
  const double two = loop_s(2), four = loop_s(4), one = loop_s(1);
  CHECK(two == Approx(four).epsilon(0.05));
  CHECK(one == Approx(four).epsilon(0.05));
  // Four warps' lane work at the SM's full rate: 4 x 100000 x 32 FMAs over 128 lanes.
  CHECK(four >= 100000.0 * 4 * 32 / 128 / 1.98e9);
}

TEST_CASE("a warp's mma.sync runs on its processing block's tensor cores: a one-warp CTA reaches a quarter of the SM's",
          "[sim][bounds][mma_sync]") {
  // One CTA on one V100 SM (four processing blocks of two tensor cores each). A 64x64 tile is one
  // warp: its MMAs reach two of the eight tensor cores, so it takes as long as a 128x128 tile of
  // four warps (four times the MACs, one warp on each block) over the same K.
  const std::string v100 = source_path("configs/v100.yaml");
  auto time_s = [&](long mn, const std::string& tile) {
    const YAML::Node r = simulate(v100, gemm_trace(mn, mn, 65536, "fp16"),
                                  {"power.mode=fixed_clock", "kernels.gemm.split_k=false", "kernels.gemm.tiles=[" + tile + "]"});
    INFO(r["ops"][0]["lowering"]["description"].as<std::string>());
    CHECK(r["ops"][0]["lowering"]["description"].as<std::string>().find((tile == "64x64" ? "1 warps" : "4 warps")) != std::string::npos);
    return d(r["ops"][0]["time_s"]);
  };
  const double one_warp = time_s(64, "64x64"), four_warps = time_s(128, "128x128");
  CHECK(one_warp == Approx(four_warps).epsilon(0.1));
  // The one-warp CTA's MACs at a quarter of the SM's 512 fp16 MACs per clock (1530 MHz).
  CHECK(one_warp >= 64.0 * 64 * 65536 / (512 / 4) / 1.53e9);
}

TEST_CASE("Pascal's SIMT formats: HFMA2 doubles the P100's GEMM rate, DP4A quadruples the P40's", "[sim][simt]") {
  auto tflops = [](const std::string& chip, const std::string& dtype) {
    const YAML::Node r = simulate(source_path("configs/" + chip + ".yaml"), gemm_trace(2048, 2048, 2048, dtype));
    CHECK(d(r["ops"][0]["tflops"]) <= d(r["ops"][0]["peak_tflops"]));
    return d(r["ops"][0]["tflops"]);
  };
  const double p100_fp32 = tflops("p100", "fp32"), p100_fp16 = tflops("p100", "fp16");
  CHECK(p100_fp16 / p100_fp32 == Approx(2).epsilon(0.1));
  const double p40_fp32 = tflops("p40", "fp32"), p40_int8 = tflops("p40", "int8");
  CHECK(p40_int8 / p40_fp32 > 3.5);
  CHECK(p40_int8 / p40_fp32 <= 4.0 + 1e-9);
  // GP100 has no DP4A.
  CHECK_THROWS_WITH(tflops("p100", "int8"), Catch::Contains("no DP4A (sm.dp4a_per_lane is 0)"));
}

TEST_CASE("on Hopper a warp's mma.sync reaches tensor_core.mma_sync_share of the tensor cores' rate, wgmma all of it",
          "[sim][bounds][mma_sync][heavy]") {
  // Every warp of every SM issuing independent HMMAs: the measured share (configs/h100-sxm.yaml,
  // 0.667) of the SM's 2048 bf16 MACs per clock, at the fixed 1.83 GHz; all of it with a share of 1.
  const std::string loop =
      "xpusim_trace: 1\nops:\n  - {name: l, kind: instruction_loop, instruction: hmma, count: 16384, warps: 2112, "
      "macs_per_instruction: 2048}\n";
  const double peak = 132 * 2048 * 2 * 1.83e9 / 1e12;
  const double share = d(simulate(kH100, loop, {"power.mode=fixed_clock"})["ops"][0]["tflops"]);
  const double full = d(simulate(kH100, loop, {"power.mode=fixed_clock", "tensor_core.mma_sync_share=1"})["ops"][0]["tflops"]);
  CHECK(share == Approx(0.667 * peak).epsilon(0.02));
  CHECK(full == Approx(peak).epsilon(0.02));
  // A GEMM of mma.sync kernels on the same chip stays under that share of the peak; its wgmma
  // kernels go past it.
  auto gemm = [&](const std::string& mma) {
    std::vector<std::string> sets = {"power.mode=fixed_clock", "kernels.gemm.mma=" + mma};
    if (mma == "mma_sync") sets.push_back("kernels.gemm.persistent=false");  // wgmma's alone
    const YAML::Node r = simulate(kH100, gemm_trace(8192, 8192, 8192), sets);
    INFO(r["ops"][0]["lowering"]["description"].as<std::string>());
    return d(r["ops"][0]["tflops"]);
  };
  const double hmma = gemm("mma_sync"), wgmma = gemm("wgmma");
  CHECK(hmma <= 0.667 * peak * 1.001);
  CHECK(hmma > 0.5 * peak);
  CHECK(wgmma > 0.667 * peak);
}

// The long tests above reach these paths on large inputs, several times over; these run each once
// on inputs small enough for the sanitizer tier, which leaves the long ones to the fast tier where
// shorter tests run all their lines (scripts/sanitizer-subset.py).
TEST_CASE("small inputs take the rare paths: 2:4 metadata, accumulating epilogues, a reused output left dirty, a missing SIMT unit",
          "[sim][bounds]") {
  const YAML::Node sparse = simulate(kH100, gemm_trace(512, 512, 512, "fp8", ", sparsity: \"2:4\""));
  CHECK(d(sparse["ops"][0]["peak_tflops"]) == Approx(2 * 1978.86).epsilon(1e-3));
  CHECK(d(sparse["ops"][0]["tflops"]) <= d(sparse["ops"][0]["peak_tflops"]));
  // In the tiles' epilogue (512^3) and in split-K's reduction (32 x 1280 x 8192), C is read once more.
  for (const auto& mnk : std::vector<std::array<long, 3>>{{512, 512, 512}, {32, 1280, 8192}}) {
    const YAML::Node plain = simulate(kH100, gemm_trace(mnk[0], mnk[1], mnk[2], "bf16", ", out_dtype: fp32"));
    const YAML::Node acc = simulate(kH100, gemm_trace(mnk[0], mnk[1], mnk[2], "bf16", ", out_dtype: fp32, accumulate: true"));
    const std::string how = acc["ops"][0]["lowering"]["description"].as<std::string>();
    INFO(mnk[0] << "x" << mnk[1] << "x" << mnk[2] << ": " << how);
    if (mnk[0] == 32) CHECK_THAT(how, Catch::Contains("split-K reduction kernel"));
    CHECK(d(acc["ops"][0]["memory"]["hbm_read_bytes"]) > d(plain["ops"][0]["memory"]["hbm_read_bytes"]));
    CHECK(d(acc["ops"][0]["time_s"]) > d(plain["ops"][0]["time_s"]));
  }
  // A reused op whose 2 MiB output is more than a 64th of the L2 leaves it there dirty, for the
  // next op to write back.
  xpusim::engine::SimOptions fast;
  fast.fidelity = xpusim::engine::Fidelity::fast;
  const YAML::Node reused = YAML::Load(xpusim::report::simulate_isolated(
      xpusim::config::load_config(kH100),
      xpusim::trace::load_trace(xpusim::testing::temp_file(
          "xpusim_trace: 1\nops:\n  - repeat: 4\n    name: layer\n    ops:\n"
          "      - {name: scale, kind: elementwise, shape: [1024, 1024], inputs: 1, dtype: bf16}\n"
          "  - {name: sweep, kind: elementwise, shape: [4096, 1024], inputs: 1, dtype: bf16}\n")),
      fast));
  CHECK(reused["ops"][3]["fidelity"]["reused_from"]);
  CHECK(d(reused["ops"][4]["memory"]["hbm_write_bytes"]) > 0);
  const std::string k40 = source_path("configs/k40.yaml");
  CHECK_THROWS_WITH(simulate(k40, "xpusim_trace: 1\nops:\n  - {name: l, kind: instruction_loop, instruction: hfma2, count: 10, warps: 32}\n"),
                    Catch::Contains("no hfma2 (sm.hfma_per_lane is 0)"));
}
