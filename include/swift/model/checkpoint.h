// Loading and saving Hugging Face model folders (config.json + safetensors, single or sharded).
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "swift/model/decoder.h"
#include "swift/quant/quant_config.h"

namespace swift::model {

// ZeRO-3 loading: where this process keeps a parameter's values.
enum class Placement {
  kDevice,     // on LoadOptions::device, as without a plan
  kHost,       // in CPU RAM (pinned when the device is a GPU): ZeRO-3's offload_param
  kElsewhere,  // not here: a shape-only tensor (param_sharding.h); its owner has the values
};
struct ParameterInfo {
  std::string name;
  int64_t bytes = 0;  // its full size in the load dtype
};
// Called once with every parameter in model order; returns one Placement each.
using PlacementPlan = std::function<std::vector<Placement>(const std::vector<ParameterInfo>&)>;

struct LoadOptions {
  // Weights' dtype. Default: the checkpoint's torch_dtype.
  std::optional<c10::ScalarType> dtype;
  // Default: CPU.
  c10::Device device = c10::Device(c10::kCPU);
  // For a folder with config.json but no weights: how to initialise (see init_weights.h). Empty means such a
  // folder is an error.
  std::string init_strategy;
  uint64_t seed = 42;
  // Quantize the decoder layers' Linear weights with bitsandbytes' formats as they are read (--quant_method bnb).
  // A folder saved quantized (config.json quantization_config) loads quantized whatever this says.
  std::optional<quant::QuantConfig> quantize;
  // ZeRO-3 with several ranks: each rank reads only the tensors it owns, so no rank ever holds the whole model
  // (on its device or in RAM). Not applied to quantized models (every rank then loads them whole). The model
  // computes on `device` whatever is placed on the host (CausalLMImpl::set_compute_device). Default: none
  // (every parameter on the device).
  PlacementPlan placement;
};

// Builds the model from `dir`/config.json and fills it from the folder's safetensors: every parameter must be
// present with its shape (tensors are cast to the target dtype). Missing, unexpected or misshapen tensors are
// a DataError listing them. A tied lm_head.weight in the checkpoint is accepted and ignored. Quantized layers
// (options.quantize, or a bitsandbytes folder) never hold a full-precision copy on the device: the model is
// built on the CPU, whose untouched allocations cost no memory, each weight is quantized on the device as it is
// read, and the rest moves there after.
CausalLM load_model(const std::filesystem::path& dir, const LoadOptions& options = {});

struct SaveOptions {
  uint64_t max_shard_bytes = 5000000000ULL;  // --max_shard_size, default 5GB as transformers
  std::optional<c10::ScalarType> dtype;      // cast on save; default the weights' dtype
  // quantization_config for a model quantized in memory (loading records it in the model's config already).
  std::optional<quant::QuantConfig> quantization;
};

// Writes config.json (torch_dtype updated), the weights (sharded past max_shard_bytes) into `dir`, atomically
// (quantized layers as transformers saves bitsandbytes layers, with quantization_config in config.json)
// (a temporary sibling renamed over `dir`). Files of `copy_from` that a model folder carries besides weights
// and config (tokenizer files, generation_config.json, chat template, licences) are copied along.
void save_model(CausalLM& model, const std::filesystem::path& dir, const SaveOptions& options = {},
                const std::filesystem::path& copy_from = {});

// Parameter count (tied weights once).
int64_t count_parameters(CausalLM& model);

}  // namespace swift::model
