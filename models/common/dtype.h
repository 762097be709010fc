#pragma once
// Number formats understood by the timing models. Storage sizes in bits; fp4 is OCP E2M1.
#include <cstdint>
#include <optional>
#include <string>

namespace xpusim {

enum class Dtype : uint8_t { fp32, tf32, bf16, fp16, fp8_e4m3, fp8_e5m2, int8, int4, fp4, int32 };
constexpr int kNumDtypes = 10;

inline int dtype_bits(Dtype d) {
  switch (d) {
    case Dtype::fp32: case Dtype::tf32: case Dtype::int32: return 32;
    case Dtype::bf16: case Dtype::fp16: return 16;
    case Dtype::fp8_e4m3: case Dtype::fp8_e5m2: case Dtype::int8: return 8;
    case Dtype::int4: case Dtype::fp4: return 4;
  }
  return 32;
}
inline double dtype_bytes(Dtype d) { return dtype_bits(d) / 8.0; }

const char* dtype_name(Dtype d);
// Accepts the canonical names plus "fp8" (= fp8_e4m3), "e4m3", "e5m2", "fp4_e2m1".
std::optional<Dtype> parse_dtype(const std::string& s);
std::string dtype_choices();

}  // namespace xpusim
