// --merge_lora true (Megatron-SWIFT's default for LoRA with --save_safetensors true): beside each LoRA checkpoint
// (a PEFT adapter), a Hugging Face folder of the base model with the adapter folded in, as ms-swift writes
// checkpoint-N-merged. Rank 0 reads the base again from its folder on the CPU, applies the checkpoint's adapter and
// merges it (as `swift export --adapters checkpoint-N --merge_lora true`), so the training weights are never
// touched; it costs a second copy of the base in host memory while it writes, and the other ranks wait for it at
// their next collective (a large model on a slow disk may need a longer --ddp_timeout).
#pragma once

#include <c10/core/ScalarType.h>

#include <filesystem>
#include <optional>

#include "swift/quant/quant_config.h"

namespace swift::train {

// checkpoint-N -> checkpoint-N-merged.
std::filesystem::path merged_checkpoint_dir(const std::filesystem::path& checkpoint);

// The base at `model_dir` (loaded quantized as `base_quantization` says, for QLoRA, then dense) with the adapter in
// `adapter_dir` merged, written to `out` in `dtype` (default the base's; atomically, with the files a model folder
// carries).
void write_merged_checkpoint(const std::filesystem::path& adapter_dir, const std::filesystem::path& model_dir,
                             const std::optional<quant::QuantConfig>& base_quantization,
                             std::optional<c10::ScalarType> dtype, const std::filesystem::path& out);

}  // namespace swift::train
