// Row-wise kernels whose rows wait on a reduction: PyTorch's LayerNorm and RMSNorm, its softmax
// over rows of up to 1024, and the fused residual add + norm of compiled models and serving
// engines.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/lower/lower_util.h"
#include "sim/lower/lowering.h"

namespace xpusim::lower {
namespace {

using trace::Op;

// What the row-wise kernels share: an op's M x N rows, their formats, and the output they store
// in their steps (so written() names it; their epilogues store none of it, and do nothing unless
// a kernel says otherwise).
class RowProgram : public KernelProgram {
 public:
  int64_t rows = 0, cols = 0;
  int in_bits = 16, out_bits = 16;
  uint64_t out_base = 0;

  void take_shape(const Op& op) {
    rows = op.rows();
    cols = op.cols();
    in_bits = dtype_bits(op.dtype);
    out_bits = dtype_bits(op.out_dtype);
  }
  void epilogue(uint64_t, StepWork&) const override {}
  void written(double max_bytes, std::vector<Strided>& out) const override {
    written_tail(out_base, bytes_of(static_cast<uint64_t>(rows * cols), out_bits), max_bytes, out);
  }
};

// PyTorch's vectorized_layer_norm_kernel (ATen/native/cuda/layer_norm_kernel.cu), which
// F.layer_norm and F.rms_norm run where a row is a multiple of its 4-element vectors: a CTA of
// 32 x 4 threads per row (the launch the profiler records, docs/validation/measured/
// h100-sxm-2026-11-25/rows.csv). Pass 1 reads the row, one 4-element vector per thread per
// iteration, folding each element into the thread's running statistics (Welford's: a count, a
// mean updated through an IEEE reciprocal of the count, and a sum of squares; RMSNorm's: a sum of
// squares); the iterations are not unrolled, so each waits for its load. Then the statistics
// are combined across the block: five shuffle levels within each warp, then across the warps
// through shared memory, two barriers a level, and a barrier to broadcast the result; the rsqrt
// follows. Pass 2 reads the row again (and gamma, beta), normalises and stores it, again one
// load round trip per iteration. A step is one iteration of one pass (stages = 1: the next
// step's loads go out when this step's work is done), and its dependent instructions are
// timed as a chain of the SM's latencies (sm.*_latency).
class RowNormProgram : public RowProgram {
 public:
  static constexpr int kThreads = 128;
  static constexpr int kVector = 4;
  bool rms = false;
  uint64_t x_base = 0, gamma_base = 0, beta_base = 0, stats_base = 0;
  double pass1_chain = 0;  // cycles per pass-1 iteration (one vector per thread)
  double reduction = 0;    // cycles from the last pass-1 iteration to rstd
  double pass2_chain = 0;  // cycles per pass-2 iteration
  double reduction_instr = 0;  // warp instructions of the block reduction, all warps

  int64_t per_step() const { return int64_t{kThreads} * kVector; }
  int64_t iterations() const { return static_cast<int64_t>(div_up(static_cast<uint64_t>(cols), static_cast<uint64_t>(per_step()))); }
  uint64_t num_ctas() const override { return static_cast<uint64_t>(rows); }
  uint64_t steps(uint64_t) const override { return static_cast<uint64_t>(2 * iterations()); }

