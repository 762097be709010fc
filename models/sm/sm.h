#pragma once
// A streaming multiprocessor at CTA granularity. Each resident CTA runs on a SystemC thread of
// its own (kept for the SM's next CTA once it is done) through its program: pipelined loads over
// the TLM socket, MMA work on the tensor core, and SIMT work issued by the warp schedulers to the
// FP32 and SFU lanes. Occupancy (CTA slots, warps, registers, shared memory) limits how many CTAs
// the dispatcher may place here.
#include <functional>
#include <memory>
#include <vector>

#include "models/common/bandwidth_resource.h"
#include "models/common/stats.h"
#include "models/memory/sectored_tags.h"
#include "models/common/systemc.h"
#include "models/sm/kernel_run.h"
#include "models/sm/sm_params.h"
#include "models/tensor_core/tensor_core.h"
#include "tlm_utils/simple_initiator_socket.h"

namespace xpusim {

struct SmStats {
  Stat* simt_busy = nullptr;
  Stat* ctas = nullptr;
  Stat* instr_mma = nullptr;
  Stat* instr_simt = nullptr;
  Stat* instr_mem = nullptr;
  Stat* fp32_ops = nullptr;
  Stat* sfu_ops = nullptr;
  Stat* load_bytes = nullptr;
  Stat* store_bytes = nullptr;
  Stat* l1_hit_sectors = nullptr;
  Stat* l1_miss_sectors = nullptr;
  Stat* smem_bytes = nullptr;
  TensorCoreStats tensor;
  static SmStats make(StatRegistry& reg, const std::string& prefix);
};

class Sm : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<Sm> mem;

  // `clock` is the GPU's SM clock domain (a governor may change it between slices of time);
  // `port_bytes_per_cycle`, the SM's network port (noc.port_bandwidth), paces a CTA's first
  // stages (0: not paced).
  Sm(sc_core::sc_module_name name, int id, const SmParams& p, const TensorCoreParams& tc, const ClockDomain& clock,
     SmStats& stats, double port_bytes_per_cycle = 0);

  bool can_host(const CtaResources& r) const;
  static bool fits_empty(const SmParams& p, const CtaResources& r);
  int capacity(const CtaResources& r) const;  // CTAs of this shape the empty SM holds
  // Places CTA `cta` of `k` here and starts it now.
  // The CTA takes its resources now and starts work at `start_s` (the block scheduler's turn).
  void launch(KernelRun* k, uint64_t cta, double start_s = 0);
  int resident_ctas() const { return ctas_; }
  TensorCore& tensor_core() { return tensor_core_; }

  std::function<void(KernelRun*)> on_cta_done;  // set by the dispatcher
  std::function<void(KernelRun*)> on_step;      // after each step's compute, while k->count_steps (fast fidelity)
  std::function<void(KernelRun*, uint64_t)> on_skip;  // a CTA leaves out steady steps, with k->step_rate: plays them back
  std::function<void()> on_slot_free;  // a persistent kernel's CTA handed its slot on (KernelProgram::hand_over)

 private:
  void run_cta(KernelRun* k, uint64_t cta, double start_s);
  // A thread that runs CTAs one after another, waiting on `go` in between. SystemC gives every
  // thread a stack of its own, mapped when it is spawned and unmapped when it ends (with a guard
  // page each time): a thread spawned for every CTA cost a quarter of a run with many small CTAs
  // in system calls and page faults.
  // A waiting thread woken by an immediate notification joins the back of the runnable queue,
  // as a freshly spawned one does, so the order CTAs run in is the same either way.
  struct CtaThread {
    sc_core::sc_event go;
    KernelRun* k = nullptr;
    uint64_t cta = 0;
    double start_s = 0;
  };
  void cta_thread(CtaThread* t);
  std::vector<std::unique_ptr<CtaThread>> threads_made_;
  std::vector<CtaThread*> idle_threads_;
  double issue(const std::vector<Strided>& blocks, bool write, KernelRun* k, int fanout = 1, double after_s = 0);
  double issue_cached(const std::vector<Strided>& blocks, KernelRun* k);
  double issue_loads(const StepWork& w, KernelRun* k);
  // Bytes a step's loads bring to this SM's port (a multicast share once per receiving SM).
  static double received_bytes(const StepWork& w);
  double compute(const StepWork& w, KernelRun* k);
  static void wait_until(double t);
  void free_slot(const CtaResources& r);
  // A persistent kernel's turn that handed its slot on and is still running: the next turn of
  // the same kernel placed here takes it over, fills a stage per buffer it has freed since (one
  // per step computed from the hand-over on) and computes once it is done.
  struct Handover {
    const KernelRun* k = nullptr;
    uint32_t freed = 0;
    bool done = false;
    sc_core::sc_event progress;  // a buffer freed, or done
  };
  std::vector<std::shared_ptr<Handover>> handovers_;
  void follow_clock();  // re-rates the shared-memory banks after a clock change

  int id_;
  SmParams p_;
  SmStats& stats_;
  const ClockDomain& clock_;
  double smem_clock_hz_;  // the clock the shared-memory banks' rate was set for
  TensorCore tensor_core_;
  BandwidthResource simt_;
  BandwidthResource smem_;  // the L1/shared-memory banks
  SectoredTags l1_;
  SectoredTags::Result l1_result_;
  double l1_latency_s_;
  double port_bytes_per_cycle_;
  int ctas_ = 0, threads_ = 0, registers_ = 0;
  double shared_ = 0;
};

}  // namespace xpusim
