// The model families swift runs, by Hugging Face model_type. A new family is one row here plus whatever
// module it needs in src/model/; nothing outside src/model/ switches on the architecture.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace swift::model {

struct ModelConfig;

struct ModelFamily {
  std::string model_type;                  // config.json "model_type"
  std::vector<std::string> architectures;  // config.json "architectures" that map to it
  std::string default_template;            // chat template used when none is given
  // Sets the family-specific flags (biases, q/k norm, sliding windows) from the raw config.
  void (*apply)(const nlohmann::json& raw, ModelConfig& config, std::vector<std::string>& problems);
  // transformers' class of the family's reward models; empty: the first architecture's name with
  // ForSequenceClassification for ForCausalLM (Qwen3ForCausalLM -> Qwen3ForSequenceClassification).
  std::string sequence_classifier = {};
  // Checkpoints of the family whose tokenizer has this token take this template instead of default_template
  // (ms-swift tells them apart by model id: Phi-4 14B, whose tokenizer has <|im_sep|>, uses phi4, not phi3).
  std::string template_token = {}, token_template = {};

  // default_template, or token_template when has_token(template_token) (a callable: does the tokenizer have it?).
  template <class HasToken>
  std::string template_for(HasToken&& has_token) const {
    return !template_token.empty() && has_token(template_token) ? token_template : default_template;
  }
};

const std::vector<ModelFamily>& model_families();
// By model_type, else by the first architectures entry; nullptr when unknown.
const ModelFamily* find_model_family(const std::string& model_type, const std::vector<std::string>& architectures);
// "llama, mistral, qwen2, qwen3" for error messages.
std::string supported_model_types();

}  // namespace swift::model
