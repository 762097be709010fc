#pragma once
// A pipe of fixed bandwidth, timed by reservation. A transfer arriving at time t takes the first
// idle gap at or after t long enough for bytes / bandwidth. Reservations may be made out of
// arrival order (a hit's data is ready before an earlier miss's), so the pipe keeps a calendar
// of busy intervals rather than a single "free at" time; intervals wholly in the past are
// dropped. Times are seconds of simulated time.
#include <map>

namespace xpusim {

class BandwidthResource {
 public:
  BandwidthResource() = default;
  explicit BandwidthResource(double bytes_per_s) : rate_(bytes_per_s) {}

  // `now` is the current simulated time: nothing can arrive before it.
  double reserve(double now, double arrival, double bytes);
  double reserve_for(double now, double arrival, double duration);

  double rate() const { return rate_; }
  double busy_s() const { return busy_s_; }

 private:
  double rate_ = 0;
  double busy_s_ = 0;
  std::map<double, double> busy_;  // start -> end, disjoint, merged when touching
};

}  // namespace xpusim
