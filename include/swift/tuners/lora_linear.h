// The LoRA branch of one Linear: y = base(x) + lora_B(lora_A(dropout(x))) * scaling, as PEFT's lora.Linear.
#pragma once

#include "swift/model/decoder.h"

namespace swift::tuners {

class LoraLinear : public model::LinearAdapter {
 public:
  // lora_A [r, in] and lora_B [out, r] are registered on `base` as its "lora_A"/"lora_B" submodules.
  LoraLinear(model::LinearImpl& base, model::Linear lora_A, model::Linear lora_B, double scaling, double dropout);
  // x: [..., in] -> [..., out]. The branch runs in the LoRA weights' dtype and is cast back to the base
  // output's dtype; dropout only while the base layer is in training mode.
  at::Tensor forward(model::LinearImpl& base, const at::Tensor& x) override;

  model::Linear lora_A, lora_B;
  double scaling;
  double dropout;
};

}  // namespace swift::tuners
