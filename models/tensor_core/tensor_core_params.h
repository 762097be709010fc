#pragma once
#include <string>
#include "models/common/dtype.h"

namespace xpusim {

// Dense multiply-accumulates per clock of ONE tensor core, per input format. 0 = not supported.
struct DtypeRates {
  double tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0, int8 = 0, int4 = 0, fp4 = 0;

  double of(Dtype d) const {
    switch (d) {
      case Dtype::tf32: case Dtype::fp32: return tf32;  // fp32 GEMMs run as tf32 on tensor cores
      case Dtype::fp16: return fp16;
      case Dtype::bf16: return bf16;
      case Dtype::fp8_e4m3: case Dtype::fp8_e5m2: return fp8;
      case Dtype::int8: return int8;
      case Dtype::int4: return int4;
      case Dtype::fp4: return fp4;
      case Dtype::int32: return 0;
    }
    return 0;
  }
};

struct TensorCoreParams {
  int per_sm = 0;             // tensor cores per SM
  DtypeRates macs_per_clock;  // dense MACs per clock per tensor core
  bool sparse_2_4 = false;    // 2:4 structured sparsity doubles MAC rate on sparse weights
  double mma_latency_cycles = 0;  // issue-to-result latency of one MMA group (pipeline fill)
  int generation = 4;             // 1-3: Volta, Turing, Ampere (mma.sync); 4: Hopper (wgmma); 5: Blackwell (tcgen05)
  std::string mma_instruction = "hmma16816";  // mma.sync kernels' warp MMA: hmma884 (Volta), hmma1688 (Turing), hmma16816 (Ampere)
  double tensor_memory_bytes = 0; // per SM: accumulator memory of fifth-generation tensor cores (0: none)
  // The share of macs_per_clock that the warp-level mma.sync reaches: 1 where it is the
  // generation's own instruction (Volta to Ampere), less on Hopper and after, whose full rate
  // needs wgmma or tcgen05.
  double mma_sync_share = 1.0;
};

}  // namespace xpusim
