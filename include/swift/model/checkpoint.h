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

#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "swift/io/safetensors_folder.h"
#include "swift/model/decoder.h"

namespace swift::model {

// ZeRO-3 loading: where this process keeps a parameter's values.
enum class Placement {
  kDevice,     // on LoadOptions::device, as without a plan
  kHost,       // in CPU RAM (pinned when the device is a GPU): ZeRO-3's offload_param
  kElsewhere,  // not here: a shape-only tensor (param_sharding.h); its owner has the values
  kDeferred,   // here, but read later by read_deferred_weights: shape-only until then, so a tensor-parallel rank
               // reads only its slice once the model is split (never the whole weight on the device)
};
struct ParameterInfo {
  std::string name;
  int64_t bytes = 0;  // its full size in the load dtype
};
// Called once with every parameter in model order; returns one Placement each.
using PlacementPlan = std::function<std::vector<Placement>(const std::vector<ParameterInfo>&)>;

// The parameters a plan deferred (Placement::kDeferred) and the folder they are read from later; the model carries
// it (CausalLMImpl::deferred_weights) until read_deferred_weights.
struct DeferredWeights {
  std::filesystem::path folder;
  std::set<std::string> names;
};
// The part of a deferred parameter a rank keeps: [start, start + length) along dim.
struct WeightSlice {
  int64_t dim = 0;
  int64_t start = 0;
  int64_t length = 0;
};
// A parameter's slice by name; nullopt: the whole tensor.
using WeightSliceOf = std::function<std::optional<WeightSlice>(const std::string& name)>;

// How the loader fills the decoder layers' Linear weights when they are held quantized: implemented by swift::quant
// (bitsandbytes' formats), which loads quantized models through quant::load_model and passes one in
// LoadOptions::quantizer, so this area knows quantization only through QuantizedWeight and this interface.
class LinearQuantizer {
 public:
  virtual ~LinearQuantizer() = default;
  // Fills the layers it quantizes from `folder`: each weight quantized on `device` as it is read, or a folder's
  // saved quantized tensors taken as they are (prequantized()); every key consumed goes into `used`.
  virtual void load(CausalLM& model, const io::SafetensorsFolder& folder, c10::Device device, const std::string& source,
                    std::set<std::string>& used) const = 0;
  // Quantizes those layers of a freshly initialised model in memory.
  virtual void quantize(CausalLM& model) const = 0;
  // The folder was saved quantized.
  virtual bool prequantized() const = 0;
  // Whether `key` holds quantization statistics (for the message about unexpected tensors).
  virtual bool is_state_key(const std::string& key) const = 0;
  // config.json's "quantization_config" for a model quantized in memory.
  virtual nlohmann::json config_json() const = 0;
};

struct LoadOptions {
  // Weights' dtype. Default: the checkpoint's torch_dtype.
  std::optional<c10::ScalarType> dtype;
  // Default: CPU.
  c10::Device device = c10::Device(c10::kCPU);
  // For a folder with config.json but no weights: how to initialise (see init_weights.h). Empty means such a
  // folder is an error.
  std::string init_strategy;
  uint64_t seed = 42;
  // Quantized Linear weights (swift::quant's quant::load_model sets it: --quant_method bnb, or a folder saved
  // quantized, whose config.json has a quantization_config). Default: none, every weight dense.
  std::shared_ptr<const LinearQuantizer> quantizer;
  // ZeRO-3 with several ranks: each rank reads only the tensors it owns, so no rank ever holds the whole model
  // (on its device or in RAM). Not applied to quantized models (every rank then loads them whole). The model
  // computes on `device` whatever is placed on the host (CausalLMImpl::set_compute_device). Default: none
  // (every parameter on the device).
  PlacementPlan placement;
};

// The dtype the weights load in: options.dtype, else config.json's torch_dtype (float32 when it has none).
c10::ScalarType load_dtype(const ModelConfig& config, const LoadOptions& options, const std::filesystem::path& dir);

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
  std::optional<nlohmann::json> quantization_config;
};

// Writes config.json (torch_dtype updated), the weights (sharded past max_shard_bytes) into `dir`, atomically
// (quantized layers as transformers saves bitsandbytes layers, with quantization_config in config.json)
// (a temporary sibling renamed over `dir`). Files of `copy_from` that a model folder carries besides weights
// and config (tokenizer files, generation_config.json, chat template, licences) are copied along.
void save_model(CausalLM& model, const std::filesystem::path& dir, const SaveOptions& options = {},
                const std::filesystem::path& copy_from = {});

// What save_model writes besides the weights, into `dir` as it is: config.json (torch_dtype as saved) and the
// files of `copy_from` a model folder carries. For a folder whose weights are written otherwise (a model-parallel
// checkpoint's parts).
void save_model_description(CausalLM& model, const std::filesystem::path& dir, const SaveOptions& options = {},
                            const std::filesystem::path& copy_from = {});

// Gives every deferred parameter of `model` its values from the folder it was loaded from (the files are checked
// again, as at load): the slice `slice_of` names, whose shape the parameter must already have (apply_tensor_parallel
// cut it), else the whole tensor; each is allocated where the plan placed it. Returns the bytes read. A no-op for
// a model with nothing deferred.
int64_t read_deferred_weights(CausalLM& model, const WeightSliceOf& slice_of = nullptr);

// A deferred parameter given its values by someone else (a resumed adapter's --modules_to_save): its storage is
// allocated now and it leaves the list, so read_deferred_weights does not overwrite it. False when `name` is not
// deferred.
bool claim_deferred_parameter(CausalLM& model, const std::string& name);

// Parameter count (tied weights once).
int64_t count_parameters(CausalLM& model);

}  // namespace swift::model
