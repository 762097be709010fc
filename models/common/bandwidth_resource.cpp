#include "models/common/bandwidth_resource.h"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace xpusim {

double BandwidthResource::reserve(double now, double arrival, double bytes) {
  assert(rate_ > 0);
  return reserve_for(now, arrival, bytes / rate_);
}

double BandwidthResource::reserve_for(double now, double arrival, double duration) {
  assert(duration >= 0 && arrival >= now - 1e-15);
  while (!busy_.empty() && busy_.begin()->second <= now) busy_.erase(busy_.begin());
  busy_s_ += duration;
  if (duration <= 0) return arrival;

  double start = arrival;
  auto it = busy_.upper_bound(start);
  if (it != busy_.begin()) {
    auto prev = std::prev(it);
    if (prev->second > start) start = prev->second;
  }
  while (it != busy_.end() && it->first < start + duration) {
    start = std::max(start, it->second);
    ++it;
  }
  const double end = start + duration;
  // Insert [start, end), merging with a neighbour that touches it.
  double lo = start, hi = end;
  auto next = busy_.lower_bound(start);
  if (next != busy_.begin()) {
    auto prev = std::prev(next);
    if (prev->second >= lo) {
      lo = prev->first;
      busy_.erase(prev);
    }
  }
  next = busy_.lower_bound(lo);
  if (next != busy_.end() && next->first <= hi) {
    hi = std::max(hi, next->second);
    busy_.erase(next);
  }
  busy_[lo] = hi;
  return end;
}

}  // namespace xpusim
