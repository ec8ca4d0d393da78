// Hugging Face model folder <-> CausalLM. Names are already checkpoint keys, so loading is an identity map.
#include "swift/model/checkpoint.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <map>
#include <set>
#include <sstream>

#include "swift/core/atomic_write.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/bytes.h"
#include "swift/core/logging.h"
#include "swift/core/memory.h"
#include "swift/io/hf_config.h"
#include "swift/io/model_parallel_files.h"
#include "swift/io/safetensors_folder.h"
#include "swift/model/expert_weights.h"
#include "swift/model/init_weights.h"
#include "swift/model/param_sharding.h"

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

// The plan's placement of every parameter (model order), checked for length.
std::vector<Placement> plan_placement(CausalLM& model, const PlacementPlan& plan) {
  std::vector<ParameterInfo> infos;
  for (auto& item : model->named_parameters())
    infos.push_back({item.key(), item.value().numel() * static_cast<int64_t>(item.value().element_size())});
  auto where = plan(infos);
  SWIFT_ASSERT(where.size() == infos.size(), "a placement plan gives one Placement per parameter");
  return where;
}

// Gives each parameter the storage its placement asks for: on the device, in (pinned) CPU RAM, or shape-only.
// with_values: move the values the parameter has (initialised ones); otherwise allocate, to be filled from files.
void place_parameters(CausalLM& model, const std::vector<Placement>& where, c10::Device device, bool with_values) {
  torch::NoGradGuard no_grad;
  auto params = model->parameters();
  std::vector<at::Tensor> to_host;  // one pinned buffer for them all (pinned: asynchronous copies to the GPU)
  for (size_t i = 0; i < params.size(); ++i)
    if (where[i] == Placement::kHost) to_host.push_back(params[i]);
  const auto homes = packed_like(to_host, at::TensorOptions().device(c10::kCPU).pinned_memory(device.is_cuda()));
  size_t next_home = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    at::Tensor& p = params[i];
    at::Tensor data;
    switch (where[i]) {
      case Placement::kDevice:
        data = with_values ? p.detach().to(device) : at::empty(p.sizes(), p.options().device(device));
        break;
      case Placement::kHost:
        data = homes[next_home++];
        if (with_values) data.copy_(p.detach());
        break;
      case Placement::kDeferred:  // without files (initialised weights) there is nothing to read later
        data = with_values ? p.detach().to(device) : shape_only(p.sizes(), p.options().device(device));
        break;
      case Placement::kElsewhere:
        data = shape_only(p.sizes(), p.options().device(device));
        break;
    }
    p.set_data(data);
  }
}

// The name `folder` holds parameter `name` under: Hugging Face's stored name (Mixtral's sparse blocks differ from the
// module paths), or the parameter's own where swift wrote it (model-parallel parts).
std::string name_in_folder(const io::SafetensorsFolder& folder, const std::string& name, const MoeConfig& moe) {
  const std::string stored = stored_parameter_name(name, moe);
  return folder.contains(stored) || !folder.contains(name) ? stored : name;
}

// DeepSeek-V3's multi-token-prediction layers (config.json's num_nextn_predict_layers) are stored after the decoder's
// layers (model.layers.61.* for 61 layers). transformers builds none and skips their tensors; so does swift.
bool is_next_token_prediction_layer(const std::string& name, const ModelConfig& config) {
  const std::string prefix = "model.layers.";
  if (name.rfind(prefix, 0) != 0) return false;
  const auto& raw = config.raw;
  if (!raw.contains("num_nextn_predict_layers") || !raw.at("num_nextn_predict_layers").is_number_integer() ||
      raw.at("num_nextn_predict_layers").get<int64_t>() <= 0)
    return false;
  const size_t end = name.find('.', prefix.size());
  const std::string index = name.substr(prefix.size(), end - prefix.size());
  if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos) return false;
  return std::stoll(index) >= config.num_hidden_layers;
}

