#include "models/sm/cta_dispatcher.h"

#include <cassert>

namespace xpusim {

CtaDispatcher::CtaDispatcher(sc_core::sc_module_name name, std::vector<Sm*> sms)
    : sc_module(name), sms_(std::move(sms)) {
  for (Sm* sm : sms_) sm->on_cta_done = [this](KernelRun* k) { cta_done(k); };
  SC_THREAD(dispatch_thread);
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
  active_.push_back(k);
  wake_.notify(sc_core::SC_ZERO_TIME);
}

std::vector<KernelRun*> CtaDispatcher::take_finished() {
  std::vector<KernelRun*> out;
  out.swap(finished_);
  if (spinning_) kernel_finished.notify(sc_core::SC_ZERO_TIME);
  return out;
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
  ++k->done_ctas;
  if (k->done_ctas == k->program->num_ctas()) {
    k->finished = true;
    k->end_s = sc_core::sc_time_stamp().to_seconds();
    finished_.push_back(k);
    kernel_finished.notify(sc_core::SC_ZERO_TIME);
  }
  wake_.notify(sc_core::SC_ZERO_TIME);
}

void CtaDispatcher::dispatch_thread() {
  for (;;) {
    for (auto it = active_.begin(); it != active_.end();) {
      KernelRun* k = *it;
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
