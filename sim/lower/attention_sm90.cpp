// Hopper's fused attention (FlashAttention-3 style, sm_90): a producer warpgroup issues TMA,
// consumer warpgroups hold S and the O accumulators in registers, and each 64-row warpgroup MMA
// reads its Q rows and all of K (or V) from shared memory.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/lower/attention_program.h"
#include "sim/lower/lower_util.h"

namespace xpusim::lower {
namespace {

class WgmmaAttention : public AttentionProgram {
 public:
  bool configure(const config::GpuConfig& gpu) override {
    const KernelLibParams& kl = gpu.kernels;
    stages = 2;
    // Wide heads (256) take narrower tiles, as FlashAttention's kernels for them do: the
    // configured K/V tile halved until the CTA fits an SM, then the same with half the query
    // rows (never below the 64 of one warpgroup MMA).
    for (bq = decode ? 64 : kl.attention_q_tile; bq >= 64; bq /= 2)
      for (bkv = kl.attention_kv_tile; bkv >= 16; bkv /= 2) {
        const double smem = (bq + 2.0 * stages * bkv) * d * (in_bits / 8.0);
        const int consumers = std::max(1, kl.attention_threads - kProducerThreads);
        const int regs = static_cast<int>((bq * d + bq * bkv) / consumers) + kBaseRegisters;
        const CtaResources r{kl.attention_threads, regs * kl.attention_threads, smem};
        if (regs > 255 || smem > gpu.sm.shared_memory_bytes || occupancy(gpu.sm, r) < 1) continue;
        resources = r;
        return true;
      }
    bq = decode ? 64 : kl.attention_q_tile;
    bkv = kl.attention_kv_tile;
    return false;
  }
  void mma_costs(int64_t rows, StepWork& w) const override {
    w.instr_mma = 2.0 * static_cast<double>(bq / 64) * std::ceil(static_cast<double>(d * in_bits) / 256.0);
    // The MMAs read Q and, per 64-row warpgroup, K and V.
    const double kv = 2.0 * static_cast<double>(rows * d) * in_bits / 8.0;
    w.smem_read_bytes = static_cast<double>(bq * d) * in_bits / 8.0 + static_cast<double>(bq / 64) * kv;
    // Registers: S written (fp32) and read back as P, O accumulators read and written.
    const double tile = static_cast<double>(bq * bkv);
    w.rf_bytes = tile * (4.0 + 4.0) + static_cast<double>(bq * d) * 4.0 * 2.0;
  }
  std::string describe() const override {
    std::ostringstream os;
    os << "fused, q tile " << bq << ", kv tile " << bkv;
    return os.str();
  }
  std::string limits() const override { return "shared memory or registers"; }
};

}  // namespace

std::shared_ptr<AttentionProgram> make_wgmma_attention() { return std::make_shared<WgmmaAttention>(); }

}  // namespace xpusim::lower
