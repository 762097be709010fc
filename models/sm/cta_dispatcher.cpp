#include "models/sm/cta_dispatcher.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace xpusim {
namespace {

double rel_change(double a, double b) {
  const double m = std::max(std::fabs(a), std::fabs(b));
  return m > 0 ? std::fabs(a - b) / m : 0;
}

OpCounters minus(const OpCounters& a, const OpCounters& b) {
  OpCounters d = a;
  add_scaled(d, b, -1);
  return d;
}

double macs(const OpCounters& c) {
  double s = 0;
  for (double x : c.tensor_macs) s += x;
  return s;
}

// The counters whose per-wave change decides a steady state: the work (MACs, lane operations,
// instructions) and the traffic at each level (L1, L2, HBM), which carry the energy.
bool counters_steady(const OpCounters& a, const OpCounters& b, double tol) {
  const double pairs[][2] = {
      {macs(a), macs(b)},
      {a.fp32_ops + a.hfma_ops + a.dp4a_ops + a.sfu_ops, b.fp32_ops + b.hfma_ops + b.dp4a_ops + b.sfu_ops},
      {a.instr_mma + a.instr_simt + a.instr_mem, b.instr_mma + b.instr_simt + b.instr_mem},
      {a.l1_read_bytes + a.smem_read_bytes + a.smem_write_bytes, b.l1_read_bytes + b.smem_read_bytes + b.smem_write_bytes},
      {a.l2_read_bytes + a.l2_write_bytes, b.l2_read_bytes + b.l2_write_bytes},
      {a.hbm_read_bytes + a.hbm_write_bytes, b.hbm_read_bytes + b.hbm_write_bytes},
  };
  for (const auto& p : pairs) {
    if (rel_change(p[0], p[1]) > tol) return false;
  }
  return true;
}

}  // namespace

CtaDispatcher::CtaDispatcher(sc_core::sc_module_name name, std::vector<Sm*> sms)
    : sc_module(name), sms_(std::move(sms)) {
  for (Sm* sm : sms_) sm->on_cta_done = [this](KernelRun* k) { cta_done(k); };
  SC_THREAD(dispatch_thread);
}

void CtaDispatcher::enable_fast_path(const FastPathParams& p, MemoTable* memo, const ClockDomain* clock,
                                     std::vector<Stat*> gpu_stats) {
  fast_ = p.extrapolate || p.memoise;
  if (p.extrapolate)
    for (Sm* sm : sms_) sm->on_step = [this](KernelRun* k) { step_done(k); };
  fp_ = p;
  memo_ = memo;
  clock_ = clock;
  stats_ = std::move(gpu_stats);
  assert(!fast_ || (clock_ && (memo_ || !p.memoise)));
}

CtaDispatcher::Snapshot CtaDispatcher::snapshot(const KernelRun* k) const {
  Snapshot s;
  s.t = sc_core::sc_time_stamp().to_seconds();
  s.cycles = clock_->cycles(s.t);
  s.counters = k->counters;
  s.stats.reserve(stats_.size());
  for (const Stat* x : stats_) s.stats.push_back(x->value);
  return s;
}

