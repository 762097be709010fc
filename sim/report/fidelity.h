#pragma once
// The report's account of the fast fidelity: what each op reused or extrapolated and the run's
// totals (docs/performance.md).
#include "sim/engine/result.h"
#include "sim/report/json_writer.h"
#include "sim/report/report.h"

namespace xpusim::report {

// Fills rep.fidelity and each GPU op's reuse and extrapolation from the simulation.
void set_fidelity(Report& rep, const trace::Trace& t, const engine::SimResult& r);
// The "fidelity" object of report.json, and an op's own (only where fast fidelity applied).
void write_fidelity(JsonWriter& w, const FidelityInfo& f);
void write_op_fidelity(JsonWriter& w, const Report& rep, const OpReport& o);

}  // namespace xpusim::report
