// The kernels a serving engine runs: split-K GEMMs, decode attention (flash-decoding), and
// what each kernel costs around its work (launch gap, grid start and end, eager launches).
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <memory>
#include <vector>

#include "helpers.h"
#include "sim/config/config_loader.h"
#include "sim/lower/attention_program.h"
#include "sim/lower/gemm_program.h"
#include "sim/lower/lowering.h"

using namespace xpusim;
using xpusim::testing::simulate;
using xpusim::testing::source_path;
using xpusim::testing::kH100;

namespace {

std::string gemm_trace(long m, long n, long k, const std::string& dtype = "bf16") {
  return "xpusim_trace: 1\nops:\n  - {name: g, kind: gemm, m: " + std::to_string(m) + ", n: " + std::to_string(n) +
         ", k: " + std::to_string(k) + ", dtype: " + dtype + "}\n";
}
std::string decode_trace(long batch, long heads, long kv_heads, long kv) {
  return "xpusim_trace: 1\nops:\n  - {name: a, kind: attention, batch: " + std::to_string(batch) +
         ", heads: " + std::to_string(heads) + ", kv_heads: " + std::to_string(kv_heads) +
         ", seq_q: 1, seq_kv: " + std::to_string(kv) + ", head_dim: 128, dtype: fp16}\n";
}
double op_time(const YAML::Node& r) { return r["ops"][0]["time_s"].as<double>(); }

trace::Op gemm_op(int64_t m, int64_t n, int64_t k, Dtype d = Dtype::bf16) {
  trace::Op op;
  op.name = "g";
  op.kind = trace::OpKind::gemm;
  op.m = m, op.n = n, op.k = k, op.dtype = d, op.out_dtype = d;
  return op;
}

trace::Op decode_op(int64_t batch, int64_t heads, int64_t kv_heads, int64_t kv) {
  trace::Op op;
  op.name = "a";
  op.kind = trace::OpKind::attention;
  op.dtype = op.out_dtype = Dtype::fp16;
  op.batch = batch, op.heads = heads, op.kv_heads = kv_heads, op.seq_q = 1, op.seq_kv = kv, op.head_dim = 128;
  return op;
}

// Bytes stored and loaded over every CTA's whole program.
struct ProgramTraffic {
  double stores = 0, loads = 0, macs = 0;
};
ProgramTraffic traffic(const KernelProgram& p) {
  ProgramTraffic t;
  xpusim::testing::for_each_work(p, [&](const StepWork& s) {
    t.stores += static_cast<double>(total_bytes(s.stores));
    t.loads += static_cast<double>(total_bytes(s.loads) + total_bytes(s.multicast_loads));
    t.macs += s.tensor_macs;
  });
  return t;
}
}  // namespace

