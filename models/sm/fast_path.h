#pragma once
// The fast fidelity's two shortcuts (docs/performance.md), applied by a GPU's CTA dispatcher:
//  - steady-state extrapolation: once waves of a kernel's CTAs (or, in a kernel of one wave, of
//    its CTAs' steps) repeat with a stable period and stable counters, the whole waves not yet
//    placed (the steady steps) are not simulated; their counters and time are the mean of the
//    last two simulated periods, scaled;
//  - memoisation: a kernel identical to one already simulated, in the same state that matters
//    (the kernel that ran before it on the GPU, an idle GPU), reuses that kernel's time and
//    counters.
// Work not simulated is played back as a replay: the GPU stays busy for the recorded time (or
// SM cycles, where the clock moved and cycles held steady), its counters accrue evenly over it so
// that a power governor sees the load, and no other kernel is placed meanwhile.
#include <string>
#include <unordered_map>
#include <vector>

#include "models/common/op_counters.h"

namespace xpusim {

struct FastPathParams {
  bool extrapolate = false;
  bool memoise = false;
  // Largest relative change between consecutive periods' time and counters (over three periods)
  // that counts as a steady state.
  double tolerance = 0.01;
  // Whole waves simulated in detail after the skipped ones, besides the wave in flight when the
  // skip is decided (which already runs after the steady ones) and the partial last wave.
  int tail_waves = 0;
  double replay_tick_s = 1e-4;  // a replay wakes at least this often (the governor's control period when capped)
};

struct Replay {
  OpCounters counters;        // what the skipped work did
  std::vector<double> stats;  // its deltas of the GPU's statistics
  double amount = 0;          // its duration: seconds, or SM cycles with in_cycles
  bool in_cycles = false;
};

struct MemoEntry {
  Replay replay;
  int source_op = -1;  // the op whose simulation is reused
};

// Shared by the dispatchers of every simulated GPU of a run.
using MemoTable = std::unordered_map<std::string, MemoEntry>;

// a += b * f, field by field.
inline void add_scaled(OpCounters& a, const OpCounters& b, double f) {
  double* x = reinterpret_cast<double*>(&a);
  const double* y = reinterpret_cast<const double*>(&b);
  for (size_t i = 0; i < sizeof(OpCounters) / sizeof(double); ++i) x[i] += y[i] * f;
}

}  // namespace xpusim
