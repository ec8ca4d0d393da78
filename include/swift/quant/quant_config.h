// Which quantization a run uses, from ms-swift's flags (--quant_method bnb --quant_bits 4|8, --bnb_4bit_*) or from
// a Hugging Face folder's config.json "quantization_config" (transformers' BitsAndBytesConfig), and back to that
// JSON when swift writes a quantized folder.
#pragma once

#include <c10/core/ScalarType.h>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "swift/quant/bnb_4bit.h"

namespace swift::quant {

struct QuantConfig {
  int bits = 4;                                 // 4 (bitsandbytes 4-bit) or 8 (LLM.int8)
  FourBitOptions four_bit;                      // type, block size, double quantization, storage dtype
  // bnb_4bit_compute_dtype: the dtype dequantized weights compute in; unset: the model's dtype.
  std::optional<c10::ScalarType> compute_dtype;
  double llm_int8_threshold = 6.0;              // kept for the JSON; see int8_weight.h
  std::vector<std::string> skip_modules;        // llm_int8_skip_modules: module names left unquantized
};

// config.json's "quantization_config", when the folder was saved quantized with bitsandbytes; nullopt when there
// is none. Another quant_method (gptq, awq, ...) or an inconsistent config is a DataError naming `source`.
std::optional<QuantConfig> read_quantization_config(const nlohmann::json& config, const std::string& source);
// The "quantization_config" transformers writes for `config` (BitsAndBytesConfig.to_dict()).
nlohmann::json quantization_config_json(const QuantConfig& config);

// A dtype as config.json and bitsandbytes' quant_state write it (str(torch.dtype) without "torch."): bfloat16,
// float16, float32, uint8, int8 (anything else float32).
const char* dtype_json_name(c10::ScalarType t);

// "bfloat16" / "float16" / "float32" (also "torch.bfloat16", "bf16", ...) as in config.json; anything else a
// UsageError naming `where`.
c10::ScalarType parse_compute_dtype(const std::string& name, const std::string& where);

// True when a module of this name stays in full precision (its last name component or full name is listed).
bool skipped(const QuantConfig& config, const std::string& module_name);

}  // namespace swift::quant