TEST_CASE("split-K: the same MACs as the unsplit kernel, partials written once and read back once", "[sim][serving]") {
  // One tile in the menu, so that the split kernel and the unsplit one share it (Hopper's split
  // choice may otherwise take another tile with its split: GemmProgram::choose_splits).
  const std::string tile = "kernels.gemm.tiles=[64x32]";
  const auto off = config::load_config(kH100, {"kernels.gemm.split_k=false", tile});
  lower::Lowering loff(off.chip.gpu);
  const trace::Op op = gemm_op(1, 1280, 8192);  // Llama-2-70B TP=8 QKV at batch 1: 40 tiles of 64 x 32 on 132 SMs
  const auto whole = std::dynamic_pointer_cast<const lower::GemmProgram>(loff.lower(op).program);
  REQUIRE(whole);
  CHECK(whole->splits == 1);
  const ProgramTraffic w = traffic(*whole);
  const double out = 1 * 1280 * 2, partial = 1 * 1280 * 4;  // the bf16 output; one fp32 copy of it
  // The op lowered with split-K under these overrides, and its split kernel.
  auto lowered = [&](std::vector<std::string> overrides, std::shared_ptr<const lower::GemmProgram>& split) {
    overrides.push_back(tile);
    const auto on = config::load_config(kH100, overrides);
    lower::LoweredOp lo = lower::Lowering(on.chip.gpu).lower(op);
    split = std::dynamic_pointer_cast<const lower::GemmProgram>(lo.program);
    REQUIRE(split);
    REQUIRE(split->splits > 1);
    CHECK(split->num_ctas() == whole->num_ctas() * static_cast<uint64_t>(split->splits));
    CHECK(traffic(*split).macs == Approx(w.macs));
    return lo;
  };
  std::shared_ptr<const lower::GemmProgram> split;

  SECTION("a second kernel adds the partials (cuBLAS's splitKreduce)") {
    const lower::LoweredOp lo = lowered({}, split);
    REQUIRE(lo.tail);
    const ProgramTraffic s = traffic(*split), r = traffic(*lo.tail);
    // Every split stores its fp32 copy of the output and no output; the second kernel loads
    // every copy once and stores the output as the unsplit kernel does.
    const double copies = static_cast<double>(split->splits) * partial;
    CHECK(s.stores == Approx(copies));
    CHECK(s.loads == Approx(w.loads));
    CHECK(r.loads == Approx(copies));
    CHECK(r.stores == Approx(w.stores));
    CHECK(w.stores == Approx(out));
  }
  SECTION("the last split adds them (CUTLASS's serial split-K)") {
    CHECK_FALSE(lowered({"kernels.gemm.split_k_reduction=serial"}, split).tail);
    const ProgramTraffic s = traffic(*split);
    // Each tile's partials: (splits - 1) of them, stored once and loaded once by the last split,
    // as fp32 of the tile's real rows and columns (over the tiles, the output's); the bf16
    // output as the unsplit kernel stores it.
    const double partials = static_cast<double>(split->splits - 1) * partial;
    CHECK(s.stores == Approx(w.stores + partials));
    CHECK(s.loads == Approx(w.loads + partials));
  }
}

TEST_CASE("Blackwell's tcgen05 GEMMs split K where a skinny GEMM leaves SMs idle", "[sim][serving]") {
  // Llama-3-70B's QKV projection at TP 8 in a batch-32 decode step: 20 tiles of 64 rows on 148
  // SMs. Persistent, the kernel would walk them on 20 SMs, each a 128-step K loop; split, one
  // CTA per tile and split, the same MACs.
  const std::string b200 = source_path("configs/b200.yaml");
  const auto cfg = config::load_config(b200);
  const trace::Op op = gemm_op(32, 1280, 8192);
  const auto split = std::dynamic_pointer_cast<const lower::GemmProgram>(lower::Lowering(cfg.chip.gpu).lower(op).program);
  const auto off = config::load_config(b200, {"kernels.gemm.split_k=false"});
  const auto whole = std::dynamic_pointer_cast<const lower::GemmProgram>(lower::Lowering(off.chip.gpu).lower(op).program);
  REQUIRE(split);
  REQUIRE(whole);
  CHECK(whole->splits == 1);
  REQUIRE(split->splits > 1);
  CHECK(split->num_ctas() == split->tiles() * static_cast<uint64_t>(split->splits));
  CHECK(traffic(*split).macs == Approx(traffic(*whole).macs));
  const double t_split = op_time(simulate(b200, gemm_trace(32, 1280, 8192)));
  const double t_whole = op_time(simulate(b200, gemm_trace(32, 1280, 8192), {"kernels.gemm.split_k=false"}));
  INFO("split " << split->splits << " ways: " << t_split * 1e6 << " us, persistent unsplit: " << t_whole * 1e6 << " us");
  CHECK(t_split < 0.5 * t_whole);
  // A GEMM whose tiles fill the SMs stays persistent and unsplit.
  const auto big = std::dynamic_pointer_cast<const lower::GemmProgram>(lower::Lowering(cfg.chip.gpu).lower(gemm_op(8192, 8192, 8192)).program);
  REQUIRE(big);
  CHECK(big->splits == 1);
  CHECK(big->num_ctas() < big->tiles());
}

