// The power governor on its own (no SystemC): the voltage-frequency curve, settling at the limit
// under a steady load, running a short burst on the headroom; and the power section's errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "helpers.h"
#include "models/power/governor.h"
#include "sim/config/config_loader.h"
#include "sim/report/power.h"

using namespace xpusim;
using xpusim::testing::error_of;
using xpusim::testing::source_path;
using xpusim::testing::temp_file;

namespace {

PowerParams params() {
  PowerParams p;
  p.mode = "capped";
  p.limit_w = 700;
  p.boost_clock_hz = 2e9;
  p.vf_curve = {{1e9, 0.6}, {2e9, 0.8}};
  p.idle_floor_w = 80;
  p.time_constant_s = 1e-3;
  p.control_period_s = 1e-6;
  p.clock_step_hz = 15e6;
  return p;
}

// A load whose core energy per cycle is constant (compute bound): `j_per_cycle` at 0.8 V.
struct Load {
  double j_per_cycle;
  double core_nominal(const Governor& g, double dt) const { return j_per_cycle * g.clock_hz() * dt; }
};

}  // namespace

TEST_CASE("power: the V/f curve is linear between its points and flat beyond them", "[power]") {
  const VfCurve c({{1e9, 0.6}, {1.5e9, 0.65}, {2e9, 0.8}});
  CHECK(c.voltage(0.5e9) == Approx(0.6));
  CHECK(c.voltage(1.25e9) == Approx(0.625));
  CHECK(c.voltage(1.75e9) == Approx(0.725));
  CHECK(c.voltage(3e9) == Approx(0.8));
}

TEST_CASE("power: a voltage floor raises the curve below where it crosses, and a capped load then settles lower",
          "[power]") {
  const std::string t4 = source_path("configs/t4.yaml");
  const PowerParams with = config::load_config(t4).chip.gpu.power;
  const PowerParams without = config::load_config(t4, {"power.voltage_floor=0 V"}).chip.gpu.power;
  const VfCurve f(with.vf_curve), c(without.vf_curve);
  CHECK(c.voltage(1e9) == Approx(0.628));
  CHECK(f.voltage(1e9) == Approx(0.72));
  CHECK(f.voltage(0.585e9) == Approx(0.72));
  // The point added where the 1.2-1.4 GHz segment (0.709 to 0.801 V) crosses 0.72 V keeps the line.
  CHECK(with.vf_curve.size() == without.vf_curve.size() + 1);
  CHECK(f.voltage((1.2 + 0.2 * 0.011 / 0.092) * 1e9) == Approx(0.72));
  CHECK(f.voltage(1.3e9) == Approx(c.voltage(1.3e9)));
  CHECK(f.voltage(1.59e9) == Approx(0.9));
  // The same compute-bound load under the 70 W limit: on the floor, power falls only with the
  // clock, so the governor goes lower to shed the same watts.
  auto settle = [](PowerParams p) {
    p.control_period_s = 1e-6;
    p.time_constant_s = 1e-3;
    Governor g(p, 12, 0.9);
    const Load load{1.6e-7};  // 254 W of core power at 1.59 GHz and 0.9 V
    double t = 0;
    for (int i = 0; i < 20000; ++i, t += p.control_period_s)
      g.end_window(t, t + p.control_period_s, load.core_nominal(g, p.control_period_s), 0);
    return g.clock_hz();
  };
  const double floor_clock = settle(with), law_clock = settle(without);
  CHECK(law_clock < 1.2e9);  // the law alone settles below the crossing, where the floor applies
  CHECK(floor_clock < law_clock * 0.95);
  // A floor above the curve's top is refused, naming the key.
  CHECK_THAT(error_of([&] { config::load_config(t4, {"power.voltage_floor=0.95 V"}); }),
             Catch::Contains("key 'power.voltage_floor'") && Catch::Contains("above power.vf_curve's highest voltage"));
  CHECK_THAT(error_of([&] { config::load_config(t4, {"power.voltage_floor=-1 V"}); }), Catch::Contains("power.voltage_floor"));
}

