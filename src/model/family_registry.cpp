// One row per supported model family: how its config.json flags map onto the shared decoder.
#include "swift/model/family_registry.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "swift/model/model_config.h"

using nlohmann::json;

namespace swift::model {

namespace {

bool flag(const json& j, const char* key, bool fallback) {
  return j.contains(key) && j.at(key).is_boolean() ? j.at(key).get<bool>() : fallback;
}
int64_t integer(const json& j, const char* key, int64_t fallback) {
  return j.contains(key) && j.at(key).is_number_integer() ? j.at(key).get<int64_t>() : fallback;
}
std::string text(const json& j, const char* key, const std::string& fallback) {
  return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : fallback;
}
double number(const json& j, const char* key, double fallback) {
  return j.contains(key) && j.at(key).is_number() ? j.at(key).get<double>() : fallback;
}
// The family's config class defaults where config.json leaves the field out (the generic parser assumes Llama's:
// rope_theta 1e4, rms_norm_eps 1e-6, max_position_embeddings 2048).
void class_defaults(const json& j, ModelConfig& c, double rope_theta, double rms_norm_eps,
                    int64_t max_position_embeddings) {
  const bool theta_given = j.contains("rope_theta") || (j.contains("rope_parameters") && j.at("rope_parameters").is_object() &&
                                                        j.at("rope_parameters").contains("rope_theta"));
  if (!theta_given) c.rope.theta = rope_theta;
  if (!j.contains("rms_norm_eps")) c.rms_norm_eps = rms_norm_eps;
  if (!j.contains("max_position_embeddings")) {
    // RoPE scaling parsed against the generic default takes the family's instead (transformers' own fallback).
    if (c.rope.original_max_position_embeddings == c.max_position_embeddings)
      c.rope.original_max_position_embeddings = max_position_embeddings;
    c.max_position_embeddings = max_position_embeddings;
  }
}
void explicit_head_dim(const json& j, ModelConfig& c, int64_t fallback) {
  c.head_dim = integer(j, "head_dim", fallback);
}

// config.json's layer_types, when it has them: `window` on its "sliding_attention" layers, 0 on the others. False
// when there are none (the family's own rule applies).
bool windows_from_layer_types(const json& j, ModelConfig& c, int64_t window, std::vector<std::string>& problems) {
  if (!j.contains("layer_types") || !j.at("layer_types").is_array()) return false;
  const auto& types = j.at("layer_types");
  if (static_cast<int64_t>(types.size()) != c.num_hidden_layers) {
    problems.push_back("layer_types has " + std::to_string(types.size()) + " entries for " +
                       std::to_string(c.num_hidden_layers) + " layers");
    return true;
  }
  for (size_t i = 0; i < types.size(); ++i) {
    const bool sliding = types[i].is_string() && types[i].get<std::string>() == "sliding_attention";
    c.layer_sliding_window[i] = sliding ? window : 0;
  }
  return true;
}

// Qwen2/Qwen3: a window only when use_sliding_window, on layers >= max_window_layers unless layer_types
// says which layers slide (transformers' Qwen2Config.__post_init__).
void qwen_sliding_windows(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  const int64_t window = flag(j, "use_sliding_window", false) ? integer(j, "sliding_window", 0) : 0;
  const int64_t max_window_layers = integer(j, "max_window_layers", 28);
  if (windows_from_layer_types(j, c, window, problems)) return;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    c.layer_sliding_window[static_cast<size_t>(i)] = (window > 0 && i >= max_window_layers) ? window : 0;
}

void apply_llama(const json& j, ModelConfig& c, std::vector<std::string>&) {
  c.attention_bias = flag(j, "attention_bias", false);
  c.mlp_bias = flag(j, "mlp_bias", false);
  explicit_head_dim(j, c, c.head_dim);
}

void apply_qwen2(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  class_defaults(j, c, 1e4, 1e-6, 32768);
  c.qkv_bias = true;  // Qwen2 always has q/k/v biases and no o_proj bias
  qwen_sliding_windows(j, c, problems);
}

void apply_qwen3(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  class_defaults(j, c, 1e4, 1e-6, 32768);
  c.attention_bias = flag(j, "attention_bias", false);
  c.qk_norm = true;
  explicit_head_dim(j, c, 128);  // Qwen3Config's default
  qwen_sliding_windows(j, c, problems);
}

// Qwen2-MoE / Qwen3-MoE: a sparse block on every decoder_sparse_step-th layer not in mlp_only_layers.
void qwen_moe(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  MoeConfig& m = c.moe;
  // transformers v5 writes num_experts as num_local_experts (its attribute_map); the hub's configs say num_experts.
  m.num_experts = integer(j, "num_experts", integer(j, "num_local_experts", 0));
  m.experts_per_token = integer(j, "num_experts_per_tok", 0);
  m.expert_intermediate_size = integer(j, "moe_intermediate_size", 0);
  m.norm_topk_prob = flag(j, "norm_topk_prob", false);
  m.router_aux_loss_coef = j.contains("router_aux_loss_coef") && j.at("router_aux_loss_coef").is_number()
                               ? j.at("router_aux_loss_coef").get<double>() : 0.001;
  const int64_t step = integer(j, "decoder_sparse_step", 1);
  std::vector<int64_t> dense_only;
  if (j.contains("mlp_only_layers") && j.at("mlp_only_layers").is_array())
    for (const auto& l : j.at("mlp_only_layers"))
      if (l.is_number_integer()) dense_only.push_back(l.get<int64_t>());
  if (m.num_experts <= 0) return;  // transformers: no sparse layer at all
  if (m.experts_per_token <= 0 || m.experts_per_token > m.num_experts)
    problems.push_back("num_experts_per_tok must be between 1 and num_experts (" + std::to_string(m.num_experts) +
                       "), got " + std::to_string(m.experts_per_token));
  if (m.expert_intermediate_size <= 0)
    problems.push_back("moe_intermediate_size must be positive, got " + std::to_string(m.expert_intermediate_size));
  if (step <= 0) problems.push_back("decoder_sparse_step must be positive, got " + std::to_string(step));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i)
    m.sparse_layers.push_back(step > 0 && (i + 1) % step == 0 &&
                              std::find(dense_only.begin(), dense_only.end(), i) == dense_only.end());
}

void apply_qwen2_moe(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  class_defaults(j, c, 1e4, 1e-6, 32768);
  c.qkv_bias = flag(j, "qkv_bias", true);
  qwen_sliding_windows(j, c, problems);
  qwen_moe(j, c, problems);
  c.moe.shared_expert_intermediate_size = integer(j, "shared_expert_intermediate_size", 5632);
}

void apply_qwen3_moe(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  apply_qwen3(j, c, problems);
  qwen_moe(j, c, problems);
}

void apply_mistral(const json& j, ModelConfig& c, std::vector<std::string>&) {
  class_defaults(j, c, 1e4, 1e-6, 131072);
  explicit_head_dim(j, c, c.head_dim);
  const int64_t window = integer(j, "sliding_window", j.contains("sliding_window") ? 0 : 4096);  // null: none
  for (auto& w : c.layer_sliding_window) w = window;
}

// Mixtral: Mistral's attention, every layer a sparse block of num_local_experts experts as wide as intermediate_size,
// the top-k probabilities always renormalised, no shared expert; its files keep Mixtral's original names
// (block_sparse_moe, w1/w3/w2), which transformers renames on load and back on save.
void apply_mixtral(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  apply_mistral(j, c, problems);
  class_defaults(j, c, 1e6, 1e-5, 131072);
  if (!j.contains("sliding_window"))  // MixtralConfig's default: no window (Mistral's: 4096)
    for (auto& w : c.layer_sliding_window) w = 0;
  MoeConfig& m = c.moe;
  m.num_experts = integer(j, "num_local_experts", integer(j, "num_experts", 8));  // MixtralConfig's attribute_map
  m.experts_per_token = integer(j, "num_experts_per_tok", 2);
  m.expert_intermediate_size = c.intermediate_size;
  m.norm_topk_prob = true;
  m.router_aux_loss_coef = j.contains("router_aux_loss_coef") && j.at("router_aux_loss_coef").is_number()
                               ? j.at("router_aux_loss_coef").get<double>() : 0.001;
  m.stored_block = "block_sparse_moe";
  m.stored_expert_parts = {"w1", "w3", "w2"};
  if (m.num_experts <= 0) problems.push_back("num_local_experts must be positive, got " + std::to_string(m.num_experts));
  if (m.experts_per_token <= 0 || m.experts_per_token > m.num_experts)
    problems.push_back("num_experts_per_tok must be between 1 and num_local_experts (" + std::to_string(m.num_experts) +
                       "), got " + std::to_string(m.experts_per_token));
  // transformers scales the router's input by a random factor in training; swift's routing is deterministic.
  if (j.contains("router_jitter_noise") && j.at("router_jitter_noise").is_number() &&
      j.at("router_jitter_noise").get<double>() != 0.0)
    problems.push_back("router_jitter_noise " + j.at("router_jitter_noise").dump() +
                       " is not supported (set it to 0.0, as Mixtral's released configs have it)");
  m.sparse_layers.assign(static_cast<size_t>(c.num_hidden_layers), true);
}

// DeepSeek-V2/V3: multi-head latent attention, and sparse layers from first_k_dense_replace on, each with
// n_routed_experts experts and n_shared_experts shared ones (one MLP n_shared_experts x moe_intermediate_size wide,
// added ungated). V2 routes by softmax, greedy or group-limited (topk_method), without renormalising; V3 by sigmoid
// scores plus e_score_correction_bias within its topk_group best groups (always, whatever topk_method says), the
// weights renormalised where norm_topk_prob. Both scale the weights by routed_scaling_factor. transformers' forward
// adds no load-balancing loss for either.
void deepseek_common(const json& j, ModelConfig& c, std::vector<std::string>& problems, int64_t q_lora_rank,
                     int64_t routed_experts, int64_t experts_per_token, int64_t shared_experts, int64_t first_dense,
                     int64_t moe_intermediate_size) {
  LatentAttentionConfig a;
  a.q_lora_rank = j.contains("q_lora_rank") && j.at("q_lora_rank").is_null() ? 0 : integer(j, "q_lora_rank", q_lora_rank);
  a.kv_lora_rank = integer(j, "kv_lora_rank", 512);
  a.qk_nope_head_dim = integer(j, "qk_nope_head_dim", 128);
  a.qk_rope_head_dim = integer(j, "qk_rope_head_dim", 64);
  a.v_head_dim = integer(j, "v_head_dim", 128);
  for (auto [name, v] : {std::pair{"kv_lora_rank", a.kv_lora_rank}, {"qk_nope_head_dim", a.qk_nope_head_dim},
                         {"qk_rope_head_dim", a.qk_rope_head_dim}, {"v_head_dim", a.v_head_dim}})
    if (v <= 0) problems.push_back(std::string(name) + " must be positive, got " + std::to_string(v));
  if (a.q_lora_rank < 0) problems.push_back("q_lora_rank must be positive or null, got " + std::to_string(a.q_lora_rank));
  c.latent_attention = a;
  c.head_dim = a.qk_rope_head_dim;  // what RoPE rotates (transformers' head_dim for these configs)
  c.attention_bias = flag(j, "attention_bias", false);
  if (flag(j, "mlp_bias", false)) problems.push_back("mlp_bias true is not supported by DeepSeek's MLPs");

  MoeConfig& m = c.moe;
  m.num_experts = integer(j, "n_routed_experts", routed_experts);
  m.experts_per_token = integer(j, "num_experts_per_tok", experts_per_token);
  m.expert_intermediate_size = integer(j, "moe_intermediate_size", moe_intermediate_size);
  m.shared_expert_intermediate_size = m.expert_intermediate_size * integer(j, "n_shared_experts", shared_experts);
  m.shared_expert_gated = false;
  m.shared_expert_module = "shared_experts";
  m.routed_scaling_factor = number(j, "routed_scaling_factor", 1.0);
  m.router_in_fp32 = true;
  m.aux_loss_in_forward = false;
  const int64_t dense = integer(j, "first_k_dense_replace", first_dense);
  if (m.num_experts <= 0) problems.push_back("n_routed_experts must be positive, got " + std::to_string(m.num_experts));
  if (m.experts_per_token <= 0 || m.experts_per_token > m.num_experts)
    problems.push_back("num_experts_per_tok must be between 1 and n_routed_experts (" + std::to_string(m.num_experts) +
                       "), got " + std::to_string(m.experts_per_token));
  if (m.expert_intermediate_size <= 0)
    problems.push_back("moe_intermediate_size must be positive, got " + std::to_string(m.expert_intermediate_size));
  if (dense < 0) problems.push_back("first_k_dense_replace must be >= 0, got " + std::to_string(dense));
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) m.sparse_layers.push_back(i >= dense);
}

