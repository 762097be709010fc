#include <catch2/catch.hpp>

#include <cmath>
#include <set>

#include "helpers.h"
#include "sim/config/config_loader.h"
#include "sim/lower/gemm_program.h"
#include "sim/lower/lowering.h"

using namespace xpusim;
using xpusim::testing::error_of;
using xpusim::testing::source_path;

namespace {

struct Totals {
  double macs = 0, load_bytes = 0, store_bytes = 0, simt_ops = 0;
  std::set<uint64_t> store_addrs;
  bool overlapping_stores = false;
};

Totals walk(const KernelProgram& p) {
  Totals t;
  xpusim::testing::for_each_work(p, [&](const StepWork& s) {
    t.macs += s.tensor_macs;
    t.simt_ops += s.fp32_ops;
    t.load_bytes += static_cast<double>(total_bytes(s.loads) + total_bytes(s.multicast_loads) + total_bytes(s.cached_loads));
    t.store_bytes += static_cast<double>(total_bytes(s.stores));
    for (const auto& b : s.stores)
      for (uint64_t r = 0; r < b.rows; ++r)
        if (!t.store_addrs.insert(b.base + r * b.stride).second) t.overlapping_stores = true;
  });
  return t;
}

trace::Op gemm(int64_t m, int64_t n, int64_t k, Dtype d = Dtype::bf16) {
  trace::Op op;
  op.name = "g";
  op.kind = trace::OpKind::gemm;
  op.m = m, op.n = n, op.k = k, op.dtype = d, op.out_dtype = d;
  return op;
}

}  // namespace

TEST_CASE("GEMM lowering: every output written once, MACs cover the padded tiles", "[lowering]") {
  // One CTA per tile (split-K's partials: tests/sim/serving_test.cpp).
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"), {"kernels.gemm.split_k=false"});
  lower::Lowering l(cfg.chip.gpu);
  for (auto shape : {std::array<int64_t, 3>{1000, 1000, 1000}, {8192, 8192, 64}, {64, 4096, 4096}, {300, 700, 90}}) {
    const trace::Op op = gemm(shape[0], shape[1], shape[2]);
    const auto lo = l.lower(op);
    const Totals t = walk(*lo.program);
    CHECK_FALSE(t.overlapping_stores);
    CHECK(t.store_bytes == Approx(static_cast<double>(op.m * op.n * 2)));  // bf16 C exactly once
    CHECK(t.macs >= op.flops() / 2);                                      // never less than the work
    CHECK(t.macs <= op.flops() / 2 * 4.5);                                // padding is bounded
    // Every A and B element is loaded at least once.
    CHECK(t.load_bytes >= static_cast<double>((op.m * op.k + op.k * op.n) * 2));
    CHECK(lo.ctas_per_sm >= 1);
    CHECK(lo.program->resources.shared_bytes <= cfg.chip.gpu.sm.shared_memory_bytes);
    CHECK(lo.program->resources.registers <= cfg.chip.gpu.sm.registers);
  }
}

TEST_CASE("a GEMM of less than one wave of tiles picks its tile by the SMs' load, not their slots", "[lowering]") {
  // 1024^3 bf16: 64 tiles of 128 x 128 leave 68 SMs idle; 128 tiles of half the size spread the
  // same work over 128 SMs, half the time on each (two would share an SM only in a full wave).
  // cuBLAS runs 128 CTAs of 128 x 64 (docs/validation/measured/h100-sxm-2026-11-25/gemm-grids.csv).
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"), {"kernels.gemm.split_k=false"});
  lower::Lowering l(cfg.chip.gpu);
  const auto lo = l.lower(gemm(1024, 1024, 1024));
  CHECK(lo.program->num_ctas() >= 128);
  CHECK(lo.program->num_ctas() <= static_cast<uint64_t>(cfg.chip.gpu.sm.count));
  // A full wave's tiles still fill the slots: 8192^3 keeps the largest tile.
  CHECK_THAT(l.lower(gemm(8192, 8192, 8192)).program->description, Catch::Contains("tile 128x256"));
}

TEST_CASE("Hopper GEMMs stage their output in subtiles, leaving shared memory to the pipeline", "[lowering]") {
  // cuBLAS's kernels keep 16-34 KiB beside their stages for the epilogue, not a whole output
  // tile (gemm-grids.csv of 2026-11-25: 128x256x32 tf32 in four stages of 48 KiB and 34 KiB
  // more). A whole fp32 tile of 128 KiB would leave room for two stages.
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"), {"kernels.gemm.split_k=false"});
  lower::Lowering l(cfg.chip.gpu);
  trace::Op op = gemm(8192, 8192, 8192, Dtype::tf32);
  op.out_dtype = Dtype::fp32;
  const auto lo = l.lower(op);
  CHECK_THAT(lo.program->description, Catch::Contains("tile 128x256x32, 4 stages"));
  CHECK(lo.program->resources.shared_bytes <= 4 * 48.0 * 1024 + 32.0 * 1024);
  CHECK_THAT(l.lower(gemm(8192, 8192, 8192)).program->description, Catch::Contains("4 stages"));
}

