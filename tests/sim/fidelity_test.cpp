// Fast fidelity against exact (docs/performance.md): on a small trace that exercises every
// shortcut (a GEMM of many short waves, a GEMM of two long waves whose K steps repeat, a
// one-wave grid-stride kernel, layers that repeat), the fast run must actually take them and
// stay within 1% of exact in time and 2% in energy.
#include <catch2/catch.hpp>

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "helpers.h"
#include "models/common/systemc.h"
#include "models/sm/fast_path.h"
#include "sim/config/config_loader.h"
#include "sim/engine/simulate.h"
#include "sim/report/isolated.h"
#include "sim/trace/trace.h"

using xpusim::testing::source_path;
using xpusim::testing::temp_file;

namespace {

const char* kTrace = R"(xpusim_trace: 1
name: fidelity-small
ops:
  - repeat: 4
    name: layer
    ops:
      - {name: norm, kind: layernorm, shape: [4096, 8192], dtype: bf16}
      - {name: proj, kind: gemm, m: 32768, n: 4096, k: 512, dtype: bf16}
      - {name: up, kind: gemm, m: 4096, n: 2048, k: 4096, dtype: bf16}
      - {name: act, kind: elementwise, shape: [8192, 4096], inputs: 1, flops_per_element: 8, dtype: bf16}
)";

// `trace` on a shipped config with `sets`; without a fidelity, the engine's default options.
YAML::Node run_on(const std::string& config, const std::vector<std::string>& sets, const char* trace,
                  std::optional<xpusim::engine::Fidelity> f) {
  const auto cfg = xpusim::config::load_config(source_path(config), sets);
  const auto tr = xpusim::trace::load_trace(temp_file(trace));
  xpusim::engine::SimOptions opt;
  if (f) opt.fidelity = *f;
  return YAML::Load(xpusim::report::simulate_isolated(cfg, tr, opt));
}

YAML::Node run(const std::vector<std::string>& sets, std::optional<xpusim::engine::Fidelity> f) {
  return run_on("configs/h100-sxm.yaml", sets, kTrace, f);
}

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

// Fast's totals within its bounds of exact's: 1% in time, 2% in energy.
void check_within_bounds(const YAML::Node& exact, const YAML::Node& fast) {
  const double t_exact = exact["total"]["time_s"].as<double>(), t_fast = fast["total"]["time_s"].as<double>();
  const double e_exact = exact["total"]["energy"]["total_j"].as<double>();
  const double e_fast = fast["total"]["energy"]["total_j"].as<double>();
  INFO("time: exact " << t_exact << " s, fast " << t_fast << " s; energy: exact " << e_exact << " J, fast " << e_fast << " J");
  CHECK(rel(t_fast, t_exact) <= 0.01);
  CHECK(rel(e_fast, e_exact) <= 0.02);
}

// A trace run exact, then fast, on a shipped config with `sets`.
std::pair<YAML::Node, YAML::Node> exact_and_fast(const std::string& config, const std::vector<std::string>& sets,
                                                 const char* trace) {
  YAML::Node exact = run_on(config, sets, trace, xpusim::engine::Fidelity::exact);
  return {exact, run_on(config, sets, trace, xpusim::engine::Fidelity::fast)};
}

// `exact_by_default`: the exact run takes the engine's default options, which must be exact and
// reuse nothing (one exact simulation serves both checks: they are the suite's slowest).
void check_fast_against_exact(const std::vector<std::string>& sets, bool exact_by_default) {
  const YAML::Node exact = run(sets, exact_by_default ? std::nullopt : std::optional(xpusim::engine::Fidelity::exact));
  const YAML::Node fast = run(sets, xpusim::engine::Fidelity::fast);
  CHECK(exact["fidelity"]["mode"].as<std::string>() == "exact");
  for (const auto& op : exact["ops"]) CHECK(!op["fidelity"]);
  CHECK(fast["fidelity"]["mode"].as<std::string>() == "fast");
  // The shortcuts were taken: later layers reuse the second (the first instance of a repeated
  // kernel meets a colder L2 and is simulated again), steady waves were skipped.
  CHECK(fast["fidelity"]["reused_ops"].as<int>() >= 6);
  CHECK(fast["fidelity"]["extrapolated_ops"].as<int>() >= 2);
  // Both kinds of extrapolation: whole waves (proj) and steps of a kernel of several waves (up).
  bool waves = false, steps_of_waves = false;
  for (const auto& op : fast["ops"]) {
    const YAML::Node f = op["fidelity"];
    if (!f || !f["extrapolated_ctas"]) continue;
    waves |= f["extrapolated_ctas"].as<long long>() > 0;
    steps_of_waves |= op["kind"].as<std::string>() == "gemm" && f["extrapolated_steps"].as<long long>() > 0 &&
                      op["lowering"]["waves"].as<double>() > 1;
  }
  CHECK(waves);
  CHECK(steps_of_waves);
  check_within_bounds(exact, fast);
  // Work is counted in full: every MAC of every op, simulated or not.
  CHECK(rel(fast["total"]["flops"].as<double>(), exact["total"]["flops"].as<double>()) < 1e-9);
}

}  // namespace