void CtaDispatcher::submit(KernelRun* k) {
  k->submit_s = sc_core::sc_time_stamp().to_seconds();
  if (k->program->num_ctas() == 0) {
    k->finished = true;
    k->end_s = k->submit_s;
    finished_.push_back(k);
    kernel_finished.notify(sc_core::SC_ZERO_TIME);
    return;
  }
  if (fast_) {
    const bool alone = idle();
    ++submissions_;
    // Another kernel now shares the GPU: waves of the running ones no longer repeat alone.
    for (auto& [run, w] : watched_) w.extrapolating = run->count_steps = false;
    // Microbenchmarks time a phase of their own run, and injected faults need the real CTAs.
    if (alone && k->program->timed_step < 0 && !k->lose_a_cta) {
      Watch w;
      w.submission = submissions_;
      if (fp_.memoise && !k->memo_key.empty()) {
        w.key = k->memo_key + "\nafter: " + last_key_;
        const auto hit = memo_->find(w.key);
        if (hit != memo_->end()) {
          const uint64_t total = k->program->num_ctas();
          k->reused_from = hit->second.source_op;
          k->pending = hit->second.replay;
          k->next_cta = k->done_ctas = total;
          ctas_done_ += total;
          holder_ = k;
          sc_core::sc_spawn([this, k] { play(k); });
          return;
        }
      }
      w.start = snapshot(k);
      w.extrapolating = fp_.extrapolate;
      const KernelProgram& prog = *k->program;
      const uint64_t total = prog.num_ctas();
      if (total <= wave_size(k)) {
        // One wave: only steps can repeat, where the program says they do.
        w.by_steps = prog.step_period > 0;
        w.extrapolating = w.extrapolating && w.by_steps;
        if (w.extrapolating) {
          // A wave of steps: every CTA a few steps on, in whole periods of the program.
          const uint64_t per_cta = prog.step_period * ((kMinStepsPerWave + prog.step_period - 1) / prog.step_period);
          w.step_wave = per_cta * total;
          w.min_steps = prog.steps(0);
          for (uint64_t c = 1; c < total; ++c) w.min_steps = std::min(w.min_steps, prog.steps(c));
        }
      }
      if (w.extrapolating) w.waves.push_back(w.start);
      k->count_steps = w.extrapolating && w.by_steps;
      watched_[k] = std::move(w);
    }
  }
  active_.push_back(k);
  wake_.notify(sc_core::SC_ZERO_TIME);
}

std::vector<KernelRun*> CtaDispatcher::take_finished() {
  std::vector<KernelRun*> out;
  out.swap(finished_);
  if (spinning_) kernel_finished.notify(sc_core::SC_ZERO_TIME);
  return out;
}

void CtaDispatcher::finish(KernelRun* k) {
  k->finished = true;
  k->end_s = sc_core::sc_time_stamp().to_seconds();
  finished_.push_back(k);
  kernel_finished.notify(sc_core::SC_ZERO_TIME);
  if (!fast_) return;
  if (holder_ == k) holder_ = nullptr;
  const auto it = watched_.find(k);
  if (it != watched_.end()) {
    const Watch& w = it->second;
    // Recorded only when the kernel had the GPU to itself from submission to end.
    if (!w.key.empty() && w.submission == submissions_) {
      MemoEntry e;
      e.source_op = k->index;
      e.replay.counters = k->counters;
      const Snapshot end = snapshot(k);
      e.replay.stats.resize(stats_.size());
      for (size_t i = 0; i < stats_.size(); ++i) e.replay.stats[i] = end.stats[i] - w.start.stats[i];
      // A compute-bound kernel (its SMs' pipes busy most of its time) repeats in cycles at
      // whatever clock the governor runs; a memory-bound one in seconds.
      const double secs = k->end_s - k->submit_s;
      const double busy = (k->counters.tensor_busy_s + k->counters.simt_busy_s) / static_cast<double>(sms_.size());
      e.replay.in_cycles = secs > 0 && busy >= 0.5 * secs;
      e.replay.amount = e.replay.in_cycles ? end.cycles - w.start.cycles : secs;
      memo_->emplace(w.key, std::move(e));
    }
    watched_.erase(it);
  }
  last_key_ = k->memo_key;
  wake_.notify(sc_core::SC_ZERO_TIME);  // kernels held behind a replay may go
}

uint64_t CtaDispatcher::wave_size(const KernelRun* k) const {
  return sms_.size() * static_cast<uint64_t>(std::max(1, sms_.front()->capacity(k->program->resources)));
}

