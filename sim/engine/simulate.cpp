#include "sim/engine/simulate.h"

#include "sim/engine/target.h"

namespace xpusim::engine {

const char* fidelity_name(Fidelity f) { return f == Fidelity::fast ? "fast" : "exact"; }

std::vector<lower::LoweredOp> lower_all(const config::LoadedConfig& cfg, const trace::Trace& t) {
  return target_for(cfg.chip.kind).lower_all(cfg, t);
}

void simulate(const config::LoadedConfig& cfg, const trace::Trace& t, SimResult& out, const SimOptions& opt) {
  out.fidelity = opt.fidelity;
  out.tolerance = opt.fidelity == Fidelity::fast ? opt.tolerance : 0;
  target_for(cfg.chip.kind).run(cfg, t, out, opt);
}

}  // namespace xpusim::engine
