// c10d rendezvous and collectives (see the header). The only translation unit that includes c10d's backend
// headers: Gloo's come from Debian's libgloo-dev (the PyPI wheel ships c10d's headers but not Gloo's); only
// smart pointers to Gloo types cross into LibTorch, so the headers' version need not match the one inside it.
#include "swift/distributed/process_group.h"

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef SWIFT_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <ATen/ATen.h>

#include <algorithm>
#include <atomic>
#include <chrono>

#include "swift/core/error.h"
#include "swift/core/logging.h"

namespace swift::distributed {

namespace {
// Runs a collective step; a failure (a peer died, a timeout) becomes a DeviceError naming this rank.
template <typename Fn>
void guarded_collective(const std::string& what, int rank, int world_size, Fn&& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    throw DeviceError(what + " failed on rank " + std::to_string(rank) + " of " + std::to_string(world_size) + ": " +
                          e.what_without_backtrace(),
                      "another rank has probably failed or was stopped: look for its error above (with a "
                      "launcher, the line naming the rank); a slow rank beyond --ddp_timeout ends here too");
  }
}
}  // namespace

struct PendingCollective::Impl {
  std::string what;
  int rank = 0, world_size = 1;
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<c10d::Work> work;
  // Gloo with a CUDA tensor: the collective ran on `staged`, a CPU copy, whose result goes back into `target`.
  at::Tensor staged, target;
  std::shared_ptr<std::atomic<int64_t>> waited_ns;  // the group's time spent waiting
};

namespace {

// Runs fn() and adds its wall time to `waited_ns`.
template <typename Fn>
void timed(std::atomic<int64_t>& waited_ns, Fn&& fn) {
  const auto start = std::chrono::steady_clock::now();
  fn();
  waited_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

void PendingCollective::wait() {
  if (!impl_) return;
  const auto impl = std::move(impl_);
  timed(*impl->waited_ns, [&] {
    guarded_collective(impl->what, impl->rank, impl->world_size, [&] { impl->work->wait(impl->timeout); });
  });
  if (impl->target.defined()) impl->target.copy_(impl->staged);
}

struct ProcessGroup::Impl {
  int rank = 0, world_size = 1;
  std::string backend_name;
  std::shared_ptr<std::atomic<int64_t>> waited_ns = std::make_shared<std::atomic<int64_t>>(0);
  c10::Device device{c10::kCPU};
  std::chrono::milliseconds timeout{0};
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::Backend> backend;

  template <typename Fn>
  void guarded(const std::string& what, Fn&& fn) {
    guarded_collective(what, rank, world_size, std::forward<Fn>(fn));
  }

  // Opens this group's Gloo or NCCL backend over `store` (every member calls it).
  void open_backend() {
    try {
      if (backend_name == "gloo") {
        auto gloo_options = c10d::ProcessGroupGloo::Options::create_default(timeout);
        backend = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world_size, gloo_options);
      } else {
  #ifdef SWIFT_WITH_NCCL
        c10::cuda::set_device(device.index());
        auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
        nccl_options->timeout = timeout;
        backend = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, world_size, nccl_options);
  #else
        throw DeviceError("this swift was built without NCCL, which CUDA training on several ranks needs",
                          "rebuild against a CUDA LibTorch with nccl.h available (docs/building.md)");
  #endif
      }
    } catch (const c10::Error& e) {
      throw DeviceError("rank " + std::to_string(rank) + ": opening the " + backend_name + " process group failed: " +
                            e.what_without_backtrace(),
                        backend_name == "gloo" ? "set GLOO_SOCKET_IFNAME to the network interface the ranks share (e.g. eth0)"
                                          : "check NCCL_SOCKET_IFNAME / NCCL_DEBUG=INFO (docs/distributed.md)");
    }
  }
  // Starts the collective `launch` makes of {tensor}; its Work waits in the result. Gloo works on CPU tensors:
  // a CUDA tensor is staged through a CPU copy (--ddp_backend gloo on GPUs: slow, but it runs several ranks on
  // one GPU, which NCCL refuses).
  template <typename Launch>
  PendingCollective start(const char* what, Launch&& launch, at::Tensor& tensor) {
    PendingCollective out;
    out.impl_ = std::make_shared<PendingCollective::Impl>(
        PendingCollective::Impl{what, rank, world_size, timeout, {}, {}, {}, waited_ns});
    const bool stage = backend_name == "gloo" && tensor.is_cuda();
    if (stage) {
      out.impl_->staged = tensor.to(c10::kCPU);
      out.impl_->target = tensor;
    }
    guarded(what, [&] {
      std::vector<at::Tensor> tensors{stage ? out.impl_->staged : tensor};
      out.impl_->work = launch(tensors);
    });
    return out;
  }
};

