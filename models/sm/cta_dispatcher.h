#pragma once
// Places CTAs of runnable kernels on SMs with room, breadth-first across SMs and oldest kernel
// first, as the hardware's block scheduler does; kernels on other streams fill SMs the older
// kernel leaves free. Under the fast fidelity it also extrapolates steady waves and reuses
// recorded kernels (models/sm/fast_path.h).
#include <deque>
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

  void submit(KernelRun* k);             // runnable from now on
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
  Snapshot snapshot(const KernelRun* k) const;
  struct Steady {  // what the last waves repeat
    size_t period = 0;  // in waves (0: not steady)
    double secs = 0, cycles = 0;
    bool in_cycles = false;
    OpCounters counters;  // over one period
    std::vector<double> stats;
  };
  Steady steady(const std::vector<Snapshot>& waves) const;
  void try_extrapolate(KernelRun* k);        // kernels of several waves: skip whole waves of CTAs
  void try_extrapolate_steps(KernelRun* k);  // kernels of one wave: every CTA skips steady steps
  // Sets k's replay to `repeats` periods of `st` and holds the GPU for it.
  void schedule_replay(KernelRun* k, const Steady& st, uint64_t repeats);
  void step_done(KernelRun* k);
  uint64_t wave_size(const KernelRun* k) const;
  static constexpr size_t kMaxPeriod = 4;  // waves a steady state may take to repeat
  static constexpr uint64_t kMinStepsPerWave = 4;  // one wave's steps per CTA, one-wave kernels
  void play(KernelRun* k);  // the replay of k's pending work, then k's end

  std::vector<Sm*> sms_;
  std::deque<KernelRun*> active_;
  std::vector<KernelRun*> finished_;
  uint64_t ctas_done_ = 0;
  bool spinning_ = false;  // fault injection: kernel_finished notified at every delta, nothing finishing
  size_t next_sm_ = 0;
  sc_core::sc_event wake_;

  // Fast fidelity.
  bool fast_ = false;
  FastPathParams fp_;
  MemoTable* memo_ = nullptr;
  const ClockDomain* clock_ = nullptr;
  std::vector<Stat*> stats_;
  uint64_t in_flight_ = 0;       // CTAs on SMs, all kernels
  uint64_t submissions_ = 0;
  uint64_t replay_ticks_ = 0;
  KernelRun* holder_ = nullptr;  // a kernel with work to play back: no other kernel is placed until it ends
  std::string last_key_;         // memo key of the kernel that last ran on this GPU
  struct Watch {                 // a kernel that started alone on the GPU
    uint64_t submission = 0;
    std::string key;             // memo key, state included (empty: not recorded)
    Snapshot start;
    std::vector<Snapshot> waves;  // at every wave's worth of finished CTAs (or of steps, by_steps)
    bool extrapolating = false;
    bool by_steps = false;        // one wave: the CTAs' steps are the waves
    uint64_t steps = 0, step_wave = 0, min_steps = 0;
  };
  std::map<KernelRun*, Watch> watched_;
};

}  // namespace xpusim