// Group-limited routing's groups: num_groups must divide the experts, topk_groups be at most num_groups, and every
// group hold `least` experts (V3 scores a group by its best two).
void routing_groups(const json& j, MoeConfig& m, std::vector<std::string>& problems, int64_t groups, int64_t topk_groups,
                    int64_t least) {
  m.num_groups = j.contains("n_group") && j.at("n_group").is_null() ? groups : integer(j, "n_group", groups);
  m.topk_groups = j.contains("topk_group") && j.at("topk_group").is_null() ? topk_groups : integer(j, "topk_group", topk_groups);
  if (m.num_groups <= 0 || m.num_experts % m.num_groups != 0 || m.num_experts / m.num_groups < least)
    problems.push_back("n_group (" + std::to_string(m.num_groups) + ") must divide n_routed_experts (" +
                       std::to_string(m.num_experts) + ") into groups of at least " + std::to_string(least) + " experts");
  if (m.topk_groups <= 0 || m.topk_groups > m.num_groups)
    problems.push_back("topk_group must be between 1 and n_group (" + std::to_string(m.num_groups) + "), got " +
                       std::to_string(m.topk_groups));
  else if (m.topk_groups * (m.num_experts / std::max<int64_t>(m.num_groups, 1)) < m.experts_per_token)
    problems.push_back("topk_group (" + std::to_string(m.topk_groups) + ") groups hold fewer experts than num_experts_per_tok (" +
                       std::to_string(m.experts_per_token) + ")");
}

