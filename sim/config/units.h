#pragma once
// Physical quantities with units, as written in configs: "1.98 GHz", "3.35 TB/s", "50 MiB".
// Values are held in SI base units (Hz, B, B/s, s, J, W, V, m^2); cycles are a count.
#include <string>
#include <vector>

namespace xpusim::units {

enum class Dim {
  None,           // a plain number: counts, ratios
  Frequency,      // Hz
  Size,           // bytes
  Bandwidth,      // bytes per second
  BytesPerCycle,  // bytes per clock cycle of the owning clock domain
  Time,           // seconds
  Cycles,         // clock cycles of the owning clock domain
  Energy,         // joules
  EnergyPerBit,   // joules per bit
  Power,          // watts
  Voltage,        // volts
  Area,           // square metres
};

const char* dim_name(Dim d);
// Units accepted for a dimension, for help text and error messages ("GHz, MHz, kHz, Hz").
std::vector<std::string> unit_names(Dim d);
// An example value in the preferred unit, for error messages ("1.5 GHz").
std::string example(Dim d);

struct Quantity {
  double value = 0.0;  // in SI base units
  Dim dim = Dim::None;
};

// Parses "<number> <unit>" (space optional). Throws std::invalid_argument with a message fit
// for the user when the text is not a number, has no unit, or has a unit of another dimension.
// A size must be a whole number of bytes unless `whole_bytes` is false (an estimate rounded
// to a unit, such as a trace's memory_per_gpu in MiB to one decimal).
Quantity parse(const std::string& text, Dim expected, bool whole_bytes = true);

// Renders an SI value in a readable unit of its dimension ("3.35 TB/s", "50 MiB").
std::string format(double value, Dim d);  // value in SI base units

}  // namespace xpusim::units
