#pragma once
// Helpers the kernel families of the lowering share (internal to sim/lower).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "models/common/mem_request.h"
#include "models/sm/sm_params.h"
#include "models/tensor_core/tensor_core_params.h"

namespace xpusim::lower {

inline uint64_t div_up(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
inline uint64_t bytes_of(uint64_t elems, int bits) { return div_up(elems * static_cast<uint64_t>(bits), 8); }

// For KernelProgram::written() of a program that stores its output in address order: the last
// `max_bytes` (at most all `bytes`) of the output at `base`.
inline void written_tail(uint64_t base, uint64_t bytes, double max_bytes, std::vector<Strided>& out) {
  const uint64_t keep = std::min<uint64_t>(bytes, static_cast<uint64_t>(std::max(0.0, max_bytes)));
  if (keep > 0) out.push_back({base + bytes - keep, 1, keep, 0});
}

// Registers a thread keeps besides its accumulators (addresses, loop state, fragments).
constexpr int kBaseRegisters = 40;
// Threads of the producer warpgroup in warp-specialised kernels: it issues TMA and holds no
// accumulators.
constexpr int kProducerThreads = 128;

// Columns of an SM's tensor memory (tcgen05): 128 lanes of 4-byte columns.
inline double tmem_columns(const TensorCoreParams& tc) { return std::floor(tc.tensor_memory_bytes / (128.0 * 4.0)); }

// Warps resident on an SM for `ctas` CTAs of `threads` threads, `cps` of which fit on one: each
// warp issues from one scheduler (sm.sub_partitions), so this many schedulers at most are busy.
inline double resident_warps(const SmParams& sm, double ctas, int cps, int threads) {
  return std::min<double>(cps, std::ceil(ctas / sm.count)) * std::ceil(threads / 32.0);
}

}  // namespace xpusim::lower
