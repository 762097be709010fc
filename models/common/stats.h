#pragma once
// Typed statistics registered once with name, unit and description. Models keep references and
// add to `value` directly: no string lookups on hot paths. Derived figures (bandwidth,
// utilisation) are computed when the report is written.
#include <deque>
#include <string>

namespace xpusim {

struct Stat {
  std::string name;  // hierarchical, e.g. "gpu.l2.read_hit_sectors"
  std::string unit;  // "bytes", "sectors", "s", "instructions", ...
  std::string description;
  double value = 0;
};

class StatRegistry {
 public:
  Stat& add(const std::string& name, const std::string& unit, const std::string& description);
  const std::deque<Stat>& all() const { return stats_; }
  Stat& at(size_t i) { return stats_.at(i); }

 private:
  std::deque<Stat> stats_;  // deque: references stay valid as stats are added
};

}  // namespace xpusim
