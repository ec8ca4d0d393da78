// --device / --torch_dtype / --num_threads.
#include "swift/core/device.h"

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "swift/core/error.h"

namespace swift {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

c10::Device parse_device(const std::string& spec_in) {
  const std::string spec = lower(spec_in);
  if (spec == "auto" || spec.empty()) {
    return torch::cuda::is_available() ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU);
  }
  if (spec == "cpu") return c10::Device(c10::kCPU);
  if (spec.rfind("cuda", 0) == 0) {
    int index = 0;
    if (spec.size() > 4) {
      SWIFT_CHECK(spec[4] == ':' && spec.size() > 5 &&
                      std::all_of(spec.begin() + 5, spec.end(), [](unsigned char c) { return std::isdigit(c); }),
                  UsageError, "--device '" + spec_in + "' is not a device", "use auto, cpu, cuda or cuda:N");
      index = std::stoi(spec.substr(5));
    }
    SWIFT_CHECK(torch::cuda::is_available(), DeviceError, "--device " + spec_in + ": CUDA is not available here",
                "run on a machine with an NVIDIA GPU and a CUDA-enabled LibTorch, or pass --device cpu");
    const int count = static_cast<int>(torch::cuda::device_count());
    SWIFT_CHECK(index < count, DeviceError,
                "--device " + spec_in + ": only " + std::to_string(count) + " CUDA device(s) visible",
                "pick cuda:0 .. cuda:" + std::to_string(count - 1) + " or check CUDA_VISIBLE_DEVICES");
    return c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  throw UsageError("--device '" + spec_in + "' is not a device", "use auto, cpu, cuda or cuda:N");
}

std::optional<c10::ScalarType> parse_dtype(const std::string& spec_in, const std::string& flag) {
  const std::string spec = lower(spec_in);
  if (spec == "auto" || spec.empty()) return std::nullopt;
  if (spec == "float32" || spec == "fp32" || spec == "float") return c10::kFloat;
  if (spec == "bfloat16" || spec == "bf16") return c10::kBFloat16;
  if (spec == "float16" || spec == "fp16" || spec == "half") return c10::kHalf;
  throw UsageError(flag + " '" + spec_in + "' is not a supported dtype", "use auto, float32, bfloat16 or float16");
}

std::string dtype_name(c10::ScalarType dtype) {
  switch (dtype) {
    case c10::kFloat: return "float32";
    case c10::kBFloat16: return "bfloat16";
    case c10::kHalf: return "float16";
    case c10::kDouble: return "float64";
    default: return std::string(c10::toString(dtype));
  }
}

int configure_threads(int requested) {
  // OpenMP cannot start tens of thousands of threads (libgomp crashes): far more than the cores is a mistake.
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int limit = std::max(64, 8 * cores);
  SWIFT_CHECK(requested >= 0 && requested <= limit, UsageError,
              "--num_threads must be in [0, " + std::to_string(limit) + "] (8 x the " + std::to_string(cores) +
                  " cores here), got " + std::to_string(requested),
              "0 takes OMP_NUM_THREADS, else the core count");
  int n = requested;
  if (n == 0) {
    const char* env = std::getenv("OMP_NUM_THREADS");
    if (env && *env) {
      n = std::atoi(env);
      SWIFT_CHECK(n > 0 && n <= limit, UsageError,
                  std::string("OMP_NUM_THREADS=") + env + " is not a thread count in [1, " + std::to_string(limit) + "]",
                  "set it to the threads to use, or unset it");
    }
  }
  if (n <= 0) n = cores;
  at::set_num_threads(n);
  return at::get_num_threads();
}

}  // namespace swift
