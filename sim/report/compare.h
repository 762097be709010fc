#pragma once
// `xpusim compare`: runs side by side (time, throughput, energy, TOPS/W, bound), each with its
// ratio to the first run.
#include <string>
#include <vector>

namespace xpusim::report {

struct Comparison {
  std::string text, markdown, csv;  // the terminal table and the two files
};

// Each path is a run's output folder or its report.json. Throws UserError on a missing or
// unreadable report.
Comparison compare_runs(const std::vector<std::string>& paths);

}  // namespace xpusim::report
