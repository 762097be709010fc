// The config loader: YAML with units, `extends:` (resolved against links to the shipped configs)
// and `--set` overrides, which the input gives as comment lines "#--set key=value". A config it
// accepts must load again from its own resolved form (`xpusim config --resolved`) to the same
// values.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "sim/config/config_loader.h"
#include "sim/config/yaml_util.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> overrides;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("#--set ", 0) == 0) overrides.push_back(line.substr(7));
  const std::string path = xpusim::fuzz::write_input(data, size, "fuzz.yaml");
  xpusim::config::LoadedConfig cfg;
  try {
    cfg = xpusim::config::load_config(path, overrides);
  } catch (const xpusim::UserError&) {
    return 0;  // refused with a position: fine
  }
  // The chip's name reaches every report's tables: not empty, no control characters.
  xpusim::fuzz::require(xpusim::name_problem(cfg.chip.name, "the chip's name").empty(), "the chip's name is empty or holds a control character");
  const std::string resolved = xpusim::config::resolved_yaml(cfg, "fuzz");
  const std::string again_path = xpusim::fuzz::write_input(reinterpret_cast<const uint8_t*>(resolved.data()),
                                                           resolved.size(), "resolved.yaml");
  xpusim::config::LoadedConfig again;
  try {
    again = xpusim::config::load_config(again_path);
  } catch (const xpusim::UserError& e) {
    xpusim::fuzz::require(false, std::string("the resolved config does not load: ") + e.what());
  }
  xpusim::fuzz::require(again.entries.size() == cfg.entries.size(), "the resolved config has other keys");
  for (size_t i = 0; i < cfg.entries.size(); ++i)
    xpusim::fuzz::require(again.entries[i].text == cfg.entries[i].text,
                          "key " + cfg.entries[i].spec->key + " resolves to '" + cfg.entries[i].text +
                              "' but loads back as '" + again.entries[i].text + "'");
  return 0;
}
