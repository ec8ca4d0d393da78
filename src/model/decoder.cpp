// The shared decoder: modules, masks and the forward pass.
#include "swift/model/decoder.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>
#include <torch/nn/modules/container/modulelist.h>

#include <cmath>
#include <limits>

#include "swift/core/error.h"
#include "swift/model/checkpointing.h"
#include "swift/model/context_parallel.h"
#include "swift/model/family_registry.h"
#include "swift/model/latent_attention.h"
#include "swift/model/moe.h"
#include "swift/model/param_sharding.h"
#include "swift/model/sharded_ops.h"
#include "swift/model/tensor_parallel.h"

namespace swift::model {

LinearImpl::LinearImpl(int64_t in_features, int64_t out_features, bool with_bias, const at::TensorOptions& options)
    : in_features_(in_features), out_features_(out_features) {
  weight = register_parameter("weight", at::empty({out_features, in_features}, options));
  if (with_bias) bias = register_parameter("bias", at::zeros({out_features}, options));
}

at::Tensor LinearImpl::forward(const at::Tensor& x) {
  switch (tp_role) {
    case TensorParallelRole::kNone: return local_forward(x);
    case TensorParallelRole::kColumn:
    case TensorParallelRole::kColumnReplicated:
      return local_forward(tp_input_shared ? x : copy_to_tensor_parallel(x, *tp_comm));
    case TensorParallelRole::kRow: {  // partial sums over this rank's input columns; the bias once, after the sum
      auto y = tp_sequence_parallel ? scatter_to_sequence_parallel(local_forward(x), *tp_comm)
                                    : reduce_from_tensor_parallel(local_forward(x), *tp_comm);
      return bias.defined() ? y + bias : y;
    }
  }
  return local_forward(x);
}

at::Tensor LinearImpl::local_forward(const at::Tensor& x) { return adapter ? adapter->forward(*this, x) : base_forward(x); }

at::Tensor LinearImpl::base_forward(const at::Tensor& x) {
  if (quantized) return quantized_linear(x, quantized, bias);
  if (ParamSharding* sharding = param_sharding(); sharding && sharding->gathers_around_use(weight))
    return sharded_linear(x, weight, bias, *sharding);  // ZeRO-3's LM head
  // A row-split layer's output is a partial sum: its bias is added once, after the sum (forward()).
  return at::linear(x, weight, tp_role == TensorParallelRole::kRow ? at::Tensor() : bias);
}

at::Tensor LinearImpl::dense_weight(c10::ScalarType dtype) const {
  return quantized ? quantized->dequantize(dtype) : weight.to(dtype);
}

void LinearImpl::set_quantized(std::shared_ptr<QuantizedWeight> q) {
  SWIFT_ASSERT(q != nullptr, "set_quantized needs a weight");
  quantized = std::move(q);
  at::NoGradGuard no_grad;
  weight.set_requires_grad(false);
  weight.set_data(at::empty({0}, weight.options()));
}

void LinearImpl::set_dense(const at::Tensor& dense_weight) {
  SWIFT_ASSERT(dense_weight.dim() == 2 && dense_weight.size(0) == out_features_ && dense_weight.size(1) == in_features_,
               "a dense weight of the layer's shape");
  at::NoGradGuard no_grad;
  weight.set_data(dense_weight.detach().clone());
  quantized.reset();
}

EmbeddingImpl::EmbeddingImpl(int64_t num_embeddings, int64_t dim, const at::TensorOptions& options) {
  weight = register_parameter("weight", at::empty({num_embeddings, dim}, options));
}

at::Tensor EmbeddingImpl::forward(const at::Tensor& ids) {
  if (ParamSharding* sharding = param_sharding(); sharding && sharding->gathers_around_use(weight))
    return sharded_embedding(weight, ids, *sharding, padding_idx);  // ZeRO-3
  if (tp_comm) {  // this rank's rows; the others' ids give zeros here and their rows elsewhere
    const auto local = ids - vocab_start;
    const auto mine = local.ge(0).logical_and(local.lt(weight.size(0)));
    const int64_t local_padding = padding_idx >= vocab_start && padding_idx < vocab_start + weight.size(0)
                                      ? padding_idx - vocab_start : -1;
    auto x = at::embedding(weight, at::where(mine, local, at::zeros_like(local)), local_padding) *
             mine.unsqueeze(-1).to(weight.scalar_type());
    return tp_sequence_parallel ? scatter_to_sequence_parallel(x, *tp_comm) : reduce_from_tensor_parallel(x, *tp_comm);
  }
  return at::embedding(weight, ids, padding_idx);
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps_in, const at::TensorOptions& options, bool unit_offset_in)
    : eps(eps_in), unit_offset(unit_offset_in) {
  weight = register_parameter("weight", unit_offset ? at::zeros({dim}, options) : at::ones({dim}, options));
}

at::Tensor RMSNormImpl::forward(const at::Tensor& x) {
  auto xf = x.to(at::kFloat);
  xf = xf * at::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps);
  if (unit_offset) return (xf * (weight.to(at::kFloat) + 1.0)).to(x.scalar_type());
  return weight * xf.to(x.scalar_type());
}

