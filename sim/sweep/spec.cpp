#include "sim/sweep/sweep.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <sstream>

#include "sim/config/config_loader.h"
#include "sim/config/limits.h"
#include "sim/config/yaml_util.h"

namespace xpusim::sweep {
namespace fs = std::filesystem;
namespace {

const std::vector<std::string> kSpecKeys = {"xpusim_sweep", "name", "description", "config", "configs", "trace",
                                            "traces", "serve", "mode", "samples", "seed", "axes", "set"};
// Flags of `xpusim serve` that the sweep sets itself, or that a serve sweep has in other forms.
const std::vector<std::pair<std::string, std::string>> kServeReserved = {
    {"config", "give the configs as the spec's config/configs"},
    {"model", "give the model cards as serve.model/serve.models"},
    {"set", "give fixed config overrides as the spec's set, swept ones as axes"},
    {"out", "each point writes into the sweep's points/ folder"},
    {"step-cache", "the points share OUT/step-cache.json"},
    {"overwrite", "each point's folder is the sweep's, which it replaces when it runs the point again"},
    {"rates", "sweep the arrival rate with an axis, serve.rate: [...]"},
    {"xpusim", "the points run the sweep's own binary"},
    {"check", "the sweep checks every point before it runs any"},
    {"help", "not a serving option"}};

[[noreturn]] void fail(const SourceLoc& at, const std::string& key, const std::string& msg) {
  throw UserError(at.str() + ": " + (key.empty() ? "" : "key '" + key + "': ") + msg);
}

// A serve flag given in the spec (an option or an axis): a name, not a reserved one.
void check_serve_flag(const SourceLoc& at, const std::string& key, const std::string& flag) {
  if (flag.empty() || flag[0] == '-' || flag.find_first_of(" =") != std::string::npos)
    fail(at, key, "expected a flag of `xpusim serve` without its dashes, e.g. rate or max-seqs");
  for (const auto& [k, why] : kServeReserved)
    if (flag == k) fail(at, key, "--" + flag + " is not set per point: " + why);
}

// A serve flag's value as the point passes it: a request file's path resolved against the
// spec's folder, as the spec's other paths are.
std::string serve_value(const Spec& s, const std::string& key, const std::string& v) {
  if (key != "serve.requests" || fs::path(v).is_absolute()) return v;
  return (fs::path(s.file).parent_path() / v).lexically_normal().string();
}

std::vector<std::string> paths(const std::string& file, const YAML::Node& n, const std::string& key, const fs::path& base) {
  std::vector<std::string> out;
  auto add = [&](const YAML::Node& v) {
    if (!v.IsScalar() || v.Scalar().empty()) fail(yaml_loc(file, v), key, "expected a file path");
    const fs::path p = v.Scalar();
    out.push_back((p.is_absolute() ? p : base / p).lexically_normal().string());
  };
  if (n.IsSequence()) {
    if (n.size() == 0) fail(yaml_loc(file, n), key, "expected at least one file");
    for (const auto& v : n) add(v);
  } else {
    add(n);
  }
  return out;
}

double number(const std::string& file, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(yaml_loc(file, n), key, "expected a number");
  try {
    size_t used = 0;
    const double v = std::stod(n.Scalar(), &used);
    if (used == n.Scalar().size() && std::isfinite(v)) return v;
  } catch (const std::exception&) {
  }
  fail(yaml_loc(file, n), key, "expected a number, got '" + n.Scalar() + "'");
}

// FNV-1a, 64 bits: a point's identity from what it runs.
std::string hash_id(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string format_value(double v, bool integer) {
  if (integer) return std::to_string(static_cast<long long>(std::llround(v)));
  std::ostringstream os;
  os.precision(6);
  os << v;
  return os.str();
}

}  // namespace

Spec load_spec(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  Spec s;
  s.file = path;
  if (!root.IsMap()) fail(yaml_loc(path, root), "", "a sweep spec is a map with configs, traces and axes (docs/sweeps.md)");
  for (const auto& kv : root) {
    const std::string k = kv.first.Scalar();
    if (std::find(kSpecKeys.begin(), kSpecKeys.end(), k) == kSpecKeys.end()) {
      const std::string hint = config::closest_match(k, kSpecKeys);
      fail(yaml_loc(path, kv.first), k, "unknown key" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
    }
  }
  if (!root["xpusim_sweep"] || root["xpusim_sweep"].Scalar() != "1")
    fail(yaml_loc(path, root), "xpusim_sweep", "missing or unsupported version (this xpusim reads xpusim_sweep: 1)");
  const fs::path base = fs::path(path).parent_path();
  s.name = root["name"] ? root["name"].Scalar() : fs::path(path).stem().string();
  // The name is the default results folder's (sweep-out/<name>): a plain name, not a path.
  if (s.name.empty() || s.name == "." || s.name == ".." || s.name.find('/') != std::string::npos || s.name.find('\0') != std::string::npos)
    fail(yaml_loc(path, root["name"] ? root["name"] : root), "name",
         "'" + s.name + "' is not a plain name (it names the results folder sweep-out/<name>; no '/', '.' or '..')");
  if (root["description"]) s.description = root["description"].Scalar();
  if (const YAML::Node sv = root["serve"]) {
    // A serve sweep: model cards and `xpusim serve` options in place of traces.
    s.kind = Kind::Serve;
    if (root["trace"] || root["traces"])
      fail(yaml_loc(path, root["trace"] ? root["trace"] : root["traces"]), root["trace"] ? "trace" : "traces",
           "a serve sweep runs model cards (serve.model), not traces");
    if (!sv.IsMap()) fail(yaml_loc(path, sv), "serve", "expected a map: model or models, then `xpusim serve` options");
    if (sv["model"] && sv["models"]) fail(yaml_loc(path, sv["models"]), "serve.models", "give either serve.model or serve.models");
    const YAML::Node m = sv["model"] ? sv["model"] : sv["models"];
    if (!m) fail(yaml_loc(path, sv), "serve.models", "missing: the model card(s) every point serves");
    s.traces = paths(path, m, "serve.models", base);
    for (const auto& kv : sv) {
      const std::string k = kv.first.Scalar();
      if (k == "model" || k == "models") continue;
      check_serve_flag(yaml_loc(path, kv.first), "serve." + k, k);
      if (!kv.second.IsScalar() || kv.second.Scalar().empty())
        fail(yaml_loc(path, kv.second), "serve." + k, "expected one value (sweep it with an axis serve." + k + ": [...])");
      std::string v = kv.second.Scalar();
      s.serve_options.emplace_back(k, serve_value(s, "serve." + k, v));
      s.serve_option_locs.push_back(yaml_loc(path, kv.first));
    }
  }
  for (const char* k : {"config", "trace"}) {
    if (s.kind == Kind::Serve && std::string(k) == "trace") continue;
    const std::string plural = std::string(k) + "s";
    if (root[k] && root[plural]) fail(yaml_loc(path, root[plural]), plural, std::string("give either ") + k + " or " + plural);
    const YAML::Node n = root[k] ? root[k] : root[plural];
    if (!n) fail(yaml_loc(path, root), plural, "missing: the " + plural + " every point runs" + (std::string(k) == "trace" ? " (or serve: for a serving sweep)" : ""));
    (std::string(k) == "config" ? s.configs : s.traces) = paths(path, n, plural, base);
  }
  if (const YAML::Node m = root["mode"]) {
    if (!m.IsScalar() || (m.Scalar() != "grid" && m.Scalar() != "zip" && m.Scalar() != "random"))
      fail(yaml_loc(path, m), "mode", "expected grid, zip or random");
    s.mode = m.Scalar();
  }
  if (const YAML::Node n = root["samples"]) {
    const double v = number(path, n, "samples");
    if (v < 1 || v > 1e6 || v != std::floor(v)) fail(yaml_loc(path, n), "samples", "expected a whole number from 1 to 1000000");
    s.samples = static_cast<int>(v);
  }
  if (const YAML::Node n = root["seed"]) {
    const double v = number(path, n, "seed");
    if (v < 0 || v != std::floor(v) || v > 9e15) fail(yaml_loc(path, n), "seed", "expected a whole number >= 0");
    s.seed = static_cast<uint64_t>(v);
  }
  if (s.mode == "random" && s.samples == 0) fail(yaml_loc(path, root), "samples", "random mode needs samples: N");
  if (s.mode != "random" && root["samples"]) fail(yaml_loc(path, root["samples"]), "samples", "applies to mode: random");
  if (const YAML::Node n = root["set"]) {
    if (!n.IsSequence()) fail(yaml_loc(path, n), "set", "expected a list of key=value overrides");
    for (const auto& v : n) {
      if (!v.IsScalar() || v.Scalar().find('=') == std::string::npos || v.Scalar().front() == '=')
        fail(yaml_loc(path, v), "set", "expected key=value, e.g. \"hbm.stacks=6\"");
      const std::string k = v.Scalar().substr(0, v.Scalar().find('='));
      for (const std::string& earlier : s.sets)
        if (earlier.substr(0, earlier.find('=')) == k) fail(yaml_loc(path, v), "set", "'" + k + "' is set twice");
      s.sets.push_back(v.Scalar());
    }
  }
  const YAML::Node axes = root["axes"];
  if (axes && !axes.IsMap()) fail(yaml_loc(path, axes), "axes", "expected a map of key: [values]");
  if (axes)
    for (const auto& kv : axes) {
      Axis a;
      a.key = kv.first.Scalar();
      a.loc = yaml_loc(path, kv.first);
      const std::string key = "axes." + a.key;
      for (const std::string& fixed : s.sets)
        if (fixed.substr(0, fixed.find('=')) == a.key)
          fail(a.loc, key, "'" + a.key + "' is also fixed under set: (" + fixed + "); give it in one place");
      const bool serve_axis = a.key.rfind(kServePrefix, 0) == 0;
      if (serve_axis && s.kind != Kind::Serve) fail(a.loc, key, "serve.* axes belong to a serve sweep (a spec with serve:)");
      if (s.kind == Kind::Serve && a.key.rfind(kTracePrefix, 0) == 0)
        fail(a.loc, key, "a serve sweep has no trace: its step traces are generated from the model card");
      if (serve_axis) {
        const std::string flag = a.key.substr(kServePrefix.size());
        check_serve_flag(a.loc, key, flag);
        if (flag == "model" || flag == "models") fail(a.loc, key, "give the model cards as serve.models: [...]");
        for (const auto& [k, v] : s.serve_options)
          if (k == flag) fail(a.loc, key, "serve." + flag + " is also fixed under serve:; give it in one place");
      }
      const YAML::Node v = kv.second;
      if (v.IsSequence()) {
        if (v.size() == 0) fail(yaml_loc(path, v), key, "expected at least one value");
        for (const auto& x : v) {
          if (!x.IsScalar()) fail(yaml_loc(path, x), key, "expected scalar values");
          if (std::find(a.values.begin(), a.values.end(), x.Scalar()) != a.values.end())
            fail(yaml_loc(path, x), key, "value '" + x.Scalar() + "' appears twice");
          a.values.push_back(x.Scalar());
        }
      } else if (v.IsMap()) {
        if (s.mode != "random") fail(yaml_loc(path, v), key, "a range {min, max} applies to mode: random; give a list");
        for (const auto& r : v)
          if (r.first.Scalar() != "min" && r.first.Scalar() != "max" && r.first.Scalar() != "log" && r.first.Scalar() != "integer")
            fail(yaml_loc(path, r.first), key + "." + r.first.Scalar(), "unknown key (a range has min, max, log, integer)");
        if (!v["min"] || !v["max"]) fail(yaml_loc(path, v), key, "a range needs min and max");
        a.range = true;
        a.lo = number(path, v["min"], key + ".min");
        a.hi = number(path, v["max"], key + ".max");
        auto flag = [&](const char* k) {
          const YAML::Node f = v[k];
          if (!f) return false;
          if (!f.IsScalar() || (f.Scalar() != "true" && f.Scalar() != "false"))
            fail(yaml_loc(path, f), key + "." + k, "expected true or false");
          return f.Scalar() == "true";
        };
        a.log = flag("log");
        a.integer = flag("integer");
        if (a.hi < a.lo) fail(yaml_loc(path, v), key, "max is below min");
        if (a.log && a.lo <= 0) fail(yaml_loc(path, v), key, "a log range needs min > 0");
      } else {
        fail(yaml_loc(path, v), key, "expected a list of values");
      }
      s.axes.push_back(a);
    }
  if (s.mode == "zip")
    for (const Axis& a : s.axes)
      if (a.values.size() != s.axes[0].values.size())
        fail(a.loc, "axes." + a.key, "zip needs axes of one length (" + std::to_string(s.axes[0].values.size()) + " values in '" +
                                         s.axes[0].key + "', " + std::to_string(a.values.size()) + " here)");
  // Counted before anything is expanded (a 10^9-point grid would fill the memory with its points).
  double combos = 1;
  std::string how = std::to_string(s.configs.size()) + " config(s) x " + std::to_string(s.traces.size()) +
                    (s.kind == Kind::Serve ? " model(s)" : " trace(s)");
  if (s.mode == "random") {
    combos = s.samples;
    how += " x " + std::to_string(s.samples) + " samples";
  } else if (!s.axes.empty()) {
    combos = s.mode == "zip" ? static_cast<double>(s.axes[0].values.size()) : 1;
    for (const Axis& a : s.axes) {
      if (s.mode == "grid") combos *= static_cast<double>(a.values.size());
      if (s.mode == "grid") how += " x " + std::to_string(a.values.size());
    }
    if (s.mode == "zip") how += " x " + std::to_string(s.axes[0].values.size()) + " zipped values";
  }
  const double points = combos * static_cast<double>(s.configs.size()) * static_cast<double>(s.traces.size());
  if (points > limits::current().sweep_points) {
    char n[32];
    std::snprintf(n, sizeof n, "%.3g", points);
    fail(yaml_loc(path, root["axes"] ? root["axes"] : root), "axes",
         std::string("the sweep has ") + n + " points (" + how + "), more than the " +
             std::to_string(static_cast<int64_t>(limits::current().sweep_points)) +
             " a spec may expand to; narrow the axes or sample them (mode: random, samples: N)" +
             limits::raise_hint("sweep_points"));
  }
  return s;
}

std::vector<Point> expand(const Spec& s) {
  std::vector<std::vector<std::string>> combos;
  const size_t n_axes = s.axes.size();
  if (n_axes == 0) {
    combos.emplace_back();
  } else if (s.mode == "grid") {
    std::vector<size_t> idx(n_axes, 0);
    while (true) {
      std::vector<std::string> c;
      for (size_t i = 0; i < n_axes; ++i) c.push_back(s.axes[i].values[idx[i]]);
      combos.push_back(c);
      size_t i = n_axes;
      while (i > 0 && ++idx[i - 1] == s.axes[i - 1].values.size()) idx[--i] = 0;
      if (i == 0) break;
    }
  } else if (s.mode == "zip") {
    for (size_t j = 0; j < s.axes[0].values.size(); ++j) {
      std::vector<std::string> c;
      for (const Axis& a : s.axes) c.push_back(a.values[j]);
      combos.push_back(c);
    }
  } else {
    // splitmix64: the same seed gives the same samples on every platform.
    uint64_t state = s.seed;
    auto next = [&state] {
      uint64_t z = (state += 0x9e3779b97f4a7c15ull);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      return z ^ (z >> 31);
    };
    for (int j = 0; j < s.samples; ++j) {
      std::vector<std::string> c;
      for (const Axis& a : s.axes) {
        const uint64_t r = next();
        if (!a.range) {
          c.push_back(a.values[r % a.values.size()]);
        } else {
          const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
          const double v = a.log ? std::exp(std::log(a.lo) + u * (std::log(a.hi) - std::log(a.lo))) : a.lo + u * (a.hi - a.lo);
          c.push_back(format_value(v, a.integer));
        }
      }
      combos.push_back(c);
    }
  }
  std::vector<Point> out;
  for (const std::string& cfg : s.configs)
    for (const std::string& tr : s.traces)
      for (const auto& c : combos) {
        Point p;
        p.index = out.size();
        p.kind = s.kind;
        p.config = cfg;
        p.trace = tr;
        p.sets = s.sets;
        p.serve_args = s.serve_options;
        // A run point's key is as it always was, so that results of earlier versions resume.
        std::string key = (s.kind == Kind::Serve ? "serve\n" : "") + cfg + '\n' + tr;
        for (const auto& [k, v] : s.serve_options) key += "\nserve " + k + "=" + v;
        for (const std::string& x : s.sets) key += "\nset " + x;
        for (size_t i = 0; i < n_axes; ++i) {
          const std::string& k = s.axes[i].key;
          p.axes.emplace_back(k, c[i]);
          if (k.rfind(kTracePrefix, 0) == 0) p.trace_sets.push_back(k.substr(kTracePrefix.size()) + "=" + c[i]);
          else if (k.rfind(kServePrefix, 0) == 0) p.serve_args.emplace_back(k.substr(kServePrefix.size()), serve_value(s, k, c[i]));
          else p.sets.push_back(k + "=" + c[i]);
          key += "\n" + k + "=" + c[i];
        }
        p.id = hash_id(key);
        out.push_back(p);
      }
  std::set<std::string> seen;
  for (const Point& p : out)
    if (!seen.insert(p.id).second) throw UserError(s.file + ": two points run the same thing (" + p.config + ", " + p.trace + ")");
  return out;
}

std::vector<std::string> point_args(const Point& p, const std::string& dir, const std::string& step_cache, int serve_jobs) {
  std::vector<std::string> args;
  if (p.kind == Kind::Serve) {
    args = {"serve", "--config", p.config, "--model", p.trace};
    // The point's folder is the sweep's: a point run again (--retry-failed) replaces what it left.
    if (!dir.empty()) args.insert(args.end(), {"--out", dir, "--step-cache", step_cache, "--overwrite"});
    bool jobs = false;
    for (const auto& [k, v] : p.serve_args) {
      args.insert(args.end(), {"--" + k, v});
      jobs = jobs || k == "jobs";
    }
    if (!jobs) args.insert(args.end(), {"--jobs", std::to_string(serve_jobs)});
  } else {
    args = {"run", "-q", "--config", p.config, "--trace", p.trace, "--out", dir};
    for (const auto& x : p.trace_sets) args.insert(args.end(), {"--trace-set", x});
  }
  for (const auto& x : p.sets) args.insert(args.end(), {"--set", x});
  return args;
}

}  // namespace xpusim::sweep