namespace {

std::string endpoint(const DistEnv& env) { return env.master_addr + ":" + std::to_string(env.master_port); }

c10::intrusive_ptr<c10d::Store> rendezvous(const DistEnv& env, std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(env.master_port);
  options.isServer = env.rank == 0;
  options.numWorkers = static_cast<std::size_t>(env.world_size);
  options.waitWorkers = true;  // rank 0 returns once every rank has connected (or the timeout passed)
  options.timeout = timeout;
  try {
    return c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  } catch (const c10::Error& e) {
    const std::string why = e.what_without_backtrace();
    const bool in_use = why.find("in use") != std::string::npos || why.find("EADDRINUSE") != std::string::npos;
    std::string hint;
    if (env.rank == 0 && in_use)
      hint = "port " + std::to_string(env.master_port) + " is taken: set MASTER_PORT to a free port";
    else if (env.rank == 0)
      hint = "check that every rank was started (WORLD_SIZE=" + std::to_string(env.world_size) +
             ") and can reach " + endpoint(env) + "; --ddp_timeout bounds the wait";
    else
      hint = "check MASTER_ADDR/MASTER_PORT (" + endpoint(env) + ") point at rank 0's machine, that rank 0 is "
             "running, and that no firewall blocks the port; --ddp_timeout bounds the wait";
    throw DeviceError("rank " + std::to_string(env.rank) + " of " + std::to_string(env.world_size) +
                          ": rendezvous at " + endpoint(env) + " failed: " + why,
                      hint);
  }
}

}  // namespace