namespace {
RMSNorm make_norm(const ModelConfig& c, int64_t dim, const at::TensorOptions& options) {
  return RMSNorm(dim, c.rms_norm_eps, options, c.norm_unit_offset);
}

// softmax(cap * tanh(q k^T * scale / cap) + mask) v, as transformers' eager attention with a softcap (Gemma 2):
// scaled_dot_product_attention has no place for the tanh. q [B, H, T, D], k/v [B, Hkv, S, D], mask bool or undefined.
at::Tensor soft_capped_attention(const at::Tensor& q, at::Tensor k, at::Tensor v, const at::Tensor& mask, bool is_causal,
                                 double scale, double cap) {
  const int64_t groups = q.size(1) / k.size(1);
  if (groups > 1) {
    k = k.repeat_interleave(groups, 1);
    v = v.repeat_interleave(groups, 1);
  }
  auto scores = at::matmul(q, k.transpose(2, 3)) * scale;
  scores = (scores / cap).tanh() * cap;
  at::Tensor allowed = mask;
  if (!allowed.defined() && is_causal) {
    const int64_t T = q.size(2), S = k.size(2);
    allowed = at::ones({T, S}, q.options().dtype(at::kBool)).tril(S - T);
  }
  if (allowed.defined()) scores = scores.masked_fill(allowed.logical_not(), -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(scores, -1, at::kFloat).to(q.scalar_type()), v);
}
}  // namespace

AttentionImpl::AttentionImpl(const ModelConfig& c, int64_t layer_index, const at::TensorOptions& options)
    : layer_index_(layer_index),
      num_heads_(c.num_attention_heads),
      num_kv_heads_(c.num_key_value_heads),
      head_dim_(c.head_dim),
      sliding_window_(c.layer_sliding_window.at(static_cast<size_t>(layer_index))),
      scale_(c.attention_scale > 0 ? c.attention_scale : 1.0 / std::sqrt(static_cast<double>(c.head_dim))),
      softcap_(c.attn_logit_softcapping),
      sliding_rope_(sliding_window_ > 0 && c.sliding_rope.has_value()),
      rope_interleaved_(c.rope_interleaved),
      qkv_grouped_(c.qkv_grouped_by_kv_head) {
  const bool qkv_bias = c.attention_bias || c.qkv_bias;
  if (c.fused_qkv) {
    qkv_proj = register_module(c.names.qkv_proj, Linear(c.hidden_size, c.q_dim() + 2 * c.kv_dim(), qkv_bias, options));
  } else {
    q_proj = register_module("q_proj", Linear(c.hidden_size, c.q_dim(), qkv_bias, options));
    k_proj = register_module("k_proj", Linear(c.hidden_size, c.kv_dim(), qkv_bias, options));
    v_proj = register_module("v_proj", Linear(c.hidden_size, c.kv_dim(), qkv_bias, options));
  }
  o_proj = register_module(c.names.o_proj, Linear(c.q_dim(), c.hidden_size, c.attention_bias, options));
  if (c.qk_norm) {
    q_norm = register_module("q_norm", make_norm(c, c.head_dim, options));
    k_norm = register_module("k_norm", make_norm(c, c.head_dim, options));
  }
}

void AttentionImpl::divide_heads(int size, int rank) {
  num_heads_ /= size;
  if (num_kv_heads_ % size == 0) {
    num_kv_heads_ /= size;
    projected_kv_heads_ = num_kv_heads_;
  } else {  // k/v_proj whole on every rank; rank r's query heads all share key/value head r * kv / size
    projected_kv_heads_ = num_kv_heads_;
    first_kv_head_ = rank * num_kv_heads_ / size;
    num_kv_heads_ = 1;
  }
}