TEST_CASE("power: a steady load settles where its power meets the limit, and the limit's average never passes it",
          "[power]") {
  PowerParams p = params();
  Governor g(p, 40, 0.8);
  const Load load{4.5e-7};  // 900 W of core power at 2 GHz and 0.8 V: the limit must pull the clock down
  double t = 0;
  for (int i = 0; i < 20000; ++i, t += p.control_period_s) {
    g.end_window(t, t + p.control_period_s, load.core_nominal(g, p.control_period_s), 0);
    REQUIRE(g.track().back().filtered_w <= p.limit_w * 1.001);
  }
  const PowerSample& last = g.track().back();
  CHECK(last.power_w == Approx(p.limit_w).epsilon(0.02));
  CHECK(last.throttled);
  CHECK(g.clock_hz() < p.boost_clock_hz);
  // The same load at a higher limit settles at a higher clock.
  p.limit_w = 900;
  Governor h(p, 40, 0.8);
  for (int i = 0; i < 20000; ++i, t += p.control_period_s)
    h.end_window(t, t + p.control_period_s, load.core_nominal(h, p.control_period_s), 0);
  CHECK(h.clock_hz() > g.clock_hz());
}

TEST_CASE("power: a burst shorter than the time constant runs at boost on the headroom, up to the peak limit",
          "[power]") {
  PowerParams p = params();
  Governor g(p, 40, 0.8);
  const Load load{4.5e-7};
  double t = 0;
  for (int i = 0; i < 20; ++i, t += p.control_period_s)  // 20 us of a 900 W load from idle
    g.end_window(t, t + p.control_period_s, load.core_nominal(g, p.control_period_s), 0);
  for (const PowerSample& s : g.track()) CHECK(s.clock_hz == p.boost_clock_hz);
  CHECK(g.track().back().power_w > p.limit_w);
  // With a peak limit at the limit, the same burst is held to it from the second window on.
  p.peak_ratio = 1;
  Governor h(p, 40, 0.8);
  t = 0;
  for (int i = 0; i < 20; ++i, t += p.control_period_s)
    h.end_window(t, t + p.control_period_s, load.core_nominal(h, p.control_period_s), 0);
  CHECK(h.track().back().power_w <= p.limit_w * 1.02);
  CHECK(h.clock_hz() < p.boost_clock_hz);
}

TEST_CASE("power: a long track is joined into at most 2000 spans that keep its energy and its ends", "[power][report]") {
  // 30,000 windows of 10 us (0.3 s), power alternating 500 / 900 W, throttled two windows in three.
  std::vector<PowerSample> track;
  double energy = 0;
  for (int i = 0; i < 30000; ++i) {
    PowerSample s;
    s.start_s = i * 10e-6;
    s.end_s = (i + 1) * 10e-6;
    s.clock_hz = i % 2 ? 1.4e9 : 1.6e9;
    s.power_w = i % 2 ? 900 : 500;
    s.filtered_w = 650 + i * 1e-3;
    s.throttled = i % 3 != 0;
    energy += s.power_w * 10e-6;
    track.push_back(s);
  }
  std::vector<PowerSample> bounded = track;
  const double span = report::bound_track(bounded, report::kMaxTrackEntries);
  CHECK(span == Approx(0.3 / 2000));
  CHECK(bounded.size() <= report::kMaxTrackEntries);
  CHECK(bounded.size() > report::kMaxTrackEntries * 9 / 10);
  double e = 0;
  for (const PowerSample& s : bounded) e += s.power_w * (s.end_s - s.start_s);
  CHECK(e == Approx(energy).epsilon(1e-9));
  CHECK(bounded.front().start_s == 0);
  CHECK(bounded.back().end_s == Approx(0.3));
  CHECK(bounded.back().filtered_w == track.back().filtered_w);
  CHECK(bounded[5].power_w == Approx(700).epsilon(0.1));  // the spikes are averaged out
  CHECK(bounded[5].throttled);
  // Just past the bound: equal windows a little shorter than a span stay about one each.
  std::vector<PowerSample> just(track.begin(), track.begin() + 2001);
  report::bound_track(just, report::kMaxTrackEntries);
  CHECK(just.size() <= report::kMaxTrackEntries);
  CHECK(just.size() >= report::kMaxTrackEntries - 1);
  CHECK(just.back().end_s == Approx(2001 * 10e-6));
  // A track within the bound is left as it is.
  std::vector<PowerSample> short_track(track.begin(), track.begin() + 100);
  CHECK(report::bound_track(short_track, report::kMaxTrackEntries) == 0);
  CHECK(short_track.size() == 100);
}

