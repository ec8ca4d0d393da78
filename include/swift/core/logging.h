// Rank-aware logging: rank 0 logs at the chosen level, other ranks only warnings and errors (unless the level
// is debug/trace), each line prefixed with the rank when the world has more than one process.
// spdlog does the work inside logging.cpp only: LibTorch ships its own (newer) fmt headers, which clash with
// the fmt Debian's spdlog is built on, so no translation unit that sees LibTorch may include spdlog.
#pragma once

#include <sstream>
#include <string>

namespace swift {

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kCritical, kOff };

// level: trace|debug|info|warning|warn|error|critical|off; empty means LOG_LEVEL from the environment,
// else info. Throws UsageError for an unknown level.
void init_logging(const std::string& level, int rank = 0, int world_size = 1);

bool log_enabled(LogLevel level);
void log_message(LogLevel level, const std::string& message);

namespace detail {
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

// log_info("loaded ", n, " tensors from ", path): the parts are streamed together only when the level is on.
template <typename... Parts>
void log_debug(const Parts&... parts) {
  if (log_enabled(LogLevel::kDebug)) log_message(LogLevel::kDebug, detail::concat(parts...));
}
template <typename... Parts>
void log_info(const Parts&... parts) {
  if (log_enabled(LogLevel::kInfo)) log_message(LogLevel::kInfo, detail::concat(parts...));
}
template <typename... Parts>
void log_warn(const Parts&... parts) {
  if (log_enabled(LogLevel::kWarn)) log_message(LogLevel::kWarn, detail::concat(parts...));
}
template <typename... Parts>
void log_error(const Parts&... parts) {
  if (log_enabled(LogLevel::kError)) log_message(LogLevel::kError, detail::concat(parts...));
}

}  // namespace swift