  void step(uint64_t cta, uint64_t s, StepWork& w) const override {
    const int64_t it = iterations();
    const bool second = static_cast<int64_t>(s) >= it;
    const int64_t i = static_cast<int64_t>(s) % it;
    const int64_t lo = i * per_step(), n = std::min(per_step(), cols - lo);
    const uint64_t at = static_cast<uint64_t>(static_cast<int64_t>(cta) * cols + lo);
    const uint64_t bytes = bytes_of(static_cast<uint64_t>(n), in_bits);
    w.cached_loads.push_back({x_base + bytes_of(at, in_bits), 1, bytes, 0});
    // Instructions per element (each thread's four, one warp instruction per warp for each), as
    // the kernel's SASS has them (docs/validation/measured/h100-sxm-2026-11-25/torch-sass-rows.txt).
    // Pass 1, Welford: 19, the IEEE reciprocal of the count in its branch region (the special-
    // case test and branch, MUFU.RCP, two FFMAs and an FADD of fix-up) and the count, delta,
    // mean and sum-of-squares arithmetic and the fp16 element's conversion; RMSNorm: the
    // conversion and one FFMA. Pass 2: the conversions of the element, gamma (and beta),
    // subtract (LayerNorm), scale, gamma's FMA and the conversion out.
    const double dn = static_cast<double>(n);
    const double warps = std::ceil(dn / kVector / 32.0);
    double instr_per_elem = 0, fp32_per_elem = 0, sfu_per_elem = 0;
    if (!second) {
      instr_per_elem = rms ? 2 : 19;
      fp32_per_elem = rms ? 1 : 7;
      sfu_per_elem = rms ? 0 : 1;
      w.latency_cycles = pass1_chain;
      if (i == it - 1) {
        w.latency_cycles += reduction;
        w.instr_simt += reduction_instr;
      }
    } else {
      const uint64_t off = bytes_of(static_cast<uint64_t>(lo), in_bits);
      w.cached_loads.push_back({gamma_base + off, 1, bytes, 0});
      if (!rms) w.cached_loads.push_back({beta_base + off, 1, bytes, 0});
      w.stores.push_back({out_base + bytes_of(at, out_bits), 1, bytes_of(static_cast<uint64_t>(n), out_bits), 0});
      instr_per_elem = rms ? 5 : 7;
      fp32_per_elem = rms ? 2 : 3;
      w.latency_cycles = pass2_chain;
    }
    w.fp32_ops = dn * fp32_per_elem;
    w.sfu_ops = dn * sfu_per_elem;
    w.instr_simt += warps * kVector * instr_per_elem;
    w.instr_mem = warps * static_cast<double>(w.cached_loads.size() + w.stores.size());
  }
  // The row's mean and rstd (fp32), by its first thread.
  void epilogue(uint64_t cta, StepWork& w) const override {
    if (stats_base) w.stores.push_back({stats_base + 8 * cta, 1, 8, 0});
  }
};

// A fused residual add + norm, as torch.compile's Triton kernel runs it for a row of 8192
// (docs/validation/measured/h100-sxm-2026-11-25/fused-norm.csv: a CTA of 512 threads per token,
// 32 registers a thread). Shorter rows get fewer threads, each at least one 16-byte vector (an
// assumption: only the row of 8192 was measured). Each thread loads its share of every input at
// once (16-byte vectors, all in flight together), adds them, stores the sum (the new residual
// stream) and folds its elements into its statistics, one dependent FMA (RMSNorm) or Welford update (LayerNorm) an
// element; a block reduction follows (five shuffle levels in each warp, then the warps'
// partials through shared memory, reduced by one warp and broadcast: two barriers), then the
// rsqrt. Step 2 loads gamma (and beta), scales the sum it holds in registers and stores the
// output. A step per phase, stages 1: gamma's loads go out once the statistics are known.
class FusedAddNormProgram : public RowProgram {
 public:
  static constexpr int kMaxThreads = 512;
  static constexpr int kVectorBytes = 16;
  int threads = kMaxThreads;
  bool rms = false;
  std::vector<uint64_t> in_base;  // one per input
  uint64_t gamma_base = 0, beta_base = 0, sum_base = 0;
  double chain = 0;      // cycles from the loads' arrival to rstd
  double reduction_instr = 0;

  uint64_t num_ctas() const override { return static_cast<uint64_t>(rows); }
  uint64_t steps(uint64_t) const override { return 2; }
  double per_thread() const { return std::ceil(static_cast<double>(cols) / threads); }
  double warps() const { return threads / 32.0; }