CtaDispatcher::Steady CtaDispatcher::steady(const std::vector<Snapshot>& waves) const {
  const size_t n = waves.size();  // [0]: submission; [i]: after i waves
  // A steady state may repeat every wave or every few (a raster that reuses operands in L2 every
  // other wave): compare the last `period` waves with the `period`s before them. The first wave
  // fills the pipeline from empty and never counts.
  // Three periods in a row must agree (two agreeing by chance is not a steady state); the
  // replay repeats their mean.
  for (size_t period = 1; period <= kMaxPeriod && n >= 3 * period + 2; ++period) {
    const Snapshot& a = waves[n - 1 - 3 * period];
    const Snapshot& b = waves[n - 1 - 2 * period];
    const Snapshot& c = waves[n - 1 - period];
    const Snapshot& d = waves[n - 1];
    Steady st;
    st.secs = (d.t - b.t) / 2;
    st.cycles = (d.cycles - b.cycles) / 2;
    const double e_secs = std::max(rel_change(d.t - c.t, c.t - b.t), rel_change(c.t - b.t, b.t - a.t));
    const double e_cycles = std::max(rel_change(d.cycles - c.cycles, c.cycles - b.cycles),
                                     rel_change(c.cycles - b.cycles, b.cycles - a.cycles));
    // Under a power governor the clock moves: a compute-bound wave then repeats in cycles.
    st.in_cycles = e_cycles < e_secs;
    if (std::min(e_secs, e_cycles) > fp_.tolerance) continue;
    const OpCounters p1 = minus(b.counters, a.counters), p2 = minus(c.counters, b.counters), p3 = minus(d.counters, c.counters);
    if (!counters_steady(p2, p1, fp_.tolerance) || !counters_steady(p3, p2, fp_.tolerance)) continue;
    st.counters = minus(d.counters, b.counters);
    st.counters.scale(0.5);
    st.stats.resize(stats_.size());
    for (size_t i = 0; i < stats_.size(); ++i) st.stats[i] = (d.stats[i] - b.stats[i]) / 2;
    st.period = period;
    return st;
  }
  return Steady{};
}

void CtaDispatcher::schedule_replay(KernelRun* k, const Steady& st, uint64_t repeats) {
  const double n = static_cast<double>(repeats);
  Replay& r = k->pending;
  r.counters = OpCounters{};
  add_scaled(r.counters, st.counters, n);
  r.stats.resize(st.stats.size());
  for (size_t i = 0; i < st.stats.size(); ++i) r.stats[i] = st.stats[i] * n;
  r.amount = n * (st.in_cycles ? st.cycles : st.secs);
  r.in_cycles = st.in_cycles;
  holder_ = k;
}

void CtaDispatcher::try_extrapolate(KernelRun* k) {
  Watch& w = watched_[k];
  const Steady st = steady(w.waves);
  if (st.period == 0) return;
  w.extrapolating = false;  // decided: skip now or never
  const uint64_t wave = wave_size(k);
  const uint64_t unplaced = (k->program->num_ctas() - k->next_cta) / wave;  // whole waves not yet placed
  if (unplaced <= static_cast<uint64_t>(fp_.tail_waves)) return;
  const uint64_t repeats = (unplaced - static_cast<uint64_t>(fp_.tail_waves)) / st.period;
  if (repeats == 0) return;
  const uint64_t skip = repeats * st.period * wave;
  k->next_cta += skip;
  k->done_ctas += skip;
  ctas_done_ += skip;
  k->extrapolated_ctas = skip;
  schedule_replay(k, st, repeats);
}

void CtaDispatcher::try_extrapolate_steps(KernelRun* k) {
  Watch& w = watched_[k];
  const Steady st = steady(w.waves);
  if (st.period == 0) return;
  w.extrapolating = k->count_steps = false;
  // Every CTA leaves out the same steps, so the kernel stays in step; the CTA with the fewest
  // steps keeps a margin of a few waves beyond where the average CTA stands, for the stragglers.
  const uint64_t per_wave = w.step_wave / k->program->num_ctas();  // steps per CTA per wave
  const uint64_t at = (w.waves.size() + 3) * per_wave + static_cast<uint64_t>(std::max(1, k->program->stages));
  if (w.min_steps <= at) return;
  const uint64_t repeats = (w.min_steps - at) / (st.period * per_wave);
  if (repeats == 0) return;
  k->skip_steps = repeats * st.period * per_wave;
  schedule_replay(k, st, repeats);
}

