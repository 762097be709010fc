#include "models/memory/hbm.h"

#include "models/common/mem_request.h"

namespace xpusim {

Hbm::Hbm(sc_core::sc_module_name name, const HbmParams& p, StatRegistry& stats)
    : sc_module(name),
      socket("socket"),
      p_(p),
      pipe_(p.bandwidth * p.achievable_fraction),
      read_bytes_(stats.add(std::string(this->name()) + ".read_bytes", "bytes", "Bytes read from DRAM")),
      write_bytes_(stats.add(std::string(this->name()) + ".write_bytes", "bytes", "Bytes written to DRAM")),
      busy_s_(stats.add(std::string(this->name()) + ".busy", "s", "Time the data bus was transferring")) {
  socket.register_b_transport(this, &Hbm::b_transport);
}

void Hbm::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  const double now = sc_core::sc_time_stamp().to_seconds();
  const double arrival = now + delay.to_seconds();
  const double bytes = trans.get_data_length();
  const double before = pipe_.busy_s();
  const double done = pipe_.reserve(now, arrival, bytes) + p_.latency_s;
  const double busy = pipe_.busy_s() - before;
  busy_s_.value += busy;
  MemRequest* req = nullptr;
  trans.get_extension(req);
  OpCounters* c = req ? req->counters : nullptr;
  if (trans.is_write()) {
    write_bytes_.value += bytes;
    if (c) c->hbm_write_bytes += bytes;
  } else {
    read_bytes_.value += bytes;
    if (c) c->hbm_read_bytes += bytes;
  }
  if (c) c->hbm_busy_s += busy;
  delay = sc_core::sc_time(done - now, sc_core::SC_SEC);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace xpusim
