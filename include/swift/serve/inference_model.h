// What `swift infer` and `swift deploy` share: their model flags and sampling flags as typed options, the model
// with its tokenizer and chat template loaded from them (a checkpoint's args.json filling --model, --template and
// --system when not given), the stop tokens, and sampling defaults from the options, then generation_config.json,
// then greedy with 512 new tokens.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/cli/problems.h"
#include "swift/io/hf_config.h"
#include "swift/model/checkpoint.h"
#include "swift/model/decoder.h"
#include "swift/model/sampling.h"
#include "swift/quant/quant_config.h"
#include "swift/template/template.h"
#include "swift/tokenizer/tokenizer.h"

namespace swift::serve {

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

// The flags inference_options reads: model, adapters, template, system, use_chat_template, enable_thinking,
// infer_backend and the --quant_* flags (plus the common flags).
std::vector<cli::FlagSpec> inference_model_flags();
// The flags generation_options reads: max_new_tokens, temperature, top_k, top_p, min_p, repetition_penalty,
// stop_words.
std::vector<cli::FlagSpec> generation_flags();

// Which model infer and deploy load and how, from their flags: --model (else the first adapter checkpoint's
// args.json), the adapters, the template and system prompt (the checkpoint's when not given), the dtype and the
// quantization (a QLoRA adapter's base loads quantized as it was trained).
struct InferenceOptions {
  std::string command;                      // infer or deploy, for messages
  std::string model_dir;
  std::vector<std::string> adapters;        // adapter folders applied to the base (at most one)
  std::vector<std::string> named_adapters;  // deploy: name=path, each served as its own model id
  std::vector<std::string> checkpoint_dirs; // where a template is looked up first (the adapters')
  std::string template_name;                // --template ("" : the checkpoints', else the family's default)
  std::optional<std::string> system;        // --system, else the checkpoint's
  bool use_chat_template = true;
  std::optional<bool> enable_thinking;      // unset: the template's default
  std::string agent_template;               // --agent_template, else the checkpoint's ("": the template's own)
  std::string model_given;                  // --model as given: a folder, or a hub id before it became one
  std::optional<c10::ScalarType> torch_dtype;  // unset: the checkpoint's
  std::optional<quant::QuantConfig> quantization;
  std::string device;                       // --device
  std::vector<std::string> notes;           // --infer_backend and other engines' flags: logged when loading
};
// The options of `flags` (an infer or deploy table); what is wrong goes to `problems`.
InferenceOptions inference_options(const cli::Flags& flags, const std::string& device, cli::Problems& problems);

// Sampling as the flags set it; each unset value comes from generation_config.json, else greedy with 512 new
// tokens.
struct GenerationOptions {
  std::optional<int64_t> max_new_tokens, top_k;
  std::optional<double> temperature, top_p, min_p, repetition_penalty;
  std::vector<std::string> stop_words;
};
GenerationOptions generation_options(const cli::Flags& flags);

// Loads the model (with at most one adapter applied), tokenizer and template, in eval mode.
InferenceModel load_inference_model(const InferenceOptions& options);

// The options first, then generation_config.json, then greedy with 512 new tokens; stop ids from the model, plus
// the stop words (single tokens as stop ids, longer ones as stop sequences). UsageError naming the flag when out
// of range.
model::SamplingParams sampling_defaults(const GenerationOptions& options, const InferenceModel& m, uint64_t seed);

// The args.json of the first adapter checkpoint (written by swift sft or ms-swift), or an empty object.
nlohmann::json checkpoint_args(const std::vector<std::string>& adapters);
// --name when given, else the checkpoint's recorded string value, else the flag's default.
std::string arg_or(const cli::Flags& flags, const nlohmann::json& saved, const std::string& name);

}  // namespace swift::serve
