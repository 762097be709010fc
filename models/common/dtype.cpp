#include "models/common/dtype.h"

namespace xpusim {

const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8_e4m3: return "fp8_e4m3";
    case Dtype::fp8_e5m2: return "fp8_e5m2";
    case Dtype::int8: return "int8";
    case Dtype::int4: return "int4";
    case Dtype::fp4: return "fp4";
    case Dtype::int32: return "int32";
  }
  return "?";
}

std::optional<Dtype> parse_dtype(const std::string& s) {
  for (int i = 0; i < kNumDtypes; ++i)
    if (s == dtype_name(static_cast<Dtype>(i))) return static_cast<Dtype>(i);
  if (s == "fp8" || s == "e4m3") return Dtype::fp8_e4m3;
  if (s == "e5m2") return Dtype::fp8_e5m2;
  if (s == "fp4_e2m1" || s == "e2m1") return Dtype::fp4;
  return std::nullopt;
}

std::string dtype_choices() {
  return "fp32, tf32, bf16, fp16, fp8_e4m3 (or fp8), fp8_e5m2, int8, int4, fp4, int32";
}

}  // namespace xpusim
