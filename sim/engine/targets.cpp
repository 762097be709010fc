#include <string>
#include <utility>

#include "sim/engine/target.h"
#include "sim/error.h"

namespace xpusim::engine {

// Every chip kind the engine runs, by the name a config's `kind:` gives. A new kind adds its
// Target's file and a line here.
const Target& target_for(const std::string& kind) {
  static const std::pair<const char*, const Target*> kTargets[] = {
      {"gpu", &gpu_target()},
      {"accelerator", &accelerator_target()},
  };
  std::string names;
  for (const auto& [name, target] : kTargets) {
    if (kind == name) return *target;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw UserError("chip kind '" + kind + "' has no engine target (one of: " + names + ")");
}

}  // namespace xpusim::engine
