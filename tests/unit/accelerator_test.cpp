// The MAGNet-style accelerator: the mapping search (legal tilings only, the work it counts, its
// DRAM traffic against the compulsory bound), the 4-bit/8-bit throughput, VS-Quant and input
// sparsity in the action counts, operating points, and the model end to end.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>

#include "helpers.h"
#include "models/accelerator/mapping.h"
#include "sim/config/config_loader.h"

using namespace xpusim;
using xpusim::testing::error_of;
using xpusim::testing::simulate;
using xpusim::testing::source_path;
using xpusim::testing::temp_file;
using xpusim::testing::d;

namespace {
const std::string kMagnet = source_path("configs/magnet-int4.yaml");

struct Chip {
  AcceleratorParams a;
  DramParams d;
  energy::Table table;
};

Chip magnet(const std::vector<std::string>& overrides = {}) {
  const auto cfg = config::load_config(kMagnet, overrides);
  return {cfg.chip.accel.accelerator, cfg.chip.accel.dram, *cfg.energy_table};
}

std::string gemm(long m, long n, long k, const std::string& dtype, const std::string& extra = "") {
  return "xpusim_trace: 1\nops:\n  - {name: g, kind: gemm, m: " + std::to_string(m) + ", n: " + std::to_string(n) +
         ", k: " + std::to_string(k) + ", dtype: " + dtype + extra + "}\n";
}

// Shapes of every kind the mapper meets: tiny, odd, skinny, batched, larger than any buffer.
const std::vector<accel::GemmShape> kShapes = {
    {1, 1, 1, 1, 4, 1.0},       {1, 3, 1000, 7, 4, 1.0},     {1, 384, 2304, 768, 4, 1.0}, {12, 384, 384, 64, 4, 1.0},
    {12, 384, 64, 384, 4, 1.0}, {1, 384, 768, 3072, 8, 1.0}, {1, 4096, 4096, 4096, 4, 0.5}, {1, 1, 4096, 4096, 8, 1.0},
    {4, 100, 300, 500, 8, 1.0},
};
}  // namespace

TEST_CASE("a chosen mapping never exceeds any buffer's capacity", "[accelerator]") {
  const Chip c = magnet();
  for (const auto& g : kShapes)
    for (const energy::Table* t : {&c.table, static_cast<const energy::Table*>(nullptr)}) {
      const accel::Mapping m = accel::map_gemm(g, c.a, c.d, t);
      INFO(g.batch << "x" << g.m << "x" << g.n << "x" << g.k << " int" << g.bits << ": " << m.describe());
      CHECK(accel::fits(m, g, c.a));
      CHECK(m.mg >= 1);
      CHECK(m.mg <= g.m);
      CHECK(m.ng <= g.n);
      CHECK(m.kg <= g.k);
    }
}

TEST_CASE("the capacity check rejects a tile too big for a buffer", "[accelerator]") {
  const Chip c = magnet();
  const accel::GemmShape g{1, 384, 2304, 768, 4, 1.0};
  accel::Mapping m = accel::map_gemm(g, c.a, c.d, &c.table);
  REQUIRE(accel::fits(m, g, c.a));
  accel::Mapping big = m;
  big.mg = big.ng = big.kg = 4096;  // the global buffer
  CHECK_FALSE(accel::fits(big, g, c.a));
  big = m;
  big.np = static_cast<int64_t>(c.a.weight_buffer_bytes);  // the weight buffer
  CHECK_FALSE(accel::fits(big, g, c.a));
  // Buffers too small for even the smallest tile: no mapping, and an error saying so.
  AcceleratorParams tiny = c.a;
  tiny.global_buffer_bytes = 16;
  CHECK_THROWS_AS(accel::map_gemm(g, tiny, c.d, &c.table), std::invalid_argument);
}

TEST_CASE("the MACs a mapping counts equal the op's work, with zeros gated", "[accelerator]") {
  const Chip c = magnet();
  for (const auto& g : kShapes) {
    const accel::Mapping m = accel::map_gemm(g, c.a, c.d, &c.table);
    const double work = static_cast<double>(g.batch) * g.m * g.n * g.k;
    const auto& n = m.counters;
    INFO(g.m << "x" << g.n << "x" << g.k);
    CHECK(m.macs == work);
    CHECK(n.mac_int4 + n.mac_int8 + n.mac_gated == Approx(work));
    CHECK((g.bits == 4 ? n.mac_int4 : n.mac_int8) == Approx(work * g.input_density));
    // VS-Quant: one scale multiply per vector of vsq_vector products.
    CHECK(n.vsq_scale == Approx(work / c.a.vsq_vector));
    // The array cannot beat its peak: cycles x MACs/cycle covers the work (padding only adds).
    CHECK(m.cycles * c.a.macs_per_cycle(g.bits) >= work * (1 - 1e-12));
  }
}

