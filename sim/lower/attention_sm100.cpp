// Blackwell's fused attention (sm_100, tcgen05; the structure FlashAttention-4 and cuDNN's
// Blackwell kernels describe): S = QK^T lands in tensor memory, softmax warps read it, write P
// back over it (as the input format) and rescale O, and O += PV takes P from tensor memory, so
// neither S nor O occupies registers. The freed registers and shared memory let a CTA run two
// 128-row query tiles against each K/V tile, halving K and V traffic per FLOP, where tensor
// memory holds both tiles' S and O (128 lanes x 512 columns of 4 B per SM).
#include <algorithm>
#include <cmath>
#include <sstream>

#include "sim/lower/attention_program.h"
#include "sim/lower/lower_util.h"

namespace xpusim::lower {
namespace {

constexpr int64_t kMmaRows = 128;     // rows of one tcgen05 MMA on one SM
constexpr int kSoftmaxRegisters = 64;  // registers a softmax thread holds: a 64-column slice of its S row

class Tcgen05Attention : public AttentionProgram {
 public:
  int q_tiles = 1;
  double tmem_columns = 0;

  bool configure(const config::GpuConfig& gpu) override {
    const KernelLibParams& kl = gpu.kernels;
    bkv = kl.attention_kv_tile;
    tmem_columns = lower::tmem_columns(gpu.tensor_core);
    // Each 128-row query tile keeps S (bkv columns, P written over it) and O (d columns) in
    // tensor memory: two tiles if both fit, else one.
    const double per_tile = static_cast<double>(bkv + d);
    q_tiles = 2 * per_tile <= tmem_columns && !decode ? 2 : (per_tile <= tmem_columns ? 1 : 0);
    if (q_tiles == 0) return false;
    bq = q_tiles * kMmaRows;
    const double ei = in_bits / 8.0;
    for (stages = 2; stages >= 1; --stages) {
      const double smem = (bq + 2.0 * stages * bkv) * d * ei;
      if (smem <= gpu.sm.shared_memory_bytes) {
        resources = CtaResources{kl.attention_threads, (kBaseRegisters + kSoftmaxRegisters) * kl.attention_threads, smem};
        return true;
      }
    }
    return false;
  }
  void mma_costs(int64_t rows, StepWork& w) const override {
    // Per query tile: S = QK^T in 32-byte K slices of d, O += PV in slices of the kv tile; one
    // thread issues each.
    w.instr_mma = static_cast<double>(q_tiles) * (std::ceil(static_cast<double>(d * in_bits) / 256.0) +
                                                  std::ceil(static_cast<double>(bkv * in_bits) / 256.0));
    // Each 128-row MMA reads its Q rows and the K (or V) tile once; P comes from tensor memory.
    const double kv = 2.0 * static_cast<double>(rows * d) * in_bits / 8.0;
    w.smem_read_bytes = static_cast<double>(bq * d) * in_bits / 8.0 + static_cast<double>(q_tiles) * kv;
    // Tensor memory (priced as register-file traffic; assumption): S written by the MMA and
    // read by the softmax (fp32), P written and read back (input format), O read and written.
    const double tile = static_cast<double>(bq * bkv);
    w.rf_bytes = tile * (4.0 + 4.0 + 2.0 * in_bits / 8.0) + static_cast<double>(bq * d) * 4.0 * 2.0;
  }
  std::string describe() const override {
    std::ostringstream os;
    os << "tcgen05 fused, " << q_tiles << " query tile" << (q_tiles > 1 ? "s" : "") << " of " << kMmaRows
       << " (S and O in " << q_tiles * (bkv + d) << " TMEM columns), kv tile " << bkv << ", " << stages << " stages";
    return os.str();
  }
  std::string limits() const override {
    return q_tiles == 0 ? "tensor memory: S and O of one 128-row query tile need kv_tile + head_dim columns"
                        : "shared memory";
  }
};

}  // namespace

std::shared_ptr<AttentionProgram> make_tcgen05_attention() { return std::make_shared<Tcgen05Attention>(); }

}  // namespace xpusim::lower
