#include "models/common/bandwidth_resource.h"

#include <algorithm>
#include <cassert>

namespace xpusim {

double BandwidthResource::reserve(double now, double arrival, double bytes) {
  assert(rate_ > 0);
  return reserve_for(now, arrival, bytes / rate_);
}

double BandwidthResource::reserve_for(double now, double arrival, double duration) {
  assert(duration >= 0 && arrival >= now - 1e-15);
  // Drop intervals wholly in the past.
  while (n_ > 0 && buf_[head_].second <= now) {
    ++head_;
    --n_;
  }
  busy_s_ += duration;
  if (duration <= 0) return arrival;
  if (head_ + n_ + 1 > buf_.size()) {  // no room behind: move the calendar to the front
    std::copy(buf_.begin() + head_, buf_.begin() + head_ + n_, buf_.begin());
    head_ = 0;
  }
  Interval* const b = buf_.data() + head_;
  Interval* e = b + n_;

  // First fit: the earliest idle gap at or after `arrival` that is long enough.
  double start = arrival;
  Interval* it = std::upper_bound(b, e, start, [](double t, const Interval& iv) { return t < iv.first; });
  if (it != b && (it - 1)->second > start) start = (it - 1)->second;
  while (it != e && it->first < start + duration) {
    start = std::max(start, it->second);
    ++it;
  }
  const double end = start + duration;
  // Insert [start, end) before `it`, merging with neighbours that touch it.
  Interval* pos = it;
  if (pos != b && (pos - 1)->second >= start) {
    --pos;
    pos->second = std::max(pos->second, end);
  } else {
    std::copy_backward(pos, e, e + 1);
    *pos = {start, end};
    ++e;
    ++n_;
  }
  Interval* next = pos + 1;
  if (next != e && next->first <= pos->second) {
    pos->second = std::max(pos->second, next->second);
    std::copy(next + 1, e, next);
    --e;
    --n_;
  }
  if (n_ > kMaxIntervals) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n_; ++i)
      if (b[i + 1].first - b[i].second < b[best + 1].first - b[best].second) best = i;
    b[best].second = b[best + 1].second;
    std::copy(b + best + 2, e, b + best + 1);
    --n_;
  }
  return end;
}

}  // namespace xpusim
