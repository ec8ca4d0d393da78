// Loading a model for generation (infer, deploy): checkpoint args.json defaults, adapters, tokenizer, chat
// template, stop tokens and sampling defaults.
#include "swift/recipes/inference_setup.h"
#include "swift/recipes/quant_flags.h"

#include <algorithm>
#include <filesystem>

#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/io/hf_config.h"
#include "swift/model/checkpoint.h"
#include "swift/model/family_registry.h"
#include "swift/template/select.h"
#include "swift/template/template_meta.h"
#include "swift/tuners/lora.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::recipes {

std::vector<cli::FlagSpec> inference_model_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"model", FlagType::kString, "", "Hugging Face model folder (config.json, *.safetensors, tokenizer files)"},
      {"adapters", FlagType::kList, "", "LoRA adapter folders (swift's checkpoints or any PEFT adapter); their args.json "
                                        "supplies --model, --template and --system when not given. deploy: name=path "
                                        "serves an adapter as model id `name` next to the base", {"ckpt_dir"}},
      {"template", FlagType::kString, "", "chat template; default: the checkpoint's args.json, else the model family's"},
      {"system", FlagType::kString, "", "system prompt (replaces the template's default)"},
      {"use_chat_template", FlagType::kBool, "true", "false: encode raw text as pretraining does (completion)"},
      {"enable_thinking", FlagType::kString, "", "true/false: Qwen3 thinking on or off (default: the template's)"},
      {"infer_backend", FlagType::kString, "pt", "pt (LibTorch); vllm/sglang/lmdeploy are not available"},
  };
  for (auto& f : quant_flags()) flags.push_back(f);
  return flags;
}

std::vector<cli::FlagSpec> generation_flags() {
  using cli::FlagType;
  return {
      {"max_new_tokens", FlagType::kInt, "", "tokens to generate at most (default: generation_config.json, else 512)"},
      {"temperature", FlagType::kFloat, "", "0 = greedy (default: generation_config.json, else greedy)"},
      {"top_k", FlagType::kInt, "", "sample among the k most likely tokens (0 = off)"},
      {"top_p", FlagType::kFloat, "", "nucleus sampling (1 = off)"},
      {"min_p", FlagType::kFloat, "", "drop tokens below min_p x the top probability (0 = off)"},
      {"repetition_penalty", FlagType::kFloat, "", "> 1 discourages repeats (1 = off)"},
      {"stop_words", FlagType::kList, "", "extra strings that end a reply"},
  };
}

std::optional<bool> optional_bool(const cli::Flags& flags, const std::string& name) {
  if (!flags.given(name) || flags.str(name).empty()) return std::nullopt;
  std::string v = flags.str(name);
  if (v == "true" || v == "True" || v == "1") return true;
  if (v == "false" || v == "False" || v == "0") return false;
  throw UsageError("--" + name + " expects true or false, got '" + v + "'", "e.g. --" + name + " false");
}

json checkpoint_args(const std::vector<std::string>& adapters) {
  if (adapters.empty()) return json::object();
  const fs::path path = fs::path(adapters.front()) / "args.json";
  return fs::exists(path) ? io::read_json_file(path) : json::object();
}

std::string arg_or(const cli::Flags& flags, const json& saved, const std::string& name) {
  if (flags.given(name) || !saved.contains(name) || !saved[name].is_string()) return flags.str(name);
  return saved[name].get<std::string>();
}

