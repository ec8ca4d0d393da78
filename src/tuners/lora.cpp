// LoRA on the decoder: choosing targets, attaching and initialising branches, freezing, PEFT adapter folders,
// merging.
#include "swift/tuners/lora.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <set>

#include "swift/core/atomic_write.h"
#include "swift/core/error.h"
#include "swift/io/hf_config.h"
#include "swift/model/checkpoint.h"
#include "swift/model/moe.h"
#include "swift/model/param_sharding.h"
#include "swift/tuners/lora_experts.h"
#include "swift/tuners/lora_linear.h"

namespace fs = std::filesystem;

namespace swift::tuners {

namespace {

const std::string kPeftPrefix = "base_model.model.";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// PEFT's rule for a module name in a list: the whole name, or a suffix after a '.'.
bool name_matches(const std::string& name, const std::string& target) {
  return name == target || ends_with(name, "." + target);
}

bool is_lora_branch(const std::string& name) { return ends_with(name, ".lora_A") || ends_with(name, ".lora_B"); }

// The model's base Linear layers (not LoRA branches, nor the routers of mixture-of-experts layers, which PEFT does
// not see as Linear layers), in model order.
std::vector<std::pair<std::string, model::LinearImpl*>> base_linears(model::CausalLM& model) {
  std::vector<std::pair<std::string, model::LinearImpl*>> out;
  for (const auto& item : model->named_modules("", /*include_self=*/false)) {
    auto* linear = item.value()->as<model::LinearImpl>();
    if (linear && !is_lora_branch(item.key()) && !model::is_router(item.key())) out.emplace_back(item.key(), linear);
  }
  return out;
}

std::string available_linears(const std::vector<std::pair<std::string, model::LinearImpl*>>& linears) {
  std::set<std::string> suffixes;
  for (const auto& [name, _] : linears) suffixes.insert(name.substr(name.rfind('.') + 1));
  std::string s;
  for (const auto& x : suffixes) s += (s.empty() ? "" : ", ") + x;
  if (!linears.empty()) s += " (e.g. " + linears.front().first + ")";
  return s;
}

// Which Linear layers `config` selects; UsageError for a target that selects nothing.
std::vector<std::pair<std::string, model::LinearImpl*>> select_targets(model::CausalLM& model, const LoraConfig& c) {
  const auto linears = base_linears(model);
  const std::string hint = "Linear layers of this model: " + available_linears(linears) +
                           "; or --target_modules all-linear";
  std::vector<std::pair<std::string, model::LinearImpl*>> out;
  if (c.target_regex) {
    std::regex re;
    try {
      re = std::regex(*c.target_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw UsageError("--target_regex '" + *c.target_regex + "' is not a valid regular expression: " + e.what());
    }
    for (const auto& item : linears)
      if (std::regex_match(item.first, re)) out.push_back(item);
    SWIFT_CHECK(!out.empty(), UsageError,
                "--target_regex '" + *c.target_regex + "' matches no Linear layer (it must match a whole module name)",
                hint);
    return out;
  }
  std::vector<bool> chosen(linears.size(), false);
  const model::LinearImpl* output = model->output_layer();
  for (const auto& target : c.target_modules) {
    bool found = false;
    for (size_t i = 0; i < linears.size(); ++i) {
      // all-linear: every Linear but the output layer (lm_head, or a sequence classifier's score), as PEFT
      const bool hit = target == "all-linear" ? linears[i].second != output : name_matches(linears[i].first, target);
      if (hit) chosen[i] = found = true;
    }
    if (!found) {
      std::string other;  // a module of another kind (embed_tokens) gets a clearer message
      for (const auto& item : model->named_modules("", false))
        if (name_matches(item.key(), target)) other = item.key();
      SWIFT_CHECK(other.empty(), UsageError,
                  "--target_modules '" + target + "' names " + other + ", which is not a Linear layer",
                  "LoRA applies to Linear layers only here; train it in full with --modules_to_save " + target);
      throw UsageError("--target_modules '" + target + "' matches no module of this model", hint);
    }
  }
  for (size_t i = 0; i < linears.size(); ++i)
    if (chosen[i]) out.push_back(linears[i]);
  return out;
}

// LibTorch has no unregister_parameter; Module::parameters_ is protected, which a derived class may name to form
// a member pointer usable on any Module. Used to take DoRA's magnitude off a Linear when merging.
struct ParameterEraser : torch::nn::Module {
  static void erase(torch::nn::Module& module, const std::string& name) {
    (module.*&ParameterEraser::parameters_).erase(name);
  }
};

// [rows, cols] fp32 on CPU from `gen`.
at::Tensor uniform(int64_t rows, int64_t cols, double bound, at::Generator& gen) {
  return at::empty({rows, cols}, at::kFloat).uniform_(-bound, bound, gen);
}

}  // namespace

std::vector<std::string> lora_modules(model::CausalLM& model) {
  std::vector<std::string> out;
  for (const auto& [name, linear] : base_linears(model))
    if (std::dynamic_pointer_cast<LoraLinear>(linear->adapter)) out.push_back(name);
  return out;
}

AdaptersDisabled::AdaptersDisabled(model::CausalLM& model) : experts_(std::make_unique<ExpertAdaptersDisabled>(model)) {
  for (auto& [name, linear] : base_linears(model)) {
    if (!std::dynamic_pointer_cast<LoraLinear>(linear->adapter)) continue;
    disabled_.emplace_back(linear, linear->adapter);
    linear->adapter = nullptr;
  }
}

AdaptersDisabled::~AdaptersDisabled() {
  for (auto& [linear, adapter] : disabled_) linear->adapter = adapter;
}

void set_lora_dropout(model::CausalLM& model, double p) {
  for (auto& [name, linear] : base_linears(model))
    if (auto lora = std::dynamic_pointer_cast<LoraLinear>(linear->adapter)) lora->dropout = p;
}

LoraConfig convert_expert_targets(model::CausalLM& model, const LoraConfig& in) {
  const auto& c = model->config();
  // transformers v5's conversion mapping, as PEFT reads it: each former expert projection -> its stacked weight.
  std::vector<std::pair<std::string, std::string>> mapping;
  if (c.model_type == "mixtral") mapping = {{"w1", "gate_up_proj"}, {"w3", "gate_up_proj"}, {"w2", "down_proj"}};
  // (transformers 5.19 lists qwen3_moe and deepseek_v2/v3 under qwen2_moe's pattern, but not qwen2_moe itself, which
  // PEFT therefore leaves alone: there all-linear adapts the shared expert's MLP.)
  else if (c.model_type == "qwen3_moe" || c.model_type == "deepseek_v2" || c.model_type == "deepseek_v3")
    mapping = {{"gate_proj", "gate_up_proj"}, {"up_proj", "gate_up_proj"}, {"down_proj", "down_proj"}};
  if (mapping.empty() || !c.is_moe()) return in;
  SWIFT_CHECK(!in.target_regex, UsageError,
              "--target_regex on " + c.model_type + ": PEFT 0.20 resolves a regular expression against the experts' "
              "former names on this model, which swift does not reproduce yet",
              "name the modules with --target_modules (and the experts with --target_parameters)");

  // all-linear as ms-swift hands it to PEFT: the names of every Linear layer but the output layer.
  std::vector<std::string> targets;
  const model::LinearImpl* output = model->output_layer();
  for (const auto& t : in.target_modules) {
    if (t != "all-linear") {
      targets.push_back(t);
      continue;
    }
    for (const auto& [name, linear] : base_linears(model)) {
      const std::string leaf = name.substr(name.rfind('.') + 1);
      if (linear != output && std::find(targets.begin(), targets.end(), leaf) == targets.end()) targets.push_back(leaf);
    }
  }
  LoraConfig out = in;
  out.target_modules.clear();
  std::set<std::string> fused_parts;
  bool converted = false;
  for (const auto& t : targets) {
    const std::string leaf = t.substr(t.rfind('.') + 1);
    SWIFT_CHECK(leaf != "gate", UsageError,
                "--target_modules " + t + " on " + c.model_type + " names the router, which swift's LoRA does not adapt yet",
                "drop it (PEFT 0.20 adapts the router's weight as a target parameter; ms-swift's all-linear does not)");
    const auto it = std::find_if(mapping.begin(), mapping.end(), [&](const auto& m) { return m.first == leaf; });
    if (it == mapping.end()) {
      out.target_modules.push_back(t);
      continue;
    }
    converted = true;
    if (std::find(out.target_parameters.begin(), out.target_parameters.end(), it->second) == out.target_parameters.end())
      out.target_parameters.push_back(it->second);
    if (it->second == "gate_up_proj") fused_parts.insert(leaf);
  }
  if (!converted) return in;
  const std::string gate = mapping[0].first, up = mapping[1].first;
  SWIFT_CHECK(fused_parts.size() != 1, UsageError,
              "--target_modules " + *fused_parts.begin() + " on " + c.model_type + " without " +
                  (fused_parts.count(gate) ? up : gate) + ": the two are fused into the experts' gate_up_proj",
              "target both or neither (PEFT 0.20 refuses this too)");
  SWIFT_CHECK(in.lora_dropout == 0, UsageError,
              "--target_modules " + std::string(in.target_modules.size() == 1 && in.target_modules[0] == "all-linear"
                                                    ? "all-linear" : "with " + mapping[0].first + "/" + mapping[2].first) +
                  " on " + c.model_type + " adapts the experts' stacked weights (PEFT 0.20 converts those names for "
                  "transformers v5's fused experts), which needs --lora_dropout 0: PEFT adapts them without dropout, "
                  "and ms-swift 4.6 stops here with PEFT's ValueError",
              "add --lora_dropout 0, or name the attention's layers alone (--target_modules q_proj k_proj v_proj o_proj)");
  if (fused_parts.size() == 2) {  // PEFT: the fused pair's rank and alpha double, so alpha / r stays
    const std::string key = ".*\\.gate_up_proj";
    const auto same_key = [&](const auto& p) { return p.first == key; };
    out.rank_pattern.erase(std::remove_if(out.rank_pattern.begin(), out.rank_pattern.end(), same_key), out.rank_pattern.end());
    out.alpha_pattern.erase(std::remove_if(out.alpha_pattern.begin(), out.alpha_pattern.end(), same_key),
                            out.alpha_pattern.end());
    out.rank_pattern.emplace_back(key, 2 * in.r);
    out.alpha_pattern.emplace_back(key, 2 * in.lora_alpha);
  }
  return out;
}

std::vector<std::string> apply_lora(model::CausalLM& model, const LoraConfig& config, uint64_t seed) {
  validate(config);
  SWIFT_CHECK(lora_modules(model).empty(), UsageError, "this model already carries LoRA layers",
              "merge them first (merge_lora) or load the base model again");
  const auto targets = select_targets(model, config);
  check_expert_lora(model, config);

  // modules_to_save: resolved before anything changes, so an error leaves the model untouched.
  std::vector<std::shared_ptr<torch::nn::Module>> to_save;
  for (const auto& m : config.modules_to_save) {
    bool found = false;
    for (const auto& item : model->named_modules("", false)) {
      if (!name_matches(item.key(), m) || is_lora_branch(item.key())) continue;
      for (const auto& t : targets)
        SWIFT_CHECK(t.first != item.key(), UsageError,
                    "'" + m + "' is both a LoRA target and in --modules_to_save", "choose one of the two");
      to_save.push_back(item.value());
      found = true;
    }
    SWIFT_CHECK(found, UsageError, "--modules_to_save '" + m + "' matches no module of this model",
                "typical choices: embed_tokens, lm_head (InternLM2: tok_embeddings, output; a model with "
                "tie_word_embeddings has no head of its own)");
  }

  for (auto& p : model->parameters()) p.set_requires_grad(false);
  for (auto& m : to_save)
    for (auto& p : m->parameters()) p.set_requires_grad(true);

  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  std::vector<std::string> names;
  for (const auto& [name, linear] : targets) {
    const double scaling = config.scaling_for(name);
    const int64_t r = config.rank_for(name);
    const int64_t out = linear->out_features(), in = linear->in_features();
    at::Tensor a, b;
    switch (config.init_weights) {
      case LoraInit::kDefault:  // kaiming_uniform_(a=sqrt(5)): bound 1/sqrt(fan_in); B = 0
        a = uniform(r, in, 1.0 / std::sqrt(static_cast<double>(in)), gen);
        b = at::zeros({out, r}, at::kFloat);
        break;
      case LoraInit::kGaussian:  // normal_(std=1/r); B = 0
        a = at::empty({r, in}, at::kFloat).normal_(0.0, 1.0 / static_cast<double>(r), gen);
        b = at::zeros({out, r}, at::kFloat);
        break;
      case LoraInit::kRandom:  // nn.Linear's own init for both
        a = uniform(r, in, 1.0 / std::sqrt(static_cast<double>(in)), gen);
        b = uniform(out, r, 1.0 / std::sqrt(static_cast<double>(r)), gen);
        break;
    }
    // On the model's compute device: a ZeRO-3 rank may hold the base weight in CPU RAM (offload_param).
    const auto options = linear->weight.options()
                             .dtype(config.lora_dtype.value_or(linear->weight.scalar_type()))
                             .device(model->device());
    model::Linear lora_a(in, r, /*bias=*/false, options), lora_b(r, out, /*bias=*/false, options);
    {
      at::NoGradGuard no_grad;
      lora_a->weight.copy_(a);
      lora_b->weight.copy_(b);
    }
    lora_a->weight.set_requires_grad(true);
    lora_b->weight.set_requires_grad(true);
    // (The branch's own train/eval mode is never read: LoraLinear::forward follows the base layer's.)
    auto lora = std::make_shared<LoraLinear>(*linear, lora_a, lora_b, scaling, config.lora_dropout,
                                             config.use_dora ? at::empty({out}, options) : at::Tensor());
    if (config.use_dora) {  // DoRA starts at ||W + scaling * B A|| per row (fp32), so step 0 is the base model
      at::NoGradGuard no_grad;
      lora->magnitude.copy_(lora->weight_norm(*linear, at::kFloat));
    }
    linear->adapter = lora;
    names.push_back(name);
  }
  apply_expert_lora(model, config, gen);
  return names;
}

io::NamedTensors adapter_state_dict(model::CausalLM& model, const LoraConfig& config) {
  io::NamedTensors out;
  for (const auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    if (name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos ||
        ends_with(name, ".lora_magnitude_vector"))
      out.emplace_back(kPeftPrefix + name, item.value().detach());
  }
  for (const auto& m : config.modules_to_save)
    for (const auto& item : model->named_modules("", false)) {
      if (!name_matches(item.key(), m) || is_lora_branch(item.key())) continue;
      for (const auto& p : item.value()->named_parameters())
        out.emplace_back(kPeftPrefix + item.key() + "." + p.key(), p.value().detach());
    }
  return out;
}

void save_adapter(model::CausalLM& model, const LoraConfig& config, const fs::path& dir) {
  const auto wrapped = lora_modules(model);
  SWIFT_CHECK(!wrapped.empty() || !expert_lora_weights(model).empty(), UsageError,
              "saving an adapter: the model carries no LoRA layers", "call apply_lora (or load_adapter) first");
  AtomicDir out(dir);
  io::save_safetensors(out.path() / "adapter_model.safetensors", adapter_state_dict(model, config),
                       {{"format", "pt"}});
  io::write_json_file(out.path() / "adapter_config.json", to_adapter_config_json(config, wrapped));
  out.commit();
}

LoraConfig load_adapter(model::CausalLM& model, const fs::path& dir, std::optional<c10::ScalarType> lora_dtype) {
  const fs::path config_path = dir / "adapter_config.json";
  const fs::path weights_path = dir / "adapter_model.safetensors";
  SWIFT_CHECK(fs::exists(config_path), DataError, "no adapter_config.json in " + dir.string(),
              "pass a PEFT adapter folder (adapter_config.json + adapter_model.safetensors)");
  SWIFT_CHECK(fs::exists(weights_path), DataError, "no adapter_model.safetensors in " + dir.string(),
              fs::exists(dir / "adapter_model.bin")
                  ? "adapter_model.bin (pickle) is not read; re-save it with PEFT's safe_serialization=True"
                  : "pass a PEFT adapter folder (adapter_config.json + adapter_model.safetensors)");
  LoraConfig config = parse_adapter_config(io::read_json_file(config_path), config_path.string());
  config.lora_dtype = lora_dtype;
  auto file = io::SafetensorsFile::open(weights_path);
  // A reward model's adapter (PEFT's SEQ_CLS task, swift rlhf --rlhf_type rm) carries its score head: the causal
  // base becomes a sequence classifier with as many outputs for it to load into.
  const std::string score_key = std::string(kPeftPrefix) + "score.weight";
  if (config.task_type == "SEQ_CLS" && !model->is_sequence_classifier() && file->contains(score_key))
    model->make_sequence_classifier(file->entry(score_key).shape.at(0), 0);
  with_context("applying " + config_path.string(), [&] { return apply_lora(model, config, 0); });

  std::map<std::string, at::Tensor> expected;
  for (auto& [key, tensor] : adapter_state_dict(model, config)) expected.emplace(key, tensor);
  std::vector<std::string> missing, unexpected, misshapen;
  for (const auto& [key, _] : expected)
    if (!file->contains(key)) missing.push_back(key);
  for (const auto& e : file->entries())
    if (!expected.count(e.name)) unexpected.push_back(e.name);
    else if (e.shape != expected.at(e.name).sizes().vec()) misshapen.push_back(e.name);
  if (!missing.empty() || !unexpected.empty() || !misshapen.empty()) {
    std::string msg = weights_path.string() + " does not fit this model and adapter_config.json:";
    auto list = [&msg](const char* what, const std::vector<std::string>& keys) {
      if (keys.empty()) return;
      msg += std::string("\n  ") + what + " (" + std::to_string(keys.size()) + "):";
      for (size_t i = 0; i < keys.size() && i < 10; ++i) msg += " " + keys[i];
      if (keys.size() > 10) msg += " ...";
    };
    list("missing", missing);
    list("unexpected", unexpected);
    list("wrong shape", misshapen);
    throw DataError(msg, "maybe the adapter was trained on another base model?");
  }
  at::NoGradGuard no_grad;
  // A tensor-parallel rank reads the base weights trained in full (--modules_to_save) from here, not from the base
  // model after the split: they get their storage now, before the tensors copied into below alias it.
  for (const auto& [key, _] : expected) model::claim_deferred_parameter(model, key.substr(kPeftPrefix.size()));
  for (auto& [key, param] : adapter_state_dict(model, config))  // a ZeRO-3 rank skips the base weights it does not own
    if (model::holds_values(param)) param.copy_(file->get(key));
  return config;
}

int64_t merge_lora(model::CausalLM& model) {
  at::NoGradGuard no_grad;
  int64_t merged = 0;
  for (const auto& [name, linear] : base_linears(model)) {
    auto lora = std::dynamic_pointer_cast<LoraLinear>(linear->adapter);
    if (!lora) continue;
    // fp32 at least (bf16 rounding of the sum would be lossy); fp64 weights stay fp64.
    const auto dtype = at::promote_types(linear->weight.scalar_type(), at::kFloat);
    auto merged_weight = lora->adapted_weight(linear->dense_weight(dtype));  // [out, in]; a quantized base dequantized
    if (lora->use_dora()) {
      // DoRA as PEFT merges it: each row of W + s B A rescaled to its trained magnitude (the bias is untouched).
      auto norm = at::linalg_vector_norm(merged_weight, 2, {1});  // [out]
      merged_weight = (lora->magnitude.to(dtype) / norm).unsqueeze(1) * merged_weight;
      ParameterEraser::erase(*linear, "lora_magnitude_vector");
    }
    if (linear->quantized) linear->set_dense(merged_weight.to(linear->weight.scalar_type()));  // QLoRA: now dense
    else linear->weight.copy_(merged_weight);
    linear->adapter.reset();
    linear->unregister_module("lora_A");
    linear->unregister_module("lora_B");
    ++merged;
  }
  return merged + merge_expert_lora(model);
}

io::NamedTensors trainable_parameters(model::CausalLM& model) {
  io::NamedTensors out;
  for (const auto& item : model->named_parameters())
    if (item.value().requires_grad()) out.emplace_back(item.key(), item.value());
  return out;
}

}  // namespace swift::tuners
