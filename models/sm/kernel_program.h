#pragma once
// What a CTA does, as the kernel library lowered it: a prologue, a pipelined sequence of steps
// (loads for step s+stages are issued when step s's compute frees its buffer), and an epilogue.
// The SM executes programs; it does not know which op they came from.
#include <cstdint>
#include <string>
#include <vector>

#include "models/common/dtype.h"
#include "models/common/mem_request.h"
#include "models/sm/sm_params.h"

namespace xpusim {

struct StepWork {
  std::vector<Strided> loads;
  // Loads multicast to every CTA of a thread-block cluster (TMA multicast): this CTA fetches
  // its share from L2 once, and the network delivers each share to all `multicast_fanout` SMs.
  std::vector<Strided> multicast_loads;
  int multicast_fanout = 1;
  // Loads by ordinary load instructions (LDG): looked up in the SM's L1 first. `loads` above
  // are bulk copies (TMA, cp.async.bulk) that bypass the L1 and land in shared memory.
  std::vector<Strided> cached_loads;
  std::vector<Strided> stores;
  double smem_read_bytes = 0;   // shared-memory traffic of this step (operands, staging)
  double smem_write_bytes = 0;
  double tensor_macs = 0;  // executed MACs (tile padding included)
  Dtype tensor_dtype = Dtype::bf16;
  bool tensor_sparse = false;
  // Warp-level MMAs (mma.sync: HMMA, IMMA) run on the tensor cores of the processing block whose
  // scheduler issued them, so a CTA of fewer warps than the SM has blocks reaches only that share
  // of its tensor cores, at tensor_core.mma_sync_share of their rate. Warpgroup and
  // single-thread MMAs (wgmma, tcgen05) use them all at the full rate.
  bool tensor_per_warp = false;
  double fp32_ops = 0;     // lane operations
  double sfu_ops = 0;      // lane operations
  double hfma_ops = 0;     // FP16 FMA lane operations (SIMT)
  double dp4a_ops = 0;     // INT8 4-way dot-product lane operations (SIMT)
  double rf_bytes = 0;     // accumulator traffic between tensor cores and registers
  double instr_mma = 0;    // warp-level instructions issued, by class
  double instr_simt = 0;
  double instr_mem = 0;
  double fixed_s = 0;      // the step takes at least this long (a timed gap of known duration)
  double until_s = 0;      // ... and lasts at least until this time (a CTA holding its SM: hold_program.h)
  // The step takes at least this many SM cycles at the running clock: a chain of dependent
  // instructions (a row's running statistics, a block-wide reduction) that no other work hides.
  double latency_cycles = 0;
  // Whether two lane instructions (FFMA, HFMA2, DP4A) may go out together from one scheduler
  // (sm.dual_issue): only where they are independent and read their registers without bank
  // conflicts, as an instruction loop's do. Otherwise each scheduler issues at most one per clock
  // and pairs it with another kind (a load, a shared-memory read).
  bool lane_pairs = false;

  void clear() { *this = StepWork{}; }
};

struct CtaResources {
  int threads = 0;
  int registers = 0;        // per CTA
  double shared_bytes = 0;  // per CTA
};

// CTAs of this shape an empty SM holds (CTA slots, warps, registers, shared memory); 0 if none.
int occupancy(const SmParams& p, const CtaResources& r);

class KernelProgram {
 public:
  virtual ~KernelProgram() = default;

  virtual uint64_t num_ctas() const = 0;
  virtual uint64_t steps(uint64_t cta) const = 0;
  virtual void prologue(uint64_t /*cta*/, StepWork& /*w*/) const {}
  virtual void step(uint64_t cta, uint64_t s, StepWork& w) const = 0;
  virtual void epilogue(uint64_t cta, StepWork& w) const = 0;
  // What the kernel leaves written: the last `max_bytes` of its stores or more, in about the
  // order it stores them. Fast fidelity places it in the L2 when it reuses a recorded kernel
  // instead of running it (models/sm/fast_path.h), so that the next kernel finds the L2 as it
  // would. By default the CTAs' epilogue stores; a program that stores in its steps says so.
  virtual void written(double max_bytes, std::vector<Strided>& out) const;
  // For written(): the stores of the last of `units` (CTAs, tiles) that `store` produces, last
  // ones first until `max_bytes` is reached, appended to `out` in the units' order.
  template <class Store>
  static void last_stores(uint64_t units, double max_bytes, const Store& store, std::vector<Strided>& out) {
    std::vector<Strided> last;
    StepWork w;
    double bytes = 0;
    for (uint64_t u = units; u-- > 0 && bytes < max_bytes;) {
      w.clear();
      store(u, w);
      for (const Strided& s : w.stores) bytes += static_cast<double>(s.bytes());
      last.insert(last.end(), w.stores.rbegin(), w.stores.rend());
    }
    out.insert(out.end(), last.rbegin(), last.rend());
  }

  CtaResources resources;
  // A persistent kernel, whose resident CTAs walk tile after tile: each CTA here is one turn of
  // a resident CTA at one tile. Once a turn has issued its last loads and freed a buffer, its
  // slot passes to the next turn, whose loads then start (the producer warp moving on to the
  // next tile), and the next turn's compute waits until this one is done (the consumer warps'
  // epilogue). See Sm::run_cta.
  bool hand_over = false;
  // Per resident CTA: from its start to its first compute (a GEMM's barrier initialisation,
  // cluster synchronisation and descriptor prefetch), with its first stages' loads in flight
  // meanwhile. A persistent kernel's turn that takes over a slot does not pay it again.
  double cta_setup_s = 0;
  int stages = 2;
  std::string description;
  // Microbenchmarks time a steady-state phase: from the first CTA's step `timed_step` to the
  // kernel's end, over `timed_accesses` accesses (-1: not a microbenchmark).
  int64_t timed_step = -1;
  // Steps after which a CTA's work repeats (a grid-stride loop's steps per unit; 0: no such
  // regularity). Fast fidelity has the CTAs of whole waves leave out steady steps in multiples
  // of it (models/sm/fast_path.h).
  uint64_t step_period = 0;
  double timed_accesses = 0;
  double timed_bytes = 0;  // e.g. "tile 128x256x64, 4 stages, 1 CTA/SM"
};

}  // namespace xpusim
