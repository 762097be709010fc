#pragma once
// The tensor cores of one SM as one matrix unit: MMA work of a CTA step occupies it for
// macs / (per_sm x MACs-per-clock[dtype]) cycles, twice as fast on 2:4-sparse weights where
// supported. CTAs resident on the same SM queue for it.
#include "models/common/bandwidth_resource.h"
#include "models/common/clock_domain.h"
#include "models/common/op_counters.h"
#include "models/common/stats.h"
#include "models/common/systemc.h"
#include "models/tensor_core/tensor_core_params.h"

namespace xpusim {

struct TensorCoreStats {
  Stat* busy = nullptr;
  Stat* macs[kNumDtypes] = {};
  static TensorCoreStats make(StatRegistry& reg, const std::string& prefix);
};

class TensorCore : public sc_core::sc_module {
 public:
  TensorCore(sc_core::sc_module_name name, const TensorCoreParams& p, const ClockDomain& clock, TensorCoreStats& stats);

  // MACs per clock of the SM's tensor cores, 0 if the format is unsupported; `warp_mma`: issued as mma.sync (the share of the
  // rate that instruction reaches, tensor_core.mma_sync_share).
  double macs_per_clock(Dtype d, bool sparse, bool warp_mma = false) const;
  // Starts MMA work at `now` (queued behind earlier work); returns its end time in seconds.
  double execute(double now, double macs, Dtype d, bool sparse, OpCounters& c, bool warp_mma = false);
  double drain_s() const { return p_.mma_latency_cycles / clock_.hz(); }

 private:
  TensorCoreParams p_;
  const ClockDomain& clock_;
  BandwidthResource unit_;
  TensorCoreStats& stats_;
};

}  // namespace xpusim
