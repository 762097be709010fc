#include "models/common/bandwidth_resource.h"

#include <algorithm>
#include <cassert>

namespace xpusim {

double BandwidthResource::reserve(double now, double arrival, double bytes) {
  assert(rate_ > 0);
  return reserve_for(now, arrival, bytes / rate_);
}

double BandwidthResource::reserve_for(double now, double arrival, double duration) {
  return calendar::reserve(buf_.data(), buf_.size(), head_, n_, kMaxIntervals, busy_s_, now, arrival, duration);
}

double LinkPipe::reserve(double now, double arrival, double bytes) {
  assert(rate_ > 0);
  // Grow before a booking could run out of room (the calendar needs n + 1 slots behind head,
  // and moves to the front when they are not there).
  if (buf_.size() < 2 * (kMaxIntervals + 2) && head_ + n_ + 2 > buf_.size()) {
    if (head_ > 0) {
      std::copy(buf_.begin() + head_, buf_.begin() + head_ + n_, buf_.begin());
      head_ = 0;
    }
    if (n_ + 2 > buf_.size() / 2) buf_.resize(std::min<size_t>(2 * (kMaxIntervals + 2), std::max<size_t>(64, 4 * (n_ + 2))));
  }
  return calendar::reserve(buf_.data(), buf_.size(), head_, n_, kMaxIntervals, busy_s_, now, arrival, bytes / rate_);
}

namespace calendar {

double reserve(Interval* buf, size_t size, uint32_t& head, uint32_t& n, size_t max_intervals, double& busy_s,
               double now, double arrival, double duration) {
  assert(duration >= 0 && arrival >= now - 1e-15);
  // Drop intervals wholly in the past.
  while (n > 0 && buf[head].second <= now) {
    ++head;
    --n;
  }
  busy_s += duration;
  if (duration <= 0) return arrival;
  if (head + n + 1 > size) {  // no room behind: move the calendar to the front
    std::copy(buf + head, buf + head + n, buf);
    head = 0;
  }
  Interval* const b = buf + head;
  Interval* e = b + n;

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
    ++n;
  }
  Interval* next = pos + 1;
  if (next != e && next->first <= pos->second) {
    pos->second = std::max(pos->second, next->second);
    std::copy(next + 1, e, next);
    --e;
    --n;
  }
  if (n > max_intervals) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i)
      if (b[i + 1].first - b[i].second < b[best + 1].first - b[best].second) best = i;
    b[best].second = b[best + 1].second;
    std::copy(b + best + 2, e, b + best + 1);
    --n;
  }
  return end;
}

}  // namespace calendar

}  // namespace xpusim