TEST_CASE("GEMM clusters fetch each shared B tile once between them", "[lowering]") {
  const auto solo = config::load_config(source_path("configs/h100-sxm.yaml"),
                                        {"kernels.gemm.cluster_m=1", "kernels.gemm.tiles=[128x256]", "kernels.gemm.split_k=false"});
  const auto pair = config::load_config(source_path("configs/h100-sxm.yaml"),
                                        {"kernels.gemm.cluster_m=2", "kernels.gemm.tiles=[128x256]", "kernels.gemm.split_k=false"});
  lower::Lowering ls(solo.chip.gpu), lp(pair.chip.gpu);
  for (auto shape : {std::array<int64_t, 3>{4096, 4096, 1024}, {1000, 1000, 1000}, {384, 512, 256}}) {
    const trace::Op op = gemm(shape[0], shape[1], shape[2]);
    const Totals a = walk(*ls.lower(op).program), b = walk(*lp.lower(op).program);
    // A is never shared: every CTA fetches its own A tile, once per column of tiles.
    const double a_bytes = static_cast<double>(op.m * op.k * 2 * ((op.n + 255) / 256));
    CHECK(b.store_bytes == a.store_bytes);
    CHECK(b.macs == a.macs);
    // B traffic halves where tiles pair up (an odd last row of tiles keeps its whole tile).
    const int64_t tiles_m = (op.m + 127) / 128;
    const double b_solo = a.load_bytes - a_bytes;
    const double paired = static_cast<double>(2 * (tiles_m / 2)) / static_cast<double>(tiles_m);  // share of CTAs in pairs
    const double expected = b_solo * (paired * 0.5 + (1 - paired));
    CHECK(b.load_bytes - a_bytes == Approx(expected).epsilon(0.01));
  }
  const auto bad = config::load_config(source_path("configs/h100-sxm.yaml"), {"kernels.gemm.cluster_m=3"});
  lower::Lowering lb(bad.chip.gpu);
  CHECK_THAT(error_of([&] { lb.lower(gemm(256, 256, 256)); }), Catch::Contains("must be a multiple of kernels.gemm.cluster_m"));
}

TEST_CASE("weight-only GEMMs load narrow weights and their scales, and convert them once per tile", "[lowering]") {
  // Unsplit, so that the loads are the tile walk's alone (a split's partials are split-K's tests').
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"), {"kernels.gemm.split_k=false"});
  lower::Lowering l(cfg.chip.gpu);
  const int64_t M = 16, N = 4096, K = 4096;
  trace::Op w4 = gemm(M, N, K);
  w4.weight_format = "int4", w4.weight_dtype = Dtype::int4, w4.weight_group = 128, w4.weight_scale_bits = 16;
  const auto lo = l.lower(w4);
  const Totals t = walk(*lo.program), dense = walk(*l.lower(gemm(M, N, K)).program);
  // The tokens are the narrow side of the swapped MMA: a 16-row batch is not padded to 64.
  CHECK(t.macs <= 1.01 * static_cast<double>(M * N * K));
  CHECK(dense.macs >= 3.9 * static_cast<double>(M * N * K));
  // Each tile of tokens (the tile's first figure, "tile 8x64x256": the swapped MMA's narrow
  // side) converts each weight once; the token tiles of a cluster ("cluster 2x1") share each
  // weight tile's load by multicast, so every weight and block scale is loaded once a cluster.
  const std::string desc = lo.program->description;
  const int64_t tok = std::stoll(desc.substr(desc.find("tile ") + 5));
  const auto at = desc.find("cluster ");
  const int64_t cluster = at == std::string::npos ? 1 : std::stoll(desc.substr(at + 8));
  REQUIRE(tok <= M);
  const double token_tiles = static_cast<double>((M + tok - 1) / tok);
  const double loads = std::ceil(token_tiles / static_cast<double>(cluster));
  const double weights = static_cast<double>(N * K) / 2 * loads, scales = static_cast<double>(N * K / 128 * 2) * loads;
  const double tokens = static_cast<double>(tok * K * 2) * static_cast<double>(lo.program->num_ctas());  // A per CTA
  CHECK(t.load_bytes == Approx(weights + scales + tokens));
  CHECK(t.store_bytes == dense.store_bytes);
  // At the configured cost per conversion, besides the epilogue's one op per output.
  CHECK(t.simt_ops == Approx(static_cast<double>(N * K) * cfg.chip.gpu.kernels.gemm_dequant_ops * token_tiles + static_cast<double>(M * N)));
  CHECK(dense.simt_ops < t.simt_ops / 50);
  CHECK_THAT(lo.program->description, Catch::Contains("int4 weights converted to bf16"));

  // Block-scaled fp4 on fp4 tensor cores: loaded with its scales, no conversion.
  const auto b200 = config::load_config(source_path("configs/b200.yaml"));
  lower::Lowering lb(b200.chip.gpu);
  trace::Op mx = gemm(256, N, K, Dtype::fp4);
  mx.weight_format = "mxfp4", mx.weight_dtype = Dtype::fp4, mx.weight_group = 32, mx.weight_scale_bits = 8;
  const auto lm = lb.lower(mx);
  const Totals tm = walk(*lm.program), tp = walk(*lb.lower(gemm(256, N, K, Dtype::fp4)).program);
  CHECK_THAT(lm.program->description, Catch::Contains("native block scaling"));
  CHECK(tm.macs == tp.macs);
  CHECK(tm.simt_ops == tp.simt_ops);
  CHECK(tm.load_bytes > tp.load_bytes);  // the E8M0 scales: 1/32 byte per weight per row of tiles
  CHECK(tm.load_bytes < tp.load_bytes * (1 + 1.0 / 32 / 0.5 + 0.01));
}

