// All-reduce bandwidth of swift's process group (c10d: Gloo on CPU, NCCL on CUDA), as nccl-tests report it:
// algorithm bandwidth = bytes / time, bus bandwidth = algbw x 2 (n - 1) / n (what each link carries).
//   NPROC_PER_NODE=2 build/bin/swift_bench_allreduce [--device cpu|cuda] [--max_mb 64] [--iters 20]
// Started without a launcher environment it launches itself like `swift sft` does.
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/distributed/env.h"
#include "swift/distributed/launcher.h"
#include "swift/distributed/process_group.h"

int main(int argc, char** argv) {
  try {
    if (auto plan = swift::distributed::launch_plan(swift::distributed::process_env(), std::thread::hardware_concurrency()))
      return swift::distributed::run_local_ranks(*plan, std::vector<std::string>(argv, argv + argc));
    std::string device_spec = "cpu";
    double max_mb = 64;
    int iters = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
      if (!std::strcmp(argv[i], "--device")) device_spec = argv[i + 1];
      else if (!std::strcmp(argv[i], "--max_mb")) max_mb = std::atof(argv[i + 1]);
      else if (!std::strcmp(argv[i], "--iters")) iters = std::atoi(argv[i + 1]);
    }
    const auto env = swift::distributed::read_dist_env();
    if (!env.distributed()) {
      std::fprintf(stderr, "run it with NPROC_PER_NODE=2 (or more), or under torchrun/srun\n");
      return 2;
    }
    c10::Device device = swift::parse_device(device_spec);
    if (device.is_cuda()) device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank));
    auto group = swift::distributed::ProcessGroup::connect(env, device, {});
    const int n = group->world_size();
    if (group->rank() == 0)
      std::printf("all-reduce (sum, fp32) over %d ranks, %s, %d iterations per size\n%12s %12s %14s %14s\n", n,
                  group->backend_name().c_str(), iters, "bytes", "time (us)", "algbw (GB/s)", "busbw (GB/s)");
    for (double bytes = 4096; bytes <= max_mb * (1 << 20); bytes *= 4) {
      at::Tensor t = at::ones({static_cast<int64_t>(bytes / 4)}, at::TensorOptions().device(device));
      group->all_reduce_sum(t);  // warm-up
      group->barrier();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) group->all_reduce_sum(t);
      if (device.is_cuda()) t.cpu();  // waits for the device
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
      const double algbw = bytes / seconds / 1e9;
      if (group->rank() == 0)
        std::printf("%12.0f %12.1f %14.3f %14.3f\n", bytes, seconds * 1e6, algbw, algbw * 2.0 * (n - 1) / n);
    }
    group->barrier();
    return 0;
  } catch (const swift::UserError& e) {
    std::fprintf(stderr, "error: %s\nhint: %s\n", e.message().c_str(), e.hint().c_str());
    return static_cast<int>(e.code());
  }
}
