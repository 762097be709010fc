#pragma once
// HBM as a TLM target: requests carry their byte ranges (MemRequest blocks); the DRAM timing
// model (dram.h) serves them on the pseudo-channels they map to, and the controller latency is
// added on the way in and out.
#include "models/common/stats.h"
#include "models/common/systemc.h"
#include "models/memory/dram.h"
#include "tlm_utils/simple_target_socket.h"

namespace xpusim {

class Hbm : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Hbm> socket;

  Hbm(sc_core::sc_module_name name, const HbmParams& p, const AddressMap& map, StatRegistry& stats);
  // Refresh commands issued up to now (for the activity counts).
  void finalize(double end_s);

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  HbmParams p_;
  DramTiming dram_;
  DramCounters totals_;
  Stat& read_bytes_;
  Stat& write_bytes_;
  Stat& activates_;
  Stat& row_hits_;
  Stat& bursts_;
  Stat& refreshes_;
  Stat& busy_s_;
};

}  // namespace xpusim
