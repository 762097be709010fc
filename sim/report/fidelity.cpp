#include "sim/report/fidelity.h"

#include <sstream>

namespace xpusim::report {

void set_fidelity(Report& rep, const trace::Trace& t, const engine::SimResult& r) {
  FidelityInfo& f = rep.fidelity;
  f.mode = engine::fidelity_name(r.fidelity);
  f.tolerance = r.tolerance;
  for (size_t i = 0; i < rep.ops.size() && i < r.ops.size(); ++i) {
    const engine::OpResult& res = r.ops[i];
    if (res.collective || !res.lowered.program) continue;
    OpReport& o = rep.ops[i];
    o.reused_from = res.run.reused_from;
    o.reused_cached = res.run.reused_cached;
    o.extrapolated_ctas = static_cast<long long>(res.run.extrapolated_ctas);
    o.extrapolated_steps = static_cast<long long>(res.run.skipped_steps);
    o.extrapolated_s = res.run.extrapolated_s;
    if (o.extrapolated_ctas > 0 || o.extrapolated_steps > 0) ++f.extrapolated_ops;
    f.ctas += o.ctas;
    if (o.reused_from >= 0 || o.reused_cached) ++f.reused_ops;
    if (o.reused_cached) ++f.cached_ops;
    f.extrapolated_ctas += o.extrapolated_ctas;
    f.extrapolated_steps += o.extrapolated_steps;
  }
  if (f.mode == "exact") {
    f.note = "every CTA of every kernel simulated (--fidelity exact)";
    return;
  }
  std::ostringstream os;
  os << "fast fidelity (tolerance " << 100 * f.tolerance << "%): ";
  if (f.reused_ops == 0 && f.extrapolated_ops == 0) {
    os << "every kernel simulated in full (none repeated another, no steady waves to skip)";
  } else {
    os << f.reused_ops << " of " << t.ops.size() << " ops reused an identical earlier kernel's result";
    if (f.cached_ops > 0) os << " (" << f.cached_ops << " of them from the kernel cache)";
    if (f.ctas > 0)
      os << "; " << f.extrapolated_ctas << " of " << f.ctas << " CTAs ("
         << static_cast<int>(100.0 * static_cast<double>(f.extrapolated_ctas) / static_cast<double>(f.ctas) + 0.5)
         << "%) extrapolated from steady waves; " << f.extrapolated_steps
         << " steady CTA steps left out by the CTAs simulated; " << f.extrapolated_ops
         << " ops extrapolated in all (waves or steps)";
  }
  f.note = os.str();
}

void write_fidelity(JsonWriter& w, const FidelityInfo& f) {
  w.key("fidelity").begin_object();
  w.field("mode", f.mode);
  if (f.mode != "exact") {
    w.field("tolerance", f.tolerance).field("reused_ops", static_cast<long long>(f.reused_ops));
    if (f.cached_ops > 0) w.field("cached_ops", static_cast<long long>(f.cached_ops));
    w.field("extrapolated_ctas", f.extrapolated_ctas).field("ctas", f.ctas);
    w.field("extrapolated_ops", static_cast<long long>(f.extrapolated_ops));
  }
  w.field("note", f.note);
  w.end_object();
}

void write_op_fidelity(JsonWriter& w, const Report& rep, const OpReport& o) {
  if (o.reused_from < 0 && !o.reused_cached && o.extrapolated_ctas == 0 && o.extrapolated_steps == 0) return;
  w.key("fidelity").begin_object();
  if (o.reused_cached) {
    w.field("reused_from_cache", true);
  } else if (o.reused_from >= 0) {
    w.field("reused_from", rep.ops[static_cast<size_t>(o.reused_from)].name);
    w.field("reused_from_index", static_cast<long long>(o.reused_from));
  } else {
    w.field("extrapolated_ctas", o.extrapolated_ctas).field("extrapolated_steps", o.extrapolated_steps);
    w.field("extrapolated_s", o.extrapolated_s);
  }
  w.end_object();
}

}  // namespace xpusim::report
