#pragma once
// Tags of a sectored, set-associative cache with LRU replacement and write-back,
// write-allocate at sector granularity. Used for the L2 (one set array per slice) and the L1
// (one slice). Only tags are kept, never data: hits and misses come from the addresses the
// kernels touch. Misses and dirty evictions are returned as merged byte ranges, so the next
// level gets real addresses in bulk.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "models/common/fast_div.h"
#include "models/common/mem_request.h"

namespace xpusim {

struct TagGeometry {
  double size_bytes = 0;  // all slices together
  int slices = 1;
  int associativity = 1;
  int line_bytes = 128;
  int sector_bytes = 32;
  std::string hash = "xor";
  // Keep, per line, when the fill of its last miss arrives (SectoredTags::set_ready), so that a
  // read hitting sectors still on their way waits for them (the L2's miss handling merges it
  // with the outstanding miss) instead of reading them at once.
  bool track_fills = false;
};

class SectoredTags {
 public:
  struct Result {
    uint64_t hit_sectors = 0;
    uint64_t miss_sectors = 0;
    uint64_t dirty_evicted_sectors = 0;
    std::vector<Strided> misses;      // read sectors to fetch, merged where contiguous
    std::vector<Strided> writebacks;  // dirty sectors evicted, merged where contiguous
    // With track_fills: the latest fill arrival among the lines whose present sectors a read hit
    // (0: none pending), and the lines this access sends fills to (for set_ready).
    double pending_until = 0;
    std::vector<uint64_t> filling;
    void clear() { *this = Result{}; }
  };

  // One line of an access: its line number, the sectors it touches and where its set starts
  // (slice and set, in ways). plan() works them out once for both prefetch() and touch().
  struct LineRef {
    uint64_t line = 0;
    uint64_t first = 0;
    uint32_t sectors = 0;
  };

  explicit SectoredTags(const TagGeometry& g);
  // Touches [addr, addr+bytes) in slice `slice`: reads fill missing sectors; writes allocate
  // and dirty them.
  void access(uint64_t addr, uint64_t bytes, bool write, uint32_t slice, Result& r);
  // access() in two halves: the lines of [addr, addr+bytes) in slice `slice`, appended to `out`;
  // then, for each in order, touch(). prefetch() asks the host's caches for the set a touch()
  // will look up: a caller issues it a few lines ahead, so that the tag lookups, which miss the
  // host's caches in a multi-megabyte tag array, overlap. It changes nothing simulated.
  void plan(uint64_t addr, uint64_t bytes, uint32_t slice, std::vector<LineRef>& out) const;
  void prefetch(const LineRef& l) const;
  void touch(const LineRef& l, bool write, Result& r);
  uint64_t sets_per_slice() const { return sets_; }
  // With track_fills: the fills of `lines` (Result::filling) arrive at time `t`.
  void set_ready(const std::vector<uint64_t>& lines, double t);
  // Marks up to `sectors` dirty sectors clean, those of the least recently used lines first (to
  // within a 256th of the range of ages), moving no data; returns how many. For work that was
  // counted but not simulated (fast fidelity): its evictions' write-backs are already counted,
  // and the lines they would have cleaned must not be written back again later.
  uint64_t clean_oldest(uint64_t sectors);
  // Marks the valid sectors of the most recently used lines dirty, up to about `sectors` of them
  // (to within a 256th of the range of ages); returns how many of those were dirty already. For
  // a large output of work counted but not simulated (fast fidelity): where its addresses
  // matter to no later access, the L2 holds as much dirty data as the output would have left,
  // for the cost of a pass over the tags (three after a line was touched) instead of a lookup
  // per line. The sectors that were dirty stand for dirty data the output would have evicted.
  uint64_t dirty_youngest(uint64_t sectors);

