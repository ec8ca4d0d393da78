// The 4-bit dequantization on CUDA tensors through swift's kernel (src/quant/cuda/dequantize_4bit.cu); exists
// only in builds with SWIFT_WITH_CUDA_KERNELS. [n] values in `dtype` (float32, bfloat16 or float16; others
// come back in float32).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>

namespace swift::quant {

at::Tensor dequantize_4bit_cuda(const at::Tensor& packed, const at::Tensor& absmax, const at::Tensor& code,
                                int64_t blocksize, int64_t n, c10::ScalarType dtype);

}  // namespace swift::quant
