#pragma once
// The kernel library: lowers each trace op to a CTA program the SM model executes, choosing
// tiles and grid shapes the way a tuned library would. Wave quantisation, tile-edge waste and
// memory-vs-compute bounds then emerge from simulating those programs.
#include <memory>
#include <string>

#include "models/sm/kernel_program.h"
#include "sim/config/chip_config.h"
#include "sim/trace/trace.h"

namespace xpusim::lower {

struct LoweredOp {
  std::shared_ptr<const KernelProgram> program;
  // A second kernel the library launches right after the first on the same stream, where the
  // first leaves partial results: cuBLAS's split-K reduction, flash-decoding's combine. It pays
  // its own launch gap and grid start and end (kernels.*); the op ends when it does.
  std::shared_ptr<const KernelProgram> tail;
  int ctas_per_sm = 0;  // occupancy limit of this kernel
  double waves = 0;     // CTAs / (SMs x ctas_per_sm)
  bool uses_tensor_cores = false;
  // A GEMM or convolution on the SIMT lanes: the format its instructions compute in (fp32 for
  // a 16-bit convolution cuDNN converts; else the op's).
  Dtype lane_dtype = Dtype::fp32;
};

// The peak of a GEMM in `dt` on the SIMT lanes (FFMA, HFMA or DP4A), TFLOP/s; 0 where the SMs
// have no instruction for it.
double simt_gemm_peak_tflops(const config::GpuConfig& gpu, Dtype dt);

class Lowering {
 public:
  explicit Lowering(const config::GpuConfig& gpu);
  // Throws UserError when the chip cannot run the op (unsupported format, too little memory).
  LoweredOp lower(const trace::Op& op);

  // Occupancy of a CTA with these resources on an empty SM (0 if it does not fit).
  int ctas_per_sm(const CtaResources& r) const;

 private:
  uint64_t alloc(double bytes);
  LoweredOp gemm(const trace::Op& op);
  // One GEMM or convolution kernel (`simt_conv`: cuDNN's SIMT convolution), and the choice for
  // a convolution whose channels do not make 16-byte rows (gemm.cpp).
  LoweredOp gemm_kernel(const trace::Op& op, bool simt_conv);
  LoweredOp unaligned_conv(const trace::Op& op);
  // `out_at`: where the output goes (0: a fresh allocation).
  LoweredOp streaming(const trace::Op& op, uint64_t out_at = 0);
  // PyTorch's two-pass LayerNorm/RMSNorm kernel around a block reduction (rowwise.cpp), for the
  // layernorm ops it runs (one input, rows of whole 4-element vectors), and the fused residual
  // add + norm (several inputs, rows of whole 16-byte vectors up to 32 elements a thread:
  // fused_add_norm); streaming() the others.
  static bool row_norm_applies(const trace::Op& op);
  LoweredOp row_norm(const trace::Op& op);
  LoweredOp fused_add_norm(const trace::Op& op);
  // PyTorch's warp-per-row softmax for rows of up to 1024 (rowwise.cpp); longer rows stream.
  static bool softmax_warp_applies(const trace::Op& op);
  LoweredOp softmax_warp(const trace::Op& op);
  LoweredOp attention(const trace::Op& op);
  LoweredOp microbenchmark(const trace::Op& op);
  LoweredOp delay(const trace::Op& op);
  // The op's kernel (and `tail`, a second kernel after it) with its occupancy and description.
  LoweredOp finish(std::shared_ptr<KernelProgram> p, bool tensor, std::shared_ptr<KernelProgram> tail = nullptr);

  const config::GpuConfig& gpu_;
  uint64_t next_addr_ = uint64_t{1} << 32;
};

}  // namespace xpusim::lower
