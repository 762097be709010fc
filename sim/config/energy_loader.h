#pragma once
// Loads configs/energy/<node>.yaml into an energy::Table; every problem is a UserError naming
// file, line, column and key. docs/energy-model.md describes the format.
#include <string>

#include "models/energy/energy_table.h"
#include "sim/config/config_loader.h"

namespace xpusim::config {

energy::Table load_energy_table(const std::string& path);

// The table a chip config names (energy.table, resolved against the file that set it), or
// nullptr-like empty optional when the config names none.
EnergyConfig& energy_config(ChipConfig& chip);
const EnergyConfig& energy_config(const ChipConfig& chip);
bool has_energy_table(const LoadedConfig& cfg);
std::string energy_table_path(const LoadedConfig& cfg);

}  // namespace xpusim::config
