// LoRA on a mixture-of-experts layer's stacked expert weights, as PEFT's target_parameters (lora.ParamWrapper) puts
// it on transformers v5's experts: for a weight W [E, out, in] (gate_up_proj [E, 2I, C], down_proj [E, C, I]) one
// lora_A [r E, in] and one lora_B [out, r E], each expert e adapted by
//   W[e] + scaling * sum_j B[:, j, e] A[e, j, :]      (A viewed as [E, r, in], B as [out, r, E])
// and the experts computing with that weight. Names are PEFT's: each targeted weight wraps the module once more, in
// the experts' parameter order, so with both targeted gate_up_proj's branch is "<experts>.base_layer.lora_A.weight"
// and down_proj's "<experts>.lora_A.weight"; with one, "<experts>.lora_A.weight".
#pragma once

#include <ATen/core/Generator.h>

#include <string>
#include <vector>

#include "swift/model/decoder.h"
#include "swift/model/moe.h"
#include "swift/tuners/lora.h"

namespace swift::tuners {

// Attaches the branches config.target_parameters selects (names matched as PEFT does: the whole
// "<experts>.<weight>" or a suffix after a '.'), initialised per config.init_weights from `gen` and trainable.
// Returns "<experts>.<weight>" for each, in model order. A target that matches no expert weight, a model already
// carrying them, dropout, DoRA, and an expert-parallel model are UsageErrors.
std::vector<std::string> apply_expert_lora(model::CausalLM& model, const LoraConfig& config, at::Generator& gen);
// apply_expert_lora's UsageErrors, before anything changes (apply_lora calls it first).
void check_expert_lora(model::CausalLM& model, const LoraConfig& config);

// "<experts>.<weight>" of every adapted expert weight, in model order.
std::vector<std::string> expert_lora_weights(model::CausalLM& model);

// Folds each branch into its weight (W += delta, computed in fp32 at least) and removes the branches. Returns how
// many weights were merged.
int64_t merge_expert_lora(model::CausalLM& model);

// While it lives, the experts compute with their base weights (AdaptersDisabled's part for the experts).
class ExpertAdaptersDisabled {
 public:
  explicit ExpertAdaptersDisabled(model::CausalLM& model);
  ~ExpertAdaptersDisabled();
  ExpertAdaptersDisabled(const ExpertAdaptersDisabled&) = delete;
  ExpertAdaptersDisabled& operator=(const ExpertAdaptersDisabled&) = delete;

 private:
  std::vector<std::pair<model::MoeExpertsImpl*, std::shared_ptr<model::ExpertWeightsAdapter>>> disabled_;
};

}  // namespace swift::tuners
