// Shared by the fuzz harnesses (fuzz/*.cpp): the input as a file for readers that take a path, and the rule
// every harness enforces.
//
// The rule: a parser given any bytes either succeeds or throws swift::UserError (UsageError/DataError: a clear
// message and exit 2 or 3). Anything else that escapes (a json::exception, std::out_of_range, bad_alloc, a
// crash, a hang, a leak) is a bug the harness lets through to libFuzzer, which stops and saves the input.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace swift::fuzz {

// A folder of this process's own (under $TMPDIR, else /dev/shm: memory-backed, so a file per run is cheap).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::filesystem::path base = tmp && *tmp ? tmp : "/dev/shm";
    if (!std::filesystem::is_directory(base)) base = std::filesystem::temp_directory_path();
    auto d = base / ("swift-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return dir;
}

// Writes `bytes` to `name` in the scratch folder and returns its path.
inline std::filesystem::path write_file(const std::string& name, std::string_view bytes) {
  const auto path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace swift::fuzz
