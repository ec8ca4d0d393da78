// The LoRA branch of one Linear (see lora_linear.h).
#include "swift/tuners/lora_linear.h"

#include <ATen/ATen.h>

namespace swift::tuners {

LoraLinear::LoraLinear(model::LinearImpl& base, model::Linear a, model::Linear b, double scaling_in,
                       double dropout_in)
    : lora_A(base.register_module("lora_A", std::move(a))),
      lora_B(base.register_module("lora_B", std::move(b))),
      scaling(scaling_in),
      dropout(dropout_in) {}

at::Tensor LoraLinear::forward(model::LinearImpl& base, const at::Tensor& x) {
  auto y = at::linear(x, base.weight, base.bias);  // [..., out]
  auto h = x.to(lora_A->weight.scalar_type());
  if (dropout > 0 && base.is_training()) h = at::dropout(h, dropout, /*train=*/true);
  auto delta = at::linear(at::linear(h, lora_A->weight), lora_B->weight) * scaling;  // [..., out]
  return y + delta.to(y.scalar_type());
}

}  // namespace swift::tuners
