#include "sim/report/compare.h"

#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
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
  double time = 0, tflops = 0, energy = 0, topsw = 0, tokens = 0;
  int gpus = 1;
  bool has_energy = false;
};

double get(const YAML::Node& n, std::initializer_list<const char*> path, bool* found = nullptr) {
  const YAML::Node v = find_path(n, path);
  if (found) *found = v.IsDefined();
  return v.IsDefined() ? v.as<double>() : 0;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
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
      if (!r["xpusim_report"] || !r["total"]) throw UserError("");
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
      x.tokens = get(r, {"trace", "tokens"});
      bool multi = false;
      const double g = get(r, {"system", "gpus"}, &multi);
      if (multi && g >= 1) x.gpus = static_cast<int>(g);
    } catch (const YAML::Exception& e) {
      throw UserError(file.string() + ": not an xpusim report.json (a field of the wrong type: " + e.msg + ")");
    }
    runs.push_back(x);
  }
  const Run& base = runs.front();
  std::vector<std::vector<std::string>> rows;
  // TFLOP/s and energy are each run's whole system's; per GPU divides by its GPUs.
  const std::vector<std::string> head = {"run", "chip", "trace", "GPUs", "time", "vs first", "TFLOP/s", "TFLOP/s per GPU",
                                         "tokens/s", "energy", "vs first", "TOPS/W", "bound"};
  for (const Run& x : runs)
    rows.push_back({x.label, x.chip, x.trace, std::to_string(x.gpus), units::format(x.time, units::Dim::Time),
                    fmt("%.2fx", base.time > 0 ? x.time / base.time : 0), fmt("%.1f", x.tflops), fmt("%.1f", x.tflops / x.gpus),
                    x.tokens > 0 ? fmt("%.1f", x.tokens / x.time) : "-", x.has_energy ? fmt("%.4g J", x.energy) : "-",
                    x.has_energy && base.has_energy && base.energy > 0 ? fmt("%.2fx", x.energy / base.energy) : "-",
                    x.has_energy ? fmt("%.2f", x.topsw) : "-", x.bound});
  Comparison c;
  std::vector<size_t> width(head.size());
  for (size_t j = 0; j < head.size(); ++j) {
    width[j] = head[j].size();
    for (const auto& r : rows) width[j] = std::max(width[j], r[j].size());
  }
  std::ostringstream t, md, csv;
  auto line = [&](const std::vector<std::string>& r) {
    for (size_t j = 0; j < r.size(); ++j) t << r[j] << std::string(width[j] - r[j].size() + 2, ' ');
    t << "\n";
    md << "|";
    for (const auto& v : r) md << " " << v << " |";
    md << "\n";
  };
  line(head);
  md << "|";
  for (size_t j = 0; j < head.size(); ++j) md << "---|";
  md << "\n";
  for (const auto& r : rows) line(r);
  bool any_overrides = false;
  for (const Run& x : runs)
    if (!x.overrides.empty()) {
      if (!any_overrides) md << "\nOverrides:\n\n";
      any_overrides = true;
      t << "overrides of " << x.label << ": " << x.overrides << "\n";
      md << "- " << x.label << ": `" << x.overrides << "`\n";
    }
  t << "ratios are to the first run (" << base.label << "): time below 1.00x is faster, energy below 1.00x is less\n";
  csv << "run,chip,trace,gpus,time_s,time_ratio,tflops,tflops_per_gpu,tokens_per_s,energy_j,energy_ratio,tops_per_w,bound,"
         "overrides\n";
  for (const Run& x : runs)
    csv << io::csv_field(x.label) << "," << io::csv_field(x.chip) << "," << io::csv_field(x.trace) << "," << x.gpus << "," << x.time << ","
        << (base.time > 0 ? x.time / base.time : 0) << "," << x.tflops << "," << x.tflops / x.gpus
        << "," << (x.tokens > 0 ? x.tokens / x.time : 0) << "," << (x.has_energy ? x.energy : 0) << ","
        << (x.has_energy && base.energy > 0 ? x.energy / base.energy : 0) << "," << x.topsw << "," << io::csv_quoted(x.bound) << "," << io::csv_field(x.overrides) << "\n";
  c.text = t.str();
  c.markdown = md.str();
  c.csv = csv.str();
  return c;
}

}  // namespace xpusim::report