TEST_CASE("split-K never loses to the unsplit kernel by more than the reduction's cost", "[sim][serving]") {
  const auto cfg = config::load_config(kH100);
  lower::Lowering l(cfg.chip.gpu);
  for (auto shape : {std::array<long, 3>{1, 1280, 8192}, {64, 1280, 8192}, {16, 4096, 4096}, {256, 4096, 11008},
                     {1, 8192, 1024}, {512, 512, 512}}) {
    const trace::Op op = gemm_op(shape[0], shape[1], shape[2]);
    const auto p = std::dynamic_pointer_cast<const lower::GemmProgram>(l.lower(op).program);
    REQUIRE(p);
    const double split = op_time(simulate(kH100, gemm_trace(shape[0], shape[1], shape[2])));
    const double whole = op_time(simulate(kH100, gemm_trace(shape[0], shape[1], shape[2]), {"kernels.gemm.split_k=false"}));
    INFO(shape[0] << "x" << shape[1] << "x" << shape[2] << ": split " << p->splits << " ways " << split * 1e6
                  << " us, unsplit " << whole * 1e6 << " us");
    CHECK(split <= whole + p->reduction_s(cfg.chip.gpu, p->splits));
  }
  // Where the tiles leave most SMs idle, splitting pays: the QKV GEMM at batch 1 in 64 x 64
  // tiles of 4 stages (20 CTAs on 132 SMs, each a long K loop) by at least a third. The narrow
  // tiles and deep pipelines of Hopper's menu spread it over 40 SMs unsplit, and splitting them
  // still gains.
  const std::vector<std::string> wide = {"kernels.gemm.tiles=[64x64]", "kernels.gemm.max_stages=4"};
  auto unsplit = wide;
  unsplit.push_back("kernels.gemm.split_k=false");
  const double split = op_time(simulate(kH100, gemm_trace(1, 1280, 8192), wide));
  const double whole = op_time(simulate(kH100, gemm_trace(1, 1280, 8192), unsplit));
  CHECK(split < 0.67 * whole);
  CHECK(op_time(simulate(kH100, gemm_trace(1, 1280, 8192))) < op_time(simulate(kH100, gemm_trace(1, 1280, 8192), {"kernels.gemm.split_k=false"})));
}

TEST_CASE("stream-K: the same MACs as the data-parallel kernel, each partial written once and read back once", "[sim][serving]") {
  const auto on = config::load_config(kH100), off = config::load_config(kH100, {"kernels.gemm.stream_k=false"});
  lower::Lowering lon(on.chip.gpu), loff(off.chip.gpu);
  // 289 tiles of 128x128 on 132 SMs: 2.19 waves, a ragged third.
  const trace::Op op = gemm_op(2176, 2176, 8192);
  const auto sk = std::dynamic_pointer_cast<const lower::GemmProgram>(lon.lower(op).program);
  const auto dp = std::dynamic_pointer_cast<const lower::GemmProgram>(loff.lower(op).program);
  REQUIRE(sk);
  REQUIRE(dp);
  REQUIRE(sk->sk_ctas > 0);
  CHECK(dp->sk_ctas == 0);
  CHECK(sk->tiles() == dp->tiles());
  CHECK(sk->num_ctas() == sk->dp_tiles + static_cast<uint64_t>(sk->sk_ctas));
  CHECK_THAT(sk->description, Catch::Contains("stream-K"));
  // Every K step of every tile exactly once.
  uint64_t steps = 0;
  for (uint64_t c = 0; c < sk->num_ctas(); ++c) steps += sk->steps(c);
  CHECK(steps == sk->tiles() * sk->k_steps());
  const ProgramTraffic s = traffic(*sk), w = traffic(*dp);
  CHECK(s.macs == Approx(w.macs));
  // A partial per stream-K CTA that ends inside a tile, stored once and loaded once by the CTA
  // that finishes the tile; every tile's output stored once, as the data-parallel kernel does.
  double partials = 0;
  for (int64_t c = 0; c < sk->sk_ctas; ++c)
    if (sk->sk_first(c + 1) % sk->k_steps() != 0 && sk->sk_first(c + 1) > sk->sk_first(c)) partials += 1;
  CHECK(partials > 0);
  const double tile_bytes = static_cast<double>(sk->bm * sk->bn) * 4;
  CHECK(s.stores == Approx(w.stores + partials * tile_bytes));
  CHECK(s.loads == Approx(w.loads + partials * tile_bytes));
}

