#include "sim/sweep/sweep.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <set>
#include <sstream>
#include <thread>

#include "sim/config/config_loader.h"
#include "sim/config/limits.h"
#include "sim/config/yaml_util.h"
#include "sim/io/files.h"
#include "sim/report/json_writer.h"
#include "sim/sweep/results.h"
#include "sim/trace/trace.h"

#ifdef XPUSIM_WITH_MPI
#include <mpi.h>
#endif

extern char** environ;

namespace xpusim::sweep {
namespace fs = std::filesystem;
namespace {

const std::vector<std::string> kSpecKeys = {"xpusim_sweep", "name", "description", "config", "configs", "trace",
                                            "traces", "serve", "mode", "samples", "seed", "axes", "set"};
const std::string kTracePrefix = "trace.", kServePrefix = "serve.";
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

namespace {

// Whether an error message names the flag --`flag` (and not a longer one: --rate is not --rates).
bool names_flag(const std::string& what, const std::string& flag) {
  const std::string f = "--" + flag;
  for (size_t at = what.find(f); at != std::string::npos; at = what.find(f, at + 1)) {
    const size_t end = at + f.size();
    if (end == what.size() || !(std::isalnum(static_cast<unsigned char>(what[end])) || what[end] == '-' || what[end] == '_'))
      return true;
  }
  return false;
}

// Runs `exe args...` with no input and returns its exit status and what it wrote (both streams).
std::pair<int, std::string> run_captured(const std::string& exe, const std::vector<std::string>& args) {
  int fds[2];
  if (pipe(fds) != 0) throw UserError(std::string("cannot start a check: ") + std::strerror(errno));
  std::vector<std::string> all = {exe};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw UserError("cannot start " + exe + ": " + std::strerror(rc));
  }
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR))
    if (n > 0) text.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text};
}

}  // namespace

void validate(const Spec& s, const std::vector<Point>& points, const std::string& self_exe) {
  auto axis_of = [&](const std::string& what) -> const Axis* {
    for (const Axis& a : s.axes)
      if (what.find("'" + a.key + "'") != std::string::npos || what.find(a.key + "=") != std::string::npos) return &a;
    for (const Axis& a : s.axes)  // a trace axis's error names the override as --trace-set gives it: 'dtype=fp9'
      if (a.key.rfind(kTracePrefix, 0) == 0 && what.find("'" + a.key.substr(kTracePrefix.size()) + "=") != std::string::npos) return &a;
    return nullptr;
  };
  std::set<std::string> configs_done, traces_done;
  for (const Point& p : points) {
    std::string ckey = p.config;
    for (const auto& x : p.sets) ckey += "\n" + x;
    try {
      if (configs_done.insert(ckey).second) config::load_config(p.config, p.sets);
      if (p.kind == Kind::Serve) {
        std::vector<std::string> check = point_args(p, "", "", 1);  // no folder: a check writes nothing
        std::string key;
        for (const auto& a : check) key += a + "\n";
        if (!traces_done.insert(key).second) continue;
        check.push_back("--check");
        const auto [status, text] = run_captured(self_exe, check);
        if (status != 0) {
          std::string why = text;
          while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
          const size_t last = why.rfind('\n');  // argparse writes its usage first
          if (last != std::string::npos && why.compare(last + 1, 7, "xpusim-") == 0) why = why.substr(last + 1);
          throw UserError("xpusim serve refuses the point (" + p.trace + "): " + why);
        }
        continue;
      }
      std::string tkey = p.trace;
      for (const auto& x : p.trace_sets) tkey += "\n" + x;
      if (traces_done.insert(tkey).second) {
        trace::Trace t = trace::load_trace(p.trace);
        for (const auto& x : p.trace_sets) {
          const size_t eq = x.find('=');
          trace::apply_override(t, x.substr(0, eq), x.substr(eq + 1));
        }
      }
    } catch (const UserError& e) {
      if (p.kind == Kind::Serve) {
        // Name where the spec gives the flags `xpusim serve` objects to: one place, or each.
        std::vector<std::string> where;
        for (const Axis& a : s.axes)
          if (a.key.rfind(kServePrefix, 0) == 0 && names_flag(e.what(), a.key.substr(kServePrefix.size())))
            where.push_back(a.loc.str() + ": axis '" + a.key + "'");
        for (size_t i = 0; i < s.serve_options.size(); ++i)
          if (names_flag(e.what(), s.serve_options[i].first))
            where.push_back(s.serve_option_locs[i].str() + ": key 'serve." + s.serve_options[i].first + "'");
        if (where.size() == 1) throw UserError(where[0] + ": " + e.what());
        std::string at;
        for (const std::string& w : where) at += (at.empty() ? " (given at " : "; ") + w;
        throw UserError(s.file + ": point " + std::to_string(p.index) + ": " + e.what() + (at.empty() ? "" : at + ")"));
      }
      const Axis* a = axis_of(e.what());
      if (a) throw UserError(a->loc.str() + ": axis '" + a->key + "': " + e.what());
      throw UserError(s.file + ": point " + std::to_string(p.index) + ": " + e.what());
    }
  }
}