void apply_deepseek_v2(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  class_defaults(j, c, 1e4, 1e-6, 2048);
  deepseek_common(j, c, problems, /*q_lora_rank=*/1536, /*routed_experts=*/64, /*experts_per_token=*/0,
                  /*shared_experts=*/2, /*first_dense=*/0, /*moe_intermediate_size=*/1407);
  c.latent_attention->rope_interleave = true;  // V2 rotates adjacent pairs (complex multiplication, in fp32)
  c.latent_attention->rope_in_fp32 = true;
  MoeConfig& m = c.moe;
  m.norm_topk_prob = false;  // DeepseekV2TopkRouter never renormalises
  const std::string method = text(j, "topk_method", "greedy");
  if (method == "group_limited_greedy") {
    m.group_scoring = "max";
    routing_groups(j, m, problems, 1, 1, 1);
  } else if (method != "greedy") {
    problems.push_back("topk_method \"" + method + "\" is not supported by DeepSeek-V2 (greedy, group_limited_greedy)");
  }
}

void apply_deepseek_v3(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  class_defaults(j, c, 1e4, 1e-6, 4096);
  deepseek_common(j, c, problems, /*q_lora_rank=*/1536, /*routed_experts=*/256, /*experts_per_token=*/8,
                  /*shared_experts=*/1, /*first_dense=*/3, /*moe_intermediate_size=*/2048);
  c.latent_attention->rope_interleave = flag(j, "rope_interleave", true);
  MoeConfig& m = c.moe;
  m.scoring = "sigmoid";
  m.score_correction_bias = true;
  m.norm_topk_prob = flag(j, "norm_topk_prob", true);
  m.routed_scaling_factor = number(j, "routed_scaling_factor", 2.5);
  m.group_scoring = "top2_sum";
  routing_groups(j, m, problems, 8, 4, 2);
}

