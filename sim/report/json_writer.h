#pragma once
// A minimal streaming JSON writer with deterministic number formatting (same input, same bytes).
#include <string>
#include <vector>

namespace xpusim::report {

class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(const std::string& k);
  JsonWriter& value(const std::string& s);
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(double d);
  JsonWriter& value(long long i);
  JsonWriter& value(bool b);
  template <class T>
  JsonWriter& field(const std::string& k, const T& v) { return key(k).value(v); }
  const std::string& str() const { return out_; }

  static std::string escape(const std::string& s);
  static std::string number(double d);

 private:
  void separator();
  void newline();
  std::string out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace xpusim::report