TEST_CASE("fast fidelity stays within 1% of exact in time and 2% in energy at a fixed clock", "[sim][fidelity][heavy]") {
  check_fast_against_exact({"power.mode=fixed_clock"}, false);
}

// Under the governor the clock moves while waves and steps are measured and replayed: the
// compute-bound ones must be replayed in cycles. The exact run here is the engine's default,
// which must be exact and reuse nothing.
TEST_CASE("fast fidelity stays within 1% of exact in time and 2% in energy under the power governor, and exact "
          "is the engine's default and reuses nothing",
          "[sim][fidelity][heavy]") {
  check_fast_against_exact({}, true);
}

// A reused kernel is not run, but what it leaves in the L2 (its output, dirty) is placed there:
// the kernel after it evicts that output and writes it back to DRAM, in fast as in exact.
// Without the placement the last op below wrote back a quarter less in fast than in exact.
TEST_CASE("a reused kernel leaves its output in the L2 for the next kernel to write back", "[sim][fidelity]") {
  const char* trace = R"(xpusim_trace: 1
name: reuse-leaves-l2
ops:
  - repeat: 4
    name: layer
    ops:
      - {name: scale, kind: elementwise, shape: [4096, 4096], inputs: 1, flops_per_element: 1, dtype: bf16}
  - {name: sweep, kind: elementwise, shape: [16384, 4096], inputs: 1, flops_per_element: 1, dtype: bf16}
)";
  const auto [exact, fast] = exact_and_fast("configs/h100-sxm.yaml", {"power.mode=fixed_clock"}, trace);
  const YAML::Node last_exact = exact["ops"][4], last_fast = fast["ops"][4];
  REQUIRE(last_fast["name"].as<std::string>() == "sweep");
  CHECK(fast["ops"][3]["fidelity"]["reused_from"]);  // the op before it was reused, not run
  CHECK((!last_fast["fidelity"] || !last_fast["fidelity"]["reused_from"]));
  const double wb_exact = last_exact["memory"]["hbm_write_bytes"].as<double>();
  const double wb_fast = last_fast["memory"]["hbm_write_bytes"].as<double>();
  INFO("the last op's DRAM writes: exact " << wb_exact << " B, fast " << wb_fast << " B");
  CHECK(rel(wb_fast, wb_exact) <= 0.02);
  CHECK(rel(last_fast["time_s"].as<double>(), last_exact["time_s"].as<double>()) <= 0.01);
}

// A chip held at its power limit: the governor moves the clock every few windows, so periods of
// a few steps always span a change and cannot be trusted. A skinny GEMM of one wave whose CTAs
// take hundreds of K steps each must still leave steady steps out (periods long enough to span
// a change are compared instead) and stay within the same bounds of exact. Before, such a run
// left nothing out and took as long as exact.
TEST_CASE("fast fidelity leaves steps out of a GEMM whose chip sits at its power limit, within 1% of exact",
          "[sim][fidelity][heavy]") {
  const char* trace = R"(xpusim_trace: 1
name: skinny-at-the-limit
ops:
  - {name: g, kind: gemm, m: 1024, n: 16, k: 150000, dtype: fp32}
)";
  const auto [exact, fast] = exact_and_fast("configs/v100.yaml", {"power.start=sustained"}, trace);
  REQUIRE(exact["ops"][0]["bound"].as<std::string>() == "power");  // the governor held the clock down
  const YAML::Node f = fast["ops"][0]["fidelity"];
  REQUIRE(f);
  CHECK(f["extrapolated_steps"].as<long long>() > 0);
  check_within_bounds(exact, fast);
}

