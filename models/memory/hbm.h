#pragma once
// HBM at bandwidth-and-latency level: one pipe at the sustained share of peak bandwidth, plus a
// fixed access latency. The DRAM-timing model (channels, banks, row buffers) replaces it later.
#include "models/common/bandwidth_resource.h"
#include "models/common/stats.h"
#include "models/common/systemc.h"
#include "models/memory/memory_params.h"
#include "tlm_utils/simple_target_socket.h"

namespace xpusim {

class Hbm : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<Hbm> socket;

  Hbm(sc_core::sc_module_name name, const HbmParams& p, StatRegistry& stats);

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  HbmParams p_;
  BandwidthResource pipe_;
  Stat& read_bytes_;
  Stat& write_bytes_;
  Stat& busy_s_;
};

}  // namespace xpusim
