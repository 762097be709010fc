#pragma once
// Power management of one chip: the board power limit, the voltage-frequency curve and the
// governor that picks the SM clock. Declared (name, unit, range, meaning) in
// sim/config/schema.cpp; docs/energy-model.md ("Power and clocks") explains the model.
#include <string>
#include <vector>

namespace xpusim {

struct VfPoint {
  double clock_hz = 0;
  double voltage_v = 0;
};

struct PowerParams {
  std::string mode = "fixed_clock";    // fixed_clock: sm.clock throughout; capped: the governor picks the clock
  double limit_w = 0;                  // board power limit, averaged over the time constant
  double peak_ratio = 0;               // bursts bounded at this multiple of the limit per window (0: none)
  double base_clock_hz = 0;            // datasheet base clock (reported; boost must not be below it)
  double boost_clock_hz = 0;           // highest clock the governor runs
  std::vector<std::string> vf_curve_text;  // "CLOCK at VOLTAGE" points as written
  std::vector<VfPoint> vf_curve;       // parsed, ascending in clock and voltage, the floor applied
  double voltage_floor_v = 0;          // no clock runs below this voltage (0: none)
  double idle_floor_w = 0;             // uncore: memory controllers, PHYs, HBM background, regulators
  double time_constant_s = 0;          // the governor limits power averaged over this (exponentially)
  double control_period_s = 0;         // how often it measures and sets the clock
  double clock_step_hz = 0;            // clocks are multiples of this
  std::string start = "idle";          // power history before the trace: idle, or sustained at the limit
  bool capped() const { return mode == "capped"; }
};

}  // namespace xpusim
