// LoraConfig: validation and PEFT's adapter_config.json (written with PEFT 0.21's field set, parsed from any
// PEFT version's).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>

#include "swift/core/error.h"
#include "swift/tuners/lora.h"

namespace swift::tuners {

using nlohmann::json;

double LoraConfig::scaling() const {
  return use_rslora ? lora_alpha / std::sqrt(static_cast<double>(r)) : lora_alpha / static_cast<double>(r);
}

namespace {
// PEFT's get_pattern_key: the first key that, as a regular expression, matches the name's end after a '.'.
template <class T>
const T* pattern_value(const std::vector<std::pair<std::string, T>>& pattern, const std::string& name) {
  for (const auto& [key, value] : pattern) {
    try {
      if (std::regex_match(name, std::regex("(.*\\.)?(" + key + ")"))) return &value;
    } catch (const std::regex_error& e) {
      throw UsageError("rank_pattern / alpha_pattern key '" + key + "' is not a valid regular expression: " + e.what());
    }
  }
  return nullptr;
}
}  // namespace

int64_t LoraConfig::rank_for(const std::string& name) const {
  const int64_t* v = pattern_value(rank_pattern, name);
  return v ? *v : r;
}

double LoraConfig::scaling_for(const std::string& name) const {
  const double rank = static_cast<double>(rank_for(name));
  const double* a = pattern_value(alpha_pattern, name);
  const double alpha = a ? *a : lora_alpha;
  return use_rslora ? alpha / std::sqrt(rank) : alpha / rank;
}

void validate(const LoraConfig& c) {
  std::vector<std::string> problems;
  if (c.r <= 0) problems.push_back("--lora_rank must be > 0, got " + std::to_string(c.r));
  if (!std::isfinite(c.lora_alpha)) problems.push_back("--lora_alpha must be a finite number, got " + std::to_string(c.lora_alpha));
  if (!(c.lora_dropout >= 0 && c.lora_dropout < 1))
    problems.push_back("--lora_dropout must be in [0, 1), got " + std::to_string(c.lora_dropout));
  if (c.bias != "none") problems.push_back("--lora_bias '" + c.bias + "' is not supported yet (only \"none\")");
  if (!c.target_regex && c.target_modules.empty() && c.target_parameters.empty())
    problems.push_back("--target_modules is empty (and no --target_parameters)");
  for (const auto& [key, rank] : c.rank_pattern)
    if (rank <= 0) problems.push_back("rank_pattern '" + key + "' must be > 0, got " + std::to_string(rank));
  std::vector<std::string> keys;
  for (const auto& p : c.rank_pattern) keys.push_back(p.first);
  for (const auto& p : c.alpha_pattern) keys.push_back(p.first);
  for (const auto& key : keys) {  // checked before any layer changes (Python-only syntax fails here)
    try {
      std::regex re(key);
    } catch (const std::regex_error& e) {
      problems.push_back("rank_pattern / alpha_pattern key '" + key + "' is not a regular expression swift reads: " + e.what());
    }
  }
  if (problems.empty()) return;
  std::string msg = "invalid LoRA configuration:";
  for (const auto& p : problems) msg += "\n  " + p;
  throw UsageError(msg, "fix the flags above (defaults: --lora_rank 8 --lora_alpha 32 --target_modules all-linear)");
}

namespace {

json number(double v) {  // PEFT writes integral alphas as ints
  if (std::floor(v) == v && std::abs(v) < 1e15) return json(static_cast<int64_t>(v));
  return json(v);
}

template <class T>
json patterns(const std::vector<std::pair<std::string, T>>& pattern) {
  json out = json::object();
  for (const auto& [key, value] : pattern) out[key] = number(static_cast<double>(value));
  return out;
}

}  // namespace

json to_adapter_config_json(const LoraConfig& c, const std::vector<std::string>& wrapped) {
  json target;
  if (c.target_regex) {
    target = *c.target_regex;
  } else {
    std::set<std::string> names;  // sorted, unique
    for (const auto& t : c.target_modules) {
      if (t != "all-linear") {
        names.insert(t);
        continue;
      }
      for (const auto& w : wrapped) names.insert(w.substr(w.rfind('.') + 1));
      if (wrapped.empty()) names.insert(t);
    }
    target = std::vector<std::string>(names.begin(), names.end());
    if (names.empty()) target = nullptr;  // the experts alone (target_parameters), as PEFT writes it
  }
  json init = c.init_weights == LoraInit::kDefault ? json(true)
              : c.init_weights == LoraInit::kRandom ? json(false)
                                                      : json("gaussian");
  // Every field PEFT 0.21's LoraConfig.save_pretrained writes, except peft_version (we are not PEFT; PEFT
  // fills in its own when it loads the file). nlohmann::json sorts keys, as PEFT's file is.
  json j = {
      {"alora_invocation_tokens", nullptr},
      {"alpha_pattern", patterns(c.alpha_pattern)},
      {"arrow_config", nullptr},
      {"auto_mapping", nullptr},
      {"base_model_name_or_path", c.base_model_name_or_path.empty() ? json(nullptr) : json(c.base_model_name_or_path)},
      {"bias", c.bias},
      {"corda_config", nullptr},
      {"ensure_weight_tying", false},
      {"eva_config", nullptr},
      {"exclude_modules", nullptr},
      {"fan_in_fan_out", false},
      {"inference_mode", true},
      {"init_lora_weights", init},
      {"kasa_config", nullptr},
      {"layer_replication", nullptr},
      {"layers_pattern", nullptr},
      {"layers_to_transform", nullptr},
      {"loftq_config", json::object()},
      {"lora_alpha", number(c.lora_alpha)},
      {"lora_bias", false},
      {"lora_dropout", c.lora_dropout},
      {"lora_ga_config", nullptr},
      {"megatron_config", nullptr},
      {"megatron_core", "megatron.core"},
      {"modules_to_save", c.modules_to_save.empty() ? json(nullptr) : json(c.modules_to_save)},
      {"monteclora_config", nullptr},
      {"peft_type", "LORA"},
      {"qalora_group_size", 16},
      {"r", c.r},
      {"rank_pattern", patterns(c.rank_pattern)},
      {"revision", nullptr},
      {"target_modules", target},
      {"target_parameters", c.target_parameters.empty() ? json(nullptr) : json(c.target_parameters)},
      {"task_type", c.task_type.empty() ? json(nullptr) : json(c.task_type)},
      {"trainable_token_indices", nullptr},
      {"use_bdlora", nullptr},
      {"use_dora", c.use_dora},
      {"use_qalora", false},
      {"use_rslora", c.use_rslora},
      {"velora_config", nullptr},
  };
  return j;
}

namespace {

// A field that must be absent, null, false or empty for swift to load the adapter faithfully.
bool unset(const json& j, const char* key) {
  if (!j.contains(key)) return true;
  const json& v = j.at(key);
  return v.is_null() || (v.is_boolean() && !v.get<bool>()) || (v.is_object() && v.empty()) ||
         (v.is_array() && v.empty());
}

}  // namespace

LoraConfig parse_adapter_config(const json& j, const std::string& source) {
  SWIFT_CHECK(j.is_object(), DataError, source + ": expected a JSON object", "is this a PEFT adapter_config.json?");
  const std::string peft_type = j.value("peft_type", std::string());
  SWIFT_CHECK(peft_type == "LORA", DataError,
              source + ": peft_type is '" + peft_type + "', swift loads LoRA adapters (\"LORA\") only",
              "pass a LoRA adapter folder");
  LoraConfig c;
  try {
    c.r = j.at("r").get<int64_t>();
    c.lora_alpha = j.contains("lora_alpha") && !j.at("lora_alpha").is_null() ? j.at("lora_alpha").get<double>() : 8.0;
    c.lora_dropout = j.contains("lora_dropout") && !j.at("lora_dropout").is_null() ? j.at("lora_dropout").get<double>() : 0.0;
    // PEFT allows no target_modules beside target_parameters (the experts alone).
    const json t = j.contains("target_modules") ? j.at("target_modules") : json(nullptr);
    c.target_modules.clear();
    if (t.is_null()) {
      if (!j.contains("target_parameters") || j.at("target_parameters").is_null())
        throw DataError(source + ": neither target_modules nor target_parameters", "is this a PEFT LoRA adapter_config.json?");
    } else if (t.is_string()) {
      if (t.get<std::string>() == "all-linear") c.target_modules = {"all-linear"};
      else c.target_regex = t.get<std::string>();
    } else {
      c.target_modules = t.get<std::vector<std::string>>();
      std::sort(c.target_modules.begin(), c.target_modules.end());
    }
    if (j.contains("target_parameters") && !j.at("target_parameters").is_null())
      c.target_parameters = j.at("target_parameters").get<std::vector<std::string>>();
    if (j.contains("modules_to_save") && !j.at("modules_to_save").is_null())
      c.modules_to_save = j.at("modules_to_save").get<std::vector<std::string>>();
    c.use_rslora = j.value("use_rslora", false);
    c.use_dora = j.value("use_dora", false);
    c.bias = j.value("bias", std::string("none"));
    if (j.contains("init_lora_weights")) {
      const json& init = j.at("init_lora_weights");
      if (init.is_boolean()) c.init_weights = init.get<bool>() ? LoraInit::kDefault : LoraInit::kRandom;
      else if (init.is_string() && init.get<std::string>() == "gaussian") c.init_weights = LoraInit::kGaussian;
      else
        throw UsageError(source + ": init_lora_weights " + init.dump() + " is not supported",
                         "PiSSA/OLoRA/LoftQ/EVA adapters change the base weights; convert them to plain LoRA first");
    }
    if (j.contains("base_model_name_or_path") && j.at("base_model_name_or_path").is_string())
      c.base_model_name_or_path = j.at("base_model_name_or_path").get<std::string>();
    if (j.contains("task_type") && j.at("task_type").is_string()) c.task_type = j.at("task_type").get<std::string>();
  } catch (const json::exception& e) {
    throw DataError(source + ": malformed LoRA config: " + e.what(), "compare with an adapter_config.json PEFT writes");
  }
  std::vector<std::string> unsupported;
  for (const char* key : {"rank_pattern", "alpha_pattern"}) {
    if (unset(j, key)) continue;
    SWIFT_CHECK(j.at(key).is_object(), DataError, source + ": " + key + " must be an object, got " + j.at(key).dump(),
                "compare with an adapter_config.json PEFT writes");
    for (const auto& [pattern, value] : j.at(key).items()) {
      const bool rank = std::string(key) == "rank_pattern";
      SWIFT_CHECK(rank ? value.is_number_integer() : value.is_number(), DataError,
                  source + ": " + key + "['" + pattern + "'] must be " + (rank ? "an integer" : "a number") + ", got " +
                      value.dump(),
                  "compare with an adapter_config.json PEFT writes");
      if (std::string(key) == "rank_pattern") c.rank_pattern.emplace_back(pattern, value.get<int64_t>());
      else c.alpha_pattern.emplace_back(pattern, value.get<double>());
    }
  }
  for (const char* key : {"layers_to_transform", "layers_pattern", "exclude_modules",
                          "fan_in_fan_out", "lora_bias", "layer_replication",
                          "trainable_token_indices", "use_qalora", "alora_invocation_tokens"})
    if (!unset(j, key)) unsupported.push_back(std::string(key) + " = " + j.at(key).dump());
  if (c.bias != "none") unsupported.push_back("bias = \"" + c.bias + "\"");
  if (!unsupported.empty()) {
    std::string msg = source + ": this adapter uses PEFT features swift does not implement yet:";
    for (const auto& u : unsupported) msg += "\n  " + u;
    throw UsageError(msg, "merge the adapter with PEFT (merge_and_unload) and use the merged model");
  }
  return c;
}

}  // namespace swift::tuners