// A collective's CTAs hold SMs beside a kernel on another stream (collectives.occupy_sms). The
// kernel beside them runs as it will again beside the same CTAs held as long: from its second
// time on it is reused (the key says what it ran beside), the collective's CTAs older than it are
// placed during its replay as they were, and those of a collective that started during it (here
// each all-gather, behind the GEMM's CTAs) from where it had placed its last CTA. Before, every
// such kernel was simulated in full.
TEST_CASE("fast fidelity reuses a kernel beside a collective's CTAs, within 1% of exact", "[sim][fidelity]") {
  const char* trace = R"(xpusim_trace: 1
name: gemm-beside-collectives
ops:
  - {name: g0, kind: gemm, m: 4096, n: 4096, k: 2048, dtype: bf16, devices: [0]}
  - {name: rs1, kind: reduce_scatter, bytes: 16777216, devices: 0-7, stream: 1, deps: [g0]}
  - {name: ag1, kind: all_gather, bytes: 16777216, devices: 0-7, stream: 1}
  - {name: g1, kind: gemm, m: 4096, n: 4096, k: 2048, dtype: bf16, devices: [0]}
  - {name: rs2, kind: reduce_scatter, bytes: 16777216, devices: 0-7, stream: 1, deps: [g1]}
  - {name: ag2, kind: all_gather, bytes: 16777216, devices: 0-7, stream: 1}
  - {name: g2, kind: gemm, m: 4096, n: 4096, k: 2048, dtype: bf16, devices: [0]}
  - {name: rs3, kind: reduce_scatter, bytes: 16777216, devices: 0-7, stream: 1, deps: [g2]}
  - {name: ag3, kind: all_gather, bytes: 16777216, devices: 0-7, stream: 1}
  - {name: g3, kind: gemm, m: 4096, n: 4096, k: 2048, dtype: bf16, devices: [0]}
)";
  const auto [exact, fast] = exact_and_fast("configs/systems/dgx-a100.yaml", {"power.mode=fixed_clock"}, trace);
  for (const int i : {3, 6, 9}) {  // each GEMM after the first starts with a reduce-scatter and outlasts it
    const YAML::Node g = exact["ops"][i], rs = exact["ops"][i - 2], ag = exact["ops"][i - 1];
    REQUIRE(g["start_s"].as<double>() == rs["start_s"].as<double>());
    REQUIRE(g["end_s"].as<double>() > ag["start_s"].as<double>());
    // The all-gather's CTAs waited behind the GEMM's: it ended after its transfers would have.
    REQUIRE(ag["time_s"].as<double>() > 1.2 * rs["time_s"].as<double>());
  }
  // Beside the CTAs the GEMM is slower than alone.
  CHECK(exact["ops"][3]["time_s"].as<double>() > 1.02 * exact["ops"][0]["time_s"].as<double>());
  const YAML::Node last = fast["ops"][9]["fidelity"];
  REQUIRE(last);
  CHECK(last["reused_from"].as<std::string>() == "g2");
  // The all-gather waiting behind the reused GEMM was placed where the recorded one's was, not
  // at the replay's end.
  CHECK(fast["ops"][8]["end_s"].as<double>() < fast["ops"][9]["end_s"].as<double>());
  for (size_t i = 1; i < exact["ops"].size(); ++i) {
    INFO(fast["ops"][i]["name"].as<std::string>() << ": exact " << exact["ops"][i]["time_s"].as<double>() << " s, fast "
                                                 << fast["ops"][i]["time_s"].as<double>() << " s");
    CHECK(rel(fast["ops"][i]["time_s"].as<double>(), exact["ops"][i]["time_s"].as<double>()) <= 0.01);
  }
  check_within_bounds(exact, fast);
}

