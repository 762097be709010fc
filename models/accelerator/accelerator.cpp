#include "models/accelerator/accelerator.h"

#include <algorithm>

namespace xpusim::accel {

Accelerator::Accelerator(sc_core::sc_module_name name, const AcceleratorParams& a, const DramParams& d,
                         std::vector<AccelOp>& ops, const ClockDomain& clock)
    : sc_module(name), a_(a), d_(d), ops_(ops), dram_(d.bandwidth), clock_(clock) {
  SC_THREAD(run);
}

void Accelerator::run() {
  auto now = [] { return sc_core::sc_time_stamp().to_seconds(); };
  auto wait_until = [&](double t) {
    if (t > now()) sc_core::wait(sc_core::sc_time(t - now(), sc_core::SC_SEC));
  };
  for (AccelOp& op : ops_) {
    op.start_s = now();
    const auto tiles = static_cast<long long>(std::max(1.0, op.tiles));
    const double before = dram_.busy_s();
    // A tile with nothing to move (a timed gap) does not wait for DRAM.
    auto fetch = [&] { return op.tile_dram_bytes > 0 ? dram_.reserve(now(), now(), op.tile_dram_bytes) + d_.latency_s : now(); };
    double ready = fetch();
    for (long long i = 0; i < tiles; ++i) {
      wait_until(ready);
      // The next tile's transfer overlaps this tile's compute (double buffering).
      if (i + 1 < tiles) ready = fetch();
      wait_until(now() + op.tile_cycles / clock_.hz());
      op.tiles_done = static_cast<double>(i + 1);
    }
    op.dram_busy_s = dram_.busy_s() - before;
    op.end_s = now();
  }
  // Nothing more is scheduled: the simulation ends here.
}

}  // namespace xpusim::accel