// The RoPE object of config.json: transformers v5's rope_parameters, or the older rope_scaling; null when neither.
const json* rope_object(const json& j) {
  return j.contains("rope_parameters") && j.at("rope_parameters").is_object() ? &j.at("rope_parameters")
         : j.contains("rope_scaling") && j.at("rope_scaling").is_object()     ? &j.at("rope_scaling")
                                                                              : nullptr;
}

// partial_rotary_factor, in the RoPE object or at the top level (transformers moves it into rope_parameters): RoPE
// rotates the first int(head_dim * factor) dimensions of each head, which must be a positive even number.
void partial_rotary(const json& j, ModelConfig& c, std::vector<std::string>& problems, double fallback) {
  const json* rope = rope_object(j);
  c.rope.partial_rotary_factor = number(rope ? *rope : j, "partial_rotary_factor", number(j, "partial_rotary_factor", fallback));
  const int64_t rotary = static_cast<int64_t>(static_cast<double>(c.head_dim) * c.rope.partial_rotary_factor);
  if (!(c.rope.partial_rotary_factor > 0 && c.rope.partial_rotary_factor <= 1) || rotary % 2 != 0 || rotary == 0)
    problems.push_back("partial_rotary_factor " + json(c.rope.partial_rotary_factor).dump() + " must rotate an even number of " +
                       "each head's " + std::to_string(c.head_dim) + " dimensions");
}

