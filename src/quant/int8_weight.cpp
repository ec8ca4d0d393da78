// LLM.int8() weight storage (see the header).
#include "swift/quant/int8_weight.h"

#include <ATen/ATen.h>

#include "swift/core/error.h"

namespace swift::quant {

int64_t Int8Weight::bytes() const {
  return CB.numel() * static_cast<int64_t>(CB.element_size()) + SCB.numel() * static_cast<int64_t>(SCB.element_size());
}

Int8Weight quantize_int8(const at::Tensor& weight) {
  SWIFT_CHECK(weight.dim() == 2 && at::isFloatingType(weight.scalar_type()), UsageError,
              "8-bit quantization needs a 2-D floating-point weight", "quantize the decoder's linear layers only");
  const at::Tensor w = weight.to(at::kHalf);
  Int8Weight q;
  q.SCB = w.abs().amax(1).to(at::kFloat);                      // [out]
  // fp16 x fp32 -> fp32, rounded half to even, as bitsandbytes; an all-zero row stays zero (not 0 x inf).
  const at::Tensor divisor = at::where(q.SCB == 0, at::ones_like(q.SCB), q.SCB);
  // Python's 127.0 / t is t.reciprocal() * 127 (C++'s Scalar / Tensor divides, which rounds differently).
  q.CB = at::round(w * (divisor.reciprocal() * 127.0).unsqueeze(1)).to(at::kChar);
  return q;
}

at::Tensor dequantize_int8(const Int8Weight& weight, c10::ScalarType dtype) {
  // As bitsandbytes' int8_vectorwise_dequant: times the row maximum, then times 1/127.
  return (weight.CB.to(at::kFloat) * weight.SCB.unsqueeze(1) * 7.874015718698502e-3).to(dtype);
}

}  // namespace swift::quant
