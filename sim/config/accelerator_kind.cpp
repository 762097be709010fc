#include <string>

#include "sim/config/chip_kind.h"
#include "sim/config/units.h"

// The MAGNet-style dataflow accelerator (kind: accelerator): a PE array, its buffers and DRAM
// (sim/config/schema.cpp lists its parameters; docs/architecture.md describes the model).
namespace xpusim::config {
namespace {

// Its operating point: within the chip's range, the clock at or below the line between the two
// published operating points.
void resolve_accelerator(LoadedConfig& cfg) {
  auto bad = [&](const std::string& key, const std::string& msg) { fail_at_key(cfg, key, msg); };
  const AcceleratorParams& a = cfg.chip.accel.accelerator;
  if (a.min_voltage_v >= a.max_voltage_v) bad("accelerator.min_voltage", "must be below accelerator.max_voltage");
  if (a.min_clock_hz >= a.max_clock_hz) bad("accelerator.min_clock", "must be below accelerator.max_clock");
  if (a.voltage_v < a.min_voltage_v || a.voltage_v > a.max_voltage_v)
    bad("accelerator.voltage", "must lie between accelerator.min_voltage and accelerator.max_voltage");
  const double fmax = accelerator_max_clock(a, a.voltage_v);
  if (a.clock_hz > fmax * 1.0005)
    bad("accelerator.clock", "is above the " + units::format(fmax, units::Dim::Frequency) + " this voltage allows (linear between the two operating points)");
}

// An accelerator's curve defaults to the line between its two published operating points,
// its boost to the curve's top.
void power_defaults(const ChipConfig& chip, PowerParams& p) {
  const AcceleratorParams& a = chip.accel.accelerator;
  if (p.vf_curve.empty()) p.vf_curve = {{a.min_clock_hz, a.min_voltage_v}, {a.max_clock_hz, a.max_voltage_v}};
  if (p.boost_clock_hz <= 0) p.boost_clock_hz = p.vf_curve.back().clock_hz;
}

}  // namespace

const ChipKind& accelerator_kind() {
  static const ChipKind kind{
      "accelerator",
      accelerator_schema,
      [](ChipConfig& c) -> EnergyConfig& { return c.accel.energy; },
      [](ChipConfig& c) -> PowerParams& { return c.accel.power; },
      resolve_accelerator,
      power_defaults,
      [](const ChipConfig&) { return 1; },
  };
  return kind;
}

}  // namespace xpusim::config