ProcessGroup::ProcessGroup(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProcessGroup::~ProcessGroup() = default;

std::unique_ptr<ProcessGroup> ProcessGroup::connect(const DistEnv& env, c10::Device device, const GroupOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->rank = env.rank;
  impl->world_size = env.world_size;
  impl->device = device;
  impl->timeout = std::chrono::duration_cast<std::chrono::milliseconds>(options.timeout);
  std::string backend = options.backend;
  if (backend == "auto" || backend.empty()) backend = device.is_cuda() ? "nccl" : "gloo";
  SWIFT_CHECK(backend == "gloo" || backend == "nccl", UsageError, "--ddp_backend " + options.backend + " is not available",
              "use auto, nccl (CUDA) or gloo (CPU)");
  SWIFT_CHECK(backend != "nccl" || device.is_cuda(), UsageError, "--ddp_backend nccl needs CUDA tensors",
              "train on a GPU, or use --ddp_backend gloo on the CPU");
  if (backend == "gloo" && device.is_cuda())
    log_warn("--ddp_backend gloo on ", device.str(), ": every collective is staged through CPU RAM (slow; for several "
             "ranks on one GPU, which NCCL refuses, or where NCCL does not work)");
  impl->backend_name = backend;
  impl->store = rendezvous(env, impl->timeout);
  impl->open_backend();
  auto group = std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
  group->barrier();  // every rank's backend is up before anyone starts work
  log_info("process group: ", group->backend_name(), ", ", env.describe());
  return group;
}

int ProcessGroup::rank() const { return impl_->rank; }
double ProcessGroup::seconds_waiting() const { return static_cast<double>(impl_->waited_ns->load()) * 1e-9; }
int ProcessGroup::world_size() const { return impl_->world_size; }
const std::string& ProcessGroup::backend_name() const { return impl_->backend_name; }

PendingCollective ProcessGroup::start_all_reduce_sum(at::Tensor& tensor) {
  return impl_->start("all-reduce", [&](std::vector<at::Tensor>& tensors) {
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    return impl_->backend->allreduce(tensors, options);
  }, tensor);
}

PendingCollective ProcessGroup::start_broadcast(at::Tensor& tensor, int root) {
  return impl_->start("broadcast", [&](std::vector<at::Tensor>& tensors) {
    c10d::BroadcastOptions options;
    options.rootRank = root;
    return impl_->backend->broadcast(tensors, options);
  }, tensor);
}

PendingCollective ProcessGroup::start_reduce_sum(at::Tensor& tensor, int root) {
  return impl_->start("reduce", [&](std::vector<at::Tensor>& tensors) {
    c10d::ReduceOptions options;
    options.reduceOp = c10d::ReduceOp::SUM;
    options.rootRank = root;
    return impl_->backend->reduce(tensors, options);
  }, tensor);
}

PendingCollective ProcessGroup::start_send(at::Tensor& tensor, int dst, int tag) {
  return impl_->start("send", [&](std::vector<at::Tensor>& tensors) { return impl_->backend->send(tensors, dst, tag); },
                      tensor);
}

PendingCollective ProcessGroup::start_recv(at::Tensor& tensor, int src, int tag) {
  return impl_->start("receive", [&](std::vector<at::Tensor>& tensors) { return impl_->backend->recv(tensors, src, tag); },
                      tensor);
}

void ProcessGroup::all_reduce_sum(at::Tensor& tensor) { start_all_reduce_sum(tensor).wait(); }

void ProcessGroup::all_reduce_max(at::Tensor& tensor) {
  impl_->start("all-reduce (max)", [&](std::vector<at::Tensor>& tensors) {
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp::MAX;
    return impl_->backend->allreduce(tensors, options);
  }, tensor).wait();
}

at::Tensor ProcessGroup::all_gather(const at::Tensor& tensor, int64_t dim) {
  const bool stage = impl_->backend_name == "gloo" && tensor.is_cuda();
  std::vector<at::Tensor> input{stage ? tensor.to(c10::kCPU).contiguous() : tensor.contiguous()};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int r = 0; r < impl_->world_size; ++r) outputs[0].push_back(at::empty_like(input[0]));
  timed(*impl_->waited_ns, [&] {
    impl_->guarded("all-gather", [&] { impl_->backend->allgather(outputs, input)->wait(impl_->timeout); });
  });
  return at::cat(outputs[0], dim).to(tensor.device());
}

at::Tensor ProcessGroup::reduce_scatter_sum(const at::Tensor& tensor, int64_t dim) {
  const int n = impl_->world_size;
  SWIFT_ASSERT(tensor.size(dim) % n == 0, "a reduce-scatter splits a dimension the group divides");
  const bool stage = impl_->backend_name == "gloo" && tensor.is_cuda();
  const at::Tensor source = stage ? tensor.to(c10::kCPU) : tensor;
  std::vector<std::vector<at::Tensor>> inputs(1);
  for (const auto& part : source.chunk(n, dim)) inputs[0].push_back(part.contiguous());
  std::vector<at::Tensor> output{at::empty_like(inputs[0][0])};
  timed(*impl_->waited_ns, [&] {
    impl_->guarded("reduce-scatter", [&] { impl_->backend->reduce_scatter(output, inputs)->wait(impl_->timeout); });
  });
  return output[0].to(tensor.device());
}

