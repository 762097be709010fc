// The CTA dispatcher's steady-state extrapolation (models/sm/fast_path.h): what the watched
// waves or steps of a kernel repeat, the left-out work that follows from it, and the replay
// that plays it back. The dispatch, the memo and the collectives' CTAs are in cta_dispatcher.cpp.
#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <memory>

#include "models/sm/cta_dispatcher.h"

namespace xpusim {
namespace {

double rel_change(double a, double b) {
  const double m = std::max(std::fabs(a), std::fabs(b));
  return m > 0 ? std::fabs(a - b) / m : 0;
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

uint64_t CtaDispatcher::wave_size(const KernelRun* k) const {
  return sms_.size() * static_cast<uint64_t>(std::max(1, sms_.front()->capacity(k->program->resources)));
}

CtaDispatcher::Steady CtaDispatcher::steady(const std::vector<Snapshot>& waves, size_t sms, uint64_t steps_per_wave) const {
  const size_t n = waves.size();  // [0]: submission; [i]: after i waves
  // A steady state may repeat every wave or every few (a raster that reuses operands in L2 every
  // other wave): compare the last `period` waves with the `period`s before them. The first wave
  // fills the pipeline from empty and never counts.
  // Three periods in a row must agree (two agreeing by chance is not a steady state); the
  // replay repeats their mean.
  // Work booked before a clock change drains at the old clock: a period across one is in
  // neither seconds nor cycles what its work costs at either clock, by up to a step's work per
  // CTA. Periods of fewer than kStepsAcrossChange steps across a change are not trusted; where
  // the clock has moved (a governor at its limit moves it every few windows), periods that long
  // are compared instead (the shortest that long), beyond kMaxPeriod waves if need be. A wave
  // of no steps never is.
  const size_t across = steps_per_wave == 0 ? std::numeric_limits<size_t>::max()
                                            : static_cast<size_t>((kStepsAcrossChange + steps_per_wave - 1) / steps_per_wave);
  for (size_t period = 1; period <= std::max(kMaxPeriod, across) && n >= 3 * period + 2; ++period) {
    const Snapshot& a = waves[n - 1 - 3 * period];
    const Snapshot& b = waves[n - 1 - 2 * period];
    const Snapshot& c = waves[n - 1 - period];
    const Snapshot& d = waves[n - 1];
    if (clock_->moved_s() > a.t ? period < across : period > kMaxPeriod) continue;
    Steady st;
    st.secs = (d.t - b.t) / 2;
    st.cycles = (d.cycles - b.cycles) / 2;
    const double e_secs = std::max(rel_change(d.t - c.t, c.t - b.t), rel_change(c.t - b.t, b.t - a.t));
    const double e_cycles = std::max(rel_change(d.cycles - c.cycles, c.cycles - b.cycles),
                                     rel_change(c.cycles - b.cycles, b.cycles - a.cycles));
    const bool secs_hold = e_secs <= fp_.tolerance, cycles_hold = e_cycles <= fp_.tolerance;
    if (!secs_hold && !cycles_hold) continue;
    const OpCounters p1 = counters_minus(b.counters, a.counters), p2 = counters_minus(c.counters, b.counters), p3 = counters_minus(d.counters, c.counters);
    if (!counters_steady(p2, p1, fp_.tolerance) || !counters_steady(p3, p2, fp_.tolerance)) continue;
    st.counters = counters_minus(d.counters, b.counters);
    st.counters.scale(0.5);
    st.busy = st.secs > 0 ? (st.counters.tensor_busy_s + st.counters.simt_busy_s) / static_cast<double>(sms) / st.secs : 0;
    // Work bound by the SMs' pipes (busy at least half the period) repeats in cycles at whatever
    // clock a governor sets later, whichever held steadier while it was measured (a clock change
    // inside the periods upsets both, as work booked at the old clock drains); other work in
    // whichever held steady (seconds where both did).
    st.in_cycles = st.busy >= kPipeBound || (cycles_hold && !secs_hold);
    st.stats.resize(stats_.size());
    for (size_t i = 0; i < stats_.size(); ++i) st.stats[i] = (d.stats[i] - b.stats[i]) / 2;
    st.period = period;
    return st;
  }
  return Steady{};
}

void CtaDispatcher::schedule_replay(KernelRun* k, const Steady& st, double repeats, double work) {
  Replay& r = k->pending;
  double amount = repeats * (st.in_cycles ? st.cycles : st.secs);
  if (r.amount <= 0) {
    r.in_cycles = st.in_cycles;
  } else if (r.in_cycles != st.in_cycles) {
    // Skipped waves and then skipped steps of one kernel that settled in different units (rare:
    // both are usually bound by the SMs or both not): today's clock converts.
    amount = st.in_cycles ? amount / clock_->hz() : amount * clock_->hz();
  }
  add_scaled(r.counters, st.counters, work);
  r.stats.resize(st.stats.size());
  for (size_t i = 0; i < st.stats.size(); ++i) r.stats[i] += st.stats[i] * work;
  r.amount += amount;
  holder_ = k;
}

void CtaDispatcher::try_extrapolate(KernelRun* k) {
  Watch& w = watched_[k];
  const Steady st = steady(w.waves, sms_.size(), k->program->steps(0));
  if (st.period == 0) return;
  w.watch_waves = false;  // decided: skip now or never
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
  schedule_replay(k, st, static_cast<double>(repeats), static_cast<double>(repeats));
}

void CtaDispatcher::stop_watching_steps(KernelRun* k, Watch& w) {
  w.watch_steps = k->count_steps = false;
  // Several waves: their whole waves may still repeat; the first wave never counts, so its
  // snapshots start over from the submission.
  if (k->program->num_ctas() > wave_size(k)) {
    w.watch_waves = true;
    w.waves.assign(1, w.start);
  }
}

void CtaDispatcher::try_extrapolate_steps(KernelRun* k) {
  Watch& w = watched_[k];
  const Steady st = steady(w.waves, std::min<size_t>(sms_.size(), w.resident), w.step_wave / w.resident);
  if (st.period == 0) return;
  const KernelProgram& prog = *k->program;
  // The resident CTAs leave out the same steps, so they stay in step; the one with the fewest
  // steps keeps a margin of a few waves beyond where the average one stands, for the stragglers.
  const uint64_t per_wave = w.step_wave / w.resident;  // steps per CTA per wave of steps
  const uint64_t depth = static_cast<uint64_t>(std::max(1, prog.stages));
  const uint64_t at = (w.waves.size() + 3) * per_wave + depth;
  stop_watching_steps(k, w);
  if (w.min_steps <= at) return;
  const uint64_t unit = st.period * per_wave;  // steps per CTA in a steady period
  const uint64_t first = (w.min_steps - at) / unit * unit;
  if (first == 0) return;
  k->skip_steps = first;
  k->skip_late_from = k->next_cta;
  if (st.busy < kSmBound) {
    // Steps bound by the memory system share it with the CTAs beside them: CTAs placed later run
    // in full (whole waves of them may still be left out), and the resident ones' left-out
    // steps are played back when the CTAs are done.
    w.step_steady = st;
    w.step_unit = unit;
    holder_ = k;
    return;
  }
  // Steps bound by the SM's own pipes: CTAs placed from now on start afresh, fill their
  // pipeline, leave out all but the last few steps (a drain's worth, and a wave of steps), and
  // drain; the partial last wave's CTAs leave steps out too, as fewer CTAs beside them change
  // nothing. Each CTA plays its left-out steps back where it leaves them out, at the steady
  // period's rate: its time (or cycles) per `unit` steps, and a resident CTA's share of its work.
  const uint64_t keep = depth + std::max(depth, per_wave);
  const uint64_t p = std::max<uint64_t>(1, prog.step_period);
  k->skip_late = w.min_steps > keep ? (w.min_steps - keep) / p * p : 0;
  auto rate = std::make_shared<StepRate>();
  rate->in_cycles = st.in_cycles;
  rate->per_step = (st.in_cycles ? st.cycles : st.secs) / static_cast<double>(unit);
  const double share = 1.0 / (static_cast<double>(unit) * static_cast<double>(w.resident));
  add_scaled(rate->counters, st.counters, share);
  rate->stats.resize(st.stats.size());
  for (size_t i = 0; i < st.stats.size(); ++i) rate->stats[i] = st.stats[i] * share;
  rate->slot_share = 1.0 / static_cast<double>(w.resident);
  k->step_rate = std::move(rate);
}

void CtaDispatcher::skip_steps(KernelRun* k, uint64_t steps) {
  const StepRate& r = *k->step_rate;
  const double t0 = sc_core::sc_time_stamp().to_seconds();
  accrue(k, r.counters, r.stats, static_cast<double>(steps), static_cast<double>(steps) * r.per_step, r.in_cycles, false);
  k->extrapolated_s += (sc_core::sc_time_stamp().to_seconds() - t0) * r.slot_share;
}

void CtaDispatcher::replay_skipped_steps(KernelRun* k, const Watch& w) {
  // A period of steps was measured over the resident CTAs at once, and only they left steps out
  // (skip_steps each): the time is one slot's, the counters every CTA's.
  const double unit = static_cast<double>(w.step_unit);
  schedule_replay(k, w.step_steady, static_cast<double>(k->skip_steps) / unit,
                  static_cast<double>(k->skipped_steps) / (unit * static_cast<double>(w.resident)));
}

void CtaDispatcher::accrue(KernelRun* k, const OpCounters& c, const std::vector<double>& stats, double n, double amount,
                           bool in_cycles, bool flush) {
  // In slices that end on the replay ticks' boundaries (multiples of the tick, as the governor's
  // windows are), each slice's counters booked as it starts: a window then sees the work done in
  // it, not the work of the window before. (The governor closes a window before a process
  // waking on its boundary runs; work booked at the end of its slice would count in the next.)
  const double tick = fp_.replay_tick_s;
  const double t0 = sc_core::sc_time_stamp().to_seconds(), y0 = clock_->cycles(t0);
  double applied = 0;
  std::vector<double> added(stats.size(), 0.0);
  for (;;) {
    const double t = sc_core::sc_time_stamp().to_seconds();
    const double done = amount > 0 ? std::min(1.0, (in_cycles ? clock_->cycles(t) - y0 : t - t0) / amount) : 1;
    const double left = (1 - done) * amount / (in_cycles ? clock_->hz() : 1.0);  // seconds at today's clock
    const double boundary = next_tick_boundary(t, tick);
    const double slice = std::min(left, boundary - t);
    const double f = left < 1e-12 || slice >= left ? 1.0 : done + (1 - done) * slice / left;
    // The counters accrue evenly over the time: a governor's windows see the load.
    const double step = n * (f - applied);
    add_scaled(k->counters, c, step);
    for (size_t i = 0; i < stats_.size() && i < stats.size(); ++i) {
      stats_[i]->value += stats[i] * step;
      added[i] += stats[i] * step;
    }
    applied = f;
    if (slice >= kShortestWait) {
      ++replay_ticks_;
      sc_core::wait(sc_core::sc_time(slice, sc_core::SC_SEC));
    }
    if (f >= 1) break;
  }
  if (on_replayed) on_replayed(added, flush);
}

void CtaDispatcher::step_done(KernelRun* k) {
  // Called only while k->count_steps: the kernel is watched and its steps are.
  Watch& w = watched_[k];
  if (++w.steps % w.step_wave != 0) return;
  w.waves.push_back(snapshot(k));
  try_extrapolate_steps(k);
}

void CtaDispatcher::play(KernelRun* k) {
  const double t0 = sc_core::sc_time_stamp().to_seconds();
  if (!k->profile.empty()) {
    for (size_t i = 0; i < k->profile.size(); ++i) {
      const Replay& r = k->profile[i];
      if (r.all_placed && !k->replay_placed) {
        k->replay_placed = true;
        wake_.notify(sc_core::SC_ZERO_TIME);  // the collectives' CTAs waiting behind it go
      }
      accrue(k, r.counters, r.stats, 1.0, r.amount, r.in_cycles, i + 1 == k->profile.size());
    }
  } else {
    const Replay& r = k->pending;
    accrue(k, r.counters, r.stats, 1.0, r.amount, r.in_cycles, true);
  }
  if (k->reused_from < 0 && !k->reused_cached) k->extrapolated_s += sc_core::sc_time_stamp().to_seconds() - t0;  // left-out waves or steps
  finish(k);
}

}  // namespace xpusim
