// LLM.int8()'s weight storage (Dettmers et al. 2022), as bitsandbytes' Linear8bitLt keeps and transformers saves
// it: each output row scaled by its absolute maximum into int8 (CB = round(W * 127 / SCB), SCB = max |row|, the
// weight first cast to float16 as bitsandbytes does). Here the matmul dequantizes the row-scaled weight into the
// compute dtype (as bitsandbytes' backward does) instead of bitsandbytes' int8 matmul with outlier decomposition
// of the activations: the same weights, computed at least as precisely.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace swift::quant {

struct Int8Weight {
  at::Tensor CB;   // int8 [out, in]
  at::Tensor SCB;  // fp32 [out]: each row's absolute maximum
  int64_t bytes() const;
};

Int8Weight quantize_int8(const at::Tensor& weight);
at::Tensor dequantize_int8(const Int8Weight& weight, c10::ScalarType dtype);  // CB * SCB / 127

}  // namespace swift::quant
