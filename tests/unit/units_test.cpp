#include <catch2/catch.hpp>

#include "sim/config/units.h"

using namespace xpusim::units;

TEST_CASE("quantities parse into SI units", "[units]") {
  CHECK(parse("1.98 GHz", Dim::Frequency).value == Approx(1.98e9));
  CHECK(parse("3.35 TB/s", Dim::Bandwidth).value == Approx(3.35e12));
  CHECK(parse("50 MiB", Dim::Size).value == Approx(50.0 * 1024 * 1024));
  CHECK(parse("50 MB", Dim::Size).value == Approx(50e6));
  CHECK(parse("110 pJ", Dim::Energy).value == Approx(110e-12));
  CHECK(parse("165ns", Dim::Time).value == Approx(165e-9));
  CHECK(parse("200 cycles", Dim::Cycles).value == Approx(200));
  CHECK(parse("400 Gb/s", Dim::Bandwidth).value == Approx(50e9));
  CHECK(parse("  0.46 V ", Dim::Voltage).value == Approx(0.46));
  CHECK(parse("64 B/cycle", Dim::BytesPerCycle).value == Approx(64));
}

TEST_CASE("unit errors say what is wrong", "[units]") {
  auto msg = [](const std::string& text, Dim d) {
    try {
      parse(text, d);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK_THAT(msg("3.35", Dim::Bandwidth), Catch::Contains("needs a unit of bandwidth"));
  CHECK_THAT(msg("3.35 GHz", Dim::Bandwidth), Catch::Contains("is a frequency, but a bandwidth is due"));
  CHECK_THAT(msg("3.35 furlongs", Dim::Bandwidth), Catch::Contains("unknown unit 'furlongs'"));
  CHECK_THAT(msg("fast", Dim::Bandwidth), Catch::Contains("is not a number"));
  CHECK_THAT(msg("4 KiB", Dim::None), Catch::Contains("plain number"));
  CHECK_THAT(msg("", Dim::Time), Catch::Contains("empty value"));
}

TEST_CASE("formatting picks a readable unit", "[units]") {
  CHECK(format(3.35e12, Dim::Bandwidth) == "3.35 TB/s");
  CHECK(format(50.0 * 1024 * 1024, Dim::Size) == "50 MiB");
  CHECK(format(1.475e-3, Dim::Time) == "1.475 ms");
  CHECK(format(1.83e9, Dim::Frequency) == "1.83 GHz");
}
