// Row-wise kernels that wait on a block reduction (sim/lower/rowwise.cpp): PyTorch's LayerNorm
// and RMSNorm read each row in dependent iterations, twice, around a chain of SM latencies.
#include <catch2/catch.hpp>

#include "helpers.h"

using xpusim::testing::simulate;
using xpusim::testing::kH100;

namespace {

YAML::Node norm_op(long rows, long cols, const std::string& norm, const std::vector<std::string>& set = {}, int inputs = 1) {
  std::vector<std::string> s = set;
  s.push_back("power.mode=fixed_clock");
  const std::string t = "xpusim_trace: 1\nops:\n  - {name: n, kind: layernorm, shape: [" + std::to_string(rows) + ", " +
                        std::to_string(cols) + "], dtype: fp16, norm: " + norm + ", inputs: " + std::to_string(inputs) + "}\n";
  return simulate(kH100, t, s)["ops"][0];
}
double norm_s(long rows, long cols, const std::string& norm, const std::vector<std::string>& set = {}) {
  return norm_op(rows, cols, norm, set)["time_s"].as<double>();
}
}  // namespace

TEST_CASE("a norm's row is a chain of dependent round trips: a long row costs one per iteration of each pass", "[sim][rowwise]") {
  // One CTA of 128 threads, 4 elements a thread per iteration: a row of 512 is one iteration
  // per pass, a row of 8192 sixteen. Each further iteration waits at least an L2 round trip
  // (264 cycles at 1.83 GHz on the H100), whatever the bandwidth: 16 KB move in nanoseconds.
  for (const char* norm : {"layer", "rms"}) {
    const double one = norm_s(1, 512, norm), sixteen = norm_s(1, 8192, norm);
    INFO(norm << ": " << one * 1e6 << " us, " << sixteen * 1e6 << " us");
    CHECK(sixteen - one >= 2 * 15 * 264 / 1.83e9);
  }
}

TEST_CASE("LayerNorm's Welford statistics chain IEEE reciprocals that RMSNorm's sum of squares does not", "[sim][rowwise]") {
  const double ln = norm_s(1, 8192, "layer"), rms = norm_s(1, 8192, "rms");
  CHECK(rms < 0.9 * ln);
  // A slower reciprocal slows the LayerNorm by at least its four per iteration of pass 1 (16 of
  // them) and the five of the shuffle levels; the RMSNorm does not divide but once per row.
  const std::vector<std::string> slow = {"sm.divide_latency=377 cycles"};
  CHECK(norm_s(1, 8192, "layer", slow) - ln >= (4 * 16 + 5) * 300 / 1.83e9);
  CHECK(norm_s(1, 8192, "rms", slow) - rms <= 2 * 300 / 1.83e9);
}

TEST_CASE("rows that share gamma wait for its fill: eight rows on eight SMs take as long as one", "[sim][rowwise][memory]") {
  // Each CTA reads gamma and beta in pass 2, all at about the same time; the first one's miss
  // brings them, and the others' reads of the same sectors wait for that fill rather than hit.
  const double one = norm_s(1, 8192, "layer"), eight = norm_s(8, 8192, "layer");
  CHECK(eight >= 0.95 * one);
}

TEST_CASE("the block scheduler starts one CTA per sm.cta_launch_interval: a kernel of 8192 short CTAs waits for them", "[sim][rowwise]") {
  // 8192 rows of 256: a CTA each, whose work is a few hundred nanoseconds on 16 CTAs per SM.
  const double none = norm_s(8192, 256, "rms", {"sm.cta_launch_interval=0 ns"});
  const double slow = norm_s(8192, 256, "rms", {"sm.cta_launch_interval=2 ns"});
  CHECK(slow >= 8192 * 2e-9);
  CHECK(none < 0.8 * slow);
}

TEST_CASE("the fused residual add + RMSNorm reads its row once and waits on a block reduction of 16 warps", "[sim][rowwise]") {
  // 64 tokens of 8192: a CTA of 512 threads each. The inputs are read once (the sum stays in
  // registers for the normalisation), and each CTA reads gamma: the L2 sees each input byte
  // once (a second pass over them would add another 2 MB).
  const YAML::Node op = norm_op(64, 8192, "rms", {}, 2);
  const double input_bytes = 2.0 * 64 * 8192 * 2, gamma_bytes = 8192 * 2;
  CHECK(op["memory"]["l2_read_bytes"].as<double>() <= 1.05 * (input_bytes + 64 * gamma_bytes));
  CHECK(op["memory"]["l2_read_bytes"].as<double>() >= 0.95 * input_bytes);
  CHECK_THAT(op["lowering"]["description"].as<std::string>(), Catch::Contains("512 threads"));
  // A shorter row gets fewer threads, each a 16-byte vector at least: 1024 fp16 elements, 128.
  CHECK_THAT(norm_op(64, 1024, "layer", {}, 2)["lowering"]["description"].as<std::string>(), Catch::Contains("CTA of 128 threads"));
  // The reduction is a chain: five shuffle levels in a warp and four over the 16 warps, each
  // slower by the shuffle's latency.
  const double t = op["time_s"].as<double>();
  const double slow = norm_op(64, 8192, "rms", {"sm.shuffle_latency=124 cycles"}, 2)["time_s"].as<double>();
  CHECK(slow - t >= 9 * 100 / 1.83e9 * 0.95);
}

