// The power governor in the simulation (power.mode capped): the limit holds over windows longer
// than the time constant, throughput rises with the limit, short kernels run at boost, zeros run
// faster than random data on a power-limited chip, and the energy the report gives is the power
// the governor saw, integrated.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "helpers.h"

using xpusim::testing::simulate;
using xpusim::testing::kH100;
using xpusim::testing::source_path;

namespace {

std::string gemms(int n, int size, const std::string& dtype = "bf16", const std::string& switching = "random") {
  std::string t = "xpusim_trace: 1\nname: gemms\nops:\n";
  for (int i = 0; i < n; ++i)
    t += "  - {name: g" + std::to_string(i) + ", kind: gemm, m: " + std::to_string(size) + ", n: " + std::to_string(size) +
         ", k: " + std::to_string(size) + ", dtype: " + dtype + ", switching: " + switching + "}\n";
  return t;
}

struct Window {
  double start, end, power, average;
};
std::vector<Window> track(const YAML::Node& r) {
  std::vector<Window> w;
  for (const auto& s : r["chip"]["power"]["track"])
    w.push_back({s["start_s"].as<double>(), s["end_s"].as<double>(), s["power_w"].as<double>(), s["average_power_w"].as<double>()});
  return w;
}
// Mean power over [a, b) of the piecewise-constant track.
double mean_power(const std::vector<Window>& w, double a, double b) {
  double e = 0;
  for (const Window& x : w) {
    const double lo = std::max(a, x.start), hi = std::min(b, x.end);
    if (hi > lo) e += x.power * (hi - lo);
  }
  return e / (b - a);
}
}  // namespace

TEST_CASE("power: the limit holds over every window longer than the time constant", "[sim][power]") {
  // A load that starts on an idle chip runs its first control window at boost (the governor
  // has not seen it yet, as a real one has not); every window of the time constant or longer
  // after that stays at the limit.
  const double tau = 200e-6, limit = 700, first = 10e-6;
  // No bursts above the limit (peak_ratio 1): from idle, every window of tau or longer.
  const std::vector<std::string> sets = {"power.time_constant=200 us", "power.control_period=10 us"};
  std::vector<std::string> no_bursts = sets;
  no_bursts.push_back("power.peak_ratio=1");
  const YAML::Node r = simulate(kH100, gemms(24, 2048), no_bursts);
  const std::vector<Window> w = track(r);
  REQUIRE(w.size() > 5);
  const double end = w.back().end;
  REQUIRE(end > 3 * tau);
  int checked = 0;
  for (const Window& x : w)
    for (double len : {tau, 2 * tau, 3 * tau}) {
      if (x.start < first || x.start + len > end) continue;
      INFO("window from " << x.start * 1e6 << " us, " << len * 1e6 << " us long");
      CHECK(mean_power(w, x.start, x.start + len) <= limit * 1.03);
      ++checked;
    }
  CHECK(checked > 10);
  // The load is heavy enough to need the limit: the governor throttled.
  CHECK(r["total"]["power"]["throttled_share"].as<double>() > 0.5);
  CHECK(r["total"]["bound"].as<std::string>() == "power");

  // Bursts allowed (the shipped peak ratio): the time-constant average the limit applies to
  // stays at it. The governor predicts each window from the last; on a train of 35 us kernels
  // the windows at kernel boundaries miss that prediction upwards, and the average runs up to
  // about 4% over (docs/energy-model.md).
  const YAML::Node b = simulate(kH100, gemms(24, 2048), sets);
  for (const Window& x : track(b)) CHECK(x.average <= limit * 1.05);
}

TEST_CASE("power: throughput is monotone in the power limit", "[sim][power]") {
  double last_time = 1e9;
  std::vector<double> times;
  for (const char* limit : {"250 W", "400 W", "550 W", "700 W", "1000 W"}) {
    const YAML::Node r = simulate(kH100, gemms(2, 2048), {std::string("power.limit=") + limit, "power.start=sustained"});
    const double t = r["total"]["time_s"].as<double>();
    INFO("limit " << limit << ": " << t * 1e6 << " us");
    CHECK(t <= last_time * 1.001);
    last_time = t;
    times.push_back(t);
  }
  CHECK(times.front() > 1.3 * times.back());  // a quarter of the power is far slower
}

