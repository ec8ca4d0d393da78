// Run folders and the JSONL training log.
#include "swift/train/run_dir.h"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "swift/core/error.h"

// A CPU-only LibTorch has no CUDA allocator headers; there the peak is always the process's resident set.
#if __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#define SWIFT_HAS_CUDA_ALLOCATOR 1
#endif

namespace fs = std::filesystem;

namespace swift::train {

fs::path create_run_dir(const fs::path& output_dir, bool add_version) {
  std::error_code ec;
  fs::create_directories(output_dir, ec);
  SWIFT_CHECK(!ec, DataError, "cannot create --output_dir " + output_dir.string() + ": " + ec.message(),
              "check the path is writable");
  if (!add_version) return output_dir;
  int versions = 0;
  for (const auto& entry : fs::directory_iterator(output_dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && name.size() > 1 && name[0] == 'v' && std::isdigit(static_cast<unsigned char>(name[1])))
      ++versions;
  }
  const std::time_t now = std::time(nullptr);
  std::ostringstream name;
  name << "v" << versions << "-" << std::put_time(std::localtime(&now), "%Y%m%d-%H%M%S");
  fs::path dir = output_dir / name.str();
  fs::create_directories(dir, ec);
  SWIFT_CHECK(!ec, DataError, "cannot create " + dir.string() + ": " + ec.message(), "check the path is writable");
  return dir;
}

JsonlLog::JsonlLog(const fs::path& path) : path_(path), out_(path, std::ios::app) {
  SWIFT_CHECK(out_.good(), DataError, "cannot write " + path.string(), "check the run folder is writable");
}

void JsonlLog::write(const nlohmann::ordered_json& row) {
  out_ << row.dump() << "\n";
  out_.flush();
  SWIFT_CHECK(out_.good(), DataError, "writing " + path_.string() + " failed", "check the disk has room");
}

std::string format_duration(double seconds) {
  long s = static_cast<long>(seconds + 0.5);
  std::ostringstream out;
  if (s >= 3600) out << s / 3600 << "h ";
  if (s >= 60) out << (s % 3600) / 60 << "m ";
  out << s % 60 << "s";
  return out.str();
}

std::string format_log_row(const nlohmann::ordered_json& row) {
  std::ostringstream out;
  out << "{";
  bool first = true;
  for (auto it = row.begin(); it != row.end(); ++it) {
    out << (first ? "" : ", ") << "'" << it.key() << "': ";
    first = false;
    if (it.value().is_number_float()) {
      const double v = it.value().get<double>();
      out << std::setprecision(std::abs(v) < 1e-3 && v != 0 ? 3 : 5) << (std::abs(v) < 1e-3 && v != 0 ? std::scientific : std::defaultfloat) << v
          << std::defaultfloat;
    } else if (it.value().is_string()) {
      out << "'" << it.value().get<std::string>() << "'";
    } else {
      out << it.value().dump();
    }
  }
  out << "}";
  return out.str();
}

double peak_memory_gib(int cuda_device) {
#ifdef SWIFT_HAS_CUDA_ALLOCATOR
  if (cuda_device >= 0) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(cuda_device));
    const auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
    return static_cast<double>(stats.reserved_bytes[aggregate].peak) / (1024.0 * 1024.0 * 1024.0);
  }
#endif
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / (1024.0 * 1024.0);  // kB
  }
  return 0.0;
}

double available_memory_bytes(int cuda_device, int local_ranks) {
#ifdef SWIFT_HAS_CUDA_ALLOCATOR
  if (cuda_device >= 0) {
    c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(cuda_device));
    size_t free = 0, total = 0;
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) return 0.0;
    return static_cast<double>(total);
  }
#endif
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") return kib * 1024.0 / std::max(1, local_ranks);
  }
  return 0.0;
}

}  // namespace swift::train
