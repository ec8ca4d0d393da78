// The gradient norm that clipping and the logs use: the L2 norm of all the parameters' gradients together (what
// clip_grad_norm_ measures). Sharded gradients add their squares over the ranks first (ParallelStrategy).
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace swift::distributed {

// Without clipping; parameters without a gradient count as zero.
double gradient_norm(const std::vector<at::Tensor>& params);
// Multiplies every defined gradient by `coefficient` in place.
void scale_gradients(const std::vector<at::Tensor>& params, double coefficient);

}  // namespace swift::distributed