namespace {
// Tensor parallelism: the input that column-split layers share (q/k/v; gate/up), prepared once for all of them:
// whole rows gathered under sequence parallelism (reduce-scattered back in backward), else the identity whose
// backward sums the gradient over the group. One exchange per shared input, as Megatron's fused projections.
at::Tensor column_split_input(const at::Tensor& x, const LinearImpl& first) {
  if (!first.tp_input_shared) return x;
  return first.tp_sequence_parallel ? gather_from_sequence_parallel(x, *first.tp_comm)
                                    : copy_to_tensor_parallel(x, *first.tp_comm);
}
}  // namespace

at::Tensor AttentionImpl::forward(const at::Tensor& input, const AttentionInputs& in) {
  // Under sequence parallelism the input arrives cut along the sequence; x holds whole rows.
  const at::Tensor x = column_split_input(input, qkv_proj ? *qkv_proj : *q_proj);
  const int64_t B = x.size(0), T = x.size(1);
  const int64_t projected = projected_kv_heads_ > 0 ? projected_kv_heads_ : num_kv_heads_;
  at::Tensor q, k, v;
  if (qkv_proj && qkv_grouped_) {  // InternLM2: per key/value head its query heads, its key, its value
    const int64_t per_group = num_heads_ / projected;
    const auto groups = qkv_proj(x).view({B, T, projected, per_group + 2, head_dim_});
    q = groups.narrow(3, 0, per_group).reshape({B, T, num_heads_ * head_dim_});  // query head g * per_group + j
    k = groups.select(3, per_group);
    v = groups.select(3, per_group + 1);
  } else if (qkv_proj) {  // Phi-3: the query rows, then the keys', then the values' (not split for tensor parallelism)
    const auto parts = qkv_proj(x).split_with_sizes({num_heads_ * head_dim_, projected * head_dim_, projected * head_dim_}, -1);
    q = parts[0];
    k = parts[1];
    v = parts[2];
  } else {
    q = q_proj(x);
    k = k_proj(x);
    v = v_proj(x);
  }
  q = q.view({B, T, num_heads_, head_dim_});
  k = k.reshape({B, T, projected, head_dim_}).narrow(2, first_kv_head_, num_kv_heads_);
  v = v.reshape({B, T, projected, head_dim_}).narrow(2, first_kv_head_, num_kv_heads_).transpose(1, 2);  // [B, Hkv, T, D]
  if (q_norm) {  // Qwen3 and Gemma 3 normalise each head before RoPE
    q = q_norm(q);
    k = k_norm(k);
  }
  const at::Tensor& cos = sliding_rope_ ? in.sliding_cos : in.cos;
  const at::Tensor& sin = sliding_rope_ ? in.sliding_sin : in.sin;
  q = q.transpose(1, 2);  // [B, H, T, D]
  k = k.transpose(1, 2);
  if (rope_interleaved_) {  // GLM-4: the rotated pairs regrouped as halves, queries and keys alike (the rest stays)
    const int64_t rotary = cos.size(-1);
    q = at::cat({pairs_to_halves(q.narrow(-1, 0, rotary)), q.narrow(-1, rotary, head_dim_ - rotary)}, -1);
    k = at::cat({pairs_to_halves(k.narrow(-1, 0, rotary)), k.narrow(-1, rotary, head_dim_ - rotary)}, -1);
  }
  std::tie(q, k) = apply_rotary(q, k, cos, sin);

  if (in.cache) {
    auto& ck = in.cache->keys.at(static_cast<size_t>(layer_index_));
    auto& cv = in.cache->values.at(static_cast<size_t>(layer_index_));
    ck.narrow(2, in.past_length, T).copy_(k);
    cv.narrow(2, in.past_length, T).copy_(v);
    k = ck.narrow(2, 0, in.past_length + T);
    v = cv.narrow(2, 0, in.past_length + T);
  }
  if (in.context) {  // context parallelism: every rank's keys, one way or the other
    SWIFT_ASSERT(softcap_ == 0, "context parallelism has no attention soft-capping (run_training refuses it)");
    const at::Tensor out = context_parallel_attention(q, k, v, *in.context, sliding_window_, scale_);
    return o_proj(out.transpose(1, 2).reshape({B, T, num_heads_ * head_dim_}));
  }
  const at::Tensor& mask = sliding_window_ > 0 ? in.sliding_mask : in.full_mask;
  const bool is_causal = !mask.defined() && T > 1;
  auto out = softcap_ > 0 ? soft_capped_attention(q, k, v, mask, is_causal, scale_, softcap_)
                          : at::scaled_dot_product_attention(
                                q, k, v, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt,
                                /*dropout_p=*/0.0, is_causal, scale_, /*enable_gqa=*/num_kv_heads_ != num_heads_);
  return o_proj(out.transpose(1, 2).reshape({B, T, num_heads_ * head_dim_}));
}

