#pragma once
// Places CTAs of runnable kernels on SMs with room, breadth-first across SMs and oldest kernel
// first, as the hardware's block scheduler does; kernels on other streams fill SMs the older
// kernel leaves free. Under the fast fidelity it also extrapolates steady waves and reuses
// recorded kernels (models/sm/fast_path.h).
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "models/common/clock_domain.h"
#include "models/common/stats.h"
#include "models/common/systemc.h"
#include "models/sm/fast_path.h"
#include "models/sm/kernel_run.h"
#include "models/sm/sm.h"

namespace xpusim {

class CtaDispatcher : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(CtaDispatcher);
  CtaDispatcher(sc_core::sc_module_name name, std::vector<Sm*> sms);

  // The fast fidelity: `clock` is the SMs' clock, `gpu_stats` the statistics of this GPU (what a
  // skipped wave or a reused kernel adds to), `memo` shared by the run's GPUs.
  void enable_fast_path(const FastPathParams& p, MemoTable* memo, const ClockDomain* clock,
                        std::vector<Stat*> gpu_stats);

  // Called as work left out is played back, with the deltas of the GPU's statistics it added
  // (in the order of `gpu_stats`; `flush` at the replay's end): where the memory system settles
  // what the work left out would have changed.
  std::function<void(const std::vector<double>&, bool flush)> on_replayed;
  // Called when a kernel reuses a recorded one instead of running, before its replay: where the
  // memory system takes the state the kernel would have left (its output in the L2).
  std::function<void(const KernelProgram&)> on_reuse;

  void submit(KernelRun* k);             // runnable from now on
  // The block scheduler starts one CTA per `s` seconds at most (sm.cta_launch_interval).
  void set_launch_interval(double s) { launch_interval_s_ = s; }
  std::vector<KernelRun*> take_finished();
  sc_core::sc_event kernel_finished;     // notified when a kernel's last CTA completes
  // Over all kernels: the watchdog's sign of life (a replay's ticks count too).
  uint64_t ctas_done() const { return ctas_done_ + replay_ticks_; }

 private:
  struct Snapshot {
    double t = 0, cycles = 0;
    OpCounters counters;
    std::vector<double> stats;
  };
  void dispatch_thread();
  void cta_done(KernelRun* k);
  void finish(KernelRun* k);
  bool idle() const { return active_.empty() && in_flight_ == 0 && !holder_; }
  bool only_holds() const;  // no work on the GPU but a collective's CTAs (placed or waiting)
  // The collectives' CTAs on the GPU now, for a memo key: how many and their room, and with
  // `timed` how long each is held from now.
  std::string holds_key(bool timed) const;
  double holds_left() const;  // seconds until the first of the collectives' CTAs is released
  double replay_seconds(const std::vector<Replay>& profile) const;  // at the clock's rate now
  void hold_placed(const KernelRun* h);  // a CTA of a collective's, h, was placed
  void holds_changed();     // a collective's CTA was placed or is done
  Snapshot snapshot(const KernelRun* k) const;
  struct Steady {  // what the last waves repeat
    size_t period = 0;  // in waves (0: not steady)
    double secs = 0, cycles = 0;
    bool in_cycles = false;
    double busy = 0;      // the SMs' pipes busy, as a fraction of the period
    OpCounters counters;  // over one period
    std::vector<double> stats;
  };
  // `sms`: the SMs in use; `steps_per_wave`: a CTA's steps in one of `waves`' intervals.
  Steady steady(const std::vector<Snapshot>& waves, size_t sms, uint64_t steps_per_wave) const;
  struct Watch;
  void try_extrapolate(KernelRun* k);        // skip whole waves of CTAs
  void try_extrapolate_steps(KernelRun* k);  // the CTAs skip steady steps
  void stop_watching_steps(KernelRun* k, Watch& w);
  void replay_skipped_steps(KernelRun* k, const Watch& w);  // when k's CTAs are done
  // A CTA of k leaves out `steps` steady steps (k->step_rate set): it waits for their time while
  // their counters accrue.
  void skip_steps(KernelRun* k, uint64_t steps);
  // Adds `repeats` periods of `st`'s time and `work` periods of its counters to k's replay, and
  // holds the GPU for it.
  void schedule_replay(KernelRun* k, const Steady& st, double repeats, double work);
  // Adds n x c (and n x stats) to k's counters (and the GPU's statistics) evenly over `amount`
  // seconds or SM cycles, waking on every boundary of the replay tick.
  void accrue(KernelRun* k, const OpCounters& c, const std::vector<double>& stats, double n, double amount,
              bool in_cycles, bool flush);
  void step_done(KernelRun* k);
  uint64_t wave_size(const KernelRun* k) const;
  static constexpr size_t kMaxPeriod = 4;  // waves a steady state may take to repeat
  // Work whose SMs' pipes are busy this fraction of its time repeats in SM cycles.
  static constexpr double kPipeBound = 0.5;
  // Steps whose SMs' pipes are busy this fraction of a period are bound by the SM itself.
  static constexpr double kSmBound = 0.9;
  // Steps per CTA a period needs to be trusted across a clock change (the change distorts it
  // by up to one); such periods may be longer than kMaxPeriod waves.
  static constexpr uint64_t kStepsAcrossChange = 32;
  static constexpr uint64_t kMinStepsPerWave = 4;  // steps per CTA in a wave of steps
  static constexpr uint64_t kProfileSegments = 16;  // a recorded kernel's profile, at most
  // A kernel recorded beside collectives' CTAs that outlasted it is reused only where they stay
  // this much longer than its replay (a governor moves the clock a few percent at most).
  static constexpr double kOutlastMargin = 0.1;
  void play(KernelRun* k);  // the replay of k's pending work, then k's end

