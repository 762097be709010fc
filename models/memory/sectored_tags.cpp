#include "models/memory/sectored_tags.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <limits>
#include <new>

#include <sys/mman.h>

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
      xor_hash_(g.hash == "xor"),
      track_fills_(g.track_fills) {
  assert(sectors_per_line_ >= 1 && sectors_per_line_ <= 32 && g.slices >= 1);
  const uint64_t lines = static_cast<uint64_t>(g.size_bytes / g.line_bytes);
  sets_ = std::max<uint64_t>(1, lines / static_cast<uint64_t>(ways_) / static_cast<uint64_t>(g.slices));
  by_sets_ = FastDivisor(sets_);
  by_line_ = FastDivisor(line_bytes_);
  by_sector_ = FastDivisor(sector_bytes_);
  const uint64_t n = sets_ * static_cast<uint64_t>(ways_) * static_cast<uint64_t>(g.slices);
  ways_total_ = n;
  tags_.zeros(n);
  age_.zeros(n);
  masks_.zeros(n);
  if (track_fills_) ready_.zeros(n);
}

void SectoredTags::set_ready(const std::vector<uint64_t>& lines, double t) {
  for (uint64_t i : lines) ready_[i] = t;
}

template <class T>
void SectoredTags::Aligned<T>::zeros(size_t n) {
  this->~Aligned();
  bytes = std::max<size_t>(n * sizeof(T), 1);
  void* m = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  p = static_cast<T*>(m);
}

template <class T>
SectoredTags::Aligned<T>& SectoredTags::Aligned<T>::operator=(Aligned&& o) noexcept {
  if (this != &o) {
    this->~Aligned();
    p = o.p, bytes = o.bytes;
    o.p = nullptr, o.bytes = 0;
  }
  return *this;
}

template <class T>
SectoredTags::Aligned<T>::~Aligned() {
  if (p) munmap(p, bytes);
  p = nullptr, bytes = 0;
}

template struct SectoredTags::Aligned<uint64_t>;
template struct SectoredTags::Aligned<uint32_t>;
template struct SectoredTags::Aligned<SectoredTags::Masks>;
template struct SectoredTags::Aligned<double>;

void SectoredTags::renumber_ages() {
  // The order of the ways within each set is all LRU needs: keep it, with small numbers.
  std::vector<uint32_t> order(static_cast<size_t>(ways_));
  for (uint64_t first = 0; first < ways_total_; first += static_cast<uint64_t>(ways_)) {
    uint32_t* a = &age_[first];
    for (int w = 0; w < ways_; ++w) order[static_cast<size_t>(w)] = static_cast<uint32_t>(w);
    std::stable_sort(order.begin(), order.end(), [a](uint32_t x, uint32_t y) { return a[x] < a[y]; });
    for (int r = 0; r < ways_; ++r) a[order[static_cast<size_t>(r)]] = static_cast<uint32_t>(r);
  }
  clock_ = static_cast<uint32_t>(ways_);
}

