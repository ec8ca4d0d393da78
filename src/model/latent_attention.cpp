// DeepSeek's multi-head latent attention (see latent_attention.h).
#include "swift/model/latent_attention.h"

#include <ATen/ATen.h>

#include <cmath>

#include "swift/core/error.h"
#include "swift/model/rope.h"

namespace swift::model {

double latent_attention_scale(const ModelConfig& c) {
  double scale = 1.0 / std::sqrt(static_cast<double>(c.latent_attention->qk_head_dim()));
  const double all_dim = c.rope.mscale_all_dim.value_or(0.0);
  if (c.rope.type != "default" && all_dim != 0.0 && c.rope.factor > 1.0) {
    const double mscale = 0.1 * all_dim * std::log(c.rope.factor) + 1.0;
    scale *= mscale * mscale;
  }
  return scale;
}

LatentAttentionImpl::LatentAttentionImpl(const ModelConfig& c, int64_t layer_index, const at::TensorOptions& options)
    : shape_(*c.latent_attention), layer_index_(layer_index), num_heads_(c.num_attention_heads),
      scale_(latent_attention_scale(c)) {
  const int64_t query = num_heads_ * shape_.qk_head_dim();
  // transformers' DeepseekV2/V3RMSNorm on the bottlenecks keep their default epsilon, 1e-6, whatever rms_norm_eps.
  const double bottleneck_eps = 1e-6;
  if (shape_.q_lora_rank > 0) {
    q_a_proj = register_module("q_a_proj", Linear(c.hidden_size, shape_.q_lora_rank, c.attention_bias, options));
    q_a_layernorm = register_module("q_a_layernorm", RMSNorm(shape_.q_lora_rank, bottleneck_eps, options));
    q_b_proj = register_module("q_b_proj", Linear(shape_.q_lora_rank, query, /*bias=*/false, options));
  } else {
    q_proj = register_module("q_proj", Linear(c.hidden_size, query, /*bias=*/false, options));
  }
  kv_a_proj_with_mqa = register_module(
      "kv_a_proj_with_mqa", Linear(c.hidden_size, shape_.kv_lora_rank + shape_.qk_rope_head_dim, c.attention_bias, options));
  kv_a_layernorm = register_module("kv_a_layernorm", RMSNorm(shape_.kv_lora_rank, bottleneck_eps, options));
  kv_b_proj = register_module(
      "kv_b_proj", Linear(shape_.kv_lora_rank, num_heads_ * (shape_.qk_nope_head_dim + shape_.v_head_dim), false, options));
  o_proj = register_module("o_proj", Linear(num_heads_ * shape_.v_head_dim, c.hidden_size, c.attention_bias, options));
}

at::Tensor LatentAttentionImpl::forward(const at::Tensor& x, const AttentionInputs& in) {
  SWIFT_ASSERT(!in.context, "latent attention has no context parallelism (run_training refuses it)");
  const int64_t B = x.size(0), T = x.size(1), H = num_heads_;
  const int64_t nope = shape_.qk_nope_head_dim, rope = shape_.qk_rope_head_dim, vdim = shape_.v_head_dim;
  const at::Tensor q_all = (q_proj ? q_proj(x) : q_b_proj(q_a_layernorm(q_a_proj(x))))
                               .view({B, T, H, shape_.qk_head_dim()}).transpose(1, 2);  // [B, H, T, qk]
  at::Tensor q_nope = q_all.narrow(-1, 0, nope), q_rot = q_all.narrow(-1, nope, rope);
  const at::Tensor compressed = kv_a_proj_with_mqa(x);  // [B, T, r + rope]
  at::Tensor latent = kv_a_layernorm(compressed.narrow(-1, 0, shape_.kv_lora_rank)).unsqueeze(1);  // [B, 1, T, r]
  at::Tensor k_rot = compressed.narrow(-1, shape_.kv_lora_rank, rope).unsqueeze(1);                 // [B, 1, T, rope]
  if (shape_.rope_interleave) {
    q_rot = pairs_to_halves(q_rot);
    k_rot = pairs_to_halves(k_rot);
  }
  if (shape_.rope_in_fp32) {  // DeepSeek-V2: in.cos/sin are fp32 too; the rotated halves rounded once
    const auto dtype = q_rot.scalar_type();
    std::tie(q_rot, k_rot) = apply_rotary(q_rot.to(at::kFloat), k_rot.to(at::kFloat), in.cos, in.sin);
    q_rot = q_rot.to(dtype);
    k_rot = k_rot.to(dtype);
  } else {
    std::tie(q_rot, k_rot) = apply_rotary(q_rot, k_rot, in.cos, in.sin);
  }

  if (in.cache) {  // the compressed form: the latent and the shared RoPE key
    auto& cached_latent = in.cache->keys.at(static_cast<size_t>(layer_index_));
    auto& cached_rot = in.cache->values.at(static_cast<size_t>(layer_index_));
    cached_latent.narrow(2, in.past_length, T).copy_(latent);
    cached_rot.narrow(2, in.past_length, T).copy_(k_rot);
    latent = cached_latent.narrow(2, 0, in.past_length + T);
    k_rot = cached_rot.narrow(2, 0, in.past_length + T);
  }
  const int64_t S = latent.size(2);
  const at::Tensor kv = kv_b_proj(latent.squeeze(1)).view({B, S, H, nope + vdim}).transpose(1, 2);  // [B, H, S, nope + v]
  const at::Tensor k = at::cat({kv.narrow(-1, 0, nope), k_rot.expand({B, H, S, rope})}, -1);
  const at::Tensor v = kv.narrow(-1, nope, vdim);
  const at::Tensor q = at::cat({q_nope, q_rot}, -1);

  const at::Tensor& mask = in.full_mask;
  const bool is_causal = !mask.defined() && T > 1;
  const at::Tensor out = at::scaled_dot_product_attention(
      q, k, v, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt, /*dropout_p=*/0.0, is_causal, scale_);
  return o_proj(out.transpose(1, 2).reshape({B, T, H * vdim}));
}

KVCache make_latent_cache(const ModelConfig& c, int64_t batch, int64_t capacity, const at::TensorOptions& options) {
  const auto& a = *c.latent_attention;
  KVCache cache;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    cache.keys.push_back(at::zeros({batch, 1, capacity, a.kv_lora_rank}, options));
    cache.values.push_back(at::zeros({batch, 1, capacity, a.qk_rope_head_dim}, options));
  }
  return cache;
}

}  // namespace swift::model
