// ZeRO-3 as the model sees it: each parameter's values are held by one rank, and a decoder layer's parameters
// are brought in around each use (its forward, its recomputation in backward) and freed after. The training loop
// installs an implementation (dist::Zero3Sharding); without one (inference, one process) nothing changes.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace swift::model {

class ParamSharding {
 public:
  virtual ~ParamSharding() = default;
  // Makes every tensor of `params` whole on this rank. A collective: every rank calls it with the same list.
  virtual void gather(const std::vector<at::Tensor>& params) = 0;
  // Frees the values this rank does not own.
  virtual void release(const std::vector<at::Tensor>& params) = 0;
  // Gradients of `params` just computed in backward: summed over the ranks into each parameter's owner. Returns
  // what to accumulate here for each (undefined where this rank does not own it). A collective.
  virtual std::vector<at::Tensor> reduce_gradients(const std::vector<at::Tensor>& params,
                                                    const std::vector<at::Tensor>& grads) = 0;
};

// Process-wide (one model trains per process); nullptr turns it off.
void set_param_sharding(ParamSharding* sharding);
ParamSharding* param_sharding();

}  // namespace swift::model
