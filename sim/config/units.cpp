#include "sim/config/units.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace xpusim::units {
namespace {

struct UnitDef {
  const char* name;
  Dim dim;
  double scale;  // multiply to get SI base units
};

// Decimal prefixes for rates and energies as datasheets use them (1 TB/s = 1e12 B/s);
// binary prefixes only where written explicitly (KiB, MiB, GiB).
constexpr double kKi = 1024.0, kMi = kKi * 1024.0, kGi = kMi * 1024.0, kTi = kGi * 1024.0;
const UnitDef kUnits[] = {
    {"THz", Dim::Frequency, 1e12}, {"GHz", Dim::Frequency, 1e9}, {"MHz", Dim::Frequency, 1e6},
    {"kHz", Dim::Frequency, 1e3},  {"Hz", Dim::Frequency, 1.0},
    {"GT/s", Dim::Frequency, 1e9}, {"MT/s", Dim::Frequency, 1e6},  // transfers per pin

    {"TiB", Dim::Size, kTi}, {"GiB", Dim::Size, kGi}, {"MiB", Dim::Size, kMi},
    {"KiB", Dim::Size, kKi}, {"TB", Dim::Size, 1e12}, {"GB", Dim::Size, 1e9},
    {"MB", Dim::Size, 1e6},  {"KB", Dim::Size, 1e3},  {"kB", Dim::Size, 1e3},
    {"B", Dim::Size, 1.0},

    {"TB/s", Dim::Bandwidth, 1e12},  {"GB/s", Dim::Bandwidth, 1e9},
    {"MB/s", Dim::Bandwidth, 1e6},   {"KB/s", Dim::Bandwidth, 1e3},
    {"kB/s", Dim::Bandwidth, 1e3},   {"B/s", Dim::Bandwidth, 1.0},
    {"TiB/s", Dim::Bandwidth, kTi},  {"GiB/s", Dim::Bandwidth, kGi},
    {"MiB/s", Dim::Bandwidth, kMi},  {"Tb/s", Dim::Bandwidth, 1e12 / 8},
    {"Gb/s", Dim::Bandwidth, 1e9 / 8}, {"Mb/s", Dim::Bandwidth, 1e6 / 8},

    {"B/cycle", Dim::BytesPerCycle, 1.0}, {"B/clk", Dim::BytesPerCycle, 1.0},

    {"s", Dim::Time, 1.0}, {"ms", Dim::Time, 1e-3}, {"us", Dim::Time, 1e-6},
    {"ns", Dim::Time, 1e-9}, {"ps", Dim::Time, 1e-12},

    {"cycles", Dim::Cycles, 1.0}, {"cycle", Dim::Cycles, 1.0}, {"clk", Dim::Cycles, 1.0},

    {"J", Dim::Energy, 1.0}, {"mJ", Dim::Energy, 1e-3}, {"uJ", Dim::Energy, 1e-6},
    {"nJ", Dim::Energy, 1e-9}, {"pJ", Dim::Energy, 1e-12}, {"fJ", Dim::Energy, 1e-15},

    {"pJ/bit", Dim::EnergyPerBit, 1e-12}, {"fJ/bit", Dim::EnergyPerBit, 1e-15},
    {"pJ/B", Dim::EnergyPerBit, 1e-12 / 8},

    {"kW", Dim::Power, 1e3}, {"W", Dim::Power, 1.0}, {"mW", Dim::Power, 1e-3},
    {"uW", Dim::Power, 1e-6},

    {"V", Dim::Voltage, 1.0}, {"mV", Dim::Voltage, 1e-3},

    {"mm^2", Dim::Area, 1e-6}, {"um^2", Dim::Area, 1e-12},
};

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
  return out;
}

}  // namespace

const char* dim_name(Dim d) {
  switch (d) {
    case Dim::None: return "number";
    case Dim::Frequency: return "frequency";
    case Dim::Size: return "size";
    case Dim::Bandwidth: return "bandwidth";
    case Dim::BytesPerCycle: return "bytes per cycle";
    case Dim::Time: return "time";
    case Dim::Cycles: return "cycles";
    case Dim::Energy: return "energy";
    case Dim::EnergyPerBit: return "energy per bit";
    case Dim::Power: return "power";
    case Dim::Voltage: return "voltage";
    case Dim::Area: return "area";
  }
  return "?";
}

std::vector<std::string> unit_names(Dim d) {
  std::vector<std::string> out;
  for (const auto& u : kUnits)
    if (u.dim == d) out.emplace_back(u.name);
  return out;
}

