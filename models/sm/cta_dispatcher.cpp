#include "models/sm/cta_dispatcher.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <memory>

#include "models/sm/hold_program.h"

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
  for (Sm* sm : sms_) {
    sm->on_cta_done = [this](KernelRun* k) { cta_done(k); };
    sm->on_slot_free = [this] { wake_.notify(sc_core::SC_ZERO_TIME); };
  }
  SC_THREAD(dispatch_thread);
}

void CtaDispatcher::enable_fast_path(const FastPathParams& p, MemoTable* memo, const ClockDomain* clock,
                                     std::vector<Stat*> gpu_stats) {
  fast_ = p.extrapolate || p.memoise;
  if (p.extrapolate)
    for (Sm* sm : sms_) {
      sm->on_step = [this](KernelRun* k) { step_done(k); };
      sm->on_skip = [this](KernelRun* k, uint64_t steps) { skip_steps(k, steps); };
    }
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
  k->submitted = true;
  if (k->submit_log) k->submit_log->push_back(k);
  if (k->program->num_ctas() == 0) {
    k->finished = true;
    k->end_s = k->submit_s;
    finished_.push_back(k);
    kernel_finished.notify(sc_core::SC_ZERO_TIME);
    return;
  }
  k->seq = ++seq_;
  if (fast_) {
    const bool alone = idle();
    if (k->holds_sms) {
      // A collective's CTAs change nothing until they are placed, and they are placed behind the
      // older kernels' CTAs; the watches pause while they are resident (holds_changed).
      holds_.push_back(k);
      active_.push_back(k);
      wake_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    ++submissions_;
    // Another kernel now shares the GPU: waves of the running ones no longer repeat alone.
    for (auto& [run, w] : watched_) w.watch_waves = w.watch_steps = run->count_steps = false;
    // With no kernel on the GPU but a collective's CTAs, a kernel runs as it would again beside
    // the same CTAs held as long: it is recorded and reused under that, and its waves are
    // watched once the CTAs are gone (its steps are not: its first wave is not every SM's).
    const bool beside_holds = !alone && only_holds();
    // Microbenchmarks time a phase of their own run, and injected faults need the real CTAs.
    if ((alone || beside_holds) && k->program->timed_step < 0 && !k->lose_a_cta) {
      Watch w;
      w.submission = submissions_;
      if (fp_.memoise && !k->memo_key.empty()) {
        w.key = k->memo_key + "\nafter: " + last_key_;
        if (beside_holds) w.key += "\nbeside: " + holds_key();
        const auto hit = memo_->find(w.key);
        // A kernel cache's entry: the run's first instance replays the recording run's first.
        const bool first_cached = hit != memo_->end() && hit->second.from_file && hit->second.seen == 0 &&
                                  !hit->second.cold.empty();
        if (hit != memo_->end() && (hit->second.warm || first_cached)) {
          MemoEntry& e = hit->second;
          const uint64_t total = k->program->num_ctas();
          ++e.seen;
          k->reused_from = first_cached ? -1 : e.source_op;
          k->reused_cached = k->reused_from < 0;
          k->profile = first_cached ? e.cold : e.profile;
          k->next_cta = k->done_ctas = total;
          ctas_done_ += total;
          holder_ = k;
          if (on_reuse) on_reuse(*k->program);
          sc_core::sc_spawn([this, k] { play(k); });
          if (beside_holds) wake_.notify(sc_core::SC_ZERO_TIME);  // the older CTAs waiting are placed as they were
          return;
        }
      }
      w.start = snapshot(k);
      const KernelProgram& prog = *k->program;
      const uint64_t total = prog.num_ctas(), wave = wave_size(k);
      if (!w.key.empty()) w.profile_every = std::max<uint64_t>(1, total / kProfileSegments);
      if (fp_.extrapolate) {
        // Where the program says its steps repeat, the first wave's steps are watched: the
        // resident CTAs then leave out the same steady steps (and later CTAs too, where they
        // are bound by the SMs' pipes). Waves are watched too, once that is decided (or
        // failed): whole waves may then be left out as well.
        w.watch_steps = prog.step_period > 0 && !beside_holds;
        w.watch_waves = !w.watch_steps && total > wave;
        w.paused = beside_holds;
        if (w.watch_steps) {
          w.resident = std::min(total, wave);
          // A wave of steps: every resident CTA a few steps on, in whole periods of the program.
          const uint64_t per_cta = prog.step_period * ((kMinStepsPerWave + prog.step_period - 1) / prog.step_period);
          w.step_wave = per_cta * w.resident;
          w.min_steps = prog.steps(0);
          for (uint64_t c = 1; c < total; ++c) w.min_steps = std::min(w.min_steps, prog.steps(c));
        }
        w.waves.push_back(w.start);
      }
      k->count_steps = w.watch_steps;
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
  if (k->holds_sms) {
    const auto h = std::find(holds_.begin(), holds_.end(), k);
    assert(h != holds_.end());
    holds_.erase(h);
  }
  if (k->step_rate && on_replayed) on_replayed({}, true);  // what its CTAs' left-out steps wrote back
  const auto it = watched_.find(k);
  if (it != watched_.end()) {
    const Watch& w = it->second;
    // Recorded only when the kernel had the GPU to itself from submission to end.
    if (!w.key.empty() && w.submission == submissions_) {
      std::vector<Replay> profile;
      const Snapshot end = snapshot(k);
      // A compute-bound kernel (its SMs' pipes busy most of its time) repeats in cycles at
      // whatever clock the governor runs; a memory-bound one in seconds.
      const double secs = k->end_s - k->submit_s;
      const double busy = (k->counters.tensor_busy_s + k->counters.simt_busy_s) / static_cast<double>(sms_.size());
      const bool in_cycles = secs > 0 && busy >= kPipeBound * secs;
      // A kernel that played left-out work back after its last CTAs held the GPU for it, and
      // the collectives' CTAs waiting behind it were placed after that replay: a replay of its
      // record lets them in at the end too. (Steps left out by each CTA in place hold nothing.)
      const bool left_out = k->extrapolated_ctas > 0 || (k->skip_steps > 0 && !k->step_rate);
      const size_t placed_from = left_out ? 0 : w.placed_segment;
      const Snapshot* from = &w.start;
      for (size_t i = 0; i <= w.profile.size(); ++i) {
        const Snapshot& to = i < w.profile.size() ? w.profile[i] : end;
        Replay seg;
        seg.in_cycles = in_cycles;
        seg.all_placed = placed_from > 0 && i >= placed_from;
        seg.amount = seg.in_cycles ? to.cycles - from->cycles : to.t - from->t;
        seg.counters = minus(to.counters, from->counters);
        seg.stats.resize(stats_.size());
        for (size_t j = 0; j < stats_.size(); ++j) seg.stats[j] = to.stats[j] - from->stats[j];
        profile.push_back(std::move(seg));
        from = &to;
      }
      // The first instance is kept (the kernel cache saves it); the second is the one reused.
      MemoEntry& e = (*memo_)[w.key];
      e.warm = e.seen > 0 || !e.cold.empty();
      if (e.cold.empty()) e.cold = profile;
      e.profile = std::move(profile);
      e.source_op = k->index;
      e.changed = true;
      ++e.seen;
    }
    watched_.erase(it);
  }
  if (!k->holds_sms) last_key_ = k->memo_key;
  wake_.notify(sc_core::SC_ZERO_TIME);  // kernels held behind a replay may go
}

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
    const OpCounters p1 = minus(b.counters, a.counters), p2 = minus(c.counters, b.counters), p3 = minus(d.counters, c.counters);
    if (!counters_steady(p2, p1, fp_.tolerance) || !counters_steady(p3, p2, fp_.tolerance)) continue;
    st.counters = minus(d.counters, b.counters);
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

std::string CtaDispatcher::holds_key() const {
  // Each collective's CTAs still to finish and how long they are held from now, in steps of the
  // tolerance (a kernel beside CTAs held that much longer runs that much differently).
  const double now = sc_core::sc_time_stamp().to_seconds(), step = std::log1p(std::max(fp_.tolerance, 1e-6));
  std::string key;
  for (const KernelRun* h : holds_) {
    assert(dynamic_cast<const HoldProgram*>(h->program.get()));
    const double left = static_cast<const HoldProgram&>(*h->program).until() - now;
    const long steps = left > 1e-9 ? std::lround(std::log(left / 1e-9) / step) : -1;
    const CtaResources& r = h->program->resources;  // what room each CTA leaves beside it
    key += std::to_string(h->program->num_ctas() - h->done_ctas) + "x(" + std::to_string(r.threads) + "," +
           std::to_string(r.registers) + "," + std::to_string(r.shared_bytes) + ")x" + std::to_string(steps) + ";";
  }
  return key;
}

void CtaDispatcher::hold_placed(const KernelRun* h) {
  // A collective's CTA placed behind a recorded kernel whose CTAs are all placed: a replay of
  // the kernel lets such CTAs in from the same point of its time.
  for (auto& [k, w] : watched_)
    if (!w.key.empty() && w.placed_segment == 0 && k->seq < h->seq && k->next_cta == k->program->num_ctas()) {
      w.profile.push_back(snapshot(k));
      w.placed_segment = w.profile.size();
    }
}

bool CtaDispatcher::only_holds() const {
  if (holder_ || in_flight_ != held_in_flight_) return false;
  for (const KernelRun* a : active_)
    if (!a->holds_sms) return false;
  return true;
}

void CtaDispatcher::holds_changed() {
  // The SMs left to a kernel change: its waves before and after do not repeat each other, and
  // its resident CTAs' steps are not a wave of a kernel alone. Waves are watched afresh once no
  // collective's CTAs are resident (and none left out while they are: one leaving during a
  // replay would leave the replay paced for fewer SMs).
  for (auto& [k, w] : watched_) {
    if (held_in_flight_ > 0) {
      if (w.watch_steps) stop_watching_steps(k, w);
      w.paused = true;
    } else if (w.paused) {
      w.paused = false;
      w.waves.assign(1, snapshot(k));
      w.wave_base = k->done_ctas;
      // Not where another kernel was submitted since: the GPU is not the kernel's alone.
      w.watch_waves = w.submission == submissions_ && k->program->num_ctas() - k->next_cta > wave_size(k);
    }
  }
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
  if (k->holds_sms) {
    --held_in_flight_;
    if (fast_) holds_changed();
  }
  if (fast_) {
    const auto it = watched_.find(k);
    if (it != watched_.end()) {
      Watch& w = it->second;
      // A CTA of several waves' kernel done before its steps settled: the next wave's CTAs
      // would not leave out the steps the first one ran.
      if (w.watch_steps && k->program->num_ctas() > w.resident) stop_watching_steps(k, w);
      if (w.profile_every > 0 && k->done_ctas % w.profile_every == 0 && k->done_ctas < k->program->num_ctas())
        w.profile.push_back(snapshot(k));
      if (w.watch_waves && !w.paused && (k->done_ctas - w.wave_base) % wave_size(k) == 0) {
        w.waves.push_back(snapshot(k));
        try_extrapolate(k);
      }
    }
  }
  if (k->done_ctas == k->program->num_ctas()) {
    if (fast_ && k->skip_steps > 0 && !k->step_rate) replay_skipped_steps(k, watched_.at(k));
    if (k->pending.amount > 0) sc_core::sc_spawn([this, k] { play(k); });
    else finish(k);
  }
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void CtaDispatcher::dispatch_thread() {
  for (;;) {
    for (auto it = active_.begin(); it != active_.end();) {
      KernelRun* k = *it;
      // A replay holds the GPU, but for a collective's CTAs older than it, or newer than a
      // reused kernel whose replay is past where its record let such CTAs in (Replay::all_placed).
      if (holder_ && k != holder_ && !(k->holds_sms && (k->seq < holder_->seq || holder_->replay_placed))) break;
      const CtaResources& r = k->program->resources;
      const uint64_t total = k->program->num_ctas();
      // Breadth-first: one CTA per SM per pass, so the first wave spreads across all SMs.
      bool placed = true;
      while (k->next_cta < total && placed) {
        placed = false;
        for (size_t i = 0; i < sms_.size() && k->next_cta < total; ++i) {
          Sm* sm = sms_[(next_sm_ + i) % sms_.size()];
          if (sm->can_host(r)) {
            // The CTA holds its room from now and starts at the block scheduler's next turn.
            double start = 0;
            if (launch_interval_s_ > 0) {
              start = std::max(sc_core::sc_time_stamp().to_seconds(), next_launch_s_);
              next_launch_s_ = start + launch_interval_s_;
            }
            sm->launch(k, k->next_cta++, start);
            ++in_flight_;
            if (k->holds_sms) {
              ++held_in_flight_;
              if (fast_) {
                hold_placed(k);
                holds_changed();
              }
            }
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