MLPImpl::MLPImpl(const ModelConfig& c, const at::TensorOptions& options) : MLPImpl(c, c.intermediate_size, options) {}

MLPImpl::MLPImpl(const ModelConfig& c, int64_t width, const at::TensorOptions& options)
    : gelu_tanh_(c.hidden_act == "gelu_pytorch_tanh") {
  if (c.fused_gate_up) {
    gate_up_proj = register_module("gate_up_proj", Linear(c.hidden_size, 2 * width, c.mlp_bias, options));
  } else {
    gate_proj = register_module(c.names.gate_proj, Linear(c.hidden_size, width, c.mlp_bias, options));
    up_proj = register_module(c.names.up_proj, Linear(c.hidden_size, width, c.mlp_bias, options));
  }
  down_proj = register_module(c.names.down_proj, Linear(width, c.hidden_size, c.mlp_bias, options));
}

at::Tensor MLPImpl::forward(const at::Tensor& input) {
  at::Tensor gate, up;
  if (gate_up_proj) {  // Phi-3, GLM-4: the gate's rows, then up's
    const auto halves = gate_up_proj(input).chunk(2, -1);
    gate = halves[0];
    up = halves[1];
  } else {
    const at::Tensor x = column_split_input(input, *gate_proj);
    gate = gate_proj(x);
    up = up_proj(x);
  }
  return down_proj((gelu_tanh_ ? at::gelu(gate, "tanh") : at::silu(gate)) * up);
}

DecoderLayerImpl::DecoderLayerImpl(const ModelConfig& c, int64_t layer_index, const at::TensorOptions& options) {
  if (c.latent_attention)
    latent_attn = register_module("self_attn", std::make_shared<LatentAttentionImpl>(c, layer_index, options));
  else
    self_attn = register_module(c.names.self_attn, Attention(c, layer_index, options));
  if (c.sparse_layer(layer_index))
    moe = register_module("mlp", std::make_shared<SparseMoeBlockImpl>(c, options));
  else
    mlp = register_module(c.names.mlp, MLP(c, options));
  input_layernorm = register_module(c.names.input_layernorm, make_norm(c, c.hidden_size, options));
  if (c.sandwich_norms) {  // the family's names: after the attention, before the MLP, after it
    const auto& names = c.sandwich_norm_names;
    post_attention_layernorm = register_module(names.at(0), make_norm(c, c.hidden_size, options));
    pre_feedforward_layernorm = register_module(names.at(1), make_norm(c, c.hidden_size, options));
    post_feedforward_layernorm = register_module(names.at(2), make_norm(c, c.hidden_size, options));
  } else {
    post_attention_layernorm = register_module(c.names.post_attention_layernorm, make_norm(c, c.hidden_size, options));
  }
}

at::Tensor DecoderLayerImpl::forward(const at::Tensor& x, const AttentionInputs& in) {
  if (latent_attn) {
    auto h = x + latent_attn->forward(input_layernorm(x), in);
    const at::Tensor normed = post_attention_layernorm(h);
    return h + (moe ? moe->forward(normed) : mlp(normed));
  }
  if (pre_feedforward_layernorm) {  // Gemma 2/3, GLM-4: each sublayer's output is normalised before its residual add
    const auto h = x + post_attention_layernorm(self_attn(input_layernorm(x), in));
    const at::Tensor normed = pre_feedforward_layernorm(h);
    return h + post_feedforward_layernorm(moe ? moe->forward(normed) : mlp(normed));
  }
  auto h = x + self_attn(input_layernorm(x), in);
  const at::Tensor normed = post_attention_layernorm(h);
  return h + (moe ? moe->forward(normed) : mlp(normed));
}

DecoderBodyImpl::DecoderBodyImpl(const ModelConfig& c, const at::TensorOptions& options) {
  embed_tokens = register_module(c.names.embed_tokens, Embedding(c.vocab_size, c.hidden_size, options));
  if (c.pad_token_id && *c.pad_token_id >= 0 && *c.pad_token_id < c.vocab_size) embed_tokens->padding_idx = *c.pad_token_id;
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) layers->push_back(DecoderLayer(c, i, options));
  norm = register_module("norm", make_norm(c, c.hidden_size, options));
}

