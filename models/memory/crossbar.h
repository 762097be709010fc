#pragma once
// The network between SMs and L2 slices as a crossbar: each SM port has its own bandwidth per
// direction and a traversal latency; the slices' own bandwidth is modelled in the L2. On a chip
// of two dies, the bytes a request moves between an SM and slices of the other die also cross
// the die-to-die link (bandwidth per direction, latency each way).
#include <array>
#include <vector>

#include "models/common/bandwidth_resource.h"
#include "models/common/mem_request.h"
#include "models/common/stats.h"
#include "models/common/systemc.h"
#include "models/memory/address_map.h"
#include "models/memory/memory_params.h"
#include "tlm_utils/multi_passthrough_target_socket.h"
#include "tlm_utils/simple_initiator_socket.h"

namespace xpusim {

class Crossbar : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<Crossbar> sm_side;
  tlm_utils::simple_initiator_socket<Crossbar> l2_side;

  Crossbar(sc_core::sc_module_name name, const CrossbarParams& p, int ports, double sm_clock_hz,
           const AddressMap& map, StatRegistry& stats);
  int die_of_port(int port) const { return port * p_.dies / ports_; }

 private:
  void b_transport(int port, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  double remote_bytes(const std::vector<Strided>& blocks, int die) const;

  CrossbarParams p_;
  int ports_;
  AddressMap map_;
  double latency_s_;
  std::vector<BandwidthResource> read_ports_;
  std::vector<BandwidthResource> write_ports_;
  std::vector<BandwidthResource> d2d_;  // one per direction: [from die d]
  Stat& bytes_;
  Stat& d2d_bytes_;
};

}  // namespace xpusim