TEST_CASE("streaming lowering covers every element exactly once", "[lowering]") {
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"));
  lower::Lowering l(cfg.chip.gpu);
  trace::Op op;
  op.name = "e";
  for (auto kind : {trace::OpKind::elementwise, trace::OpKind::softmax, trace::OpKind::reduction}) {
    for (auto shape : {std::vector<int64_t>{1000, 999}, {7, 100000}, {1 << 20}, {3}}) {
      op.kind = kind;
      op.shape = shape;
      op.inputs = 2;
      const auto lo = l.lower(op);
      const Totals t = walk(*lo.program);
      const double n = static_cast<double>(op.elements());
      const int inputs = kind == trace::OpKind::elementwise ? 2 : 1;
      // A softmax row past 48 KiB is read three times (cunn_SoftMaxForward), others once.
      const int passes = kind == trace::OpKind::softmax && op.cols() * 2 > 48 * 1024 - 128 ? 3 : 1;
      CHECK(t.load_bytes == Approx(n * 2 * inputs * passes));
      CHECK(t.store_bytes == Approx(kind == trace::OpKind::reduction ? op.rows() * 2.0 : n * 2));
      CHECK_FALSE(t.overlapping_stores);
    }
  }
}

TEST_CASE("attention lowering: causal masks skip work, K/V shared by grouped heads", "[lowering]") {
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"));
  lower::Lowering l(cfg.chip.gpu);
  trace::Op op;
  op.name = "a";
  op.kind = trace::OpKind::attention;
  op.batch = 2, op.heads = 8, op.kv_heads = 2, op.seq_q = 1024, op.seq_kv = 1024, op.head_dim = 128;
  const Totals full = walk(*l.lower(op).program);
  // Full tiles here (1024 is a multiple of 128): two MMAs per (query, key) pair and head_dim.
  CHECK(full.macs == Approx(2.0 * op.attention_pairs() * 2 * 8 * 128));
  op.causal = true;
  const Totals causal = walk(*l.lower(op).program);
  CHECK(causal.macs < 0.6 * full.macs);
  CHECK(causal.macs >= op.flops() / 2);
  CHECK(full.store_bytes == Approx(2.0 * 1024 * 8 * 128 * 2));
}

TEST_CASE("conv2d lowers to an implicit GEMM whose loads stay inside the input", "[lowering]") {
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"));
  lower::Lowering l(cfg.chip.gpu);
  trace::Op op;
  op.name = "c";
  op.kind = trace::OpKind::conv2d;
  op.batch = 2, op.h = 14, op.w = 14, op.c = 64, op.k = 128, op.r = 3, op.s = 3, op.stride = 1, op.pad = 1;
  const auto lo = l.lower(op);
  const Totals t = walk(*lo.program);
  CHECK(t.store_bytes == Approx(2.0 * 14 * 14 * 128 * 2));
  CHECK(t.macs >= op.flops() / 2);
  // Padding rows are skipped: fewer A bytes than the dense im2col matrix.
  const double im2col = 2.0 * 14 * 14 * 64 * 9 * 2;
  CHECK(t.load_bytes < im2col + 128.0 * 64 * 9 * 2 * 2 * 14);
}

TEST_CASE("lowering refuses what the chip cannot run", "[lowering][errors]") {
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"));
  lower::Lowering l(cfg.chip.gpu);
  CHECK_THAT(error_of([&] { l.lower(gemm(1024, 1024, 1024, Dtype::fp4)); }), Catch::Contains("do not support fp4"));
  CHECK_THAT(error_of([&] { l.lower(gemm(1 << 20, 1 << 20, 1 << 10)); }), Catch::Contains("of HBM"));
  const auto dense = config::load_config(source_path("configs/h100-sxm.yaml"), {"tensor_core.sparse_2_4=false"});
  lower::Lowering ld(dense.chip.gpu);
  trace::Op sp = gemm(1024, 1024, 1024);
  sp.sparse_2_4 = true;
  CHECK_THAT(error_of([&] { ld.lower(sp); }), Catch::Contains("2:4 sparsity"));
  const auto tiles = config::load_config(source_path("configs/h100-sxm.yaml"), {"kernels.gemm.tiles=[12x34]"});
  lower::Lowering lt(tiles.chip.gpu);
  CHECK_THAT(error_of([&] { lt.lower(gemm(64, 64, 64)); }), Catch::Contains("'12x34' is not a tile"));
}

// ---------------------------------------------------------------------------------------------
// Blackwell (tcgen05) kernels.

