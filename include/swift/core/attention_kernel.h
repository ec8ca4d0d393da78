// Which of LibTorch's scaled_dot_product_attention kernels the decoder's attention may use: ms-swift's
// --attn_impl (and the older --use_flash_attn / --use_flash_attention switches) mapped onto LibTorch's global
// SDPA switches. swift has no separate flash-attn package: LibTorch ships the flash, memory-efficient, cuDNN and
// math kernels and picks among the enabled ones per call (flash first where the inputs allow it).
#pragma once

#include <string>

namespace swift {

enum class AttentionKernel {
  kAuto,             // sdpa (default): every kernel enabled, LibTorch's own choice per call
  kFlash,            // flash_attn, flash_attention_2/3: flash, else memory-efficient, else math; no cuDNN
  kMemoryEfficient,  // memory_efficient: memory-efficient, else math
  kMath,             // eager / math: the unfused reference kernel only (debugging, exactness)
};

// --attn_impl's value ("" means sdpa). UsageError naming the flag and the accepted values otherwise.
AttentionKernel parse_attention_kernel(const std::string& attn_impl);
// --attn_impl with --use_flash_attn (given or not): the flash switch true means flash_attn; it contradicting an
// --attn_impl that names another kernel is a UsageError.
AttentionKernel resolve_attention_kernel(const std::string& attn_impl, bool use_flash_attn_given, bool use_flash_attn);

std::string attention_kernel_name(AttentionKernel kernel);
// What the choice means, for the log.
std::string attention_kernel_description(AttentionKernel kernel);

// Sets LibTorch's process-wide SDPA switches (every device: on the CPU, flash and memory-efficient mean LibTorch's
// fused CPU kernel, math the unfused one).
void use_attention_kernel(AttentionKernel kernel);

}  // namespace swift
