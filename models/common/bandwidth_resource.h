#pragma once
// A pipe of fixed bandwidth, timed by reservation. A transfer arriving at time t takes the first
// idle gap at or after t long enough for bytes / bandwidth. Reservations may be made out of
// arrival order (a hit's data is ready before an earlier miss's), so the pipe keeps a calendar
// of busy intervals rather than a single "free at" time; intervals wholly in the past are
// dropped. Times are seconds of simulated time. The calendar holds at most kMaxIntervals busy
// intervals: beyond that the smallest idle gap is given up (merged into its neighbours), which
// bounds the cost of a reservation at the price of a sliver of unused capacity.
#include <cstddef>
#include <utility>
#include <vector>

namespace xpusim {

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
  double horizon() const { return busy_.empty() ? 0 : busy_.back().second; }
  static constexpr size_t kMaxIntervals = 64;

 private:
  double rate_ = 0;
  double busy_s_ = 0;
  std::vector<std::pair<double, double>> busy_;  // [start, end), sorted, disjoint, merged when touching
};

}  // namespace xpusim
