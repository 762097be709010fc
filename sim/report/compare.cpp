#include "sim/report/compare.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/config/units.h"
#include "sim/config/yaml_util.h"
#include "sim/error.h"
#include "sim/io/csv.h"
#include "sim/io/json_strict.h"

namespace xpusim::report {
namespace {

struct Run {
  std::string label, chip, trace, bound;
  std::string overrides;  // "--set a=1 --trace-set dtype=fp8", as report.json records them
  bool integer = false;   // most of its work in integer formats: throughput in TOPS
  std::map<std::string, double> classes;  // energy by class, J
  double time = 0, tflops = 0, energy = 0, topsw = 0, topsw_on_chip = 0, tokens = 0;
  int gpus = 1;
  bool has_energy = false;
};

// A number of report.json, or a WrongField naming its key when it is not one.
struct WrongField {
  std::string key, why;
};
double get(const YAML::Node& n, std::initializer_list<const char*> path, bool* found = nullptr) {
  const YAML::Node v = find_path(n, path);
  if (found) *found = v.IsDefined();
  if (!v.IsDefined()) return 0;
  std::string key;
  for (const char* k : path) key += (key.empty() ? "" : ".") + std::string(k);
  double d = 0;
  if (!v.IsScalar() || !YAML::convert<double>::decode(v, d) || !std::isfinite(d)) throw WrongField{key, "expected a number"};
  return d;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// `v` with an SI prefix, four significant digits at most: 665 TOPS, 1.515 MFLOP/s, 12.4 GOPS/W.
std::string si(double v, const char* unit) {
  static const char* kPrefix[] = {"", "k", "M", "G", "T", "P", "E"};
  int i = 0;
  while (i < 6 && std::abs(v) >= 1000) v /= 1000, ++i;
  return fmt("%.4g ", v) + kPrefix[i] + unit;
}

}  // namespace

Comparison compare_runs(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  if (paths.size() < 2) throw UserError("xpusim compare: give two or more runs (output folders or report.json files)");
  std::vector<Run> runs;
  for (const std::string& p : paths) {
    std::error_code ec;
    const fs::path file = fs::is_directory(p, ec) ? fs::path(p) / "report.json" : fs::path(p);
    if (!file_problem(file.string()).empty()) throw UserError(file.string() + ": no report (run `xpusim run --out " + p + "` first)");
    YAML::Node r;
    try {
      check_input_file(file.string(), true);
      std::ifstream in(file, std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      io::check_strict_json(text.str(), file.string(), 1);
      r = YAML::Load(text.str());
      if (!r.IsMap() || !r["xpusim_report"] || !r["total"]) throw UserError("");
      if (!r["xpusim_report"].IsScalar() || r["xpusim_report"].Scalar() != "1")
        throw UserError(file.string() + ": report format version '" + (r["xpusim_report"].IsScalar() ? r["xpusim_report"].Scalar() : "?") +
                        "' (this build reads 1)");
    } catch (const UserError& e) {
      throw UserError(std::string(e.what()).empty() ? file.string() + ": not an xpusim report.json"
                                                     : std::string(e.what()) + " (not an xpusim report.json)");
    } catch (const std::exception&) {
      throw UserError(file.string() + ": not an xpusim report.json");
    }
    Run x;
    try {  // a field of the wrong type (a string where a number belongs) is bad input, not an internal error
      x.label = fs::is_directory(p) ? fs::path(p).lexically_normal().filename().string()
                                    : fs::path(p).parent_path().filename().string();
      if (x.label.empty()) x.label = p;
      x.chip = r["config"]["name"].Scalar();
      x.trace = r["trace"]["name"].Scalar();
      x.bound = r["total"]["bound"].Scalar();
      for (const auto& [section, flag] : {std::pair{"config", "--set "}, std::pair{"trace", "--trace-set "}})
        if (const YAML::Node s = r[section]["set"]; s && s.IsSequence())
          for (const auto& o : s) x.overrides += (x.overrides.empty() ? "" : " ") + std::string(flag) + o.Scalar();
      x.time = get(r, {"total", "time_s"});
      x.tflops = get(r, {"total", "tflops"});
      x.energy = get(r, {"total", "energy", "total_j"}, &x.has_energy);
      x.topsw = get(r, {"total", "energy", "tops_per_w"});
      x.topsw_on_chip = get(r, {"total", "energy", "tops_per_w_on_chip"});
      x.tokens = get(r, {"trace", "tokens"});
      if (!(x.time >= 0)) throw WrongField{"total.time_s", "must be a time of 0 or more"};
      if (x.tflops < 0 || x.energy < 0 || x.tokens < 0) throw WrongField{"total", "holds a negative figure"};
      double int_ops = 0, all_ops = 0;
      const YAML::Node ops = r["ops"];
      if (ops && !ops.IsSequence()) throw WrongField{"ops", "expected a list of ops"};
      if (ops)
        for (const auto& op : ops) {
          const double f = get(op, {"flops"});
          all_ops += f;
          if (op["dtype"] && op["dtype"].Scalar().rfind("int", 0) == 0) int_ops += f;
        }
      x.integer = all_ops > 0 && int_ops > all_ops / 2;
      if (const YAML::Node cl = find_path(r, {"total", "energy", "classes"}); cl && cl.IsMap())
        for (const auto& kv : cl) x.classes[kv.first.Scalar()] = kv.second.as<double>();
      bool multi = false;
      const double g = get(r, {"system", "gpus"}, &multi);
      if (multi && g >= 1) x.gpus = static_cast<int>(g);
    } catch (const WrongField& w) {
      throw UserError(file.string() + ": key '" + w.key + "': " + w.why + " (not an xpusim report.json as xpusim writes it)");
    } catch (const YAML::Exception& e) {
      throw UserError(file.string() + ": not an xpusim report.json (a field of the wrong type: " + e.msg + ")");
    }
    runs.push_back(x);
  }
  const Run& base = runs.front();
  // Throughput and energy are each run's whole system's; per GPU divides by its GPUs. A run whose
  // work is mostly in integer formats counts TOPS, the others TFLOP/s.
  auto rate = [](const Run& x, double tera) { return si(tera * 1e12, x.integer ? "OPS" : "FLOP/s"); };
  auto per_watt = [](const Run& x, double tera) { return si(tera * 1e12, x.integer ? "OPS/W" : "FLOPS/W"); };
  auto ratio = [](double v) { return v >= 0.01 && v < 1000 ? fmt("%.2fx", v) : fmt("%.3gx", v); };
  auto num = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  const std::vector<std::string> head = {"run", "chip", "trace", "GPUs", "time", "vs first", "throughput", "per GPU",
                                         "tokens", "energy", "vs first", "per token", "power", "efficiency", "on chip", "bound"};
  std::vector<std::vector<std::string>> rows;
  // A run that took no simulated time (nothing ran) has no rates, and nothing is a ratio to it:
  // "-" there (an empty field in the CSV), never 0x or a NaN.
  for (const Run& x : runs)
    rows.push_back({x.label, x.chip, x.trace, std::to_string(x.gpus), units::format(x.time, units::Dim::Time),
                    base.time > 0 && x.time > 0 ? ratio(x.time / base.time) : "-", x.time > 0 ? rate(x, x.tflops) : "-",
                    x.time > 0 ? rate(x, x.tflops / x.gpus) : "-",
                    x.tokens > 0 && x.time > 0 ? si(x.tokens / x.time, "tok/s") : "-",
                    x.has_energy ? units::format(x.energy, units::Dim::Energy) : "-",
                    x.has_energy && base.has_energy && base.energy > 0 && x.energy > 0 ? ratio(x.energy / base.energy) : "-",
                    x.has_energy && x.tokens > 0 ? units::format(x.energy / x.tokens, units::Dim::Energy) : "-",
                    x.has_energy && x.time > 0 ? units::format(x.energy / x.time, units::Dim::Power) : "-",
                    x.has_energy && x.energy > 0 ? per_watt(x, x.topsw) : "-",
                    x.topsw_on_chip > 0 ? per_watt(x, x.topsw_on_chip) : "-", x.bound});
  Comparison c;
  std::ostringstream t, md, csv;
  auto table = [&](const std::vector<std::string>& h, const std::vector<std::vector<std::string>>& body) {
    std::vector<size_t> width(h.size());
    for (size_t j = 0; j < h.size(); ++j) {
      width[j] = h[j].size();
      for (const auto& r : body) width[j] = std::max(width[j], r[j].size());
    }
    auto line = [&](const std::vector<std::string>& r) {
      for (size_t j = 0; j < r.size(); ++j) t << r[j] << std::string(width[j] - r[j].size() + 2, ' ');
      t << "\n";
      md << "|";
      for (const auto& v : r) md << " " << v << " |";
      md << "\n";
    };
    line(h);
    md << "|";
    for (size_t j = 0; j < h.size(); ++j) md << "---|";
    md << "\n";
    for (const auto& r : body) line(r);
  };
  table(head, rows);
  // Where each run's energy goes, as shares of its joules.
  static const std::vector<std::string> kClasses = {"math", "instruction_overhead", "onchip_memory", "offchip_memory",
                                                     "interconnect", "static", "uncore"};
  bool any_energy = false;
  for (const Run& x : runs) any_energy = any_energy || x.has_energy;
  if (any_energy) {
    std::vector<std::string> h = {"run"};
    for (const std::string& k : kClasses) {
      std::string name = k;
      std::replace(name.begin(), name.end(), '_', ' ');
      h.push_back(name);
    }
    std::vector<std::vector<std::string>> shares;
    for (const Run& x : runs) {
      std::vector<std::string> r = {x.label};
      for (const std::string& k : kClasses) {
        const auto it = x.classes.find(k);
        r.push_back(!x.has_energy || x.energy <= 0 || it == x.classes.end() ? "-" : fmt("%.1f%%", 100 * it->second / x.energy));
      }
      shares.push_back(r);
    }
    t << "\nwhere the energy goes (share of each run's joules):\n";
    md << "\nWhere the energy goes (share of each run's joules):\n\n";
    table(h, shares);
  }
  bool any_overrides = false;
  for (const Run& x : runs)
    if (!x.overrides.empty()) {
      if (!any_overrides) md << "\nOverrides:\n\n";
      any_overrides = true;
      t << "overrides of " << x.label << ": " << x.overrides << "\n";
      md << "- " << x.label << ": `" << x.overrides << "`\n";
    }
  for (const Run& x : runs)
    if (!(x.time > 0)) {
      t << x.label << " took no simulated time (its trace ran nothing): no rates for it"
        << (&x == &base ? ", and no ratios to it" : "") << "\n";
      md << "\n" << x.label << " took no simulated time (its trace ran nothing): no rates for it"
         << (&x == &base ? ", and no ratios to it" : "") << ".\n";
    }
  t << "ratios are to the first run (" << base.label << "): time below 1.00x is faster, energy below 1.00x is less\n";
  md << "\nRatios are to the first run (" << base.label << ").\n";
  csv << "run,chip,trace,gpus,time_s,time_ratio,tflops,tflops_per_gpu,ops_unit,tokens_per_s,energy_j,energy_ratio,"
         "joules_per_token,power_w,tops_per_w,tops_per_w_on_chip,bound";
  for (const std::string& k : kClasses) csv << "," << k << "_share";
  csv << ",overrides\n";
  for (const Run& x : runs) {
    csv << io::csv_field(x.label) << "," << io::csv_field(x.chip) << "," << io::csv_field(x.trace) << "," << x.gpus << ","
        << x.time << "," << (base.time > 0 && x.time > 0 ? num(x.time / base.time) : "") << ","
        << (x.time > 0 ? num(x.tflops) : "") << "," << (x.time > 0 ? num(x.tflops / x.gpus) : "") << ","
        << (x.integer ? "TOPS" : "TFLOP/s") << "," << (x.tokens > 0 && x.time > 0 ? num(x.tokens / x.time) : x.time > 0 ? "0" : "")
        << ","
        << (x.has_energy ? x.energy : 0) << "," << (x.has_energy && base.energy > 0 && x.energy > 0 ? num(x.energy / base.energy) : "")
        << "," << (x.has_energy && x.tokens > 0 ? x.energy / x.tokens : 0) << ","
        << (x.has_energy && x.time > 0 ? num(x.energy / x.time) : "") << ","
        << x.topsw << "," << x.topsw_on_chip << "," << io::csv_quoted(x.bound);
    for (const std::string& k : kClasses) {
      const auto it = x.classes.find(k);
      csv << "," << (x.has_energy && x.energy > 0 && it != x.classes.end() ? it->second / x.energy : 0);
    }
    csv << "," << io::csv_field(x.overrides) << "\n";
  }
  c.text = t.str();
  c.markdown = md.str();
  c.csv = csv.str();
  return c;
}

}  // namespace xpusim::report
