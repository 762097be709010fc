#include "sim/report/json_writer.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>

namespace xpusim::report {

// Strings go through nlohmann-json (quotes, backslashes and control characters escaped as RFC
// 8259 asks; text that is not UTF-8, which the loaders refuse, is replaced rather than written
// raw). Numbers keep this writer's ten significant digits, so reports stay byte-stable.
std::string JsonWriter::escape(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string JsonWriter::number(double d) {
  if (!std::isfinite(d)) return "null";
  if (d == 0) return "0";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.10g", d);
  return buf;
}

void JsonWriter::newline() {
  out_ += '\n';
  out_.append(2 * first_.size(), ' ');
}

void JsonWriter::separator() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
}

JsonWriter& JsonWriter::begin_object() {
  separator();
  out_ += '{';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_object() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_ += '}';
  if (first_.empty()) out_ += '\n';
  return *this;
}
JsonWriter& JsonWriter::begin_array() {
  separator();
  out_ += '[';
  first_.push_back(true);
  return *this;
}
JsonWriter& JsonWriter::end_array() {
  const bool empty = first_.back();
  first_.pop_back();
  if (!empty) newline();
  out_ += ']';
  return *this;
}
JsonWriter& JsonWriter::key(const std::string& k) {
  separator();
  out_ += escape(k) + ": ";
  after_key_ = true;
  return *this;
}
JsonWriter& JsonWriter::value(const std::string& s) {
  separator();
  out_ += escape(s);
  return *this;
}
JsonWriter& JsonWriter::value(double d) {
  separator();
  out_ += number(d);
  return *this;
}
JsonWriter& JsonWriter::value(long long i) {
  separator();
  out_ += std::to_string(i);
  return *this;
}
JsonWriter& JsonWriter::value(bool b) {
  separator();
  out_ += b ? "true" : "false";
  return *this;
}

}  // namespace xpusim::report