// Phi-3, Phi-3.5 and Phi-4 (mini): Llama's computation with fused qkv_proj and gate_up_proj, a sliding window on every
// layer when sliding_window is set, longrope ("su" in the first files) with the pretraining length at the top level
// (original_max_position_embeddings, 4096 when absent), and RoPE over partial_rotary_factor of each head (Phi-4-mini).
void apply_phi3(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  class_defaults(j, c, 1e4, 1e-5, 4096);
  c.fused_qkv = true;
  c.fused_gate_up = true;
  explicit_head_dim(j, c, c.head_dim);
  if (flag(j, "attention_bias", false) || flag(j, "mlp_bias", false))
    problems.push_back("attention_bias / mlp_bias true are not supported: Phi-3's projections have no bias");
  for (const char* dropout : {"resid_pdrop", "attention_dropout"})
    if (number(j, dropout, 0.0) != 0.0)
      problems.push_back(std::string(dropout) + " " + j.at(dropout).dump() +
                         " is not supported (swift trains without dropout; set it to 0.0, as Phi-3's released configs do)");
  // Phi3Config turns a "yarn" type into longrope, and always keeps its own original_max_position_embeddings.
  if (c.rope.type == "yarn" && !c.rope.short_factor.empty()) c.rope.type = "longrope";
  if (c.rope.type != "default" && c.rope.type != "longrope")
    problems.push_back("rope scaling \"" + c.rope.type + "\" is not supported by Phi-3 (default, longrope)");
  c.rope.original_max_position_embeddings = integer(j, "original_max_position_embeddings", 4096);
  const json* rope = rope_object(j);
  partial_rotary(j, c, problems, 1.0);
  if (c.rope.type == "longrope" && !(rope && rope->contains("factor") && rope->at("factor").is_number()))
    c.rope.factor = static_cast<double>(c.max_position_embeddings) / static_cast<double>(c.rope.original_max_position_embeddings);
  // transformers builds a sliding-window mask for every layer when sliding_window is set.
  if (j.contains("sliding_window") && !j.at("sliding_window").is_null()) {
    const int64_t window = integer(j, "sliding_window", 0);
    if (window <= 0) problems.push_back("sliding_window must be a positive integer or null, got " + j.at("sliding_window").dump());
    c.layer_sliding_window.assign(static_cast<size_t>(c.num_hidden_layers), std::max<int64_t>(window, 0));
  }
}