TEST_CASE("power: a limit the chip cannot hold at its lowest clock is reported as not held", "[sim][power]") {
  // 90 W on an H100: even at 750 MHz a GEMM draws about 310 W.
  const YAML::Node low = simulate(kH100, gemms(1, 4096), {"power.limit=90 W"});
  const YAML::Node p = low["chip"]["power"];
  CHECK_FALSE(p["limit_held"].as<bool>());
  CHECK(p["lowest_clock_hz"].as<double>() == Approx(0.75e9));
  CHECK(p["power_at_lowest_clock_w"].as<double>() > 200);
  CHECK(low["total"]["power"]["sm_clock_hz"].as<double>() < 0.8e9);
  // The shipped 700 W is held, sustained or not.
  for (const char* start : {"power.start=idle", "power.start=sustained"}) {
    const YAML::Node ok = simulate(kH100, gemms(2, 4096), {start})["chip"]["power"];
    INFO(start);
    CHECK(ok["limit_held"].as<bool>());
    CHECK_FALSE(ok["power_at_lowest_clock_w"]);
  }
}

TEST_CASE("power: under power.start steady a kernel shorter than the time constant averages the limit, not above it",
          "[sim][power]") {
  // One fp8 2048^3 GEMM (about 15 us): sustained runs its first window at boost and averages
  // far above 700 W; steady measures its load first and starts at the clock that holds it.
  const YAML::Node sustained = simulate(kH100, gemms(1, 2048, "fp8"), {"power.start=sustained"});
  const YAML::Node steady = simulate(kH100, gemms(1, 2048, "fp8"), {"power.start=steady"});
  const double limit = steady["chip"]["power"]["limit_w"].as<double>();
  CHECK(sustained["total"]["energy"]["average_power_w"].as<double>() > 1.2 * limit);
  CHECK(steady["total"]["energy"]["average_power_w"].as<double>() <= 1.005 * limit);
  CHECK(steady["total"]["energy"]["average_power_w"].as<double>() > 0.85 * limit);
  CHECK(steady["total"]["power"]["sm_clock_hz"].as<double>() < 0.8 * 1.98e9);
  CHECK(steady["chip"]["power"]["start"].as<std::string>() == "steady");
  // A load under the limit at boost runs at boost, steady or not.
  const YAML::Node light = simulate(kH100, gemms(1, 512), {"power.start=steady"});
  CHECK(light["total"]["power"]["sm_clock_hz"].as<double>() == Approx(1.98e9));
}

TEST_CASE("power: a short kernel runs at boost, unthrottled", "[sim][power]") {
  const YAML::Node r = simulate(kH100, gemms(1, 1024));
  const YAML::Node p = r["ops"][0]["power"];
  CHECK(p["sm_clock_hz"].as<double>() == Approx(1.98e9));
  CHECK(p["throttled_share"].as<double>() == 0);
  CHECK(r["ops"][0]["bound"].as<std::string>() != "power");
}

TEST_CASE("power: zeros run faster than random data on a power-limited chip, not at a fixed clock", "[sim][power]") {
  auto run = [&](const char* sw, std::vector<std::string> sets) {
    sets.push_back("power.start=sustained");
    return simulate(kH100, gemms(1, 4096, "bf16", sw), sets);
  };
  const YAML::Node random = run("random", {}), zeros = run("zeros", {});
  CHECK(zeros["total"]["time_s"].as<double>() < 0.95 * random["total"]["time_s"].as<double>());
  CHECK(zeros["ops"][0]["power"]["sm_clock_hz"].as<double>() > random["ops"][0]["power"]["sm_clock_hz"].as<double>());
  const YAML::Node rf = run("random", {"power.mode=fixed_clock"}), zf = run("zeros", {"power.mode=fixed_clock"});
  CHECK(zf["total"]["time_s"].as<double>() == rf["total"]["time_s"].as<double>());
  CHECK(zf["total"]["energy"]["classes"]["math"].as<double>() < 0.6 * rf["total"]["energy"]["classes"]["math"].as<double>());
  CHECK(zf["total"]["energy"]["classes"]["instruction_overhead"].as<double>() ==
        Approx(rf["total"]["energy"]["classes"]["instruction_overhead"].as<double>()));
}