namespace {

// Bytes the CTAs fetch from L2 (a multicast share is fetched once, whatever its fan-out; loads
// through the L1 counted before any hit), split into A and the rest (B, its scales).
struct L2Bytes {
  double a = 0, b = 0, macs = 0;
};

L2Bytes l2_bytes(const KernelProgram& p, uint64_t a_base, uint64_t a_end) {
  L2Bytes t;
  for (uint64_t c = 0; c < p.num_ctas(); ++c)
    for (uint64_t s = 0; s < p.steps(c); ++s) {
      StepWork w;
      p.step(c, s, w);
      t.macs += w.tensor_macs;
      for (const auto* v : {&w.loads, &w.multicast_loads, &w.cached_loads})
        for (const Strided& blk : *v) (blk.base >= a_base && blk.base < a_end ? t.a : t.b) += static_cast<double>(blk.rows * blk.row_bytes);
    }
  return t;
}

config::LoadedConfig b200(std::vector<std::string> sets = {}) { return config::load_config(source_path("configs/b200.yaml"), sets); }

}  // namespace

TEST_CASE("conv2d: a K step over several filter taps loads each tap's channels, and unaligned channels run on the lanes or are padded",
          "[lowering]") {
  const auto cfg = config::load_config(source_path("configs/h100-sxm.yaml"));
  lower::Lowering l(cfg.chip.gpu);
  // A patch embedding: 4 x 4 patches at stride 4, no padding, so every input element belongs
  // to exactly one output pixel's window and A is read once per column tile.
  auto patches = [](int64_t c) {
    trace::Op op;
    op.name = "patch";
    op.kind = trace::OpKind::conv2d;
    op.batch = 2, op.h = 64, op.w = 64, op.c = c, op.k = 256, op.r = 4, op.s = 4, op.stride = 4, op.pad = 0;
    op.dtype = op.out_dtype = Dtype::fp16;
    return op;
  };
  auto a_bytes = [](const lower::LoweredOp& lo) {
    const auto* gp = dynamic_cast<const lower::GemmProgram*>(lo.program.get());
    REQUIRE(gp != nullptr);
    const double input = static_cast<double>(gp->g.n * gp->g.h * gp->g.w * gp->g.c) * 2;
    const L2Bytes b = l2_bytes(*lo.program, gp->a, gp->a + static_cast<uint64_t>(input));
    return std::make_pair(b.a, input * static_cast<double>(gp->tiles_n));
  };
  // 8 channels (16-byte rows): tensor cores, a 64-element K step spanning 8 taps.
  const auto aligned = l.lower(patches(8));
  CHECK(aligned.uses_tensor_cores);
  const auto [a8, want8] = a_bytes(aligned);
  CHECK(a8 == Approx(want8));
  // 3 channels: cuDNN's SIMT kernel (32 x 32 tiles of 64 threads, K steps of 8, one buffer), in
  // fp32 on the lanes, every tap's channels loaded.
  const auto unaligned = l.lower(patches(3));
  CHECK_FALSE(unaligned.uses_tensor_cores);
  CHECK(unaligned.lane_dtype == Dtype::fp32);
  CHECK_THAT(unaligned.program->description, Catch::Contains("implicit_convolve_sgemm") && Catch::Contains("FFMA"));
  CHECK(unaligned.program->num_ctas() == 16 * 8);  // 512 pixels x 256 filters in 32 x 32 tiles
  CHECK(unaligned.program->resources.threads == 64);
  CHECK(unaligned.program->stages == 1);
  const auto [a3, want3] = a_bytes(unaligned);
  CHECK(a3 == Approx(want3));
  const Totals t = walk(*unaligned.program);
  CHECK(t.simt_ops >= patches(3).flops() / 2);  // an FFMA per multiply-add
  CHECK(t.store_bytes == Approx(2.0 * 16 * 16 * 256 * 2));
  CHECK(unaligned.tail == nullptr);

  // A ResNet stem at batch 8 is large enough that padding the channels to 8 by a copy kernel
  // and running the tensor cores is the faster way: the copy writes the padded input where the
  // convolution (the second kernel) reads it.
  trace::Op stem = patches(3);
  stem.batch = 8, stem.h = stem.w = 224, stem.k = 64, stem.r = stem.s = 7, stem.stride = 2, stem.pad = 3;
  const auto padded = l.lower(stem);
  CHECK(padded.uses_tensor_cores);
  CHECK_THAT(padded.program->description, Catch::Contains("channels padded 3 -> 8"));
  REQUIRE(padded.tail != nullptr);
  const auto* conv = dynamic_cast<const lower::GemmProgram*>(padded.tail.get());
  REQUIRE(conv != nullptr);
  CHECK(conv->g.c == 8);
  const double padded_input = 8.0 * 224 * 224 * 8 * 2;
  const Totals copy = walk(*padded.program);
  CHECK(copy.store_bytes == Approx(padded_input));
  CHECK(*copy.store_addrs.begin() == conv->a);
  const Totals c8 = walk(*padded.tail);
  CHECK(c8.macs >= stem.flops() / 2 * 8 / 3);  // the padded channels are multiplied too
}