// A long collective (a data-parallel reduce-scatter during a pipeline's drain) holds its CTAs
// beside many kernels, each starting at another point of its time. A kernel its CTAs outlast
// runs as it did beside the same CTAs before, however long they stay after it: from the second
// such instance on it is reused. Keyed by the time they had left, each missed and was simulated
// in full (a 1,024-GPU step crawled through its drain). A kernel during which the CTAs leave
// is not reused from such an entry.
TEST_CASE("fast fidelity reuses kernels that a collective's CTAs outlast wherever in its time they start",
          "[sim][fidelity]") {
  std::string trace = R"(xpusim_trace: 1
name: gemms-beside-a-long-collective
ops:
  - {name: g0, kind: gemm, m: 4096, n: 4096, k: 2048, dtype: bf16, devices: [0]}
  - {name: rs, kind: reduce_scatter, bytes: 1073741824, devices: 0-7, stream: 1, deps: [g0]}
)";
  for (int i = 1; i <= 12; ++i)
    trace += "  - {name: g" + std::to_string(i) + ", kind: gemm, m: 4096, n: 4096, k: 2048, dtype: bf16, devices: [0]}\n";
  const auto [exact, fast] = exact_and_fast("configs/systems/dgx-a100.yaml", {"power.mode=fixed_clock"}, trace.c_str());
  const YAML::Node rs = exact["ops"][1];
  const auto ends_in_rs = [&](const YAML::Node& g) { return g["end_s"].as<double>() < rs["end_s"].as<double>(); };
  // g1 to g10 run beside the reduce-scatter's CTAs (slower than g0 alone), g11 as they leave,
  // g12 after.
  REQUIRE(ends_in_rs(exact["ops"][11]));
  REQUIRE(!ends_in_rs(exact["ops"][12]));
  REQUIRE(exact["ops"][12]["start_s"].as<double>() < rs["end_s"].as<double>());
  CHECK(exact["ops"][5]["time_s"].as<double>() > 1.2 * exact["ops"][0]["time_s"].as<double>());
  int reused = 0;
  for (size_t i = 2; i < fast["ops"].size(); ++i) {
    const YAML::Node e = exact["ops"][i], f = fast["ops"][i];
    const bool r = f["fidelity"] && f["fidelity"]["reused_from"];
    reused += r;
    INFO(f["name"].as<std::string>() << ": exact " << e["time_s"].as<double>() << " s, fast " << f["time_s"].as<double>()
                                     << " s" << (r ? ", reused" : ""));
    if (ends_in_rs(e) && i >= 5) CHECK(r);  // from the third on (the first CTAs were placed during g1)
    if (i == 12) CHECK(!r);                 // the CTAs leave during it
    // The one the CTAs leave starts a few microseconds later than in exact (the replays before
    // it run their record's time), so they leave a little earlier in its time.
    CHECK(rel(f["time_s"].as<double>(), e["time_s"].as<double>()) <= (i == 12 ? 0.02 : 0.01));
  }
  CHECK(reused >= 7);
  check_within_bounds(exact, fast);
}

// A replay books its work in slices that end on the governor's window boundaries. A slice that
// started a picosecond (SystemC's time resolution) before a boundary was not waited for (only
// slices over a picosecond were), and the replay spun there forever: a 64-GPU GPT-3 pipeline
// hung at 906 ms of simulated time. Every slice up to the next boundary is now waited for, and
// moves time on.
TEST_CASE("a replay's slice always moves simulated time on", "[sim][fidelity]") {
  const double tick = 1e-4;
  for (const long long ps : {0LL, 1LL, 50'000'000LL, 99'999'999LL, 100'000'000LL, 906'099'999'999LL, 906'100'000'000LL,
                             906'100'000'001LL, 12'345'678'999'999LL}) {
    const double t = static_cast<double>(ps) * 1e-12;  // a time SystemC can hold
    const double slice = xpusim::next_tick_boundary(t, tick) - t;
    INFO("t = " << ps << " ps, slice " << slice << " s");
    CHECK(slice >= xpusim::kShortestWait);                                    // waited for
    CHECK(sc_core::sc_time(slice, sc_core::SC_SEC) >= sc_core::sc_time(1, sc_core::SC_PS));  // and time moves
    CHECK(slice <= tick * (1 + 1e-9));
  }
}
