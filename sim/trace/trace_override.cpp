#include <optional>
#include <string>

#include "sim/config/config_loader.h"
#include "sim/trace/trace.h"
#include "sim/trace/trace_fields.h"

namespace xpusim::trace {

using detail::kSwitchingHelp;
using detail::parse_switching;
using detail::set_weight_format;

static void apply_one_override(Trace& t, const std::string& key, const std::string& value);

void apply_override(Trace& t, const std::string& key, const std::string& value) {
  apply_one_override(t, key, value);
  t.overrides.push_back(key + "=" + value);
}

static void apply_one_override(Trace& t, const std::string& key, const std::string& value) {
  const std::string where = "trace override '" + key + "=" + value + "'";
  if (key == "dtype") {
    const auto d = parse_dtype(value);
    if (!d) throw UserError(where + ": unknown number format; one of " + dtype_choices());
    for (Op& o : t.ops)
      if (o.kind == OpKind::gemm || o.kind == OpKind::conv2d || o.kind == OpKind::attention) {
        o.dtype = *d;
        o.out_dtype = *d;  // as a trace that gives only dtype
        if (o.weight_only()) {
          const std::string problem = set_weight_format(o, o.weight_format, -1);
          if (!problem.empty()) throw UserError(where + ": op '" + o.name + "': " + problem);
        }
      }
  } else if (key == "weight_dtype") {
    for (Op& o : t.ops)
      if (o.kind == OpKind::gemm || o.kind == OpKind::conv2d) {
        const std::string problem = set_weight_format(o, value, -1);
        if (!problem.empty()) throw UserError(where + ": op '" + o.name + "': " + problem);
      }
  } else if (key == "sparsity") {
    if (value != "2:4" && value != "none") throw UserError(where + ": expected \"2:4\" or none");
    for (Op& o : t.ops)
      if (o.kind == OpKind::gemm) o.sparse_2_4 = value == "2:4";
  } else if (key == "switching") {
    const std::optional<double> v = parse_switching(value);
    if (!v) throw UserError(where + ": " + kSwitchingHelp);
    for (Op& o : t.ops) o.switching = *v;
  } else {
    const std::string hint = config::closest_match(key, {"dtype", "weight_dtype", "sparsity", "switching"});
    throw UserError(where + ": unknown trace key; one of dtype, weight_dtype, sparsity, switching" +
                    (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
  }
}

}  // namespace xpusim::trace
