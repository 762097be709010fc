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
// `t` holds a sweep's results (results.csv's columns); `axes` names the axis columns.
std::string sweep_html(const std::string& name, const std::string& description, const std::vector<std::string>& axes,
                       const Table& t);

}  // namespace xpusim::report
