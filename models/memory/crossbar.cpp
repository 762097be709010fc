#include "models/memory/crossbar.h"

#include "models/common/mem_request.h"

namespace xpusim {

Crossbar::Crossbar(sc_core::sc_module_name name, const CrossbarParams& p, int ports, double sm_clock_hz,
                   const AddressMap& map, StatRegistry& stats)
    : sc_module(name),
      sm_side("sm_side"),
      l2_side("l2_side"),
      p_(p),
      ports_(ports),
      map_(map),
      latency_s_(p.latency_cycles / sm_clock_hz),
      read_ports_(static_cast<size_t>(ports), BandwidthResource(p.port_bytes_per_cycle * sm_clock_hz)),
      write_ports_(static_cast<size_t>(ports), BandwidthResource(p.port_bytes_per_cycle * sm_clock_hz)),
      bytes_(stats.add(std::string(this->name()) + ".bytes", "bytes", "Bytes carried between SMs and L2")),
      d2d_bytes_(stats.add(std::string(this->name()) + ".d2d_bytes", "bytes", "Bytes that crossed the die-to-die link")) {
  if (p.dies > 1) d2d_.assign(static_cast<size_t>(p.dies), BandwidthResource(p.d2d_bandwidth));
  sm_side.register_b_transport(this, &Crossbar::b_transport);
}

double Crossbar::remote_bytes(const std::vector<Strided>& blocks, int die) const {
  double remote = 0;
  for (const Strided& blk : blocks)
    for (uint64_t row = 0; row < blk.rows; ++row)
      map_.for_each_granule(blk.base + row * blk.stride, blk.row_bytes, [&](uint64_t addr, uint64_t bytes) {
        if (static_cast<int>(map_.locate(addr).die) != die) remote += static_cast<double>(bytes);
      });
  return remote;
}

void Crossbar::b_transport(int port, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const double now = sc_core::sc_time_stamp().to_seconds();
  MemRequest* req = nullptr;
  trans.get_extension(req);
  // A multicast share reaches every SM of the cluster: each SM's port receives the whole tile,
  // i.e. its own share and its partners' shares.
  const double bytes = static_cast<double>(trans.get_data_length()) * (req ? req->fanout : 1);
  bytes_.value += bytes;
  OpCounters* c = req ? req->counters : nullptr;
  if (c) c->noc_bytes += bytes;
  const int die = die_of_port(port);
  const double remote = (p_.dies > 1 && req && req->blocks) ? remote_bytes(*req->blocks, die) : 0;
  if (remote > 0) {
    d2d_bytes_.value += remote;
    if (c) c->d2d_bytes += remote;
  }
  if (trans.is_write()) {
    // Store data crosses the SM's port on the way in, then the die link if its slices are far.
    double sent = write_ports_[static_cast<size_t>(port)].reserve(now, now + delay.to_seconds(), bytes) + latency_s_;
    if (remote > 0) sent = d2d_[static_cast<size_t>(die)].reserve(now, sent, remote) + p_.d2d_latency_s;
    sc_core::sc_time d(sent - now, sc_core::SC_SEC);
    l2_side->b_transport(trans, d);
    delay = d;
  } else {
    // Load data crosses the port on the way back; the port can only start receiving once the
    // L2 has the data (and, for far slices, once it has crossed the die link).
    double out = now + delay.to_seconds() + latency_s_ + (remote > 0 ? p_.d2d_latency_s : 0);
    sc_core::sc_time d(out - now, sc_core::SC_SEC);
    l2_side->b_transport(trans, d);
    double ready = now + d.to_seconds();
    if (remote > 0) {
      const size_t other = static_cast<size_t>((die + 1) % p_.dies);
      ready = d2d_[other].reserve(now, ready, remote) + p_.d2d_latency_s;
    }
    const double received = read_ports_[static_cast<size_t>(port)].reserve(now, ready, bytes);
    delay = sc_core::sc_time(received + latency_s_ - now, sc_core::SC_SEC);
  }
}

}  // namespace xpusim
