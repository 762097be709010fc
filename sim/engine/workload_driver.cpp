#include "sim/engine/workload_driver.h"

#include <algorithm>
#include <queue>
#include <sstream>

#include "sim/config/units.h"

namespace xpusim::engine {

namespace {
// Wake-ups at one simulated instant with nothing finishing before the driver calls it a
// livelock (time has stopped advancing). A busy instant wakes it a few times per kernel.
constexpr uint64_t kMaxSpinsAtOneInstant = 1'000'000;
constexpr size_t kOpsListed = 12;
}  // namespace

WorkloadDriver::WorkloadDriver(sc_core::sc_module_name name, std::vector<DriverOp>& ops,
                               std::vector<std::vector<size_t>> preds, const LaunchCosts& launch,
                               std::vector<CtaDispatcher*> dispatchers, Fabric* fabric,
                               const CollectiveParams& collectives)
    : sc_module(name),
      ops_(ops),
      preds_(std::move(preds)),
      launch_(launch),
      dispatchers_(std::move(dispatchers)),
      fabric_(fabric),
      collectives_(collectives),
      state_(ops.size(), State::waiting) {
  SC_THREAD(run);
}

uint64_t WorkloadDriver::progress() const {
  uint64_t p = done_;
  for (const CtaDispatcher* d : dispatchers_) p += d->ctas_done();
  return p;
}

bool WorkloadDriver::collective_in_flight() const {
  for (size_t i = 0; i < ops_.size(); ++i)
    if (state_[i] == State::running && ops_[i].collective) return true;
  return false;
}

void WorkloadDriver::record_stall(const std::string& why) {
  std::ostringstream os;
  os << "simulation stalled: " << why << "; " << ops_.size() - done_ << " of " << ops_.size() << " ops unfinished";
  size_t listed = 0;
  for (size_t i = 0; i < ops_.size() && listed < kOpsListed; ++i) {
    if (state_[i] == State::done) continue;
    ++listed;
    const DriverOp& op = ops_[i];
    os << "\n  " << op.label << ": ";
    switch (state_[i]) {
      case State::waiting: {
        os << "waits for";
        size_t shown = 0;
        for (size_t p : preds_[i])
          if (state_[p] != State::done && shown++ < 3) os << (shown > 1 ? ", " : " ") << ops_[p].label;
        break;
      }
      case State::ready: os << "ready, not yet launched"; break;
      case State::running:
        if (op.collective) {
          os << "collective in flight on the fabric until "
             << units::format(op.collective_run->end_s, units::Dim::Time);
          break;
        }
        for (const auto* kernels : {&op.kernels, &op.tail})
          for (const auto& [k, d] : *kernels) {
            // A second kernel is listed once the first has finished.
            if (k->finished || (k->tail && !op.kernels.front().first->finished)) continue;
            const uint64_t total = k->program->num_ctas();
            os << "running on " << d->name() << (k->tail ? " (second kernel)" : "") << ": " << k->done_ctas << " of "
               << total << " CTAs finished, " << k->next_cta - k->done_ctas << " in flight on SMs, " << total - k->next_cta
               << " not yet placed";
          }
        break;
      case State::done: break;
    }
  }
  if (ops_.size() - done_ > listed) os << "\n  ... and " << ops_.size() - done_ - listed << " more";
  stall_ = os.str();
}

void start_slice(sc_core::sc_time until, bool& started, bool skip_empty) {
  if (!skip_empty || !started || sc_core::sc_time_to_pending_activity() <= until - sc_core::sc_time_stamp())
    sc_core::sc_start(until - sc_core::sc_time_stamp(), sc_core::SC_EXIT_ON_STARVATION);
  started = true;
}

void WorkloadDriver::run_watched(double window_s, double tick_s, const Tick& tick, const std::function<void()>& on_slice,
                                 double slice_s) {
  const sc_core::sc_time window(window_s, sc_core::SC_SEC);
  const sc_core::sc_time tick_len(tick ? tick_s : 0, sc_core::SC_SEC);
  sc_core::sc_time watch = sc_core::SC_ZERO_TIME, ticked = sc_core::SC_ZERO_TIME;
  // Progress slices without a governor: they end at multiples of slice_s, and one with no event
  // in it is skipped like a governor's (time rests at the last event, so slices counted from
  // the clock would never pass a gap longer than one slice).
  const bool slicing = !tick && on_slice && slice_s > 0;
  const sc_core::sc_time slice_len(slicing ? slice_s : 0, sc_core::SC_SEC);
  sc_core::sc_time sliced = sc_core::SC_ZERO_TIME;
  bool started = false;
  for (uint64_t seen = progress();;) {
    // One watchdog window, in the governor's slices where there is one. sc_start stops early
    // when run() calls sc_stop (all done, or a livelock) or the events run out; the clock may
    // then rest at the last event before the slice's end.
    watch += window;
    for (;;) {
      sc_core::sc_time until = tick ? std::min(ticked + tick_len, watch) : watch;
      if (slicing) until = std::min(until, sliced + slice_len);
      start_slice(until, started, tick || slicing);
      if (slicing) sliced = until;
      const bool finished = all_done() || !stall_.empty() || !sc_core::sc_pending_activity();
      if (tick) {
        // Time rests at the last event before `until` when the next one lies beyond it: nothing
        // happens in between, so the slice still ends at `until`.
        const sc_core::sc_time end = finished ? sc_core::sc_time_stamp() : until;
        if (end > ticked) tick(ticked.to_seconds(), end.to_seconds());
        ticked = std::max(ticked, end);
      }
      if (on_slice) on_slice();
      if (until == watch || finished) break;
    }
    if (all_done() || !stall_.empty()) return;
    if (!sc_core::sc_pending_activity()) {
      record_stall("no events left after " + units::format(sc_core::sc_time_stamp().to_seconds(), units::Dim::Time) +
                   " (a completion that never arrived)");
      return;
    }
    const uint64_t now = progress();
    if (now == seen && !collective_in_flight()) {
      record_stall("no CTA and no op finished in " + units::format(window_s, units::Dim::Time) +
                   " of simulated time, up to " + units::format(watch.to_seconds(), units::Dim::Time) +
                   " (the stall_s limit; --limit stall_s=S allows longer)");
      return;
    }
    seen = now;
  }
}

void WorkloadDriver::run() {
  const size_t n = ops_.size();
  std::vector<size_t> waiting(n), pending(n);  // pending: kernels of the op (then of its second kernel) running
  std::vector<bool> landed(n, false);  // a collective's transfers done, its CTAs perhaps not yet
  std::vector<std::vector<size_t>> succs(n);
  // Times are kept in the kernel's own time unit (quantised once): comparing seconds held as
  // doubles against the simulation clock could leave a sub-resolution gap that a timed wait
  // rounds to zero, and the loop would spin in delta cycles.
  using Due = std::pair<sc_core::sc_time, size_t>;  // (time, op): earliest first, then trace order
  using Queue = std::priority_queue<Due, std::vector<Due>, std::greater<Due>>;
  // ops whose dependencies are done; kernels whose grids are starting; second kernels whose grids
  // are starting; ops finishing (collectives in flight, kernels completing)
  Queue ready, starting, tails, landing;
  // Eager launches: the host issues the ops one after another in trace order, each
  // eager_issue_s after the last, running ahead of the GPU; no op starts before it is issued.
  // The host's own serial work (a host op on stream 0) holds the issuing thread for its
  // duration: it starts when the host reaches it, and the next kernel is issued after it. Host
  // ops take no issue slot.
  std::vector<double> issue_s(n, 0.0);
  {
    double h = 0;
    for (size_t i = 0; i < n; ++i) {
      if (ops_[i].host_serial_s > 0) {
        issue_s[i] = h;
        h += ops_[i].host_serial_s;
      } else {
        if (ops_[i].issue_slot) h += launch_.eager_issue_s;
        issue_s[i] = h;
      }
    }
  }
  auto issued = [&](size_t i) { return sc_core::sc_time(issue_s[i], sc_core::SC_SEC); };
  for (size_t i = 0; i < n; ++i) {
    waiting[i] = preds_[i].size();
    pending[i] = ops_[i].kernels.size();
    for (size_t p : preds_[i]) succs[p].push_back(i);
    if (waiting[i] == 0) {
      ready.push({launch_.eager_issue_s > 0 ? issued(i) : sc_core::SC_ZERO_TIME, i});
      state_[i] = State::ready;
    }
  }
  sc_core::sc_event_or_list any_kernel;
  for (CtaDispatcher* d : dispatchers_) any_kernel |= d->kernel_finished;

  auto finish = [&](size_t i) {
    ++done_;
    state_[i] = State::done;
    for (size_t s : succs[i]) {
      if (--waiting[s] > 0) continue;
      double t = 0;
      for (size_t p : preds_[s]) t = std::max(t, ops_[p].end_s);
      sc_core::sc_time at = std::max(sc_core::sc_time(t + launch_.gap_s, sc_core::SC_SEC), sc_core::sc_time_stamp());
      if (launch_.eager_issue_s > 0) at = std::max(at, issued(s));
      ready.push({at, s});
      state_[s] = State::ready;
    }
  };

  sc_core::sc_time last_wake = sc_core::SC_ZERO_TIME;
  uint64_t last_progress = 0, spins = 0;
  while (done_ < n) {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const uint64_t p = progress();
    if (now == last_wake && p == last_progress) {
      if (++spins > kMaxSpinsAtOneInstant) {
        record_stall("simulated time stopped advancing at " + units::format(now.to_seconds(), units::Dim::Time) +
                     " (the driver woke " + std::to_string(spins) + " times at that instant with nothing finishing)");
        sc_core::sc_stop();
        return;
      }
    } else {
      last_wake = now;
      last_progress = p;
      spins = 0;
    }
    for (bool progress = true; progress;) {
      progress = false;
      while (!ready.empty() && ready.top().first <= now) {
        const size_t i = ready.top().second;
        ready.pop();
        progress = true;
        DriverOp& op = ops_[i];
        op.start_s = now.to_seconds();
        state_[i] = State::running;
        if (op.collective) {
          *op.collective_run = run_collective(*fabric_, collectives_, *op.collective, op.start_s);
          op.end_s = op.collective_run->end_s;
          if (op.hold) {
            op.hold->hold_until(op.end_s);
            pending[i] = op.holds.size();
            for (auto& [k, d] : op.holds) d->submit(k);
          }
          landing.push({std::max(sc_core::sc_time(op.end_s, sc_core::SC_SEC), now), i});
        } else if (op.kernel_costs && launch_.start_s > 0) {
          starting.push({now + sc_core::sc_time(launch_.start_s, sc_core::SC_SEC), i});
        } else {
          for (auto& [k, d] : op.kernels) d->submit(k);
        }
      }
      while (!starting.empty() && starting.top().first <= now) {
        const size_t i = starting.top().second;
        starting.pop();
        progress = true;
        for (auto& [k, d] : ops_[i].kernels) d->submit(k);
      }
      while (!tails.empty() && tails.top().first <= now) {
        const size_t i = tails.top().second;
        tails.pop();
        progress = true;
        for (auto& [k, d] : ops_[i].tail) d->submit(k);
      }
      while (!landing.empty() && landing.top().first <= now) {
        const size_t i = landing.top().second;
        landing.pop();
        progress = true;
        if (ops_[i].collective && pending[i] > 0) landed[i] = true;  // ends with its CTAs
        else finish(i);
      }
    }
    if (done_ == n) break;
    sc_core::sc_time next = sc_core::SC_ZERO_TIME;
    bool timed = false;
    for (const Queue* q : {&ready, &starting, &tails, &landing})
      if (!q->empty() && (!timed || q->top().first < next)) {
        next = q->top().first;
        timed = true;
      }
    if (dispatchers_.empty()) {
      if (!timed) return;  // nothing can happen any more: run_watched() reports the unfinished ops
      wait(next - now);
    } else if (timed) {
      wait(next - now, any_kernel);
    } else {
      wait(any_kernel);
    }
    for (CtaDispatcher* d : dispatchers_)
      for (KernelRun* k : d->take_finished()) {
        const size_t i = static_cast<size_t>(k->index);
        ops_[i].end_s = std::max(ops_[i].end_s, k->end_s);
        if (ops_[i].collective) {
          // Its CTAs, done: at its transfers' end, or later where they found no SM until then
          // (behind another kernel's CTAs or a replay), which then ends the op.
          if (--pending[i] == 0 && landed[i]) finish(i);
          continue;
        }
        if (--pending[i] > 0) continue;
        if (!k->tail && !ops_[i].tail.empty()) {
          // The first kernel's grid completes, then the second launches as a dependent kernel.
          pending[i] = ops_[i].tail.size();
          const double at = ops_[i].end_s + (ops_[i].kernel_costs ? launch_.end_s + launch_.start_s : 0) + launch_.gap_s;
          tails.push({std::max(sc_core::sc_time(at, sc_core::SC_SEC), sc_core::sc_time_stamp()), i});
          continue;
        }
        if (ops_[i].kernel_costs && launch_.end_s > 0) {
          ops_[i].end_s += launch_.end_s;
          landing.push({sc_core::sc_time(ops_[i].end_s, sc_core::SC_SEC), i});
        } else {
          finish(i);
        }
      }
  }
  sc_core::sc_stop();
}

}  // namespace xpusim::engine
