// Dynamic loss scaling for float16 training (as torch.amp.GradScaler): the loss is multiplied by a large
// scale before backward so small gradients do not flush to zero in fp16; the gradients are divided back
// before clipping; a step whose gradients overflowed is skipped and the scale halved; after
// `growth_interval` clean steps the scale doubles.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace swift::train {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16, PyTorch's default
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {}, c10::Device device = c10::kCPU);

  at::Tensor scale(const at::Tensor& loss) const;  // loss * scale
  // Divides every defined gradient by the scale in place; true when any is inf or nan (skip the step).
  bool unscale(const std::vector<at::Tensor>& params);
  // ZeRO-2: each rank unscales only its own gradients; the overflow of any rank counts for all (set after
  // reducing unscale()'s results over the ranks, before update()).
  void set_overflow(bool overflow);
  // After the (possibly skipped) step: backs off after an overflow, grows after growth_interval clean steps.
  void update();

  double current_scale() const;
  // For checkpoints: [scale, growth_tracker] as fp32 / int32 tensors.
  at::Tensor scale_tensor() const { return scale_; }
  at::Tensor growth_tracker() const { return growth_tracker_; }
  void restore(const at::Tensor& scale, const at::Tensor& growth_tracker);

 private:
  GradScalerOptions options_;
  at::Tensor scale_;           // 1-element fp32
  at::Tensor growth_tracker_;  // 1-element int32: clean steps since the last change
  at::Tensor found_inf_;       // 1-element fp32, set by unscale()
};

}  // namespace swift::train