TEST_CASE("a mapping's DRAM traffic is at least the compulsory traffic", "[accelerator]") {
  const Chip c = magnet();
  for (const auto& g : kShapes) {
    const accel::Mapping m = accel::map_gemm(g, c.a, c.d, &c.table);
    INFO(g.m << "x" << g.n << "x" << g.k << ": " << m.describe());
    CHECK(m.dram_read_bytes + m.dram_write_bytes >= accel::compulsory_dram_bytes(g) * (1 - 1e-12));
    CHECK(m.counters.dram_bits == Approx(8 * (m.dram_read_bytes + m.dram_write_bytes)));
  }
  // A GEMM whose operands all fit in the global buffer moves exactly the compulsory bytes.
  const accel::GemmShape small{1, 16, 16, 64, 4, 1.0};
  const accel::Mapping m = accel::map_gemm(small, c.a, c.d, &c.table);
  CHECK(m.dram_read_bytes + m.dram_write_bytes == Approx(accel::compulsory_dram_bytes(small)));
}

TEST_CASE("4-bit mode doubles MACs per cycle over 8-bit", "[accelerator]") {
  const Chip c = magnet();
  CHECK(c.a.macs_per_cycle(4) == 1024);
  CHECK(c.a.macs_per_cycle(8) == 512);
  // And in simulated time: a compute-bound GEMM takes twice as long in int8.
  const YAML::Node r4 = simulate(kMagnet, gemm(512, 512, 512, "int4"));
  const YAML::Node r8 = simulate(kMagnet, gemm(512, 512, 512, "int8"));
  CHECK(r4["ops"][0]["bound"].as<std::string>() == "compute (MAC array)");
  CHECK(d(r8["total"]["time_s"]) / d(r4["total"]["time_s"]) == Approx(2.0).epsilon(0.02));
}

TEST_CASE("an accelerator run reports its work, mapping, time and energy", "[accelerator][sim]") {
  const Chip c = magnet();
  const YAML::Node r = simulate(kMagnet, gemm(384, 2304, 768, "int4"));
  const YAML::Node op = r["ops"][0];
  const double work = 384.0 * 2304 * 768;
  CHECK(d(op["flops"]) == Approx(2 * work));
  // No faster than the MAC array allows; compute-bound, so close to it.
  const double t_min = work / c.a.macs_per_cycle(4) / c.a.clock_hz;
  CHECK(d(op["time_s"]) >= t_min);
  CHECK(d(op["time_s"]) <= 1.05 * t_min);
  const YAML::Node mp = op["mapping"][0];
  CHECK(mp["m"].as<long>() == 384);
  CHECK(d(mp["global_buffer_tile"]["k"]) <= 768);
  CHECK(d(mp["dram_read_bytes"]) + d(mp["dram_write_bytes"]) >= d(mp["compulsory_dram_bytes"]));
  CHECK(d(op["memory"]["hbm_read_bytes"]) == Approx(d(mp["dram_read_bytes"]) + d(mp["dram_write_bytes"])));
  // Energy: on-chip efficiency excludes the DRAM interface, so it is the larger.
  const YAML::Node e = r["total"]["energy"];
  CHECK(d(e["tops_per_w_on_chip"]) > d(e["tops_per_w"]));
  CHECK(d(e["actions"]["vsq.scale"]) > 0);
  CHECK(d(e["instructions"]) == 0);
}

TEST_CASE("50%-dense inputs save MAC energy but not time", "[accelerator]") {
  const YAML::Node dense = simulate(kMagnet, gemm(512, 512, 512, "int4"));
  const YAML::Node half = simulate(kMagnet, gemm(512, 512, 512, "int4", ", input_density: 0.5"));
  CHECK(d(half["total"]["time_s"]) == Approx(d(dense["total"]["time_s"])));
  const double mac_dense = d(dense["total"]["energy"]["actions"]["mac.int4"]);
  CHECK(d(half["total"]["energy"]["actions"]["mac.int4"]) == Approx(mac_dense / 2));
  CHECK(d(half["total"]["energy"]["actions"]["mac.gated"]) > 0);
  CHECK(d(half["total"]["energy"]["tops_per_w_on_chip"]) > d(dense["total"]["energy"]["tops_per_w_on_chip"]));
}