namespace {
YAML::Node softmax_op(long rows, long cols, const std::vector<std::string>& set = {}, const std::string& dtype = "fp16") {
  std::vector<std::string> s = set;
  s.push_back("power.mode=fixed_clock");
  const std::string t = "xpusim_trace: 1\nops:\n  - {name: s, kind: softmax, shape: [" + std::to_string(rows) + ", " +
                        std::to_string(cols) + "], dtype: " + dtype + "}\n";
  return simulate(kH100, t, s)["ops"][0];
}
}  // namespace

TEST_CASE("PyTorch's softmax over rows of up to 1024 is a warp per row whose divisions follow one another", "[sim][rowwise]") {
  // A row of 1024 is 32 elements a thread (a row of 768 is padded to as many), loaded six at a
  // time, then divided by the sum one IEEE division after another: a slower division slows it
  // by at least 32 of them; a row of 256 has 8.
  const YAML::Node one = softmax_op(1, 1024), short_row = softmax_op(1, 256);
  CHECK_THAT(one["lowering"]["description"].as<std::string>(), Catch::Contains("a warp per row") && Catch::Contains("6 round trips"));
  // 768 loads less but divides as often: closer to 1024 than to 256 (the card: 5.12, 5.98, 2.43 us).
  const double t768 = softmax_op(1, 768)["time_s"].as<double>();
  CHECK(t768 < one["time_s"].as<double>());
  CHECK(t768 - short_row["time_s"].as<double>() > one["time_s"].as<double>() - t768);
  const double slow = softmax_op(1, 1024, {"sm.divide_latency=377 cycles"})["time_s"].as<double>();
  CHECK(slow - one["time_s"].as<double>() >= 32 * 300 / 1.83e9);
  CHECK(one["time_s"].as<double>() - short_row["time_s"].as<double>() >= 24 * 77 / 1.83e9);
  // Four rows share a CTA: eight rows are two CTAs, every output written once.
  const YAML::Node eight = softmax_op(8, 1024);
  CHECK(eight["lowering"]["ctas"].as<long>() == 2);
  CHECK(eight["memory"]["l2_write_bytes"].as<double>() == Approx(8 * 1024 * 2));
  // Past 1024 the row streams (PyTorch's block-per-row kernels, by their reads of the row alone).
  CHECK_THAT(softmax_op(4, 4096)["lowering"]["description"].as<std::string>(), Catch::Contains("grid-stride"));
}

TEST_CASE("PyTorch's softmax over rows past 48 KiB reads each row three times", "[sim][rowwise]") {
  // cunn_SoftMaxForward: the max, the sum of exponentials, then the output, each a read of the
  // row; rows that fit shared memory (48 KiB less the reduction's 128 bytes) are read once.
  // 24448 fp16 elements fit (one read), 24577 do not (three). Eight fp32 rows of a 128256 vocabulary fit the L2 but not an L1:
  // the second and third reads are served by the L2, and every output is written once.
  const YAML::Node fits = softmax_op(8, 24448), over = softmax_op(8, 24577);
  CHECK_THAT(over["lowering"]["description"].as<std::string>(), Catch::Contains("each row read 3 times"));
  CHECK_THAT(fits["lowering"]["description"].as<std::string>(), !Catch::Contains("read 3 times"));
  CHECK(fits["memory"]["l1_read_bytes"].as<double>() == Approx(8 * 24448 * 2));
  CHECK(over["memory"]["l1_read_bytes"].as<double>() == Approx(3 * 8 * 24577 * 2));
  CHECK(over["time_s"].as<double>() > fits["time_s"].as<double>());
  const double bytes = 8.0 * 128256 * 4;
  const YAML::Node vocab = softmax_op(8, 128256, {}, "fp32");
  CHECK(vocab["memory"]["l2_read_bytes"].as<double>() == Approx(3 * bytes).epsilon(0.01));
  CHECK(vocab["memory"]["hbm_read_bytes"].as<double>() < 1.1 * bytes);
  CHECK(vocab["memory"]["l2_write_bytes"].as<double>() == Approx(bytes));
}
