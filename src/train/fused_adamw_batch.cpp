// Grouped calls of the fused AdamW kernel (see fused_adamw_batch.h).
#include "swift/train/fused_adamw_batch.h"

#include <ATen/ATen.h>

namespace swift::train {

void FusedAdamWBatch::add(double weight_decay, double eps, const at::Tensor& param, const at::Tensor& grad,
                          const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq, const at::Tensor& step) {
  const auto device = param.device();
  auto& g = groups_[{weight_decay, eps, static_cast<int>(device.type()), device.index(),
                     static_cast<int>(param.scalar_type())}];
  g.params.push_back(param);
  g.grads.push_back(grad);
  g.exp_avgs.push_back(exp_avg);
  g.exp_avg_sqs.push_back(exp_avg_sq);
  g.steps.push_back(step);
}

void FusedAdamWBatch::run(double lr, double beta1, double beta2, bool advance_steps) {
  for (auto& [key, g] : groups_) {
    if (advance_steps) at::_foreach_add_(g.steps, 1.0);
    at::_fused_adamw_(g.params, g.grads, g.exp_avgs, g.exp_avg_sqs, /*max_exp_avg_sqs=*/{}, g.steps, lr, beta1, beta2,
                      /*weight_decay=*/std::get<0>(key), /*eps=*/std::get<1>(key), /*amsgrad=*/false,
                      /*maximize=*/false);
  }
}

}  // namespace swift::train
