// GEMM kernels of the tensor cores before Hopper (Volta, Turing, Ampere: sm_70 to sm_86): CUTLASS
// 2-style kernels in which every warp issues warp-level MMA instructions (mma.sync; HMMA and
// IMMA in SASS) on operands it has loaded from shared memory into registers (ldmatrix), and keeps
// its accumulators in registers. Each K step the CTA copies its A and B tiles into shared
// memory: through registers (LDG then STS) before Ampere, by cp.async (one instruction, no
// registers) from Ampere on. Each warp owns a 64 x 64 block of the CTA tile.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "sim/lower/gemm_program.h"
#include "sim/lower/lower_util.h"

namespace xpusim::lower {
namespace {

constexpr int64_t kWarpTile = 64;  // each warp's block of the CTA tile, as CUTLASS's 64 x 64 warp tiles

class MmaSyncGemm : public GemmProgram {
 public:
  // One warp instruction at 16-bit inputs (tensor_core.mma_instruction): its M x N x K product,
  // issued over `steps` instructions (Volta's HMMA.884 STEP0-3).
  int64_t mma_m = 16, mma_n = 8, mma_k = 16, mma_steps = 1;
  bool async_copy = true;                     // cp.async (Ampere on) rather than LDG + STS

  bool bulk_copies() const override { return false; }

  // Warps of a tbm x tbn CTA tile: one per 64 x 64 block of it.
  static int64_t warps_of(int64_t tbm, int64_t tbn) { return std::max<int64_t>(1, (tbm / kWarpTile) * std::max<int64_t>(1, tbn / kWarpTile)); }
  int64_t warps() const { return warps_of(bm, bn); }
  // MACs of one instruction: the shape's K holds as many bytes at every input width.
  double instr_macs() const {
    return static_cast<double>(mma_m * mma_n * mma_k) / static_cast<double>(mma_steps) * 16.0 / std::max(1, in_bits);
  }

  void mma_costs(StepWork& w) const override {
    const double macs = static_cast<double>(bm * bn * bk);
    const double instr = std::ceil(macs / instr_macs());
    w.instr_mma += instr;
    w.tensor_per_warp = true;
    const double eb = in_bits / 8.0;
    // Staging: the A and B tiles into shared memory, 16 bytes per lane per instruction.
    const double tile_bytes = static_cast<double>(bm * bk) * eb + static_cast<double>(bn * bk) * b_elem_bytes;
    w.smem_write_bytes += tile_bytes;
    w.instr_mem += (async_copy ? 1.0 : 2.0) * std::ceil(tile_bytes / (16.0 * 32.0));
    // Fragments: each warp reads its 64 rows of A and 64 columns of B for the step (ldmatrix.x4:
    // 512 bytes per warp instruction).
    const int64_t wm = std::min(bm, kWarpTile), wn = std::min(bn, kWarpTile);
    const double read = static_cast<double>(warps() * bk) * (static_cast<double>(wm) * eb + static_cast<double>(wn) * b_elem_bytes);
    w.smem_read_bytes += read;
    w.instr_mem += std::ceil(read / 512.0);
    // Weight-only kernels convert the weights on the lanes before the MMAs.
    if (dequant_ops > 0) {
      const double ops = static_cast<double>(bn * bk) * dequant_ops;
      w.fp32_ops += ops;
      w.instr_simt += std::ceil(ops / 32.0);
    }
    // Each MMA reads and writes its fp32 (int32) accumulator fragment in registers (a STEP its
    // share of the product's).
    w.rf_bytes += instr * static_cast<double>(mma_m * mma_n) / static_cast<double>(mma_steps) * 4.0 * 2.0;
  }

  void choose_tile(const config::GpuConfig& gpu, const trace::Op& op, double eff_rate) override {
    const SmParams& sm = gpu.sm;
    double best = std::numeric_limits<double>::infinity();
    for (const auto& [tbm, tbn] : candidate_tiles(gpu)) {
      if (tbn % kWarpTile != 0 && tbn > kWarpTile) continue;
      const int64_t n_warps = warps_of(tbm, tbn);
      const int64_t threads = 32 * n_warps;
      // Accumulators of the warp's tile over 32 lanes, fragments double-buffered, addressing.
      // Per thread: the warp tile's accumulators over 32 lanes, and the A and B fragments of a
      // 32-byte k slice (one instruction's K at 16 bits), double-buffered, in 4-byte registers.
      const int regs = static_cast<int>(std::min(tbn, kWarpTile) * kWarpTile / 32 + 2 * (2 * kWarpTile) * 32 / 4 / 32) + kBaseRegisters;
      if (regs > 255 || threads > 1024) continue;
      const double stage_bytes = static_cast<double>(bytes_of(static_cast<uint64_t>(bk), in_bits)) * static_cast<double>(tbm) +
                                 static_cast<double>(bk * tbn) * b_elem_bytes;
      // The epilogue stages the output tile through shared memory, reusing the pipeline's buffers.
      const int st = stages_that_fit(gpu, 0.0, stage_bytes);
      if (st == 0) continue;
      CtaResources r{static_cast<int>(threads), regs * static_cast<int>(threads), st * stage_bytes};
      const int cps = occupancy(sm, r);
      if (cps < 1) continue;
      keep_if_best(gpu, op, tbm, tbn, st, r, 0.0, cps, eff_rate, best);
    }
  }

  // Each warp's MMAs run on its processing block's tensor cores (StepWork::tensor_per_warp): the
  // `per_sm` CTAs on an SM reach the share of them that their warps' blocks own (one one-warp CTA
  // alone on a four-block SM: a quarter).
  double step_cycles(const config::GpuConfig& gpu, int64_t tbm, int64_t tbn, double per_sm, double eff_rate) const override {
    const double share = std::min(1.0, per_sm * static_cast<double>(warps_of(tbm, tbn)) / gpu.sm.sub_partitions);
    return per_sm * static_cast<double>(tbm * tbn * bk) / (eff_rate * share);
  }

  std::string describe() const override {
    std::ostringstream os;
    os << "mma.sync m" << mma_m << "n" << mma_n << "k" << static_cast<int64_t>(mma_k * 16 / std::max(1, in_bits))
       << (mma_steps > 1 ? " (" + std::to_string(mma_steps) + " steps)" : "") << ", tile " << bm
       << "x" << bn << "x" << bk << ", " << warps() << " warps, " << stages << " stages" << (async_copy ? " (cp.async)" : "");
    return os.str();
  }
};

}  // namespace

std::shared_ptr<GemmProgram> make_mma_sync_gemm(const config::GpuConfig& gpu) {
  auto p = std::make_shared<MmaSyncGemm>();
  const std::string& mi = gpu.tensor_core.mma_instruction;  // the schema admits these three
  if (mi == "hmma884") p->mma_m = 16, p->mma_n = 16, p->mma_k = 4, p->mma_steps = 4;
  else if (mi == "hmma1688") p->mma_m = 16, p->mma_n = 8, p->mma_k = 8;
  else p->mma_m = 16, p->mma_n = 8, p->mma_k = 16;
  p->async_copy = gpu.tensor_core.generation >= 3;
  return p;
}

}  // namespace xpusim::lower
