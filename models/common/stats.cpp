#include "models/common/stats.h"

#include <cassert>

namespace xpusim {

Stat& StatRegistry::add(const std::string& name, const std::string& unit, const std::string& description) {
#ifndef NDEBUG
  for (const auto& s : stats_) assert(s.name != name && "statistic registered twice");
#endif
  stats_.push_back(Stat{name, unit, description, 0});
  return stats_.back();
}

}  // namespace xpusim