TEST_CASE("power: the governor's lowest clock is the first step at or above the curve's lowest, and a load too heavy "
          "for the limit runs there", "[power]") {
  const PowerParams p = params();  // the curve starts at 1 GHz; steps of 15 MHz: 990, 1005
  CHECK(Governor::lowest_clock(p) == Approx(1005e6));
  Governor g(p, 50, 0.8);
  const Load heavy{5e-6};  // 10 kW at 2 GHz
  for (int i = 0; i < 200; ++i) g.end_window(i * 1e-6, (i + 1) * 1e-6, heavy.core_nominal(g, 1e-6), 0);
  CHECK(g.clock_hz() == Approx(Governor::lowest_clock(p)));
}

TEST_CASE("power: the power section's errors name the file, line and key", "[power][errors]") {
  const std::string h100 = source_path("configs/h100-sxm.yaml");
  auto err = [&](const std::string& power) {
    const std::string path = temp_file("extends: " + h100 + "\npower:\n" + power);
    return error_of([&] { config::load_config(path); });
  };
  // A limit below what the chip draws idle: 75 W floor + leakage at the curve's lowest voltage.
  CHECK_THAT(err("  limit: 80 W\n"), Catch::Contains(":3:10: key 'power.limit'") && Catch::Contains("idle"));
  CHECK_THAT(err("  vf_curve: [\"1.2 GHz at 0.7 V\", \"1.5 GHz at 0.65 V\", \"1.98 GHz at 0.8 V\"]\n"),
             Catch::Contains(":3:13: key 'power.vf_curve'") && Catch::Contains("point 2") && Catch::Contains("not monotone"));
  CHECK_THAT(err("  vf_curve: [\"1.5 GHz at 0.7 V\", \"1.2 GHz at 0.8 V\"]\n"), Catch::Contains("not monotone"));
  CHECK_THAT(err("  vf_curve: [\"1.5 GHz, 0.7 V\"]\n"), Catch::Contains("is not CLOCK at VOLTAGE"));
  CHECK_THAT(err("  vf_curve: [\"1.5 GHz at 0.7 A\"]\n"), Catch::Contains("key 'power.vf_curve'"));
  CHECK_THAT(err("  base_clock: 1.6 GHz\n  boost_clock: 1.5 GHz\n"),
             Catch::Contains(":4:16: key 'power.boost_clock'") && Catch::Contains("below power.base_clock"));
  CHECK_THAT(err("  boost_clock: 2.1 GHz\n"), Catch::Contains("key 'power.boost_clock'") && Catch::Contains("above the highest clock"));
  CHECK_THAT(err("  peak_ratio: 0.8\n"), Catch::Contains(":3:15: key 'power.peak_ratio'") && Catch::Contains("at least 1"));
  CHECK_THAT(err("  mode: caped\n"), Catch::Contains("key 'power.mode'") && Catch::Contains("did you mean 'capped'"));
  CHECK_THAT(err("  limit: -5 W\n"), Catch::Contains("key 'power.limit'"));
  CHECK_THAT(err("  limt: 500 W\n"), Catch::Contains("key 'power.limt'") && Catch::Contains("did you mean 'power.limit'"));
  CHECK_THAT(err("  control_period: 2 ms\n"), Catch::Contains("key 'power.control_period'"));
  // capped needs an energy table to price power; fixed_clock does not.
  CHECK_THAT(error_of([&] { config::load_config(h100, {"energy.table="}); }),
             Catch::Contains("key 'power.mode'") && Catch::Contains("energy table"));
  CHECK(error_of([&] { config::load_config(h100, {"energy.table=", "power.mode=fixed_clock"}); }).empty());
  // A limit of 700 W and the shipped curve load.
  CHECK(err("  limit: 400 W\n").empty());
}
