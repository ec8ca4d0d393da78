// --attn_impl onto LibTorch's SDPA switches (see attention_kernel.h).
#include "swift/core/attention_kernel.h"

#include <ATen/Context.h>

#include "swift/core/error.h"

namespace swift {

AttentionKernel parse_attention_kernel(const std::string& attn_impl) {
  if (attn_impl.empty() || attn_impl == "sdpa" || attn_impl == "auto") return AttentionKernel::kAuto;
  if (attn_impl == "flash_attn" || attn_impl == "flash_attention_2" || attn_impl == "flash_attention_3" ||
      attn_impl == "flash" || attn_impl == "flash_attention")
    return AttentionKernel::kFlash;
  if (attn_impl == "memory_efficient" || attn_impl == "efficient") return AttentionKernel::kMemoryEfficient;
  if (attn_impl == "eager" || attn_impl == "math") return AttentionKernel::kMath;
  throw UsageError("--attn_impl " + attn_impl + " is not an attention implementation swift has",
                   "use sdpa (default), flash_attn (also flash_attention_2/3), memory_efficient, or eager");
}

AttentionKernel resolve_attention_kernel(const std::string& attn_impl, bool use_flash_attn_given, bool use_flash_attn) {
  const AttentionKernel named = parse_attention_kernel(attn_impl);
  if (!use_flash_attn_given) return named;
  if (use_flash_attn) {
    SWIFT_CHECK(attn_impl.empty() || named == AttentionKernel::kFlash, UsageError,
                "--use_flash_attn true contradicts --attn_impl " + attn_impl, "give one of them");
    return AttentionKernel::kFlash;
  }
  // false: transformers' default attention (sdpa), unless --attn_impl names one.
  SWIFT_CHECK(named != AttentionKernel::kFlash, UsageError, "--use_flash_attn false contradicts --attn_impl " + attn_impl,
              "give one of them");
  return named;
}

std::string attention_kernel_name(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kAuto: return "sdpa";
    case AttentionKernel::kFlash: return "flash_attn";
    case AttentionKernel::kMemoryEfficient: return "memory_efficient";
    case AttentionKernel::kMath: return "eager";
  }
  return "sdpa";
}

std::string attention_kernel_description(AttentionKernel kernel) {
  switch (kernel) {
    case AttentionKernel::kAuto: return "LibTorch's scaled_dot_product_attention, every kernel enabled";
    case AttentionKernel::kFlash:
      return "LibTorch's flash attention kernel (on CUDA: batches with a padding or packing mask use the "
             "memory-efficient kernel, math only where neither takes the inputs; cuDNN off)";
    case AttentionKernel::kMemoryEfficient:
      return "LibTorch's memory-efficient attention kernel (math only where it cannot take the inputs)";
    case AttentionKernel::kMath: return "LibTorch's unfused math attention (every score materialised)";
  }
  return "";
}

void use_attention_kernel(AttentionKernel kernel) {
  auto& ctx = at::globalContext();
  const bool all = kernel == AttentionKernel::kAuto;
  ctx.setSDPUseFlash(all || kernel == AttentionKernel::kFlash);
  ctx.setSDPUseMemEfficient(all || kernel == AttentionKernel::kFlash || kernel == AttentionKernel::kMemoryEfficient);
  ctx.setSDPUseCuDNN(all);
  ctx.setSDPUseMath(true);  // the fallback every choice keeps: a kernel error would stop a run mid-way
}

}  // namespace swift
