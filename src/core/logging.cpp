// spdlog setup shared by every command (the only translation unit that includes spdlog; see logging.h).
#include "swift/core/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "swift/core/error.h"

namespace swift {

namespace {

spdlog::level::level_enum parse_level(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name == "trace") return spdlog::level::trace;
  if (name == "debug") return spdlog::level::debug;
  if (name == "info") return spdlog::level::info;
  if (name == "warning" || name == "warn") return spdlog::level::warn;
  if (name == "error") return spdlog::level::err;
  if (name == "critical") return spdlog::level::critical;
  if (name == "off") return spdlog::level::off;
  throw UsageError("unknown log level '" + name + "'",
                   "use --log_level (or LOG_LEVEL) trace, debug, info, warning, error or critical");
}

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kTrace: return spdlog::level::trace;
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarn: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kCritical: return spdlog::level::critical;
    case LogLevel::kOff: return spdlog::level::off;
  }
  return spdlog::level::info;
}

std::shared_ptr<spdlog::logger> make_logger(spdlog::level::level_enum level, int rank, int world_size) {
  spdlog::drop("swift");  // init may run more than once in one process (tests)
  auto logger = spdlog::stderr_color_mt("swift");
  logger->set_level(level);
  logger->set_pattern(world_size > 1 ? "[%H:%M:%S %^%L%$ rank" + std::to_string(rank) + "] %v"
                                     : "[%H:%M:%S %^%L%$] %v");
  return logger;
}

spdlog::logger& logger() {
  static std::shared_ptr<spdlog::logger> fallback = [] {
    const char* env = std::getenv("LOG_LEVEL");
    return make_logger(parse_level(env && *env ? env : "info"), 0, 1);
  }();
  auto current = spdlog::get("swift");
  return current ? *current : *fallback;
}

}  // namespace

void init_logging(const std::string& level, int rank, int world_size) {
  std::string name = level;
  if (name.empty()) {
    const char* env = std::getenv("LOG_LEVEL");
    name = env && *env ? env : "info";
  }
  auto lvl = parse_level(name);
  // Non-zero ranks stay quiet unless debugging: N copies of every line help nobody.
  if (rank != 0 && lvl > spdlog::level::debug && lvl < spdlog::level::warn) lvl = spdlog::level::warn;
  make_logger(lvl, rank, world_size);
}

bool log_enabled(LogLevel level) { return logger().should_log(to_spdlog(level)); }

void log_message(LogLevel level, const std::string& message) { logger().log(to_spdlog(level), message); }

}  // namespace swift
