#include "sim/io/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace xpusim::log {
namespace {
spdlog::level::level_enum level_of(Level l) {
  switch (l) {
    case Level::debug: return spdlog::level::debug;
    case Level::info: return spdlog::level::info;
    case Level::warn: return spdlog::level::warn;
    case Level::error: break;
  }
  return spdlog::level::err;
}
}  // namespace

void debug(const std::string& msg) { spdlog::debug(msg); }
void info(const std::string& msg) { spdlog::info(msg); }
void warn(const std::string& msg) { spdlog::warn(msg); }

void systemc(Level level, const std::string& msg) {
  const auto logger = spdlog::get("systemc");
  (logger ? logger : spdlog::default_logger())->log(level_of(level), msg);
}

bool debug_enabled() { return spdlog::should_log(spdlog::level::debug); }

void set_level(Level level) { spdlog::set_level(level_of(level)); }

void install_cli_loggers() {
  if (spdlog::get("systemc")) return;
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("xpusim", sink));
  spdlog::register_logger(std::make_shared<spdlog::logger>("systemc", sink));
  spdlog::set_pattern("[%^%l%$] %v");
}

}  // namespace xpusim::log
