// What `swift infer` and `swift deploy` share: the model, its tokenizer and chat template, loaded from --model /
// --adapters (a checkpoint's args.json filling --model, --template and --system when not given), the stop tokens,
// and sampling defaults from the flags, then generation_config.json, then greedy with 512 new tokens.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/io/hf_config.h"
#include "swift/model/checkpoint.h"
#include "swift/model/decoder.h"
#include "swift/model/sampling.h"
#include "swift/recipes/commands.h"
#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"

namespace swift::recipes {

struct InferenceModel {
  model::CausalLM model{nullptr};
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<templates::Template> chat;  // the chat template, or plain text with --use_chat_template false
  std::string model_dir;
  io::GenerationConfig generation_config;
  std::vector<int64_t> stop_token_ids;  // the template's end-of-turn ids and generation_config's eos ids
  std::optional<bool> enable_thinking;  // --enable_thinking; unset: the template's default
  model::LoadOptions load_options;      // how the model was loaded (to load another copy of the base)
};

// Flags load_inference_model reads: model, adapters, template, system, use_chat_template, enable_thinking,
// infer_backend (plus the common flags).
std::vector<cli::FlagSpec> inference_model_flags();
// Flags sampling_defaults reads: max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty, stop_words.
std::vector<cli::FlagSpec> generation_flags();

// Loads the model (with at most one --adapters checkpoint applied), tokenizer and template, in eval mode.
// name=path entries of --adapters (swift deploy only) are left to the caller; the first one's args.json still
// supplies --model when no plain adapter is given.
InferenceModel load_inference_model(const cli::Flags& flags, const CommonSetup& setup);

// Flags first, then generation_config.json, then greedy with 512 new tokens; stop ids from the model, plus
// --stop_words (single tokens as stop ids, longer ones as stop sequences). UsageError naming the flag when out
// of range.
model::SamplingParams sampling_defaults(const cli::Flags& flags, const InferenceModel& m, uint64_t seed);

// The args.json of the first adapter checkpoint (written by swift sft or ms-swift), or an empty object.
nlohmann::json checkpoint_args(const std::vector<std::string>& adapters);
// --name when given, else the checkpoint's recorded string value, else the flag's default.
std::string arg_or(const cli::Flags& flags, const nlohmann::json& saved, const std::string& name);

// "true"/"false" (or 1/0) of a string flag; nullopt when not given or empty.
std::optional<bool> optional_bool(const cli::Flags& flags, const std::string& name);

}  // namespace swift::recipes
