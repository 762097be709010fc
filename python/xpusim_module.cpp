// The Python module's native part (`xpusim._xpusim`): loads a config and a trace as the CLI does
// and simulates in a forked child (SystemC elaborates once per process), returning report.json's
// text. A UserError becomes xpusim.Error, carrying the same file:line:column: key message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <systemc>

#include <cstdlib>
#include <string>
#include <vector>

#include "sim/config/config_loader.h"
#include "sim/config/limits.h"
#include "sim/engine/kernel_cache.h"
#include "sim/engine/simulate.h"
#include "sim/error.h"
#include "sim/report/isolated.h"
#include "sim/trace/trace.h"
#include "sim/version.h"

namespace py = pybind11;
using namespace xpusim;

namespace {

trace::Trace load_trace(const std::string& path, const std::vector<std::string>& trace_set) {
  trace::Trace t = trace::load_trace(path);
  for (const std::string& x : trace_set) {
    const size_t eq = x.find('=');
    if (eq == std::string::npos || eq == 0) throw UserError("trace_set '" + x + "': expected key=value, e.g. dtype=fp8");
    trace::apply_override(t, x.substr(0, eq), x.substr(eq + 1));
  }
  return t;
}

std::string run(const std::string& config, const std::string& trace, const std::vector<std::string>& set,
                const std::vector<std::string>& trace_set, const std::string& fidelity, double tolerance,
                const std::string& kernel_cache, const std::string& kernel_cache_out) {
  engine::SimOptions opt;
  if (fidelity == "fast") opt.fidelity = engine::Fidelity::fast;
  else if (fidelity != "exact") throw UserError("fidelity must be 'fast' or 'exact', got '" + fidelity + "'");
  if (!(tolerance > 0 && tolerance <= 0.5)) throw UserError("tolerance must be above 0 and at most 0.5");
  opt.tolerance = tolerance;
  if (!kernel_cache.empty() && opt.fidelity != engine::Fidelity::fast)
    throw UserError("kernel_cache applies to fidelity 'fast' (kernels replayed from a record)");
  if (kernel_cache.empty() && !kernel_cache_out.empty())
    throw UserError("kernel_cache_out goes with kernel_cache (the file whose records the run reuses)");
  opt.kernel_cache = kernel_cache;
  opt.kernel_cache_out = kernel_cache_out;
  const config::LoadedConfig cfg = config::load_config(config, set);
  const trace::Trace t = load_trace(trace, trace_set);
  // The fork with the interpreter lock held: no other Python thread is then inside a library
  // call (a config load, a log line) whose locks the child would inherit held. The child
  // simulates; other Python threads run while this one waits for its report.
  const engine::IsolatedRun child = report::start_isolated(cfg, t, opt);
  // Ctrl-C (or any signal whose Python handler raises) stops the child within a tenth of a
  // second: the interpreter runs its handlers only when this thread asks, with the lock held.
  bool raised = false;
  auto interrupted = [&raised] {
    py::gil_scoped_acquire locked;
    raised = PyErr_CheckSignals() != 0;
    return raised;
  };
  try {
    py::gil_scoped_release unlocked;
    return engine::finish_isolated(child, interrupted);
  } catch (const engine::Interrupted&) {
    throw py::error_already_set();  // the handler's exception (KeyboardInterrupt), set when it ran
  }
}

void check(const std::string& config, const std::string& trace, const std::vector<std::string>& set,
           const std::vector<std::string>& trace_set) {
  std::optional<config::LoadedConfig> cfg;
  if (!config.empty()) cfg = config::load_config(config, set);
  if (!trace.empty()) {
    const trace::Trace t = load_trace(trace, trace_set);
    if (cfg) engine::lower_all(*cfg, t);
  }
}

// The config's resolved values as text, by dotted key (what `xpusim describe --config` prints,
// without the comments that say where each came from).
py::dict resolved(const std::string& config, const std::vector<std::string>& set) {
  const config::LoadedConfig cfg = config::load_config(config, set);
  py::dict out;
  for (const auto& e : cfg.entries) out[py::str(e.spec->key)] = e.text;
  return out;
}

}  // namespace

PYBIND11_MODULE(_xpusim, m) {
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  sc_core::sc_report_handler::set_actions(sc_core::SC_INFO, sc_core::SC_DO_NOTHING);  // "simulation stopped by user"
  m.doc() = "xpusim's native part; use the xpusim package";
  py::register_exception<UserError>(m, "Error", PyExc_ValueError);
  m.attr("__version__") = kVersion;
  engine::read_engine_digest();  // the kernel cache's: of the module as loaded
  // The source tree the module was built from: its configs/runtimes/ and the serving package
  // that `xpusim serve` (and so xpusim.serve()) runs.
  m.attr("source_dir") = XPUSIM_SOURCE_DIR;
  m.def("run", &run, py::arg("config"), py::arg("trace"), py::arg("set"), py::arg("trace_set"), py::arg("fidelity"),
        py::arg("tolerance"), py::arg("kernel_cache") = "", py::arg("kernel_cache_out") = "",
        "Simulates; returns report.json's text. kernel_cache: a kernel cache file whose records the run reuses "
        "(fast fidelity), its new ones appended there or to kernel_cache_out");
  m.def("resolved", &resolved, py::arg("config"), py::arg("set"),
        "The config's resolved values as text, by dotted key (`xpusim describe --config` without the sources)");
  m.def("check", &check, py::arg("config"), py::arg("trace"), py::arg("set"), py::arg("trace_set"),
        "Loads and checks a config and/or a trace (with both, that every op lowers onto the chip)");
}
