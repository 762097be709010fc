#pragma once
// The power governor of one chip (docs/energy-model.md, "Power and clocks"). At the end of each
// control window it is told the energy the chip spent in it, computes the chip's power at the
// clock and voltage it ran (dynamic energy on the core rail scales with V^2, as does leakage; the
// uncore floor and off-core energy do not), and picks the next window's clock: the highest on the
// voltage-frequency curve whose predicted power keeps the power averaged over the time constant
// (an exponential average, as a sensor's filter keeps it) at or under the limit. The prediction
// takes the window's core activity per cycle as constant, corrected by how far its recent
// predictions missed. A short burst therefore runs on the
// headroom the average has (up to the peak limit, an electrical bound on any one window), and
// sustained load settles where its power meets the limit.
// Plain C++ (no SystemC): the engine calls it between slices of simulated time.
#include <vector>

#include "models/power/power_params.h"

namespace xpusim {

// Voltage as a function of clock: linear between the points, the end points' voltage beyond.
class VfCurve {
 public:
  explicit VfCurve(std::vector<VfPoint> points);
  double voltage(double clock_hz) const;

 private:
  std::vector<VfPoint> points_;
};

struct PowerSample {
  double start_s = 0, end_s = 0;
  double clock_hz = 0, voltage_v = 0;
  double power_w = 0;     // chip power in the window
  double filtered_w = 0;  // the exponential average the limit applies to, at the window's end
  bool throttled = false; // the limit held the clock below boost in this window
  double activity = 0;    // core-rail energy per cycle at the nominal voltage (J): the load
  double offcore_w = 0;   // off-core power (DRAM, NVLink)
};

class Governor {
 public:
  // `static_w` is the chip's leakage and `nominal_voltage` the voltage the energy table's
  // prices hold at (both from the energy table).
  Governor(const PowerParams& p, double static_w, double nominal_voltage);

  double clock_hz() const { return clock_hz_; }
  double voltage() const { return curve_.voltage(clock_hz_); }
  // (V / nominal)^2 at the current clock: what core-rail dynamic energy and leakage scale by.
  double core_scale() const;
  // Ends the window [start, end): `core_nominal_j` is the core rail's dynamic energy priced at
  // the nominal voltage, `offcore_j` the rest (DRAM, NVLink). Returns the next window's clock.
  double end_window(double start_s, double end_s, double core_nominal_j, double offcore_j);
  const std::vector<PowerSample>& track() const { return track_; }
  // Power of the chip at `clock_hz` with the given core activity (nominal-voltage joules per
  // cycle) and off-core power.
  double power_at(double clock_hz, double core_nominal_j_per_cycle, double offcore_w) const;
  // power.start steady: the load repeats (a trace that is one period of a loop of itself,
  // shorter than the time constant), so the average stands where the load's own power does at
  // the clock the governor settles on: the highest clock whose power at this load is within the
  // limit. Holds that clock from the start, with the load as the prediction's.
  void hold_steady(double core_nominal_j_per_cycle, double offcore_w);
  // The lowest clock the governor runs: the first step of power.clock_step at or above the
  // curve's lowest clock (and at least one step), walking down from boost.
  static double lowest_clock(const PowerParams& p);

 private:
  // The highest clock step, from boost down to the curve's lowest, whose power at this load is
  // at most `cap` (the lowest where none is).
  double highest_clock(double cap, double core_nominal_j_per_cycle, double offcore_w) const;

  PowerParams p_;
  VfCurve curve_;
  double static_w_, nominal_v_;
  double clock_hz_;
  double filtered_w_;
  bool settling_ = false;  // start: sustained, until the first busy window
  double predicted_w_ = 0;  // what the last choice of clock expected the window to draw (no bias)
  double bias_ = 1;         // smoothed ratio of drawn to predicted power, above the floor
  double activity_ = -1;    // smoothed core activity per cycle (nominal joules); -1: none yet
  static constexpr double kActivityWindows = 4;  // its averaging time, in control periods
  std::vector<PowerSample> track_;
};

}  // namespace xpusim
