// Hugging Face model folder <-> CausalLM. Names are already checkpoint keys, so loading is an identity map.
#include "swift/model/checkpoint.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <set>
#include <sstream>

#include "swift/core/atomic_write.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/io/hf_config.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/init_weights.h"

namespace fs = std::filesystem;

namespace swift::model {

namespace {

std::string shape_string(at::IntArrayRef shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  return s.str() + "]";
}

std::string list_some(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 8; ++i) out += "\n  - " + names[i];
  if (names.size() > 8) out += "\n  ... and " + std::to_string(names.size() - 8) + " more";
  return out;
}

void fill_from_folder(CausalLM& model, const fs::path& dir) {
  auto weights = io::SafetensorsFolder::open(dir);
  torch::NoGradGuard no_grad;
  std::vector<std::string> missing, misshapen, unexpected;
  std::set<std::string> used;
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    if (!weights.contains(name)) {
      missing.push_back(name);
      continue;
    }
    const auto& entry = weights.entry(name);
    if (at::IntArrayRef(entry.shape) != item.value().sizes()) {
      misshapen.push_back(name + ": checkpoint " + shape_string(entry.shape) + ", model expects " +
                          shape_string(item.value().sizes()));
      continue;
    }
    with_context("loading " + name + " from " + weights.file_of(name).filename().string(),
                 [&] { item.value().copy_(weights.get(name)); });
    used.insert(name);
  }
  for (const auto& name : weights.names()) {
    if (used.count(name)) continue;
    if (name == "lm_head.weight" && model->config().tie_word_embeddings) continue;  // tied: the embedding serves
    if (name.find("rotary_emb.inv_freq") != std::string::npos) continue;  // a buffer old checkpoints saved
    unexpected.push_back(name);
  }
  if (!missing.empty() || !misshapen.empty() || !unexpected.empty()) {
    std::string msg = "the weights in " + dir.string() + " do not fit config.json:";
    if (!missing.empty()) msg += "\n missing " + std::to_string(missing.size()) + " tensor(s):" + list_some(missing);
    if (!misshapen.empty()) msg += "\n wrong shape:" + list_some(misshapen);
    if (!unexpected.empty())
      msg += "\n unexpected " + std::to_string(unexpected.size()) + " tensor(s):" + list_some(unexpected);
    throw DataError(msg, "is this the right folder, with a matching config.json (maybe a LoRA adapter or another "
                         "architecture)? Re-save or re-download the model");
  }
}

}  // namespace

CausalLM load_model(const fs::path& dir, const LoadOptions& options) {
  return with_context("loading model " + dir.string(), [&] {
    ModelConfig config = load_model_config(dir);
    c10::ScalarType dtype = options.dtype.value_or(c10::kFloat);
    if (!options.dtype) {
      auto parsed = parse_dtype(config.torch_dtype, dir.string() + "/config.json torch_dtype");
      dtype = parsed.value_or(c10::kFloat);
    }
    config.torch_dtype = dtype_name(dtype);
    const bool has_weights = io::SafetensorsFolder::has_weights(dir);
    SWIFT_CHECK(has_weights || !options.init_strategy.empty(), DataError,
                "no *.safetensors weights in " + dir.string(),
                "pass --init_strategy normal (or " + init_strategies() +
                    ") to start from random weights, or point --model at a folder with weights");
    // Parameters are allocated on the target device and filled straight from the mapped files.
    CausalLM model(config, at::TensorOptions().dtype(dtype).device(options.device));
    if (has_weights) {
      fill_from_folder(model, dir);
      log_debug("loaded ", count_parameters(model), " parameters from ", dir.string());
    } else {
      init_weights(model, options.init_strategy, options.seed);
      log_info("no weights in ", dir.string(), ": initialised with --init_strategy ", options.init_strategy,
               " (seed ", options.seed, ")");
    }
    model->eval();
    return model;
  });
}

int64_t count_parameters(CausalLM& model) {
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  return n;
}

void save_model(CausalLM& model, const fs::path& dir, const SaveOptions& options, const fs::path& copy_from) {
  AtomicDir out(dir);
  io::NamedTensors tensors;
  for (auto& item : model->named_parameters()) {
    at::Tensor t = item.value().detach();
    if (options.dtype) t = t.to(*options.dtype);
    tensors.emplace_back(item.key(), t);
  }
  ModelConfig config = model->config();
  config.torch_dtype = dtype_name(options.dtype.value_or(model->dtype()));
  io::write_json_file(out.path() / "config.json", model_config_to_json(config));
  io::save_safetensors_folder(out.path(), tensors, options.max_shard_bytes);
  if (!copy_from.empty() && fs::is_directory(copy_from)) {
    for (const auto& entry : fs::directory_iterator(copy_from)) {
      const std::string name = entry.path().filename().string();
      const bool weights = entry.path().extension() == ".safetensors" || entry.path().extension() == ".bin" ||
                           name == "model.safetensors.index.json" || name == "pytorch_model.bin.index.json";
      if (!entry.is_regular_file() || weights || name == "config.json") continue;
      fs::copy_file(entry.path(), out.path() / name, fs::copy_options::overwrite_existing);
    }
  }
  out.commit();
}

}  // namespace swift::model
