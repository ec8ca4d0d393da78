// LibTorch's side of the CUDA dequantization kernel: tensors in, the current stream, the output tensor out.
// Compiled only with SWIFT_WITH_CUDA_KERNELS (it includes c10's CUDA headers, which need the toolkit's).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "swift/core/error.h"
#include "swift/quant/cuda_dequantize.h"
#include "swift/quant/dequantize_cuda_tensor.h"

namespace swift::quant {

at::Tensor dequantize_4bit_cuda(const at::Tensor& packed, const at::Tensor& absmax, const at::Tensor& code,
                                int64_t blocksize, int64_t n, c10::ScalarType dtype) {
  SWIFT_ASSERT(packed.is_cuda() && packed.scalar_type() == at::kByte && packed.is_contiguous(), "packed CUDA bytes");
  SWIFT_ASSERT(blocksize % 2 == 0, "an even block size");
  const c10::cuda::CUDAGuard guard(packed.device());
  const at::Tensor scale = absmax.to(packed.device(), at::kFloat).contiguous();
  const at::Tensor table = code.to(packed.device(), at::kFloat).contiguous();
  const auto type = dtype == at::kBFloat16 ? cuda::OutputType::kBFloat16
                    : dtype == at::kHalf   ? cuda::OutputType::kFloat16
                                           : cuda::OutputType::kFloat32;
  at::Tensor out = at::empty({n}, packed.options().dtype(type == cuda::OutputType::kFloat32 ? at::kFloat : dtype));
  cuda::dequantize_4bit(packed.data_ptr<uint8_t>(), scale.data_ptr<float>(), table.data_ptr<float>(), n, blocksize,
                        out.data_ptr(), type, c10::cuda::getCurrentCUDAStream(packed.device().index()).stream());
  return out;
}

}  // namespace swift::quant