  void step(uint64_t cta, uint64_t s, StepWork& w) const override {
    const uint64_t at = static_cast<uint64_t>(static_cast<int64_t>(cta) * cols);
    const uint64_t in_bytes = bytes_of(static_cast<uint64_t>(cols), in_bits);
    const uint64_t out_bytes = bytes_of(static_cast<uint64_t>(cols), out_bits);
    const double n = static_cast<double>(cols), inputs = static_cast<double>(in_base.size());
    // Memory instructions: one per 16-byte vector of each thread, a warp instruction per warp.
    auto vectors = [&](uint64_t bytes) { return std::ceil(static_cast<double>(bytes) / threads / kVectorBytes) * warps(); };
    if (s == 0) {
      for (uint64_t base : in_base) w.cached_loads.push_back({base + bytes_of(at, in_bits), 1, in_bytes, 0});
      w.stores.push_back({sum_base + bytes_of(at, out_bits), 1, out_bytes, 0});
      w.instr_mem = inputs * vectors(in_bytes) + vectors(out_bytes);
      // Per element: each input's conversion, the adds, the sum's conversion back, and the
      // statistics (RMSNorm: an FMA; LayerNorm: Welford's update with its reciprocal).
      const double per_elem = inputs + (inputs - 1) + 1 + (rms ? 1 : 7);
      w.fp32_ops = n * per_elem;
      w.sfu_ops = rms ? 0 : n;
      w.instr_simt = w.fp32_ops / 32.0 + reduction_instr;
      w.latency_cycles = chain;
      return;
    }
    w.cached_loads.push_back({gamma_base, 1, in_bytes, 0});
    if (!rms) w.cached_loads.push_back({beta_base, 1, in_bytes, 0});
    w.stores.push_back({out_base + bytes_of(at, out_bits), 1, out_bytes, 0});
    w.instr_mem = static_cast<double>(w.cached_loads.size()) * vectors(in_bytes) + vectors(out_bytes);
    // Per element: gamma's (and beta's) conversion, subtract the mean (LayerNorm), scale,
    // gamma's FMA, the conversion out.
    w.fp32_ops = n * (rms ? 4 : 6);
    w.instr_simt = w.fp32_ops / 32.0;
  }
};

// PyTorch's softmax_warp_forward (ATen/native/cuda/PersistentSoftmax.cuh), which torch.softmax
// over the last dimension runs for rows of up to 1024: a warp per row, four warps a CTA (the
// launch the profiler records, docs/validation/measured/h100-sxm-2026-11-25/rows.csv: blocks of
// 32 x 4, 29 registers a thread for rows of 256, 48 for 768-1024), each thread holding every
// 32nd element of the row padded to a power of two. From its SASS (torch-sass-rows.txt, the
// instantiation for 1024): one 2-byte load an element, about six in flight a thread before the
// registers they land in are reused, so a row arrives in that many round trips; a running max
// (a compare and a select an element), five shuffle levels; the exponentials (independent); a
// running sum (an add an element), five shuffle levels; then each element divided by the sum
// with an IEEE division in a branch region of its own, one after another, and stored.
class SoftmaxWarpProgram : public RowProgram {
 public:
  static constexpr int kWarps = 4;
  static constexpr int kLoadsInFlight = 6;
  int64_t per_thread = 0;  // the row padded to a power of two, / 32
  uint64_t x_base = 0;
  double chain = 0;  // cycles from the last loads' arrival to the last division

  int64_t per_step() const { return int64_t{32} * kLoadsInFlight; }
  uint64_t num_ctas() const override { return div_up(static_cast<uint64_t>(rows), kWarps); }
  uint64_t steps(uint64_t) const override { return div_up(static_cast<uint64_t>(per_thread), kLoadsInFlight); }