 private:
  // A set's tags are contiguous (the lookup scans only them), and so are its ways' ages (a miss
  // scans those for the victim); the sector masks, read for one way, lie apart. The three
  // arrays are aligned to the host's cache lines, so that a set of 8 or 16 ways spans the
  // fewest of them (the tag lookups are what a large simulated cache spends its time on).
  struct Masks {
    uint32_t valid = 0;  // sector bitmasks
    uint32_t dirty = 0;
  };
  // A zero-filled array of trivially copyable T, page-aligned, in anonymous memory mapped on
  // demand: the pages no access has written take no host memory (a tiny kernel on a 64 GiB L2
  // touches a few of the tags' 10 GiB, and zeros read back from the kernel's shared zero page).
  template <class T>
  struct Aligned {
    T* p = nullptr;
    size_t bytes = 0;
    Aligned() = default;
    Aligned(const Aligned&) = delete;
    Aligned& operator=(const Aligned&) = delete;
    Aligned(Aligned&& o) noexcept : p(o.p), bytes(o.bytes) { o.p = nullptr, o.bytes = 0; }
    Aligned& operator=(Aligned&& o) noexcept;
    ~Aligned();
    void zeros(size_t n);
    T& operator[](size_t i) { return p[i]; }
    const T& operator[](size_t i) const { return p[i]; }
  };
  void renumber_ages();  // the age clock wrapped: ages become ranks within each set
  // Sectors set in `field` (valid or dirty) by the age of their line, in 256 buckets over the
  // range of those lines' ages (empty when no line has any): two passes over the tags.
  struct AgeHistogram {
    static constexpr int kBuckets = 256;
    uint32_t lo = 0;
    uint64_t span = 1;  // hi - lo + 1
    double per_age = 1;  // 1 / span
    std::vector<uint64_t> sectors;
    AgeHistogram() = default;
    AgeHistogram(uint32_t lo_age, uint32_t hi_age)
        : lo(lo_age), span(static_cast<uint64_t>(hi_age) - lo_age + 1), per_age(1.0 / static_cast<double>(span)),
          sectors(kBuckets, 0) {}
    // The bucket of an age in [lo, hi]: floor(256 (age - lo) / span), by a multiplication whose
    // rounding (under 2^-44 for a quotient below 256) is mended by whole numbers, as a division
    // per line would cost the scans more than the rest of their work.
    int bucket(uint32_t age) const {
      const uint64_t n = static_cast<uint64_t>(age - lo) * kBuckets;
      uint64_t q = static_cast<uint64_t>(static_cast<double>(n) * per_age);
      if ((q + 1) * span <= n) ++q;
      else if (q * span > n) --q;
      return static_cast<int>(std::min<uint64_t>(kBuckets - 1, q));
    }
  };
  AgeHistogram age_histogram(uint32_t Masks::*field) const;
  // The dirty lines, in the order of the tags, as clean_oldest() lists them and keeps them while
  // nothing else changes the tags (dirty_ok_): fast fidelity settles a long reused kernel's
  // write-backs in batches with no access between them, and a batch after the first then reads
  // the list, not the whole array (a third of a million lines on an A100). It keeps its room,
  // 17 bytes for each line dirty at the largest listing (the line and its bucket).
  struct DirtyLine {
    uint64_t way = 0;  // index into the tag arrays
    uint32_t age = 0;
    uint32_t sectors = 0;
  };
  // Empties the list of dirty lines; appends way `way` (its age and dirty sectors) to it.
  void clear_dirty_list();
  void list_dirty(uint64_t way, uint32_t age, uint32_t dirty);
  void touch_line(uint64_t line, uint64_t first, uint32_t sectors, bool write, Result& r);
  uint64_t set_start(uint64_t line, uint32_t slice) const {
    return (static_cast<uint64_t>(slice) * sets_ + set_of(line)) * static_cast<uint64_t>(ways_);
  }
  uint64_t set_of(uint64_t line) const;
  // The sectors of `line` that [addr, end) covers, as a mask.
  uint32_t sectors_of(uint64_t line, uint64_t addr, uint64_t end) const;
  void add_sectors(std::vector<Strided>& out, uint64_t line, uint32_t mask) const;

  uint64_t sets_ = 0;
  FastDivisor by_sets_, by_line_, by_sector_;  // sets_, line_bytes_, sector_bytes_ (fast_div.h): a lookup divides by each
  int ways_ = 0;
  uint64_t line_bytes_ = 0;
  uint64_t sector_bytes_ = 0;
  int sectors_per_line_ = 0;
  bool xor_hash_ = true;
  uint32_t clock_ = 0;
  uint64_t ways_total_ = 0;
  Aligned<uint64_t> tags_;  // line number + 1, 0 when invalid (so that a fresh array is all zeros)
  Aligned<uint32_t> age_;   // clock_ at the last touch (LRU)
  Aligned<Masks> masks_;
  std::vector<DirtyLine> dirty_;
  std::vector<uint8_t> dirty_bucket_;     // clean_oldest()'s bucket of each listed line
  uint32_t dirty_lo_ = 0, dirty_hi_ = 0;  // the listed lines' least and greatest ages
  bool dirty_ok_ = false;
  AgeHistogram valid_hist_;  // dirty_youngest()'s histogram of valid sectors, while valid_ok_
  bool valid_ok_ = false;
  bool track_fills_ = false;
  Aligned<double> ready_;   // with track_fills: when the line's last fill arrives
};

}  // namespace xpusim
