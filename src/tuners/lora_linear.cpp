// The LoRA branch of one Linear, plain or DoRA (see lora_linear.h).
#include "swift/tuners/lora_linear.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "swift/core/error.h"
#include "swift/model/tensor_parallel.h"

namespace swift::tuners {

LoraLinear::LoraLinear(model::LinearImpl& base, model::Linear a, model::Linear b, double scaling_in,
                       double dropout_in, const at::Tensor& magnitude_in)
    : lora_A(base.register_module("lora_A", std::move(a))),
      lora_B(base.register_module("lora_B", std::move(b))),
      scaling(scaling_in),
      dropout(dropout_in) {
  if (magnitude_in.defined()) magnitude = base.register_parameter("lora_magnitude_vector", magnitude_in);
}

at::Tensor LoraLinear::adapted_weight(const at::Tensor& weight) const {
  const auto dtype = weight.scalar_type();
  return weight + scaling * at::matmul(lora_B->weight.to(dtype), lora_A->weight.to(dtype));
}

namespace {
// The DoRA paper (section 4.3) and PEFT treat the norm as a constant in backward: no graph is recorded.
at::Tensor row_norm_without_grad(const LoraLinear& lora, const model::LinearImpl& base, const at::Tensor& weight) {
  at::NoGradGuard no_grad;
  const at::Tensor adapted = lora.adapted_weight(weight);
  if (base.tp_role != model::TensorParallelRole::kRow) return at::linalg_vector_norm(adapted, 2, {1});  // [out]
  // Split by its input over the tensor-parallel group: this rank holds some columns of every row, so the rows'
  // squares are summed over the group.
  at::Tensor squares = adapted.pow(2).sum(1);
  base.tp_comm->all_reduce_sum(squares);
  return squares.sqrt();
}
}  // namespace

at::Tensor LoraLinear::weight_norm(const model::LinearImpl& base, c10::ScalarType dtype) const {
  return row_norm_without_grad(*this, base, base.dense_weight(dtype));
}

at::Tensor LoraLinear::forward(model::LinearImpl& base, const at::Tensor& x) {
  auto y = base.base_forward(x);  // [..., out] (dequantizing a QLoRA base)
  auto h = x.to(lora_A->weight.scalar_type());
  const bool dropped = dropout > 0 && base.is_training();
  if (dropped) h = at::dropout(h, dropout, /*train=*/true);
  auto lora = at::linear(at::linear(h, lora_A->weight), lora_B->weight);  // [..., out]
  if (!use_dora()) {
    // Same dtype (fp32, or under autocast): scale and add in one pass, into y. In place is safe: the base
    // matmul does not keep its output for backward.
    if (lora.scalar_type() == y.scalar_type()) return y.add_(lora, scaling);
    return y + (lora * scaling).to(y.scalar_type());
  }
  const at::Tensor w = base.dense_weight(h.scalar_type());  // once: for the norm and, with dropout, x' W^T
  auto scale = magnitude / row_norm_without_grad(*this, base, w);  // [out]
  // x W^T, the part of the base output DoRA rescales. Without dropout it is the base output less its bias (PEFT
  // reuses it rather than recomputing); with dropout PEFT recomputes it from the dropped input, in the branch's
  // dtype, so the rescaled base term sees the same x' as the LoRA term while y keeps the full x.
  at::Tensor xw;
  if (dropped) xw = at::linear(h, w);
  else xw = base.bias.defined() ? y - base.bias : y;
  auto dora = (scale - 1) * xw + scale * lora * scaling;  // [..., out], promoted to the wider dtype
  return (y + dora).to(y.scalar_type());
}

void LoraLinear::split_for_tensor_parallel(model::TensorParallelRole role, model::TensorParallelComm& comm,
                                           const std::string& prefix, model::TensorParallelSplit& split) {
  if (role == model::TensorParallelRole::kColumnReplicated) {  // whole on every rank, each with its heads' part
    split.partial_gradients.push_back(lora_A->weight);
    split.partial_gradients.push_back(lora_B->weight);
    if (use_dora()) split.partial_gradients.push_back(magnitude);
    return;
  }
  if (role == model::TensorParallelRole::kColumn) {
    split.sharded.push_back(model::keep_tensor_parallel_slice(prefix + ".lora_B.weight", lora_B->weight, 0, comm));
    if (use_dora())
      split.sharded.push_back(model::keep_tensor_parallel_slice(prefix + ".lora_magnitude_vector", magnitude, 0, comm));
    split.partial_gradients.push_back(lora_A->weight);
    return;
  }
  // Split by its input: A's columns here, B whole. Each rank's output is a partial sum, DoRA's rescaling included
  // (it is linear in x W^T and the LoRA term once the whole rows' norm is known), so B's and the magnitude's
  // gradients are partial.
  split.sharded.push_back(model::keep_tensor_parallel_slice(prefix + ".lora_A.weight", lora_A->weight, 1, comm));
  split.partial_gradients.push_back(lora_B->weight);
  if (use_dora()) split.partial_gradients.push_back(magnitude);
}

}  // namespace swift::tuners
