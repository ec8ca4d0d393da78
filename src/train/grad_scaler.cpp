// Dynamic loss scaling (see grad_scaler.h), on LibTorch's AMP kernels.
#include "swift/train/grad_scaler.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace swift::train {

GradScaler::GradScaler(GradScalerOptions options, c10::Device device) : options_(options) {
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(device);
  scale_ = at::full({1}, options_.init_scale, f32);
  growth_tracker_ = at::zeros({1}, f32.dtype(at::kInt));
  found_inf_ = at::zeros({1}, f32);
}

at::Tensor GradScaler::scale(const at::Tensor& loss) const { return loss * scale_.to(loss.device()).squeeze(); }

bool GradScaler::unscale(const std::vector<at::Tensor>& params) {
  const at::NoGradGuard no_grad;
  found_inf_.zero_();
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (!grads.empty()) at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, scale_.reciprocal());
  return found_inf_.item<float>() != 0.0f;
}

void GradScaler::set_overflow(bool overflow) { found_inf_.fill_(overflow ? 1.0 : 0.0); }

void GradScaler::update() {
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, options_.growth_factor, options_.backoff_factor,
                         options_.growth_interval);
}

double GradScaler::current_scale() const { return scale_.item<double>(); }

void GradScaler::restore(const at::Tensor& scale, const at::Tensor& growth_tracker) {
  scale_.copy_(scale.reshape({1}));
  growth_tracker_.copy_(growth_tracker.reshape({1}));
}

}  // namespace swift::train
