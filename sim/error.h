#pragma once
// The user's fault (bad config, trace or flag) is a UserError: caught in main, non-zero exit.
// A simulator bug is an assertion, never a UserError.
#include <stdexcept>
#include <string>

namespace xpusim {

class UserError : public std::runtime_error {
 public:
  explicit UserError(const std::string& what) : std::runtime_error(what) {}
};

// The simulation stopped without finishing: the watchdog saw no progress (a lost completion, a
// deadlock). Not the user's input at fault, as far as anyone knows: `xpusim run` exits with
// status 3. report::simulate_isolated throws it; engine::simulate returns it in SimResult::stall.
class StallError : public std::runtime_error {
 public:
  explicit StallError(const std::string& what) : std::runtime_error(what) {}
};

// Where a value came from: a file position, a command-line override, or a built-in default.
struct SourceLoc {
  std::string file;  // empty for defaults; "--set" for command-line overrides
  int line = 0;      // 1-based; 0 when unknown
  int column = 0;    // 1-based; 0 when unknown

  std::string str() const {
    if (file.empty()) return "<default>";
    if (line <= 0) return file;
    return file + ":" + std::to_string(line) + ":" + std::to_string(column);
  }
};

}  // namespace xpusim
