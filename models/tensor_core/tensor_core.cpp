#include "models/tensor_core/tensor_core.h"

#include <cassert>

namespace xpusim {

TensorCoreStats TensorCoreStats::make(StatRegistry& reg, const std::string& prefix) {
  TensorCoreStats s;
  s.busy = &reg.add(prefix + ".busy", "s", "Tensor-core busy time summed over SMs");
  for (int i = 0; i < kNumDtypes; ++i) {
    const auto d = static_cast<Dtype>(i);
    s.macs[i] = &reg.add(prefix + ".macs." + dtype_name(d), "MACs",
                         std::string("Multiply-accumulates executed with ") + dtype_name(d) + " inputs");
  }
  return s;
}

TensorCore::TensorCore(sc_core::sc_module_name name, const TensorCoreParams& p, const ClockDomain& clock,
                       TensorCoreStats& stats)
    : sc_module(name), p_(p), clock_(clock), stats_(stats) {}

double TensorCore::macs_per_clock(Dtype d, bool sparse, bool warp_mma) const {
  const double dense = p_.per_sm * p_.macs_per_clock.of(d) * (warp_mma ? p_.mma_sync_share : 1.0);
  return (sparse && p_.sparse_2_4) ? 2 * dense : dense;
}

double TensorCore::execute(double now, double macs, Dtype d, bool sparse, OpCounters& c, bool warp_mma) {
  if (macs <= 0) return now;
  const double rate = macs_per_clock(d, sparse, warp_mma);
  assert(rate > 0 && "lowering must reject formats the tensor core lacks");
  const double duration = macs / rate / clock_.hz();
  const double end = unit_.reserve_for(now, now, duration);
  stats_.busy->value += duration;
  stats_.macs[static_cast<int>(d)]->value += macs;
  c.tensor_busy_s += duration;
  c.tensor_macs[static_cast<size_t>(d)] += macs;
  return end;
}

}  // namespace xpusim