CausalLMImpl::CausalLMImpl(ModelConfig config, const at::TensorOptions& options)
    : config_(std::move(config)), rope_(config_) {
  if (config_.sliding_rope)
    sliding_rope_.emplace(*config_.sliding_rope, config_.head_dim, config_.max_position_embeddings);
  model = register_module("model", DecoderBody(config_, options));
  if (config_.num_labels > 0)
    score = register_module("score", Linear(config_.hidden_size, config_.num_labels, false, options));
  else if (!config_.tie_word_embeddings)
    lm_head = register_module(config_.names.lm_head, Linear(config_.hidden_size, config_.vocab_size, false, options));
}

void CausalLMImpl::make_sequence_classifier(int64_t num_labels, uint64_t seed, std::optional<int64_t> pad_token_id) {
  SWIFT_CHECK(!score, UsageError, "the model is already a sequence classifier", "load its causal LM folder instead");
  const auto options = model->embed_tokens->weight.options().device(device());
  if (lm_head) {
    unregister_module(config_.names.lm_head);
    lm_head = nullptr;
  }
  score = register_module("score", Linear(config_.hidden_size, num_labels, false, options));
  {
    torch::NoGradGuard no_grad;
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    score->weight.copy_(at::normal(0.0, config_.initializer_range, score->weight.sizes(), generator, at::kFloat));
  }
  config_.num_labels = num_labels;
  // The family's causal LM class names the classifier: Qwen3ForCausalLM -> Qwen3ForSequenceClassification.
  const ModelFamily* family = find_model_family(config_.model_type, {});
  std::string arch = family && !family->architectures.empty() ? family->architectures.front() : "LlamaForCausalLM";
  arch = arch.substr(0, arch.rfind("ForCausalLM")) + "ForSequenceClassification";
  if (family && !family->sequence_classifier.empty()) arch = family->sequence_classifier;
  config_.raw["architectures"] = nlohmann::json::array({arch});
  nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
  for (int64_t i = 0; i < num_labels; ++i) {
    id2label[std::to_string(i)] = "LABEL_" + std::to_string(i);
    label2id["LABEL_" + std::to_string(i)] = i;
  }
  config_.raw["id2label"] = id2label;
  config_.raw["label2id"] = label2id;
  if (pad_token_id && (!config_.raw.contains("pad_token_id") || config_.raw["pad_token_id"].is_null())) {
    config_.raw["pad_token_id"] = *pad_token_id;
    config_.pad_token_id = pad_token_id;
  }
}

namespace {

// Under context parallelism each rank holds two chunks of every row (args.position_ids: each token's index in its
// row). The row's last real token is on one rank: the others add 0 to the sum over the group, and the sum's
// backward gives that rank's score its gradient.
at::Tensor context_parallel_scores(CausalLM& model, const at::Tensor& hidden, const ForwardArgs& args,
                                   const at::Tensor& mask, const ContextParallel& cp) {
  SWIFT_ASSERT(args.position_ids.defined() && !args.segment_ids.defined(),
               "context parallelism gives each token's index in its row, one sequence per row (no packing)");
  const at::Tensor index = args.position_ids.to(hidden.device());
  at::Tensor last;
  {
    at::NoGradGuard no_grad;
    const at::Tensor local_last = (index * mask - (1 - mask)).amax(1, /*keepdim=*/true);  // -1: none of its tokens here
    last = cp.comm->all_gather(local_last, 1).amax(1, /*keepdim=*/true);
  }
  const at::Tensor scores = model->scores(hidden).to(at::kFloat);  // [B, T/n, num_labels]
  const at::Tensor here = index.eq(last).logical_and(mask.to(at::kBool)).unsqueeze(-1);
  return sum_over_context_parallel(at::where(here, scores, at::zeros({}, scores.options())).sum(1), *cp.comm);
}

}  // namespace

at::Tensor sequence_scores(CausalLM& model, const ForwardArgs& args, const at::Tensor& attention_mask) {
  SWIFT_CHECK(model->is_sequence_classifier(), UsageError, "this model has no score head",
              "score with a *ForSequenceClassification folder (swift rlhf --rlhf_type rm writes one)");
  const at::Tensor hidden = model->forward_hidden(args);
  const at::Tensor mask = attention_mask.to(hidden.device()).to(at::kLong);
  if (const ContextParallel* cp = model->context_parallel()) return context_parallel_scores(model, hidden, args, mask, *cp);
  const at::Tensor positions = at::arange(mask.size(1), mask.options()).unsqueeze(0) * mask;
  const at::Tensor last = positions.argmax(1);
  const at::Tensor rows = at::arange(hidden.size(0), last.options());
  return model->scores(hidden.index({rows, last})).to(at::kFloat);
}

