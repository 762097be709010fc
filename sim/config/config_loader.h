#pragma once
// Loads a hardware description: YAML with units, `extends:` composition and `--set` overrides,
// checked against the parameter tables. Every error names file, line, column and key path.
#include <memory>
#include <string>
#include <vector>

#include "models/energy/energy_table.h"
#include "sim/config/chip_config.h"
#include "sim/error.h"

namespace xpusim::config {

struct ResolvedEntry {
  const ParamSpec* spec = nullptr;
  std::string text;  // the value as written (or the default's text)
  SourceLoc source;  // where it came from
};

struct LoadedConfig {
  std::string file;  // the top-level file as given
  ChipConfig chip;
  std::vector<ResolvedEntry> entries;  // one per declared parameter, in table order
  std::vector<std::string> overrides;  // the --set strings, as given (reports record them)
  // The energy table `energy.table` names, loaded and checked once; null without one.
  std::shared_ptr<const energy::Table> energy_table;
};

// `overrides` are "key.path=value" strings as given to --set.
LoadedConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

// The resolved configuration as YAML that loads again, each value commented with its source.
std::string resolved_yaml(const LoadedConfig& cfg, const std::string& header_comment);

// Throws UserError at the place `key` got its value (its file and line, or the top-level file).
[[noreturn]] void fail_at_key(const LoadedConfig& cfg, const std::string& key, const std::string& msg);

// Closest of `candidates` to `word` by edit distance, or "" if none is close.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace xpusim::config
