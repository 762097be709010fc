#include "models/memory/crossbar.h"

#include "models/common/mem_request.h"

namespace xpusim {

Crossbar::Crossbar(sc_core::sc_module_name name, const CrossbarParams& p, int ports, double sm_clock_hz,
                   StatRegistry& stats)
    : sc_module(name),
      sm_side("sm_side"),
      l2_side("l2_side"),
      latency_s_(p.latency_cycles / sm_clock_hz),
      read_ports_(static_cast<size_t>(ports), BandwidthResource(p.port_bytes_per_cycle * sm_clock_hz)),
      write_ports_(static_cast<size_t>(ports), BandwidthResource(p.port_bytes_per_cycle * sm_clock_hz)),
      bytes_(stats.add(std::string(this->name()) + ".bytes", "bytes", "Bytes carried between SMs and L2")) {
  sm_side.register_b_transport(this, &Crossbar::b_transport);
}

void Crossbar::b_transport(int port, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const double now = sc_core::sc_time_stamp().to_seconds();
  MemRequest* req = nullptr;
  trans.get_extension(req);
  // A multicast share reaches every SM of the cluster: each SM's port receives the whole tile,
  // i.e. its own share and its partners' shares.
  const double bytes = static_cast<double>(trans.get_data_length()) * (req ? req->fanout : 1);
  bytes_.value += bytes;
  if (req && req->counters) req->counters->noc_bytes += bytes;
  if (trans.is_write()) {
    // Store data crosses the SM's port on the way in.
    const double sent = write_ports_[static_cast<size_t>(port)].reserve(now, now + delay.to_seconds(), bytes);
    sc_core::sc_time d(sent + latency_s_ - now, sc_core::SC_SEC);
    l2_side->b_transport(trans, d);
    delay = d;
  } else {
    // Load data crosses the port on the way back; the port can only start receiving once the
    // L2 has the data.
    sc_core::sc_time d = delay + sc_core::sc_time(latency_s_, sc_core::SC_SEC);
    l2_side->b_transport(trans, d);
    const double ready = now + d.to_seconds();
    const double received = read_ports_[static_cast<size_t>(port)].reserve(now, ready, bytes);
    delay = sc_core::sc_time(received + latency_s_ - now, sc_core::SC_SEC);
  }
}

}  // namespace xpusim
