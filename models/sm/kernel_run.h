#pragma once
// A kernel in flight: its program, progress and the counters its CTAs fill.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/common/op_counters.h"
#include "models/sm/fast_path.h"
#include "models/sm/kernel_program.h"

namespace xpusim {

struct KernelRun {
  int index = 0;  // op index in the workload
  bool tail = false;  // the op's second kernel (a reduction or combine after the first)
  std::shared_ptr<const KernelProgram> program;
  OpCounters counters;
  uint64_t next_cta = 0;
  uint64_t done_ctas = 0;
  double submit_s = 0;  // when the kernel became runnable
  bool submitted = false;  // handed to a dispatcher (before that its counters are all zero)
  // If set, submission appends the run here (the power manager counts only submitted kernels).
  std::vector<const KernelRun*>* submit_log = nullptr;
  double end_s = 0;     // when its last CTA finished
  bool finished = false;
  double timed_start_s = -1;  // when a CTA reached the program's timed_step (microbenchmarks)
  bool lose_a_cta = false;    // fault injection: drop one CTA's completion (tests of the watchdog)
  bool spin_after_loss = false;  // fault injection: then wake the driver at every delta cycle
  // A collective's CTAs, holding SMs while it runs (hold_program.h): not a kernel whose L2 the
  // next kernel meets, so fast fidelity's reuse ignores it.
  bool holds_sms = false;
  uint64_t seq = 0;  // submission order on its GPU's dispatcher

  // Fast fidelity (models/sm/fast_path.h). memo_key: what makes the kernel's work the same as
  // another's (its op and program, addresses aside); empty: never reused nor recorded.
  std::string memo_key;
  int reused_from = -1;            // the op whose recorded time and counters this kernel reused
  bool reused_cached = false;      // it reused a kernel cache's record (sim/engine/kernel_cache.h)
  uint64_t extrapolated_ctas = 0;  // CTAs not simulated, counted from the steady waves
  double extrapolated_s = 0;       // the time they took (in the replay)
  Replay pending;                  // left-out work, played back when the simulated CTAs are done
  std::vector<Replay> profile;     // reused: the recorded kernel's segments, played instead
  bool replay_placed = false;      // reused: its replay is past where its record let a newer collective's CTAs in
  // Steady steps extrapolated: a CTA leaves out skip_steps steps from its next step on, or
  // skip_late if it is skip_late_from or later (placed after that was decided).
  uint64_t skip_steps = 0;
  uint64_t skip_late = 0;
  uint64_t skip_late_from = 0;
  uint64_t skipped_steps = 0;      // steps left out by the simulated CTAs, all together
  std::shared_ptr<const StepRate> step_rate;  // set: each CTA plays its left-out steps back in place
  bool count_steps = false;        // the SMs report each step to the dispatcher (steps being watched)
};

}  // namespace xpusim
