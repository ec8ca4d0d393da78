// The narrow interface to swift's CUDA kernels (compiled only when the build finds nvcc and a CUDA LibTorch:
// SWIFT_WITH_CUDA_KERNELS). Raw pointers and a cudaStream_t passed as void*, so neither side includes the other's
// headers and the CPU build never sees CUDA.
#pragma once

#include <cstdint>

namespace swift::quant::cuda {

enum class OutputType { kFloat32, kBFloat16, kFloat16 };

// out[i] = code[nibble i of packed] * absmax[i / blocksize] for i < n (the high nibble of each byte first), in
// `type`, on `stream`. All pointers are device memory; blocksize is even.
void dequantize_4bit(const uint8_t* packed, const float* absmax, const float* code, int64_t n, int64_t blocksize,
                     void* out, OutputType type, void* stream);

}  // namespace swift::quant::cuda
