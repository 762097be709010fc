#pragma once
// The fast fidelity's two shortcuts (docs/performance.md), applied by a GPU's CTA dispatcher:
//  - steady-state extrapolation: once the first wave's steps (where the program says its steps
//    repeat) or whole waves of a kernel's CTAs repeat with a stable period and stable counters,
//    with the clock unchanged through the periods compared, the steady steps or the whole waves
//    not yet placed are not simulated; their counters and time are the mean of the last two
//    simulated periods, scaled. The resident CTAs leave out steps from where they stand; CTAs
//    placed later, where the steps are bound by the SMs' pipes, all but a pipeline's fill and
//    drain;
//  - memoisation: a kernel identical to one already simulated, in the same state that matters
//    (the kernel that ran before it on the GPU, and a GPU idle or holding only a collective's
//    CTAs, as many and held as long, or at least as long where they outlasted it), reuses that
//    kernel's time and counters (those of its second simulated instance: the first meets a
//    colder memory system); its output is placed in the L2, dirty, as running it would have
//    left it (KernelProgram::written).
// Work not simulated is played back: steps bound by the SMs' pipes by each CTA where it leaves
// them out (the kernel's power over time stays as it was, and a CTA waiting beside others takes
// nothing they need); other steps, left-out waves and reused kernels as a replay at the
// kernel's end, during which no other kernel is placed (CTAs waiting beside each other would
// leave the memory system idle that the steps share) but for a collective's CTAs: those older
// than a reused kernel, and newer ones from where the recorded kernel let them in. The time is
// seconds, or SM cycles for work bound by the SMs' pipes (so that a governor's clock applies),
// and the counters accrue evenly over it so that a power governor sees the load. The L2's oldest dirty lines that the
// left-out work would have written back are then clean (its write-backs are in its counted
// traffic).
#include <cmath>
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

// A replay books its work in slices that end on the multiples of `tick` (the governor's
// windows' boundaries). A wait shorter than half of SystemC's time resolution (its default, 1
// ps) rounds to none: a slice at least this long always moves time on, and a replay waits for
// every such slice (one that waited only for longer ones spun forever a picosecond before a
// boundary).
constexpr double kShortestWait = 0.5e-12;
inline double next_tick_boundary(double t, double tick) { return (std::floor(t / tick + 1e-9) + 1) * tick; }

struct Replay {
  OpCounters counters;        // what the skipped work did
  std::vector<double> stats;  // its deltas of the GPU's statistics
  double amount = 0;          // its duration: seconds, or SM cycles with in_cycles
  bool in_cycles = false;
  // A recorded kernel's segment that began after a collective's CTA submitted after the kernel
  // was placed: a replay lets such CTAs be placed from there on, as they were.
  bool all_placed = false;
};

// One CTA's left-out steady step, played back where the CTA leaves it out: its time at the
// steady rate and its share of the steady period's counters and statistics.
struct StepRate {
  double per_step = 0;  // seconds, or SM cycles with in_cycles
  bool in_cycles = false;
  OpCounters counters;
  std::vector<double> stats;
  double slot_share = 0;  // a CTA's share of the SMs' slots (for the time reported as extrapolated)
};

struct MemoEntry {
  std::vector<Replay> profile;  // the kernel in segments over its time, played in order
  int source_op = -1;  // the op whose simulation is reused; -1: one of a kernel cache's
  // Simulated once so far: the first instance of a repeated kernel meets a memory system not yet
  // in its steady state (an L2 that the layers before it have not filled with their dirty
  // data, so it writes back less), so the second instance is simulated too, and that one is
  // reused.
  bool warm = false;
  // The kernel cache (sim/engine/kernel_cache.h) keeps both instances: `cold` is the first's
  // profile. An entry loaded from it stands for its recording run's instances in order: a run's
  // first instance of the kernel replays `cold`, the later ones `profile` (once warm).
  std::vector<Replay> cold;
  bool from_file = false;  // loaded from a kernel cache
  bool changed = false;    // recorded or made warm by this run: the kernel cache saves it
  int seen = 0;            // this run's instances recorded or reused
};

// Shared by the dispatchers of every simulated GPU of a run.
using MemoTable = std::unordered_map<std::string, MemoEntry>;

// a += b * f, field by field.
inline void add_scaled(OpCounters& a, const OpCounters& b, double f) {
  double* x = reinterpret_cast<double*>(&a);
  const double* y = reinterpret_cast<const double*>(&b);
  for (size_t i = 0; i < sizeof(OpCounters) / sizeof(double); ++i) x[i] += y[i] * f;
}

// a - b, field by field.
inline OpCounters counters_minus(const OpCounters& a, const OpCounters& b) {
  OpCounters d = a;
  add_scaled(d, b, -1);
  return d;
}

}  // namespace xpusim
