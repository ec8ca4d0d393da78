// ZeRO-3 as the model sees it: each parameter's values are held by one rank, and a decoder layer's parameters
// are brought in around each use (its forward, its recomputation in backward) and freed after. The training loop
// installs an implementation (distributed::Zero3Sharding); without one (inference, one process) nothing changes.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/TensorOptions.h>

#include <vector>

namespace swift::model {

class ParamSharding {
 public:
  virtual ~ParamSharding() = default;
  // Makes every tensor of `params` whole on this rank. A collective: every rank calls it with the same list.
  virtual void gather(const std::vector<at::Tensor>& params) = 0;
  // Frees the values this rank does not own.
  virtual void release(const std::vector<at::Tensor>& params) = 0;
  // Gradients of `params` just computed in backward: summed over the ranks and accumulated into the owner's
  // .grad right away (not left to autograd, which would accumulate after release(), when an owner's values may
  // rest in CPU RAM while the gradient is on the GPU). A collective.
  virtual void reduce_gradients(const std::vector<at::Tensor>& params, const std::vector<at::Tensor>& grads) = 0;
  // Whether the model gathers `p` around each operation that uses it (sharded_ops.h: the embedding, the LM head)
  // rather than the caller around a larger span.
  virtual bool gathers_around_use(const at::Tensor& p) const = 0;
};

// Process-wide (one model trains per process); nullptr turns it off.
void set_param_sharding(ParamSharding* sharding);
ParamSharding* param_sharding();

// A parameter a rank loads without its values (ZeRO-3 loading, LoadOptions::placement): the full shape over
// one element of storage, so everything that reads shapes (LoRA, the partition, memory estimates) sees the real
// model while the values stay with their owner. Reading one gives nothing meaningful; writing to one fails.
at::Tensor shape_only(at::IntArrayRef shape, const at::TensorOptions& options);
// False for a shape-only tensor (and any tensor whose storage cannot hold all its elements).
bool holds_values(const at::Tensor& t);

// Fresh (uninitialised) tensors shaped and typed like `like`, packed into one allocation per dtype with
// `options`' device and pinning: offload_param's homes in pinned CPU RAM, whose allocator rounds every request up
// to a power of two and keeps it, so one buffer instead of one per parameter.
std::vector<at::Tensor> packed_like(const std::vector<at::Tensor>& like, const at::TensorOptions& options);

}  // namespace swift::model