TEST_CASE("tcgen05 GEMMs: persistent CTAs write every output once and cover the padded tiles", "[lowering][blackwell]") {
  // Unsplit: a skinny GEMM would otherwise split K over a CTA per tile and split
  // (tests/sim/serving_test.cpp, "Blackwell's tcgen05 GEMMs split K ...").
  const auto cfg = b200({"kernels.gemm.split_k=false"});
  lower::Lowering l(cfg.chip.gpu);
  for (auto shape : {std::array<int64_t, 3>{1000, 1000, 1000}, {8192, 8192, 64}, {64, 4096, 4096}, {300, 700, 90}, {4096, 4096, 512}}) {
    const trace::Op op = gemm(shape[0], shape[1], shape[2]);
    const auto lo = l.lower(op);
    const Totals t = walk(*lo.program);
    CHECK_FALSE(t.overlapping_stores);
    CHECK(t.store_bytes == Approx(static_cast<double>(op.m * op.n * 2)));
    CHECK(t.macs >= op.flops() / 2);
    CHECK(t.macs <= op.flops() / 2 * 4.5);
    CHECK(t.load_bytes >= static_cast<double>((op.m * op.k + op.k * op.n) * 2));
    // One persistent CTA per SM at most; the CTAs of a cluster (two 2-SM pairs) stay together.
    CHECK(lo.program->num_ctas() <= static_cast<uint64_t>(cfg.chip.gpu.sm.count));
    CHECK_THAT(lo.program->description, Catch::Contains("tcgen05") && Catch::Contains("2-SM MMA"));
    // Accumulators are in tensor memory: the threads hold no tile of them.
    CHECK(lo.program->resources.registers <= 96 * lo.program->resources.threads);
  }
}

TEST_CASE("the 2-SM MMA halves the L2 bytes of the shared operand per FLOP (analytic)", "[lowering][blackwell]") {
  // Same tile grid (128 x 256 per CTA), same persistent kernel: 1-SM MMAs against CTA pairs.
  const auto solo = b200({"kernels.gemm.cta_pair=false", "kernels.gemm.cluster_m=1", "kernels.gemm.tiles=[128x256]"});
  const auto pair = b200({"kernels.gemm.cta_pair=true", "kernels.gemm.cluster_m=2", "kernels.gemm.tiles=[128x256]"});
  lower::Lowering ls(solo.chip.gpu), lp(pair.chip.gpu);
  const trace::Op op = gemm(4096, 4096, 1024);
  const auto os = ls.lower(op), opr = lp.lower(op);
  auto gp = [](const lower::LoweredOp& lo) { return dynamic_cast<const lower::GemmProgram*>(lo.program.get()); };
  REQUIRE(gp(os) != nullptr);
  REQUIRE(gp(opr) != nullptr);
  const uint64_t a_end = gp(os)->a + 4096 * 1024 * 2;
  const L2Bytes s = l2_bytes(*os.program, gp(os)->a, a_end), p = l2_bytes(*opr.program, gp(opr)->a, gp(opr)->a + 4096 * 1024 * 2);
  REQUIRE(s.macs == p.macs);
  // Analytic: per K element a CTA fetches bm A rows and bn B columns alone, bm and bn / 2 in a pair.
  const double k = 1024, flops = 2.0 * s.macs, tiles = (4096 / 128) * (4096 / 256);
  CHECK(s.b / flops == Approx(tiles * 256 * k * 2 / flops));
  CHECK(p.b / flops == Approx(0.5 * s.b / flops));  // the shared operand: exactly half
  CHECK(p.a == s.a);                                 // A is each SM's own
  CHECK((p.a + p.b) / (s.a + s.b) == Approx((128.0 + 256.0 / 2) / (128.0 + 256.0)));
  // The pair's shared memory holds half of B per stage, so its pipeline is at least as deep.
  CHECK(opr.program->stages >= os.program->stages);
}

TEST_CASE("tensor memory bounds the accumulator tile", "[lowering][blackwell]") {
  const trace::Op op = gemm(4096, 4096, 4096);
  // 256 KiB: 512 columns, two 256-wide accumulators (the epilogue overlaps the next tile).
  {
    const auto cfg = b200({"kernels.gemm.tiles=[128x256]"});
    lower::Lowering l(cfg.chip.gpu);
    CHECK_THAT(l.lower(op).program->description, Catch::Contains("2 x 256 TMEM columns") && Catch::Contains("persistent"));
  }
  // 128 KiB: 256 columns hold one 256-wide accumulator: no overlap, one CTA per tile.
  {
    const auto cfg = b200({"kernels.gemm.tiles=[128x256]", "tensor_core.tensor_memory=128 KiB"});
    lower::Lowering l(cfg.chip.gpu);
    const auto lo = l.lower(op);
    CHECK_THAT(lo.program->description, Catch::Contains("1 x 256 TMEM columns"));
    CHECK_FALSE(Catch::Contains("persistent").match(lo.program->description));
    CHECK(lo.program->num_ctas() == (4096 / 128) * (4096 / 256));
  }
  // 64 KiB: 128 columns; a 256-wide tile cannot run, a narrower one is chosen instead.
  {
    const auto cfg = b200({"kernels.gemm.tiles=[128x256, 128x128, 128x64]", "tensor_core.tensor_memory=64 KiB"});
    lower::Lowering l(cfg.chip.gpu);
    const auto lo = l.lower(op);  // keeps the program alive
    const auto* p = dynamic_cast<const lower::GemmProgram*>(lo.program.get());
    REQUIRE(p != nullptr);
    CHECK(p->bn <= 128);
    const auto only_wide = b200({"kernels.gemm.tiles=[128x256]", "tensor_core.tensor_memory=64 KiB"});
    lower::Lowering lw(only_wide.chip.gpu);
    CHECK_THAT(error_of([&] { lw.lower(op); }), Catch::Contains("tensor memory"));
  }
}