TEST_CASE("stream-K runs where the last wave is ragged and never loses by more than its fixup", "[sim][serving][heavy]") {
  const auto cfg = config::load_config(kH100);
  lower::Lowering l(cfg.chip.gpu);
  const double fixup_bound = 5e-6;  // a partial per SM through the L2 and one load latency: a few microseconds
  for (auto shape : {std::array<long, 3>{2176, 2176, 8192}, {2560, 2560, 4096}, {3072, 3072, 4096}, {4096, 4096, 4096},
                     {1024, 1024, 1024}, {16, 8192, 8192}}) {
    const trace::Op op = gemm_op(shape[0], shape[1], shape[2]);
    const auto p = std::dynamic_pointer_cast<const lower::GemmProgram>(l.lower(op).program);
    REQUIRE(p);
    const double with = op_time(simulate(kH100, gemm_trace(shape[0], shape[1], shape[2])));
    const double without = op_time(simulate(kH100, gemm_trace(shape[0], shape[1], shape[2]), {"kernels.gemm.stream_k=false"}));
    INFO(shape[0] << "x" << shape[1] << "x" << shape[2] << ": " << p->description << ": " << with * 1e6 << " us, data-parallel "
                  << without * 1e6 << " us");
    CHECK(with <= without + fixup_bound);
    // Fewer than two waves of tiles are not stream-K's.
    if (p->tiles() < 2 * 132) CHECK(p->sk_ctas == 0);
  }
  // 289 tiles in 3 waves against 2.19 waves' work: stream-K saves at least a tenth.
  const double with = op_time(simulate(kH100, gemm_trace(2176, 2176, 8192)));
  const double without = op_time(simulate(kH100, gemm_trace(2176, 2176, 8192), {"kernels.gemm.stream_k=false"}));
  CHECK(with < 0.9 * without);
}

TEST_CASE("decode attention: a KV head's query group per CTA, K and V read once, the split combined", "[sim][serving]") {
  const auto cfg = config::load_config(kH100), padded = config::load_config(kH100, {"kernels.attention.decode=false"});
  lower::Lowering l(cfg.chip.gpu), lp(padded.chip.gpu);
  trace::Op op = decode_op(2, 8, 1, 4096);
  const auto p = std::dynamic_pointer_cast<const lower::AttentionProgram>(l.lower(op).program);
  REQUIRE(p);
  CHECK(p->decode);
  CHECK(p->splits > 1);  // 2 (sequence, KV head) pairs on 132 SMs: split the KV
  const ProgramTraffic t = traffic(*p);
  const double kv = 2.0 * 2 * 4096 * 128 * 2, q = 2.0 * 8 * 128 * 2, out = q;
  // Every split stores its fp32 O rows and their log-sum-exps for both pairs; the combine kernel
  // loads each once and stores the output.
  const double partial = 2.0 * static_cast<double>(p->splits) * 8 * 129 * 4;
  CHECK(t.loads == Approx(kv + q * static_cast<double>(p->splits)));  // each split loads its Q
  CHECK(t.stores == Approx(partial));
  const lower::LoweredOp lo = l.lower(op);
  REQUIRE(lo.tail);
  const ProgramTraffic c = traffic(*lo.tail);
  CHECK(c.loads == Approx(partial));
  CHECK(c.stores == Approx(out));
  CHECK(lo.tail->num_ctas() == 2 * 8 / 4);  // FlashAttention's 4 rows per CTA at head_dim 128
  // 64-row MMA blocks for the 8 rows of the group, against a 128-row tile per query head.
  const ProgramTraffic tp = traffic(*lp.lower(op).program);
  CHECK(tp.macs == Approx(t.macs * 8 * 2));
  // And it is faster: at batch 1 a padded kernel runs 8 CTAs (one per head) over the whole KV.
  const double fast = op_time(simulate(kH100, decode_trace(1, 8, 1, 16384)));
  const double slow = op_time(simulate(kH100, decode_trace(1, 8, 1, 16384), {"kernels.attention.decode=false"}));
  CHECK(fast < 0.5 * slow);
}

