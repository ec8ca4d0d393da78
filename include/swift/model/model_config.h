// The decoder's configuration, read from a Hugging Face config.json. One struct covers every family
// (llama, qwen2, qwen3, mistral, gemma, gemma2, gemma3_text, phi3, glm4, internlm2, internlm3, qwen2_moe, qwen3_moe, mixtral, deepseek_v2,
// deepseek_v3):
// they differ only in the flags below, set by the family registry.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace swift::model {

// RoPE and its scaling (config.json "rope_scaling" with "type"/"rope_type", or transformers v5's
// "rope_parameters"). Field meanings follow transformers' modeling_rope_utils.
struct RopeConfig {
  std::string type = "default";  // default | linear | dynamic | llama3 | yarn | longrope
  double theta = 10000.0;
  double factor = 1.0;
  // The share of each head's dimensions that RoPE rotates (the first int(head_dim * factor)); the rest pass through.
  double partial_rotary_factor = 1.0;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;  // llama3, yarn; 0 = max_position_embeddings
  // yarn
  std::optional<double> attention_factor;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  std::optional<double> mscale;
  std::optional<double> mscale_all_dim;
  bool truncate = true;
  // longrope (Phi-3): per-frequency divisors, short_factor while a forward's positions stay within
  // original_max_position_embeddings, long_factor beyond; cos/sin scaled by attention_factor (by default
  // sqrt(1 + ln(factor) / ln(original)), factor = max_position_embeddings / original).
  std::vector<double> short_factor, long_factor;
};

// Multi-head latent attention (DeepSeek-V2/V3): queries through a low-rank bottleneck (q_a_proj, q_a_layernorm,
// q_b_proj; or one q_proj), keys and values from one compressed latent per token (kv_a_proj_with_mqa gives the latent
// and a RoPE key shared by every head; kv_a_layernorm, then kv_b_proj expands the latent into each head's key part
// without position and its value). The KV cache keeps the latent and the shared RoPE key, not the heads' keys.
struct LatentAttentionConfig {
  int64_t q_lora_rank = 0;  // 0: q_proj (DeepSeek-V2-Lite)
  int64_t kv_lora_rank = 0;
  int64_t qk_nope_head_dim = 0;
  int64_t qk_rope_head_dim = 0;
  int64_t v_head_dim = 0;
  // The RoPE dimensions are rotated in adjacent pairs (x0, x1), (x2, x3)... as DeepSeek's weights expect, rather
  // than in halves (transformers' rope_interleave; DeepSeek-V2 always).
  bool rope_interleave = true;
  // DeepSeek-V2 rotates in fp32 (complex multiplication) and rounds once; V3 in the model's dtype.
  bool rope_in_fp32 = false;
  int64_t qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
};