TEST_CASE("block-scaled fp4 needs no conversion work on tcgen05", "[lowering][blackwell]") {
  const int64_t M = 256, N = 4096, K = 4096;
  // fp4 weights beside fp8 activations: the f8f6f4 MMA takes them as they are on Blackwell;
  // Hopper converts each weight in registers first.
  trace::Op op = gemm(M, N, K, Dtype::fp8_e4m3);
  op.weight_format = "mxfp4", op.weight_dtype = Dtype::fp4, op.weight_group = 32, op.weight_scale_bits = 8;
  const auto bw = b200();
  const auto hop = config::load_config(source_path("configs/h100-sxm.yaml"), {"kernels.gemm.split_k=false"});
  lower::Lowering lb(bw.chip.gpu), lh(hop.chip.gpu);
  const auto on_b = lb.lower(op), on_h = lh.lower(op);
  const Totals tb = walk(*on_b.program), th = walk(*on_h.program);
  CHECK(tb.simt_ops == Approx(static_cast<double>(M * N)));  // the epilogue's one op per output, nothing else
  CHECK(th.simt_ops > static_cast<double>(N * K));           // a conversion per weight
  CHECK_THAT(on_b.program->description, Catch::Contains("native block scaling"));
  CHECK_THAT(on_h.program->description, Catch::Contains("converted to fp8"));
  // NVFP4 weights under fp8 activations are not an f8f6f4 format (E4M3 scales per 16): converted.
  trace::Op nv8 = gemm(M, N, K, Dtype::fp8_e4m3);
  nv8.weight_format = "nvfp4", nv8.weight_dtype = Dtype::fp4, nv8.weight_group = 16, nv8.weight_scale_bits = 8;
  CHECK(walk(*lb.lower(nv8).program).simt_ops > static_cast<double>(N * K));
  // MXFP8 weights under fp8 math: Blackwell's block-scaled MMA applies the scales; Hopper's
  // wgmma has none, so each 32-element block's partial sums are promoted with their scale on the
  // SIMT lanes (one FMA per accumulator per block).
  trace::Op mx8 = gemm(M, N, K, Dtype::fp8_e4m3);
  mx8.weight_format = "mxfp8", mx8.weight_dtype = Dtype::fp8_e4m3, mx8.weight_group = 32, mx8.weight_scale_bits = 8;
  CHECK(walk(*lb.lower(mx8).program).simt_ops == Approx(static_cast<double>(M * N)));
  const auto h8 = lh.lower(mx8);
  const auto* hp = dynamic_cast<const lower::GemmProgram*>(h8.program.get());
  REQUIRE(hp != nullptr);
  const double padded_mn = static_cast<double>(hp->tiles() * hp->bm * hp->bn);
  CHECK(walk(*h8.program).simt_ops == Approx(padded_mn * (1.0 + static_cast<double>(K) / 32)));
  // NVFP4 on both sides of an fp4 GEMM: the block-scaled MMA, no conversion.
  trace::Op nv = gemm(M, N, K, Dtype::fp4);
  nv.weight_format = "nvfp4", nv.weight_dtype = Dtype::fp4, nv.weight_group = 16, nv.weight_scale_bits = 8;
  CHECK(walk(*lb.lower(nv).program).simt_ops == Approx(static_cast<double>(M * N)));
}

TEST_CASE("tcgen05 attention keeps S and O in tensor memory and halves K/V traffic per FLOP", "[lowering][blackwell]") {
  trace::Op op;
  op.name = "attn";
  op.kind = trace::OpKind::attention;
  op.batch = 2, op.heads = 16, op.kv_heads = 16, op.seq_q = 4096, op.seq_kv = 4096, op.head_dim = 128;
  op.dtype = op.out_dtype = Dtype::bf16;
  const auto bw = b200(), hop = b200({"kernels.attention.mma=wgmma"});
  lower::Lowering lb(bw.chip.gpu), lh(hop.chip.gpu);
  const auto tb = lb.lower(op), th = lh.lower(op);
  const Totals wb = walk(*tb.program), wh = walk(*th.program);
  CHECK(wb.macs == wh.macs);
  CHECK(wb.store_bytes == wh.store_bytes);
  CHECK_THAT(tb.program->description, Catch::Contains("2 query tiles of 128"));
  // K and V are loaded once per CTA; a CTA covers 256 queries instead of 128.
  const double q_bytes = static_cast<double>(2 * 16 * 4096 * 128 * 2);
  CHECK((wb.load_bytes - q_bytes) == Approx(0.5 * (wh.load_bytes - q_bytes)));
  // Registers no longer hold S and O.
  CHECK(tb.program->resources.registers < th.program->resources.registers);
  // Head dimensions whose S and O do not fit tensor memory are refused with the reason.
  op.head_dim = 512;
  CHECK_THAT(error_of([&] { lb.lower(op); }), Catch::Contains("tensor memory"));
}