TEST_CASE("per-kernel costs: the launch gap, the grid's start and end, and eager launches", "[sim][serving]") {
  std::string chain = "xpusim_trace: 1\nops:\n";
  for (int i = 0; i < 8; ++i)
    chain += "  - {name: e" + std::to_string(i) + ", kind: elementwise, shape: [1], dtype: fp32" +
             (i ? ", deps: [e" + std::to_string(i - 1) + "]" : std::string()) + "}\n";
  const std::vector<std::string> none = {"kernels.launch_gap=0 s", "kernels.kernel_start=0 s", "kernels.kernel_end=0 s"};
  const YAML::Node bare = simulate(kH100, chain, none);
  std::vector<std::string> costs = {"kernels.launch_gap=0.3 us", "kernels.kernel_start=0.5 us", "kernels.kernel_end=0.25 us"};
  const YAML::Node paid = simulate(kH100, chain, costs);
  const double t0 = bare["total"]["time_s"].as<double>(), t1 = paid["total"]["time_s"].as<double>();
  // Eight kernels pay start and end each, seven gaps between them.
  CHECK(t1 - t0 == Approx(8 * 0.75e-6 + 7 * 0.3e-6).epsilon(0.02));
  // A kernel's reported time includes its start and end.
  CHECK(paid["ops"][3]["time_s"].as<double>() == Approx(bare["ops"][3]["time_s"].as<double>() + 0.75e-6).epsilon(0.02));
  // Eager: the host issues a kernel every 10 us, far slower than these kernels run.
  costs.push_back("kernels.launch=eager");
  costs.push_back("kernels.eager_issue=10 us");
  const YAML::Node eager = simulate(kH100, chain, costs);
  for (int i = 1; i < 8; ++i)
    CHECK(eager["ops"][i]["start_s"].as<double>() - eager["ops"][i - 1]["start_s"].as<double>() == Approx(10e-6).epsilon(1e-3));
  CHECK(eager["total"]["time_s"].as<double>() > 80e-6);
}

TEST_CASE("a second kernel (split-K's reduction, flash-decoding's combine) pays its own launch", "[sim][serving]") {
  // Split 8 ways over 1K tokens: the combine runs after the split kernel, each with its grid's
  // start and end, the launch gap between them.
  const std::string t = decode_trace(1, 8, 1, 1024);
  const std::vector<std::string> none = {"kernels.launch_gap=0 s", "kernels.kernel_start=0 s", "kernels.kernel_end=0 s"};
  const std::vector<std::string> costs = {"kernels.launch_gap=0.3 us", "kernels.kernel_start=0.5 us", "kernels.kernel_end=0.25 us"};
  const double bare = op_time(simulate(kH100, t, none)), paid = op_time(simulate(kH100, t, costs));
  CHECK(paid - bare == Approx(2 * 0.75e-6 + 0.3e-6).epsilon(0.02));
  // The op is reported as one, both kernels named.
  const auto cfg = config::load_config(kH100);
  lower::Lowering l(cfg.chip.gpu);
  REQUIRE(l.lower(decode_op(1, 8, 1, 1024)).tail);
  const YAML::Node r = simulate(kH100, t, none);
  CHECK(r["ops"][0]["lowering"]["description"].as<std::string>().find("; then combine kernel") != std::string::npos);
  // A GEMM split with a reduction kernel likewise.
  const double g_bare = op_time(simulate(kH100, gemm_trace(1, 1280, 8192), none));
  const double g_paid = op_time(simulate(kH100, gemm_trace(1, 1280, 8192), costs));
  CHECK(g_paid - g_bare == Approx(2 * 0.75e-6 + 0.3e-6).epsilon(0.05));
}

