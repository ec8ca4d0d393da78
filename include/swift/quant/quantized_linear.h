// bitsandbytes-quantized Linear weights (model::QuantizedWeight) and putting them into a model: every Linear of
// the decoder layers (attention and MLP projections) is quantized, as transformers does with load_in_4bit /
// load_in_8bit; embeddings, norms and lm_head stay in full precision, and so do modules named in
// llm_int8_skip_modules.
#pragma once

#include <c10/core/Device.h>

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "swift/io/safetensors_folder.h"
#include "swift/model/decoder.h"
#include "swift/quant/bnb_4bit.h"
#include "swift/quant/int8_weight.h"
#include "swift/quant/quant_config.h"

namespace swift::quant {

class FourBitLinearWeight : public model::QuantizedWeight {
 public:
  FourBitLinearWeight(FourBitWeight weight, c10::ScalarType compute_dtype)
      : weight_(std::move(weight)), compute_(compute_dtype) {}
  at::Tensor dequantize() const override;
  at::Tensor dequantize(c10::ScalarType dtype) const override;
  c10::ScalarType compute_dtype() const override { return compute_; }
  std::vector<int64_t> shape() const override { return weight_.shape; }
  int64_t bytes() const override { return weight_.bytes(); }
  const char* kind() const override { return four_bit_type_name(weight_.type); }
  void to(c10::Device device) override;
  void append_tensors(const std::string& module_prefix, io::NamedTensors& out) const override;
  const FourBitWeight& weight() const { return weight_; }

 private:
  FourBitWeight weight_;
  c10::ScalarType compute_;
};

class Int8LinearWeight : public model::QuantizedWeight {
 public:
  Int8LinearWeight(Int8Weight weight, c10::ScalarType compute_dtype) : weight_(std::move(weight)), compute_(compute_dtype) {}
  at::Tensor dequantize() const override { return dequantize_int8(weight_, compute_); }
  at::Tensor dequantize(c10::ScalarType dtype) const override { return dequantize_int8(weight_, dtype); }
  c10::ScalarType compute_dtype() const override { return compute_; }
  std::vector<int64_t> shape() const override { return weight_.CB.sizes().vec(); }
  int64_t bytes() const override { return weight_.bytes(); }
  const char* kind() const override { return "int8"; }
  void to(c10::Device device) override;
  void append_tensors(const std::string& module_prefix, io::NamedTensors& out) const override;
  const Int8Weight& weight() const { return weight_; }

 private:
  Int8Weight weight_;
  c10::ScalarType compute_;
};

// Quantizes `weight` (in its own dtype, on its device) as `config` says.
std::shared_ptr<model::QuantizedWeight> quantize_weight(const at::Tensor& weight, const QuantConfig& config);

// The decoder layers' Linear modules that `config` quantizes, with their module names
// ("model.layers.0.self_attn.q_proj").
std::vector<std::pair<std::string, model::LinearImpl*>> quantizable_linears(model::CausalLM& model, const QuantConfig& config);

// Quantizes those layers of a model in memory (freshly initialised ones; loading quantizes on the way in).
void quantize_model(model::CausalLM& model, const QuantConfig& config);

// Fills the quantizable layers from a folder: quantizing each weight as it is read (`prequantized` false), or
// taking the saved bitsandbytes tensors as they are (a folder whose config.json has a quantization_config).
// Adds every key it consumed to `used`. Weights are quantized on `device`.
void load_quantized_linears(model::CausalLM& model, const io::SafetensorsFolder& folder, const QuantConfig& config,
                            bool prequantized, c10::Device device, const std::string& source, std::set<std::string>& used);

// Turns every quantized layer back into a dense one (its dequantized values in the model's dtype).
int64_t dequantize_model(model::CausalLM& model);


}  // namespace swift::quant