at::Tensor ProcessGroup::all_to_all(const at::Tensor& tensor, int64_t scatter_dim, int64_t gather_dim) {
  const int n = impl_->world_size;
  SWIFT_ASSERT(tensor.size(scatter_dim) % n == 0, "an all-to-all splits a dimension the group divides");
  // The parts stacked along a new first dimension: one contiguous buffer whose equal rows go to the ranks in order.
  const bool stage = impl_->backend_name == "gloo" && tensor.is_cuda();
  at::Tensor input = at::stack(tensor.chunk(n, scatter_dim)).contiguous();
  if (stage) input = input.to(c10::kCPU);
  at::Tensor output = at::empty_like(input);
  std::vector<int64_t> equal_splits;  // empty: equal parts
  timed(*impl_->waited_ns, [&] {
    impl_->guarded("all-to-all", [&] {
      impl_->backend->alltoall_base(output, input, equal_splits, equal_splits)->wait(impl_->timeout);
    });
  });
  return at::cat(output.to(tensor.device()).unbind(0), gather_dim);
}

at::Tensor ProcessGroup::all_to_all_rows(const at::Tensor& rows, const std::vector<int64_t>& send_rows,
                                         const std::vector<int64_t>& receive_rows) {
  const auto n = static_cast<size_t>(impl_->world_size);
  SWIFT_ASSERT(send_rows.size() == n && receive_rows.size() == n, "an all-to-all of rows gives a count per rank");
  const bool stage = impl_->backend_name == "gloo" && rows.is_cuda();
  at::Tensor input = rows.contiguous();
  if (stage) input = input.to(c10::kCPU);
  auto shape = input.sizes().vec();
  shape[0] = 0;
  for (const int64_t r : receive_rows) shape[0] += r;
  at::Tensor output = at::empty(shape, input.options());
  std::vector<int64_t> send(send_rows), receive(receive_rows);  // c10d takes them by non-const reference
  timed(*impl_->waited_ns, [&] {
    impl_->guarded("all-to-all", [&] { impl_->backend->alltoall_base(output, input, receive, send)->wait(impl_->timeout); });
  });
  return output.to(rows.device());
}

std::unique_ptr<ProcessGroup> ProcessGroup::subgroup(const std::vector<int>& ranks, const std::string& name) const {
  const auto me = std::find(ranks.begin(), ranks.end(), impl_->rank);
  SWIFT_ASSERT(me != ranks.end(), "a subgroup holds the rank that makes it");
  auto impl = std::make_unique<Impl>();
  impl->rank = static_cast<int>(me - ranks.begin());
  impl->world_size = static_cast<int>(ranks.size());
  impl->backend_name = impl_->backend_name;
  impl->device = impl_->device;
  impl->timeout = impl_->timeout;
  // Its own keys in the job's store: the members of each group meet there, and no other group sees them.
  impl->store = c10::make_intrusive<c10d::PrefixStore>("swift/group/" + name, impl_->store);
  impl->open_backend();
  auto group = std::unique_ptr<ProcessGroup>(new ProcessGroup(std::move(impl)));
  group->barrier();
  return group;
}

void ProcessGroup::broadcast(at::Tensor& tensor, int root) { start_broadcast(tensor, root).wait(); }

void ProcessGroup::reduce_sum(at::Tensor& tensor, int root) { start_reduce_sum(tensor, root).wait(); }

void ProcessGroup::barrier() {
  impl_->guarded("barrier", [&] {
    c10d::BarrierOptions options;
    if (impl_->device.is_cuda() && impl_->backend_name == "nccl") options.device_ids = {impl_->device.index()};
    impl_->backend->barrier(options)->wait(impl_->timeout);
  });
}

std::vector<double> ProcessGroup::sum(const std::vector<double>& values) {
  if (values.empty()) return {};
  at::Tensor t = at::tensor(values, at::kDouble).to(impl_->backend_name == "gloo" ? c10::Device(c10::kCPU) : impl_->device);
  all_reduce_sum(t);
  t = t.cpu();
  return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
}

std::string ProcessGroup::share(const std::string& key, const std::string& value, int root) {
  const std::string full = "swift/" + key;
  std::string out;
  impl_->guarded("sharing " + key, [&] {
    if (impl_->rank == root) {
      impl_->store->set(full, std::vector<uint8_t>(value.begin(), value.end()));
      out = value;
    } else {
      const std::vector<uint8_t> bytes = impl_->store->get(full);
      out.assign(bytes.begin(), bytes.end());
    }
  });
  return out;
}

}  // namespace swift::distributed