void CtaDispatcher::step_done(KernelRun* k) {
  // Called only while k->count_steps: the kernel is watched and extrapolates by steps.
  Watch& w = watched_[k];
  if (++w.steps % w.step_wave != 0) return;
  w.waves.push_back(snapshot(k));
  try_extrapolate_steps(k);
}

void CtaDispatcher::play(KernelRun* k) {
  const Replay& r = k->pending;
  const double t0 = sc_core::sc_time_stamp().to_seconds(), y0 = clock_->cycles(t0);
  double applied = 0;
  for (;;) {
    const double t = sc_core::sc_time_stamp().to_seconds();
    const double done = r.amount > 0 ? (r.in_cycles ? clock_->cycles(t) - y0 : t - t0) / r.amount : 1;
    const double f = std::min(1.0, done);
    // The counters accrue evenly over the replay: a governor's windows see the load.
    add_scaled(k->counters, r.counters, f - applied);
    applied = f;
    if (f >= 1) break;
    const double left = (1 - f) * r.amount / (r.in_cycles ? clock_->hz() : 1.0);
    if (left < 1e-12) {
      add_scaled(k->counters, r.counters, 1 - applied);
      break;
    }
    ++replay_ticks_;
    sc_core::wait(sc_core::sc_time(std::min(left, fp_.replay_tick_s), sc_core::SC_SEC));
  }
  for (size_t i = 0; i < stats_.size() && i < r.stats.size(); ++i) stats_[i]->value += r.stats[i];
  if (k->extrapolated_ctas > 0 || k->skip_steps > 0) k->extrapolated_s = sc_core::sc_time_stamp().to_seconds() - t0;
  finish(k);
}

void CtaDispatcher::cta_done(KernelRun* k) {
  // Fault injection (XPUSIM_FAULT=lose-cta:OP, docs/reliability.md): the first CTA's completion
  // of the marked kernel never arrives, as a lost transaction would leave it.
  if (k->lose_a_cta) {
    k->lose_a_cta = false;
    // XPUSIM_FAULT=livelock:OP: the lost completion also leaves the dispatcher announcing a
    // finished kernel at every delta cycle with none finished, so simulated time stops.
    if (k->spin_after_loss) {
      spinning_ = true;
      kernel_finished.notify(sc_core::SC_ZERO_TIME);
    }
    return;
  }
  ++ctas_done_;
  --in_flight_;
  ++k->done_ctas;
  if (fast_) {
    const auto it = watched_.find(k);
    if (it != watched_.end() && it->second.extrapolating && !it->second.by_steps) {
      if (k->done_ctas % wave_size(k) == 0) {
        it->second.waves.push_back(snapshot(k));
        try_extrapolate(k);
      }
    }
  }
  if (k->done_ctas == k->program->num_ctas()) {
    if (k->pending.amount > 0) sc_core::sc_spawn([this, k] { play(k); });
    else finish(k);
  }
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void CtaDispatcher::dispatch_thread() {
  for (;;) {
    for (auto it = active_.begin(); it != active_.end();) {
      KernelRun* k = *it;
      if (holder_ && k != holder_) break;  // a replay holds the GPU
      const CtaResources& r = k->program->resources;
      const uint64_t total = k->program->num_ctas();
      // Breadth-first: one CTA per SM per pass, so the first wave spreads across all SMs.
      bool placed = true;
      while (k->next_cta < total && placed) {
        placed = false;
        for (size_t i = 0; i < sms_.size() && k->next_cta < total; ++i) {
          Sm* sm = sms_[(next_sm_ + i) % sms_.size()];
          if (sm->can_host(r)) {
            sm->launch(k, k->next_cta++);
            ++in_flight_;
            placed = true;
          }
        }
        next_sm_ = (next_sm_ + 1) % sms_.size();
      }
      if (k->next_cta == total) it = active_.erase(it);
      else break;  // older kernel still waiting for room: younger ones wait behind it
    }
    wait(wake_);
  }
}

}  // namespace xpusim