TEST_CASE("the operating point scales energy by V^2 and time by the clock", "[accelerator]") {
  const std::string t = gemm(512, 512, 512, "int4");
  const YAML::Node nom = simulate(kMagnet, t);
  const YAML::Node low = simulate(kMagnet, t, {"accelerator.voltage=0.46 V", "accelerator.clock=152 MHz"});
  CHECK(d(low["total"]["time_s"]) / d(nom["total"]["time_s"]) == Approx(724.0 / 152.0).epsilon(0.01));
  // The array's actions scale with V^2; the DRAM interface is on its own supply and does not.
  const double v2 = (0.46 / 0.67) * (0.46 / 0.67);
  auto on_chip = [](const YAML::Node& r) {
    return d(r["total"]["energy"]["dynamic_j"]) - d(r["total"]["energy"]["classes"]["offchip_memory"]);
  };
  CHECK(on_chip(low) == Approx(v2 * on_chip(nom)).epsilon(1e-6));
  CHECK(d(low["total"]["energy"]["classes"]["offchip_memory"]) == Approx(d(nom["total"]["energy"]["classes"]["offchip_memory"])));
  CHECK(d(low["total"]["energy"]["tops_per_w_on_chip"]) > 1.5 * d(nom["total"]["energy"]["tops_per_w_on_chip"]));
}

TEST_CASE("operating points outside the chip's range are errors naming the key", "[accelerator][errors]") {
  CHECK_THAT(error_of([] { config::load_config(kMagnet, {"accelerator.voltage=1.2 V"}); }),
             Catch::Contains("accelerator.voltage") && Catch::Contains("between"));
  CHECK_THAT(error_of([] { config::load_config(kMagnet, {"accelerator.voltage=0.46 V"}); }),
             Catch::Contains("accelerator.clock") && Catch::Contains("this voltage allows"));
  CHECK(error_of([] { config::load_config(kMagnet, {"accelerator.voltage=1.05 V", "accelerator.clock=1760 MHz"}); }).empty());
}

TEST_CASE("the accelerator refuses formats and ops it does not have", "[accelerator][errors]") {
  CHECK_THAT(error_of([] { simulate(kMagnet, gemm(64, 64, 64, "fp16")); }),
             Catch::Contains("op 'g'") && Catch::Contains("int4 or int8"));
  const std::string chase = "xpusim_trace: 1\nops:\n  - {name: p, kind: pointer_chase, footprint: 1048576}\n";
  CHECK_THAT(error_of([&] { simulate(kMagnet, chase); }), Catch::Contains("GPU microbenchmark"));
  CHECK_THAT(error_of([] { simulate(kMagnet, gemm(64, 64, 64, "int8", ", weight_dtype: int4")); }),
             Catch::Contains("weight_dtype int4") && Catch::Contains("one VS-Quant format"));
  // A GPU energy table on the accelerator.
  const std::string cfg = temp_file("extends: " + kMagnet + "\nenergy:\n  table: " + source_path("configs/energy/tsmc-4n.yaml") + "\n");
  CHECK_THAT(error_of([&] { config::load_config(cfg); }), Catch::Contains("energy.table"));
}

TEST_CASE("attention maps as QK^T, softmax on the SFUs, and PV", "[accelerator]") {
  const std::string t =
      "xpusim_trace: 1\nops:\n  - {name: a, kind: attention, heads: 12, seq_q: 384, head_dim: 64, dtype: int4}\n";
  const YAML::Node r = simulate(kMagnet, t);
  const YAML::Node op = r["ops"][0];
  REQUIRE(op["mapping"].size() == 2);
  CHECK(op["mapping"][0]["gemm"].as<std::string>() == "QK^T");
  CHECK(op["mapping"][1]["gemm"].as<std::string>() == "PV");
  CHECK(d(op["flops"]) == Approx(2.0 * 2 * 12 * 384.0 * 384 * 64));
  CHECK(d(op["utilisation"]["simt"]) > 0);  // the special-function units ran the softmax
  CHECK(d(op["energy"]["actions"]["sfu.op"]) > 0);
}
