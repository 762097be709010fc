#pragma once
// L2 as address-interleaved slices with real tags (sectored_tags.h). Each slice has its share
// of the hit bandwidth and a fixed hit latency; a request's bytes are split by slice in bulk
// and it completes when its slowest slice does. Misses go to DRAM as merged byte ranges; dirty
// evictions are posted writes (the requester does not wait for them).
#include <cstdint>
#include <vector>

#include "models/common/bandwidth_resource.h"
#include "models/common/stats.h"
#include "models/common/systemc.h"
#include "models/memory/address_map.h"
#include "models/memory/memory_params.h"
#include "models/memory/sectored_tags.h"
#include "tlm_utils/simple_initiator_socket.h"
#include "tlm_utils/simple_target_socket.h"

namespace xpusim {

TagGeometry l2_geometry(const L2Params& p);

class L2Cache : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<L2Cache> socket;
  tlm_utils::simple_initiator_socket<L2Cache> mem;

  L2Cache(sc_core::sc_module_name name, const L2Params& p, const AddressMap& map, double sm_clock_hz,
          StatRegistry& stats);

  // Bytes of dirty data evicted to DRAM so far (a statistic).
  const Stat& writeback_stat() const { return writeback_bytes_; }
  // Work counted but not simulated (fast fidelity) wrote back `bytes` of dirty data: the oldest
  // dirty lines become clean, with no traffic (it is in the counted work's statistics).
  void settle_writebacks(double bytes);
  // Work counted but not simulated left `ranges` written (write) or read: their sectors are
  // placed in the tags as the accesses would have left them, with no traffic, time or
  // statistics. Returns the dirty bytes the placement evicted (already in the counted work's
  // write-backs, so the caller settles that much less).
  double place(const std::vector<Strided>& ranges, bool write);
  // The same for `bytes` written where the addresses matter to no later access: the most
  // recently used lines hold that much dirty data (SectoredTags::dirty_youngest). Returns the
  // dirty bytes it stands in for, as place() does.
  double place_dirty(double bytes);

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  double send_down(const std::vector<Strided>& ranges, bool write, OpCounters* c, double now, double at);

  L2Params p_;
  AddressMap map_;
  double hit_latency_s_;
  SectoredTags tags_;
  std::vector<BandwidthResource> slices_;
  std::vector<double> slice_bytes_;  // scratch: bytes per slice for one request
  std::vector<uint32_t> touched_;
  SectoredTags::Result scratch_;
  std::vector<SectoredTags::LineRef> lines_;  // one request's lines, each with its set, reused
  Stat& read_bytes_;
  Stat& write_bytes_;
  Stat& hit_sectors_;
  Stat& miss_sectors_;
  Stat& writeback_bytes_;
  Stat& busy_s_;
};

}  // namespace xpusim
