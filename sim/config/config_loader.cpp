#include "sim/config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "sim/config/chip_kind.h"
#include "sim/config/energy_loader.h"
#include "sim/config/units.h"
#include "sim/config/yaml_util.h"

namespace xpusim::config {
namespace fs = std::filesystem;

namespace {

struct Leaf {
  std::string path;
  YAML::Node node;  // scalar or sequence
  SourceLoc key_loc;
  SourceLoc value_loc;
};

using LeafMap = std::map<std::string, Leaf>;

[[noreturn]] void fail(const SourceLoc& at, const std::string& key, const std::string& msg) {
  throw UserError(at.str() + ": " + (key.empty() ? "" : "key '" + key + "': ") + msg);
}

void flatten(const YAML::Node& map, const std::string& prefix, const std::string& file, LeafMap& out) {
  std::set<std::string> seen_here;  // YAML forbids repeated keys in a mapping; yaml-cpp accepts them
  for (const auto& kv : map) {
    const SourceLoc key_loc = yaml_loc(file, kv.first);
    if (!kv.first.IsScalar()) fail(key_loc, prefix, "keys must be plain names");
    const std::string key = kv.first.Scalar();
    const std::string path = prefix.empty() ? key : prefix + "." + key;
    if (!seen_here.insert(key).second) fail(key_loc, path, "duplicate key (it appears earlier in the same mapping)");
    const YAML::Node& v = kv.second;
    if (v.IsMap()) {
      flatten(v, path, file, out);
    } else {
      out[path] = Leaf{path, v, key_loc, yaml_loc(file, v)};
    }
  }
}

LeafMap load_file(const std::string& path, std::vector<std::string>& chain) {
  std::error_code ec;
  std::string canonical = fs::weakly_canonical(path, ec).string();
  if (ec) canonical = path;
  if (std::find(chain.begin(), chain.end(), canonical) != chain.end())
    throw UserError(path + ": 'extends' forms a cycle through this file");
  chain.push_back(canonical);
  const YAML::Node root = load_yaml_file(path);
  if (!root.IsMap()) fail(yaml_loc(path, root), "", "a config must be a mapping of keys to values");

  LeafMap merged;
  if (const YAML::Node ext = root["extends"]) {
    std::vector<YAML::Node> parents;
    if (ext.IsScalar()) parents.push_back(ext);
    else if (ext.IsSequence()) for (const auto& p : ext) parents.push_back(p);
    else fail(yaml_loc(path, ext), "extends", "must be a file name or a list of file names");
    for (const auto& p : parents) {
      if (!p.IsScalar()) fail(yaml_loc(path, p), "extends", "must be a file name");
      const fs::path parent = fs::path(path).parent_path() / p.Scalar();
      const std::string problem = file_problem(parent.string());
      if (!problem.empty()) fail(yaml_loc(path, p), "extends", "file '" + parent.string() + "' " + problem);
      for (auto& [k, leaf] : load_file(parent.string(), chain)) merged[k] = leaf;  // later parents win
    }
  }
  LeafMap own;
  flatten(root, "", path, own);
  own.erase("extends");
  for (auto& [k, leaf] : own) {
    // A child may replace a whole subtree with a scalar only if the schema allows it; that is
    // checked later. Here the child's value simply wins over every parent value at or below it.
    for (auto it = merged.lower_bound(k + "."); it != merged.end() && it->first.rfind(k + ".", 0) == 0;)
      it = merged.erase(it);
    merged[k] = leaf;
  }
  chain.pop_back();
  return merged;
}

// False when `s` is not a whole number; errno is then ERANGE exactly when it is one beyond 64 bits.
bool parse_integer(const std::string& s, long long& out) {
  errno = 0;
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return errno == 0 && end && *end == '\0';
}

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end && *end == '\0' && std::isfinite(out);
}

std::string range_text(const ParamSpec& spec) {
  auto fmt = [&](double v) {
    if (spec.kind == Kind::Quantity) return units::format(v, spec.dim);
    char b[40];
    std::snprintf(b, sizeof b, "%.15g", v);  // 16777216, not 1.67772e+07
    return std::string(b);
  };
  return "[" + fmt(spec.range.lo) + ", " + fmt(spec.range.hi) + "]";
}

Value to_value(const ParamSpec& spec, const YAML::Node& node, const SourceLoc& at) {
  Value v;
  if (spec.kind == Kind::StringList) {
    if (!node.IsSequence()) fail(at, spec.key, "expected a list, e.g. [a, b]");
    if (node.size() == 0 && spec.need.default_text != "[]") fail(at, spec.key, "expected a non-empty list");
    for (const auto& item : node) {
      if (!item.IsScalar()) fail(at, spec.key, "list items must be plain values");
      v.list.push_back(item.Scalar());
    }
    return v;
  }
  if (!node.IsDefined() || node.IsNull()) fail(at, spec.key, "has no value");
  if (!node.IsScalar()) fail(at, spec.key, "expected a single value, not a list or mapping");
  const std::string s = node.Scalar();
  switch (spec.kind) {
    case Kind::Int: {
      long long n = 0;
      if (!parse_integer(s, n)) {
        double d;
        if (errno == ERANGE) fail(at, spec.key, "'" + s + "' is out of range " + range_text(spec));
        if (parse_double(s, d)) fail(at, spec.key, "'" + s + "' must be a whole number");
        fail(at, spec.key, "'" + s + "' is not an integer" +
                               (s.find_first_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string::npos
                                    ? " (this parameter is a plain count and takes no unit)"
                                    : ""));
      }
      v.number = static_cast<double>(n);
      break;
    }
    case Kind::Float:
      if (!parse_double(s, v.number)) fail(at, spec.key, "'" + s + "' is not a number");
      break;
    case Kind::Quantity:
      try {
        v.number = units::parse(s, spec.dim).value;
      } catch (const std::invalid_argument& e) {
        fail(at, spec.key, e.what());
      }
      break;
    case Kind::Bool:
      if (s == "true") v.flag = true;
      else if (s == "false") v.flag = false;
      else fail(at, spec.key, "'" + s + "' must be true or false");
      return v;
    case Kind::Enum: {
      if (std::find(spec.choices.begin(), spec.choices.end(), s) == spec.choices.end()) {
        std::string list;
        for (const auto& c : spec.choices) list += (list.empty() ? "" : ", ") + c;
        const std::string hint = closest_match(s, spec.choices);
        fail(at, spec.key, "'" + s + "' is not one of: " + list + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
      }
      v.text = s;
      return v;
    }
    case Kind::String:
      v.text = s;
      if (spec.key == "name" || (spec.key.size() > 5 && spec.key.compare(spec.key.size() - 5, 5, ".name") == 0)) {
        if (const std::string why = name_problem(s, "a name"); !why.empty()) fail(at, spec.key, why);
      } else if (spec.key.find("description") == std::string::npos && !control_character(s).empty()) {
        fail(at, spec.key, "may not hold control characters (a newline, a tab)");
      }
      return v;
    case Kind::StringList:
      break;
  }
  if (v.number < spec.range.lo || v.number > spec.range.hi)
    fail(at, spec.key, "value " + s + " is out of range " + range_text(spec));
  return v;
}

std::string leaf_text(const YAML::Node& n) {
  if (n.IsScalar()) return n.Scalar();
  std::string out = "[";
  bool first = true;
  for (const auto& item : n) {
    out += (first ? "" : ", ") + (item.IsScalar() ? item.Scalar() : std::string("?"));
    first = false;
  }
  return out + "]";
}

}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  // Edit distance in which swapping two neighbouring letters ("hmb" for "hbm") is one edit.
  auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

[[noreturn]] void fail_at_key(const LoadedConfig& cfg, const std::string& key, const std::string& msg) {
  for (const auto& e : cfg.entries)
    if (e.spec->key == key) fail(e.source, key, msg);
  throw UserError(cfg.file + ": key '" + key + "': " + msg);
}

namespace {

// Loads the energy table once and checks it fits the chip: present, and of the chip's kind.
void load_table(LoadedConfig& cfg) {
  if (!has_energy_table(cfg)) return;
  const std::string path = energy_table_path(cfg);
  const std::string problem = file_problem(path);
  if (!problem.empty()) fail_at_key(cfg, "energy.table", "energy table '" + path + "' " + problem);
  auto t = std::make_shared<const energy::Table>(load_energy_table(path));  // its own errors name the table's file
  if (t->kind != cfg.chip.kind)
    fail_at_key(cfg, "energy.table", "'" + path + "' is an energy table for another kind of chip (its 'kind' must be " + cfg.chip.kind + ")");
  cfg.energy_table = std::move(t);
}

// The curve with its voltages raised to `floor`, and a point where a segment crosses it, so that
// the line between points stays the curve's (a floor at or below the lowest voltage: unchanged).
std::vector<VfPoint> floored(const std::vector<VfPoint>& curve, double floor) {
  std::vector<VfPoint> out;
  for (size_t i = 0; i < curve.size(); ++i) {
    if (i > 0) {
      const VfPoint& a = curve[i - 1];
      const VfPoint& b = curve[i];
      if (a.voltage_v < floor && b.voltage_v > floor)
        out.push_back({a.clock_hz + (floor - a.voltage_v) / (b.voltage_v - a.voltage_v) * (b.clock_hz - a.clock_hz), floor});
    }
    out.push_back({curve[i].clock_hz, std::max(curve[i].voltage_v, floor)});
  }
  return out;
}

// Parses power.vf_curve ("CLOCK at VOLTAGE") and checks the power section of a capped chip: a
// monotone curve that reaches the boost clock, boost at or above base, and a limit above what
// the chip draws idle at its lowest clock (the governor could never meet it).
void resolve_power(LoadedConfig& cfg) {
  const ChipKind& kind = chip_kind(cfg.chip.kind);
  PowerParams& p = kind.power(cfg.chip);
  p.vf_curve.clear();
  for (size_t i = 0; i < p.vf_curve_text.size(); ++i) {
    const std::string& t = p.vf_curve_text[i];
    const std::string where = "point " + std::to_string(i + 1) + " '" + t + "'";
    const size_t at = t.find(" at ");
    if (at == std::string::npos) fail_at_key(cfg, "power.vf_curve", where + " is not CLOCK at VOLTAGE (e.g. \"1.98 GHz at 0.8 V\")");
    VfPoint v;
    try {
      v.clock_hz = units::parse(t.substr(0, at), units::Dim::Frequency).value;
      v.voltage_v = units::parse(t.substr(at + 4), units::Dim::Voltage).value;
    } catch (const std::invalid_argument& e) {
      fail_at_key(cfg, "power.vf_curve", where + ": " + e.what());
    }
    if (!(v.clock_hz > 0) || !(v.voltage_v > 0)) fail_at_key(cfg, "power.vf_curve", where + ": clock and voltage must be positive");
    if (!p.vf_curve.empty() && (v.clock_hz <= p.vf_curve.back().clock_hz || v.voltage_v < p.vf_curve.back().voltage_v))
      fail_at_key(cfg, "power.vf_curve", where + " is not monotone: clocks must rise from point to point and voltages never fall");
    p.vf_curve.push_back(v);
  }
  if (p.base_clock_hz > 0 && p.boost_clock_hz > 0 && p.boost_clock_hz < p.base_clock_hz)
    fail_at_key(cfg, "power.boost_clock", "is below power.base_clock");
  if (!p.capped()) return;
  if (!cfg.energy_table) fail_at_key(cfg, "power.mode", "capped needs an energy table (energy.table) to price the chip's power");
  kind.power_defaults(cfg.chip, p);
  if (p.boost_clock_hz <= 0) fail_at_key(cfg, "power.boost_clock", "is required when power.mode is capped");
  if (p.vf_curve.empty()) fail_at_key(cfg, "power.vf_curve", "is required when power.mode is capped (at least one point)");
  if (p.voltage_floor_v > 0) {
    if (p.voltage_floor_v > p.vf_curve.back().voltage_v)
      fail_at_key(cfg, "power.voltage_floor",
                  units::format(p.voltage_floor_v, units::Dim::Voltage) + " is above power.vf_curve's highest voltage (" +
                      units::format(p.vf_curve.back().voltage_v, units::Dim::Voltage) + "): every clock would run at the floor");
    p.vf_curve = floored(p.vf_curve, p.voltage_floor_v);
  }
  if (p.boost_clock_hz > p.vf_curve.back().clock_hz * (1 + 1e-9))
    fail_at_key(cfg, "power.boost_clock", "is above the highest clock of power.vf_curve (" +
                                              units::format(p.vf_curve.back().clock_hz, units::Dim::Frequency) + ")");
  if (p.peak_ratio > 0 && p.peak_ratio < 1) fail_at_key(cfg, "power.peak_ratio", "must be 0 (none) or at least 1");
  if (p.control_period_s > p.time_constant_s) fail_at_key(cfg, "power.control_period", "must not exceed power.time_constant");
  const energy::Table& t = *cfg.energy_table;
  const double r = p.vf_curve.front().voltage_v / t.nominal_voltage;
  const double idle = p.idle_floor_w + t.static_power_w * kind.leaking_dies(cfg.chip) * r * r;
  if (p.limit_w <= idle)
    fail_at_key(cfg, "power.limit", "is at or below what the chip draws idle at its lowest clock (" + units::format(idle, units::Dim::Power) +
                                        ": power.idle_floor + leakage); the governor could never meet it");
}

}  // namespace

LoadedConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string problem = file_problem(path);
  if (!problem.empty()) throw UserError(path + ": config file " + problem);
  std::vector<std::string> chain;
  LeafMap leaves = load_file(path, chain);

