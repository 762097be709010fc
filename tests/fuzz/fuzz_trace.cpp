// The trace loaders: YAML (hand-written) or JSON Lines (generated), by XPUSIM_FUZZ_TRACE_EXT. A
// trace that loads is lowered for an 8-GPU B200 system (every number format, collectives), the
// step that turns its sizes into kernels, and every op's FLOPs and compulsory bytes must be
// finite and not negative. The ops limit is lowered to 100 000 so that one input loads in well
// under the fuzzer's timeout (the limits themselves are tested in tests/sim/watchdog_test.cpp).
#include <cmath>
#include <cstdint>
#include <string>

#include "sim/config/config_loader.h"
#include "sim/config/limits.h"
#include "sim/engine/simulate.h"
#include "sim/trace/trace.h"
#include "sim/config/yaml_util.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const xpusim::config::LoadedConfig system = [] {
    xpusim::limits::current().ops = 100000;
    return xpusim::config::load_config(std::string(XPUSIM_SOURCE_DIR) + "/configs/systems/hgx-b200.yaml");
  }();
  const std::string path = xpusim::fuzz::write_input(data, size, std::string("fuzz") + XPUSIM_FUZZ_TRACE_EXT);
  xpusim::trace::Trace t;
  try {
    t = xpusim::trace::load_trace(path);
  } catch (const xpusim::UserError&) {
    return 0;  // refused with a position: fine
  }
  // Every name that reaches a report can be printed in a table row: not empty, no control characters.
  xpusim::fuzz::require(xpusim::control_character(t.name).empty(), "the trace's name holds a control character");
  for (const auto& op : t.ops) {
    xpusim::fuzz::require(xpusim::name_problem(op.name, "an op name").empty(), "an op name is empty or holds a control character");
    const double f = op.flops(), b = op.min_bytes();
    xpusim::fuzz::require(std::isfinite(f) && f >= 0, "op '" + op.name + "' has FLOPs " + std::to_string(f));
    xpusim::fuzz::require(std::isfinite(b) && b >= 0, "op '" + op.name + "' has compulsory bytes " + std::to_string(b));
    for (size_t d : op.deps) xpusim::fuzz::require(d < t.ops.size(), "op '" + op.name + "' depends on a missing op");
  }
  try {
    xpusim::engine::lower_all(system, t);
  } catch (const xpusim::UserError&) {
    return 0;
  }
  return 0;
}
