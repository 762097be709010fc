#pragma once
// Places CTAs of runnable kernels on SMs with room, breadth-first across SMs and oldest kernel
// first, as the hardware's block scheduler does; kernels on other streams fill SMs the older
// kernel leaves free.
#include <deque>
#include <vector>

#include "models/common/systemc.h"
#include "models/sm/kernel_run.h"
#include "models/sm/sm.h"

namespace xpusim {

class CtaDispatcher : public sc_core::sc_module {
 public:
  SC_HAS_PROCESS(CtaDispatcher);
  CtaDispatcher(sc_core::sc_module_name name, std::vector<Sm*> sms);

  void submit(KernelRun* k);             // runnable from now on
  std::vector<KernelRun*> take_finished();
  sc_core::sc_event kernel_finished;     // notified when a kernel's last CTA completes
  uint64_t ctas_done() const { return ctas_done_; }  // over all kernels: the watchdog's sign of life

 private:
  void dispatch_thread();
  void cta_done(KernelRun* k);

  std::vector<Sm*> sms_;
  std::deque<KernelRun*> active_;
  std::vector<KernelRun*> finished_;
  uint64_t ctas_done_ = 0;
  bool spinning_ = false;  // fault injection: kernel_finished notified at every delta, nothing finishing
  size_t next_sm_ = 0;
  sc_core::sc_event wake_;
};

}  // namespace xpusim