c10::ScalarType CausalLMImpl::dtype() const { return model->embed_tokens->weight.scalar_type(); }
c10::Device CausalLMImpl::device() const {
  return compute_device_ ? *compute_device_ : model->embed_tokens->weight.device();
}

KVCache CausalLMImpl::make_cache(int64_t batch, int64_t capacity) const {
  auto options = model->embed_tokens->weight.options().requires_grad(false);
  if (config_.latent_attention) return make_latent_cache(config_, batch, capacity, options);
  KVCache cache;
  for (int64_t i = 0; i < config_.num_hidden_layers; ++i) {
    cache.keys.push_back(at::zeros({batch, config_.num_key_value_heads, capacity, config_.head_dim}, options));
    cache.values.push_back(at::zeros({batch, config_.num_key_value_heads, capacity, config_.head_dim}, options));
  }
  return cache;
}

at::Tensor position_ids_from_mask(const at::Tensor& attention_mask, int64_t length) {
  auto pos = attention_mask.to(at::kLong).cumsum(-1) - 1;
  pos.masked_fill_(attention_mask.eq(0), 1);
  return pos.narrow(1, pos.size(1) - length, length);
}

namespace {
// bool [B|1, 1, T, S]: causal over cache positions, optionally windowed and padded. A query row that would
// see nothing (a pad token in a left-padded row) sees itself, so softmax never meets an all-masked row.
at::Tensor build_mask(int64_t past, int64_t T, int64_t window, const at::Tensor& key_padding, const at::Tensor& segments,
                      c10::Device device) {
  const int64_t S = past + T;
  auto opts = at::TensorOptions().dtype(at::kLong).device(device);
  auto q_pos = at::arange(past, S, opts).view({T, 1});
  auto k_pos = at::arange(0, S, opts).view({1, S});
  auto allowed = k_pos.le(q_pos);
  if (window > 0) allowed = allowed.logical_and(k_pos.gt(q_pos - window));
  allowed = allowed.view({1, 1, T, S});
  if (key_padding.defined()) allowed = allowed.logical_and(key_padding.view({key_padding.size(0), 1, 1, S}));
  if (segments.defined()) {  // [B, T] with past == 0: same-segment keys only
    const int64_t B = segments.size(0);
    allowed = allowed.logical_and(segments.view({B, 1, T, 1}).eq(segments.view({B, 1, 1, S})));
  }
  // A query with no key left (a left pad) attends to itself, so its softmax stays finite. Other pad queries see
  // the real keys before them only, as transformers' masks: their outputs then match (TRL logs logits there).
  const auto diagonal = k_pos.eq(q_pos).view({1, 1, T, S});
  return allowed.logical_or(diagonal.logical_and(allowed.any(-1, /*keepdim=*/true).logical_not()));
}
}  // namespace