  std::vector<Sm*> sms_;
  std::deque<KernelRun*> active_;
  std::vector<KernelRun*> finished_;
  uint64_t ctas_done_ = 0;
  bool spinning_ = false;  // fault injection: kernel_finished notified at every delta, nothing finishing
  size_t next_sm_ = 0;
  double launch_interval_s_ = 0;
  double next_launch_s_ = 0;  // when the block scheduler may start its next CTA
  sc_core::sc_event wake_;

  // Fast fidelity.
  bool fast_ = false;
  FastPathParams fp_;
  MemoTable* memo_ = nullptr;
  const ClockDomain* clock_ = nullptr;
  std::vector<Stat*> stats_;
  uint64_t in_flight_ = 0;       // CTAs on SMs, all kernels
  uint64_t held_in_flight_ = 0;  // of which a collective's (KernelRun::holds_sms)
  uint64_t submissions_ = 0;      // of kernels other than a collective's CTAs
  uint64_t seq_ = 0;              // of all (KernelRun::seq)
  std::vector<KernelRun*> holds_;  // a collective's CTAs, submitted and not finished
  uint64_t hold_changes_ = 0;      // collectives' CTAs submitted, placed or done so far
  uint64_t replay_ticks_ = 0;
  KernelRun* holder_ = nullptr;  // a kernel with work to play back: no other kernel is placed until it ends
  std::string last_key_;         // memo key of the kernel that last ran on this GPU
  struct Watch {                 // a kernel that started alone on the GPU
    uint64_t submission = 0;
    std::string key;             // memo key, state included (empty: not recorded)
    // Beside a collective's CTAs: the key under which the kernel is recorded if those CTAs stay
    // as they are until it ends (none placed, done or submitted meanwhile: hold_changes).
    std::string outlast_key;
    uint64_t hold_changes = 0;
    Snapshot start;
    std::vector<Snapshot> waves;  // at every wave's worth of finished CTAs (or of steps, watch_steps)
    bool watch_waves = false;     // whole waves may yet be skipped
    bool watch_steps = false;     // the resident CTAs' steps are the waves
    bool paused = false;          // a collective's CTAs are resident: no waves counted
    uint64_t wave_base = 0;       // done CTAs where the waves' count starts
    uint64_t steps = 0, step_wave = 0, min_steps = 0;
    uint64_t resident = 0;        // CTAs of the first wave
    Steady step_steady;           // the steady period of steps, once decided
    uint64_t step_unit = 0;       // its steps per CTA
    // Recorded kernels: snapshots every profile_every finished CTAs, so that a reuse plays the
    // kernel's counters back as they came (a governor sees its power over time as it was).
    std::vector<Snapshot> profile;
    uint64_t profile_every = 0;
    // The profile's snapshot taken when a collective's CTA submitted after the kernel was first
    // placed, all the kernel's being placed (its index + 1; 0: none): the segments from there
    // are Replay::all_placed.
    size_t placed_segment = 0;
  };
  std::map<KernelRun*, Watch> watched_;
};

}  // namespace xpusim
