// config.json -> ModelConfig, reporting every problem at once.
#include "swift/model/model_config.h"

#include <cmath>
#include <sstream>

#include "swift/core/error.h"
#include "swift/io/hf_config.h"
#include "swift/model/family_registry.h"

using nlohmann::json;

namespace swift::model {

namespace {

// Typed field access that records a problem instead of throwing, so one run reports them all.
struct FieldReader {
  const json& j;
  std::vector<std::string>& problems;

  bool present(const json& obj, const std::string& key) const { return obj.contains(key) && !obj.at(key).is_null(); }

  int64_t integer(const std::string& key, std::optional<int64_t> fallback, const json* obj = nullptr) {
    const json& o = obj ? *obj : j;
    if (!present(o, key)) {
      if (!fallback) problems.push_back("missing \"" + key + "\"");
      return fallback.value_or(0);
    }
    if (!o.at(key).is_number_integer()) {
      problems.push_back("\"" + key + "\" must be an integer, got " + o.at(key).dump());
      return fallback.value_or(0);
    }
    return o.at(key).get<int64_t>();
  }
  double number(const std::string& key, double fallback, const json* obj = nullptr) {
    const json& o = obj ? *obj : j;
    if (!present(o, key)) return fallback;
    if (!o.at(key).is_number()) {
      problems.push_back("\"" + key + "\" must be a number, got " + o.at(key).dump());
      return fallback;
    }
    return o.at(key).get<double>();
  }
  std::vector<double> numbers(const std::string& key, const json& o) {
    std::vector<double> out;
    if (!present(o, key)) return out;
    if (!o.at(key).is_array()) problems.push_back("\"" + key + "\" must be a list of numbers, got " + o.at(key).dump());
    else
      for (const auto& v : o.at(key)) {
        if (!v.is_number()) {
          problems.push_back("\"" + key + "\" must be a list of numbers, got " + o.at(key).dump());
          return {};
        }
        out.push_back(v.get<double>());
      }
    return out;
  }
  std::optional<double> optional_number(const std::string& key, const json& o) {
    if (!present(o, key)) return std::nullopt;
    return number(key, 0.0, &o);
  }
  bool boolean(const std::string& key, bool fallback) {
    if (!present(j, key)) return fallback;
    if (!j.at(key).is_boolean()) {
      problems.push_back("\"" + key + "\" must be true or false, got " + j.at(key).dump());
      return fallback;
    }
    return j.at(key).get<bool>();
  }
  std::string string(const std::string& key, const std::string& fallback) {
    if (!present(j, key)) return fallback;
    if (!j.at(key).is_string()) {
      problems.push_back("\"" + key + "\" must be a string, got " + j.at(key).dump());
      return fallback;
    }
    return j.at(key).get<std::string>();
  }
};

RopeConfig parse_rope_object(FieldReader& r, const json* scaling, double theta, int64_t max_position_embeddings) {
  RopeConfig rope;
  const json& j = r.j;
  rope.theta = theta;
  if (!scaling) return rope;
  if (!scaling->is_object()) {
    r.problems.push_back("\"rope_scaling\" must be an object, got " + scaling->dump());
    return rope;
  }
  const json& s = *scaling;
  if (r.present(s, "rope_theta")) rope.theta = r.number("rope_theta", rope.theta, &s);
  if (r.present(s, "rope_type") && s.at("rope_type").is_string()) rope.type = s.at("rope_type").get<std::string>();
  else if (r.present(s, "type") && s.at("type").is_string()) rope.type = s.at("type").get<std::string>();
  if (rope.type == "su") rope.type = "longrope";  // Phi-3's first files' name for it
  if (rope.type != "default" && rope.type != "linear" && rope.type != "dynamic" && rope.type != "llama3" &&
      rope.type != "yarn" && rope.type != "longrope") {
    r.problems.push_back("rope scaling type \"" + rope.type + "\" is not supported (supported: default, linear, "
                         "dynamic, llama3, yarn, longrope)");
    return rope;
  }
  rope.short_factor = r.numbers("short_factor", s);
  rope.long_factor = r.numbers("long_factor", s);
  if (rope.type != "default") {
    if (!r.present(s, "factor") && rope.type != "yarn" && rope.type != "longrope")
      r.problems.push_back("rope scaling needs \"factor\"");
    rope.factor = r.number("factor", 1.0, &s);
  }
  rope.low_freq_factor = r.number("low_freq_factor", 1.0, &s);
  rope.high_freq_factor = r.number("high_freq_factor", 4.0, &s);
  // Some checkpoints (Phi3 style) keep original_max_position_embeddings at top level; it wins, as in HF.
  if (r.present(j, "original_max_position_embeddings"))
    rope.original_max_position_embeddings = r.integer("original_max_position_embeddings", 0);
  else if (r.present(s, "original_max_position_embeddings"))
    rope.original_max_position_embeddings = r.integer("original_max_position_embeddings", 0, &s);
  else
    rope.original_max_position_embeddings = max_position_embeddings;
  if ((rope.type == "yarn" || rope.type == "longrope") && !r.present(s, "factor"))
    rope.factor = static_cast<double>(max_position_embeddings) / rope.original_max_position_embeddings;
  rope.attention_factor = r.optional_number("attention_factor", s);
  if (r.present(s, "beta_fast")) rope.beta_fast = r.number("beta_fast", 32.0, &s);
  if (r.present(s, "beta_slow")) rope.beta_slow = r.number("beta_slow", 1.0, &s);
  rope.mscale = r.optional_number("mscale", s);
  rope.mscale_all_dim = r.optional_number("mscale_all_dim", s);
  if (r.present(s, "truncate") && s.at("truncate").is_boolean()) rope.truncate = s.at("truncate").get<bool>();
  if (rope.type == "llama3" && rope.high_freq_factor == rope.low_freq_factor)
    r.problems.push_back("llama3 rope scaling needs high_freq_factor != low_freq_factor");
  return rope;
}

RopeConfig parse_rope(FieldReader& r, int64_t max_position_embeddings) {
  // transformers v5 writes "rope_parameters" (with rope_theta inside); v4 "rope_scaling" + "rope_theta".
  const json& j = r.j;
  const json* scaling = nullptr;
  if (r.present(j, "rope_parameters")) scaling = &j.at("rope_parameters");
  else if (r.present(j, "rope_scaling")) scaling = &j.at("rope_scaling");
  return parse_rope_object(r, scaling, r.number("rope_theta", 10000.0), max_position_embeddings);
}

// longrope's lists (one positive factor per rotated frequency) and lengths, for any family that names it.
void check_longrope(const ModelConfig& c, std::vector<std::string>& problems) {
  const RopeConfig& rope = c.rope;
  const int64_t rotary = static_cast<int64_t>(static_cast<double>(c.head_dim) * rope.partial_rotary_factor);
  for (auto [name, factors] : {std::pair{"short_factor", &rope.short_factor}, {"long_factor", &rope.long_factor}}) {
    if (static_cast<int64_t>(factors->size()) != rotary / 2)
      problems.push_back(std::string("longrope scaling's ") + name + " has " + std::to_string(factors->size()) +
                         " entries; it needs one per rotated frequency (" + std::to_string(rotary / 2) + ")");
    for (double f : *factors)
      if (!(std::isfinite(f) && f > 0)) {
        problems.push_back(std::string("longrope scaling's ") + name + " must hold positive numbers, got " + json(f).dump());
        break;
      }
  }
  if (rope.original_max_position_embeddings < 2)  // ln(original) divides the default attention factor
    problems.push_back("longrope needs original_max_position_embeddings >= 2, got " +
                       std::to_string(rope.original_max_position_embeddings));
  if (rope.attention_factor && !(std::isfinite(*rope.attention_factor) && *rope.attention_factor > 0))
    problems.push_back("longrope's attention_factor must be a positive number, got " + json(*rope.attention_factor).dump());
}

}  // namespace

bool ModelConfig::any_sliding_window() const {
  for (auto w : layer_sliding_window)
    if (w > 0) return true;
  return false;
}

ModelConfig parse_model_config(const json& j, const std::string& source) {
  SWIFT_CHECK(j.is_object(), DataError, source + " must hold a JSON object", "use the config.json of a Hugging Face model");
  std::vector<std::string> problems;
  FieldReader r{j, problems};
  ModelConfig c;
  c.raw = j;
  c.model_type = r.string("model_type", "");
  std::vector<std::string> architectures;
  if (j.contains("architectures") && j.at("architectures").is_array())
    for (const auto& a : j.at("architectures"))
      if (a.is_string()) architectures.push_back(a.get<std::string>());
  const ModelFamily* family = find_model_family(c.model_type, architectures);
  if (!family) {
    throw DataError(source + ": model_type \"" + c.model_type + "\" is not supported",
                    "supported model types: " + supported_model_types());
  }
  c.model_type = family->model_type;
  const std::string kSeqCls = "ForSequenceClassification";
  if (!architectures.empty() && architectures.front().size() > kSeqCls.size() &&
      architectures.front().compare(architectures.front().size() - kSeqCls.size(), kSeqCls.size(), kSeqCls) == 0) {
    // transformers: num_labels is the size of id2label (2 when absent)
    c.num_labels = j.contains("id2label") && j.at("id2label").is_object() ? static_cast<int64_t>(j.at("id2label").size())
                   : j.contains("num_labels")                          ? r.integer("num_labels", 2)
                                                                       : 2;
  }

  c.vocab_size = r.integer("vocab_size", std::nullopt);
  c.hidden_size = r.integer("hidden_size", std::nullopt);
  c.intermediate_size = r.integer("intermediate_size", std::nullopt);
  c.num_hidden_layers = r.integer("num_hidden_layers", std::nullopt);
  c.num_attention_heads = r.integer("num_attention_heads", std::nullopt);
  c.num_key_value_heads = r.integer("num_key_value_heads", c.num_attention_heads);
  c.rms_norm_eps = r.number("rms_norm_eps", 1e-6);
  c.max_position_embeddings = r.integer("max_position_embeddings", 2048);
  c.initializer_range = r.number("initializer_range", 0.02);
  c.hidden_act = r.string("hidden_act", "silu");
  c.tie_word_embeddings = r.boolean("tie_word_embeddings", false);
  c.torch_dtype = r.string("torch_dtype", r.string("dtype", "float32"));
  c.head_dim = (c.num_attention_heads > 0) ? c.hidden_size / c.num_attention_heads : 0;
  c.rope = parse_rope(r, c.max_position_embeddings);
  c.layer_sliding_window.assign(static_cast<size_t>(std::max<int64_t>(c.num_hidden_layers, 0)), 0);
  family->apply(j, c, problems);

  const auto bos = io::json_int_or_list(j, "bos_token_id", source);
  if (!bos.empty()) c.bos_token_id = bos.front();
  c.eos_token_ids = io::json_int_or_list(j, "eos_token_id", source);
  const auto pad = io::json_int_or_list(j, "pad_token_id", source);
  if (!pad.empty()) c.pad_token_id = pad.front();

  if (c.hidden_act == "swish") c.hidden_act = "silu";  // the same function
  if (c.hidden_act != "silu" && c.hidden_act != "gelu_pytorch_tanh")
    problems.push_back("hidden_act \"" + c.hidden_act + "\" is not supported (silu, gelu_pytorch_tanh)");
  if (c.is_moe() && c.hidden_act != "silu")
    problems.push_back("a mixture-of-experts model's experts compute silu, not \"" + c.hidden_act + "\"");
  for (auto [name, v] : {std::pair{"vocab_size", c.vocab_size}, {"hidden_size", c.hidden_size},
                         {"intermediate_size", c.intermediate_size}, {"num_hidden_layers", c.num_hidden_layers},
                         {"num_attention_heads", c.num_attention_heads}, {"num_key_value_heads", c.num_key_value_heads},
                         {"head_dim", c.head_dim}}) {
    if (v <= 0) problems.push_back(std::string("\"") + name + "\" must be positive, got " + std::to_string(v));
  }
  if (c.num_key_value_heads > 0 && c.num_attention_heads % c.num_key_value_heads != 0)
    problems.push_back("num_attention_heads (" + std::to_string(c.num_attention_heads) +
                       ") must be a multiple of num_key_value_heads (" + std::to_string(c.num_key_value_heads) + ")");
  if (c.head_dim % 2 != 0) problems.push_back("head_dim must be even for RoPE, got " + std::to_string(c.head_dim));
  // Values that would compute NaN from the first token: RoPE's base and scaling, the norms' epsilon.
  auto positive = [&](const char* name, double v) {
    if (!(std::isfinite(v) && v > 0)) problems.push_back(std::string("\"") + name + "\" must be a positive number, got " + json(v).dump());
  };
  positive("rope_theta", c.rope.theta);
  if (c.rope.type != "default") positive("rope_scaling.factor", c.rope.factor);
  if (c.sliding_rope) {
    positive("the sliding layers' rope_theta", c.sliding_rope->theta);
    if (c.sliding_rope->type != "default") positive("the sliding layers' rope factor", c.sliding_rope->factor);
  }
  for (auto [name, cap] : {std::pair{"attn_logit_softcapping", c.attn_logit_softcapping},
                           {"final_logit_softcapping", c.final_logit_softcapping}})
    if (cap != 0) positive(name, cap);
  if (c.rope.type == "longrope") check_longrope(c, problems);
  positive("rms_norm_eps", c.rms_norm_eps);
  if (!(std::isfinite(c.initializer_range) && c.initializer_range >= 0))
    problems.push_back("\"initializer_range\" must be a number >= 0, got " + json(c.initializer_range).dump());

  if (!problems.empty()) {
    std::ostringstream msg;
    msg << source << " has " << problems.size() << " problem(s):";
    for (const auto& p : problems) msg << "\n  - " << p;
    throw DataError(msg.str(), "fix config.json; it must describe a " + supported_model_types() + " model");
  }
  return c;
}

RopeConfig parse_rope_parameters(const json* parameters, double theta, int64_t max_position_embeddings, const json& top,
                                 std::vector<std::string>& problems) {
  FieldReader r{top, problems};
  return parse_rope_object(r, parameters, theta, max_position_embeddings);
}

ModelConfig load_model_config(const std::filesystem::path& dir) {
  const auto path = dir / "config.json";
  SWIFT_CHECK(std::filesystem::exists(path), DataError, "no config.json in " + dir.string(),
              "--model must be a Hugging Face model folder (config.json + *.safetensors), e.g. "
              "configs/models/qwen3-tiny");
  return parse_model_config(io::read_json_file(path), path.string());
}

double parameter_count(const ModelConfig& c) {
  const double hidden = static_cast<double>(c.hidden_size), inter = static_cast<double>(c.intermediate_size);
  const double q = static_cast<double>(c.q_dim()), kv = static_cast<double>(c.kv_dim());
  const bool qkv_bias = c.attention_bias || c.qkv_bias;
  double layer = hidden * (q + 2 * kv) + q * hidden;                 // q, k, v, o
  if (qkv_bias) layer += q + 2 * kv;
  if (c.attention_bias) layer += hidden;
  if (const auto& a = c.latent_attention) {  // DeepSeek's MLA instead
    const double heads = static_cast<double>(c.num_attention_heads), bias = c.attention_bias ? 1 : 0;
    const double q_rank = static_cast<double>(a->q_lora_rank), kv_rank = static_cast<double>(a->kv_lora_rank);
    const double latent = kv_rank + static_cast<double>(a->qk_rope_head_dim);
    const double query = heads * static_cast<double>(a->qk_head_dim());
    layer = a->q_lora_rank > 0 ? hidden * q_rank + bias * q_rank + q_rank + q_rank * query : hidden * query;
    layer += hidden * latent + bias * latent + kv_rank;                                                   // kv_a, its norm
    layer += kv_rank * heads * static_cast<double>(a->qk_nope_head_dim + a->v_head_dim);                  // kv_b
    layer += heads * static_cast<double>(a->v_head_dim) * hidden + bias * hidden;                         // o
  }
  layer += (c.sandwich_norms ? 4 : 2) * hidden + (c.qk_norm ? 2 * static_cast<double>(c.head_dim) : 0);  // norms
  const double dense_mlp = 3 * hidden * inter + (c.mlp_bias ? 2 * inter + hidden : 0);  // gate, up, down
  const double experts = static_cast<double>(c.moe.num_experts);
  const double sparse_mlp = experts * hidden                                                       // router
                            + experts * 3 * hidden * static_cast<double>(c.moe.expert_intermediate_size)
                            + (c.moe.shared_expert_intermediate_size > 0
                                   ? 3 * hidden * static_cast<double>(c.moe.shared_expert_intermediate_size) +
                                         (c.moe.shared_expert_gated ? hidden : 0)
                                   : 0)  // the shared expert and its gate
                            + (c.moe.score_correction_bias ? experts : 0);
  double layers = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    layers += layer + (c.is_moe() && c.sparse_layer(i) ? sparse_mlp : dense_mlp);
  const double embedding = static_cast<double>(c.vocab_size) * hidden;
  const double head = c.num_labels > 0 ? hidden * static_cast<double>(c.num_labels) : c.tie_word_embeddings ? 0 : embedding;
  return embedding + head + layers + hidden;  // + the final norm
}

json model_config_to_json(const ModelConfig& config) {
  json j = config.raw;
  j["torch_dtype"] = config.torch_dtype;
  if (j.contains("dtype")) j["dtype"] = config.torch_dtype;
  return j;
}

}  // namespace swift::model
