#include "models/power/governor.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace xpusim {

VfCurve::VfCurve(std::vector<VfPoint> points) : points_(std::move(points)) {
  assert(!points_.empty() && "the config loader requires at least one point");
}

double VfCurve::voltage(double clock_hz) const {
  if (clock_hz <= points_.front().clock_hz) return points_.front().voltage_v;
  if (clock_hz >= points_.back().clock_hz) return points_.back().voltage_v;
  for (size_t i = 1; i < points_.size(); ++i) {
    const VfPoint& a = points_[i - 1];
    const VfPoint& b = points_[i];
    if (clock_hz <= b.clock_hz) {
      const double span = b.clock_hz - a.clock_hz;
      return span > 0 ? a.voltage_v + (b.voltage_v - a.voltage_v) * (clock_hz - a.clock_hz) / span : b.voltage_v;
    }
  }
  return points_.back().voltage_v;
}

Governor::Governor(const PowerParams& p, double static_w, double nominal_voltage)
    : p_(p), curve_(p.vf_curve), static_w_(static_w), nominal_v_(nominal_voltage), clock_hz_(p.boost_clock_hz) {
  // Before the trace the chip either idled at boost (its floor and leakage) or had been drawing
  // its limit for longer than the time constant.
  settling_ = p_.start == "sustained";
  filtered_w_ = settling_ ? p_.limit_w : power_at(clock_hz_, 0, 0);
}

double Governor::core_scale() const {
  const double r = voltage() / nominal_v_;
  return r * r;
}

double Governor::power_at(double clock_hz, double core_nominal_j_per_cycle, double offcore_w) const {
  const double r = curve_.voltage(clock_hz) / nominal_v_;
  return p_.idle_floor_w + offcore_w + r * r * (static_w_ + core_nominal_j_per_cycle * clock_hz);
}

namespace {
// Boost, else the highest step below it for which `fits` says yes, down to the curve's lowest
// clock (the governor's floor where none fits).
template <class Fits>
double walk_down(const PowerParams& p, Fits fits) {
  const double lo = std::min(std::max(p.vf_curve.front().clock_hz, p.clock_step_hz), p.boost_clock_hz);
  double f = p.boost_clock_hz;
  if (!fits(f)) {
    f = std::ceil(p.boost_clock_hz / p.clock_step_hz - 1 - 1e-9) * p.clock_step_hz;
    while (f - p.clock_step_hz >= lo - 1e-6 && !fits(f)) f -= p.clock_step_hz;
    f = std::max(f, lo);
  }
  return f;
}
}  // namespace

double Governor::lowest_clock(const PowerParams& p) {
  return walk_down(p, [](double) { return false; });
}

double Governor::highest_clock(double cap, double core_nominal_j_per_cycle, double offcore_w) const {
  return walk_down(p_, [&](double f) { return power_at(f, core_nominal_j_per_cycle, offcore_w) <= cap; });
}

void Governor::hold_steady(double core_nominal_j_per_cycle, double offcore_w) {
  clock_hz_ = highest_clock(p_.limit_w, core_nominal_j_per_cycle, offcore_w);
  // Throttled, the average stands at the limit (the clock dithers about the step found); else
  // the load runs at boost, and the average is its power there.
  const double at_boost = power_at(p_.boost_clock_hz, core_nominal_j_per_cycle, offcore_w);
  filtered_w_ = std::min(p_.limit_w, at_boost);
  activity_ = core_nominal_j_per_cycle;
  settling_ = false;
}

double Governor::end_window(double start_s, double end_s, double core_nominal_j, double offcore_j) {
  const double dt = end_s - start_s;
  if (dt <= 0) return clock_hz_;
  const double per_cycle = core_nominal_j / (dt * clock_hz_);
  const double offcore_w = offcore_j / dt;
  PowerSample s;
  s.start_s = start_s;
  s.end_s = end_s;
  s.clock_hz = clock_hz_;
  s.voltage_v = voltage();
  s.power_w = power_at(clock_hz_, per_cycle, offcore_w);
  s.activity = per_cycle;
  s.offcore_w = offcore_w;
  // How far the last prediction missed (a kernel starting or ending inside the window): later
  // predictions carry the smoothed miss, so that misses do not run the average over the limit.
  if (predicted_w_ > 0 && per_cycle > 0) {
    const double miss = std::clamp((s.power_w - p_.idle_floor_w) / std::max(1e-9, predicted_w_ - p_.idle_floor_w), 0.5, 2.0);
    bias_ += (miss - bias_) * 0.25;
  }
  filtered_w_ += (s.power_w - filtered_w_) * -std::expm1(-dt / p_.time_constant_s);
  // A sustained start: the first busy window only measures the load; the average is taken to
  // stand at the limit after it, as it does in a long run of that load.
  if (settling_ && per_cycle > 0) {
    filtered_w_ = p_.limit_w;
    settling_ = false;
  }
  s.filtered_w = filtered_w_;

  // The next window may draw up to `cap` and leave the average at the limit.
  const double a = -std::expm1(-p_.control_period_s / p_.time_constant_s);
  double cap = filtered_w_ + (p_.limit_w - filtered_w_) / a;
  if (p_.peak_ratio > 0) cap = std::min(cap, p_.peak_ratio * p_.limit_w);
  // The load it plans for: core activity per cycle averaged over a few windows (kernels start
  // and end inside windows; one window alone is noisy), times the smoothed miss.
  activity_ = activity_ < 0 ? per_cycle : activity_ + (per_cycle - activity_) * -std::expm1(-dt / (kActivityWindows * p_.control_period_s));
  const double expect = activity_ * bias_;
  const double f = highest_clock(cap, expect, offcore_w);
  predicted_w_ = power_at(f, activity_, offcore_w);
  s.throttled = clock_hz_ < p_.boost_clock_hz - 0.5 * p_.clock_step_hz;  // the window's own clock
  track_.push_back(s);
  clock_hz_ = f;
  return clock_hz_;
}

}  // namespace xpusim
