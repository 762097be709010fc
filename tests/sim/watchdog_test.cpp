// The watchdog and the limits: a run that cannot finish stops with the stuck ops named, and
// absurd inputs are refused with the limit to raise.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>

#include "helpers.h"
#include "sim/config/config_loader.h"
#include "sim/config/limits.h"
#include "sim/engine/simulate.h"
#include "sim/report/isolated.h"
#include "sim/trace/trace.h"

using xpusim::testing::error_of;
using xpusim::testing::source_path;
using xpusim::testing::temp_file;
using xpusim::testing::kH100;

namespace {

const std::string kChain =
    "xpusim_trace: 1\nops:\n"
    "  - {name: a, kind: gemm, m: 1024, n: 1024, k: 1024}\n"
    "  - {name: b, kind: softmax, shape: [1024, 1024], deps: [a]}\n"
    "  - {name: c, kind: gemm, m: 1024, n: 1024, k: 1024, stream: 1}\n";

// The stall's message, or "" when the run finishes; the simulation runs in a child process.
std::string stall_of(const std::string& trace_text, const char* fault) {
  const auto cfg = xpusim::config::load_config(kH100);
  const auto tr = xpusim::trace::load_trace(temp_file(trace_text));
  if (fault) setenv("XPUSIM_FAULT", fault, 1);
  std::string what;
  try {
    xpusim::report::simulate_isolated(cfg, tr);
  } catch (const xpusim::StallError& e) {
    what = e.what();
  }
  unsetenv("XPUSIM_FAULT");
  return what;
}

struct LimitsGuard {  // every test leaves the defaults in force
  ~LimitsGuard() { xpusim::limits::current() = xpusim::limits::Limits{}; }
};

}  // namespace

TEST_CASE("a lost CTA completion stops the run, naming the stuck op, its module and its waiters", "[sim][watchdog]") {
  CHECK(stall_of(kChain, nullptr).empty());
  const std::string e = stall_of(kChain, "lose-cta:a");
  // Nothing else is pending once the last completion is lost: the events run out.
  CHECK_THAT(e, Catch::Contains("simulation stalled: no events left after") &&
                    Catch::Contains("(a completion that never arrived)"));
  CHECK_THAT(e, Catch::Contains("2 of 3 ops unfinished"));  // c, on its own stream, finished
  // The lost completion leaves one CTA in flight for ever; every other CTA finished.
  CHECK_THAT(e, Catch::Matches("(.|\n)*'a' \\([^)]*:3:5\\): running on gpu.dispatcher: [0-9]+ of [0-9]+ CTAs finished, "
                               "1 in flight on SMs, 0 not yet placed(.|\n)*"));
  CHECK_THAT(e, Catch::Contains("'b' (") && Catch::Contains("waits for 'a'"));
  CHECK_THAT(e, !Catch::Contains("'c' ("));
}

TEST_CASE("a window of simulated time with no CTA finishing stops the run (stall_s)", "[sim][watchdog]") {
  LimitsGuard guard;
  xpusim::limits::set("stall_s=1e-7");  // 100 ns: less than any CTA of these GEMMs takes
  const std::string e = stall_of(kChain, nullptr);
  CHECK_THAT(e, Catch::Contains("simulation stalled: no CTA and no op finished in 100 ns of simulated time, up to 100 ns") &&
                    Catch::Contains("--limit stall_s=S allows longer"));
  CHECK_THAT(e, Catch::Contains("3 of 3 ops unfinished") && Catch::Contains("running on gpu.dispatcher: 0 of"));
}

TEST_CASE("a collective longer than the stall window is in flight, not stalled", "[sim][watchdog]") {
  // Its end is priced as it starts: it lands at a set time, so a window it spans finishes nothing
  // and is still progress. A kernel that follows it is watched again.
  LimitsGuard guard;
  xpusim::limits::set("stall_s=1e-3");  // 1 ms, against a 64 MiB ring all-reduce's ~0.25 ms x 20
  const YAML::Node r = xpusim::testing::simulate(source_path("configs/systems/dgx-h100.yaml"),
                                                 "xpusim_trace: 1\nops:\n"
                                                 "  - {name: ar, kind: all_reduce, bytes: 4 GiB, devices: 0-7, algorithm: ring}\n"
                                                 "  - {name: g, kind: gemm, m: 1024, n: 1024, k: 1024, devices: [0], deps: [ar]}\n");
  REQUIRE(r["ops"].size() == 2);
  const YAML::Node ar = r["ops"][0], g = r["ops"][1];
  CHECK(ar["end_s"].as<double>() - ar["start_s"].as<double>() > 5e-3);  // five windows and more with nothing finishing
  CHECK(g["end_s"].as<double>() > ar["end_s"].as<double>());
}

