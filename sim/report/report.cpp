#include "sim/report/report.h"

#include <algorithm>
#include <filesystem>
#include <tuple>
#include <utility>

#include "sim/config/energy_loader.h"
#include "sim/error.h"
#include "sim/report/report_detail.h"
#include "sim/version.h"

namespace xpusim::report {

std::string overrides_text(const Report& rep) {
  std::string s;
  for (const std::string& o : rep.config_overrides) s += (s.empty() ? "" : " ") + std::string("--set ") + o;
  for (const std::string& o : rep.trace_overrides) s += (s.empty() ? "" : " ") + std::string("--trace-set ") + o;
  return s;
}

namespace detail {

// The energy table's path relative to the config's folder, as a config names it: the same bytes
// from any working directory and any checkout.
std::string table_as_named(const config::LoadedConfig& cfg) {
  const std::filesystem::path dir = std::filesystem::absolute(cfg.file).parent_path().lexically_normal();
  return std::filesystem::path(config::energy_config(cfg.chip).table).lexically_normal().lexically_relative(dir).string();
}

// Report::time_breakdown: the ops' spans swept in time order, every GPU's ops together; at each
// instant the first of kernels, collectives and host ops that is active takes it: a collective
// under a kernel, or host work under either, is hidden, and only what is exposed counts.
Report::TimeBreakdown time_breakdown(const trace::Trace& t, const std::vector<OpReport>& ops, double end_s) {
  enum Cat { kKernel, kCollective, kHost, kCats };
  std::vector<std::tuple<double, int, Cat>> edges;  // (time, +1 start / -1 end, category)
  for (size_t i = 0; i < ops.size() && i < t.ops.size(); ++i) {
    const Metrics& m = ops[i].m;
    if (!(m.end_s > m.start_s)) continue;
    const Cat c = t.ops[i].kind == trace::OpKind::host ? kHost : t.ops[i].is_collective() ? kCollective : kKernel;
    edges.emplace_back(std::max(0.0, m.start_s), +1, c);
    edges.emplace_back(std::min(end_s, m.end_s), -1, c);
  }
  std::sort(edges.begin(), edges.end());
  double sums[kCats] = {0, 0, 0};
  int active[kCats] = {0, 0, 0};
  double covered = 0, last = 0;
  for (const auto& [time, delta, cat] : edges) {
    if (time > last) {
      for (int c = 0; c < kCats; ++c)
        if (active[c] > 0) {
          sums[c] += time - last;
          covered += time - last;
          break;
        }
      last = time;
    }
    active[cat] += delta;
  }
  Report::TimeBreakdown b;
  b.host_s = sums[kHost];
  b.collectives_s = sums[kCollective];
  b.kernels_s = sums[kKernel];
  b.idle_s = std::max(0.0, end_s - covered);
  return b;
}

OpReport describe_op(const trace::Op& op) {
  OpReport o;
  o.name = op.name;
  o.kind = trace::op_kind_name(op.kind);
  o.dtype = dtype_name(op.dtype);
  o.out_dtype = dtype_name(op.out_dtype);
  o.weight_dtype = op.weight_format;
  o.shape = op.shape_text();
  o.stream = op.stream;
  return o;
}

// What every report starts with: versions and the inputs' names.
Report header(const config::LoadedConfig& cfg, const trace::Trace& t) {
  Report rep;
  rep.version = kVersion;
  rep.config_name = cfg.chip.name;
  rep.config_file = cfg.file;
  rep.trace_name = t.name;
  rep.tokens = t.tokens;
  rep.trace_file = t.file;
  rep.config_overrides = cfg.overrides;
  rep.trace_overrides = t.overrides;
  return rep;
}

}  // namespace detail

detail::Builder detail::builder_for(const std::string& kind) {
  // Each chip kind's report (report_gpu.cpp, report_accelerator.cpp); a new kind adds a line.
  static const std::pair<const char*, Builder> kBuilders[] = {
      {"gpu", build_gpu},
      {"accelerator", build_accelerator},
  };
  for (const auto& [name, builder] : kBuilders)
    if (kind == name) return builder;
  throw UserError("chip kind '" + kind + "' has no report");
}

Report build(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimResult& r) {
  return detail::builder_for(cfg.chip.kind)(cfg, t, r);
}

}  // namespace xpusim::report
