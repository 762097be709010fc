#include <algorithm>
#include <cmath>
#include <vector>

#include "models/accelerator/accelerator.h"
#include "models/common/clock_domain.h"
#include "models/common/systemc.h"
#include "models/energy/energy_table.h"
#include "models/power/governor.h"
#include "sim/engine/target.h"
#include "sim/engine/workload_driver.h"
#include "sim/io/log.h"
#include "sim/lower/accel_lowering.h"

// The dataflow accelerator (kind: accelerator, docs/architecture.md): one queue, ops in trace
// order, each mapped onto the PE array by the lowering's mapping search.
namespace xpusim::engine {
namespace {

// The accelerator under its power governor (power.mode capped): the same governor as a GPU's,
// fed each control window with the energy of the tiles that finished in it (an op's actions
// spread evenly over its tiles), at the nominal voltage and split by supply rail.
void run_accelerator_governed(const config::LoadedConfig& cfg, SimResult& out, ClockDomain& clock) {
  const PowerParams& p = cfg.chip.accel.power;
  const energy::Table& table = *cfg.energy_table;
  Governor governor(p, table.static_power_w, table.nominal_voltage);
  clock.set_hz(governor.clock_hz(), 0);
  struct Share {
    double tiles, core_j, offcore_j, seen = 0, core_nominal = 0, core_scaled = 0;
  };
  std::vector<Share> shares;
  for (const auto& op : out.accel_ops) {
    const energy::Breakdown b = energy::price(op.counters, 0, table, table.nominal_voltage);
    shares.push_back(Share{std::max(1.0, std::floor(op.tiles)), b.core_rail_j(), b.dynamic_j() - b.core_rail_j()});
  }
  const sc_core::sc_time period(p.control_period_s, sc_core::SC_SEC);
  sc_core::sc_time ticked = sc_core::SC_ZERO_TIME;
  for (bool started = false;;) {
    const sc_core::sc_time until = ticked + period;
    start_slice(until, started, true);
    const bool finished = !sc_core::sc_pending_activity();
    const sc_core::sc_time end = finished ? sc_core::sc_time_stamp() : until;
    if (end > ticked) {
      double core = 0, offcore = 0;
      for (size_t i = 0; i < shares.size(); ++i) {
        Share& s = shares[i];
        const double done = out.accel_ops[i].tiles_done / s.tiles;
        const double c = (done - s.seen) * s.core_j;
        core += c;
        offcore += (done - s.seen) * s.offcore_j;
        s.core_nominal += c;
        s.core_scaled += c * governor.core_scale();
        s.seen = done;
      }
      clock.set_hz(governor.end_window(ticked.to_seconds(), end.to_seconds(), core, offcore), end.to_seconds());
      ticked = end;
    }
    if (finished) break;
  }
  for (size_t i = 0; i < shares.size(); ++i)
    out.accel_ops[i].core_scale = shares[i].core_nominal > 0 ? shares[i].core_scaled / shares[i].core_nominal : governor.core_scale();
  out.power_tracks = {governor.track()};
  out.simulated_gpus = {0};
}

class AcceleratorTarget : public Target {
 public:
  std::vector<lower::LoweredOp> lower_all(const config::LoadedConfig& cfg, const trace::Trace& t) const override {
    lower::lower_accelerator(cfg, t);  // throws for what the accelerator cannot run
    return {};
  }

  void run(const config::LoadedConfig& cfg, const trace::Trace& t, SimResult& out, const SimOptions& opt) const override {
    if (!opt.kernel_cache.empty())
      log::warn("--kernel-cache: the accelerator's mapping is analytical and has no kernels to replay; the cache is not used");
    // Ops run in trace order (the accelerator has one queue).
    out.accel_ops = lower::lower_accelerator(cfg, t);
    const PowerParams& pw = cfg.chip.accel.power;
    ClockDomain clock(pw.capped() ? pw.boost_clock_hz : cfg.chip.accel.accelerator.clock_hz);
    accel::Accelerator acc("accelerator", cfg.chip.accel.accelerator, cfg.chip.accel.dram, out.accel_ops, clock);
    if (pw.capped()) {
      run_accelerator_governed(cfg, out, clock);
    } else {
      sc_core::sc_start();
    }
    for (const auto& op : out.accel_ops) out.end_s = std::max(out.end_s, op.end_s);
  }
};

}  // namespace

const Target& accelerator_target() {
  static const AcceleratorTarget target;
  return target;
}

}  // namespace xpusim::engine
