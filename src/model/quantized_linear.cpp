// The matmul of a quantized Linear (see quantized_weight.h).
#include "swift/model/quantized_weight.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include "swift/model/decoder.h"

namespace swift::model {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct WeightHolder : torch::CustomClassHolder {
  std::shared_ptr<QuantizedWeight> weight;
};

// x W^T in the compute dtype. Saves no activation and no dense weight: backward dequantizes again (bitsandbytes'
// MatMul4Bit does the same). (LibTorch's custom functions take no undefined inputs, so the bias is added outside.)
class QuantizedMatmul : public torch::autograd::Function<QuantizedMatmul> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const c10::intrusive_ptr<WeightHolder>& holder) {
    ctx->saved_data["weight"] = c10::IValue::make_capsule(holder);
    ctx->saved_data["input_dtype"] = static_cast<int64_t>(x.scalar_type());
    return at::linear(x.to(holder->weight->compute_dtype()), holder->weight->dequantize());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto holder = c10::static_intrusive_pointer_cast<WeightHolder>(ctx->saved_data["weight"].toCapsule());
    const auto input_dtype = static_cast<c10::ScalarType>(ctx->saved_data["input_dtype"].toInt());
    const at::Tensor& grad = grad_outputs.at(0);
    variable_list result(2);
    if (grad.defined() && ctx->needs_input_grad(0))
      result[0] = at::matmul(grad.to(holder->weight->compute_dtype()), holder->weight->dequantize()).to(input_dtype);
    return result;
  }
};

}  // namespace

at::Tensor quantized_linear(const at::Tensor& x, const std::shared_ptr<QuantizedWeight>& weight, const at::Tensor& bias) {
  auto holder = c10::make_intrusive<WeightHolder>();
  holder->weight = weight;
  at::Tensor y = QuantizedMatmul::apply(x, holder);
  if (bias.defined()) y = y + bias.to(y.scalar_type());
  return y.to(x.scalar_type());
}

std::pair<int64_t, int64_t> quantized_bytes(const CausalLM& model) {
  int64_t bytes = 0, layers = 0;
  for (const auto& module : model->modules()) {
    auto* linear = dynamic_cast<LinearImpl*>(module.get());
    if (linear && linear->quantized) {
      bytes += linear->quantized->bytes();
      ++layers;
    }
  }
  return {bytes, layers};
}

void move_quantized(CausalLM& model, c10::Device device) {
  for (const auto& module : model->modules()) {
    auto* linear = dynamic_cast<LinearImpl*>(module.get());
    if (linear && linear->quantized) linear->quantized->to(device);
  }
}

}  // namespace swift::model
