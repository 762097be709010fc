#pragma once
// How the kernel library lowers ops to CTAs (the choices a tuned library such as CUTLASS makes).
#include <string>
#include <utility>
#include <vector>

namespace xpusim {

// The matrix-multiply instructions a tensor-core kernel issues: mma_sync (Volta to Ampere, a
// warp's MMA), wgmma (Hopper, a warpgroup's asynchronous MMA), tcgen05 (Blackwell, the MMA into
// tensor memory). kMmaNames is the one table of their names, for the config and for messages.
enum class Mma { mma_sync, wgmma, tcgen05 };
inline const std::vector<std::pair<Mma, std::string>> kMmaNames = {
    {Mma::mma_sync, "mma_sync"}, {Mma::wgmma, "wgmma"}, {Mma::tcgen05, "tcgen05"}};
inline const std::string& mma_name(Mma m) {
  for (const auto& [value, name] : kMmaNames)
    if (value == m) return name;
  return kMmaNames.front().second;  // unreachable: every value is in the table
}

struct KernelLibParams {
  double launch_gap_s = 0;               // gap between dependent kernels on a stream
  std::string launch_mode = "graph";     // graph: kernels replayed from a CUDA graph; eager: issued one by one by a host
  double eager_issue_s = 0;              // eager: host time to issue one kernel (kernels leave the host no faster)
  double kernel_start_s = 0;             // per kernel: from launch to its first CTA's work (grid launch)
  double kernel_end_s = 0;               // per kernel: from its last CTA's end to the kernel's completion
  std::vector<std::string> gemm_tiles;   // candidate CTA output tiles "MxN"
  double gemm_k_tile_bytes = 0;          // bytes of K per pipeline stage per operand row
  int gemm_max_stages = 0;               // multistage (TMA) pipeline depth limit
  double gemm_cta_setup_s = 0;           // tensor-core GEMMs: a resident CTA's set-up before its first MMA
  int gemm_raster_group = 0;             // CTA rasterisation swizzle group (rows of tiles)
  int gemm_cluster_m = 1;                // CTAs along M per cluster sharing B by TMA multicast
  Mma gemm_mma = Mma::wgmma;             // MMA the GEMM kernels issue
  bool gemm_split_k = true;              // wgmma: split K across CTAs where tiles leave SMs idle
  std::string gemm_split_k_reduction = "kernel";  // split-K's partials added by a second kernel, or serially by the last split
  bool gemm_stream_k = true;             // wgmma: stream-K where tiles leave a ragged last wave
  bool gemm_persistent = false;          // wgmma: persistent CTAs walk the tiles of more than one wave
  bool attention_decode = true;          // decode kernels: a KV head's query group per CTA, KV split (flash-decoding)
  bool gemm_cta_pair = false;            // tcgen05: 2-SM MMA, a CTA pair computing one 2bm x bn tile
  int gemm_threads = 0;                  // threads per GEMM CTA (producer + consumer warpgroups)
  double gemm_dequant_ops = 0;           // lane ops to convert one weight-only element to the math format
  int simt_threads = 0;                  // threads per CTA for elementwise/row-wise kernels
  int strided_threads = 0;               // threads per CTA of the legacy kernel for strided operands
  int strided_unroll = 0;                // its elements per thread, one per dependent iteration
  double simt_bytes_per_thread = 0;      // bytes each thread moves per pipeline stage
  int simt_stages = 0;                   // loads in flight per thread (stages)
  int attention_q_tile = 0;              // query rows per fused-attention CTA
  int attention_kv_tile = 0;             // key/value rows per inner step
  int attention_threads = 0;
  Mma attention_mma = Mma::wgmma;        // as gemm_mma, for fused attention (wgmma or tcgen05)
};

}  // namespace xpusim