uint64_t SectoredTags::set_of(uint64_t line) const {
  if (!xor_hash_) return by_sets_.mod(line);
  // Fold the upper address bits into the index, as GPU caches do, so that power-of-two
  // strides (matrix rows of 2^n bytes) spread over all sets instead of a few.
  uint64_t h = line;
  h ^= h >> 17;
  h *= 0xed5ad4bbull;
  h ^= h >> 11;
  h *= 0xac4c1b51ull;
  h ^= h >> 15;
  return by_sets_.mod(h);
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

void SectoredTags::touch_line(uint64_t line, uint64_t first, uint32_t sectors, bool write, Result& r) {
  uint64_t* tags = &tags_[first];
  uint32_t* age = &age_[first];
  if (clock_ == std::numeric_limits<uint32_t>::max()) renumber_ages();
  ++clock_;
  dirty_ok_ = valid_ok_ = false;
  int hit = -1;
  for (int w = 0; w < ways_; ++w)
    if (tags[w] == line + 1) {
      hit = w;
      break;
    }
  if (hit >= 0) {
    Masks& way = masks_[first + static_cast<uint64_t>(hit)];
    const uint32_t present = way.valid & sectors;
    r.hit_sectors += popcount32(present);
    if (!write) {
      const uint32_t missing = sectors & ~present;
      r.miss_sectors += popcount32(missing);
      add_sectors(r.misses, line, missing);
      if (track_fills_) {
        const uint64_t i = first + static_cast<uint64_t>(hit);
        if (present) r.pending_until = std::max(r.pending_until, ready_[i]);
        if (missing) r.filling.push_back(i);
      }
    }
    way.valid |= sectors;
    if (write) way.dirty |= sectors;
    age[hit] = clock_;
    return;
  }
  int victim = 0;
  for (int w = 1; w < ways_; ++w)
    if (age[w] < age[victim]) victim = w;
  Masks& v = masks_[first + static_cast<uint64_t>(victim)];
  if (v.dirty) {
    r.dirty_evicted_sectors += popcount32(v.dirty);
    add_sectors(r.writebacks, tags[victim] - 1, v.dirty);
  }
  if (!write) {
    r.miss_sectors += popcount32(sectors);
    add_sectors(r.misses, line, sectors);
  }
  if (track_fills_) {
    const uint64_t i = first + static_cast<uint64_t>(victim);
    ready_[i] = 0;
    if (!write) r.filling.push_back(i);
  }
  tags[victim] = line + 1;
  v.valid = sectors;
  v.dirty = write ? sectors : 0;
  age[victim] = clock_;
}

SectoredTags::AgeHistogram SectoredTags::age_histogram(uint32_t Masks::*field) const {
  AgeHistogram h;
  uint32_t lo = std::numeric_limits<uint32_t>::max(), hi = 0;
  for (uint64_t i = 0; i < ways_total_; ++i)
    if (masks_[i].*field) {
      lo = std::min(lo, age_[i]);
      hi = std::max(hi, age_[i]);
    }
  if (lo > hi) return h;
  h = AgeHistogram(lo, hi);
  for (uint64_t i = 0; i < ways_total_; ++i)
    if (masks_[i].*field) h.sectors[static_cast<size_t>(h.bucket(age_[i]))] += popcount32(masks_[i].*field);
  return h;
}

void SectoredTags::clear_dirty_list() {
  dirty_.clear();
  dirty_lo_ = std::numeric_limits<uint32_t>::max(), dirty_hi_ = 0;
}

void SectoredTags::list_dirty(uint64_t way, uint32_t age, uint32_t dirty) {
  dirty_.push_back({way, age, static_cast<uint32_t>(popcount32(dirty))});
  dirty_lo_ = std::min(dirty_lo_, age);
  dirty_hi_ = std::max(dirty_hi_, age);
}

uint64_t SectoredTags::clean_oldest(uint64_t sectors) {
  if (sectors == 0) return 0;
  // One pass over the tags lists the dirty lines, in order, with the range of their ages; two
  // passes over the list then make a histogram of dirty sectors by age, and clean every line
  // older than the bucket where the count is reached, and that bucket's lines in order. The
  // list, less the lines cleaned, stays valid until a line is touched (dirty_youngest() lists
  // them anew as it marks them), so that a next call starts from it.
  if (!dirty_ok_) {
    clear_dirty_list();
    for (uint64_t i = 0; i < ways_total_; ++i)
      if (masks_[i].dirty) list_dirty(i, age_[i], masks_[i].dirty);
    dirty_ok_ = true;
  }
  if (dirty_.empty()) return 0;
  AgeHistogram h(dirty_lo_, dirty_hi_);
  dirty_bucket_.resize(dirty_.size());
  for (size_t i = 0; i < dirty_.size(); ++i) {
    const int b = h.bucket(dirty_[i].age);
    dirty_bucket_[i] = static_cast<uint8_t>(b);
    h.sectors[static_cast<size_t>(b)] += dirty_[i].sectors;
  }
  int cut = 0;
  uint64_t below = 0;  // dirty sectors in the buckets before `cut`
  while (cut < AgeHistogram::kBuckets && below + h.sectors[static_cast<size_t>(cut)] <= sectors)
    below += h.sectors[static_cast<size_t>(cut++)];
  uint64_t left = sectors - below;  // to clean in bucket `cut`
  uint64_t cleaned = 0;
  size_t kept = 0;
  dirty_lo_ = std::numeric_limits<uint32_t>::max(), dirty_hi_ = 0;
  for (size_t i = 0; i < dirty_.size(); ++i) {
    const DirtyLine d = dirty_[i];
    const int b = dirty_bucket_[i];
    if (b < cut || (b == cut && left > 0)) {
      if (b == cut) left -= std::min<uint64_t>(left, d.sectors);
      cleaned += d.sectors;
      masks_[d.way].dirty = 0;
    } else {
      dirty_[kept++] = d;
      dirty_lo_ = std::min(dirty_lo_, d.age);
      dirty_hi_ = std::max(dirty_hi_, d.age);
    }
  }
  dirty_.resize(kept);
  return cleaned;
}

uint64_t SectoredTags::dirty_youngest(uint64_t sectors) {
  if (sectors == 0) return 0;
  // As clean_oldest, from the other end and over the valid lines. Their ages and sectors change
  // only when a line is touched, so the histogram of a call serves the calls after it until then
  // (valid_ok_): a run of reused kernels places each output with one pass over the tags, which
  // also lists the dirty lines for the clean_oldest() that settles its write-backs.
  dirty_ok_ = false;
  if (!valid_ok_) {
    valid_hist_ = age_histogram(&Masks::valid);
    valid_ok_ = true;
  }
  const AgeHistogram& h = valid_hist_;
  if (h.sectors.empty()) return 0;
  int cut = AgeHistogram::kBuckets - 1;
  uint64_t above = 0;  // valid sectors in the buckets after `cut`
  while (cut >= 0 && above + h.sectors[static_cast<size_t>(cut)] <= sectors) above += h.sectors[static_cast<size_t>(cut--)];
  uint64_t left = sectors - above;  // to mark in bucket `cut`
  uint64_t were_dirty = 0;
  clear_dirty_list();
  for (uint64_t i = 0; i < ways_total_; ++i) {
    Masks& m = masks_[i];
    if (!m.valid) continue;
    const uint32_t age = age_[i];
    const int b = h.bucket(age);
    if (b > cut || (b == cut && left > 0)) {
      if (b == cut) left -= std::min<uint64_t>(left, popcount32(m.valid));
      were_dirty += popcount32(m.dirty);
      m.dirty = m.valid;
    }
    if (m.dirty) list_dirty(i, age, m.dirty);
  }
  dirty_ok_ = true;
  return were_dirty;
}

void SectoredTags::prefetch(const LineRef& l) const {
  const size_t w = static_cast<size_t>(ways_);
  const char* t = reinterpret_cast<const char*>(&tags_[l.first]);
  for (size_t o = 0; o < w * sizeof(uint64_t); o += 64) __builtin_prefetch(t + o);
  const char* a = reinterpret_cast<const char*>(&age_[l.first]);
  for (size_t o = 0; o < w * sizeof(uint32_t); o += 64) __builtin_prefetch(a + o);
  const char* m = reinterpret_cast<const char*>(&masks_[l.first]);
  for (size_t o = 0; o < w * sizeof(Masks); o += 64) __builtin_prefetch(m + o);
  if (track_fills_) {  // a read that hits reads its way's fill time
    const char* f = reinterpret_cast<const char*>(&ready_[l.first]);
    for (size_t o = 0; o < w * sizeof(double); o += 64) __builtin_prefetch(f + o);
  }
}

uint32_t SectoredTags::sectors_of(uint64_t line, uint64_t addr, uint64_t end) const {
  const uint64_t lb = line_bytes_;
  const uint64_t lo = std::max(addr, line * lb) - line * lb;
  const uint64_t hi = std::min(end, (line + 1) * lb) - line * lb;  // exclusive
  const uint64_t first = by_sector_.div(lo), last = by_sector_.div(hi - 1);
  return static_cast<uint32_t>(((2ull << last) - 1) & ~((1ull << first) - 1));
}

void SectoredTags::plan(uint64_t addr, uint64_t bytes, uint32_t slice, std::vector<LineRef>& out) const {
  if (bytes == 0) return;
  const uint64_t end = addr + bytes;
  for (uint64_t line = by_line_.div(addr); line * line_bytes_ < end; ++line)
    out.push_back({line, set_start(line, slice), sectors_of(line, addr, end)});
}

void SectoredTags::touch(const LineRef& l, bool write, Result& r) { touch_line(l.line, l.first, l.sectors, write, r); }

void SectoredTags::access(uint64_t addr, uint64_t bytes, bool write, uint32_t slice, Result& r) {
  if (bytes == 0) return;
  const uint64_t end = addr + bytes;
  for (uint64_t line = by_line_.div(addr); line * line_bytes_ < end; ++line)
    touch_line(line, set_start(line, slice), sectors_of(line, addr, end), write, r);
}

}  // namespace xpusim
