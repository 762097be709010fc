#include "helpers.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "sim/config/config_loader.h"
#include "sim/engine/simulate.h"
#include "sim/trace/trace.h"

namespace xpusim::testing {

std::string source_path(const std::string& rel) { return std::string(XPUSIM_SOURCE_DIR) + "/" + rel; }

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

YAML::Node simulate(const std::string& config_path, const std::string& trace_text, const std::vector<std::string>& overrides) {
  const auto cfg = config::load_config(config_path, overrides);
  const auto tr = trace::load_trace(temp_file(trace_text));
  return YAML::Load(engine::simulate_isolated(cfg, tr));
}

}  // namespace xpusim::testing
