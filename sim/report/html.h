#pragma once
// Self-contained HTML reports (inline SVG and CSS, no scripts, nothing fetched): report.html
// for a run (roofline, energy breakdown, time per op) and sweep.html for a sweep (a line plot
// per axis, a time-energy Pareto chart per trace, every row).
#include <string>
#include <vector>

#include "sim/report/report.h"

namespace xpusim::report {

struct Table {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

std::string run_html(const Report& rep);
// What sweep.html plots: per value of the `group` column, each metric of `lines` against each
// axis, and pareto_y against pareto_x with the points no other beats on both (lower is better).
struct SweepMetric {
  std::string column, label;
  double scale = 1;  // shown as value x scale (seconds as ms: 1e3)
};
struct SweepCharts {
  std::string group = "trace";
  std::vector<SweepMetric> lines = {{"time_s", "time (ms)", 1e3}};
  SweepMetric pareto_x = {"time_s", "time (ms)", 1e3}, pareto_y = {"energy_j", "energy (J)", 1};
};

// `t` holds a sweep's results (results.csv's columns); `axes` names the axis columns.
std::string sweep_html(const std::string& name, const std::string& description, const std::vector<std::string>& axes,
                       const Table& t, const SweepCharts& charts = {});

}  // namespace xpusim::report