// ---------------------------------------------------------------------------------------------
// GEMMs on the SIMT lanes (chips before tensor cores, formats the tensor cores lack).

TEST_CASE("a chip without tensor cores runs fp32 GEMMs as FFMA loops and refuses the formats it has no instruction for",
          "[lowering][simt][errors]") {
  const auto k40 = config::load_config(source_path("configs/k40.yaml"));
  lower::Lowering l(k40.chip.gpu);
  const trace::Op op = gemm(1000, 1000, 1000, Dtype::fp32);
  const auto lo = l.lower(op);
  CHECK_FALSE(lo.uses_tensor_cores);
  CHECK_THAT(lo.program->description, Catch::Contains("SIMT FFMA"));
  double macs = 0, lane = 0, instr = 0;
  bool overlapping = false;
  std::set<uint64_t> stores;
  xpusim::testing::for_each_work(*lo.program, [&](const StepWork& s) {
    macs += s.tensor_macs;
    lane += s.fp32_ops;
    instr += s.instr_simt;
    for (const auto& b : s.stores)
      for (uint64_t r = 0; r < b.rows; ++r)
        if (!stores.insert(b.base + r * b.stride).second) overlapping = true;
  });
  CHECK(macs == 0);                      // nothing on tensor cores
  CHECK(lane >= op.flops() / 2);         // an FFMA per multiply-add (tile padding included) ...
  CHECK(lane <= op.flops() / 2 * 1.6);   // ... and the epilogue's conversions
  CHECK(instr >= lane / 32 * 0.99);      // one warp instruction per 32 lane operations
  CHECK_FALSE(overlapping);
  for (Dtype d : {Dtype::bf16, Dtype::fp8_e4m3, Dtype::tf32})
    CHECK_THAT(error_of([&] { l.lower(gemm(256, 256, 256, d)); }),
               Catch::Contains("this chip has no tensor cores (tensor_core.per_sm is 0)") && Catch::Contains("no " + std::string(dtype_name(d)) + " GEMM instruction"));
  CHECK_THAT(error_of([&] { l.lower(gemm(256, 256, 256, Dtype::fp16)); }), Catch::Contains("no FP16 arithmetic (sm.hfma_per_lane is 0)"));
  CHECK_THAT(error_of([&] { l.lower(gemm(256, 256, 256, Dtype::int8)); }), Catch::Contains("no DP4A (sm.dp4a_per_lane is 0)"));
  trace::Op sp = gemm(256, 256, 256, Dtype::fp32);
  sp.sparse_2_4 = true;
  CHECK_THAT(error_of([&] { l.lower(sp); }), Catch::Contains("SIMT lanes, which do not skip zeros"));
}

TEST_CASE("SIMT GEMMs: HFMA2 and DP4A do 2x and 4x the multiply-adds of FFMA per lane slot", "[lowering][simt]") {
  // A Pascal-like SM: FFMA, HFMA2 and DP4A, no tensor cores.
  const auto cfg = config::load_config(source_path("configs/k40.yaml"), {"sm.hfma_per_lane=2", "sm.dp4a_per_lane=1"});
  lower::Lowering l(cfg.chip.gpu);
  auto lane_slots = [&](Dtype d) {
    const auto lo = l.lower(gemm(2048, 2048, 2048, d));
    double slots = 0;
    xpusim::testing::for_each_work(*lo.program, [&](const StepWork& s) {
      slots += s.hfma_ops / 2 + s.dp4a_ops;
      if (d == Dtype::fp32) slots += s.fp32_ops;
    });
    return slots;
  };
  const double ffma = lane_slots(Dtype::fp32), hfma2 = lane_slots(Dtype::fp16), dp4a = lane_slots(Dtype::int8);
  CHECK(ffma / hfma2 == Approx(2).epsilon(0.05));
  CHECK(ffma / dp4a == Approx(4).epsilon(0.05));
  CHECK(lower::simt_gemm_peak_tflops(cfg.chip.gpu, Dtype::fp32) == Approx(2.0 * 2880 * 745e6 / 1e12));
  CHECK(lower::simt_gemm_peak_tflops(cfg.chip.gpu, Dtype::int8) == Approx(4 * 2.0 * 2880 * 745e6 / 1e12));
}