// GLM-4-0414 and GLM-Z1 (model_type glm4): q/k/v with biases and o_proj without, a fused gate_up_proj, sandwich norms in
// GLM's names, and RoPE over the first half of each head (partial_rotary_factor 0.5) in adjacent pairs.
void apply_glm4(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  class_defaults(j, c, 1e4, 1.5625e-07, 131072);
  explicit_head_dim(j, c, 128);  // Glm4Config's default
  c.qkv_bias = flag(j, "attention_bias", true);
  c.attention_bias = false;
  c.fused_gate_up = true;
  c.rope_interleaved = true;
  c.sandwich_norms = true;
  c.sandwich_norm_names = {"post_self_attn_layernorm", "post_attention_layernorm", "post_mlp_layernorm"};
  partial_rotary(j, c, problems, 0.5);
  if (number(j, "attention_dropout", 0.0) != 0.0)
    problems.push_back("attention_dropout " + j.at("attention_dropout").dump() +
                       " is not supported (swift trains without dropout; set it to 0.0, as GLM-4's released configs do)");
  if (c.rope.type == "longrope") problems.push_back("longrope is not supported by GLM-4 (its RoPE rotates adjacent pairs)");
  if (!j.contains("pad_token_id")) c.pad_token_id = 151329;  // Glm4Config's (<|endoftext|>) when config.json names none
}

// InternLM2 / InternLM2.5 (remote code): Llama's computation under its own names, q/k/v in one wqkv whose rows are
// grouped by key/value head, biases on wqkv and wo only (config.json's bias, default true; released models: false),
// head_dim always hidden_size / num_attention_heads, linear or dynamic RoPE scaling.
void apply_internlm2(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  class_defaults(j, c, 1e4, 1e-6, 2048);
  c.attention_bias = flag(j, "bias", true);
  c.fused_qkv = true;
  c.qkv_grouped_by_kv_head = true;
  ModuleNames& n = c.names;
  n.embed_tokens = "tok_embeddings";
  n.lm_head = "output";
  n.self_attn = "attention";
  n.mlp = "feed_forward";
  n.input_layernorm = "attention_norm";
  n.post_attention_layernorm = "ffn_norm";
  n.qkv_proj = "wqkv";
  n.o_proj = "wo";
  n.gate_proj = "w1";  // silu(w1(x)) * w3(x), as modeling_internlm2.py
  n.up_proj = "w3";
  n.down_proj = "w2";
  if (c.num_attention_heads > 0 && c.hidden_size % c.num_attention_heads != 0)
    problems.push_back("hidden_size (" + std::to_string(c.hidden_size) + ") must be divisible by num_attention_heads (" +
                       std::to_string(c.num_attention_heads) + ") for InternLM2");
  if (c.rope.type != "default" && c.rope.type != "linear" && c.rope.type != "dynamic")
    problems.push_back("rope_scaling \"" + c.rope.type + "\" is not supported by InternLM2 (linear, dynamic)");
}

// InternLM3 (remote code): Llama's names and computation, an explicit head_dim, biases on q/k/v by qkv_bias and on
// o_proj and the MLP by bias (both false when released).
void apply_internlm3(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  class_defaults(j, c, 1e4, 1e-6, 32768);
  explicit_head_dim(j, c, c.head_dim);
  const bool bias = flag(j, "bias", false), qkv_bias = flag(j, "qkv_bias", false);
  if (bias && !qkv_bias)
    problems.push_back("bias true with qkv_bias false (biases on o_proj and the MLP but not on q/k/v) is not supported; "
                       "InternLM3's released configs set both false");
  c.attention_bias = bias;
  c.mlp_bias = bias;
  c.qkv_bias = qkv_bias;
}

