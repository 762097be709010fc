#include "sim/io/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace xpusim::log {

void debug(const std::string& msg) { spdlog::debug(msg); }
void info(const std::string& msg) { spdlog::info(msg); }
void warn(const std::string& msg) { spdlog::warn(msg); }

void systemc(Level level, const std::string& msg) {
  const auto logger = spdlog::get("systemc");
  if (!logger) {
    level == Level::debug ? debug(msg) : level == Level::info ? info(msg) : warn(msg);
    return;
  }
  level == Level::debug ? logger->debug(msg) : level == Level::info ? logger->info(msg) : logger->warn(msg);
}

void error_systemc(const std::string& msg) {
  const auto logger = spdlog::get("systemc");
  logger ? logger->error(msg) : spdlog::error(msg);
}

bool debug_enabled() { return spdlog::should_log(spdlog::level::debug); }

void set_level(Level level) {
  spdlog::set_level(level == Level::debug ? spdlog::level::debug
                    : level == Level::info ? spdlog::level::info
                                           : spdlog::level::warn);
}

void install_cli_loggers() {
  if (spdlog::get("systemc")) return;
  auto sink = std::make_shared<spdlog::sinks::stderr_color_sink_mt>();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>("xpusim", sink));
  spdlog::register_logger(std::make_shared<spdlog::logger>("systemc", sink));
  spdlog::set_pattern("[%^%l%$] %v");
}

}  // namespace xpusim::log
