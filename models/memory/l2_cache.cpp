#include "models/memory/l2_cache.h"

#include <algorithm>
#include <cassert>

#include "models/common/mem_request.h"

namespace xpusim {

L2TagArray::L2TagArray(const L2Params& p)
    : ways_(p.associativity),
      line_bytes_(p.line_bytes),
      sector_bytes_(p.sector_bytes),
      sectors_per_line_(p.line_bytes / p.sector_bytes),
      xor_hash_(p.hash == "xor") {
  assert(sectors_per_line_ >= 1 && sectors_per_line_ <= 32);
  const uint64_t lines = static_cast<uint64_t>(p.size_bytes / p.line_bytes);
  sets_ = std::max<uint64_t>(1, lines / static_cast<uint64_t>(ways_));
  array_.resize(sets_ * static_cast<uint64_t>(ways_));
}

uint64_t L2TagArray::set_of(uint64_t line) const {
  if (!xor_hash_) return line % sets_;
  // Fold the upper address bits into the index, as GPU L2s do, so that power-of-two strides
  // (matrix rows of 2^n bytes) spread over all sets instead of a few.
  uint64_t h = line;
  h ^= h >> 17;
  h *= 0xed5ad4bbull;
  h ^= h >> 11;
  h *= 0xac4c1b51ull;
  h ^= h >> 15;
  return h % sets_;
}

void L2TagArray::touch_line(uint64_t line, uint32_t sectors, bool write, Result& r) {
  Way* set = &array_[set_of(line) * static_cast<uint64_t>(ways_)];
  ++clock_;
  Way* victim = set;
  for (int w = 0; w < ways_; ++w) {
    Way& way = set[w];
    if (way.tag == line) {
      const uint32_t present = way.valid & sectors;
      r.hit_sectors += static_cast<uint64_t>(__builtin_popcount(present));
      if (!write) r.miss_sectors += static_cast<uint64_t>(__builtin_popcount(sectors & ~present));
      way.valid |= sectors;
      if (write) way.dirty |= sectors;
      way.lru = clock_;
      return;
    }
    if (way.lru < victim->lru) victim = &way;
  }
  r.dirty_evicted_sectors += static_cast<uint64_t>(__builtin_popcount(victim->dirty));
  if (!write) r.miss_sectors += static_cast<uint64_t>(__builtin_popcount(sectors));
  victim->tag = line;
  victim->valid = sectors;
  victim->dirty = write ? sectors : 0;
  victim->lru = clock_;
}

void L2TagArray::access(uint64_t addr, uint64_t bytes, bool write, Result& r) {
  if (bytes == 0) return;
  const uint64_t lb = static_cast<uint64_t>(line_bytes_);
  const uint64_t sb = static_cast<uint64_t>(sector_bytes_);
  const uint64_t end = addr + bytes;
  for (uint64_t line = addr / lb; line * lb < end; ++line) {
    const uint64_t lo = std::max(addr, line * lb) - line * lb;
    const uint64_t hi = std::min(end, (line + 1) * lb) - line * lb;  // exclusive
    const uint64_t first = lo / sb, last = (hi - 1) / sb;
    const uint32_t mask = static_cast<uint32_t>(((2ull << last) - 1) & ~((1ull << first) - 1));
    touch_line(line, mask, write, r);
  }
}

L2Cache::L2Cache(sc_core::sc_module_name name, const L2Params& p, double sm_clock_hz, StatRegistry& stats)
    : sc_module(name),
      socket("socket"),
      mem("mem"),
      p_(p),
      hit_latency_s_(p.hit_latency_cycles / sm_clock_hz),
      tags_(p),
      pipe_(p.bandwidth),
      read_bytes_(stats.add(std::string(this->name()) + ".read_bytes", "bytes", "Bytes read by SMs")),
      write_bytes_(stats.add(std::string(this->name()) + ".write_bytes", "bytes", "Bytes written by SMs")),
      hit_sectors_(stats.add(std::string(this->name()) + ".read_hit_sectors", "sectors", "Read sectors found")),
      miss_sectors_(stats.add(std::string(this->name()) + ".read_miss_sectors", "sectors", "Read sectors fetched from DRAM")),
      writeback_bytes_(stats.add(std::string(this->name()) + ".writeback_bytes", "bytes", "Dirty bytes evicted to DRAM")),
      busy_s_(stats.add(std::string(this->name()) + ".busy", "s", "Time the hit-bandwidth pipe was busy")) {
  socket.register_b_transport(this, &L2Cache::b_transport);
}

void L2Cache::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
  MemRequest* req = nullptr;
  trans.get_extension(req);
  assert(req && req->blocks && "L2 expects aggregate requests");
  OpCounters* c = req->counters;
  const bool write = trans.is_write();
  const double now = sc_core::sc_time_stamp().to_seconds();
  const double arrival = now + delay.to_seconds();

  L2TagArray::Result r;
  for (const Strided& blk : *req->blocks)
    for (uint64_t row = 0; row < blk.rows; ++row) tags_.access(blk.base + row * blk.stride, blk.row_bytes, write, r);

  const double bytes = trans.get_data_length();
  const double before = pipe_.busy_s();
  double done = pipe_.reserve(now, arrival, bytes) + hit_latency_s_;
  const double busy = pipe_.busy_s() - before;
  busy_s_.value += busy;
  const double sector = p_.sector_bytes;
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

  MemRequest down;
  down.counters = c;
  if (r.miss_sectors > 0) {
    tlm::tlm_generic_payload miss;
    miss.set_command(tlm::TLM_READ_COMMAND);
    miss.set_address(trans.get_address());
    miss.set_data_length(static_cast<unsigned>(r.miss_sectors * static_cast<uint64_t>(sector)));
    miss.set_extension(&down);
    // The miss is detected after the tag lookup (about half the hit path), and the data
    // returns over the other half.
    sc_core::sc_time d(arrival - now + hit_latency_s_ / 2, sc_core::SC_SEC);
    mem->b_transport(miss, d);
    miss.clear_extension(&down);
    done = std::max(done, now + d.to_seconds() + hit_latency_s_ / 2);
  }
  if (r.dirty_evicted_sectors > 0) {
    const double wb = static_cast<double>(r.dirty_evicted_sectors) * sector;
    writeback_bytes_.value += wb;
    tlm::tlm_generic_payload evict;
    evict.set_command(tlm::TLM_WRITE_COMMAND);
    evict.set_address(0);
    evict.set_data_length(static_cast<unsigned>(wb));
    evict.set_extension(&down);
    sc_core::sc_time d(arrival - now, sc_core::SC_SEC);
    mem->b_transport(evict, d);  // posted: the requester does not wait for it
    evict.clear_extension(&down);
  }
  delay = sc_core::sc_time(done - now, sc_core::SC_SEC);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

}  // namespace xpusim
