// LoRA (Hu et al. 2021) in PEFT's layout: lora_A [r, in] and lora_B [out, r] attached to the decoder's
// Linear layers, adapters read and written as PEFT adapter folders (adapter_config.json +
// adapter_model.safetensors), merge for export. Flags and defaults are ms-swift's (--lora_rank ...).
#pragma once

#include <c10/core/ScalarType.h>
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "swift/io/safetensors.h"
#include "swift/model/decoder.h"

namespace swift::tuners {

class ExpertAdaptersDisabled;  // lora_experts.h

// How lora_A/lora_B start (PEFT's init_lora_weights).
enum class LoraInit {
  kDefault,   // true: A kaiming-uniform(a=sqrt(5)) = U(-1/sqrt(in), 1/sqrt(in)), B zeros (the adapter starts as a no-op)
  kGaussian,  // "gaussian": A ~ N(0, 1/r), B zeros
  kRandom,    // false: A and B both nn.Linear-style uniform (B != 0; for tests)
};

// PEFT's LoraConfig fields with ms-swift's defaults.
struct LoraConfig {
  int64_t r = 8;              // --lora_rank. Default: 8.
  double lora_alpha = 32;     // --lora_alpha. Default: 32.
  double lora_dropout = 0.05; // --lora_dropout; applied to the LoRA input in training mode only. Default: 0.05.
  // --target_modules: module names matched as PEFT does (equal, or a suffix after a '.'), or "all-linear"
  // (every Linear except lm_head). Default: {"all-linear"}.
  std::vector<std::string> target_modules = {"all-linear"};
  // --target_regex: when set, replaces target_modules; must match a full module name (PEFT's re.fullmatch
  // of a string target_modules). Default: none.
  std::optional<std::string> target_regex;
  // --target_parameters: a mixture-of-experts layer's stacked expert weights (mlp.experts.gate_up_proj,
  // mlp.experts.down_proj), adapted as PEFT's target_parameters (lora_experts.h); needs lora_dropout 0. Default: none.
  std::vector<std::string> target_parameters;
  // --modules_to_save: modules trained in full and saved with the adapter (embed_tokens, lm_head).
  std::vector<std::string> modules_to_save;
  bool use_rslora = false;  // --use_rslora: scaling alpha/sqrt(r) instead of alpha/r. Default: false.
  // --use_dora: DoRA (weight-decomposed LoRA, PEFT's use_dora): a trainable magnitude per output feature
  // (lora_magnitude_vector) rescales each row of W + scaling * B A. Default: false.
  bool use_dora = false;
  LoraInit init_weights = LoraInit::kDefault;  // --init_weights. Default: true.
  // --lora_dtype: dtype of lora_A/lora_B. Default: the base weights' dtype.
  std::optional<c10::ScalarType> lora_dtype;
  std::string bias = "none";  // only "none" is supported
  std::string base_model_name_or_path;  // written to adapter_config.json (null when empty)
  std::string task_type = "CAUSAL_LM";

  // PEFT's rank_pattern / alpha_pattern: the rank and alpha of a module (or expert weight) whose name a key, a regular
  // expression, matches at its end after a '.' (PEFT's get_pattern_key; the first key that matches); r and lora_alpha
  // elsewhere. On mixture-of-experts models PEFT 0.20 sets both for the fused experts' gate_up_proj (2r, 2 alpha).
  std::vector<std::pair<std::string, int64_t>> rank_pattern;
  std::vector<std::pair<std::string, double>> alpha_pattern;

