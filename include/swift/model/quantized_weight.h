// A frozen Linear weight kept compressed (bitsandbytes 4-bit or 8-bit, see swift/quant): the Linear holds only
// this, no full-precision copy, and every use dequantizes it into the compute dtype. quantized_linear is the
// matmul: it keeps nothing for backward but the compressed weight (dequantized again there) and gives a gradient
// to the input (for LoRA on top) and to a trainable bias, never to the weight.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace swift::model {

class QuantizedWeight {
 public:
  virtual ~QuantizedWeight() = default;
  // [out, in] in compute_dtype(), on the weight's device (what the matmul uses).
  virtual at::Tensor dequantize() const = 0;
  // [out, in] in `dtype` straight from the stored values (merging, dequantizing a model): no detour through a
  // narrower compute dtype.
  virtual at::Tensor dequantize(c10::ScalarType dtype) const = 0;
  virtual c10::ScalarType compute_dtype() const = 0;
  virtual std::vector<int64_t> shape() const = 0;
  virtual int64_t bytes() const = 0;  // packed values and statistics
  virtual const char* kind() const = 0;  // "nf4", "fp4", "int8"
  virtual void to(c10::Device device) = 0;
  // The tensors a saved folder holds for the module (transformers' keys), under `module_prefix` ("...q_proj.").
  virtual void append_tensors(const std::string& module_prefix,
                              std::vector<std::pair<std::string, at::Tensor>>& out) const = 0;
};

// y = x W^T + b with W = weight.dequantize(); x and b are cast to the compute dtype and y back to x's dtype (as
// bitsandbytes' Linear4bit).
at::Tensor quantized_linear(const at::Tensor& x, const std::shared_ptr<QuantizedWeight>& weight, const at::Tensor& bias);

}  // namespace swift::model
