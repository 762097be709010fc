#include "models/memory/l2_cache.h"

#include <algorithm>
#include <cassert>

#include "models/common/mem_request.h"

namespace xpusim {

TagGeometry l2_geometry(const L2Params& p) {
  TagGeometry g;
  g.size_bytes = p.size_bytes;
  g.slices = p.slices;
  g.associativity = p.associativity;
  g.line_bytes = p.line_bytes;
  g.sector_bytes = p.sector_bytes;
  g.hash = p.hash;
  g.track_fills = true;
  return g;
}

L2Cache::L2Cache(sc_core::sc_module_name name, const L2Params& p, const AddressMap& map, double sm_clock_hz,
                 StatRegistry& stats)
    : sc_module(name),
      socket("socket"),
      mem("mem"),
      p_(p),
      map_(map),
      hit_latency_s_(p.hit_latency_cycles / sm_clock_hz),
      tags_(l2_geometry(p)),
      slices_(static_cast<size_t>(p.slices), BandwidthResource(p.bandwidth / p.slices)),
      slice_bytes_(static_cast<size_t>(p.slices), 0.0),
      read_bytes_(stats.add(std::string(this->name()) + ".read_bytes", "bytes", "Bytes read by SMs")),
      write_bytes_(stats.add(std::string(this->name()) + ".write_bytes", "bytes", "Bytes written by SMs")),
      hit_sectors_(stats.add(std::string(this->name()) + ".read_hit_sectors", "sectors", "Read sectors found")),
      miss_sectors_(stats.add(std::string(this->name()) + ".read_miss_sectors", "sectors", "Read sectors fetched from DRAM")),
      writeback_bytes_(stats.add(std::string(this->name()) + ".writeback_bytes", "bytes", "Dirty bytes evicted to DRAM")),
      busy_s_(stats.add(std::string(this->name()) + ".busy", "s", "Slice busy time summed over slices")) {
  assert(map.slices() == static_cast<uint32_t>(p.slices));
  socket.register_b_transport(this, &L2Cache::b_transport);
}

void L2Cache::settle_writebacks(double bytes) {
  if (bytes > 0) tags_.clean_oldest(static_cast<uint64_t>(bytes / p_.sector_bytes + 0.5));
}

double L2Cache::place(const std::vector<Strided>& ranges, bool write) {
  SectoredTags::Result& r = scratch_;
  r.clear();
  for (const Strided& blk : ranges)
    for (uint64_t row = 0; row < blk.rows; ++row)
      map_.for_each_granule(blk.base + row * blk.stride, blk.row_bytes, [&](uint64_t addr, uint64_t bytes) {
        tags_.access(addr, bytes, write, map_.locate(addr).slice, r);
        r.misses.clear();
        r.writebacks.clear();
      });
  return static_cast<double>(r.dirty_evicted_sectors) * p_.sector_bytes;
}

double L2Cache::place_dirty(double bytes) {
  if (bytes <= 0) return 0;
  return static_cast<double>(tags_.dirty_youngest(static_cast<uint64_t>(bytes / p_.sector_bytes + 0.5))) * p_.sector_bytes;
}

double L2Cache::send_down(const std::vector<Strided>& ranges, bool write, OpCounters* c, double now, double at) {
  MemRequest down;
  down.blocks = &ranges;
  down.counters = c;
  tlm::tlm_generic_payload t;
  t.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  t.set_address(ranges.front().base);
  t.set_data_length(static_cast<unsigned>(std::min<uint64_t>(total_bytes(ranges), 0xffffffffu)));
  t.set_extension(&down);
  sc_core::sc_time d(at - now, sc_core::SC_SEC);
  mem->b_transport(t, d);
  t.clear_extension(&down);
  return now + d.to_seconds();
}

void L2Cache::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  MemRequest* req = nullptr;
  trans.get_extension(req);
  assert(req && req->blocks && "L2 expects aggregate requests");
  OpCounters* c = req->counters;
  const bool write = trans.is_write();
  const double now = sc_core::sc_time_stamp().to_seconds();
  const double arrival = now + delay.to_seconds();

  SectoredTags::Result& r = scratch_;
  r.clear();
  // The lines in order, each with its slice's set; then the tag lookups in the same order, each
  // asking the host for the set of the line kPrefetchAhead later (simulated results do not
  // depend on it; the lookups, which miss the host's caches, overlap).
  lines_.clear();
  for (const Strided& blk : *req->blocks)
    for (uint64_t row = 0; row < blk.rows; ++row)
      map_.for_each_granule(blk.base + row * blk.stride, blk.row_bytes, [&](uint64_t addr, uint64_t bytes) {
        const uint32_t s = map_.locate(addr).slice;
        if (slice_bytes_[s] == 0) touched_.push_back(s);
        slice_bytes_[s] += static_cast<double>(bytes);
        tags_.plan(addr, bytes, s, lines_);
      });
  constexpr size_t kPrefetchAhead = 12;
  const size_t n = lines_.size();
  for (size_t i = 0; i < std::min(n, kPrefetchAhead); ++i) tags_.prefetch(lines_[i]);
  for (size_t i = 0; i < n; ++i) {
    if (i + kPrefetchAhead < n) tags_.prefetch(lines_[i + kPrefetchAhead]);
    tags_.touch(lines_[i], write, r);
  }

  // Each slice serves its share; the request is done when the slowest one is.
  double done = arrival;
  double busy = 0;
  for (uint32_t s : touched_) {
    const double before = slices_[s].busy_s();
    done = std::max(done, slices_[s].reserve(now, arrival, slice_bytes_[s]));
    busy += slices_[s].busy_s() - before;
    slice_bytes_[s] = 0;
  }
  touched_.clear();
  done += hit_latency_s_;
  busy_s_.value += busy;

  const double bytes = static_cast<double>(total_bytes(*req->blocks));
  if (write) {
    write_bytes_.value += bytes;
  } else {
    read_bytes_.value += bytes;
    hit_sectors_.value += static_cast<double>(r.hit_sectors);
    miss_sectors_.value += static_cast<double>(r.miss_sectors);
  }
  if (c) {
    c->l2_busy_s += busy;
    if (write) {
      c->l2_write_bytes += bytes;
    } else {
      c->l2_read_bytes += bytes;
      c->l2_read_hit_sectors += static_cast<double>(r.hit_sectors);
      c->l2_read_miss_sectors += static_cast<double>(r.miss_sectors);
    }
  }
  // A miss is known after the tag lookup (half the hit path); its data returns over the other
  // half once DRAM delivers.
  if (!r.misses.empty()) {
    const double fill = send_down(r.misses, false, c, now, arrival + hit_latency_s_ / 2);
    done = std::max(done, fill + hit_latency_s_ / 2);
    tags_.set_ready(r.filling, fill);
  }
  // Sectors it found present but still on their way from DRAM (another request's miss): their
  // data leaves the slice when it arrives.
  if (r.pending_until > 0) done = std::max(done, r.pending_until + hit_latency_s_ / 2);
  if (!r.writebacks.empty()) {
    writeback_bytes_.value += static_cast<double>(r.dirty_evicted_sectors) * p_.sector_bytes;
    send_down(r.writebacks, true, c, now, arrival);  // posted: the requester does not wait
  }
  delay = sc_core::sc_time(done - now, sc_core::SC_SEC);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace xpusim
