#include "sim/config/energy_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "sim/config/chip_kind.h"
#include "sim/config/units.h"
#include "sim/config/yaml_util.h"
#include "sim/error.h"

namespace xpusim::config {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void fail(const SourceLoc& at, const std::string& key, const std::string& msg) {
  throw UserError(at.str() + ": " + (key.empty() ? "" : "key '" + key + "': ") + msg);
}

double quantity(const std::string& file, const YAML::Node& n, const std::string& key, units::Dim dim) {
  if (!n.IsScalar()) fail(yaml_loc(file, n), key, "expected a quantity with a unit");
  try {
    const double v = units::parse(n.Scalar(), dim).value;
    if (v < 0) fail(yaml_loc(file, n), key, "must not be negative");
    return v;
  } catch (const std::invalid_argument& e) {
    fail(yaml_loc(file, n), key, e.what());
  }
}

energy::Table load(const std::string& path, int depth) {
  if (depth > 8) throw UserError(path + ": 'base' tables nest more than 8 deep (a cycle?)");
  if (const std::string problem = file_problem(path); !problem.empty()) throw UserError(path + ": energy table " + problem);
  const YAML::Node root = load_yaml_file(path);
  if (!root.IsMap()) fail(yaml_loc(path, root), "", "an energy table must be a mapping");
  const std::set<std::string> keys = {"node", "kind", "description", "base", "dynamic_scale", "nominal_voltage",
                                      "static_power", "idle_power", "threshold_voltage", "alpha", "actions",
                                      "class_scale", "data_dependent_share"};
  std::string kind = "gpu";
  if (const YAML::Node k = root["kind"]) {
    const std::vector<std::string> kinds = chip_kinds();
    if (!k.IsScalar() || std::find(kinds.begin(), kinds.end(), k.Scalar()) == kinds.end())
      fail(yaml_loc(path, k), "kind", "expected " + chip_kinds_text(" or "));
    kind = k.Scalar();
  }
  const std::vector<energy::ActionSpec>& list = energy::actions(kind);
  std::vector<std::string> names;
  for (const auto& a : list) names.push_back(a.name);
  for (const auto& kv : root) {
    const std::string k = kv.first.Scalar();
    if (!keys.count(k)) {
      const std::string hint = closest_match(k, {keys.begin(), keys.end()});
      fail(yaml_loc(path, kv.first), k, "unknown key in an energy table" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
  }
  energy::Table t;
  t.file = path;
  t.kind = kind;
  bool have_static = false, have_idle = false, have_voltage = false;
  if (const YAML::Node b = root["base"]) {
    if (!b.IsScalar()) fail(yaml_loc(path, b), "base", "expected a file name");
    const fs::path base = fs::path(path).parent_path() / b.Scalar();
    t = load(base.string(), depth + 1);
    t.file = path;
    if (t.kind != kind) fail(yaml_loc(path, b), "base", "is a table for kind '" + t.kind + "', this one for '" + kind + "'");
    have_static = have_idle = have_voltage = true;
    double scale = 1;
    if (const YAML::Node s = root["dynamic_scale"]) {
      if (!s.IsScalar()) fail(yaml_loc(path, s), "dynamic_scale", "expected a number");
      try {
        scale = std::stod(s.Scalar());
      } catch (const std::exception&) {
        fail(yaml_loc(path, s), "dynamic_scale", "expected a number, got '" + s.Scalar() + "'");
      }
      if (!(scale > 0 && scale <= 100)) fail(yaml_loc(path, s), "dynamic_scale", "must be in (0, 100]");
    }
    for (auto& [name, j] : t.joules) j *= scale;
    // Per-class factors on the base's actions (a fit of a few factors to measured power:
    // docs/energy-model.md), before this table's own actions.
    if (const YAML::Node cs = root["class_scale"]) {
      if (!cs.IsMap()) fail(yaml_loc(path, cs), "class_scale", "expected a mapping of energy class to factor");
      for (const auto& kv : cs) {
        const std::string cls = kv.first.Scalar();
        std::vector<std::string> classes;
        for (int c = 0; c < 5; ++c) classes.push_back(energy::class_name(static_cast<energy::Class>(c)));
        const auto it = std::find(classes.begin(), classes.end(), cls);
        if (it == classes.end()) {
          const std::string hint = closest_match(cls, classes);
          fail(yaml_loc(path, kv.first), "class_scale." + cls,
               "unknown energy class" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
        }
        const double f = quantity(path, kv.second, "class_scale." + cls, units::Dim::None);
        if (!(f > 0 && f <= 100)) fail(yaml_loc(path, kv.second), "class_scale." + cls, "must be in (0, 100]");
        for (const auto& a : list)
          if (energy::class_name(a.cls) == cls && t.joules.count(a.name)) t.joules[a.name] *= f;
      }
    }
  } else if (root["dynamic_scale"] || root["class_scale"]) {
    const char* k = root["dynamic_scale"] ? "dynamic_scale" : "class_scale";
    fail(yaml_loc(path, root[k]), k, "scales a base table; name one with 'base'");
  }
  if (const YAML::Node v = root["data_dependent_share"]) {
    t.data_dependent_share = quantity(path, v, "data_dependent_share", units::Dim::None);
    if (t.data_dependent_share > 1) fail(yaml_loc(path, v), "data_dependent_share", "must be in [0, 1]");
  }
  if (root["node"]) t.node = root["node"].Scalar();
  if (const YAML::Node v = root["nominal_voltage"]) {
    t.nominal_voltage = quantity(path, v, "nominal_voltage", units::Dim::Voltage);
    have_voltage = true;
  }
  if (const YAML::Node v = root["static_power"]) {
    t.static_power_w = quantity(path, v, "static_power", units::Dim::Power);
    have_static = true;
  }
  if (const YAML::Node v = root["idle_power"]) {
    t.idle_power_w = quantity(path, v, "idle_power", units::Dim::Power);
    have_idle = true;
  }
  if (const YAML::Node v = root["threshold_voltage"]) t.threshold_voltage = quantity(path, v, "threshold_voltage", units::Dim::Voltage);
  if (const YAML::Node v = root["alpha"]) {
    t.alpha = quantity(path, v, "alpha", units::Dim::None);
    if (t.alpha < 1 || t.alpha > 2) fail(yaml_loc(path, v), "alpha", "must be in [1, 2] (1: velocity-saturated, 2: long-channel)");
  }
  if (t.alpha == 0) throw UserError(path + ": missing required key 'alpha' (alpha-power law exponent)");
  if (t.threshold_voltage >= t.nominal_voltage && have_voltage)
    throw UserError(path + ": threshold_voltage must be below nominal_voltage");
  if (!have_voltage || t.nominal_voltage <= 0) throw UserError(path + ": missing required key 'nominal_voltage' (a positive voltage)");
  if (!have_static) throw UserError(path + ": missing required key 'static_power'");
  if (!have_idle) throw UserError(path + ": missing required key 'idle_power'");
  if (const YAML::Node acts = root["actions"]) {
    if (!acts.IsMap()) fail(yaml_loc(path, acts), "actions", "expected a mapping of action to energy");
    for (const auto& kv : acts) {
      const std::string name = kv.first.Scalar();
      const energy::ActionSpec* spec = nullptr;
      for (const auto& a : list)
        if (a.name == name) spec = &a;
      if (!spec) {
        const std::string hint = closest_match(name, names);
        fail(yaml_loc(path, kv.first), "actions." + name,
             "unknown action" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") + "; docs/energy-model.md lists them");
      }
      t.joules[name] = quantity(path, kv.second, "actions." + name,
                                spec->per_bit ? units::Dim::EnergyPerBit : units::Dim::Energy);
    }
  }
  if (depth == 0)
    for (const auto& a : list)
      if (!t.joules.count(a.name) && !a.optional)
        throw UserError(path + ": missing action 'actions." + a.name + "' (" + a.meaning + ")");
  return t;
}

}  // namespace

energy::Table load_energy_table(const std::string& path) { return load(path, 0); }

EnergyConfig& energy_config(ChipConfig& chip) { return chip_kind(chip.kind).energy(chip); }
const EnergyConfig& energy_config(const ChipConfig& chip) {
  return chip_kind(chip.kind).energy(const_cast<ChipConfig&>(chip));  // read only: the kinds' accessors are shared
}

bool has_energy_table(const LoadedConfig& cfg) { return !energy_config(cfg.chip).table.empty(); }

std::string energy_table_path(const LoadedConfig& cfg) {
  const std::string& rel = energy_config(cfg.chip).table;
  if (fs::path(rel).is_absolute()) return rel;
  for (const auto& e : cfg.entries)
    if (e.spec->key == "energy.table" && !e.source.file.empty() && e.source.line > 0)
      return (fs::path(e.source.file).parent_path() / rel).string();
  return (fs::path(cfg.file).parent_path() / rel).string();
}

}  // namespace xpusim::config
