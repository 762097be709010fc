#include <boost/program_options.hpp>
#include <algorithm>
#include <ostream>

#include "sim/cli/command.h"
#include "sim/config/chip_kind.h"
#include "sim/config/config_loader.h"
#include "sim/config/units.h"

namespace xpusim::cli::detail {
namespace po = boost::program_options;
namespace {

std::string kind_text(const config::ParamSpec& p) {
  switch (p.kind) {
    case config::Kind::Int: return "integer";
    case config::Kind::Float: return "number";
    case config::Kind::Quantity: return units::dim_name(p.dim);
    case config::Kind::Bool: return "true|false";
    case config::Kind::Enum: {
      std::string s;
      for (const auto& c : p.choices) s += (s.empty() ? "" : "|") + c;
      return s;
    }
    case config::Kind::String: return "text";
    case config::Kind::StringList: return "list";
  }
  return "?";
}

std::string range_text(const config::ParamSpec& p) {
  if (p.kind != config::Kind::Int && p.kind != config::Kind::Float && p.kind != config::Kind::Quantity) return "";
  auto f = [&](double v) {
    if (p.kind == config::Kind::Quantity) return units::format(v, p.dim);
    return units::format(v, units::Dim::None);
  };
  return "[" + f(p.range.lo) + ", " + f(p.range.hi) + "]";
}

}  // namespace

int cmd_describe(const std::string& cmd, const std::vector<std::string>& args, std::ostream& out) {
  po::options_description d(
      "xpusim describe: every parameter of every model, or a config's resolved values\n\n"
      "usage: xpusim describe [--kind " + config::chip_kinds_text("|") + "] [--model SECTION] [--format text|markdown]\n"
      "       xpusim describe --config FILE [--set key=value ...]\n\noptions");
  const std::string kind_help = "only this chip kind: " + config::chip_kinds_text(" or ");
  d.add_options()("help,h", "show this help")
      ("config,c", po::value<std::string>(), "show this config's resolved values and where each came from")
      ("set,s", po::value<std::vector<std::string>>()->composing(), "override a config value (repeatable)")
      ("kind,k", po::value<std::string>(), kind_help.c_str())
      ("model,m", po::value<std::string>(), "only this section, e.g. sm, l2, hbm")
      ("format,f", po::value<std::string>()->default_value("text"), "text or markdown");
  const auto parsed = parse_command(cmd, args, d, out);
  if (!parsed) return 0;  // --help was printed
  const po::variables_map& vm = *parsed;
  const std::string format = vm["format"].as<std::string>();
  if (format != "text" && format != "markdown") throw UsageError("xpusim describe: --format must be text or markdown");
  if (vm.count("config")) {
    if (vm.count("kind") || vm.count("model"))
      throw UsageError("xpusim describe: --config prints that config's resolved values, every section; --kind and "
                       "--model select the parameter tables without --config");
    const auto cfg = config::load_config(vm["config"].as<std::string>(), sets(vm));
    out << config::resolved_yaml(cfg, cfg.chip.name + " (" + cfg.chip.kind + "): " + cfg.chip.description);
    return 0;
  }
  std::vector<std::string> kinds = config::chip_kinds();
  if (vm.count("kind")) {
    const std::string k = vm["kind"].as<std::string>();
    if (std::find(kinds.begin(), kinds.end(), k) == kinds.end())
      throw UsageError("xpusim describe: --kind " + k + ": no such chip kind (expected " + config::chip_kinds_text(" or ") + ")");
    kinds = {k};
  }
  const std::string model = vm.count("model") ? vm["model"].as<std::string>() : "";
  bool found = model.empty();
  for (const auto& k : kinds) {
    const config::Schema& s = config::schema_for(k);
    if (format == "markdown") out << "## Chip kind `" << k << "`\n\n";
    else out << "== chip kind: " << k << " ==\n";
    for (const auto& sec : s.sections) {
      if (!model.empty() && sec.name != model) continue;
      found = true;
      const std::string title = sec.name.empty() ? "(top level)" : sec.name;
      if (format == "markdown") {
        out << "### `" << title << "`: " << sec.description << "\n\n| key | type | default | range | meaning |\n|---|---|---|---|---|\n";
        for (const auto& p : sec.params) {
          std::string type = kind_text(p);  // "gpu|accelerator" would split the table row
          for (size_t i = 0; (i = type.find('|', i)) != std::string::npos; i += 2) type.replace(i, 1, "\\|");
          out << "| `" << p.key << "` | " << type << " | " << (p.need.required ? "**required**" : "`" + p.need.default_text + "`")
              << " | " << range_text(p) << " | " << p.description << " |\n";
        }
        out << "\n";
      } else {
        out << "\n[" << title << "] " << sec.description << "\n";
        for (const auto& p : sec.params) {
          out << "  " << p.key << " (" << kind_text(p) << ")";
          out << (p.need.required ? "  required" : "  default " + p.need.default_text);
          const std::string r = range_text(p);
          if (!r.empty()) out << "  range " << r;
          out << "\n      " << p.description << "\n";
        }
      }
    }
    out << "\n";
  }
  if (!found) {
    std::vector<std::string> names;
    for (const auto& k : kinds)
      for (const auto& sec : config::schema_for(k).sections)
        if (!sec.name.empty()) names.push_back(sec.name);
    const std::string hint = config::closest_match(model, names);
    throw UsageError("xpusim describe: no model section '" + model + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  }
  return 0;
}

}  // namespace xpusim::cli::detail
