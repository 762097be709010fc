#pragma once
// Shared test helpers: temporary input files, shipped paths, and simulation in a child process.
#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <vector>

namespace xpusim {
class KernelProgram;
struct StepWork;
}  // namespace xpusim

namespace xpusim::testing {

std::string source_path(const std::string& rel);  // path under the repository
// The shipped H100 SXM config, which most simulation tests run on.
inline const std::string kH100 = source_path("configs/h100-sxm.yaml");
// A number of a parsed report.
inline double d(const YAML::Node& n) { return n.as<double>(); }
// Writes `text` to a fresh temporary file with this name suffix and returns its path.
std::string temp_file(const std::string& text, const std::string& suffix = ".yaml");
// A trace of one collective named c: `kind`, `bytes` (a whole count) and `extra` keys (", algorithm: ring").
std::string one_collective(const std::string& kind, double bytes, const std::string& extra = "");
// Loads config + trace, simulates in a forked child, returns the parsed report.json.
YAML::Node simulate(const std::string& config_path, const std::string& trace_text,
                    const std::vector<std::string>& overrides = {});
// Every piece of work a kernel program describes, in order: each CTA's prologue, its steps and
// its epilogue, each handed to `f` as the program fills it.
void for_each_work(const KernelProgram& p, const std::function<void(const StepWork&)>& f);
// The message of the UserError `f` throws, or "" if it throws none.
template <class F>
std::string error_of(F&& f);

}  // namespace xpusim::testing

#include "sim/error.h"
template <class F>
std::string xpusim::testing::error_of(F&& f) {
  try {
    f();
  } catch (const xpusim::UserError& e) {
    return e.what();
  }
  return "";
}
