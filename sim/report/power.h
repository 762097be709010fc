#pragma once
// The power figures of a report (power.mode capped): averages of a governor's windows over a
// span of time, and their JSON. docs/report-format.md lists the fields.
#include <vector>

#include "models/power/governor.h"
#include "sim/report/json_writer.h"
#include "sim/report/report.h"

namespace xpusim::report {

struct SpanPower {
  double clock_hz = 0, voltage = 0, power_w = 0;
  double leakage_scale = 1;   // mean (V / nominal)^2: what leakage scaled by
  double throttled_share = 0;
  double seconds = 0;         // of the span covered by windows
};
// Time-weighted averages over [start, end) of the windows in `track`.
SpanPower over_span(const std::vector<PowerSample>& track, double start_s, double end_s, double nominal_voltage);

// Sets m's power fields; an op whose clock the limit held down for most of its time and that
// no memory bandwidth bound is bound by power.
void set_power(Metrics& m, const SpanPower& s);

// Consecutive windows at one clock whose power stays within 1% of the run's first are merged
// (time-weighted), so that a long steady load is a few entries rather than one per window.
std::vector<PowerSample> merge_steady(const std::vector<PowerSample>& track);

// At most `max_entries` windows: a longer track's consecutive windows are joined into spans of at
// least its length / max_entries (time-weighted means; the average at a span's end; throttled
// where it was for half the span or more), so that a long governed run's outputs stay bounded
// (a 3 s training step is 300,000 windows of 10 us). Returns the span length (0: unchanged).
double bound_track(std::vector<PowerSample>& track, size_t max_entries);
constexpr size_t kMaxTrackEntries = 2000;  // per GPU, in report.json, timeline.json and report.html

// A report's power section: the settings, and each chip's governor windows merged where steady,
// bounded (bound_track).
PowerInfo power_info(const PowerParams& p, std::vector<int> gpus, const std::vector<std::vector<PowerSample>>& tracks);

void write_power_settings(JsonWriter& w, const PowerInfo& p);
void write_power_metrics(JsonWriter& w, const Metrics& m);

}  // namespace xpusim::report
