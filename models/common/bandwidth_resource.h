#pragma once
// A pipe of fixed bandwidth, timed by reservation. A transfer arriving at time t takes the first
// idle gap at or after t long enough for bytes / bandwidth. Reservations may be made out of
// arrival order (a hit's data is ready before an earlier miss's), so the pipe keeps a calendar
// of busy intervals rather than a single "free at" time; intervals wholly in the past are
// dropped. Times are seconds of simulated time. The calendar holds at most kMaxIntervals busy
// intervals: beyond that the smallest idle gap is given up (merged into its neighbours), which
// bounds the cost of a reservation at the price of a sliver of unused capacity. The calendar
// lives inside the object (no allocation, and no pointer to follow to reach it: the simulator
// makes millions of reservations on hundreds of pipes, and the host's cache misses on them are
// most of their cost); intervals in the past are dropped by moving its start. LinkPipe, below,
// is the same pipe with a calendar that grows.
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace xpusim {

namespace calendar {
using Interval = std::pair<double, double>;  // [start, end)
// Books `duration` at the first idle gap at or after `arrival` in the calendar
// buf[head, head + n) (sorted, disjoint, merged when touching; `size` slots, at least
// 2 x (max_intervals + 2)), dropping intervals that ended by `now` and merging the smallest
// gap beyond max_intervals. Returns the end of the booking.
double reserve(Interval* buf, size_t size, uint32_t& head, uint32_t& n, size_t max_intervals, double& busy_s,
               double now, double arrival, double duration);
}  // namespace calendar

class BandwidthResource {
 public:
  BandwidthResource() = default;
  explicit BandwidthResource(double bytes_per_s) : rate_(bytes_per_s) {}

  // `now` is the current simulated time: nothing can arrive before it.
  double reserve(double now, double arrival, double bytes);
  double reserve_for(double now, double arrival, double duration);

  double rate() const { return rate_; }
  // A new rate for reservations made from now on (a clock change); booked ones keep theirs.
  void set_rate(double bytes_per_s) { rate_ = bytes_per_s; }
  double busy_s() const { return busy_s_; }
  // End of the last reservation (0 if none is pending).
  double horizon() const { return n_ == 0 ? 0 : buf_[head_ + n_ - 1].second; }
  static constexpr size_t kMaxIntervals = 64;

 private:
  double rate_ = 0;
  double busy_s_ = 0;
  // The calendar: buf_[head_, head_ + n_). Room for a full calendar, the one being inserted, and
  // as many dropped ones before it.
  uint32_t head_ = 0, n_ = 0;
  std::array<calendar::Interval, 2 * (kMaxIntervals + 2)> buf_;
};

// A pipe whose calendar grows as it is booked, up to kMaxIntervals busy intervals: a link of the
// fabric between GPUs, where a collective books all its transfers when it starts (a ring over
// hundreds of GPUs puts thousands of them on each port, which 64 would merge into busy time).
// Few such pipes exist, so their calendars live on the heap.
class LinkPipe {
 public:
  LinkPipe() = default;
  explicit LinkPipe(double bytes_per_s) : rate_(bytes_per_s) {}
  double reserve(double now, double arrival, double bytes);
  double rate() const { return rate_; }
  double busy_s() const { return busy_s_; }
  static constexpr size_t kMaxIntervals = 8192;

 private:
  double rate_ = 0;
  double busy_s_ = 0;
  uint32_t head_ = 0, n_ = 0;
  std::vector<calendar::Interval> buf_;
};

}  // namespace xpusim
