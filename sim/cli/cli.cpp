#include "sim/cli/cli.h"
#include "sim/cli/command.h"

#include <unistd.h>

#include <boost/program_options.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include "models/common/systemc.h"
#include "sim/config/config_loader.h"
#include "sim/config/limits.h"
#include "sim/config/units.h"
#include "sim/engine/simulate.h"
#include "sim/io/files.h"
#include "sim/io/log.h"
#include "sim/report/compare.h"
#include "sim/report/html.h"
#include "sim/report/report.h"
#include "sim/sweep/sweep.h"
#include "sim/trace/trace.h"
#include "sim/version.h"

namespace xpusim::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;
using namespace detail;  // what the commands share (command.h)

namespace {

const std::map<std::string, std::string>& commands() {
  static const std::map<std::string, std::string> c = {
      {"run", "simulate a trace on a hardware config and write the report"},
      {"check", "validate a config and/or a trace without simulating"},
      {"describe", "list every hardware parameter (name, unit, default, range, meaning), or a config's resolved values"},
      {"sweep", "run a design-space sweep (configs x traces x axes) in parallel, with resume and MPI"},
      {"compare", "put two or more runs side by side: time, throughput, energy, TOPS/W, bound, ratios"},
      {"serve", "LLM serving: requests through a scheduler and a paged KV cache, step times from the engine"},
      {"plot", "(re)draw a page from a command's results: `plot sweep OUT` draws OUT/sweep.html"},
  };
  return c;
}

std::string top_help() {
  std::string s =
      "xpusim " + std::string(kVersion) +
      ": a cycle-approximate simulator of GPUs and deep-learning accelerators\n\n"
      "usage: xpusim <command> [options]\n       xpusim --version | --help\n\ncommands:\n";
  for (const auto& [name, what] : commands()) s += "  " + name + std::string(10 - name.size(), ' ') + what + "\n";
  s += "\n`xpusim <command> --help` shows a command's options.\n";
  return s;
}

void add_logging(po::options_description& d) {
  d.add_options()("verbose,v", "more log output (debug)")("quiet,q", "only warnings and errors");
}

void setup_logging(const po::variables_map& vm) {
  if (vm.count("verbose") && vm.count("quiet")) throw UsageError("xpusim: give --verbose or --quiet, not both");
  auto level = log::Level::info;
  if (vm.count("verbose")) level = log::Level::debug;
  if (vm.count("quiet")) level = log::Level::warn;
  log::set_level(level);
}

po::variables_map parse(const std::string& cmd, const std::vector<std::string>& args, const po::options_description& d,
                        const po::positional_options_description* pos = nullptr) {
  po::variables_map vm;
  try {
    po::command_line_parser p(args);
    p.options(d);
    // Without positional arguments declared, every word must belong to an option: a stray one
    // is an error, not ignored.
    const po::positional_options_description none;
    p.positional(pos ? *pos : none);
    po::store(p.run(), vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    std::vector<std::string> names;
    for (const auto& o : d.options()) names.push_back("--" + o->long_name());
    const std::string hint = config::closest_match(e.get_option_name(), names);
    throw UsageError("xpusim " + cmd + ": unknown option '" + e.get_option_name() + "'" +
                     (hint.empty() ? "" : " (did you mean '" + hint + "'?)") + "; see `xpusim " + cmd + " --help`");
  } catch (const po::error& e) {
    throw UsageError("xpusim " + cmd + ": " + e.what() + "; see `xpusim " + cmd + " --help`");
  }
  return vm;
}

}  // namespace

std::optional<po::variables_map> detail::parse_command(const std::string& cmd, const std::vector<std::string>& args,
                                                       po::options_description& d, std::ostream& out,
                                                       const po::positional_options_description* pos) {
  add_logging(d);
  po::variables_map vm = parse(cmd, args, d, pos);
  if (vm.count("help")) {
    out << d << "\n";
    return std::nullopt;
  }
  setup_logging(vm);
  return vm;
}

namespace {

void add_limits(po::options_description& d) {
  d.add_options()("limit", po::value<std::vector<std::string>>()->composing(),
                  ("raise (or lower) a bound on what one run may ask for, NAME=VALUE (repeatable); in force:\n" +
                   limits::describe())
                      .c_str());
}

std::vector<std::string> apply_limits(const po::variables_map& vm) {
  const auto given = vm.count("limit") ? vm["limit"].as<std::vector<std::string>>() : std::vector<std::string>{};
  for (const std::string& x : given) {
    try {
      limits::set(x);
    } catch (const UserError& e) {  // a flag's own name or form: usage, not an input file
      throw UsageError(std::string("xpusim: ") + e.what());
    }
  }
  return given;
}

// Remembers key=value in `seen`; the same key given another value is ambiguous (not "the last
// wins"): a usage error naming `flag` ("--set") and both values.
void refuse_second_value(std::map<std::string, std::string>& seen, const std::string& who, const std::string& flag,
                         const std::string& key, const std::string& value) {
  const auto [it, fresh] = seen.emplace(key, value);
  if (!fresh && it->second != value)
    throw UsageError(who + ": " + flag + " " + key + " is given twice, as '" + it->second + "' and as '" + value + "'");
}

}  // namespace

std::vector<std::string> detail::sets(const po::variables_map& vm) {
  const auto given = vm.count("set") ? vm["set"].as<std::vector<std::string>>() : std::vector<std::string>{};
  std::map<std::string, std::string> seen;
  for (const std::string& o : given) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UsageError("xpusim: --set '" + o + "': expected key.path=value, e.g. --set hbm.data_rate=\"6.4 GT/s\"");
    refuse_second_value(seen, "xpusim", "--set", o.substr(0, eq), o.substr(eq + 1));
  }
  return given;
}

