#pragma once
// Physical address -> (die, L2 slice, DRAM pseudo-channel, pseudo-channel-local address).
// Addresses are split into interleave granules. Granules are dealt to pseudo-channels in groups
// of one per channel, each group rotated by a hash of its index, so that power-of-two strides
// do not all land on one channel while the mapping stays a bijection (the pseudo-channel-local
// address of granule g is g / channels). The L2 is memory-side: a granule is cached by a slice
// on the die of its channel, chosen by a second hash.
#include <algorithm>
#include <cstdint>

#include "models/common/fast_div.h"

namespace xpusim {

class AddressMap {
 public:
  struct Location {
    uint32_t channel = 0;        // pseudo-channel, 0..channels-1
    uint32_t die = 0;
    uint32_t slice = 0;          // L2 slice, 0..slices-1
    uint64_t local = 0;          // byte address within the pseudo-channel
  };

  AddressMap() = default;
  AddressMap(uint64_t interleave, uint32_t channels, uint32_t slices, uint32_t dies)
      : granule_(interleave),
        channels_(channels),
        slices_(slices),
        dies_(dies),
        by_granule_(interleave),
        by_channels_(channels),
        by_channels_per_die_(channels / dies),
        by_slices_per_die_(slices / dies) {}

  Location locate(uint64_t addr) const {
    const uint64_t g = by_granule_.div(addr);
    const uint64_t group = by_channels_.div(g);
    Location l;
    l.channel = static_cast<uint32_t>(by_channels_.mod(g - group * channels_ + mix(group)));
    l.die = static_cast<uint32_t>(by_channels_per_die_.div(l.channel));
    const uint32_t per_die = static_cast<uint32_t>(by_slices_per_die_.divisor());
    l.slice = l.die * per_die + static_cast<uint32_t>(by_slices_per_die_.mod(mix(g ^ 0x9e3779b97f4a7c15ull)));
    l.local = group * granule_ + (addr - g * granule_);
    return l;
  }
  uint64_t granule() const { return granule_; }
  uint32_t channels() const { return channels_; }
  uint32_t slices() const { return slices_; }
  uint32_t dies() const { return dies_; }
  uint32_t die_of_channel(uint32_t ch) const { return static_cast<uint32_t>(by_channels_per_die_.div(ch)); }

  // Calls f(addr, bytes) for each piece of [addr, addr+bytes) that lies in one granule.
  template <class F>
  void for_each_granule(uint64_t addr, uint64_t bytes, F&& f) const {
    const uint64_t end = addr + bytes;
    while (addr < end) {
      const uint64_t next = std::min(end, (by_granule_.div(addr) + 1) * granule_);
      f(addr, next - addr);
      addr = next;
    }
  }

 private:
  static uint64_t mix(uint64_t x) {
    x ^= x >> 31;
    x *= 0x7fb5d329728ea185ull;
    x ^= x >> 27;
    x *= 0x81dadef4bc2dd44dull;
    x ^= x >> 33;
    return x;
  }

  uint64_t granule_ = 256;
  uint32_t channels_ = 1, slices_ = 1, dies_ = 1;
  // The same divisors as multiplies (fast_div.h): locate() runs for every granule of every request.
  FastDivisor by_granule_{256}, by_channels_, by_channels_per_die_, by_slices_per_die_;
};

}  // namespace xpusim
