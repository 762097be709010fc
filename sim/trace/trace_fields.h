#pragma once
// What the trace readers share (trace.cpp and the override in trace_override.cpp): the readers of
// one field of a YAML or JSON Lines op, each throwing UserError at the field's file, line and
// key, and the check that a trace's dependencies can finish. Internal to sim/trace.
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "sim/config/yaml_util.h"
#include "sim/trace/trace.h"

namespace xpusim::trace::detail {

constexpr int64_t kMaxDim = int64_t{1} << 40;  // no single dimension beyond 2^40
constexpr int64_t kMaxDevice = 131071;  // 128 Ki GPUs, system.domains x gpus_per_domain at most
constexpr int64_t kMaxRepeat = int64_t{1} << 20;        // a repeat block's count
constexpr int64_t kSaturatedCount = int64_t{1} << 62;   // where expanded_count stops counting
constexpr const char kSwitchingHelp[] = "expected random, zeros or a number from 0 (zeros) to 1 (random data)";

// Where a field is: the file, and for JSON Lines the record's line in it.
struct Ctx {
  std::string file;
  int line_offset = 0;  // JSON Lines: the line of this record in the file, minus one
  SourceLoc at(const YAML::Node& n) const {
    SourceLoc l = yaml_loc(file, n);
    if (l.line > 0) l.line += line_offset;
    return l;
  }
};

[[noreturn]] void fail(const SourceLoc& at, const std::string& key, const std::string& msg);
std::string join(const std::vector<std::string>& v);  // "a, b, c"

// `switching`: random (1), zeros (0), or a number between; empty for text that is none of these.
std::optional<double> parse_switching(const std::string& s);

// A quoted scalar ("64") is refused where a number is expected, whatever it spells.
void refuse_quoted(const Ctx& cx, const YAML::Node& n, const std::string& key, const char* what);
int64_t get_int(const Ctx& cx, const YAML::Node& n, const std::string& key, int64_t lo, int64_t hi);
// A time with its unit, from 0 to `most_s` (`most_text` in the message; `example` when not a scalar).
double get_time(const Ctx& cx, const YAML::Node& n, const std::string& key, double most_s, const std::string& most_text,
                const std::string& example);
double get_double(const Ctx& cx, const YAML::Node& n, const std::string& key, double lo, double hi);

// a * b for non-negative counts, kSaturatedCount where that is passed.
int64_t saturating_mul(int64_t a, int64_t b);
// The ops a list of trace entries expands to, counting each entry as one op or, for a repeat
// block whose count and ops read as the expansion will read them (a plain whole number from 1 to
// kMaxRepeat, a list), its count times its ops' (entries that do not read are counted as one and
// refused when they are expanded). Saturates at kSaturatedCount. Stops once the count passes
// `cap`, setting `partial` where entries were left uncounted: aliases let a small file name a
// tree of 2^60 entries, which must not be walked either.
int64_t expanded_count(const YAML::Node& ops, int64_t cap, bool& partial);
bool get_bool(const Ctx& cx, const YAML::Node& n, const std::string& key);
Dtype get_dtype(const Ctx& cx, const YAML::Node& n, const std::string& key);
// One of `choices`, or an error listing them with the closest as a hint.
std::string get_choice(const Ctx& cx, const YAML::Node& n, const std::string& key, const std::vector<std::string>& choices);
// The product of `v`, refused beyond 2^50 elements.
int64_t checked_product(const Ctx& cx, const YAML::Node& at, const std::string& key, std::initializer_list<int64_t> v);
// `devices`: a list of GPU indices, "all", or a range "a-b".
void parse_devices(const Ctx& cx, const YAML::Node& n, const std::string& key, Op& o);

// Weight-only formats. A format with a fixed block (mxfp4, nvfp4, mxfp8) refuses weight_group.
bool fixed_block(const std::string& f);
// Sets `f` as o's weight format; returns what is wrong with it, or "". `group` < 0: the format's default.
std::string set_weight_format(Op& o, const std::string& f, int64_t group);
// An op's weight_dtype and weight_group keys under `path`.
void parse_weight_format(const Ctx& cx, const YAML::Node& n, const std::string& path, Op& o);

// Refuses a trace whose ops wait for one another in a ring (deps, and on each GPU the stream
// order), naming the ops of the ring.
void check_cycles(const Trace& t);

}  // namespace xpusim::trace::detail
