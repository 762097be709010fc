#include "sim/trace/op_fields.h"

#include <sstream>
#include <vector>

namespace xpusim::trace {
namespace {

// A field's value as text, each type its own way (doubles exactly).
struct Writer {
  std::ostringstream& os;
  void value(const std::string& x) { os << '"' << x << '"'; }
  void value(bool x) { os << (x ? "true" : "false"); }
  void value(int x) { os << x; }
  void value(int64_t x) { os << x; }
  void value(double x) { os << x; }
  void value(OpKind x) { os << op_kind_name(x); }
  void value(Dtype x) { os << dtype_name(x); }
  void value(const SourceLoc& x) { os << x.str(); }
  template <class T>
  void value(const std::vector<T>& xs) {
    os << '[';
    for (size_t i = 0; i < xs.size(); ++i) os << (i ? "," : "") << xs[i];
    os << ']';
  }
  template <class T>
  void operator()(const char* name, const T& field, FieldRole role) {
    if (role != FieldRole::work) return;
    os << name << '=';
    value(field);
    os << ' ';
  }
};

}  // namespace

std::string work_key(const Op& op) {
  std::ostringstream os;
  os.precision(17);
  visit_fields(op, Writer{os});
  return os.str();
}

}  // namespace xpusim::trace
