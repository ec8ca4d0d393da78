// The fused 4-bit dequantization kernel (see include/swift/quant/cuda_dequantize.h): one thread per packed byte
// reads it once, looks both nibbles up in the 16-entry code table (in shared memory), scales them by their block's
// maximum and writes the two values in the output dtype. No LibTorch headers: the caller passes raw pointers and
// the stream.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "swift/quant/cuda_dequantize.h"

namespace swift::quant::cuda {

namespace {

template <typename T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) { return v; }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <>
__device__ __half from_float<__half>(float v) { return __float2half_rn(v); }

template <typename T>
__global__ void dequantize_4bit_kernel(const uint8_t* __restrict__ packed, const float* __restrict__ absmax,
                                       const float* __restrict__ code, int64_t n, int64_t blocksize,
                                       T* __restrict__ out) {
  __shared__ float table[16];
  if (threadIdx.x < 16) table[threadIdx.x] = code[threadIdx.x];
  __syncthreads();
  const int64_t bytes = (n + 1) / 2;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < bytes;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint8_t byte = packed[i];
    const int64_t first = 2 * i;
    // Same products as the reference: code * absmax in fp32 (blocks are even-sized, so a byte never straddles two).
    out[first] = from_float<T>(table[byte >> 4] * absmax[first / blocksize]);
    if (first + 1 < n) out[first + 1] = from_float<T>(table[byte & 15] * absmax[(first + 1) / blocksize]);
  }
}

template <typename T>
void launch(const uint8_t* packed, const float* absmax, const float* code, int64_t n, int64_t blocksize, void* out,
            cudaStream_t stream) {
  if (n == 0) return;
  const int threads = 256;
  const int64_t bytes = (n + 1) / 2;
  const int blocks = static_cast<int>(std::min<int64_t>((bytes + threads - 1) / threads, 65535LL * 8));
  dequantize_4bit_kernel<T><<<blocks, threads, 0, stream>>>(packed, absmax, code, n, blocksize, static_cast<T*>(out));
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) throw std::runtime_error(std::string("4-bit dequantization kernel: ") + cudaGetErrorString(err));
}

}  // namespace

void dequantize_4bit(const uint8_t* packed, const float* absmax, const float* code, int64_t n, int64_t blocksize,
                     void* out, OutputType type, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case OutputType::kFloat32: return launch<float>(packed, absmax, code, n, blocksize, out, s);
    case OutputType::kBFloat16: return launch<__nv_bfloat16>(packed, absmax, code, n, blocksize, out, s);
    case OutputType::kFloat16: return launch<__half>(packed, absmax, code, n, blocksize, out, s);
  }
}

}  // namespace swift::quant::cuda
