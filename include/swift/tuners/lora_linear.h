// The LoRA branch of one Linear: y = base(x) + lora_B(lora_A(dropout(x))) * scaling, as PEFT's lora.Linear; with
// DoRA (Liu et al. 2024, PEFT's use_dora) the adapted weight W + scaling * B A is also rescaled row by row to a
// trained magnitude.
#pragma once

#include "swift/model/decoder.h"

namespace swift::tuners {

class LoraLinear : public model::LinearAdapter {
 public:
  // lora_A [r, in] and lora_B [out, r] are registered on `base` as its "lora_A"/"lora_B" submodules. A defined
  // `magnitude` [out] turns on DoRA and is registered on `base` as the trainable parameter "lora_magnitude_vector"
  // (PEFT's file key, so q_proj.lora_magnitude_vector is the in-memory and the saved name alike).
  LoraLinear(model::LinearImpl& base, model::Linear lora_A, model::Linear lora_B, double scaling, double dropout,
             const at::Tensor& magnitude = {});
  // x: [..., in] -> [..., out]. The branch runs in the LoRA weights' dtype and is cast back to the base
  // output's dtype; dropout only while the base layer is in training mode.
  // DoRA, as PEFT computes it: y = base(x) + (m/n - 1) * x' W^T + (m/n) * scaling * B A x', with m the magnitude,
  // n = ||W + scaling * B A|| per output row (detached: no gradient flows through it), x' = dropout(x) in training
  // with dropout > 0 and x otherwise (then x W^T is the base output minus its bias, not recomputed). The bias is
  // never rescaled.
  at::Tensor forward(model::LinearImpl& base, const at::Tensor& x) override;
  // Column-split layer: B's rows (and DoRA's magnitude) split with the layer's, A whole on every rank with a partial
  // gradient. Row-split layer: A's columns split, B (and DoRA's magnitude) whole with a partial gradient; DoRA's
  // row norms there sum their squares over the group.
  void split_for_tensor_parallel(model::TensorParallelRole role, model::TensorParallelComm& comm,
                                 const std::string& prefix, model::TensorParallelSplit& split) override;

  bool use_dora() const { return magnitude.defined(); }
  // W + scaling * B A [out, in] in the dtype of `weight` (the base weight, already cast): A and B are cast to it
  // before the product. Used for DoRA's norm, its initial magnitude and merging.
  at::Tensor adapted_weight(const at::Tensor& weight) const;
  // ||W + scaling * B A|| over each output row: [out] in `dtype`, without autograd history.
  at::Tensor weight_norm(const model::LinearImpl& base, c10::ScalarType dtype) const;

  model::Linear lora_A, lora_B;
  at::Tensor magnitude;  // [out], DoRA's lora_magnitude_vector; undefined for plain LoRA
  double scaling;
  double dropout;
};

}  // namespace swift::tuners
