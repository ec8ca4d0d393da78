// Parameters for LibTorch's fused AdamW kernel (at::_fused_adamw_), grouped by what one call of it takes: one weight
// decay, one epsilon, tensors of one device and dtype. AdamW puts every parameter through it; GaLore's AdamW the
// ones it does not project (with an epsilon per step count).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

namespace swift::train {

class FusedAdamWBatch {
 public:
  // `step`: the parameter's 1-element float32 step counter, as the kernel reads it for the bias corrections.
  void add(double weight_decay, double eps, const at::Tensor& param, const at::Tensor& grad, const at::Tensor& exp_avg,
           const at::Tensor& exp_avg_sq, const at::Tensor& step);
  // One kernel call per group. advance_steps: add 1 to the step counters first (PyTorch's order).
  void run(double lr, double beta1, double beta2, bool advance_steps);

 private:
  struct Group {
    std::vector<at::Tensor> params, grads, exp_avgs, exp_avg_sqs, steps;
  };
  std::map<std::tuple<double, double, int, int, int>, Group> groups_;  // (weight decay, eps, device, index, dtype)
};

}  // namespace swift::train