at::Tensor CausalLMImpl::forward_hidden(const ForwardArgs& args) {
  const auto& ids = args.input_ids;
  SWIFT_ASSERT(ids.dim() == 2, "input_ids must be [B, T]");
  const int64_t B = ids.size(0), T = ids.size(1);
  const int64_t past = args.cache ? args.cache->length : 0;
  const int64_t S = past + T;
  SWIFT_ASSERT(!sequence_parallel_ || (!args.cache && T % tensor_parallel_->size() == 0),
               "sequence parallelism trains on rows whose length the tensor-parallel size divides");
  if (args.cache) {
    SWIFT_CHECK(S <= args.cache->capacity(), UsageError,
                "sequence of " + std::to_string(S) + " tokens exceeds the KV cache (" +
                    std::to_string(args.cache->capacity()) + ")",
                "raise --max_model_len or shorten the prompt");
  }

  at::Tensor key_padding;
  if (args.attention_mask.defined()) {
    SWIFT_ASSERT(args.attention_mask.size(0) == B && args.attention_mask.size(1) == S,
                 "attention_mask must be [B, cached + new]");
    key_padding = args.attention_mask.to(ids.device()).to(at::kBool);
    if (key_padding.all().item<bool>()) key_padding = at::Tensor();
  }
  at::Tensor position_ids = args.position_ids;
  if (!position_ids.defined()) {
    position_ids = args.attention_mask.defined()
                       ? position_ids_from_mask(args.attention_mask.to(ids.device()), T)
                       : at::arange(past, S, ids.options().dtype(at::kLong)).unsqueeze(0).expand({B, T});
  }

  if (args.cache && rope_.depends_on_length()) {
    // longrope: keys rotated with the short factors are stale once a sequence runs past the original length
    // (transformers' Phi-3 recomputes its cache then; Generator does the same).
    const bool long_rope = rope_.long_regime(position_ids.max().item<int64_t>() + 1);
    SWIFT_CHECK(past == 0 || long_rope == args.cache->long_rope, UsageError,
                "the KV cache holds keys rotated for " + std::string(args.cache->long_rope ? "long" : "short") +
                    " sequences, but this forward reaches position " + std::to_string(position_ids.max().item<int64_t>()),
                "recompute the cache from every token so far once a sequence passes original_max_position_embeddings");
    args.cache->long_rope = long_rope;
  }

  AttentionInputs in;
  const bool rope_fp32 = config_.latent_attention && config_.latent_attention->rope_in_fp32;
  std::tie(in.cos, in.sin) = rope_.cos_sin(position_ids, rope_fp32 ? at::kFloat : dtype());
  if (sliding_rope_) std::tie(in.sliding_cos, in.sliding_sin) = sliding_rope_->cos_sin(position_ids, dtype());
  in.cache = args.cache;
  in.past_length = past;
  at::Tensor segments;
  if (args.segment_ids.defined()) {
    SWIFT_ASSERT(!args.cache, "segment_ids (packing) cannot be combined with a KV cache");
    SWIFT_ASSERT(args.segment_ids.dim() == 2 && args.segment_ids.size(0) == B && args.segment_ids.size(1) == T,
                 "segment_ids must be [B, T]");
    segments = args.segment_ids.to(ids.device()).to(at::kLong);
  }
  if (context_parallel_) {  // the attention masks each block of keys itself (causal by index, by segment)
    SWIFT_ASSERT(!args.cache && !key_padding.defined() && args.position_ids.defined(),
                 "context parallelism trains on right-padded rows with their positions given");
    auto context = std::make_shared<ContextParallelInputs>();
    context->comm = context_parallel_->comm.get();
    context->attention = context_parallel_->attention;
    if (segments.defined()) {
      context->segments = segments;
      context->all_segments = context->comm->all_gather(segments, 1);
    }
    in.context = std::move(context);
  } else {
    const bool plain_causal = !key_padding.defined() && !segments.defined() && (past == 0 || T == 1);
    if (!plain_causal) in.full_mask = build_mask(past, T, 0, key_padding, segments, ids.device());
    for (auto window : config_.layer_sliding_window) {
      if (window > 0 && (!plain_causal || S > window)) {
        in.sliding_mask = build_mask(past, T, window, key_padding, segments, ids.device());
        break;
      }
    }
  }

  const PipelineStage* stage = pipeline_stage_.get();
  SWIFT_ASSERT(!stage || !args.cache, "a pipeline stage does not generate");
  SWIFT_ASSERT(!stage || stage->first || stage->input.defined(), "a later pipeline stage runs on the previous one's output");
  auto x = !stage || stage->first ? model->embed_tokens(ids) : stage->input;
  if ((!stage || stage->first) && config_.embedding_multiplier != 1.0)  // Gemma: scaled in the weights' dtype
    x = x * at::scalar_tensor(config_.embedding_multiplier, x.options());
  const bool checkpoint = gradient_checkpointing_ && is_training() && at::GradMode::is_enabled() && !args.cache;
  ParamSharding* sharding = param_sharding();  // ZeRO-3: each layer's parameters are gathered around its use
  const int64_t first_layer = stage ? stage->first_layer : 0;
  const int64_t end_layer = stage ? stage->end_layer : static_cast<int64_t>(model->layers->size());
  for (int64_t i = first_layer; i < end_layer; ++i) {
    const auto& layer = model->layers->ptr(static_cast<size_t>(i));
    if (checkpoint) {  // gathers in its forward and again for the recomputation
      x = checkpointed_layer_forward(std::static_pointer_cast<DecoderLayerImpl>(layer), x, in);
      continue;
    }
    SWIFT_CHECK(!sharding || !at::GradMode::is_enabled(), UsageError,
                "ZeRO-3 trains with gradient checkpointing only", "pass --gradient_checkpointing true");
    if (sharding) sharding->gather(layer->parameters());
    x = layer->as<DecoderLayerImpl>()->forward(x, in);
    if (sharding) sharding->release(layer->parameters());
  }
  if (args.cache) args.cache->length = S;
  if (stage && !stage->last) return x;
  x = model->norm(x);
  // Whole rows for the head; the gather's backward sums the vocabulary slices' gradients (logits() adds none). A
  // sequence classifier's score head is whole on every rank, so every rank's gradient is already the whole one: the
  // gather's backward keeps this rank's part of it.
  if (!sequence_parallel_) return x;
  return score ? gather_sequence_for_replicated_use(x, *tensor_parallel_) : gather_from_sequence_parallel(x, *tensor_parallel_);
}

