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
    bq = decode ? 64 : kl.attention_q_tile;
    bkv = kl.attention_kv_tile;
    stages = 2;
    const double smem = (bq + 2.0 * stages * bkv) * d * (in_bits / 8.0);
    const int consumers = std::max(1, kl.attention_threads - kProducerThreads);
    const int regs = static_cast<int>((bq * d + bq * bkv) / consumers) + kBaseRegisters;
    if (regs > 255 || smem > gpu.sm.shared_memory_bytes) return false;
    resources = CtaResources{kl.attention_threads, regs * kl.attention_threads, smem};
    return true;
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
