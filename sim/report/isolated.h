#pragma once
// One simulation in a forked child (engine/isolated.h), its report JSON returned: for the tests
// and the Python API, which run many simulations in one process.
#include <string>

#include "sim/config/config_loader.h"
#include "sim/engine/isolated.h"
#include "sim/engine/simulate.h"
#include "sim/trace/trace.h"

namespace xpusim::report {

// Simulates `t` on `cfg` in a child and returns report::to_json of the result. A UserError in
// the child comes back as a UserError here; a stalled simulation as a StallError.
std::string simulate_isolated(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimOptions& opt = {});

// The same in two halves (engine/isolated.h says why): engine::finish_isolated returns the JSON.
engine::IsolatedRun start_isolated(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimOptions& opt = {});

}  // namespace xpusim::report
