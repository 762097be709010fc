#pragma once
// Messages to the terminal (warnings, notes, debug detail) and their level. Only sim/io/log.cpp
// includes spdlog: its compile-time format checks cost each file that includes it seconds of
// build, so callers hand over a finished string.
#include <string>

namespace xpusim::log {

enum class Level { debug, info, warn, error };

void debug(const std::string& msg);
void info(const std::string& msg);
void warn(const std::string& msg);
// SystemC's own reports, on a logger of their own ("systemc") where the CLI made one.
void systemc(Level level, const std::string& msg);
// Whether debug messages are printed: a caller skips building a costly message when not.
bool debug_enabled();
void set_level(Level level);
// The CLI's loggers: "xpusim" (the default) and "systemc" on one coloured stderr sink, with a
// "[level] message" pattern. Idempotent.
void install_cli_loggers();

}  // namespace xpusim::log