// where: the placement plan's verdicts (empty: every parameter is read); a kElsewhere or kDeferred parameter is
// checked against the files but not read.
void fill_from_folder(CausalLM& model, const fs::path& dir, const LinearQuantizer* quantizer, c10::Device device,
                      const std::vector<Placement>& where) {
  auto weights = io::SafetensorsFolder::open(dir);
  torch::NoGradGuard no_grad;
  std::vector<std::string> missing, misshapen, unexpected;
  std::set<std::string> used;
  if (quantizer) quantizer->load(model, weights, device, dir.string(), used);
  const bool prequantized = quantizer && quantizer->prequantized();
  size_t index = 0;
  const MoeConfig& moe = model->config().moe;
  for (auto& item : model->named_parameters()) {
    const std::string name = name_in_folder(weights, item.key(), moe);
    const Placement place = where.empty() ? Placement::kDevice : where[index++];
    const bool elsewhere = place == Placement::kElsewhere || place == Placement::kDeferred;
    if (used.count(name)) continue;  // a quantized layer's weight
    if (!weights.contains(name)) {
      const auto experts = find_stored_experts(weights, item.key(), moe);
      if (!experts) {
        missing.push_back(name);
        continue;
      }
      // A mixture-of-experts layer's experts, stored one tensor per expert and projection.
      missing.insert(missing.end(), experts->missing.begin(), experts->missing.end());
      if (!experts->problem.empty()) misshapen.push_back(experts->problem);
      if (!experts->missing.empty() || !experts->problem.empty()) continue;
      if (at::IntArrayRef(experts->shape) != item.value().sizes()) {
        misshapen.push_back(name + ": checkpoint's experts stack to " + shape_string(experts->shape) +
                            ", model expects " + shape_string(item.value().sizes()));
        continue;
      }
      if (!elsewhere)
        with_context("loading " + name + " from the experts' tensors in " + dir.string(),
                     [&] { read_stored_experts(weights, *experts, item.value()); });
      for (const auto& keys : experts->keys) used.insert(keys.begin(), keys.end());
      used.insert(name);
      continue;
    }
    const auto& entry = weights.entry(name);
    if (at::IntArrayRef(entry.shape) != item.value().sizes()) {
      misshapen.push_back(name + ": checkpoint " + shape_string(entry.shape) + ", model expects " +
                          shape_string(item.value().sizes()));
      continue;
    }
    if (!elsewhere)
      with_context("loading " + name + " from " + weights.file_of(name).filename().string(),
                   [&] { item.value().copy_(weights.get(name)); });
    weights.release(name);  // copied: its file pages need not stay resident beside the copy
    used.insert(name);
  }
  int64_t prediction_layer_tensors = 0;
  for (const auto& name : weights.names()) {
    if (used.count(name)) continue;
    if (name == model->config().names.lm_head + ".weight" && model->config().tie_word_embeddings) continue;  // tied
    if (is_next_token_prediction_layer(name, model->config())) {
      ++prediction_layer_tensors;
      continue;
    }
    if (name.find("rotary_emb.inv_freq") != std::string::npos) continue;  // a buffer old checkpoints saved
    if (prequantized && quantizer->is_state_key(name)) {  // statistics of a layer llm_int8_skip_modules kept?
      unexpected.push_back(name + " (quantization statistics of a layer this model does not quantize)");
      continue;
    }
    unexpected.push_back(name);
  }
  if (prediction_layer_tensors > 0)
    log_info(dir.string(), ": left out the ", prediction_layer_tensors, " tensors of the multi-token-prediction layers ",
             "(num_nextn_predict_layers), as transformers does; they are not trained, nor saved again");
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

// Hands the model the list of parameters the plan deferred, and their folder, for read_deferred_weights.
void defer_reading(CausalLM& model, const std::vector<Placement>& where, const fs::path& dir) {
  auto deferred = std::make_shared<DeferredWeights>();
  deferred->folder = dir;
  size_t index = 0;
  for (const auto& item : model->named_parameters())
    if (where[index++] == Placement::kDeferred) deferred->names.insert(item.key());
  if (!deferred->names.empty()) model->set_deferred_weights(std::move(deferred));
}

// DataError when the weights `config` describes cannot fit in the memory `device` has (when that is known).
void require_memory_for(const ModelConfig& config, c10::ScalarType dtype, c10::Device device, const fs::path& dir) {
  const double count = parameter_count(config);
  const double bytes = count * static_cast<double>(c10::elementSize(dtype));
  const double available = available_memory_bytes(device.is_cuda() ? device.index() : -1, 1);
  char need[64];
  std::snprintf(need, sizeof(need), "%.3g", count);
  SWIFT_CHECK(available <= 0 || bytes <= available, DataError,
              (dir / "config.json").string() + " describes " + need + " parameters: " + format_bytes(bytes) + " of " +
                  dtype_name(dtype) + " weights, more than the " + format_bytes(available) + " of " +
                  (device.is_cuda() ? "GPU memory" : "RAM") + " available",
              "check its sizes (hidden_size, intermediate_size, num_hidden_layers, vocab_size), or load it in a "
              "smaller --torch_dtype, quantized (--quant_bits 4) or sharded over ranks (--deepspeed zero3)");
}

}  // namespace

