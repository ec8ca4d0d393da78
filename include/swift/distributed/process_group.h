// The ranks of one job, on torch.distributed's C++ core (c10d), never on home-made collectives: a TCPStore at
// MASTER_ADDR:MASTER_PORT (hosted by rank 0) for the rendezvous, then ProcessGroupGloo for CPU tensors or
// ProcessGroupNCCL for CUDA tensors (device = cuda:LOCAL_RANK). Gloo is also taken for CUDA tensors when asked
// (--ddp_backend gloo), each collective staged through a CPU copy. Failures are DeviceErrors (exit 4) that say
// what could not be reached and what to check; every wait is bounded by --ddp_timeout (on NCCL a stuck
// collective is ended by NCCL's watchdog, which aborts, unless TORCH_NCCL_BLOCKING_WAIT=1).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "swift/distributed/env.h"

namespace swift::distributed {

struct GroupOptions {
  std::chrono::seconds timeout{1800};  // --ddp_timeout: rendezvous and every collective
  std::string backend = "auto";        // --ddp_backend: auto (nccl on CUDA, gloo on CPU), gloo, nccl
};

// A collective started without waiting (the backend runs it beside the caller: Gloo on its worker threads, NCCL
// on its stream): wait() before touching its tensor. Collectives are matched across ranks by the order they are
// started in, so every rank must start the same ones in the same order, waited or not.
class PendingCollective {
 public:
  PendingCollective() = default;
  void wait();  // a failure (a peer died, --ddp_timeout) is a DeviceError naming this rank
  bool pending() const { return impl_ != nullptr; }

 private:
  friend class ProcessGroup;
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

class ProcessGroup {
 public:
  // Rendezvous with the other ranks of `env` and open the backend for tensors on `device`.
  static std::unique_ptr<ProcessGroup> connect(const DistEnv& env, c10::Device device, const GroupOptions& options);
  ~ProcessGroup();
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int world_size() const;
  const std::string& backend_name() const;  // "gloo" or "nccl"
  // Wall time this rank has spent waiting for this group's collectives to finish (what overlap did not hide).
  double seconds_waiting() const;

  // In place, on the group's device: the sum over ranks / rank root's values.
  void all_reduce_sum(at::Tensor& tensor);
  void all_reduce_max(at::Tensor& tensor);
  // Every rank's `tensor` (all of one shape), concatenated along `dim` in rank order.
  at::Tensor all_gather(const at::Tensor& tensor, int64_t dim);
  // The sum over ranks of `tensor`, cut into world_size() equal parts along `dim`: this rank's part.
  at::Tensor reduce_scatter_sum(const at::Tensor& tensor, int64_t dim);
  void broadcast(at::Tensor& tensor, int root = 0);
  // `tensor` cut into world_size() equal parts along scatter_dim, part r sent to rank r; the parts received,
  // concatenated along gather_dim in rank order (Ulysses attention's exchange).
  at::Tensor all_to_all(const at::Tensor& tensor, int64_t scatter_dim, int64_t gather_dim);
  // Rows of uneven counts (expert parallelism's tokens): send_rows[r] consecutive rows (dim 0) of `rows` to rank r;
  // the rows received, receive_rows[r] from rank r, in rank order.
  at::Tensor all_to_all_rows(const at::Tensor& rows, const std::vector<int64_t>& send_rows,
                             const std::vector<int64_t>& receive_rows);
  // The sum over ranks lands in root's tensor (the others' are left undefined in value).
  void reduce_sum(at::Tensor& tensor, int root);
  // The same, started now and finished by the result's wait().
  PendingCollective start_all_reduce_sum(at::Tensor& tensor);
  PendingCollective start_broadcast(at::Tensor& tensor, int root);
  PendingCollective start_reduce_sum(at::Tensor& tensor, int root);
  // Point to point (pipeline stages): `tensor` to rank dst, or into `tensor` from rank src; a send and its receive
  // are matched by their order between the two ranks on the same `tag` (on Gloo: separate channels, such as
  // activations and gradients crossing between the same two ranks). Keep the tensor alive until wait().
  PendingCollective start_send(at::Tensor& tensor, int dst, int tag = 0);
  PendingCollective start_recv(at::Tensor& tensor, int src, int tag = 0);
  void barrier();
  // A group of some of this job's ranks (`ranks`: their ranks here, in the new group's order; this rank among
  // them), named uniquely in the job ("tp/0"). Only the members call it, each for every group it belongs to.
  std::unique_ptr<ProcessGroup> subgroup(const std::vector<int>& ranks, const std::string& name) const;
  // Numbers (token counts, metric sums) summed over ranks, in float64.
  std::vector<double> sum(const std::vector<double>& values);
  // Rank root's `value` on every rank, through the store (a run folder's name).
  std::string share(const std::string& key, const std::string& value, int root = 0);

 private:
  struct Impl;
  explicit ProcessGroup(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace swift::distributed