  void step(uint64_t cta, uint64_t s, StepWork& w) const override {
    const uint64_t row0 = cta * kWarps;
    const uint64_t nrows = std::min<uint64_t>(kWarps, static_cast<uint64_t>(rows) - row0);
    const int64_t lo = static_cast<int64_t>(s) * per_step(), n = std::max<int64_t>(0, std::min(per_step(), cols - lo));
    const uint64_t row_in = bytes_of(static_cast<uint64_t>(cols), in_bits), row_out = bytes_of(static_cast<uint64_t>(cols), out_bits);
    if (n > 0)
      w.cached_loads.push_back({x_base + row0 * row_in + bytes_of(static_cast<uint64_t>(lo), in_bits), nrows,
                                bytes_of(static_cast<uint64_t>(n), in_bits), row_in});
    const double warps = static_cast<double>(nrows);
    const double elems = std::min<double>(kLoadsInFlight, static_cast<double>(per_thread - static_cast<int64_t>(s) * kLoadsInFlight));
    // Per element and thread: the load and its conversion, the max's compare and select.
    w.instr_mem = warps * elems;
    w.instr_simt = warps * elems * 3;
    w.fp32_ops = warps * 32 * elems * 3;
    if (s + 1 < steps(cta)) return;
    // The row's last loads are in: the reductions, the exponentials, the divisions and the
    // stores. Per element: the exponential's FFMA and MUFU.EX2, the sum's FADD, the division
    // (MUFU.RCP, four FFMAs, the check and its branch region: about ten instructions) and the
    // conversion out; the shuffles and their compares.
    const double all = static_cast<double>(per_thread);
    w.stores.push_back({out_base + row0 * row_out, nrows, row_out, row_out});
    w.instr_mem += warps * all;
    w.instr_simt += warps * (all * 14 + 10 * 2);
    w.fp32_ops += warps * 32 * all * 8;
    w.sfu_ops = warps * 32 * all * 2;
    w.latency_cycles = chain;
  }
};

// Elements in a 16-byte vector of the op's inputs.
int64_t fused_norm_vector(const Op& op) { return FusedAddNormProgram::kVectorBytes * 8 / dtype_bits(op.dtype); }

// Rows the fused kernel holds in registers: whole 16-byte vectors, at most 32 elements a thread
// (a row of 16384).
bool fused_norm_fits(const Op& op) {
  return op.cols() % fused_norm_vector(op) == 0 && op.cols() <= 32 * FusedAddNormProgram::kMaxThreads;
}

}  // namespace

bool Lowering::softmax_warp_applies(const Op& op) { return op.inputs == 1 && op.cols() >= 1 && op.cols() <= 1024; }

LoweredOp Lowering::softmax_warp(const Op& op) {
  const SmParams& sm = gpu_.sm;
  auto p = std::make_shared<SoftmaxWarpProgram>();
  p->take_shape(op);
  int64_t pow2 = 32;
  while (pow2 < p->cols) pow2 *= 2;
  p->per_thread = pow2 / 32;
  p->stages = 1;  // the next loads wait for the registers the last ones landed in
  // 29 registers a thread at 8 elements, 48 at 32 (the profiler's records); between, one a element.
  const int regs = static_cast<int>(std::max<int64_t>(29, 16 + p->per_thread));
  p->resources = CtaResources{32 * SoftmaxWarpProgram::kWarps, regs * 32 * SoftmaxWarpProgram::kWarps, 0};
  const double fp32 = sm.fp32_latency_cycles, n = static_cast<double>(p->per_thread);
  p->chain = n * 2 * fp32 + 5 * (sm.shuffle_latency_cycles + 2 * fp32)  // the max: compare and select
             + fp32 + sm.sfu_latency_cycles                              // the exponentials, independent
             + n * fp32 + 5 * (sm.shuffle_latency_cycles + fp32)        // the sum
             + n * sm.divide_latency_cycles;                            // the divisions, one after another
  p->x_base = alloc(static_cast<double>(op.elements()) * p->in_bits / 8.0);
  p->out_base = alloc(static_cast<double>(op.elements()) * p->out_bits / 8.0);
  if (ctas_per_sm(p->resources) < 1) throw UserError("softmax: a CTA of 128 threads does not fit on an SM");
  std::ostringstream os;
  os << "softmax: a warp per row, 4 rows a CTA, " << p->per_thread << " elements a thread loaded in " << p->steps(0)
     << " round trip" << (p->steps(0) > 1 ? "s" : "") << ", " << std::lround(p->chain) << " cycles of reductions and divisions";
  p->description = os.str();
  return finish(p, false);
}

bool Lowering::row_norm_applies(const Op& op) {
  if (op.inputs > 1) return fused_norm_fits(op);
  return op.cols() % RowNormProgram::kVector == 0;
}

LoweredOp Lowering::fused_add_norm(const Op& op) {
  const SmParams& sm = gpu_.sm;
  auto p = std::make_shared<FusedAddNormProgram>();
  p->take_shape(op);
  p->rms = op.rms;
  p->stages = 1;
  // A vector or more a thread, in whole warps, at most 512.
  const int64_t vectors = p->cols / fused_norm_vector(op);
  p->threads = static_cast<int>(std::clamp<int64_t>((vectors + 31) / 32 * 32, 32, FusedAddNormProgram::kMaxThreads));
  p->resources = CtaResources{p->threads, 32 * p->threads, 64};
  const double fp32 = sm.fp32_latency_cycles, warps = p->warps();
  const double barrier = sm.barrier_latency_cycles + sm.barrier_per_warp_cycles * (warps - 1);
  // A thread's elements into its statistics, one after another: RMSNorm's FMA; Welford's count,
  // reciprocal, the mean's FMA and the sum of squares' subtract and FMA. The adds before them are
  // independent, one FP32 latency deep.
  const double element = p->rms ? fp32 : sm.divide_latency_cycles + 3 * fp32;
  const double combine = p->rms ? fp32 : sm.divide_latency_cycles + 4 * fp32;
  const double levels_in_warp = 5, levels_over_warps = std::ceil(std::log2(warps));
  p->chain = fp32 + p->per_thread() * element + levels_in_warp * (sm.shuffle_latency_cycles + combine) +
             // the warps' partials through shared memory: store, barrier, one warp loads and
             // reduces them, stores the total, barrier, all load it (one warp: none of it)
             (warps > 1 ? 2 * (sm.shared_memory_latency_cycles + barrier) : 0.0) +
             levels_over_warps * (sm.shuffle_latency_cycles + combine) +
             // the mean of squares (or the variance), + eps, rsqrt
             2 * fp32 + sm.sfu_latency_cycles;
  // Warp instructions of the reduction: a shuffle and a combine per level per warp (Welford:
  // three shuffles and ~19 for the combine), the partials' stores, loads and barriers.
  p->reduction_instr = warps * (levels_in_warp * (p->rms ? 2 : 22) + 6) + levels_over_warps * (p->rms ? 2 : 22);
  const double bytes = static_cast<double>(op.elements()) * p->in_bits / 8.0;
  for (int i = 0; i < op.inputs; ++i) p->in_base.push_back(alloc(bytes));
  p->gamma_base = alloc(static_cast<double>(p->cols) * p->in_bits / 8.0);
  if (!p->rms) p->beta_base = alloc(static_cast<double>(p->cols) * p->in_bits / 8.0);
  p->sum_base = alloc(static_cast<double>(op.elements()) * p->out_bits / 8.0);
  p->out_base = alloc(static_cast<double>(op.elements()) * p->out_bits / 8.0);
  if (ctas_per_sm(p->resources) < 1)
    throw UserError("layernorm: a CTA of " + std::to_string(p->threads) + " threads does not fit on an SM");
  std::ostringstream os;
  os << "fused residual add + " << (p->rms ? "RMSNorm" : "LayerNorm") << ": a CTA of " << p->threads << " threads per row, the row read once ("
     << p->per_thread() << " elements a thread), a block reduction, " << std::lround(p->chain) << " cycles from the loads to rstd";
  p->description = os.str();
  return finish(p, false);
}

LoweredOp Lowering::row_norm(const Op& op) {
  if (op.inputs > 1) return fused_add_norm(op);
  const SmParams& sm = gpu_.sm;
  auto p = std::make_shared<RowNormProgram>();
  p->take_shape(op);
  p->rms = op.rms;
  p->stages = 1;
  p->resources = CtaResources{RowNormProgram::kThreads, 32 * RowNormProgram::kThreads, 24};
  const double fp32 = sm.fp32_latency_cycles, warps = RowNormProgram::kThreads / 32.0;
  const double barrier = sm.barrier_latency_cycles + sm.barrier_per_warp_cycles * (warps - 1);
  // One element into the running statistics: Welford's count, its reciprocal, the mean's FMA
  // and the sum of squares' subtract and FMA; RMSNorm's sum of squares' FMA.
  const double element = p->rms ? fp32 : sm.divide_latency_cycles + 3 * fp32;
  // Two partial statistics combined: Welford's count sum, its reciprocal, the weights and the
  // mean's FMA; a plain sum's add.
  const double combine = p->rms ? fp32 : sm.divide_latency_cycles + 4 * fp32;
  const double levels_between_warps = std::log2(warps);
  p->pass1_chain = RowNormProgram::kVector * element;
  p->reduction = 5 * (sm.shuffle_latency_cycles + combine) +
                 levels_between_warps * (sm.shared_memory_latency_cycles + 2 * barrier + combine) +
                 // the first thread divides by the row length, stores, a barrier, all load; + eps, rsqrt
                 sm.divide_latency_cycles + sm.shared_memory_latency_cycles + barrier + fp32 + sm.sfu_latency_cycles;
  p->pass2_chain = 3 * fp32;
  // Warp instructions of the reduction: per warp and shuffle level, the shuffles of the
  // statistics (Welford: mean, sum of squares, count; RMSNorm: the sum of squares) and the
  // combine (Welford: ~19 with its IEEE reciprocal; RMSNorm: one add, as its SASS has it); per level between warps,
  // each warp's shared-memory stores, loads, barriers and combine, predicated on its first
  // thread (~30 and ~10); the broadcast (~10).
  p->reduction_instr = warps * (5 * (p->rms ? 2 : 22) + levels_between_warps * (p->rms ? 12 : 30) + 10);
  const double in_bytes = static_cast<double>(op.elements()) * p->in_bits / 8.0;
  p->x_base = alloc(in_bytes);
  p->gamma_base = alloc(static_cast<double>(p->cols) * p->in_bits / 8.0);
  if (!p->rms) p->beta_base = alloc(static_cast<double>(p->cols) * p->in_bits / 8.0);
  p->out_base = alloc(static_cast<double>(op.elements()) * p->out_bits / 8.0);
  if (!p->rms) p->stats_base = alloc(8.0 * static_cast<double>(p->rows));
  const int cps = ctas_per_sm(p->resources);
  if (cps < 1) throw UserError("layernorm: a CTA of 128 threads does not fit on an SM");
  std::ostringstream os;
  os << (p->rms ? "RMSNorm" : "LayerNorm") << ": a CTA of 128 threads per row, " << p->iterations()
     << " dependent iteration" << (p->iterations() > 1 ? "s" : "") << " per pass of " << RowNormProgram::kVector
     << " elements a thread, two passes around a block reduction of " << std::lround(p->reduction) << " cycles";
  p->description = os.str();
  return finish(p, false);
}

}  // namespace xpusim::lower
