// A LoRA checkpoint's merged copy (see merged_checkpoint.h).
#include "swift/train/merged_checkpoint.h"

#include "swift/core/logging.h"
#include "swift/model/checkpoint.h"
#include "swift/quant/quantized_linear.h"
#include "swift/quant/quantized_loading.h"
#include "swift/tuners/lora.h"

namespace fs = std::filesystem;

namespace swift::train {

fs::path merged_checkpoint_dir(const fs::path& checkpoint) {
  fs::path dir = checkpoint;
  return dir.replace_filename(checkpoint.filename().string() + "-merged");
}

void write_merged_checkpoint(const fs::path& adapter_dir, const fs::path& model_dir,
                             const std::optional<quant::QuantConfig>& base_quantization,
                             std::optional<c10::ScalarType> dtype, const fs::path& out) {
  model::LoadOptions load;  // on the CPU, in the folder's dtype (merged in fp32 at least, then saved in `dtype`)
  model::CausalLM model = quant::load_model(model_dir, load, base_quantization);
  tuners::load_adapter(model, adapter_dir);
  const int64_t layers = tuners::merge_lora(model);
  quant::dequantize_model(model);  // a QLoRA base: the merged model is dense
  model::SaveOptions save;
  save.dtype = dtype;
  model::save_model(model, out, save, model_dir);
  log_info("saved ", out.string(), " (the base with the adapter's ", layers, " LoRA layers merged: --merge_lora true)");
}

}  // namespace swift::train
