// The unit parser ("1.98 GHz", "3.35 TB/s"): the first byte picks the dimension, the rest is the
// text. A value it accepts must be finite and survive format() and parse() again within the
// four significant digits format() prints (sizes read back as estimates: format() rounds them).
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "sim/config/units.h"
#include "tests/fuzz/fuzz_support.h"

using xpusim::units::Dim;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const Dim dim = static_cast<Dim>(data[0] % (static_cast<int>(Dim::Area) + 1));
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  xpusim::units::Quantity q;
  try {
    q = xpusim::units::parse(text, dim);
  } catch (const std::invalid_argument&) {
    return 0;  // refused with a message: fine
  }
  xpusim::fuzz::require(std::isfinite(q.value), "parse('" + text + "') accepted a value that is not finite");
  xpusim::fuzz::require(q.dim == dim, "parse('" + text + "') returned another dimension");
  const std::string shown = xpusim::units::format(q.value, dim);
  xpusim::units::Quantity back;
  try {
    // format() is display text of four significant digits: a size it rounds (1234567 B shows as
    // 1.177 MiB) is read back as the estimate it is, not as a whole byte count.
    back = xpusim::units::parse(shown, dim, /*whole_bytes=*/false);
  } catch (const std::invalid_argument& e) {
    xpusim::fuzz::require(false, "format() wrote '" + shown + "', which parse() refuses: " + e.what());
  }
  const double tol = 5e-4 * std::fabs(q.value) + 1e-300;
  xpusim::fuzz::require(std::fabs(back.value - q.value) <= tol,
                        "'" + text + "' formats as '" + shown + "', which parses to another value");
  return 0;
}
