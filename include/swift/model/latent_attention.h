// DeepSeek-V2/V3's multi-head latent attention (MLA), under transformers' names:
//   model.layers.N.self_attn.{q_a_proj, q_b_proj}.weight and q_a_layernorm.weight (or q_proj.weight without
//   q_lora_rank), kv_a_proj_with_mqa.weight, kv_a_layernorm.weight, kv_b_proj.weight, o_proj.weight.
// Each token's keys and values come from one compressed latent (kv_lora_rank wide) and one RoPE key shared by the
// heads (qk_rope_head_dim wide); the KV cache holds those two, as transformers' does, and the heads' keys and values
// are expanded from them by kv_b_proj at every step.
#pragma once

#include <torch/nn/module.h>

#include "swift/model/decoder.h"

namespace swift::model {

class LatentAttentionImpl : public torch::nn::Module {
 public:
  LatentAttentionImpl(const ModelConfig& config, int64_t layer_index, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x, const AttentionInputs& in);  // x: [B, T, C]

  Linear q_proj{nullptr};  // without q_lora_rank
  Linear q_a_proj{nullptr}, q_b_proj{nullptr};
  RMSNorm q_a_layernorm{nullptr};
  Linear kv_a_proj_with_mqa{nullptr}, kv_b_proj{nullptr}, o_proj{nullptr};
  RMSNorm kv_a_layernorm{nullptr};

 private:
  LatentAttentionConfig shape_;
  int64_t layer_index_, num_heads_;
  double scale_;
};

// The per-layer cache of a latent-attention model: keys hold the normalised latents [B, 1, capacity, kv_lora_rank],
// values the rotated RoPE keys [B, 1, capacity, qk_rope_head_dim].
KVCache make_latent_cache(const ModelConfig& config, int64_t batch, int64_t capacity, const at::TensorOptions& options);

// The scores' scale: qk_head_dim^-0.5, times mscale(factor, mscale_all_dim)^2 under a scaled RoPE whose
// mscale_all_dim is set (DeepSeek's YaRN; transformers' yarn_apply_mscale).
double latent_attention_scale(const ModelConfig& config);

}  // namespace swift::model