TEST_CASE("a livelock (simulated time stopped, the driver woken at every delta) stops the run", "[sim][watchdog]") {
  const std::string e = stall_of(kChain, "livelock:a");
  CHECK_THAT(e, Catch::Contains("simulation stalled: simulated time stopped advancing at") &&
                    Catch::Contains("times at that instant with nothing finishing"));
  CHECK_THAT(e, Catch::Contains("running on gpu.dispatcher") && Catch::Contains("waits for 'a'"));
}

TEST_CASE("limits refuse absurd inputs and name the flag that raises them", "[limits]") {
  LimitsGuard guard;
  const auto cfg = xpusim::config::load_config(kH100);
  const auto big = xpusim::trace::load_trace(temp_file("xpusim_trace: 1\nops:\n  - {name: g, kind: gemm, m: 8192, n: 8192, k: 8192}\n"));
  xpusim::engine::lower_all(cfg, big);  // 264 192 steps: inside the default
  xpusim::limits::set("cta_steps=100000");
  CHECK_THAT(error_of([&] { xpusim::engine::lower_all(cfg, big); }),
             Catch::Contains("op 'g': brings the run to 264192 simulated CTA steps") && Catch::Contains("--limit cta_steps=N"));

  xpusim::limits::set("ops=3");
  const std::string four = "xpusim_trace: 1\nops:\n  - repeat: 4\n    ops: [{name: e, kind: elementwise, shape: [64]}]\n";
  // A repeat block is measured before it is expanded, with the ops before it; a flat list as it grows.
  CHECK_THAT(error_of([&] { xpusim::trace::load_trace(temp_file(four)); }),
             Catch::Contains("key 'ops[0]': the repeat block expands to 4 ops and the trace to 4, more than 3 ops") &&
                 Catch::Contains("--limit ops=N"));
  const std::string two_then_two = "xpusim_trace: 1\nops:\n  - {kind: elementwise, shape: [64]}\n  - {kind: elementwise, shape: [64]}\n"
                                   "  - repeat: 2\n    ops: [{repeat: 1, ops: [{kind: elementwise, shape: [64]}]}]\n";
  CHECK_THAT(error_of([&] { xpusim::trace::load_trace(temp_file(two_then_two)); }),
             Catch::Contains("key 'ops[2]': the repeat block expands to 2 ops and the trace to 4, more than 3 ops"));
  // 2^80 ops by four nested blocks: the count saturates at 2^62 instead of wrapping.
  const std::string deep = "xpusim_trace: 1\nops:\n  - repeat: 1048576\n    ops:\n    - repeat: 1048576\n      ops:\n"
                           "      - repeat: 1048576\n        ops:\n        - repeat: 1048576\n          ops: [{kind: elementwise, shape: [64]}]\n";
  CHECK_THAT(error_of([&] { xpusim::trace::load_trace(temp_file(deep)); }),
             Catch::Contains("the repeat block expands to at least 4611686018427387904 ops"));
  // Aliases: 40 levels, each naming the one below twice, are 2^40 ops in a file of 2 kB; the
  // count stops once it passes the limit instead of walking the tree.
  std::string aliases = "xpusim_trace: 1\nops:\n  - repeat: 1\n    ops:\n      - &b0 {repeat: 1, ops: [{kind: elementwise, shape: [64]}]}\n";
  for (int i = 1; i <= 40; ++i)
    aliases += "      - &b" + std::to_string(i) + " {repeat: 1, ops: [*b" + std::to_string(i - 1) + ", *b" + std::to_string(i - 1) + "]}\n";
  CHECK_THAT(error_of([&] { xpusim::trace::load_trace(temp_file(aliases)); }),
             Catch::Contains("key 'ops[0]': the repeat block expands to at least ") && Catch::Contains("more than 3 ops"));
  // An inner count the expansion refuses is counted as one op, so its own error is the one given.
  CHECK_THAT(error_of([&] {
               xpusim::trace::load_trace(temp_file("xpusim_trace: 1\nops:\n  - repeat: 2\n    ops:\n      - repeat: 5000000\n"
                                                   "        ops: [{kind: elementwise, shape: [64]}]\n"));
             }),
             Catch::Contains("key 'ops[0].ops[0].repeat': value 5000000 is out of range"));
  CHECK_THAT(error_of([&] {
               xpusim::trace::load_trace(temp_file("xpusim_trace: 1\nops:\n  - repeat: 2\n    ops:\n      - repeat: \"5000\"\n"
                                                   "        ops: [{kind: elementwise, shape: [64]}]\n"));
             }),
             Catch::Contains("key 'ops[0].ops[0].repeat'"));
  const std::string flat_four = "xpusim_trace: 1\nops:\n" + [] {
    std::string ops;
    for (int i = 0; i < 4; ++i) ops += "  - {kind: elementwise, shape: [64]}\n";
    return ops;
  }();
  CHECK_THAT(error_of([&] { xpusim::trace::load_trace(temp_file(flat_four)); }),
             Catch::Contains("key 'ops[3]': the trace has more than 3 ops"));
  xpusim::limits::set("ops=4");
  CHECK(xpusim::trace::load_trace(temp_file(four)).ops.size() == 4);

  xpusim::limits::set("file_bytes=64");
  CHECK_THAT(error_of([&] { xpusim::trace::load_trace(temp_file(four)); }),
             Catch::Contains("is more than a YAML file may hold") && Catch::Contains("--limit file_bytes=N"));
  xpusim::limits::current() = xpusim::limits::Limits{};

  // 65 536 ops at ~16 kB each to simulate is about 1 GB: more than 1% of any host's memory.
  xpusim::limits::set("memory_share=0.01");
  std::string jsonl = "{\"xpusim_trace\": 1}\n";
  for (int i = 0; i < 65536; ++i) jsonl += "{\"kind\": \"elementwise\", \"shape\": [64]}\n";
  CHECK_THAT(error_of([&] { xpusim::trace::load_trace(temp_file(jsonl, ".jsonl")); }),
             Catch::Contains("this host has available") && Catch::Contains("--limit memory_share=N"));
  // A repeat block of as many: refused before any of it is expanded.
  CHECK_THAT(error_of([&] {
               xpusim::trace::load_trace(temp_file("xpusim_trace: 1\nops:\n  - repeat: 65536\n    ops: [{kind: elementwise, shape: [64]}]\n"));
             }),
             Catch::Contains("key 'ops[0]': the repeat block expands to 65536 ops and the trace to 65536, which would take") &&
                 Catch::Contains("this host has available"));
}