TEST_CASE("mma.sync GEMMs (Volta to Ampere): warp MMAs of the configured instruction, every output once",
          "[lowering][mma_sync]") {
  auto instructions = [](const std::vector<std::string>& sets, Dtype d, double* macs_out = nullptr) {
    const auto cfg = config::load_config(source_path("configs/v100.yaml"), sets);
    lower::Lowering l(cfg.chip.gpu);
    const trace::Op op = gemm(2048, 2048, 2048, d);
    const auto lo = l.lower(op);
    CHECK(lo.uses_tensor_cores);
    CHECK_THAT(lo.program->description, Catch::Contains("mma.sync"));
    double instr = 0, macs = 0;
    std::set<uint64_t> stores;
    bool overlapping = false;
    xpusim::testing::for_each_work(*lo.program, [&](const StepWork& s) {
      instr += s.instr_mma;
      macs += s.tensor_macs;
      for (const auto& b : s.stores)
        for (uint64_t r = 0; r < b.rows; ++r)
          if (!stores.insert(b.base + r * b.stride).second) overlapping = true;
    });
    CHECK_FALSE(overlapping);
    CHECK(macs >= op.flops() / 2);
    if (macs_out) *macs_out = macs;
    return instr;
  };
  // MACs per instruction: Volta's HMMA.884 256 per STEP, Turing's HMMA.1688 1024, Ampere's
  // HMMA.16816 2048; IMMA at 8-bit inputs holds as many bytes of K, twice the MACs.
  const std::vector<std::pair<std::vector<std::string>, std::pair<Dtype, double>>> cases = {
      {{}, {Dtype::fp16, 256}},
      {{"tensor_core.mma_instruction=hmma1688"}, {Dtype::fp16, 1024}},
      {{"tensor_core.mma_instruction=hmma16816"}, {Dtype::fp16, 2048}},
      {{"tensor_core.mma_instruction=hmma16816", "tensor_core.macs_per_clock.int8=128"}, {Dtype::int8, 4096}}};
  for (const auto& [sets, expect] : cases) {
    double macs = 0;
    const double instr = instructions(sets, expect.first, &macs);
    CHECK(macs / instr == Approx(expect.second));
  }
  // Volta's tensor cores take fp16 only: bf16 has no path at all.
  const auto v100 = config::load_config(source_path("configs/v100.yaml"));
  lower::Lowering l(v100.chip.gpu);
  CHECK_THAT(error_of([&] { l.lower(gemm(256, 256, 256, Dtype::bf16)); }), Catch::Contains("do not support bf16"));
  // The A100's: every format it has fits a tile (tf32's 32-bit fragments included), 2:4 too.
  const auto a100 = config::load_config(source_path("configs/a100.yaml"));
  lower::Lowering la(a100.chip.gpu);
  for (Dtype d : {Dtype::tf32, Dtype::bf16, Dtype::fp16, Dtype::int8})
    CHECK_THAT(la.lower(gemm(2048, 2048, 2048, d)).program->description, Catch::Contains("m16n8k"));
  trace::Op sp = gemm(2048, 2048, 2048, Dtype::bf16);
  sp.sparse_2_4 = true;
  CHECK(la.lower(sp).uses_tensor_cores);
  // The T4's Turing tensor cores: fp16 by HMMA.1688, int8 and int4 by IMMA, no bf16; their
  // peaks are the datasheet's 65, 130 and 260 at the 1590 MHz boost.
  const auto t4 = config::load_config(source_path("configs/t4.yaml"));
  lower::Lowering lt(t4.chip.gpu);
  for (Dtype d : {Dtype::fp16, Dtype::int8, Dtype::int4}) {
    const auto lo = lt.lower(gemm(2048, 2048, 2048, d));
    CHECK(lo.uses_tensor_cores);
    CHECK_THAT(lo.program->description, Catch::Contains("m16n8k"));
    const auto& g = t4.chip.gpu;
    const double peak = 2.0 * g.sm.count * g.tensor_core.per_sm * g.tensor_core.macs_per_clock.of(d) * g.sm.clock_hz;
    CHECK(peak == Approx(d == Dtype::fp16 ? 65e12 : d == Dtype::int8 ? 130e12 : 260e12).epsilon(0.005));
  }
  CHECK_THAT(error_of([&] { lt.lower(gemm(256, 256, 256, Dtype::bf16)); }), Catch::Contains("do not support bf16"));
  // Hopper's warpgroup MMA needs Hopper's tensor cores.
  CHECK_THAT(error_of([] { config::load_config(source_path("configs/v100.yaml"), {"kernels.gemm.mma=wgmma"}); }),
             Catch::Contains("wgmma needs Hopper's tensor cores"));
}

TEST_CASE("fused attention is refused before Hopper, with the unfused form named", "[lowering][mma_sync][errors]") {
  const auto v100 = config::load_config(source_path("configs/v100.yaml"));
  lower::Lowering l(v100.chip.gpu);
  trace::Op op;
  op.name = "attn";
  op.kind = trace::OpKind::attention;
  op.batch = 1, op.heads = 8, op.kv_heads = 8, op.seq_q = 512, op.seq_kv = 512, op.head_dim = 64;
  op.dtype = op.out_dtype = Dtype::fp16;
  CHECK_THAT(error_of([&] { l.lower(op); }), Catch::Contains("--attention unfused"));
}