namespace {

// Applies the --trace-set overrides to a loaded trace (the form is the flag's: a usage error).
void apply_trace_sets(const std::string& cmd, const po::variables_map& vm, trace::Trace& tr) {
  if (!vm.count("trace-set")) return;
  std::map<std::string, std::string> seen;
  for (const std::string& x : vm["trace-set"].as<std::vector<std::string>>()) {
    const size_t eq = x.find('=');
    if (eq == std::string::npos || eq == 0) throw UsageError("xpusim " + cmd + ": --trace-set expects key=value, got '" + x + "'");
    refuse_second_value(seen, "xpusim " + cmd, "--trace-set", x.substr(0, eq), x.substr(eq + 1));
    trace::apply_override(tr, x.substr(0, eq), x.substr(eq + 1));
  }
}

void add_fidelity(po::options_description& d) {
  d.add_options()("fidelity", po::value<std::string>()->default_value("fast"),
                  "fast: a kernel's steady steps and steady waves of CTAs are extrapolated and kernels identical "
                  "to one already simulated reuse its result (docs/performance.md); exact: every step of every "
                  "CTA is simulated")
      ("tolerance", po::value<double>()->default_value(0.01),
       "fast: the largest relative change between two periods' time and counters that counts as a steady "
       "state");
}

engine::SimOptions sim_options(const std::string& cmd, const po::variables_map& vm) {
  engine::SimOptions o;
  const std::string f = vm["fidelity"].as<std::string>();
  if (f == "fast") o.fidelity = engine::Fidelity::fast;
  else if (f != "exact") throw UsageError("xpusim " + cmd + ": --fidelity must be fast or exact, got '" + f + "'");
  o.tolerance = vm["tolerance"].as<double>();
  if (f == "exact" && !vm["tolerance"].defaulted())
    throw UsageError("xpusim " + cmd + ": --tolerance applies to --fidelity fast (how steady a state must be to "
                     "extrapolate it); --fidelity exact simulates every CTA");
  if (!(o.tolerance > 0 && o.tolerance <= 0.5))
    throw UsageError("xpusim " + cmd + ": --tolerance must be above 0 and at most 0.5 (a share: 0.01 is 1%)");
  return o;
}

// Progress of a run that takes a while: on a terminal, one redrawn line (ops done of all,
// simulated time, an estimate of the wall time left) from a second in; otherwise a line per op
// class every ten seconds. Quick runs stay silent.
class ProgressPrinter {
 public:
  ProgressPrinter(std::ostream& err, bool terminal) : err_(err), terminal_(terminal) {}
  void operator()(const engine::Progress& p) {
    const double wall = seconds_since(start_);
    if (wall < (terminal_ ? 1.0 : 10.0) || seconds_since(last_) < (terminal_ ? 0.25 : 10.0)) return;
    last_ = std::chrono::steady_clock::now();
    const double f = std::clamp(p.work_done, 0.0, 1.0);
    const std::string eta = f > 0.01 ? units::format(wall * (1 - f) / f, units::Dim::Time) : std::string("?");
    std::ostringstream os;
    os << "ops " << p.ops_done << "/" << p.ops_total << ", simulated " << units::format(p.simulated_s, units::Dim::Time)
       << ", " << static_cast<int>(100 * f) << "% of the work, ETA " << eta;
    if (terminal_) {
      const std::string line = os.str();
      err_ << "\r" << line << std::string(line.size() < width_ ? width_ - line.size() : 0, ' ') << std::flush;
      width_ = std::max(width_, line.size());
      drawn_ = true;
      return;
    }
    err_ << "progress: " << os.str() << "\n";
    for (const auto& [kind, c] : p.by_class) err_ << "  " << kind << ": " << c.first << "/" << c.second << " done\n";
    err_ << std::flush;
  }
  ~ProgressPrinter() {
    if (drawn_) err_ << "\r" << std::string(width_, ' ') << "\r" << std::flush;
  }

