// bitsandbytes-quantized Linear weights in a model (see the header).
#include "swift/quant/quantized_linear.h"

#include <ATen/ATen.h>
#include <torch/nn/modules/container/modulelist.h>

#include "swift/core/error.h"
#include "swift/model/moe.h"
#include "swift/quant/bnb_tensors.h"

namespace swift::quant {

at::Tensor FourBitLinearWeight::dequantize() const {
  // As bitsandbytes' matmul: dequantized into the weight's original dtype, then cast to the compute dtype.
  return dequantize_4bit(weight_, weight_.dtype).to(compute_);
}

at::Tensor FourBitLinearWeight::dequantize(c10::ScalarType dtype) const {
  // The values the matmul starts from (the weight's original dtype, as PEFT merges), then `dtype`.
  return dequantize_4bit(weight_, weight_.dtype).to(dtype);
}

void FourBitLinearWeight::to(c10::Device device) {
  for (at::Tensor* t : {&weight_.packed, &weight_.absmax, &weight_.code, &weight_.nested_absmax, &weight_.nested_code})
    if (t->defined()) *t = t->to(device);
}

void FourBitLinearWeight::append_tensors(const std::string& module_prefix, io::NamedTensors& out) const {
  append_four_bit_tensors(module_prefix + "weight", weight_, out);
}

void Int8LinearWeight::to(c10::Device device) {
  weight_.CB = weight_.CB.to(device);
  weight_.SCB = weight_.SCB.to(device);
}

void Int8LinearWeight::append_tensors(const std::string& module_prefix, io::NamedTensors& out) const {
  append_int8_tensors(module_prefix, weight_, out);
}

std::shared_ptr<model::QuantizedWeight> quantize_weight(const at::Tensor& weight, const QuantConfig& config) {
  at::NoGradGuard no_grad;
  const auto compute = config.compute_dtype.value_or(weight.scalar_type());
  if (config.bits == 8) return std::make_shared<Int8LinearWeight>(quantize_int8(weight), compute);
  SWIFT_ASSERT(config.bits == 4, "4-bit or 8-bit");
  return std::make_shared<FourBitLinearWeight>(quantize_4bit(weight, config.four_bit), compute);
}

std::vector<std::pair<std::string, model::LinearImpl*>> quantizable_linears(model::CausalLM& model,
                                                                             const QuantConfig& config) {
  std::vector<std::pair<std::string, model::LinearImpl*>> out;
  for (const auto& item : model->model->layers->named_modules("model.layers")) {
    auto* linear = dynamic_cast<model::LinearImpl*>(item.value().get());
    // A mixture-of-experts router stays dense, as bitsandbytes (which quantizes nn.Linear only) leaves it.
    if (linear == nullptr || skipped(config, item.key()) || model::is_router(item.key())) continue;
    out.emplace_back(item.key(), linear);
  }
  return out;
}

void quantize_model(model::CausalLM& model, const QuantConfig& config) {
  for (auto& [name, linear] : quantizable_linears(model, config))
    if (!linear->quantized) linear->set_quantized(quantize_weight(linear->weight, config));
}

void load_quantized_linears(model::CausalLM& model, const io::SafetensorsFolder& folder, const QuantConfig& config,
                            bool prequantized, c10::Device device, const std::string& source,
                            std::set<std::string>& used) {
  const auto dtype = model->dtype();
  const TensorLookup lookup = [&](const std::string& key) {
    return folder.contains(key) ? folder.get(key).to(device) : at::Tensor();
  };
  for (auto& [name, linear] : quantizable_linears(model, config)) {
    const std::string prefix = name + ".";
    const std::string key = prefix + "weight";
    if (!folder.contains(key)) continue;  // reported as missing by the caller
    std::shared_ptr<model::QuantizedWeight> q;
    if (prequantized && config.bits == 4) {
      FourBitWeight w = four_bit_from_tensors(key, lookup, source);
      const std::vector<int64_t> expected{linear->out_features(), linear->in_features()};
      SWIFT_CHECK(w.shape == expected, DataError,
                  source + ": " + key + " was quantized from a weight of another shape than config.json gives",
                  "is this the right folder, with a matching config.json?");
      q = std::make_shared<FourBitLinearWeight>(std::move(w), config.compute_dtype.value_or(dtype));
    } else if (prequantized) {
      Int8Weight w = int8_from_tensors(prefix, lookup, source);
      SWIFT_CHECK(w.CB.size(0) == linear->out_features() && w.CB.size(1) == linear->in_features(), DataError,
                  source + ": " + key + " has another shape than config.json gives", "is this the right folder?");
      q = std::make_shared<Int8LinearWeight>(std::move(w), config.compute_dtype.value_or(dtype));
    } else {
      const auto& entry = folder.entry(key);
      const std::vector<int64_t> expected{linear->out_features(), linear->in_features()};
      SWIFT_CHECK(at::IntArrayRef(entry.shape) == at::IntArrayRef(expected), DataError, source + ": " + key + " does not have the shape config.json gives",
                  "is this the right folder, with a matching config.json?");
      // Read, cast to the model's dtype (what transformers quantizes), quantize; the dense copy is dropped at once.
      q = quantize_weight(folder.get(key).to(device, dtype), config);
      folder.release(key);  // the file's pages of this weight: one weight resident at a time, not all of them
    }
    linear->set_quantized(std::move(q));
    // The layer's keys are consumed; a saved layer's pieces, copied to the device, need not stay resident (on the
    // CPU the tensors alias the file, and are kept).
    for (const std::string& name : {key, key + ".absmax", key + ".quant_map", key + ".nested_absmax",
                                    key + ".nested_quant_map", key + ".quant_state.bitsandbytes__nf4",
                                    key + ".quant_state.bitsandbytes__fp4", prefix + "SCB", prefix + "weight_format"}) {
      used.insert(name);
      if (prequantized && !device.is_cpu() && folder.contains(name)) folder.release(name);
    }
  }
}

int64_t dequantize_model(model::CausalLM& model) {
  at::NoGradGuard no_grad;
  int64_t n = 0;
  for (const auto& module : model->modules()) {
    auto* linear = dynamic_cast<model::LinearImpl*>(module.get());
    if (!linear || !linear->quantized) continue;
    linear->set_dense(linear->dense_weight(linear->weight.scalar_type()));
    ++n;
  }
  return n;
}

}  // namespace swift::quant
