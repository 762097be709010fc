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
  // Drop intervals wholly in the past.
  size_t past = 0;
  while (past < busy_.size() && busy_[past].second <= now) ++past;
  if (past > 0) busy_.erase(busy_.begin(), busy_.begin() + static_cast<std::ptrdiff_t>(past));
  busy_s_ += duration;
  if (duration <= 0) return arrival;

  // First fit: the earliest idle gap at or after `arrival` that is long enough.
  double start = arrival;
  auto it = std::upper_bound(busy_.begin(), busy_.end(), start,
                             [](double t, const std::pair<double, double>& iv) { return t < iv.first; });
  if (it != busy_.begin() && std::prev(it)->second > start) start = std::prev(it)->second;
  while (it != busy_.end() && it->first < start + duration) {
    start = std::max(start, it->second);
    ++it;
  }
  const double end = start + duration;
  // Insert [start, end) before `it`, merging with neighbours that touch it.
  auto pos = busy_.insert(it, {start, end});
  if (pos != busy_.begin() && std::prev(pos)->second >= start) {
    std::prev(pos)->second = std::max(std::prev(pos)->second, end);
    pos = std::prev(busy_.erase(pos));
  }
  auto next = std::next(pos);
  if (next != busy_.end() && next->first <= pos->second) {
    pos->second = std::max(pos->second, next->second);
    busy_.erase(next);
  }
  if (busy_.size() > kMaxIntervals) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < busy_.size(); ++i)
      if (busy_[i + 1].first - busy_[i].second < busy_[best + 1].first - busy_[best].second) best = i;
    busy_[best].second = busy_[best + 1].second;
    busy_.erase(busy_.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  return end;
}

}  // namespace xpusim