at::Tensor CausalLMImpl::soft_capped(const at::Tensor& logits) const {
  const double cap = config_.final_logit_softcapping;
  return cap > 0 ? (logits / cap).tanh() * cap : logits;
}

at::Tensor CausalLMImpl::logits(const at::Tensor& hidden) {
  SWIFT_CHECK(!score, UsageError, "this model is a sequence classifier (a reward model): it has no language-model head",
              "generate or fine-tune with its causal LM folder; score with swift infer --val_dataset");
  if (lm_head) return soft_capped(lm_head(hidden));
  const at::Tensor& tied = model->embed_tokens->weight;
  if (tensor_parallel_)  // this rank's vocabulary; under sequence parallelism forward_hidden's gather sums the gradient
    return soft_capped(at::linear(sequence_parallel_ ? hidden : copy_to_tensor_parallel(hidden, *tensor_parallel_), tied));
  if (ParamSharding* sharding = param_sharding(); sharding && sharding->gathers_around_use(tied))
    return soft_capped(sharded_linear(hidden, tied, at::Tensor(), *sharding));  // ZeRO-3: gathered again for the head
  return soft_capped(at::linear(hidden, tied));
}

at::Tensor CausalLMImpl::vocab_mean_logits(const at::Tensor& hidden) {
  SWIFT_CHECK(!score, UsageError, "this model is a sequence classifier (a reward model): it has no language-model head",
              "train preferences on its causal LM folder");
  if (config_.final_logit_softcapping > 0) {  // the tanh is not linear: the logits themselves, averaged
    at::NoGradGuard no_grad;
    const at::Tensor h = hidden.detach();
    // A block of positions at a time: about 64M logits (this rank's vocabulary), not [B, T, V] at once.
    const int64_t vocab = std::max<int64_t>(1, (lm_head ? lm_head->weight : model->embed_tokens->weight).size(0));
    const int64_t block = std::max<int64_t>(1, (int64_t{1} << 26) / (std::max<int64_t>(1, h.size(0)) * vocab));
    std::vector<at::Tensor> means;
    for (int64_t t = 0; t < h.size(1); t += block)
      means.push_back(logits(h.narrow(1, t, std::min(block, h.size(1) - t))).to(at::kFloat).mean(-1));
    at::Tensor mean = at::cat(means, 1);
    if (tensor_parallel_) {  // equal slices of the vocabulary: the whole mean is the slices' mean
      tensor_parallel_->all_reduce_sum(mean);
      mean = mean / static_cast<double>(tensor_parallel_->size());
    }
    return mean;
  }
  const at::Tensor& head = lm_head ? lm_head->weight : model->embed_tokens->weight;
  ParamSharding* sharding = param_sharding();
  const bool gather = sharding && sharding->gathers_around_use(head);  // ZeRO-3: the head's rows' mean only
  if (gather) sharding->gather({head});
  at::Tensor row_mean = (lm_head ? lm_head->dense_weight(at::kFloat) : head.to(at::kFloat)).mean(0);
  if (gather) sharding->release({head});
  at::Tensor bias_mean = lm_head && lm_head->bias.defined() ? lm_head->bias.to(at::kFloat).mean().reshape({1})
                                                            : at::zeros({1}, row_mean.options());
  if (tensor_parallel_) {  // each rank holds an equal slice of the rows: the whole mean is the slices' mean
    at::Tensor both = at::cat({row_mean, bias_mean});
    tensor_parallel_->all_reduce_sum(both);
    both = both / static_cast<double>(tensor_parallel_->size());
    row_mean = both.narrow(0, 0, row_mean.numel());
    bias_mean = both.narrow(0, row_mean.numel(), 1);
  }
  return at::matmul(hidden.to(at::kFloat), row_mean) + bias_mean;
}

void KVCache::select_rows(const at::Tensor& rows) {
  for (auto& k : keys) k = k.index_select(0, rows);
  for (auto& v : values) v = v.index_select(0, rows);
}

}  // namespace swift::model