bool under_mpi() {
#ifdef XPUSIM_WITH_MPI
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(v)) return true;
#endif
  return false;
}

namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_signal(int) { g_stop = 1; }

struct Running {
  pid_t pid = 0;
  const Point* point = nullptr;
  std::chrono::steady_clock::time_point start;
  bool timed_out = false;  // killed for running past --timeout
};

fs::path point_dir(const fs::path& root, const Point& p) { return root / "points" / (std::to_string(p.index) + "-" + p.id); }

pid_t spawn(const Options& opt, const Point& p, const fs::path& dir, const fs::path& root) {
  std::vector<std::string> args = {opt.self_exe};
  const std::vector<std::string> mine = point_args(p, dir.string(), (root / "step-cache.json").string(), opt.serve_jobs);
  args.insert(args.end(), mine.begin(), mine.end());
  if (p.kind == Kind::Run) {
    for (const auto& x : opt.limits) args.insert(args.end(), {"--limit", x});
    args.insert(args.end(), opt.run_args.begin(), opt.run_args.end());
  }
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  const std::string log = (dir / "log.txt").string();
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, opt.self_exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw UserError("cannot start " + opt.self_exe + ": " + std::strerror(rc));
  return pid;
}

// The row of a finished point: its report's headline figures, or its error.
Row finish(const Point& p, int status, const fs::path& dir, const fs::path& out_root, double timed_out_after) {
  Row r = Row::start(p, fs::relative(dir, out_root).string());
  if (timed_out_after > 0) {
    std::ostringstream os;
    os << "timed out: still running after " << timed_out_after << " s of wall time (--timeout)";
    r.set_failed(os.str());
    return r;
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    const std::string file = p.kind == Kind::Serve ? "summary.json" : "report.json";
    try {
      if (p.kind == Kind::Serve) r.add_serve_summary(YAML::LoadFile((dir / file).string()));
      else r.add_report(YAML::LoadFile((dir / file).string()));
      return r;
    } catch (const std::exception& e) {
      r.set_failed("cannot read " + file + ": " + e.what());
      return r;
    }
  }
  std::string error = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                          : "exit status " + std::to_string(WEXITSTATUS(status));
  std::ifstream log(dir / "log.txt");
  std::string line, last;
  while (std::getline(log, line))
    if (line.rfind("error:", 0) == 0 || line.rfind("internal error", 0) == 0 || line.rfind("xpusim-serve:", 0) == 0) last = line;
  if (!last.empty()) error = last + " (" + error + ")";
  r.set_failed(error);
  return r;
}

std::string eta_text(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  const long t = std::lround(s);
  std::ostringstream os;
  if (t >= 3600) os << t / 3600 << "h" << (t % 3600) / 60 << "m";
  else if (t >= 60) os << t / 60 << "m" << t % 60 << "s";
  else os << t << "s";
  return os.str();
}

}  // namespace

