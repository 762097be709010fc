#pragma once
// Design-space sweeps (docs/sweeps.md): a spec names configs, traces and axes; the points (the
// cross product, a zip or random samples) run as `xpusim run` child processes, several at a
// time, and across MPI ranks when launched by mpirun. A serve sweep names models and serving
// options instead of traces, and its points run `xpusim serve` (docs/serving.md). Each finished point is appended to
// results.jsonl and results.csv at once, so an interrupted sweep loses nothing finished and
// --resume runs only what is missing.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "sim/error.h"

namespace xpusim::sweep {

struct Axis {
  std::string key;                  // a config key (sm.count) or a trace key (trace.dtype)
  std::vector<std::string> values;  // grid and zip; random picks among them
  bool range = false;               // random only: a number drawn from [lo, hi]
  double lo = 0, hi = 0;
  bool log = false, integer = false;
  SourceLoc loc;
};

// What a point runs: `xpusim run` on a trace, or `xpusim serve` on a model card.
enum class Kind { Run, Serve };

struct Spec {
  std::string file, name, description;
  Kind kind = Kind::Run;
  std::string mode = "grid";  // grid, zip, random
  std::vector<std::string> configs, traces;  // paths resolved against the spec's folder; a serve sweep's model cards
  std::vector<std::pair<std::string, std::string>> serve_options;  // serve: flag (no dashes), value
  std::vector<SourceLoc> serve_option_locs;                       // where each was given
  std::vector<Axis> axes;
  std::vector<std::string> sets;  // fixed config overrides for every point
  int samples = 0;                // random
  uint64_t seed = 1;
};

struct Point {
  size_t index = 0;
  std::string id;  // stable over runs of the same spec: a hash of what the point runs
  Kind kind = Kind::Run;
  std::string config, trace;  // trace: a serve point's model card
  std::vector<std::pair<std::string, std::string>> axes;  // key, value as given
  std::vector<std::string> sets, trace_sets;               // for `xpusim run --set / --trace-set`
  std::vector<std::pair<std::string, std::string>> serve_args;  // serve: the options and serve.* axes
};

// An axis key's prefix: a trace override (trace.dtype) or a flag of `xpusim serve` (serve.batch).
inline const std::string kTracePrefix = "trace.", kServePrefix = "serve.";

// The arguments after `xpusim` that run the point into `dir`. A serve point shares
// `step_cache` with the sweep's other points and runs `serve_jobs` step simulations at once;
// with no `dir` it names no folder (what `serve --check` is given).
std::vector<std::string> point_args(const Point& p, const std::string& dir, const std::string& step_cache, int serve_jobs);

// Throws UserError naming the spec's file, line and key.
Spec load_spec(const std::string& path);
std::vector<Point> expand(const Spec& spec);
// Loads every config with each point's overrides and every trace with its trace overrides, so
// that a typo in an axis fails before anything runs (errors name the axis in the spec). A serve
// point is checked by `self_exe serve --check`: flags, model card, requests, that the model fits.
void validate(const Spec& spec, const std::vector<Point>& points, const std::string& self_exe);

struct Options {
  std::string out;
  int jobs = 1;
  bool resume = false;
  bool retry_failed = false;
  bool progress_bar = false;  // a terminal: one redrawn line; otherwise a line per point
  std::string self_exe;       // the xpusim binary that runs each point
  std::vector<std::string> limits;  // --limit NAME=VALUE, passed to every point
  std::vector<std::string> run_args;  // further options of `xpusim run` for every point (--fidelity)
  int serve_jobs = 1;               // step simulations each serve point runs at once
  double timeout_s = 0;             // wall time a point may take; 0: no bound
};

// Returns the exit status: 0 when every point ran (failed points included), 130 when
// interrupted.
int run(const Spec& spec, const std::vector<Point>& points, const Options& opt, std::ostream& out);

// Whether this process was started by an MPI launcher (and the binary was built with MPI).
bool under_mpi();

}  // namespace xpusim::sweep