 private:
  static double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  }
  std::ostream& err_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
  size_t width_ = 0;
  bool drawn_ = false;
};

int cmd_run(const std::string& cmd, const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  po::options_description d("xpusim run: simulate a trace on a hardware config\n\nusage: xpusim run --config FILE --trace FILE [options]\n\noptions");
  d.add_options()("help,h", "show this help")
      ("config,c", po::value<std::string>(), "hardware description (YAML), e.g. configs/h100-sxm.yaml")
      ("trace,t", po::value<std::string>(), "workload trace (.yaml or .jsonl), e.g. traces/gemm/bf16-8192.yaml")
      ("set,s", po::value<std::vector<std::string>>()->composing(), "override a config value: --set hbm.data_rate=\"6.4 GT/s\" (repeatable)")
      ("trace-set", po::value<std::vector<std::string>>()->composing(), "override every op's dtype, weight_dtype, sparsity or switching: --trace-set dtype=fp8 (repeatable)")
      ("out,o", po::value<std::string>()->default_value("xpusim-out"), "directory for report.json, report.html, summary.md, ops.csv, timeline.json (Chrome trace events), resolved-config.yaml")
      ("show-ops", po::value<int>()->default_value(20), "rows of ops on the terminal: every op where they fit, else the longest, the instances of each repeated op (layer[*].up) summed into one row")
      ("kernel-cache", po::value<std::string>(), "fast: a file of kernels simulated by earlier runs on the same config and engine; a kernel met again in the same state (after the same kernel) replays its record, and this run's new kernels are appended (docs/performance.md)")
      ("kernel-cache-out", po::value<std::string>(), "with --kernel-cache: append this run's new kernels to this file instead (to merge them into the cache later, in an order of one's choosing)");
  add_fidelity(d);
  add_limits(d);
  const auto parsed = parse_command(cmd, args, d, out);
  if (!parsed) return 0;  // --help was printed
  const po::variables_map& vm = *parsed;
  if (!vm.count("config")) throw UsageError("xpusim run: --config is required; see `xpusim run --help`");
  if (!vm.count("trace")) throw UsageError("xpusim run: --trace is required; see `xpusim run --help`");
  if (vm["show-ops"].as<int>() < 1) throw UsageError("xpusim run: --show-ops must be at least 1");
  apply_limits(vm);
  engine::SimOptions sim_opt = sim_options(cmd, vm);
  if (vm.count("kernel-cache")) {
    if (sim_opt.fidelity != engine::Fidelity::fast)
      throw UsageError("xpusim run: --kernel-cache applies to --fidelity fast (kernels replayed from a record); "
                       "--fidelity exact simulates every kernel");
    sim_opt.kernel_cache = vm["kernel-cache"].as<std::string>();
    if (sim_opt.kernel_cache.empty()) throw UsageError("xpusim run: --kernel-cache needs a file name");
    if (vm.count("kernel-cache-out")) {
      sim_opt.kernel_cache_out = vm["kernel-cache-out"].as<std::string>();
      if (sim_opt.kernel_cache_out.empty()) throw UsageError("xpusim run: --kernel-cache-out needs a file name");
    }
  } else if (vm.count("kernel-cache-out")) {
    throw UsageError("xpusim run: --kernel-cache-out goes with --kernel-cache");
  }

  const auto t0 = std::chrono::steady_clock::now();
  const config::LoadedConfig cfg = config::load_config(vm["config"].as<std::string>(), sets(vm));
  trace::Trace tr = trace::load_trace(vm["trace"].as<std::string>());
  apply_trace_sets(cmd, vm, tr);
  log::debug("loaded " + cfg.file + " (" + std::to_string(cfg.entries.size()) + " parameters) and " + tr.file + " (" +
             std::to_string(tr.ops.size()) + " ops)");

  const fs::path dir = vm["out"].as<std::string>();
  io::make_directory(dir);

  engine::SimResult result;
  {
    std::optional<ProgressPrinter> progress;
    if (!vm.count("quiet")) {
      progress.emplace(err, &err == &std::cerr && isatty(STDERR_FILENO));
      sim_opt.progress = [&progress](const engine::Progress& p) { (*progress)(p); };
    }
    engine::simulate(cfg, tr, result, sim_opt);
  }
  if (!result.stall.empty()) {
    err << "error: " << result.stall << "\n";
    return 3;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const report::Report rep = report::build(cfg, tr, result);
  // Every file is written once the run has succeeded, so that a failed or interrupted run never
  // leaves its configuration beside an earlier run's report.
  io::write_atomically(dir / "resolved-config.yaml",
                       config::resolved_yaml(cfg, "Resolved configuration of " + cfg.chip.name + " as run by xpusim " + kVersion));
  io::write_atomically(dir / "report.json", report::to_json(rep));
  io::write_atomically(dir / "ops.csv", report::to_csv(rep));
  io::write_atomically(dir / "summary.md", report::to_markdown(rep, wall));
  io::write_atomically(dir / "timeline.json", report::to_timeline(rep));
  io::write_atomically(dir / "report.html", report::run_html(rep));
  if (!vm.count("quiet")) {
    out << report::terminal_table(rep, static_cast<size_t>(vm["show-ops"].as<int>()));
    out << "wrote " << (dir / "report.json").string() << ", report.html, summary.md, ops.csv, timeline.json, resolved-config.yaml (simulated in "
        << units::format(wall, units::Dim::Time) << " wall time)\n";
  }
  return 0;
}

int cmd_sweep(const std::string& cmd, const std::vector<std::string>& args, std::ostream& out) {
  po::options_description d(
      "xpusim sweep: run every point of a sweep spec (docs/sweeps.md), several at a time; under mpirun the points are "
      "spread over the ranks and rank 0 writes the results\n\nusage: xpusim sweep SPEC.yaml [options]\n"
      "       mpirun -np N xpusim sweep SPEC.yaml [options]\n\noptions");
  d.add_options()("help,h", "show this help")
      ("spec", po::value<std::string>(), "the sweep spec (YAML), e.g. configs/sweeps/hbm-x-sms.yaml")
      ("out,o", po::value<std::string>(), "results folder (default: sweep-out/<spec name>)")
      ("jobs,j", po::value<int>(), "points run at once on this machine (default: its cores; 1 per MPI rank)")
      ("resume", "keep the finished points of an earlier run into --out and run only the rest")
      ("retry-failed", "with --resume, run the failed points again too")
      ("dry-run", "list the points and check every config and trace (a serve sweep: every point, by xpusim serve --check), run nothing")
      ("timeout", po::value<double>(), "stop a point that runs longer than this many seconds of wall time and record it as failed");
  add_fidelity(d);
  add_limits(d);
  po::positional_options_description pos;
  pos.add("spec", 1);
  const auto parsed = parse_command(cmd, args, d, out, &pos);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const std::vector<std::string> limit_args = apply_limits(vm);
  sim_options(cmd, vm);  // checks --fidelity and --tolerance, for --dry-run too
  if (!vm.count("spec")) throw UsageError("xpusim sweep: give the sweep spec, e.g. `xpusim sweep configs/sweeps/hbm-x-sms.yaml`");
  if (vm.count("retry-failed") && !vm.count("resume")) throw UsageError("xpusim sweep: --retry-failed applies with --resume");
  const sweep::Spec spec = sweep::load_spec(vm["spec"].as<std::string>());
  if (spec.kind == sweep::Kind::Serve)
    for (const char* flag : {"fidelity", "tolerance", "limit"})
      if (vm.count(flag) && !vm[flag].defaulted())
        throw UsageError(std::string("xpusim sweep: --") + flag + " applies to `xpusim run` points; " + spec.file +
                         " is a serve sweep (its step simulations run at xpusim serve's own settings)");
  const std::vector<sweep::Point> points = sweep::expand(spec);
  std::error_code ec;
  const std::string self_exe = fs::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw UserError("cannot find the xpusim binary to run points with (/proc/self/exe)");
  sweep::validate(spec, points, self_exe);
  if (vm.count("dry-run")) {
    for (const auto& p : points) {
      out << p.index << "  " << p.config << "  " << p.trace;
      for (const auto& [k, v] : p.axes) out << "  " << k << "=" << v;
      out << "\n";
    }
    out << points.size() << " points; "
        << (spec.kind == sweep::Kind::Serve ? "every config loads and xpusim serve --check accepts every point\n"
                                            : "every config and trace loads\n");
    return 0;
  }
  sweep::Options opt;
  opt.out = vm.count("out") ? vm["out"].as<std::string>() : (fs::path("sweep-out") / spec.name).string();
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  opt.jobs = vm.count("jobs") ? vm["jobs"].as<int>() : (sweep::under_mpi() ? 1 : cores);
  if (opt.jobs < 1 || opt.jobs > 4096) throw UsageError("xpusim sweep: --jobs must be from 1 to 4096");
  opt.limits = limit_args;
  {
    std::ostringstream tol;
    tol.precision(17);
    tol << vm["tolerance"].as<double>();
    opt.run_args = {"--fidelity", vm["fidelity"].as<std::string>()};
    if (vm["fidelity"].as<std::string>() == "fast") opt.run_args.insert(opt.run_args.end(), {"--tolerance", tol.str()});
  }
  if (vm.count("timeout")) {
    opt.timeout_s = vm["timeout"].as<double>();
    if (!(opt.timeout_s > 0)) throw UsageError("xpusim sweep: --timeout must be a positive number of seconds");
  }
  opt.resume = vm.count("resume") > 0;
  opt.retry_failed = vm.count("retry-failed") > 0;
  opt.progress_bar = isatty(STDOUT_FILENO) && !vm.count("quiet");
  opt.self_exe = self_exe;
  // A serve point simulates its steps several at a time: the cores shared among the points.
  opt.serve_jobs = std::max(1, cores / opt.jobs);
  return sweep::run(spec, points, opt, out);
}

int cmd_compare(const std::string& cmd, const std::vector<std::string>& args, std::ostream& out) {
  po::options_description d(
      "xpusim compare: runs side by side, with ratios to the first\n\nusage: xpusim compare RUN RUN [RUN...] [--out DIR]\n"
      "  RUN is an output folder of `xpusim run` or its report.json\n\noptions");
  d.add_options()("help,h", "show this help")
      ("runs", po::value<std::vector<std::string>>()->composing(), "runs to compare")
      ("out,o", po::value<std::string>(), "also write compare.md and compare.csv here");
  po::positional_options_description pos;
  pos.add("runs", -1);
  const auto parsed = parse_command(cmd, args, d, out, &pos);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  const auto runs = vm.count("runs") ? vm["runs"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (runs.size() < 2)
    throw UsageError("xpusim compare: give two or more runs (output folders or report.json files); see `xpusim compare --help`");
  const report::Comparison c = report::compare_runs(runs);
  out << c.text;
  if (vm.count("out")) {
    const fs::path dir = vm["out"].as<std::string>();
    io::make_directory(dir);
    io::write_atomically(dir / "compare.md", c.markdown);
    io::write_atomically(dir / "compare.csv", c.csv);
    out << "wrote " << (dir / "compare.md").string() << ", compare.csv\n";
  }
  return 0;
}

int cmd_check(const std::string& cmd, const std::vector<std::string>& args, std::ostream& out) {
  po::options_description d("xpusim check: validate inputs without simulating\n\nusage: xpusim check [--config FILE] [--trace FILE]\n\noptions");
  d.add_options()("help,h", "show this help")
      ("config,c", po::value<std::string>(), "hardware description to validate")
      ("trace,t", po::value<std::string>(), "trace to validate (with --config, also checks the chip can run every op)")
      ("set,s", po::value<std::vector<std::string>>()->composing(), "override a config value (repeatable)")
      ("trace-set", po::value<std::vector<std::string>>()->composing(), "override every op's dtype, weight_dtype, sparsity or switching, as `run` does (repeatable)");
  add_limits(d);
  const auto parsed = parse_command(cmd, args, d, out);
  if (!parsed) return 0;  // --help was printed
  const po::variables_map& vm = *parsed;
  if (!vm.count("config") && !vm.count("trace")) throw UsageError("xpusim check: give --config, --trace or both");
  if (vm.count("trace-set") && !vm.count("trace")) throw UsageError("xpusim check: --trace-set applies with --trace");
  apply_limits(vm);
  std::optional<config::LoadedConfig> cfg;
  if (vm.count("config")) {
    cfg = config::load_config(vm["config"].as<std::string>(), sets(vm));
    out << cfg->file << ": ok (" << cfg->chip.kind << " '" << cfg->chip.name << "', " << cfg->entries.size() << " parameters)\n";
  }
  if (vm.count("trace")) {
    trace::Trace tr = trace::load_trace(vm["trace"].as<std::string>());
    apply_trace_sets(cmd, vm, tr);
    // An op's FLOPs are one GPU's shard; on several GPUs the system does that on each.
    const int system_gpus = cfg && cfg->chip.kind == "gpu" ? std::max(1, cfg->chip.gpu.system.gpus()) : 0;
    double flops = 0, system_flops = 0;
    bool multi = false;
    for (const auto& op : tr.ops) {
      const double n = op.all_devices ? std::max(1, system_gpus) : static_cast<double>(std::max<size_t>(1, op.devices.size()));
      multi = multi || n > 1;
      flops += op.flops();
      system_flops += op.flops() * n;
    }
    out << tr.file << ": ok (" << tr.ops.size() << " ops, " << flops / 1e12 << " TFLOP";
    if (multi) out << " per GPU summed over the ops, " << system_flops / 1e12 << " TFLOP on all their GPUs";
    out << ")\n";
    if (cfg) {
      engine::lower_all(*cfg, tr);
      out << "every op lowers onto " << cfg->chip.name << "\n";
    }
  }
  return 0;
}

void route_systemc_reports() {
  sc_core::sc_report_handler::set_handler([](const sc_core::sc_report& r, const sc_core::sc_actions& actions) {
    const std::string msg = std::string("SystemC ") + r.get_msg_type() + ": " + r.get_msg();
    switch (r.get_severity()) {
      case sc_core::SC_INFO: log::systemc(log::Level::debug, msg); break;
      case sc_core::SC_WARNING: log::systemc(log::Level::warn, msg); break;
      default: log::systemc(log::Level::error, msg); break;
    }
    if (actions & sc_core::SC_THROW) throw std::logic_error(msg);
    if (actions & sc_core::SC_ABORT) std::abort();
  });
}

// Commands written in Python (python/xpusim/, docs/python.md): run `python3 -m xpusim.MODULE` in
// this process's place, the package first on the path: the one installed with this binary
// (`cmake --install` puts it in PREFIX/XPUSIM_PYTHON_SITE beside PREFIX/bin/xpusim, and it is the
// same version), else the source tree's it was built from. Returns only when it cannot start.
int exec_package(const std::string& command, const std::string& module, const std::vector<std::string>& rest,
                 bool tell_self) {
  std::vector<std::string> places;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && !std::string(XPUSIM_PYTHON_SITE).empty())
    places.push_back((self.parent_path().parent_path() / XPUSIM_PYTHON_SITE).string());
  places.push_back(std::string(XPUSIM_SOURCE_DIR) + "/python");
  const auto found = std::find_if(places.begin(), places.end(), [&](const std::string& p) {
    return std::filesystem::exists(p + "/xpusim/" + module + "/__main__.py");
  });
  if (found == places.end())
    throw UserError("xpusim " + command + " runs the xpusim package (python/xpusim/), which is not in " +
                    (places.size() > 1 ? places[0] + " nor in " + places[1] : places[0]) +
                    " (`cmake --install` puts it beside the installed binary; the source tree xpusim was built from "
                    "has it)");
  const std::string package = *found;
  const char* old = std::getenv("PYTHONPATH");
  const std::string path = package + (old && *old ? ":" + std::string(old) : "");
  setenv("PYTHONPATH", path.c_str(), 1);
  // `python3 -m` puts the current folder first on the path: a folder holding an xpusim/ package
  // (build/python, say) would shadow the source tree's. Python 3.11 leaves it out under this.
  setenv("PYTHONSAFEPATH", "1", 1);
  // The Python the build found (Debian's, with the packages scripts/install-deps.sh installs), or
  // the one XPUSIM_PYTHON_EXE names.
  const char* chosen = std::getenv("XPUSIM_PYTHON_EXE");
  const std::string python = chosen && *chosen ? chosen : XPUSIM_PYTHON_EXE;
  std::vector<std::string> args = {python, "-m", "xpusim." + module};
  if (tell_self && !ec) args.insert(args.end(), {"--xpusim", self.string()});
  args.insert(args.end(), rest.begin(), rest.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::cout.flush();
  execvp(python.c_str(), argv.data());
  throw UserError("xpusim " + command + ": cannot run " + python + " (" + std::string(std::strerror(errno)) + ")" +
                  (chosen && *chosen ? " (XPUSIM_PYTHON_EXE names it)" : ""));
}

// The serving simulation (python/xpusim/serving/, docs/serving.md), told where this binary is
// (its build's native part lies beside it, in python/, and the package simulates in process
// through that where it is there).
int cmd_serve(const std::vector<std::string>& rest) { return exec_package("serve", "serving", rest, true); }

// The pages drawn in Python (python/xpusim/plots/): `xpusim plot sweep OUT` draws OUT/sweep.html.
int cmd_plot(const std::vector<std::string>& rest) { return exec_package("plot", "plots", rest, false); }

}  // namespace

int main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  log::install_cli_loggers();
  route_systemc_reports();
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
      if (args.size() >= 2 && commands().count(args[1])) args = {args[1], "--help"};
      else {
        out << top_help();
        return args.empty() ? 2 : 0;
      }
    }
    if (args[0] == "--version" || args[0] == "-V") {
      out << "xpusim " << kVersion << " (SystemC " << sc_core::sc_release() << ")\n";
      return 0;
    }
    const std::string cmd = args[0];
    const std::vector<std::string> rest(args.begin() + 1, args.end());
    if (cmd == "run") return cmd_run(cmd, rest, out, err);
    if (cmd == "check") return cmd_check(cmd, rest, out);
    if (cmd == "describe") return cmd_describe(cmd, rest, out);
    if (cmd == "sweep") return cmd_sweep(cmd, rest, out);
    if (cmd == "compare") return cmd_compare(cmd, rest, out);
    if (cmd == "serve") return cmd_serve(rest);
    if (cmd == "plot") return cmd_plot(rest);
    std::vector<std::string> names;
    for (const auto& [n, _] : commands()) names.push_back(n);
    const std::string hint = config::closest_match(cmd, names);
    throw UsageError("xpusim: unknown command '" + cmd + "'" + (hint.empty() ? "" : " (did you mean '" + hint + "'?)") +
                     "; see `xpusim --help`");
  } catch (const UsageError& e) {
    err << "error: " << e.what() << "\n";
    return 2;
  } catch (const UserError& e) {
    err << "error: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    err << "internal error (please report): " << e.what() << "\n";
    return 3;
  }
}

}  // namespace xpusim::cli