int run(const Spec& spec, const std::vector<Point>& points, const Options& opt, std::ostream& out) {
  int rank = 0, ranks = 1;
#ifdef XPUSIM_WITH_MPI
  const bool mpi = under_mpi();
  if (mpi) {
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  }
#endif
  const fs::path root = opt.out;
  Results results(root, spec, points);
  std::vector<size_t> todo;
  std::string setup_error;
  if (rank == 0) {
    try {
      todo = results.open(opt.resume, opt.retry_failed);
    } catch (const UserError& e) {
      setup_error = e.what();
    }
  }
#ifdef XPUSIM_WITH_MPI
  if (mpi) {
    // Rank 0 decides what is left to run (it alone reads and writes the results).
    int bad = setup_error.empty() ? 0 : 1;
    MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (bad) {
      MPI_Finalize();
      if (rank == 0) throw UserError(setup_error);
      return 1;
    }
    unsigned long long n = todo.size();
    MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    std::vector<unsigned long long> v(todo.begin(), todo.end());
    v.resize(n);
    MPI_Bcast(v.data(), static_cast<int>(n), MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    todo.assign(v.begin(), v.end());
  }
#endif
  if (!setup_error.empty()) throw UserError(setup_error);
  const size_t total = todo.size();
  std::vector<size_t> mine;  // this rank's share: every ranks-th point
  for (size_t i = static_cast<size_t>(rank); i < todo.size(); i += static_cast<size_t>(ranks)) mine.push_back(todo[i]);
  if (rank == 0) {
    out << "sweep " << spec.name << ": " << points.size() << " points";
    if (points.size() != total) out << ", " << points.size() - total << " already done, " << total << " to run";
    out << " (" << opt.jobs << " at a time" << (ranks > 1 ? " on each of " + std::to_string(ranks) + " MPI ranks" : "") << "), results in "
        << root.string() << "\n";
    out.flush();
  }

  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  std::vector<Running> running;
  size_t next = 0, done = 0, failed = 0;
  int ranks_finished = 0;
  bool told_done = false;
  const auto t0 = std::chrono::steady_clock::now();
  auto record = [&](const Row& r) {
    results.append(r);
    ++done;
    if (r.failed()) ++failed;
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double eta = el / static_cast<double>(done) * static_cast<double>(total - done);
    if (opt.progress_bar) {
      const int width = 30, fill = static_cast<int>(width * static_cast<double>(done) / static_cast<double>(std::max<size_t>(1, total)));
      out << "\r[" << std::string(static_cast<size_t>(fill), '#') << std::string(static_cast<size_t>(width - fill), '.') << "] " << done
          << "/" << total << " points, " << failed << " failed, ETA " << eta_text(eta) << "   " << std::flush;
    } else {
      out << "sweep: " << done << "/" << total << " point " << r.index << " " << (r.failed() ? "failed: " + r.error() : "ok")
          << " (ETA " << eta_text(eta) << ")\n"
          << std::flush;
    }
  };

  while (!g_stop) {
    while (static_cast<int>(running.size()) < opt.jobs && next < mine.size() && !g_stop) {
      const Point& p = points[mine[next++]];
      const fs::path dir = point_dir(root, p);
      io::make_directory(dir);
      running.push_back({spawn(opt, p, dir, root), &p, std::chrono::steady_clock::now()});
    }
    bool progressed = false;
    for (size_t i = 0; i < running.size();) {
      int status = 0;
      const pid_t r = waitpid(running[i].pid, &status, WNOHANG);
      if (r == 0) {
        const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - running[i].start).count();
        if (opt.timeout_s > 0 && el > opt.timeout_s && !running[i].timed_out) {
          kill(running[i].pid, SIGKILL);
          running[i].timed_out = true;
        }
        ++i;
        continue;
      }
      const Point& p = *running[i].point;
      Row row = finish(p, status, point_dir(root, p), root, running[i].timed_out ? opt.timeout_s : 0);
      running.erase(running.begin() + static_cast<long>(i));
      progressed = true;
#ifdef XPUSIM_WITH_MPI
      if (mpi && rank != 0) {
        const std::string line = row.json();
        MPI_Send(line.data(), static_cast<int>(line.size()), MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        continue;
      }
#endif
      record(row);
    }
#ifdef XPUSIM_WITH_MPI
    if (mpi) {
      if (rank != 0 && running.empty() && next == mine.size() && !told_done) {
        MPI_Send(nullptr, 0, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
        told_done = true;
      }
      if (rank == 0) {
        int flag = 1;
        while (flag) {
          MPI_Status st;
          MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
          if (!flag) break;
          int len = 0;
          MPI_Get_count(&st, MPI_CHAR, &len);
          std::string buf(static_cast<size_t>(len), '\0');
          MPI_Recv(buf.data(), len, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          if (st.MPI_TAG == 2) ++ranks_finished;
          else record(Row::parse(buf, points));
          progressed = true;
        }
      }
      const bool all_in = rank != 0 ? told_done : ranks_finished == ranks - 1;
      if (running.empty() && next == mine.size() && all_in) break;
    } else if (running.empty() && next == mine.size()) {
      break;
    }
#else
    (void)told_done;
    (void)ranks_finished;
    if (running.empty() && next == mine.size()) break;
#endif
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  if (g_stop) {
    for (const Running& r : running) kill(r.pid, SIGTERM);
    for (const Running& r : running) waitpid(r.pid, nullptr, 0);
    if (opt.progress_bar) out << "\n";
    out << "sweep interrupted: " << done << " finished point" << (done == 1 ? "" : "s") << " kept in " << (root / "results.jsonl").string()
        << "; run again with --resume for the rest\n";
#ifdef XPUSIM_WITH_MPI
    if (mpi) MPI_Abort(MPI_COMM_WORLD, 130);
#endif
    return 130;
  }
  if (rank == 0) {
    if (opt.progress_bar) out << "\n";
    results.finish();
    out << "sweep " << spec.name << ": " << results.ok_count() << " of " << points.size() << " points ok";
    if (results.failed_count() > 0) out << ", " << results.failed_count() << " failed (their errors are in results.csv)";
    out << "; wrote " << (root / "results.csv").string() << ", results.jsonl, sweep.html\n";
  }
#ifdef XPUSIM_WITH_MPI
  if (mpi) MPI_Finalize();
#endif
  return 0;
}

}  // namespace xpusim::sweep