  for (const auto& o : overrides) {
    const auto eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("--set '" + o + "': expected key.path=value, e.g. --set hbm.data_rate=\"6.4 GT/s\"");
    const std::string key = o.substr(0, eq);
    const std::string text = o.substr(eq + 1);
    YAML::Node node;
    try {
      node = YAML::Load(text);
    } catch (const YAML::Exception&) {
      node = YAML::Node(text);
    }
    if (node.IsNull()) node = YAML::Node(text);
    const SourceLoc at{"--set " + key, 0, 0};
    for (auto it = leaves.lower_bound(key + "."); it != leaves.end() && it->first.rfind(key + ".", 0) == 0;)
      it = leaves.erase(it);
    leaves[key] = Leaf{key, node, at, at};
  }

  LoadedConfig out;
  out.overrides = overrides;
  out.file = path;
  const auto kind_it = leaves.find("kind");
  if (kind_it == leaves.end()) throw UserError(path + ": missing required key 'kind' (one of: " + chip_kinds_text() + ")");
  const Leaf& kind_leaf = kind_it->second;
  if (!kind_leaf.node.IsScalar()) fail(kind_leaf.value_loc, "kind", "expected " + chip_kinds_text(" or "));
  const std::string kind = kind_leaf.node.Scalar();
  const Schema* schema = nullptr;
  try {
    schema = &schema_for(kind);
  } catch (const UserError&) {
    const std::string hint = closest_match(kind, chip_kinds());
    fail(kind_leaf.value_loc, "kind", "'" + kind + "' is not one of: " + chip_kinds_text() +
                                          (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  }

  std::map<std::string, const ParamSpec*> by_key;
  std::set<std::string> section_names;
  std::vector<std::string> all_keys;
  for (const auto& sec : schema->sections) {
    for (const auto& p : sec.params) {
      by_key[p.key] = &p;
      all_keys.push_back(p.key);
      for (size_t dot = p.key.find('.'); dot != std::string::npos; dot = p.key.find('.', dot + 1))
        section_names.insert(p.key.substr(0, dot));
    }
  }
  for (const auto& [key, leaf] : leaves) {
    if (by_key.count(key)) continue;
    if (section_names.count(key)) fail(leaf.value_loc, key, "is a section; expected a mapping of its keys");
    // sm.count: {value: 132} flattens to sm.count.value: the parameter was given a mapping.
    for (size_t dot = key.rfind('.'); dot != std::string::npos && dot > 0; dot = key.rfind('.', dot - 1))
      if (const auto it = by_key.find(key.substr(0, dot)); it != by_key.end() && it->second->kind != Kind::StringList)
        fail(leaf.key_loc, it->first, "expected a single value, not a mapping");
    const std::string hint = closest_match(key, all_keys);
    fail(leaf.key_loc, key, std::string("unknown key for ") + (std::string("aeiou").find(kind[0]) != std::string::npos ? "an " : "a ") + kind + " config" +
                                (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                                "; `xpusim describe` lists every parameter");
  }

  for (const auto& sec : schema->sections) {
    void* target = sec.locate(&out.chip);
    for (const auto& spec : sec.params) {
      ResolvedEntry entry;
      entry.spec = &spec;
      Value value;
      const auto it = leaves.find(spec.key);
      if (it != leaves.end()) {
        value = to_value(spec, it->second.node, it->second.value_loc);
        entry.text = leaf_text(it->second.node);
        entry.source = it->second.value_loc;
      } else if (spec.need.required) {
        throw UserError(path + ": missing required key '" + spec.key + "' (" + spec.description + ")");
      } else {
        YAML::Node def = YAML::Load(spec.need.default_text);
        if (def.IsNull()) def = YAML::Node(spec.need.default_text);
        value = to_value(spec, def, SourceLoc{"<default of " + spec.key + ">", 0, 0});
        entry.text = spec.need.default_text;
      }
      spec.assign(target, value);
      out.entries.push_back(std::move(entry));
    }
  }
  // The energy table is named relative to the file that names it; from here on it is an
  // absolute path, so that the resolved config written with a report loads anywhere.
  if (has_energy_table(out)) {
    const std::string abs = std::filesystem::absolute(energy_table_path(out)).lexically_normal().string();
    energy_config(out.chip).table = abs;
    for (auto& e : out.entries)
      if (e.spec->key == "energy.table") e.text = abs;
  }
  load_table(out);
  chip_kind(out.chip.kind).resolve(out);
  resolve_power(out);
  return out;
}

std::string resolved_yaml(const LoadedConfig& cfg, const std::string& header_comment) {
  std::ostringstream os;
  os << "# " << header_comment << "\n# Each value is followed by where it came from.\n";
  std::vector<std::string> open;  // currently open mapping path components
  for (const auto& e : cfg.entries) {
    std::vector<std::string> parts;
    std::string key = e.spec->key;
    for (size_t pos; (pos = key.find('.')) != std::string::npos; key = key.substr(pos + 1))
      parts.push_back(key.substr(0, pos));
    size_t common = 0;
    while (common < open.size() && common < parts.size() && open[common] == parts[common]) ++common;
    open.resize(common);
    for (size_t i = common; i < parts.size(); ++i) {
      os << std::string(2 * i, ' ') << parts[i] << ":\n";
      open.push_back(parts[i]);
    }
    std::string text = e.text;
    if (e.spec->kind == Kind::String) text = yaml_quote(text);
    os << std::string(2 * parts.size(), ' ') << key << ": " << text << "  # " << e.source.str() << "\n";
  }
  return os.str();
}

}  // namespace xpusim::config
