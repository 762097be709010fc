#include "models/memory/sectored_tags.h"

#include <algorithm>
#include <cassert>

namespace xpusim {
namespace {

// Population count without a library call (targets without POPCNT lower __builtin_popcount to
// one, and the tag lookup counts sectors on every access).
inline uint64_t popcount32(uint32_t x) {
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  x = (x + (x >> 4)) & 0x0f0f0f0fu;
  return static_cast<uint64_t>((x * 0x01010101u) >> 24);
}

}  // namespace

SectoredTags::SectoredTags(const TagGeometry& g)
    : ways_(g.associativity),
      line_bytes_(static_cast<uint64_t>(g.line_bytes)),
      sector_bytes_(static_cast<uint64_t>(g.sector_bytes)),
      sectors_per_line_(g.line_bytes / g.sector_bytes),
      xor_hash_(g.hash == "xor") {
  assert(sectors_per_line_ >= 1 && sectors_per_line_ <= 32 && g.slices >= 1);
  const uint64_t lines = static_cast<uint64_t>(g.size_bytes / g.line_bytes);
  sets_ = std::max<uint64_t>(1, lines / static_cast<uint64_t>(ways_) / static_cast<uint64_t>(g.slices));
  const uint64_t n = sets_ * static_cast<uint64_t>(ways_) * static_cast<uint64_t>(g.slices);
  tags_.assign(n, ~0ull);
  state_.resize(n);
}

uint64_t SectoredTags::set_of(uint64_t line) const {
  if (!xor_hash_) return line % sets_;
  // Fold the upper address bits into the index, as GPU caches do, so that power-of-two
  // strides (matrix rows of 2^n bytes) spread over all sets instead of a few.
  uint64_t h = line;
  h ^= h >> 17;
  h *= 0xed5ad4bbull;
  h ^= h >> 11;
  h *= 0xac4c1b51ull;
  h ^= h >> 15;
  return h % sets_;
}

void SectoredTags::add_sectors(std::vector<Strided>& out, uint64_t line, uint32_t mask) const {
  while (mask) {
    const int first = __builtin_ctz(mask);
    int last = first;
    while (last + 1 < 32 && (mask >> (last + 1) & 1u)) ++last;
    const uint64_t base = line * line_bytes_ + static_cast<uint64_t>(first) * sector_bytes_;
    const uint64_t bytes = static_cast<uint64_t>(last - first + 1) * sector_bytes_;
    if (!out.empty() && out.back().base + out.back().row_bytes == base) out.back().row_bytes += bytes;
    else out.push_back({base, 1, bytes, 0});
    mask &= ~static_cast<uint32_t>(((2ull << last) - 1) & ~((1ull << first) - 1));
  }
}

void SectoredTags::touch_line(uint64_t line, uint32_t sectors, bool write, uint32_t slice, Result& r) {
  const uint64_t first = (static_cast<uint64_t>(slice) * sets_ + set_of(line)) * static_cast<uint64_t>(ways_);
  uint64_t* tags = &tags_[first];
  WayState* st = &state_[first];
  ++clock_;
  int hit = -1;
  for (int w = 0; w < ways_; ++w)
    if (tags[w] == line) {
      hit = w;
      break;
    }
  if (hit >= 0) {
    WayState& way = st[hit];
    const uint32_t present = way.valid & sectors;
    r.hit_sectors += popcount32(present);
    if (!write) {
      const uint32_t missing = sectors & ~present;
      r.miss_sectors += popcount32(missing);
      add_sectors(r.misses, line, missing);
    }
    way.valid |= sectors;
    if (write) way.dirty |= sectors;
    way.lru = clock_;
    return;
  }
  int victim = 0;
  for (int w = 1; w < ways_; ++w)
    if (st[w].lru < st[victim].lru) victim = w;
  WayState& v = st[victim];
  if (v.dirty) {
    r.dirty_evicted_sectors += popcount32(v.dirty);
    add_sectors(r.writebacks, tags[victim], v.dirty);
  }
  if (!write) {
    r.miss_sectors += popcount32(sectors);
    add_sectors(r.misses, line, sectors);
  }
  tags[victim] = line;
  v.valid = sectors;
  v.dirty = write ? sectors : 0;
  v.lru = clock_;
}

void SectoredTags::prefetch(uint64_t addr, uint64_t bytes, uint32_t slice) const {
  if (bytes == 0) return;
  const uint64_t end = addr + bytes;
  for (uint64_t line = addr / line_bytes_; line * line_bytes_ < end; ++line) {
    const uint64_t first = (static_cast<uint64_t>(slice) * sets_ + set_of(line)) * static_cast<uint64_t>(ways_);
    const char* t = reinterpret_cast<const char*>(&tags_[first]);
    const size_t tag_bytes = static_cast<size_t>(ways_) * sizeof(uint64_t);
    for (size_t o = 0; o < tag_bytes; o += 64) __builtin_prefetch(t + o);
  }
}

void SectoredTags::access(uint64_t addr, uint64_t bytes, bool write, uint32_t slice, Result& r) {
  if (bytes == 0) return;
  const uint64_t lb = line_bytes_, sb = sector_bytes_;
  const uint64_t end = addr + bytes;
  for (uint64_t line = addr / lb; line * lb < end; ++line) {
    const uint64_t lo = std::max(addr, line * lb) - line * lb;
    const uint64_t hi = std::min(end, (line + 1) * lb) - line * lb;  // exclusive
    const uint64_t first = lo / sb, last = (hi - 1) / sb;
    const uint32_t mask = static_cast<uint32_t>(((2ull << last) - 1) & ~((1ull << first) - 1));
    touch_line(line, mask, write, slice, r);
  }
}

}  // namespace xpusim