// Mixture of experts (qwen2_moe, qwen3_moe, mixtral, deepseek_v2/v3): a sparse layer routes each token to
// experts_per_token of num_experts MLPs (each expert_intermediate_size wide), optionally beside a shared expert.
struct MoeConfig {
  int64_t num_experts = 0;  // 0: every layer is dense
  int64_t experts_per_token = 0;        // num_experts_per_tok
  int64_t expert_intermediate_size = 0;  // moe_intermediate_size
  bool norm_topk_prob = false;           // the chosen experts' probabilities rescaled to sum to 1
  // The router's scores: "softmax" over the experts, or "sigmoid" of each (DeepSeek-V3).
  std::string scoring = "softmax";
  // Group-limited routing (DeepSeek): the experts fall into num_groups equal groups, a group scores by its best
  // expert ("max": V2's group_limited_greedy) or the sum of its best two ("top2_sum": V3), and a token chooses its
  // experts within its topk_groups best groups. "": no groups.
  std::string group_scoring;
  int64_t num_groups = 1;
  int64_t topk_groups = 1;
  // DeepSeek-V3: the router's e_score_correction_bias [E] (a buffer, never trained) is added to the scores to choose
  // the experts only; the weights stay the scores.
  bool score_correction_bias = false;
  double routed_scaling_factor = 1.0;  // the chosen weights' factor (DeepSeek)
  // DeepSeek: the router's logits come from fp32 input and weight, and the chosen weights stay fp32 for the experts'
  // outputs (the others: the model's dtype).
  bool router_in_fp32 = false;
  int64_t shared_expert_intermediate_size = 0;  // 0: no shared expert
  // Qwen2-MoE's shared_expert is weighted by sigmoid(shared_expert_gate(x)); DeepSeek's shared_experts simply add.
  bool shared_expert_gated = true;
  std::string shared_expert_module = "shared_expert";
  double router_aux_loss_coef = 0.0;     // config.json's (swift's --router_aux_loss_coef decides what training uses)
  // Whether transformers' forward adds the load-balancing loss when asked (output_router_logits): not DeepSeek's,
  // so ms-swift trains those without it whatever --router_aux_loss_coef says.
  bool aux_loss_in_forward = true;
  std::vector<bool> sparse_layers;       // per layer: a sparse MoE block (else the dense MLP)
  // How the family's Hugging Face files name a sparse layer's parameters where they differ from transformers' module
  // paths (which transformers renames on load and back on save): Mixtral's model.layers.N.block_sparse_moe.gate and
  // its experts' w1 (gate), w3 (up) and w2 (down) for mlp.gate and mlp.experts.
  std::string stored_block = "mlp";
  std::vector<std::string> stored_expert_parts = {"gate_proj", "up_proj", "down_proj"};  // gate, up, down
};

// What the family's files call the modules that Llama's call embed_tokens, lm_head, self_attn, ... (InternLM2:
// tok_embeddings, output, attention, feed_forward, attention_norm, ffn_norm, wqkv, wo, w1, w3, w2). swift's modules
// carry these names, so checkpoints and LoRA adapters (PEFT's module paths) keep them.
struct ModuleNames {
  std::string embed_tokens = "embed_tokens";
  std::string lm_head = "lm_head";
  std::string self_attn = "self_attn";
  std::string mlp = "mlp";
  std::string input_layernorm = "input_layernorm";
  std::string post_attention_layernorm = "post_attention_layernorm";  // before the MLP (without sandwich norms)
  std::string qkv_proj = "qkv_proj";  // the fused q/k/v projection (fused_qkv)
  std::string o_proj = "o_proj";
  std::string gate_proj = "gate_proj";
  std::string up_proj = "up_proj";
  std::string down_proj = "down_proj";
};

