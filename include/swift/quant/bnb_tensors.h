// The tensors transformers saves for a bitsandbytes layer (Linear4bit / Linear8bitLt state dicts), so folders
// swift writes load in transformers and the popular "*-bnb-4bit" folders load here:
//   4-bit, under the weight's key W: W (the packed bytes), W.absmax, W.quant_map, and with double quantization
//     W.nested_absmax, W.nested_quant_map; W.quant_state.bitsandbytes__nf4|fp4 is the rest as UTF-8 JSON bytes
//     ({"quant_type", "blocksize", "dtype", "shape", "nested_blocksize", "nested_dtype", "nested_offset"}).
//   8-bit, under the module prefix P: P.weight (int8), P.SCB (fp32 row maxima), P.weight_format (uint8 0 = row).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>

#include "swift/io/safetensors.h"
#include "swift/quant/bnb_4bit.h"
#include "swift/quant/int8_weight.h"

namespace swift::quant {

// Looks a tensor up by its full key; returns an undefined tensor when absent.
using TensorLookup = std::function<at::Tensor(const std::string&)>;

void append_four_bit_tensors(const std::string& weight_key, const FourBitWeight& weight, io::NamedTensors& out);
// `source` names the folder in errors (missing statistics, a state that does not fit the packed bytes).
FourBitWeight four_bit_from_tensors(const std::string& weight_key, const TensorLookup& lookup, const std::string& source);

void append_int8_tensors(const std::string& module_prefix, const Int8Weight& weight, io::NamedTensors& out);
Int8Weight int8_from_tensors(const std::string& module_prefix, const TensorLookup& lookup, const std::string& source);

// True for the extra keys above (they belong to a quantized layer's weight, not to parameters of their own).
bool is_quant_state_key(const std::string& key);

}  // namespace swift::quant
