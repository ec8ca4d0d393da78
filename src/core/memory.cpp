// Memory used and available (see memory.h).
#include "swift/core/memory.h"

#include <algorithm>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <fstream>
#include <string>

// A CPU-only LibTorch has no CUDA allocator headers; there the peak is always the process's resident set.
#if __has_include(<c10/cuda/CUDACachingAllocator.h>)
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#define SWIFT_HAS_CUDA_ALLOCATOR 1
#endif

// jemalloc's control call, when the binary links jemalloc (weak: a build without it has none).
extern "C" int mallctl(const char* name, void* oldp, size_t* oldlenp, void* newp, size_t newlen) __attribute__((weak));

namespace swift {

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

void return_free_memory() {
  if (mallctl) {
    mallctl("thread.tcache.flush", nullptr, nullptr, nullptr, 0);  // this thread's cached small blocks first
    constexpr const char* kPurgeAllArenas = "arena.4096.purge";  // 4096: MALLCTL_ARENAS_ALL
    mallctl(kPurgeAllArenas, nullptr, nullptr, nullptr, 0);
    return;
  }
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

}  // namespace swift
