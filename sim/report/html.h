#pragma once
// A run's self-contained HTML report (inline SVG and CSS, no scripts, nothing fetched):
// report.html, with the roofline, the energy breakdown and the time per op. The pages of many
// runs (sweep.html) are drawn in Python (python/xpusim/plots/).
#include <string>
#include <vector>

#include "sim/report/report.h"

namespace xpusim::report {

std::string run_html(const Report& rep);

}  // namespace xpusim::report