std::string example(Dim d) {
  switch (d) {
    case Dim::None: return "4";
    case Dim::Frequency: return "1.83 GHz";
    case Dim::Size: return "50 MiB";
    case Dim::Bandwidth: return "3.35 TB/s";
    case Dim::BytesPerCycle: return "64 B/cycle";
    case Dim::Time: return "2 us";
    case Dim::Cycles: return "200 cycles";
    case Dim::Energy: return "1.5 pJ";
    case Dim::EnergyPerBit: return "3.9 pJ/bit";
    case Dim::Power: return "700 W";
    case Dim::Voltage: return "0.67 V";
    case Dim::Area: return "0.153 mm^2";
  }
  return "?";
}

Quantity parse(const std::string& raw, Dim expected, bool whole_bytes) {
  const std::string text = trim(raw);
  if (text.empty()) throw std::invalid_argument("empty value where a " + std::string(dim_name(expected)) + " is due");
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  if (end == begin)
    throw std::invalid_argument("'" + text + "' is not a number" +
                                (expected == Dim::None ? "" : " with a unit (e.g. '" + example(expected) + "')"));
  if (!std::isfinite(number)) throw std::invalid_argument("'" + text + "' is not a finite number");
  const std::string unit = trim(std::string(end));
  if (expected == Dim::None) {
    if (!unit.empty()) throw std::invalid_argument("'" + text + "' must be a plain number, without a unit");
    return {number, Dim::None};
  }
  if (unit.empty())
    throw std::invalid_argument("'" + text + "' needs a unit of " + dim_name(expected) + " (e.g. '" +
                                example(expected) + "'; one of " + join(unit_names(expected)) + ")");
  for (const auto& u : kUnits) {
    if (unit == u.name) {
      if (u.dim != expected)
        throw std::invalid_argument("'" + text + "' is a " + dim_name(u.dim) + ", but a " + dim_name(expected) +
                                    " is due (e.g. '" + example(expected) + "')");
      if (!std::isfinite(number * u.scale))
        throw std::invalid_argument("'" + text + "' is out of range (beyond the largest number a double holds)");
      // A size counts bytes: 1.5 KiB is 1536 of them, 1.1 KiB no whole number.
      const double v = number * u.scale;
      if (whole_bytes && u.dim == Dim::Size && v < 9e15 && std::fabs(v - std::round(v)) > 1e-9 * std::max(1.0, std::fabs(v))) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.10g", v);
        throw std::invalid_argument("'" + text + "' is " + buf + " bytes: a size must be a whole number of bytes");
      }
      return {v, u.dim};
    }
  }
  throw std::invalid_argument("unknown unit '" + unit + "' in '" + text + "'; a " + dim_name(expected) +
                              " takes one of " + join(unit_names(expected)));
}

std::string format(double v, Dim d) {
  struct Step { double scale; const char* name; };
  auto pick = [&](std::initializer_list<Step> steps) {
    const Step* chosen = nullptr;
    for (const auto& s : steps) {
      chosen = &s;
      if (std::fabs(v) >= s.scale) break;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4g %s", v / chosen->scale, chosen->name);
    return std::string(buf);
  };
  switch (d) {
    case Dim::None: { char b[32]; std::snprintf(b, sizeof b, "%.10g", v); return b; }
    case Dim::Frequency: return pick({{1e9, "GHz"}, {1e6, "MHz"}, {1e3, "kHz"}, {1, "Hz"}});
    case Dim::Size: return pick({{kTi, "TiB"}, {kGi, "GiB"}, {kMi, "MiB"}, {kKi, "KiB"}, {1, "B"}});
    case Dim::Bandwidth: return pick({{1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1, "B/s"}});
    case Dim::BytesPerCycle: return pick({{1, "B/cycle"}});
    case Dim::Time: return pick({{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}, {1e-12, "ps"}});
    case Dim::Cycles: return pick({{1, "cycles"}});
    case Dim::Energy: return pick({{1, "J"}, {1e-3, "mJ"}, {1e-6, "uJ"}, {1e-9, "nJ"}, {1e-12, "pJ"}, {1e-15, "fJ"}});
    case Dim::EnergyPerBit: return pick({{1e-12, "pJ/bit"}, {1e-15, "fJ/bit"}});
    case Dim::Power: return pick({{1e3, "kW"}, {1, "W"}, {1e-3, "mW"}, {1e-6, "uW"}});
    case Dim::Voltage: return pick({{1, "V"}, {1e-3, "mV"}});
    case Dim::Area: return pick({{1e-6, "mm^2"}, {1e-12, "um^2"}});
  }
  return "?";
}

}  // namespace xpusim::units
