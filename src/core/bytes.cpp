// Byte counts as the logs write them (see bytes.h).
#include "swift/core/bytes.h"

#include <cstdio>

namespace swift {

std::string format_bytes(double bytes) {
  char text[32];
  if (bytes >= 1024.0 * 1024 * 1024) std::snprintf(text, sizeof(text), "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  else std::snprintf(text, sizeof(text), "%.1f MiB", bytes / (1024.0 * 1024));
  return text;
}

}  // namespace swift
