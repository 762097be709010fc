#pragma once
// A chip kind's part in the config layer: its parameter table, where its energy and power
// sections live in ChipConfig, and the rules that tie its parameters together. Each kind that a
// config's `kind:` names is listed once in chip_kinds.cpp; the engine's side of a kind is its
// engine::Target (sim/engine/target.h), the report's its builder in report.cpp
// (docs/architecture.md, "Chip kinds").
#include <string>
#include <vector>

#include "sim/config/config_loader.h"

namespace xpusim::config {

struct ChipKind {
  const char* name;  // as `kind:` gives it
  const Schema& (*schema)();
  EnergyConfig& (*energy)(ChipConfig& chip);
  PowerParams& (*power)(ChipConfig& chip);
  // After the values are read and the energy table loaded: the rules that tie parameters
  // together and the values derived from others, each failure at its key (fail_at_key).
  void (*resolve)(LoadedConfig& cfg);
  // power.mode capped: what the kind fills in where the config leaves it out (an accelerator's
  // V/f curve from its operating points), and how many dies leak the table's static power.
  void (*power_defaults)(const ChipConfig& chip, PowerParams& p);
  int (*leaking_dies)(const ChipConfig& chip);
};

// The kind named `name`, and its parameter table; throw UserError for a name no kind has.
const ChipKind& chip_kind(const std::string& name);
const Schema& schema_for(const std::string& kind);
std::vector<std::string> chip_kinds();  // every kind's name, in the order listed
// The names joined: "gpu, accelerator", or with `sep` " or ": "gpu or accelerator".
std::string chip_kinds_text(const std::string& sep = ", ");

// The kinds (gpu_kind.cpp, accelerator_kind.cpp), and their parameter tables (schema.cpp).
const ChipKind& gpu_kind();
const ChipKind& accelerator_kind();
const Schema& gpu_schema();
const Schema& accelerator_schema();

}  // namespace xpusim::config