TEST_CASE("limit values are checked (--limit)", "[limits]") {
  LimitsGuard guard;
  CHECK_THAT(error_of([] { xpusim::limits::set("opz=5"); }), Catch::Contains("unknown limit 'opz' (did you mean 'ops'?)"));
  CHECK_THAT(error_of([] { xpusim::limits::set("ops"); }), Catch::Contains("expected NAME=VALUE"));
  CHECK_THAT(error_of([] { xpusim::limits::set("ops=-5"); }), Catch::Contains("takes a whole number in [1,"));
  CHECK_THAT(error_of([] { xpusim::limits::set("ops=2.5"); }), Catch::Contains("takes a whole number"));
  CHECK_THAT(error_of([] { xpusim::limits::set("stall_s=abc"); }), Catch::Contains("'abc' is not a number"));
  CHECK_THAT(error_of([] { xpusim::limits::set("memory_share=2"); }), Catch::Contains("in [0.01, 1]"));
  xpusim::limits::set("ops=2e7");
  CHECK(xpusim::limits::current().ops == 20000000);
}

TEST_CASE("inputs that are not regular files are refused, never read forever", "[limits]") {
  CHECK_THAT(error_of([] { xpusim::trace::load_trace("/dev/zero"); }), Catch::Contains("/dev/zero: is not a regular file"));
  CHECK_THAT(error_of([] { xpusim::config::load_config(temp_file("extends: /dev/zero\n")); }),
             Catch::Contains(":1:10: key 'extends': file '/dev/zero' is not a regular file"));
  CHECK_THAT(error_of([] { xpusim::trace::load_trace(temp_file("{\"xpusim_trace\": 1}\n" + std::string(2 << 20, ' ') + "x\n", ".jsonl")); }),
             Catch::Contains(".jsonl:2:1: line is longer than 1048576 bytes"));
}