struct ModelConfig {
  std::string model_type;  // "llama", "qwen2", "qwen3", "mistral", "gemma", ..., "mixtral" (family_registry.cpp)
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;
  int64_t head_dim = 0;  // may differ from hidden_size / num_attention_heads (Qwen3)
  double rms_norm_eps = 1e-6;
  int64_t max_position_embeddings = 2048;
  double initializer_range = 0.02;
  std::string hidden_act = "silu";  // the MLP's activation: silu, or gelu_pytorch_tanh (Gemma)
  RopeConfig rope;
  // RoPE of the sliding-window layers where the family gives them their own (Gemma 3's rope_local_base_freq);
  // empty: every layer uses `rope`.
  std::optional<RopeConfig> sliding_rope;
  bool tie_word_embeddings = false;
  bool attention_bias = false;  // bias on q, k, v and o
  bool qkv_bias = false;        // bias on q, k, v only (Qwen2)
  bool mlp_bias = false;
  bool qk_norm = false;         // RMSNorm over head_dim on q and k (Qwen3, Gemma 3)
  // Phi-3: one qkv_proj (q, then k, then v rows); Phi-3 and GLM-4: one gate_up_proj (gate rows, then up rows). Kept
  // fused as the checkpoint and PEFT name them.
  bool fused_qkv = false;
  bool fused_gate_up = false;
  // InternLM2's wqkv: its rows grouped by key/value head, each group that head's query heads, then its key, then its
  // value (Phi-3's qkv_proj: all queries, then all keys, then all values).
  bool qkv_grouped_by_kv_head = false;
  ModuleNames names;
  // GLM-4: RoPE rotates adjacent pairs (x0, x1), (x2, x3)... of the rotated dimensions rather than the two halves.
  bool rope_interleaved = false;
  // Gemma: every RMSNorm scales by (1 + weight), in fp32 before the cast back; its weights start at 0.
  bool norm_unit_offset = false;
  // Gemma 2/3: post_attention_layernorm normalises the attention's output before the residual add, and
  // pre_feedforward_layernorm / post_feedforward_layernorm do the same around the MLP.
  bool sandwich_norms = false;
  // How the family's files name those three norms: after the attention, before the MLP, after the MLP (Gemma's
  // names; GLM-4's are post_self_attn_layernorm, post_attention_layernorm and post_mlp_layernorm).
  std::vector<std::string> sandwich_norm_names = {"post_attention_layernorm", "pre_feedforward_layernorm",
                                                  "post_feedforward_layernorm"};
  double embedding_multiplier = 1.0;  // Gemma: sqrt(hidden_size), rounded to the weights' dtype as transformers does
  double attention_scale = 0.0;       // the scores' scale; 0: 1/sqrt(head_dim) (Gemma 2/3: query_pre_attn_scalar^-0.5)
  // tanh soft-capping, cap * tanh(x / cap), of the attention scores and of the final logits; 0: none (Gemma 2).
  double attn_logit_softcapping = 0.0;
  double final_logit_softcapping = 0.0;
  // Per layer: 0 = full causal attention, else the sliding window length (Mistral, Qwen2/3 with
  // use_sliding_window). Size num_hidden_layers.
  std::vector<int64_t> layer_sliding_window;
  std::string torch_dtype = "float32";  // the checkpoint's stored dtype
  std::optional<int64_t> bos_token_id;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id;
  MoeConfig moe;
  std::optional<LatentAttentionConfig> latent_attention;  // DeepSeek's MLA; head_dim is then qk_rope_head_dim (RoPE's)
  // A *ForSequenceClassification model (architectures[0]): the outputs of its score head, which replaces
  // lm_head (reward models: 1). 0: a causal LM.
  int64_t num_labels = 0;

  nlohmann::json raw;  // the file as read, written back on save (unknown fields kept)

  int64_t q_dim() const { return num_attention_heads * head_dim; }
  int64_t kv_dim() const { return num_key_value_heads * head_dim; }
  bool any_sliding_window() const;
  bool is_moe() const { return moe.num_experts > 0; }
  bool sparse_layer(int64_t layer) const {
    return is_moe() && moe.sparse_layers.at(static_cast<size_t>(layer));
  }
};

// Parses config.json content. `source` names the file in errors. Every problem found is reported at once in
// one DataError. An unsupported model_type lists the supported ones.
ModelConfig parse_model_config(const nlohmann::json& j, const std::string& source);
// `dir`/config.json.
ModelConfig load_model_config(const std::filesystem::path& dir);
// One RoPE description: `parameters` is a "rope_scaling"/"rope_parameters" object (null: plain RoPE), `theta` the base
// where it gives none, `top` the whole config.json (a top-level original_max_position_embeddings wins, as in
// transformers). Problems are added to `problems`.
RopeConfig parse_rope_parameters(const nlohmann::json* parameters, double theta, int64_t max_position_embeddings,
                                 const nlohmann::json& top, std::vector<std::string>& problems);

// How many parameters the config describes (embeddings, head or score, every layer's projections, biases and
// norms: exactly what the model allocates), as a double so that absurd sizes do not overflow: what the weights
// will need, known before anything is allocated.
double parameter_count(const ModelConfig& config);

// The config.json to write next to saved weights: `raw` with torch_dtype updated.
nlohmann::json model_config_to_json(const ModelConfig& config);

}  // namespace swift::model
