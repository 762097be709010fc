#pragma once
// The network between SMs and L2 as a crossbar: each SM port has its own bandwidth per
// direction and a traversal latency; the L2 side is modelled by the L2's own pipe.
#include <vector>

#include "models/common/bandwidth_resource.h"
#include "models/common/stats.h"
#include "models/common/systemc.h"
#include "models/memory/memory_params.h"
#include "tlm_utils/multi_passthrough_target_socket.h"
#include "tlm_utils/simple_initiator_socket.h"

namespace xpusim {

class Crossbar : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Crossbar> sm_side;
  tlm_utils::simple_initiator_socket<Crossbar> l2_side;

  Crossbar(sc_core::sc_module_name name, const CrossbarParams& p, int ports, double sm_clock_hz,
           StatRegistry& stats);

 private:
  void b_transport(int port, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  double latency_s_;
  std::vector<BandwidthResource> read_ports_;
  std::vector<BandwidthResource> write_ports_;
  Stat& bytes_;
};

}  // namespace xpusim
