#include "models/memory/hbm.h"

#include <cassert>

namespace xpusim {

Hbm::Hbm(sc_core::sc_module_name name, const HbmParams& p, const AddressMap& map, StatRegistry& stats)
    : sc_module(name),
      socket("socket"),
      p_(p),
      dram_(p, map),
      read_bytes_(stats.add(std::string(this->name()) + ".read_bytes", "bytes", "Bytes read from DRAM")),
      write_bytes_(stats.add(std::string(this->name()) + ".write_bytes", "bytes", "Bytes written to DRAM")),
      activates_(stats.add(std::string(this->name()) + ".activates", "commands", "Row activations (each with a precharge)")),
      row_hits_(stats.add(std::string(this->name()) + ".row_hit_bursts", "bursts", "Bursts served from an open row")),
      bursts_(stats.add(std::string(this->name()) + ".bursts", "bursts", "Read and write bursts")),
      refreshes_(stats.add(std::string(this->name()) + ".refreshes", "commands", "All-bank refresh commands, all pseudo-channels")),
      busy_s_(stats.add(std::string(this->name()) + ".busy", "s", "Data-bus transfer time summed over pseudo-channels")) {
  socket.register_b_transport(this, &Hbm::b_transport);
}

void Hbm::finalize(double end_s) { refreshes_.value = dram_.refreshes_until(end_s); }

void Hbm::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  MemRequest* req = nullptr;
  trans.get_extension(req);
  assert(req && req->blocks && "HBM expects requests with byte ranges");
  const double now = sc_core::sc_time_stamp().to_seconds();
  const double arrival = now + delay.to_seconds() + p_.controller_latency_s / 2;
  const bool write = trans.is_write();
  DramCounters c;
  const double done = dram_.access(now, arrival, *req->blocks, write, c) + p_.controller_latency_s / 2;

  const double burst = p_.burst_bytes();
  const double bytes = (c.read_bursts + c.write_bursts) * burst;
  (write ? write_bytes_ : read_bytes_).value += bytes;
  activates_.value += c.activates;
  row_hits_.value += c.row_hit_bursts;
  bursts_.value += c.read_bursts + c.write_bursts;
  busy_s_.value += c.data_busy_s;
  if (OpCounters* oc = req->counters) {
    (write ? oc->hbm_write_bytes : oc->hbm_read_bytes) += bytes;
    oc->hbm_activates += c.activates;
    oc->hbm_row_hit_bursts += c.row_hit_bursts;
    oc->hbm_bursts += c.read_bursts + c.write_bursts;
    oc->hbm_busy_s += c.data_busy_s;
  }
  delay = sc_core::sc_time(done - now, sc_core::SC_SEC);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace xpusim