// Gemma: Llama's layout with (1 + w) norms, embeddings scaled by sqrt(hidden_size) and tied by default, 256-wide heads
// and a tanh-approximated GELU.
void gemma_common(const json& j, ModelConfig& c, std::vector<std::string>& problems, int64_t max_position_embeddings,
                  int64_t key_value_heads) {
  c.norm_unit_offset = true;
  c.num_key_value_heads = integer(j, "num_key_value_heads", key_value_heads);  // the config class's default
  if (flag(j, "use_bidirectional_attention", false))
    problems.push_back("use_bidirectional_attention true (an embedding model) is not supported: swift runs causal LMs");
  c.embedding_multiplier = std::sqrt(static_cast<double>(c.hidden_size));
  c.attention_bias = flag(j, "attention_bias", false);
  c.tie_word_embeddings = flag(j, "tie_word_embeddings", true);
  c.max_position_embeddings = integer(j, "max_position_embeddings", max_position_embeddings);
  explicit_head_dim(j, c, 256);
}

void apply_gemma(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  gemma_common(j, c, problems, 8192, 16);
  // Gemma's released configs say "gelu" for the tanh approximation, which GemmaConfig then sets.
  c.hidden_act = text(j, "hidden_act", "gelu_pytorch_tanh");
  if (c.hidden_act == "gelu") c.hidden_act = "gelu_pytorch_tanh";
}

// A soft-capping value: absent is the family's default, null is none (0).
double soft_cap(const json& j, const char* key, double absent) {
  if (!j.contains(key)) return absent;
  return j.at(key).is_null() ? 0.0 : number(j, key, absent);
}

// Gemma 2/3: sandwich norms, query_pre_attn_scalar, soft-capping, and sliding-window layers every `pattern`-th layer
// but the last of each group (layer_types when given), with sliding_window's length.
void gemma2_common(const json& j, ModelConfig& c, std::vector<std::string>& problems, int64_t max_position_embeddings,
                   double attn_cap, double final_cap, int64_t pattern) {
  gemma_common(j, c, problems, max_position_embeddings, 4);
  if (j.contains("hidden_activation") && j.at("hidden_activation").is_null())
    problems.push_back("hidden_activation is null (Gemma 2 and 3 use gelu_pytorch_tanh)");
  c.hidden_act = text(j, "hidden_activation", "gelu_pytorch_tanh");
  c.sandwich_norms = true;
  const double query_pre_attn_scalar = number(j, "query_pre_attn_scalar", 256);
  if (!(query_pre_attn_scalar > 0))
    problems.push_back("query_pre_attn_scalar must be positive, got " + j.at("query_pre_attn_scalar").dump());
  else
    c.attention_scale = 1.0 / std::sqrt(query_pre_attn_scalar);
  c.attn_logit_softcapping = soft_cap(j, "attn_logit_softcapping", attn_cap);
  c.final_logit_softcapping = soft_cap(j, "final_logit_softcapping", final_cap);
  const int64_t window = integer(j, "sliding_window", 4096);
  if (!windows_from_layer_types(j, c, window, problems)) {
    if (pattern <= 0) {
      problems.push_back("sliding_window_pattern must be positive, got " + std::to_string(pattern));
      return;
    }
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      c.layer_sliding_window[static_cast<size_t>(i)] = (i + 1) % pattern != 0 ? window : 0;
  }
  // transformers cannot build a sliding mask without a length either.
  if (j.contains("sliding_window") && !j.at("sliding_window").is_number_integer() && c.any_sliding_window())
    problems.push_back("sliding_window is " + j.at("sliding_window").dump() +
                       " but layers slide (layer_types / sliding_window_pattern): give their window length");
}

void apply_gemma2(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  gemma2_common(j, c, problems, 8192, /*attn_cap=*/50.0, /*final_cap=*/30.0, /*pattern=*/2);
}

