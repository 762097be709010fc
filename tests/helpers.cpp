#include "helpers.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "models/sm/kernel_program.h"
#include "sim/config/config_loader.h"
#include "sim/engine/simulate.h"
#include "sim/report/isolated.h"
#include "sim/trace/trace.h"

namespace xpusim::testing {

std::string source_path(const std::string& rel) { return std::string(XPUSIM_SOURCE_DIR) + "/" + rel; }

void for_each_work(const KernelProgram& p, const std::function<void(const StepWork&)>& f) {
  for (uint64_t c = 0; c < p.num_ctas(); ++c) {
    StepWork w;
    p.prologue(c, w);
    f(w);
    for (uint64_t s = 0; s < p.steps(c); ++s) {
      w.clear();
      p.step(c, s, w);
      f(w);
    }
    w.clear();
    p.epilogue(c, w);
    f(w);
  }
}

std::string temp_file(const std::string& text, const std::string& suffix) {
  std::string pattern = "/tmp/xpusim-test-XXXXXX" + suffix;
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  const int fd = mkstemps(buf.data(), static_cast<int>(suffix.size()));
  if (fd < 0) throw std::runtime_error("mkstemps failed");
  close(fd);
  std::ofstream(buf.data()) << text;
  return buf.data();
}

std::string one_collective(const std::string& kind, double bytes, const std::string& extra) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f", bytes);
  return "xpusim_trace: 1\nops:\n  - {name: c, kind: " + kind + ", bytes: " + buf + extra + "}\n";
}

YAML::Node simulate(const std::string& config_path, const std::string& trace_text, const std::vector<std::string>& overrides) {
  const auto cfg = config::load_config(config_path, overrides);
  const auto tr = trace::load_trace(temp_file(trace_text));
  return YAML::Load(report::simulate_isolated(cfg, tr));
}

}  // namespace xpusim::testing
