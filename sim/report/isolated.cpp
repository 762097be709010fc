#include "sim/report/isolated.h"

#include "sim/error.h"
#include "sim/report/report.h"

namespace xpusim::report {

engine::IsolatedRun start_isolated(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimOptions& opt) {
  return engine::start_isolated([&] {
    engine::SimResult r;
    engine::simulate(cfg, t, r, opt);
    // Thrown here, after the simulation has returned, rather than from inside SystemC.
    if (!r.stall.empty()) throw StallError(r.stall);
    return to_json(cfg, t, r);
  });
}

std::string simulate_isolated(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimOptions& opt) {
  return engine::finish_isolated(start_isolated(cfg, t, opt));
}

}  // namespace xpusim::report
