// Loading a model whose decoder layers' Linear weights are held in bitsandbytes' formats: quantized as they are read
// (--quant_method bnb, QLoRA), or a folder saved quantized (a *-bnb-4bit folder) taken as it is. The model area
// loads through the model::LinearQuantizer this passes in; callers that may meet quantized folders load here.
#pragma once

#include <filesystem>
#include <optional>

#include "swift/model/checkpoint.h"
#include "swift/quant/quant_config.h"

namespace swift::quant {

// model::load_model, quantized: a folder whose config.json has a quantization_config loads as it was saved,
// whatever `quantize` says (the log says so when both are given); otherwise `quantize` (if any) quantizes each
// weight on the way in. Without --bnb_4bit_compute_dtype the weights compute in the load dtype. Sets
// options.quantizer, so the same options load another copy alike.
model::CausalLM load_model(const std::filesystem::path& dir, model::LoadOptions& options,
                           const std::optional<QuantConfig>& quantize);

}  // namespace swift::quant
