#include "sim/trace/trace_fields.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "sim/config/config_loader.h"
#include "sim/config/limits.h"
#include "sim/config/units.h"

namespace xpusim::trace::detail {

// `switching`: random (1), zeros (0), or a number between: the operands' bit toggling relative
// to random data. Returns an empty optional for text that is none of these.
std::optional<double> parse_switching(const std::string& s) {
  if (s == "random") return 1.0;
  if (s == "zeros") return 0.0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0' || !(v >= 0 && v <= 1)) return std::nullopt;
  return v;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

[[noreturn]] void fail(const SourceLoc& at, const std::string& key, const std::string& msg) {
  throw UserError(at.str() + ": " + (key.empty() ? "" : "key '" + key + "': ") + msg);
}

// A quoted scalar ("64") is a string in YAML and in JSON, whatever it spells.
// (Text that is no number at all gets the caller's "is not a number" instead.)
void refuse_quoted(const Ctx& cx, const YAML::Node& n, const std::string& key, const char* what) {
  if (n.Tag() != "!") return;
  const std::string& s = n.Scalar();
  char* end = nullptr;
  (void)std::strtod(s.c_str(), &end);
  if (!s.empty() && *end == '\0')
    fail(cx.at(n), key, std::string("expected ") + what + ", not the string \"" + s + "\" (write it without quotes)");
}

int64_t get_int(const Ctx& cx, const YAML::Node& n, const std::string& key, int64_t lo, int64_t hi) {
  if (!n.IsScalar()) fail(cx.at(n), key, "expected a whole number");
  refuse_quoted(cx, n, key, "a whole number");
  const std::string s = n.Scalar();
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0') fail(cx.at(n), key, "'" + s + "' is not a whole number");
  if (errno == ERANGE || v < lo || v > hi)
    fail(cx.at(n), key, "value " + s + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

// A time with its unit, from 0 to `most_s` (`most_text` in the message; `example` when not a scalar).
double get_time(const Ctx& cx, const YAML::Node& n, const std::string& key, double most_s, const std::string& most_text,
                const std::string& example) {
  if (!n.IsScalar()) fail(cx.at(n), key, "expected a time, e.g. " + example);
  double v = 0;
  try {
    v = units::parse(n.Scalar(), units::Dim::Time).value;
  } catch (const std::invalid_argument& e) {
    fail(cx.at(n), key, e.what());
  }
  if (!(v >= 0 && v <= most_s)) fail(cx.at(n), key, "must be between 0 s and " + most_text);
  return v;
}

double get_double(const Ctx& cx, const YAML::Node& n, const std::string& key, double lo, double hi) {
  if (!n.IsScalar()) fail(cx.at(n), key, "expected a number");
  refuse_quoted(cx, n, key, "a number");
  const std::string s = n.Scalar();
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || *end != '\0' || !std::isfinite(v)) fail(cx.at(n), key, "'" + s + "' is not a number");
  if (v < lo || v > hi) fail(cx.at(n), key, "value " + s + " is out of range");
  return v;
}

bool get_bool(const Ctx& cx, const YAML::Node& n, const std::string& key) {
  if (n.IsScalar() && n.Scalar() == "true") return true;
  if (n.IsScalar() && n.Scalar() == "false") return false;
  fail(cx.at(n), key, "expected true or false");
}

Dtype get_dtype(const Ctx& cx, const YAML::Node& n, const std::string& key) {
  if (!n.IsScalar()) fail(cx.at(n), key, "expected a number format");
  const auto d = parse_dtype(n.Scalar());
  if (!d) fail(cx.at(n), key, "unknown number format '" + n.Scalar() + "'; one of " + dtype_choices());
  return *d;
}

// Weight-only formats: any number format, or a block-scaled one. Block scales: OCP MXFP4 has an
// E8M0 scale per 32 E2M1 elements (4.25 bits per element; ../shared/reference/formats.md), NVFP4
// an E4M3 scale per 16 (4.5 bits; NVIDIA Blackwell architecture), OCP MXFP8 an E8M0 scale per
// 32 E4M3 elements (8.25 bits). Plain int4 weights get the fp16 scale per group of 128 that GPTQ
// and AWQ checkpoints use unless weight_group says.
// Sets `f` as o's weight format; returns what is wrong with it, or "". `group` (< 0: the
// format's default) applies to formats without a fixed block: the caller refuses it for the MX
// formats and nvfp4, where it can say which key.
bool fixed_block(const std::string& f) { return f == "mxfp4" || f == "nvfp4" || f == "mxfp8"; }

std::string set_weight_format(Op& o, const std::string& f, int64_t group) {
  if (fixed_block(f)) {
    o.weight_dtype = f == "mxfp8" ? Dtype::fp8_e4m3 : Dtype::fp4;
    o.weight_group = f == "nvfp4" ? 16 : 32;
    o.weight_scale_bits = 8;
  } else {
    const auto d = parse_dtype(f);
    if (!d) return "unknown number format '" + f + "'; one of " + dtype_choices() + ", mxfp8, mxfp4, nvfp4";
    o.weight_dtype = *d;
    o.weight_group = group >= 0 ? group : (*d == Dtype::int4 ? 128 : 0);
    o.weight_scale_bits = 16;
  }
  if (dtype_bits(o.weight_dtype) > dtype_bits(o.dtype))
    return "weights in " + f + " are wider than the op's dtype (" + dtype_name(o.dtype) +
           "); weight-only quantisation stores them narrower than the math format";
  o.weight_format = f;
  if (o.weight_dtype == o.dtype && o.weight_group == 0) o.weight_format.clear();  // B stored as dtype: nothing special
  return "";
}

void parse_weight_format(const Ctx& cx, const YAML::Node& n, const std::string& path, Op& o) {
  const YAML::Node wd = n["weight_dtype"];
  if (!wd.IsScalar()) fail(cx.at(wd), path + ".weight_dtype", "expected a number format");
  int64_t group = -1;
  if (const YAML::Node g = n["weight_group"]) {
    if (fixed_block(wd.Scalar())) fail(cx.at(g), path + ".weight_group", wd.Scalar() + " fixes its block size");
    group = get_int(cx, g, path + ".weight_group", 0, kMaxDim);
  }
  const std::string problem = set_weight_format(o, wd.Scalar(), group);
  if (!problem.empty()) fail(cx.at(wd), path + ".weight_dtype", problem);
}

// One of `choices`, or an error listing them with the closest as a hint.
std::string get_choice(const Ctx& cx, const YAML::Node& n, const std::string& key, const std::vector<std::string>& choices) {
  if (!n.IsScalar() || std::find(choices.begin(), choices.end(), n.Scalar()) == choices.end()) {
    const std::string hint = n.IsScalar() ? config::closest_match(n.Scalar(), choices) : "";
    fail(cx.at(n), key, "expected one of " + join(choices) + (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  }
  return n.Scalar();
}

int64_t checked_product(const Ctx& cx, const YAML::Node& at, const std::string& key, std::initializer_list<int64_t> v) {
  int64_t p = 1;
  for (int64_t x : v)
    if (__builtin_mul_overflow(p, x, &p) || p > (int64_t{1} << 50))
      fail(cx.at(at), key, "sizes multiply to more than 2^50 elements");
  return p;
}

// `devices`: a list of GPU indices, "all", or a range "a-b".
void parse_devices(const Ctx& cx, const YAML::Node& n, const std::string& key, Op& o) {
  o.devices.clear();
  o.all_devices = false;
  if (n.IsScalar() && n.Scalar() == "all") {
    o.all_devices = true;
    return;
  }
  if (n.IsScalar()) {
    long long a = -1, b = -1;
    char tail = 0;
    if (std::sscanf(n.Scalar().c_str(), "%lld-%lld%c", &a, &b, &tail) != 2 || a < 0 || b < a || b > kMaxDevice)
      fail(cx.at(n), key, "'" + n.Scalar() + "': expected a list of device indices, a range such as \"0-7\", or all");
    for (long long d = a; d <= b; ++d) o.devices.push_back(static_cast<int>(d));
    return;
  }
  if (!n.IsSequence() || n.size() == 0) fail(cx.at(n), key, "expected a non-empty list of device indices, a range such as \"0-7\", or all");
  for (size_t i = 0; i < n.size(); ++i) {
    const int d = static_cast<int>(get_int(cx, n[i], key + "[" + std::to_string(i) + "]", 0, kMaxDevice));
    if (std::find(o.devices.begin(), o.devices.end(), d) != o.devices.end())
      fail(cx.at(n[i]), key, "device " + std::to_string(d) + " is listed twice");
    o.devices.push_back(d);
  }
}

int64_t saturating_mul(int64_t a, int64_t b) { return b != 0 && a > kSaturatedCount / b ? kSaturatedCount : a * b; }

int64_t expanded_count(const YAML::Node& ops, int64_t cap, bool& partial) {
  int64_t total = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const YAML::Node e = ops[i];
    int64_t here = 1;
    if (e.IsMap() && e["repeat"] && e["repeat"].IsScalar() && e["repeat"].Tag() != "!" && e["ops"] && e["ops"].IsSequence()) {
      const std::string text = e["repeat"].Scalar();
      char* end = nullptr;
      errno = 0;
      const long long c = std::strtoll(text.c_str(), &end, 10);
      if (!text.empty() && *end == '\0' && errno == 0 && c >= 1 && c <= kMaxRepeat)
        here = saturating_mul(c, expanded_count(e["ops"], cap, partial));
    }
    total = here > kSaturatedCount - total ? kSaturatedCount : total + here;
    if (total > cap) {
      partial = partial || i + 1 < ops.size();  // entries left uncounted
      return total;
    }
  }
  return total;
}

}  // namespace xpusim::trace::detail