c10::ScalarType load_dtype(const ModelConfig& config, const LoadOptions& options, const fs::path& dir) {
  if (options.dtype) return *options.dtype;
  return parse_dtype(config.torch_dtype, dir.string() + "/config.json torch_dtype").value_or(c10::kFloat);
}

CausalLM load_model(const fs::path& dir, const LoadOptions& options) {
  return with_context("loading model " + dir.string(), [&] {
    ModelConfig config = load_model_config(dir);
    const c10::ScalarType dtype = load_dtype(config, options, dir);
    config.torch_dtype = dtype_name(dtype);
    const bool has_weights = io::SafetensorsFolder::has_weights(dir);
    SWIFT_CHECK(has_weights || !options.init_strategy.empty(), DataError,
                "no *.safetensors weights in " + dir.string(),
                "pass --init_strategy normal (or " + init_strategies() +
                    ") to start from random weights, or point --model at a folder with weights");
    const LinearQuantizer* quantizer = options.quantizer.get();
    SWIFT_ASSERT(quantizer || !config.raw.contains("quantization_config"),
                 "a folder saved quantized is loaded through quant::load_model");
    // Saved again (export, checkpoints), the folder says how it is quantized, as transformers writes it.
    if (quantizer && !quantizer->prequantized()) config.raw["quantization_config"] = quantizer->config_json();
    // Parameters are allocated on the target device and filled straight from the mapped files. With quantization
    // they are allocated on the CPU first: the decoder layers' weights are never written there (each is quantized
    // on the device from the file), so their pages cost nothing; the rest moves to the device after.
    // A placement plan (ZeRO-3) likewise builds on the CPU and then gives each parameter its own storage, so the
    // tensors this rank does not own are never written anywhere.
    const bool planned = options.placement && !quantizer;
    // Every weight is allocated here (a placement plan reading from files touches only this rank's share, and
    // quantized layers are smaller): a size that cannot fit is a clear error now, not an abort mid-allocation.
    if (!quantizer && !(planned && has_weights)) require_memory_for(config, dtype, options.device, dir);
    const c10::Device build_on = quantizer || planned ? c10::Device(c10::kCPU) : options.device;
    CausalLM model(config, at::TensorOptions().dtype(dtype).device(build_on));
    std::vector<Placement> where;
    if (planned) where = plan_placement(model, options.placement);
    if (has_weights) {
      if (planned) place_parameters(model, where, options.device, /*with_values=*/false);
      fill_from_folder(model, dir, quantizer, options.device, where);
      if (planned) defer_reading(model, where, dir);
      log_debug("loaded ", count_parameters(model), " parameters from ", dir.string());
    } else {
      init_weights(model, options.init_strategy, options.seed);  // the whole model: the same values on every rank
      log_info("no weights in ", dir.string(), ": initialised with --init_strategy ", options.init_strategy,
               " (seed ", options.seed, ")");
      if (planned) place_parameters(model, where, options.device, /*with_values=*/true);
      if (quantizer) quantizer->quantize(model);
    }
    if (planned) model->set_compute_device(options.device);
    if (quantizer) {
      model->to(options.device);
      move_quantized(model, options.device);
    }
    model->eval();
    return model;
  });
}

int64_t read_deferred_weights(CausalLM& model, const WeightSliceOf& slice_of) {
  DeferredWeights* deferred = model->deferred_weights();
  if (!deferred) return 0;
  auto weights = io::SafetensorsFolder::open(deferred->folder);
  torch::NoGradGuard no_grad;
  int64_t bytes = 0;
  for (auto& item : model->named_parameters()) {
    if (!deferred->names.count(item.key())) continue;
    const std::string name = name_in_folder(weights, item.key(), model->config().moe);
    at::Tensor& p = item.value();
    const std::optional<WeightSlice> slice = slice_of ? slice_of(item.key()) : std::nullopt;
    if (!weights.contains(name)) {  // a mixture-of-experts layer's experts, stored one tensor per expert
      const auto experts = find_stored_experts(weights, item.key(), model->config().moe);
      SWIFT_CHECK(experts && experts->missing.empty() && experts->problem.empty(), DataError,
                  deferred->folder.string() + " lost " + name + " after loading",
                  "keep a model's folder unchanged while a run loads it");
      SWIFT_ASSERT(!slice || slice->dim == 0, "stacked experts are split by expert only");
      with_context("loading " + name + " from the experts' tensors in " + deferred->folder.string(), [&] {
        p.set_data(at::empty(p.sizes(), p.options()));
        read_stored_experts(weights, *experts, p, slice ? slice->start : 0);
      });
      bytes += static_cast<int64_t>(p.nbytes());
      continue;
    }
    with_context("loading " + name + " from " + weights.file_of(name).filename().string(), [&] {
      const at::Tensor source =
          slice ? weights.get_slice(name, slice->dim, slice->start, slice->length) : weights.get(name);
      SWIFT_CHECK(source.sizes() == p.sizes(), DataError,
                  "the file holds " + shape_string(source.sizes()) + " where this rank's parameter is " +
                      shape_string(p.sizes()),
                  "keep a model's folder unchanged while a run loads it");
      p.set_data(at::empty(p.sizes(), p.options()));
      p.copy_(source);
    });
    weights.release(name);
    bytes += static_cast<int64_t>(p.nbytes());
  }
  model->set_deferred_weights(nullptr);
  return bytes;
}

