#include "models/sm/cta_dispatcher.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <memory>

#include "models/sm/hold_program.h"

namespace xpusim {

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
      ++hold_changes_;
      active_.push_back(k);
      wake_.notify(sc_core::SC_ZERO_TIME);
      return;
    }
    ++submissions_;
    // Another kernel now shares the GPU: waves of the running ones no longer repeat alone.
    for (auto& [run, w] : watched_) w.watch_waves = w.watch_steps = run->count_steps = false;
    // With no kernel on the GPU but a collective's CTAs, a kernel runs as it would again beside
    // the same CTAs held as long (or, where they outlast it, beside the same CTAs held at least
    // as long): it is recorded and reused under that, and its waves are watched once the CTAs
    // are gone (its steps are not: its first wave is not every SM's).
    const bool beside_holds = !alone && only_holds();
    // Microbenchmarks time a phase of their own run, and injected faults need the real CTAs.
    if ((alone || beside_holds) && k->program->timed_step < 0 && !k->lose_a_cta) {
      Watch w;
      w.submission = submissions_;
      if (fp_.memoise && !k->memo_key.empty()) {
        w.key = k->memo_key + "\nafter: " + last_key_;
        // A kernel's entry to replay, if it has one: a kernel cache's entry replays the
        // recording run's first instance for this run's first.
        const auto usable = [this](MemoTable::iterator e) -> const std::vector<Replay>* {
          if (e == memo_->end()) return nullptr;
          if (e->second.from_file && e->second.seen == 0 && !e->second.cold.empty()) return &e->second.cold;
          return e->second.warm ? &e->second.profile : nullptr;
        };
        auto hit = memo_->end();
        const std::vector<Replay>* replay = nullptr;
        // Beside collectives' CTAs, all placed, that stay until it ends, a kernel runs as it did
        // beside the same CTAs before, however long they stay after it; else as it did beside
        // CTAs held as long from its start. A replay converts cycles at today's clock, which a
        // governor may lower while it runs: the CTAs must stay a margin longer.
        if (beside_holds) {
          if (std::all_of(holds_.begin(), holds_.end(),
                          [](const KernelRun* h) { return h->next_cta == h->program->num_ctas(); })) {
            w.outlast_key = w.key + "\nbeside: " + holds_key(false) + "\noutlasted";
            w.hold_changes = hold_changes_;
            hit = memo_->find(w.outlast_key);
            replay = usable(hit);
            if (replay && replay_seconds(*replay) * (1 + kOutlastMargin) > holds_left()) replay = nullptr;
          }
          w.key += "\nbeside: " + holds_key(true);
        }
        if (!replay) replay = usable(hit = memo_->find(w.key));
        if (replay) {
          const bool first_cached = replay == &hit->second.cold;
          MemoEntry& e = hit->second;
          const uint64_t total = k->program->num_ctas();
          ++e.seen;
          k->reused_from = first_cached ? -1 : e.source_op;
          k->reused_cached = k->reused_from < 0;
          k->profile = *replay;
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
    holds_.erase(h);  // its last CTA's cta_done counted in hold_changes_
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
        seg.counters = counters_minus(to.counters, from->counters);
        seg.stats.resize(stats_.size());
        for (size_t j = 0; j < stats_.size(); ++j) seg.stats[j] = to.stats[j] - from->stats[j];
        profile.push_back(std::move(seg));
        from = &to;
      }
      // The first instance is kept (the kernel cache saves it); the second is the one reused.
      const bool outlasted = !w.outlast_key.empty() && w.hold_changes == hold_changes_;
      MemoEntry& e = (*memo_)[outlasted ? w.outlast_key : w.key];
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

double CtaDispatcher::holds_left() const {
  double left = std::numeric_limits<double>::infinity();
  for (const KernelRun* h : holds_) {
    assert(dynamic_cast<const HoldProgram*>(h->program.get()));
    left = std::min(left, static_cast<const HoldProgram&>(*h->program).until());
  }
  return left - sc_core::sc_time_stamp().to_seconds();
}

double CtaDispatcher::replay_seconds(const std::vector<Replay>& profile) const {
  double s = 0;
  for (const Replay& r : profile) s += r.in_cycles ? r.amount / clock_->hz() : r.amount;
  return s;
}

std::string CtaDispatcher::holds_key(bool timed) const {
  // Each collective's CTAs still to finish and, `timed`, how long they are held from now, in
  // steps of the tolerance (a kernel beside CTAs held that much longer runs that much differently).
  const double now = sc_core::sc_time_stamp().to_seconds(), step = std::log1p(std::max(fp_.tolerance, 1e-6));
  std::string key;
  for (const KernelRun* h : holds_) {
    assert(dynamic_cast<const HoldProgram*>(h->program.get()));
    const double left = static_cast<const HoldProgram&>(*h->program).until() - now;
    const long steps = left > 1e-9 ? std::lround(std::log(left / 1e-9) / step) : -1;
    const CtaResources& r = h->program->resources;  // what room each CTA leaves beside it
    key += std::to_string(h->program->num_ctas() - h->done_ctas) + "x(" + std::to_string(r.threads) + "," +
           std::to_string(r.registers) + "," + std::to_string(r.shared_bytes) + ")";
    key += timed ? "x" + std::to_string(steps) + ";" : ";";
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
  ++hold_changes_;
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