TEST_CASE("attention with 256-wide heads narrows its tiles until a CTA fits an SM", "[sim][serving]") {
  const auto cfg = config::load_config(kH100);
  lower::Lowering l(cfg.chip.gpu);
  trace::Op op;
  op.name = "a";
  op.kind = trace::OpKind::attention;
  op.dtype = op.out_dtype = Dtype::bf16;
  op.batch = 1, op.heads = 16, op.kv_heads = 16, op.head_dim = 256;
  for (int64_t sq : {int64_t{1}, int64_t{2048}}) {
    op.seq_q = sq, op.seq_kv = 2048, op.causal = sq > 1;
    const auto lo = l.lower(op);
    INFO("seq_q " << sq << ": " << lo.program->description);
    CHECK(occupancy(cfg.chip.gpu.sm, lo.program->resources) >= 1);
    CHECK(lo.program->resources.shared_bytes <= cfg.chip.gpu.sm.shared_memory_bytes);
  }
  // And it runs to the end (it stalled when the CTA fitted no SM).
  const YAML::Node r = simulate(kH100, "xpusim_trace: 1\nops:\n  - {name: a, kind: attention, heads: 16, seq_q: 512, head_dim: 256, causal: true}\n");
  CHECK(op_time(r) > 0);
}

TEST_CASE("paged KV: the same K and V rows read through block tables, scattered in the pool", "[sim][serving]") {
  const auto cfg = config::load_config(kH100);
  lower::Lowering l(cfg.chip.gpu);
  trace::Op op = decode_op(4, 8, 2, 1000);
  const ProgramTraffic flat = traffic(*l.lower(op).program);
  for (int64_t page : {16, 64, 256}) {
    op.kv_page = page;
    const auto p = std::dynamic_pointer_cast<const lower::AttentionProgram>(l.lower(op).program);
    REQUIRE(p);
    INFO(page << "-token pages");
    CHECK_THAT(p->description, Catch::Contains("paged KV (" + std::to_string(page) + "-token pages)"));
    // Every page of every sequence has its own slot.
    std::vector<int64_t> slots;
    for (int64_t b = 0; b < op.batch; ++b)
      for (int64_t pg = 0; pg < p->pages_per_seq(); ++pg) slots.push_back(p->page_slot(b, pg));
    std::sort(slots.begin(), slots.end());
    CHECK(std::adjacent_find(slots.begin(), slots.end()) == slots.end());
    CHECK(slots.back() == op.batch * p->pages_per_seq() - 1);
    // A sequence's consecutive pages are not neighbours in the pool (when it has several).
    if (p->pages_per_seq() > 2) CHECK(std::abs(p->page_slot(0, 1) - p->page_slot(0, 0)) > 1);
    // The same K and V bytes and MACs; the extra loads are the block tables' entries, one per page
    // of a KV block (a block spanning pages reads each entry it needs).
    const ProgramTraffic t = traffic(*p);
    CHECK(t.macs == Approx(flat.macs));
    CHECK(t.stores == Approx(flat.stores));
    CHECK(t.loads > flat.loads);
    const double kv_blocks = static_cast<double>(op.batch * op.kv_heads) * static_cast<double>(p->kv_blocks());
    const double max_entries = kv_blocks * (static_cast<double>(p->bkv) / static_cast<double>(page) + 1) * 4;
    CHECK(t.loads - flat.loads <= max_entries);
  }
  // Run: a little slower than contiguous (rows of HBM opened more often), never faster by much.
  const std::string base = decode_trace(64, 8, 1, 1152);
  std::string paged = base;
  paged.replace(paged.rfind('}'), 1, ", kv_page: 16}");
  const YAML::Node rf = simulate(kH100, base), rp = simulate(kH100, paged);
  CHECK(op_time(rp) >= op_time(rf) * 0.99);
  CHECK(op_time(rp) <= op_time(rf) * 1.25);
  CHECK(rp["ops"][0]["memory"]["hbm_activates"].as<double>() > rf["ops"][0]["memory"]["hbm_activates"].as<double>());
}

