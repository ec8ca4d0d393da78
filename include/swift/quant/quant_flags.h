// ms-swift's quantization flags (--quant_method bnb --quant_bits 4|8 and bitsandbytes' --bnb_4bit_* knobs), shared
// by sft / pt (QLoRA), infer, deploy and export.
#pragma once

#include <optional>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/quant/quant_config.h"

namespace swift::quant {

std::vector<cli::FlagSpec> quant_flags();

// The quantization the flags ask for, or nullopt (no --quant_method / --quant_bits). Without
// --bnb_4bit_compute_dtype the weights compute in the dtype the model loads in (as ms-swift: torch_dtype).
// Unsupported methods or bit widths and bad bnb_4bit values are UsageErrors naming the flag.
// `default_bits`: the bit width when neither --quant_method nor --quant_bits is given (4 for --train_type qlora).
std::optional<quant::QuantConfig> quant_config_from_flags(const cli::Flags& flags, int default_bits = 0);

// The quantization a training run used, from its args.json (ours or ms-swift's: quant_method, quant_bits,
// bnb_4bit_*; train_type qlora without them means 4-bit), so infer / deploy / export load an adapter's base as it was
// trained. nullopt when it was not quantized.
std::optional<quant::QuantConfig> quant_config_from_args(const nlohmann::json& args);

// Flags first (any --quant_* given), else the adapter's args.json.
std::optional<quant::QuantConfig> quant_config_for(const cli::Flags& flags, const nlohmann::json& args);



}  // namespace swift::quant