TEST_CASE("power: the report's energy is the governor's power integrated, and B200 runs the same model", "[sim][power]") {
  const YAML::Node r = simulate(kH100, gemms(3, 2048));
  double e = 0;
  for (const Window& x : track(r)) e += x.power * (x.end - x.start);
  // The windows price the same actions; the report adds DRAM refresh, which no kernel counts.
  CHECK(r["total"]["energy"]["total_j"].as<double>() == Approx(e).epsilon(0.03));
  CHECK(r["total"]["energy"]["classes"]["uncore"].as<double>() == Approx(75 * r["total"]["time_s"].as<double>()));

  const YAML::Node b = simulate(source_path("configs/b200.yaml"), gemms(1, 4096), {"power.start=sustained"});
  CHECK(b["chip"]["power"]["limit_w"].as<double>() == 1000);
  CHECK(b["total"]["power"]["chip_power_w"].as<double>() == Approx(1000).epsilon(0.05));
  CHECK(b["total"]["power"]["sm_clock_hz"].as<double>() < 1.98e9);
}

TEST_CASE("power: the MAGNet accelerator runs through the same governor", "[sim][power][accelerator]") {
  const std::string magnet = source_path("configs/magnet-int4.yaml");
  const std::string trace = "xpusim_trace: 1\nops:\n  - {name: g, kind: gemm, m: 1024, n: 1024, k: 1024, dtype: int4}\n";
  auto run = [&](const char* limit) {
    return simulate(magnet, trace, {"power.mode=capped", std::string("power.limit=") + limit, "power.start=sustained"});
  };
  const YAML::Node low = run("100 mW"), high = run("2 W");
  // Under a tight limit the clock falls below the top operating point and the chip sits at the limit.
  CHECK(low["total"]["power"]["sm_clock_hz"].as<double>() < 1.7e9);
  CHECK(low["total"]["power"]["chip_power_w"].as<double>() == Approx(0.1).epsilon(0.05));
  CHECK(low["total"]["bound"].as<std::string>() == "power");
  // Above what it draws, it runs at the top operating point (1760 MHz at 1.05 V), unthrottled.
  CHECK(high["total"]["power"]["sm_clock_hz"].as<double>() == Approx(1.76e9));
  CHECK(high["total"]["power"]["throttled_share"].as<double>() == 0);
  CHECK(low["total"]["time_s"].as<double>() > 1.5 * high["total"]["time_s"].as<double>());
  // Energy per operation is lower at the lower voltage.
  CHECK(low["total"]["energy"]["tops_per_w_on_chip"].as<double>() > high["total"]["energy"]["tops_per_w_on_chip"].as<double>());
  // The report's energy is the governor's windows integrated.
  double e = 0;
  for (const Window& x : track(low)) e += x.power * (x.end - x.start);
  CHECK(low["total"]["energy"]["total_j"].as<double>() == Approx(e).epsilon(0.03));
}

TEST_CASE("power: the A100 holds its 400 W limit under a sustained GEMM, and zeros run at boost", "[sim][power]") {
  // The A100 runs the H100's governor with the H100's fitted energy factor carried across; a
  // sustained 4096^3 bf16 GEMM on random data needs more than 400 W at its 1410 MHz boost, so
  // the governor throttles it, while zero operands switch too little to reach the limit.
  const std::string a100 = source_path("configs/a100.yaml");
  const YAML::Node random = simulate(a100, gemms(1, 4096), {"power.start=sustained"});
  const YAML::Node zeros = simulate(a100, gemms(1, 4096, "bf16", "zeros"), {"power.start=sustained"});
  CHECK(random["chip"]["power"]["limit_w"].as<double>() == 400);
  CHECK(random["total"]["power"]["chip_power_w"].as<double>() == Approx(400).epsilon(0.03));
  CHECK(random["total"]["bound"].as<std::string>() == "power");
  CHECK(random["ops"][0]["power"]["sm_clock_hz"].as<double>() < 0.95 * 1.41e9);
  CHECK(zeros["ops"][0]["power"]["sm_clock_hz"].as<double>() == Approx(1.41e9));
  CHECK(zeros["total"]["power"]["chip_power_w"].as<double>() < 400);
  CHECK(zeros["total"]["time_s"].as<double>() < 0.95 * random["total"]["time_s"].as<double>());
}
