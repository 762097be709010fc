#pragma once
// L2 with real tags: set-associative, sectored lines, LRU, write-back with write-allocate at
// sector granularity. Hits and misses come from the addresses the kernels touch, so reuse across
// concurrently running CTAs yields the hit rate. Timing: one aggregate hit-bandwidth pipe plus a
// hit latency; misses go to DRAM through the initiator socket; dirty evictions are posted writes.
#include <cstdint>
#include <vector>

#include "models/common/bandwidth_resource.h"
#include "models/common/stats.h"
#include "models/common/systemc.h"
#include "models/memory/memory_params.h"
#include "tlm_utils/simple_initiator_socket.h"
#include "tlm_utils/simple_target_socket.h"

namespace xpusim {

class L2TagArray {
 public:
  struct Result {
    uint64_t hit_sectors = 0;
    uint64_t miss_sectors = 0;
    uint64_t dirty_evicted_sectors = 0;
  };

  explicit L2TagArray(const L2Params& p);
  // Touches [addr, addr+bytes): reads fill missing sectors; writes allocate and dirty them.
  void access(uint64_t addr, uint64_t bytes, bool write, Result& r);
  uint64_t sets() const { return sets_; }

 private:
  struct Way {
    uint64_t tag = ~0ull;
    uint64_t lru = 0;
    uint32_t valid = 0;  // sector bitmask
    uint32_t dirty = 0;
  };
  void touch_line(uint64_t line, uint32_t sectors, bool write, Result& r);
  uint64_t set_of(uint64_t line) const;

  uint64_t sets_ = 0;
  int ways_ = 0;
  int line_bytes_ = 0;
  int sector_bytes_ = 0;
  int sectors_per_line_ = 0;
  bool xor_hash_ = true;
  uint64_t clock_ = 0;
  std::vector<Way> array_;
};

class L2Cache : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<L2Cache> socket;
  tlm_utils::simple_initiator_socket<L2Cache> mem;

  L2Cache(sc_core::sc_module_name name, const L2Params& p, double sm_clock_hz, StatRegistry& stats);

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  L2Params p_;
  double hit_latency_s_;
  L2TagArray tags_;
  BandwidthResource pipe_;
  Stat& read_bytes_;
  Stat& write_bytes_;
  Stat& hit_sectors_;
  Stat& miss_sectors_;
  Stat& writeback_bytes_;
  Stat& busy_s_;
};

}  // namespace xpusim