bool claim_deferred_parameter(CausalLM& model, const std::string& name) {
  DeferredWeights* deferred = model->deferred_weights();
  if (!deferred || deferred->names.erase(name) == 0) return false;
  for (auto& item : model->named_parameters())
    if (item.key() == name) {
      at::Tensor& p = item.value();
      p.set_data(at::empty(p.sizes(), p.options()));
    }
  return true;
}

int64_t count_parameters(CausalLM& model) {
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  for (const auto& m : model->modules())  // a quantized layer's values are not in its (empty) weight
    if (const auto* linear = dynamic_cast<const LinearImpl*>(m.get()); linear && linear->quantized)
      n += linear->in_features() * linear->out_features();
  return n;
}

namespace {

void write_description(CausalLM& model, const fs::path& dir, const SaveOptions& options, const fs::path& copy_from,
                       bool quantized) {
  ModelConfig config = model->config();
  config.torch_dtype = dtype_name(options.dtype.value_or(model->dtype()));
  if (!quantized) config.raw.erase("quantization_config");  // dense now (merged, or dequantized)
  if (quantized && options.quantization_config) config.raw["quantization_config"] = *options.quantization_config;
  io::write_json_file(dir / "config.json", model_config_to_json(config));
  if (copy_from.empty() || !fs::is_directory(copy_from)) return;
  for (const auto& entry : fs::directory_iterator(copy_from)) {
    const std::string name = entry.path().filename().string();
    // Weights and their indexes (a model-parallel checkpoint's too) describe the source's weights, not these.
    const bool weights = entry.path().extension() == ".safetensors" || entry.path().extension() == ".bin" ||
                         name == "model.safetensors.index.json" || name == "pytorch_model.bin.index.json" ||
                         name == io::kModelParallelIndex;
    if (!entry.is_regular_file() || weights || name == "config.json") continue;
    fs::copy_file(entry.path(), dir / name, fs::copy_options::overwrite_existing);
  }
}

}  // namespace

void save_model_description(CausalLM& model, const fs::path& dir, const SaveOptions& options, const fs::path& copy_from) {
  write_description(model, dir, options, copy_from, /*quantized=*/quantized_bytes(model).second > 0);
}

void save_model(CausalLM& model, const fs::path& dir, const SaveOptions& options, const fs::path& copy_from) {
  SWIFT_ASSERT(!model->deferred_weights(), "a model is saved after read_deferred_weights gave it its values");
  AtomicDir out(dir);
  io::NamedTensors tensors;
  std::map<std::string, const LinearImpl*> quantized;  // weight key -> its layer
  for (const auto& item : model->named_modules()) {
    const auto* linear = dynamic_cast<const LinearImpl*>(item.value().get());
    if (linear && linear->quantized) quantized[item.key() + ".weight"] = linear;
  }
  for (auto& item : model->named_parameters()) {
    if (const auto it = quantized.find(item.key()); it != quantized.end()) {  // as transformers saves bitsandbytes layers
      it->second->quantized->append_tensors(item.key().substr(0, item.key().size() - 6), tensors);
      continue;
    }
    at::Tensor t = item.value().detach();
    if (options.dtype) t = t.to(*options.dtype);
    // As transformers saves them: experts one per tensor, under the family's stored names.
    if (append_stored_experts(item.key(), t, model->config().moe, tensors)) continue;
    tensors.emplace_back(stored_parameter_name(item.key(), model->config().moe), t);
  }
  SWIFT_ASSERT(quantized.empty() || options.quantization_config || model->config().raw.contains("quantization_config"),
               "a quantized model is saved with its quantization_config");
  write_description(model, out.path(), options, copy_from, /*quantized=*/!quantized.empty());
  io::save_safetensors_folder(out.path(), tensors, options.max_shard_bytes);
  out.commit();
}

}  // namespace swift::model
