// Hopper's GEMM kernels (sm_90, warpgroup MMA): CUTLASS 3 warp-specialised kernels, one CTA per
// output tile with a producer warpgroup issuing TMA and consumer warpgroups holding the fp32
// accumulators in registers; each 64-row warpgroup MMA (wgmma) reads its rows of the row operand
// and all of the other one from shared memory.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "sim/lower/gemm_program.h"
#include "sim/lower/lower_util.h"

namespace xpusim::lower {
namespace {

class WgmmaGemm : public GemmProgram {
 public:
  // A warpgroup's MMAs in one K step, each taking 32 bytes of K: chained on one accumulator.
  double chain() const { return std::ceil(static_cast<double>(bk * in_bits) / 256.0); }
  // The chain's least time: each MMA's latency, its fill (tensor_core.mma_latency) and its MACs
  // (64 rows x `cols` x 32 bytes of K) at the tensor cores' rate, so that a wide MMA outlasts a
  // narrow one. Two consumer warpgroups run their chains side by side; the MAC bound covers
  // their sharing of the tensor cores.
  double chain_cycles(int64_t cols) const {
    const double k = 256.0 / static_cast<double>(in_bits);
    const double macs = mma_rate > 0 ? 64.0 * static_cast<double>(cols) * k / mma_rate : 0.0;
    return chain() * (mma_latency_cycles + macs);
  }
  // One pipeline stage of a tbm x tbn tile: its K step of A and of B (the whole B tile, every
  // multicast share), as it lands in shared memory and crosses the SM's port.
  double stage_bytes(int64_t tbm, int64_t tbn) const {
    return static_cast<double>(bytes_of(static_cast<uint64_t>(bk), in_bits)) * static_cast<double>(tbm) +
           static_cast<double>(bk * tbn) * b_elem_bytes;
  }

  bool splits_choose_tile() const override { return true; }

  void mma_costs(StepWork& w) const override {
    // One warpgroup MMA covers 64 rows x the tile's other side x 32 bytes of K. The 64 rows are
    // A's (the tokens), or in a weight-only kernel the weights': mixed-input kernels swap the
    // operands (C^T = B^T A^T) so that the converted weights are the MMA's register operand and
    // the tokens its narrow side, which may be as small as 8.
    const int64_t mma_rows = swap() ? bn : bm, mma_cols = swap() ? bm : bn;
    const double instr = static_cast<double>(mma_rows / 64) * chain();
    w.instr_mma += instr;
    // A warpgroup's MMAs of one K step accumulate into the same registers, each after the last:
    // the step lasts at least the chain's latency. A narrow tile's MMAs are short, so its K loop
    // runs at this bound, not at the tensor cores' rate.
    w.latency_cycles = std::max(w.latency_cycles, chain_cycles(mma_cols));
    // Shared memory: TMA lands the A tile and the whole B tile (every multicast share). Each
    // 64-row warpgroup MMA reads its rows of the row operand and all of the other one; swapped,
    // the weights are read once into registers and converted there.
    const double b_tile_bytes = static_cast<double>(bn * bk) * b_elem_bytes;
    const double a_tile_bytes = static_cast<double>(bm * bk) * in_bits / 8.0;
    w.smem_write_bytes += a_tile_bytes + b_tile_bytes;
    w.smem_read_bytes += swap() ? b_tile_bytes + static_cast<double>(bn / 64) * a_tile_bytes
                                : a_tile_bytes + static_cast<double>(bm / 64) * b_tile_bytes;
    if (dequant_ops > 0) {
      const double ops = static_cast<double>(bn * bk) * dequant_ops;
      w.fp32_ops += ops;
      w.instr_simt += std::ceil(ops / 32.0);
    } else if (scale_group > 0) {
      // Block-scaled weights in the math format (MXFP8): wgmma has no block scales, so each
      // scale block's partial sums are promoted into the fp32 accumulators with their scale on
      // the SIMT lanes (one FMA per accumulator per block, as Hopper's block-scaled fp8 kernels
      // such as DeepGEMM do), through a second set of registers.
      const double ops = static_cast<double>(bm * bn) * std::ceil(static_cast<double>(bk) / static_cast<double>(scale_group));
      w.fp32_ops += ops;
      w.instr_simt += std::ceil(ops / 32.0);
      w.rf_bytes += ops * 4.0 * 2.0;
    }
    // Each warpgroup MMA reads and writes its 64-row block of fp32 accumulators.
    w.rf_bytes += instr * 64.0 * static_cast<double>(mma_cols) * 4.0 * 2.0;
  }

  double step_cycles(const config::GpuConfig& gpu, int64_t tbm, int64_t tbn, double per_sm, double eff_rate) const override {
    // The MACs; one warpgroup's chained MMAs (as mma_costs times them); the A and B tiles through
    // the SM's port (a multicast B tile arrives whole).
    const double macs = per_sm * static_cast<double>(tbm * tbn * bk) / eff_rate;
    const double port = gpu.noc.port_bytes_per_cycle > 0 ? per_sm * stage_bytes(tbm, tbn) / gpu.noc.port_bytes_per_cycle : 0.0;
    return std::max({macs, chain_cycles(swap() ? tbm : tbn), port});
  }

  void choose_tile(const config::GpuConfig& gpu, const trace::Op& op, double eff_rate) override {
    const SmParams& sm = gpu.sm;
    const KernelLibParams& kl = gpu.kernels;
    double best = std::numeric_limits<double>::infinity();
    std::vector<std::pair<int64_t, int64_t>> tiles = candidate_tiles(gpu);
    if (swap()) {
      // Swapped: each tile's 64-row side covers the weights (N) and its other side the tokens
      // (M), which also come in the narrow widths of small batches.
      std::vector<std::pair<int64_t, int64_t>> sw;
      for (const auto& [rows, cols] : tiles)
        for (int64_t tok : {int64_t{16}, int64_t{32}, cols})
          if (std::find(sw.begin(), sw.end(), std::make_pair(tok, rows)) == sw.end()) sw.emplace_back(tok, rows);
      tiles = sw;
    }
    for (const auto& [tbm, tbn] : tiles) {
      const double stage = stage_bytes(tbm, tbn);
      // The epilogue in subtiles (gemm-grids.csv: 4 x 48 KiB stages + 16 KiB for a 256x128x64
      // bf16 tile, 4 x 48 KiB + 34 KiB for a 128x256x32 tf32 one).
      const double epilogue_bytes = subtiled_epilogue_bytes(tbm, tbn);
      const int st = stages_that_fit(gpu, epilogue_bytes, stage);
      const int consumers = std::max(1, kl.gemm_threads - kProducerThreads);
      const int regs_per_thread = static_cast<int>(tbm * tbn / consumers) + kBaseRegisters;
      if (st == 0 || regs_per_thread > 255) continue;
      CtaResources r{kl.gemm_threads, regs_per_thread * kl.gemm_threads, st * stage + epilogue_bytes};
      const int cps = occupancy(sm, r);
      if (cps < 1) continue;
      keep_if_best(gpu, op, tbm, tbn, st, r, static_cast<double>(tbn), cps, eff_rate, best);
    }
  }

  std::string describe() const override {
    std::ostringstream os;
    os << "tile " << bm << "x" << bn << "x" << bk << ", " << stages << " stages";
    if (cluster > 1) os << ", cluster " << cluster << "x1 (B multicast)";
    return os.str();
  }
};

}  // namespace

std::shared_ptr<GemmProgram> make_wgmma_gemm() { return std::make_shared<WgmmaGemm>(); }

}  // namespace xpusim::lower