// Gemma 3 (text): Gemma 2 with (1 + w) q/k norms, no soft-capping by default, and RoPE per layer type: the global
// layers' rope_theta (1e6) and rope_scaling, the sliding ones' rope_local_base_freq (1e4). transformers v5 writes
// both as rope_parameters {"full_attention": {...}, "sliding_attention": {...}}.
void apply_gemma3_text(const json& j, ModelConfig& c, std::vector<std::string>& problems) {
  gemma2_common(j, c, problems, 131072, 0.0, 0.0, integer(j, "sliding_window_pattern", 6));
  c.qk_norm = true;
  c.attn_logit_softcapping = 0.0;  // Gemma3Attention never passes it to the attention (transformers v5)
  const json* per_type = j.contains("rope_parameters") && j.at("rope_parameters").is_object() &&
                                 (j.at("rope_parameters").contains("full_attention") ||
                                  j.at("rope_parameters").contains("sliding_attention"))
                             ? &j.at("rope_parameters")
                             : nullptr;
  auto entry = [](const json& o, const char* key) {
    return o.contains(key) && !o.at(key).is_null() ? &o.at(key) : static_cast<const json*>(nullptr);
  };
  if (per_type) {
    c.rope = parse_rope_parameters(entry(*per_type, "full_attention"), number(j, "rope_theta", 1e6),
                                   c.max_position_embeddings, j, problems);
    c.sliding_rope = parse_rope_parameters(entry(*per_type, "sliding_attention"), number(j, "rope_local_base_freq", 1e4),
                                           c.max_position_embeddings, j, problems);
  } else {
    c.rope = parse_rope_parameters(entry(j, "rope_scaling"), number(j, "rope_theta", 1e6), c.max_position_embeddings, j,
                                   problems);
    c.sliding_rope = parse_rope_parameters(nullptr, number(j, "rope_local_base_freq", 1e4), c.max_position_embeddings, j,
                                           problems);
  }
}

}  // namespace

const std::vector<ModelFamily>& model_families() {
  static const std::vector<ModelFamily> families = {
      {"llama", {"LlamaForCausalLM"}, "llama3", apply_llama},
      {"mistral", {"MistralForCausalLM"}, "mistral", apply_mistral},
      {"qwen2", {"Qwen2ForCausalLM"}, "qwen2_5", apply_qwen2},
      {"qwen3", {"Qwen3ForCausalLM"}, "qwen3", apply_qwen3},
      {"gemma", {"GemmaForCausalLM"}, "gemma", apply_gemma},
      {"gemma2", {"Gemma2ForCausalLM"}, "gemma", apply_gemma2},  // ms-swift's template for Gemma 2: gemma
      {"gemma3_text", {"Gemma3ForCausalLM"}, "gemma3_text", apply_gemma3_text, "Gemma3TextForSequenceClassification"},
      // ms-swift's templates: phi3 for Phi-3/3.5/4-mini, phi4 for Phi-4 (14B, a ChatML-like tokenizer)
      {"phi3", {"Phi3ForCausalLM"}, "phi3", apply_phi3, "", "<|im_sep|>", "phi4"},
      {"glm4", {"Glm4ForCausalLM"}, "glm4", apply_glm4},
      {"internlm2", {"InternLM2ForCausalLM"}, "internlm2", apply_internlm2},
      {"internlm3", {"InternLM3ForCausalLM"}, "internlm2", apply_internlm3},  // ms-swift's template for InternLM3: internlm2
      {"qwen2_moe", {"Qwen2MoeForCausalLM"}, "qwen2_5", apply_qwen2_moe},
      {"qwen3_moe", {"Qwen3MoeForCausalLM"}, "qwen3", apply_qwen3_moe},
      {"mixtral", {"MixtralForCausalLM"}, "llama", apply_mixtral},  // ms-swift's template for Mixtral: llama
      {"deepseek_v2", {"DeepseekV2ForCausalLM"}, "deepseek", apply_deepseek_v2},
      {"deepseek_v3", {"DeepseekV3ForCausalLM"}, "deepseek_v2_5", apply_deepseek_v3},
  };
  return families;
}

const ModelFamily* find_model_family(const std::string& model_type, const std::vector<std::string>& architectures) {
  for (const auto& f : model_families())
    if (f.model_type == model_type) return &f;
  if (model_type.empty()) {
    for (const auto& f : model_families())
      for (const auto& a : f.architectures)
        if (!architectures.empty() && architectures.front() == a) return &f;
  }
  return nullptr;
}

std::string supported_model_types() {
  std::string out;
  for (const auto& f : model_families()) out += (out.empty() ? "" : ", ") + f.model_type;
  return out;
}

}  // namespace swift::model
