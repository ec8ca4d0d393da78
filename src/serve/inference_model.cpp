// Loading a model for generation (infer, deploy): checkpoint args.json defaults, adapters, tokenizer, chat
// template, stop tokens and sampling defaults.
#include "swift/serve/inference_model.h"

#include <algorithm>
#include <filesystem>

#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/core/logging.h"
#include "swift/hub/hub_flags.h"
#include "swift/hub/hub_resolver.h"
#include "swift/io/hf_config.h"
#include "swift/model/checkpoint.h"
#include "swift/model/family_registry.h"
#include "swift/quant/quant_flags.h"
#include "swift/quant/quantized_loading.h"
#include "swift/serve/engine_flags.h"
#include "swift/template/agent_template.h"
#include "swift/template/select.h"
#include "swift/template/template_meta.h"
#include "swift/tuners/lora.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace swift::serve {

std::vector<cli::FlagSpec> inference_model_flags() {
  using cli::FlagType;
  std::vector<cli::FlagSpec> flags = {
      {"model", FlagType::kString, "", "Hugging Face model folder (config.json, *.safetensors, tokenizer files) or hub id (org/name)"},
      {"adapters", FlagType::kList, "", "LoRA adapter folders (swift's checkpoints or any PEFT adapter); their args.json "
                                        "supplies --model, --template and --system when not given. deploy: name=path "
                                        "serves an adapter as model id `name` next to the base", {"ckpt_dir"}},
      {"template", FlagType::kString, "", "chat template; default: the checkpoint's args.json, else the model family's"},
      {"system", FlagType::kString, "", "system prompt (replaces the template's default)"},
      {"use_chat_template", FlagType::kBool, "true", "false: encode raw text as pretraining does (completion)"},
      {"enable_thinking", FlagType::kString, "", "true/false: Qwen3 thinking on or off (default: the template's)"},
      {"agent_template", FlagType::kString, "",
       "how tools and tool calls are written and found in replies: hermes, llama3, react_en, glm4 (default: the "
       "checkpoint's args.json, else the template's own)"},
  };
  for (auto& f : quant::quant_flags()) flags.push_back(f);
  for (auto& f : engine_flags()) flags.push_back(f);
  for (auto& f : hub::hub_flags()) flags.push_back(f);  // --model as a hub id (org/name; docs/hub.md)
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

json checkpoint_args(const std::vector<std::string>& adapters) {
  if (adapters.empty()) return json::object();
  const fs::path path = fs::path(adapters.front()) / "args.json";
  return fs::exists(path) ? io::read_json_file(path) : json::object();
}

std::string arg_or(const cli::Flags& flags, const json& saved, const std::string& name) {
  if (flags.given(name) || !saved.contains(name) || !saved[name].is_string()) return flags.str(name);
  return saved[name].get<std::string>();
}

namespace {

// "true"/"false" (or 1/0) of a string flag; nullopt when not given or empty.
std::optional<bool> optional_bool(const cli::Flags& flags, const std::string& name) {
  if (!flags.given(name) || flags.str(name).empty()) return std::nullopt;
  std::string v = flags.str(name);
  if (v == "true" || v == "True" || v == "1") return true;
  if (v == "false" || v == "False" || v == "0") return false;
  throw UsageError("--" + name + " expects true or false, got '" + v + "'", "e.g. --" + name + " false");
}

template <typename T>
std::optional<T> given(const cli::Flags& flags, const std::string& name, T (cli::Flags::*read)(const std::string&) const) {
  if (!flags.given(name)) return std::nullopt;
  return (flags.*read)(name);
}

}  // namespace

InferenceOptions inference_options(const cli::Flags& flags, const std::string& device, cli::Problems& problems) {
  InferenceOptions o;
  o.command = flags.command();
  o.device = device;
  // name=path adapters are served side by side by swift deploy (serve/multi_lora); the rest apply to the base.
  for (const auto& a : flags.list("adapters")) (a.find('=') == std::string::npos ? o.adapters : o.named_adapters).push_back(a);
  problems.check(o.named_adapters.empty() || o.command == "deploy",
                 "--adapters name=path is for swift deploy; swift " + o.command + " takes adapter folders",
                 "pass the folder alone, e.g. --adapters " +
                     (o.named_adapters.empty() ? std::string() : o.named_adapters[0].substr(o.named_adapters[0].find('=') + 1)));
  // The first checkpoint's args.json: of a plain adapter, else of the first named one.
  const json saved = checkpoint_args(!o.adapters.empty() || o.named_adapters.empty()
                                         ? o.adapters
                                         : std::vector<std::string>{o.named_adapters[0].substr(o.named_adapters[0].find('=') + 1)});
  o.model_dir = arg_or(flags, saved, "model");
  o.model_given = o.model_dir;
  problems.check(!o.model_dir.empty(), "swift " + o.command + " needs --model",
                 "e.g. swift " + o.command + " --model runs/quickstart/qwen3-tiny");
  o.notes = problems.collect([&] { return engine_notes(flags); }, std::vector<std::string>{});
  problems.check(o.adapters.size() <= 1, "--adapters takes one folder for now", "merge adapters with swift export first");
  o.checkpoint_dirs = o.adapters;
  o.template_name = flags.str("template");
  o.agent_template = arg_or(flags, saved, "agent_template");
  if (!o.agent_template.empty()) problems.collect([&] { return templates::parse_agent_template(o.agent_template); }, templates::AgentTemplate::kHermes);
  if (flags.given("system")) o.system = flags.str("system");
  else if (saved.contains("system") && saved["system"].is_string()) o.system = saved["system"].get<std::string>();
  o.use_chat_template = flags.boolean("use_chat_template");
  o.enable_thinking = problems.collect([&] { return optional_bool(flags, "enable_thinking"); }, std::optional<bool>{});
  o.torch_dtype = problems.collect([&] { return parse_dtype(flags.str("torch_dtype")); }, std::optional<c10::ScalarType>{});
  // A QLoRA adapter's base loads quantized as it was trained.
  o.quantization = problems.collect([&] { return quant::quant_config_for(flags, saved); }, std::optional<quant::QuantConfig>{});
  // A hub id (org/name) becomes its snapshot folder, downloaded only once the rest of the command line is valid.
  if (problems.empty()) o.model_dir = problems.collect([&] { return hub::resolve_model(o.model_dir, hub::hub_options(flags)); }, o.model_dir);
  return o;
}

GenerationOptions generation_options(const cli::Flags& flags) {
  GenerationOptions o;
  o.max_new_tokens = given(flags, "max_new_tokens", &cli::Flags::integer);
  o.top_k = given(flags, "top_k", &cli::Flags::integer);
  o.temperature = given(flags, "temperature", &cli::Flags::number);
  o.top_p = given(flags, "top_p", &cli::Flags::number);
  o.min_p = given(flags, "min_p", &cli::Flags::number);
  o.repetition_penalty = given(flags, "repetition_penalty", &cli::Flags::number);
  o.stop_words = flags.list("stop_words");
  return o;
}

InferenceModel load_inference_model(const InferenceOptions& o) {
  InferenceModel m;
  m.model_dir = o.model_dir;
  for (const auto& note : o.notes) log_info(note);
  model::LoadOptions load;
  load.dtype = o.torch_dtype;
  load.device = parse_device(o.device);
  m.model = quant::load_model(m.model_dir, load, o.quantization);
  for (const auto& dir : o.adapters) {
    const auto config = with_context("loading adapter " + dir, [&] { return tuners::load_adapter(m.model, dir); });
    log_info("adapter ", dir, ": LoRA r=", config.r, " on ", tuners::lora_modules(m.model).size(), " modules");
  }
  m.model->eval();
  m.load_options = load;
  m.tokenizer = with_context("loading the tokenizer of " + m.model_dir,
                             [&] { return tokenizer::Tokenizer::load(m.model_dir); });

  templates::TemplateOptions options;
  options.system = o.system;
  options.enable_thinking = o.enable_thinking;
  if (!o.agent_template.empty()) options.agent_template = templates::parse_agent_template(o.agent_template);
  m.enable_thinking = options.enable_thinking;
  if (o.use_chat_template) {
    const auto* family = model::find_model_family(m.model->config().model_type, {});
    std::vector<fs::path> checkpoint_dirs(o.checkpoint_dirs.begin(), o.checkpoint_dirs.end());
    checkpoint_dirs.push_back(m.model_dir);
    const auto has_token = [&](const std::string& t) { return m.tokenizer->token_to_id(t).has_value(); };
    const auto choice = templates::choose_template(o.template_name, checkpoint_dirs, family ? family->template_for(has_token) : "",
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

model::SamplingParams sampling_defaults(const GenerationOptions& o, const InferenceModel& m, uint64_t seed) {
  const auto& gen = m.generation_config;
  model::SamplingParams p;
  p.max_new_tokens = o.max_new_tokens ? *o.max_new_tokens : gen.max_new_tokens.value_or(512);
  const bool sample = gen.do_sample.value_or(gen.temperature.has_value());
  p.temperature = o.temperature ? *o.temperature : (sample ? gen.temperature.value_or(1.0) : 0.0);
  p.top_k = o.top_k ? *o.top_k : gen.top_k.value_or(0);
  p.top_p = o.top_p ? *o.top_p : gen.top_p.value_or(1.0);
  p.min_p = o.min_p ? *o.min_p : gen.min_p.value_or(0.0);
  p.repetition_penalty = o.repetition_penalty ? *o.repetition_penalty : gen.repetition_penalty.value_or(1.0);
  p.seed = seed;
  SWIFT_CHECK(p.max_new_tokens > 0, UsageError, "--max_new_tokens must be positive", "e.g. --max_new_tokens 256");
  SWIFT_CHECK(p.temperature >= 0, UsageError, "--temperature must be >= 0", "0 is greedy; 0.7 is a common choice");
  SWIFT_CHECK(p.top_p > 0 && p.top_p <= 1, UsageError, "--top_p must be in (0, 1]", "e.g. --top_p 0.9");
  SWIFT_CHECK(p.repetition_penalty > 0, UsageError, "--repetition_penalty must be > 0", "1 turns it off");
  p.stop_token_ids = m.stop_token_ids;
  for (const auto& word : o.stop_words) {
    auto ids = m.tokenizer->encode(word);
    if (ids.size() == 1) p.stop_token_ids.push_back(ids[0]);
    else if (!ids.empty()) p.stop_sequences.push_back(ids);
  }
  return p;
}

}  // namespace swift::serve