TEST_CASE("strided operands run PyTorch's legacy elementwise kernel: the same bytes in dependent iterations", "[sim][serving]") {
  const auto cfg = config::load_config(kH100, {});
  auto lowered = [&](bool contiguous, Dtype d, int64_t elements) {
    trace::Op op;
    op.name = "add";
    op.kind = trace::OpKind::elementwise;
    op.dtype = op.out_dtype = d;
    op.shape = {elements};
    op.inputs = 2;
    op.contiguous = contiguous;
    return lower::Lowering(cfg.chip.gpu).lower(op).program;
  };
  struct Moved {
    double loads = 0, stores = 0, instr_mem = 0;
  };
  auto moved = [](const KernelProgram& p) {
    Moved m;
    xpusim::testing::for_each_work(p, [&](const StepWork& s) {
      m.loads += static_cast<double>(total_bytes(s.cached_loads));
      m.stores += static_cast<double>(total_bytes(s.stores));
      m.instr_mem += s.instr_mem;
    });
    return m;
  };
  const int64_t n = 131072;  // a [2, 256, 256] fp16 tensor
  const auto vec = lowered(true, Dtype::fp16, n), legacy = lowered(false, Dtype::fp16, n);
  // launch_legacy_kernel<128, 4>: a CTA of 128 threads per 512 elements, four iterations, each
  // waiting for the one before (one load in flight).
  CHECK(legacy->num_ctas() == static_cast<uint64_t>(n / 512));
  CHECK(legacy->steps(0) == 4);
  CHECK(legacy->stages == 1);
  CHECK(legacy->resources.threads == 128);
  CHECK(lowered(false, Dtype::fp32, n)->steps(0) == 2);  // unroll 2 for 4-byte outputs
  // The same bytes either way; scalar accesses take eight times the instructions of 128-bit ones.
  const Moved v = moved(*vec), l = moved(*legacy);
  CHECK(l.loads == Approx(v.loads));
  CHECK(l.loads == Approx(2.0 * n * 2));
  CHECK(l.stores == Approx(v.stores));
  CHECK(l.instr_mem == Approx(8 * v.instr_mem).epsilon(0.01));

  // Small: latency-bound, and the three later iterations are round trips of their own, each at
  // least an idle L2 hit (144 ns on this config).
  auto trace = [](int64_t elements, bool contiguous) {
    return "xpusim_trace: 1\nops:\n  - {name: add, kind: elementwise, shape: [" + std::to_string(elements) +
           "], inputs: 2, dtype: fp16, contiguous: " + (contiguous ? "true" : "false") + "}\n";
  };
  const double small_vec = op_time(simulate(kH100, trace(n, true))), small_legacy = op_time(simulate(kH100, trace(n, false)));
  CHECK(small_legacy - small_vec > 3 * 0.144e-6);
  // Large: both are HBM-bound, and the legacy kernel is no faster.
  const int64_t big = int64_t{1} << 24;
  CHECK(op_time(simulate(kH100, trace(big, false))) >= 0.98 * op_time(simulate(kH100, trace(big, true))));
}