InferenceModel load_inference_model(const cli::Flags& flags, const CommonSetup& setup) {
  const std::string command = flags.command();
  // name=path adapters are served side by side by swift deploy (serve/multi_lora); the rest apply to the base.
  std::vector<std::string> adapters, named;
  for (const auto& a : flags.list("adapters")) (a.find('=') == std::string::npos ? adapters : named).push_back(a);
  SWIFT_CHECK(named.empty() || command == "deploy", UsageError,
              "--adapters name=path is for swift deploy; swift " + command + " takes adapter folders",
              "pass the folder alone, e.g. --adapters " + (named.empty() ? std::string() : named[0].substr(named[0].find('=') + 1)));
  const json saved = checkpoint_args(!adapters.empty() || named.empty()
                                         ? adapters
                                         : std::vector<std::string>{named[0].substr(named[0].find('=') + 1)});
  InferenceModel m;
  m.model_dir = arg_or(flags, saved, "model");
  SWIFT_CHECK(!m.model_dir.empty(), UsageError, "swift " + command + " needs --model",
              "e.g. swift " + command + " --model runs/quickstart/qwen3-tiny");
  SWIFT_CHECK(flags.str("infer_backend") == "pt", UsageError,
              "--infer_backend " + flags.str("infer_backend") + " is not available in swift",
              "use --infer_backend pt (LibTorch, CPU or CUDA)");
  SWIFT_CHECK(adapters.size() <= 1, UsageError, "--adapters takes one folder for now", "merge adapters with swift export first");
  model::LoadOptions load;
  load.dtype = parse_dtype(flags.str("torch_dtype"));
  load.device = parse_device(setup.device);
  load.quantize = quant_config_for(flags, saved);  // a QLoRA adapter's base loads quantized as it was trained
  m.model = model::load_model(m.model_dir, load);
  for (const auto& dir : adapters) {

    const auto config = with_context("loading adapter " + dir, [&] { return tuners::load_adapter(m.model, dir); });
    log_info("adapter ", dir, ": LoRA r=", config.r, " on ", tuners::lora_modules(m.model).size(), " modules");
  }
  m.model->eval();
  m.load_options = load;
  m.tokenizer = with_context("loading the tokenizer of " + m.model_dir,
                             [&] { return tokenizer::Tokenizer::load(m.model_dir); });

  templates::TemplateOptions options;
  if (flags.given("system")) options.system = flags.str("system");
  else if (saved.contains("system") && saved["system"].is_string()) options.system = saved["system"].get<std::string>();
  options.enable_thinking = optional_bool(flags, "enable_thinking");
  m.enable_thinking = options.enable_thinking;
  if (flags.boolean("use_chat_template")) {
    const auto* family = model::find_model_family(m.model->config().model_type, {});
    std::vector<fs::path> checkpoint_dirs(adapters.begin(), adapters.end());
    checkpoint_dirs.push_back(m.model_dir);
    const auto choice = templates::choose_template(flags.str("template"), checkpoint_dirs,
                                                   family ? family->default_template : "",
                                                   "the default for model_type " + m.model->config().model_type);
    m.chat = std::make_unique<templates::Template>(templates::find_template_meta(choice.name), *m.tokenizer, options);
    if (auto missing = m.chat->missing_token()) {
      throw UsageError("template '" + choice.name + "' (from " + choice.source + ") needs the token " + *missing +
                           ", which the tokenizer of " + m.model_dir + " lacks",
                       "pick a matching --template (" + templates::template_names_joined() +
                           ") or pass --use_chat_template false for plain completion");
    }
    log_info("template: ", choice.name, " (", choice.source, ")");
  } else {
    m.chat = std::make_unique<templates::Template>(templates::plain_text_template_meta(), *m.tokenizer, options);
  }
  m.generation_config = io::load_generation_config(m.model_dir);
  m.stop_token_ids = m.chat->stop_token_ids();
  for (const auto& id : m.generation_config.eos_token_ids)
    if (std::find(m.stop_token_ids.begin(), m.stop_token_ids.end(), id) == m.stop_token_ids.end())
      m.stop_token_ids.push_back(id);
  return m;
}

model::SamplingParams sampling_defaults(const cli::Flags& flags, const InferenceModel& m, uint64_t seed) {
  const auto& gen = m.generation_config;
  model::SamplingParams p;
  p.max_new_tokens = flags.given("max_new_tokens") ? flags.integer("max_new_tokens") : gen.max_new_tokens.value_or(512);
  const bool sample = gen.do_sample.value_or(gen.temperature.has_value());
  p.temperature = flags.given("temperature") ? flags.number("temperature") : (sample ? gen.temperature.value_or(1.0) : 0.0);
  p.top_k = flags.given("top_k") ? flags.integer("top_k") : gen.top_k.value_or(0);
  p.top_p = flags.given("top_p") ? flags.number("top_p") : gen.top_p.value_or(1.0);
  p.min_p = flags.given("min_p") ? flags.number("min_p") : gen.min_p.value_or(0.0);
  p.repetition_penalty = flags.given("repetition_penalty") ? flags.number("repetition_penalty")
                                                           : gen.repetition_penalty.value_or(1.0);
  p.seed = seed;
  SWIFT_CHECK(p.max_new_tokens > 0, UsageError, "--max_new_tokens must be positive", "e.g. --max_new_tokens 256");
  SWIFT_CHECK(p.temperature >= 0, UsageError, "--temperature must be >= 0", "0 is greedy; 0.7 is a common choice");
  SWIFT_CHECK(p.top_p > 0 && p.top_p <= 1, UsageError, "--top_p must be in (0, 1]", "e.g. --top_p 0.9");
  SWIFT_CHECK(p.repetition_penalty > 0, UsageError, "--repetition_penalty must be > 0", "1 turns it off");
  p.stop_token_ids = m.stop_token_ids;
  for (const auto& word : flags.list("stop_words")) {
    auto ids = m.tokenizer->encode(word);
    if (ids.size() == 1) p.stop_token_ids.push_back(ids[0]);
    else if (!ids.empty()) p.stop_sequences.push_back(ids);
  }
  return p;
}

}  // namespace swift::recipes