  // alpha / r, or alpha / sqrt(r) with use_rslora.
  double scaling() const;
  // The rank, and alpha / rank (or / sqrt(rank)), of the module or expert weight `name` (patterns applied).
  int64_t rank_for(const std::string& name) const;
  double scaling_for(const std::string& name) const;
};

// Checks values (r > 0, dropout in [0, 1), bias "none"); a UsageError lists every problem.
void validate(const LoraConfig& config);

// adapter_config.json as PEFT writes it (PEFT 0.21's field set, sorted keys). `wrapped` (the names
// apply_lora returned) expands "all-linear" into the sorted module suffixes it selected, as ms-swift writes it.
nlohmann::json to_adapter_config_json(const LoraConfig& config, const std::vector<std::string>& wrapped = {});
// Parses a PEFT adapter_config.json; `source` names the file in errors. Features swift does not implement
// (layers_to_transform, LoRA bias, ...) are UsageErrors naming the field.
LoraConfig parse_adapter_config(const nlohmann::json& j, const std::string& source);

// PEFT 0.20 on a transformers-v5 mixture-of-experts model (qwen2_moe, qwen3_moe, deepseek_v2/v3, mixtral): targets
// named as the experts' projections were before transformers fused them (gate_proj, up_proj, down_proj; Mixtral's
// w1, w3, w2), all-linear's included, leave target_modules and adapt the experts' stacked weights instead
// (target_parameters gate_up_proj, down_proj; gate_up_proj at rank 2r and alpha 2 alpha), so the dense layers' and
// shared experts' MLPs of the same names are not adapted. ms-swift passes all-linear to PEFT as that list of names,
// so its LoRA is this. Returns the config apply_lora then uses (unchanged for other models); a UsageError for
// half of a fused pair (gate without up) or the router (gate), as PEFT refuses the one and swift has no LoRA on the
// other yet.
LoraConfig convert_expert_targets(model::CausalLM& model, const LoraConfig& config);

// Attaches LoRA to every model::Linear that config selects, freezes every base parameter
// (requires_grad false) and makes modules_to_save trainable. LoRA weights are initialised per
// config.init_weights from a CPU generator seeded with `seed` (same values on any device). In-memory names
// are "<module>.lora_A.weight" / "<module>.lora_B.weight", and with DoRA "<module>.lora_magnitude_vector" (in the
// LoRA dtype, initialised to ||W + scaling * B A|| per output row, trainable). Returns the wrapped module names
// in model order.
// A target or module_to_save that matches nothing is a UsageError naming it and listing the model's
// Linear layers; a model that already carries LoRA is a UsageError.
std::vector<std::string> apply_lora(model::CausalLM& model, const LoraConfig& config, uint64_t seed = 42);

// Names of the modules that carry LoRA now (in model order).
std::vector<std::string> lora_modules(model::CausalLM& model);

// The adapter's tensors under PEFT's file keys: "base_model.model.<module>.lora_A.weight", ...,
// "base_model.model.<module>.lora_magnitude_vector" with DoRA, and
// "base_model.model.<module>.<param>" for modules_to_save.
io::NamedTensors adapter_state_dict(model::CausalLM& model, const LoraConfig& config);

// Writes `dir`/adapter_config.json + adapter_model.safetensors atomically (a temporary sibling renamed over
// `dir`).
void save_adapter(model::CausalLM& model, const LoraConfig& config, const std::filesystem::path& dir);

// Reads a PEFT adapter folder (swift's or PEFT's), applies LoRA with its config and loads its weights (cast
// to the LoRA parameters' dtype). Missing, unexpected or misshapen tensors are a DataError naming them.
// `lora_dtype` overrides the config's (which PEFT does not store).
LoraConfig load_adapter(model::CausalLM& model, const std::filesystem::path& dir,
                        std::optional<c10::ScalarType> lora_dtype = std::nullopt);

// Folds W += scaling * B @ A into every wrapped Linear (computed in fp32, fp64 for fp64 weights) and removes the
// LoRA branches, so the model saves as a plain Hugging Face model. DoRA layers become
// magnitude / ||W + s B A|| * (W + s B A), row by row (PEFT's merge). Returns how many layers were merged.
int64_t merge_lora(model::CausalLM& model);

// While it lives, every LoRA layer of `model` computes the base layer alone (PEFT's disable_adapter()): the
// model is its base model, as preference training's reference (no second copy in memory). Weights trained in
// full (modules_to_save) are not undone: callers that need the base then load it instead.
class AdaptersDisabled {
 public:
  explicit AdaptersDisabled(model::CausalLM& model);
  ~AdaptersDisabled();
  AdaptersDisabled(const AdaptersDisabled&) = delete;
  AdaptersDisabled& operator=(const AdaptersDisabled&) = delete;

 private:
  std::vector<std::pair<model::LinearImpl*, std::shared_ptr<model::LinearAdapter>>> disabled_;
  std::unique_ptr<ExpertAdaptersDisabled> experts_;
};

// Sets the dropout on every LoRA layer's input (preference training turns it off, as TRL's disable_dropout).
void set_lora_dropout(model::CausalLM& model, double p);

// Parameters with requires_grad (the optimizer's list), with their in-memory names.
io::NamedTensors trainable_parameters(model::CausalLM& model);

}  // namespace swift::tuners
