// Quantized loading (see quantized_loading.h): bitsandbytes' formats behind model::LinearQuantizer.
#include "swift/quant/quantized_loading.h"

#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/model/model_config.h"
#include "swift/quant/bnb_tensors.h"
#include "swift/quant/quantized_linear.h"

namespace swift::quant {

namespace {

class BitsAndBytesQuantizer : public model::LinearQuantizer {
 public:
  BitsAndBytesQuantizer(QuantConfig config, bool prequantized) : config_(std::move(config)), prequantized_(prequantized) {}
  void load(model::CausalLM& model, const io::SafetensorsFolder& folder, c10::Device device, const std::string& source,
            std::set<std::string>& used) const override {
    load_quantized_linears(model, folder, config_, prequantized_, device, source, used);
  }
  void quantize(model::CausalLM& model) const override { quantize_model(model, config_); }
  bool prequantized() const override { return prequantized_; }
  bool is_state_key(const std::string& key) const override { return is_quant_state_key(key); }
  nlohmann::json config_json() const override { return quantization_config_json(config_); }

 private:
  QuantConfig config_;
  bool prequantized_;
};

}  // namespace

model::CausalLM load_model(const std::filesystem::path& dir, model::LoadOptions& options,
                           const std::optional<QuantConfig>& quantize) {
  // A folder saved quantized loads quantized; otherwise --quant_method asks for it.
  std::optional<QuantConfig> quantization, prequantized;
  c10::ScalarType dtype = c10::kFloat;
  with_context("loading model " + dir.string(), [&] {
    const model::ModelConfig config = model::load_model_config(dir);
    prequantized = read_quantization_config(config.raw, (dir / "config.json").string());
    quantization = prequantized ? prequantized : quantize;
    dtype = model::load_dtype(config, options, dir);
  });
  options.quantizer = nullptr;
  if (!quantization) return model::load_model(dir, options);
  // The compute dtype: the model's (activations') dtype unless --bnb_4bit_compute_dtype says otherwise; for a saved
  // folder always the activations' dtype, since bitsandbytes itself computes float32 and bfloat16 inputs in their
  // own dtype whatever bnb_4bit_compute_dtype says.
  if (prequantized || !quantization->compute_dtype) quantization->compute_dtype = dtype;
  if (prequantized && quantize)
    log_info(dir.string(), " is saved quantized (bitsandbytes ", prequantized->bits,
             "-bit): loading it as it is; the --quant_* flags have no effect");
  options.quantizer = std::make_shared<BitsAndBytesQuantizer>(*quantization, prequantized.has_value());
  auto model = model::load_model(dir, options);
  const auto [bytes, layers] = model::quantized_bytes(model);
  log_info("quantized ", layers, " linear layers (bitsandbytes ",
           quantization->bits == 4 ? four_bit_type_name(quantization->four_bit.type) : "int8",
           quantization->bits == 4 && quantization->four_bit.double_quant ? ", double quantization" : "",
           "): their weights hold ", std::to_string(bytes / (1 << 20)), " MiB (", bytes, " bytes)");
  return model;
}

}  // namespace swift::quant
