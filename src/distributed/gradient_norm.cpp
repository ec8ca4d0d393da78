// The norm of all gradients together (see gradient_norm.h).
#include "swift/distributed/gradient_norm.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace swift::distributed {

double gradient_norm(const std::vector<at::Tensor>& params) {
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return 0.0;
  return at::linalg_vector_norm(at::stack(at::_foreach_norm(grads)), 2).item<double>();
}

void scale_gradients(const std::vector<at::Tensor>& params, double coefficient) {
  at::NoGradGuard no_grad;
  for (const auto& p : params)
    if (p.grad().defined()) p.mutable_grad().mul_(coefficient);
}

}  // namespace swift::distributed
