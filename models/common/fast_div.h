#pragma once
// Exact division of 64-bit unsigned integers by a divisor fixed at run time, as a multiply and
// shifts (Granlund and Montgomery, "Division by invariant integers using multiplication", 1994:
// the round-up multiplier of 65 bits, its top bit folded in by a halving add). The address map and the
// cache tags divide by the same few numbers (channels, slices, sets) on every granule a request
// touches, and a hardware divide costs tens of cycles where this costs a few. The quotients are
// those of `/` and `%` for every numerator (tests/unit/memory_test.cpp compares them at the
// edges and over every magnitude, for divisors of every kind).
#include <cstdint>
#include <stdexcept>

namespace xpusim {

class FastDivisor {
 public:
  FastDivisor() : FastDivisor(1) {}
  explicit FastDivisor(uint64_t d) : d_(d) {
    if (d == 0) throw std::invalid_argument("FastDivisor: a divisor of 0");
    shift_ = 63 - __builtin_clzll(d);  // floor(log2 d)
    if ((d & (d - 1)) == 0) {
      kind_ = Kind::kShift;
    } else if (shift_ == 63) {
      kind_ = Kind::kCompare;  // d > 2^63: the quotient is 0 or 1
    } else {
      // m = ceil(2^(65 + shift) / d) lies in (2^64, 2^65); magic keeps its low 64 bits. Its error
      // m d - 2^(65 + shift) is at most d < 2^(shift + 1), so floor(m n / 2^(65 + shift)) is
      // floor(n / d) for every n < 2^64.
      const unsigned __int128 m = ((static_cast<unsigned __int128>(1) << (65 + shift_)) - 1) / d + 1;
      magic_ = static_cast<uint64_t>(m);
      kind_ = Kind::kMultiply;
    }
  }

  uint64_t divisor() const { return d_; }

  uint64_t div(uint64_t n) const {
    switch (kind_) {
      case Kind::kShift:
        return n >> shift_;
      case Kind::kCompare:
        return n >= d_ ? 1 : 0;
      case Kind::kMultiply:
        break;
    }
    // floor(m n / 2^64) = n + q; halved without overflow ((n - q) / 2 + q, as q <= n), then shifted.
    const uint64_t q = static_cast<uint64_t>((static_cast<unsigned __int128>(magic_) * n) >> 64);
    return (((n - q) >> 1) + q) >> shift_;
  }
  uint64_t mod(uint64_t n) const { return n - div(n) * d_; }

 private:
  enum class Kind : uint8_t { kShift, kCompare, kMultiply };
  uint64_t d_ = 1;
  uint64_t magic_ = 0;
  int shift_ = 0;
  Kind kind_ = Kind::kShift;
};

}  // namespace xpusim
