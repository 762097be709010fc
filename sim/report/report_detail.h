#pragma once
// Internal to sim/report: an op's or a run's metrics from its counters, their energy, and what
// the JSON, CSV and text writers share. report.cpp builds the report with these (through each
// chip kind's builder); report_json.cpp and report_text.cpp write it.
#include <string>
#include <vector>

#include "models/energy/energy_table.h"
#include "sim/config/chip_config.h"
#include "sim/report/json_writer.h"
#include "sim/report/report.h"

namespace xpusim::report::detail {

// Below this share of time on its busiest unit, an op is waiting rather than saturating
// anything: launch, latency, tail or occupancy bound.
constexpr double kSaturated = 0.5;

// What bound an op: its busiest unit if saturated, else "latency".
const char* classify(const Metrics& m);
// `devices`: GPUs the counters cover; capacities (SMs, slices, channels) are multiplied by it.
Metrics metrics(const OpCounters& c, double start, double end, double flops, double peak_tflops, double min_bytes,
                double resident_capacity, const config::GpuConfig& g, double devices = 1);
void write_metrics(JsonWriter& w, const Metrics& m);
// The energy fields of `m` from a priced breakdown, actions in the order of `kind`'s list.
void set_energy(Metrics& m, const energy::Breakdown& b, const std::string& kind, double instructions);
// The dynamic energy of m's actions on the core supply (energy::on_core_rail): what the
// governor's voltage scales. DRAM and NVLink are off it.
double core_rail_j(const Metrics& m);
// `uncore_w`: power.idle_floor (times GPUs), drawn whatever runs.
void add_energy(Metrics& m, const OpCounters& c, double refreshes, const energy::Table& t, const energy::Scaling& s,
                double static_w, double uncore_w);
std::string fmt(const char* f, double v);
std::string pct(double v);

// What every report starts with: versions and the inputs' names.
Report header(const config::LoadedConfig& cfg, const trace::Trace& t);
// An op's name, kind, formats and shape, as the report lists them.
OpReport describe_op(const trace::Op& op);
// The energy table's path relative to the config's folder, as a config names it.
std::string table_as_named(const config::LoadedConfig& cfg);
// Report::time_breakdown of the ops' spans.
Report::TimeBreakdown time_breakdown(const trace::Trace& t, const std::vector<OpReport>& ops, double end_s);

// Each chip kind's report from its simulation (report_gpu.cpp, report_accelerator.cpp); build()
// takes the config's kind's from builder_for, which throws UserError for a kind with none.
Report build_gpu(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimResult& r);
Report build_accelerator(const config::LoadedConfig& cfg, const trace::Trace& t, const engine::SimResult& r);
using Builder = Report (*)(const config::LoadedConfig&, const trace::Trace&, const engine::SimResult&);
Builder builder_for(const std::string& kind);

}  // namespace xpusim::report::detail
