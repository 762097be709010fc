#pragma once
// Aggregate memory transfers: one TLM transaction carries a whole tile (a TMA box, a burst of
// coalesced loads) as strided blocks, and the memory system splits it into lines and sectors
// in bulk. The payload's address/length give the first byte and the total byte count.
#include <cstdint>
#include <vector>

#include "models/common/op_counters.h"
#include "models/common/systemc.h"

namespace xpusim {

struct Strided {
  uint64_t base = 0;
  uint64_t rows = 0;
  uint64_t row_bytes = 0;
  uint64_t stride = 0;
  uint64_t bytes() const { return rows * row_bytes; }
};

inline uint64_t total_bytes(const std::vector<Strided>& blocks) {
  uint64_t b = 0;
  for (const auto& s : blocks) b += s.bytes();
  return b;
}

class MemRequest : public tlm::tlm_extension<MemRequest> {
 public:
  const std::vector<Strided>* blocks = nullptr;
  OpCounters* counters = nullptr;
  int fanout = 1;  // SMs that receive the data (TMA multicast); the L2 reads it once

  tlm::tlm_extension_base* clone() const override { return new MemRequest(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    *this = static_cast<const MemRequest&>(other);
  }
};

}  // namespace xpusim
