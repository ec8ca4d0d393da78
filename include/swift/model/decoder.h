// The decoder-only causal LM shared by every family (Llama, Qwen2/3, Mistral, Gemma 1/2/3, the MoE ones), as LibTorch
// modules registered under Hugging Face's names, so named_parameters() keys are checkpoint keys:
//   model.embed_tokens.weight, model.layers.N.self_attn.{q,k,v,o}_proj.{weight,bias},
//   model.layers.N.self_attn.{q,k}_norm.weight, model.layers.N.mlp.{gate,up,down}_proj.weight,
//   model.layers.N.self_attn.qkv_proj.weight and model.layers.N.mlp.gate_up_proj.weight (Phi-3's fused ones),
//   model.layers.N.{input,post_attention}_layernorm.weight,
//   model.layers.N.{pre,post}_feedforward_layernorm.weight (Gemma 2/3), model.norm.weight, lm_head.weight (untied only);
//   a family whose files name them otherwise keeps its names (ModelConfig::names: InternLM2's model.tok_embeddings,
//   attention.wqkv, feed_forward.w1, ..., output; sandwich_norm_names: GLM-4's).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swift/model/kv_cache.h"
#include "swift/model/model_config.h"
#include "swift/model/quantized_weight.h"
#include "swift/model/rope.h"

namespace swift::model {

class LinearImpl;
struct ContextParallel;        // context_parallel.h
struct ContextParallelInputs;  // context_parallel.h
class TensorParallelComm;    // tensor_parallel.h
struct DeferredWeights;      // checkpoint.h
class SparseMoeBlockImpl;    // moe.h
class LatentAttentionImpl;   // latent_attention.h
struct TensorParallelSplit;  // tensor_parallel.h

// How a Linear takes part in tensor parallelism (tensor_parallel.h): not split, output rows split, input columns
// split, or whole on every rank of the group behind the same input as a column-split layer (key/value projections
// when there are fewer KV heads than ranks: each rank uses one head, and the gradients are partial).
enum class TensorParallelRole { kNone, kColumn, kRow, kColumnReplicated };

// What a tuner (LoRA) puts in a Linear's place: it computes the whole output from x and the base layer. Its
// parameters are registered on the Linear itself (q_proj.lora_A.weight), so names stay PEFT's.
class LinearAdapter {
 public:
  virtual ~LinearAdapter() = default;
  virtual at::Tensor forward(LinearImpl& base, const at::Tensor& x) = 0;  // x: [..., in] -> [..., out]
  // Tensor parallelism (tensor_parallel.h): keeps this rank's slice of the adapter's parameters for a layer split as
  // `role` (`prefix`: the layer's name), recording in `split` the sliced ones and those whose gradient each rank
  // computes only in part. On a row-split layer forward() must leave out the bias (base_forward does).
  // Default: a UsageError (the adapter cannot be split).
  virtual void split_for_tensor_parallel(TensorParallelRole role, TensorParallelComm& comm, const std::string& prefix,
                                         TensorParallelSplit& split);
};

// y = x W^T + b. Our own module (not torch::nn::Linear) so tuners can wrap it without changing names.
class LinearImpl : public torch::nn::Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x);  // x: [..., in] -> [..., out]; the adapter's output when set
  // x W^T + b without the adapter: from `weight`, or from the quantized weight when there is one.
  at::Tensor base_forward(const at::Tensor& x);
  // W [out, in] in `dtype`: `weight` cast, or the quantized weight dequantized.
  at::Tensor dense_weight(c10::ScalarType dtype) const;
  // Keeps `q` instead of `weight`, whose values are freed (it stays registered, empty, so names do not change).
  // A null `q` with a dense weight given turns the layer back into a plain one (merging).
  void set_quantized(std::shared_ptr<QuantizedWeight> q);
  void set_dense(const at::Tensor& dense_weight);
  int64_t in_features() const { return in_features_; }
  int64_t out_features() const { return out_features_; }

  at::Tensor weight;  // [out, in]; empty when quantized
  at::Tensor bias;    // [out] or undefined
  std::shared_ptr<LinearAdapter> adapter;  // set by swift::tuners; null: plain x W^T + b
  std::shared_ptr<QuantizedWeight> quantized;  // set by swift::quant; null: `weight` holds the values
  // Tensor parallelism (apply_tensor_parallel): this rank's slice and the group the forward reduces over.
  TensorParallelRole tp_role = TensorParallelRole::kNone;
  TensorParallelComm* tp_comm = nullptr;
  // A column-split layer whose input it shares with others (q/k/v, gate/up): the module prepares that input once
  // for all of them (column_split_input), so the layer takes it as it comes. Else (lm_head) the layer does.
  bool tp_input_shared = false;
  // Sequence parallelism: the shared input arrives cut along the sequence; a row-split layer's output leaves so.
  bool tp_sequence_parallel = false;

 private:
  at::Tensor local_forward(const at::Tensor& x);
  int64_t in_features_, out_features_;
};
TORCH_MODULE(Linear);

// RMSNorm computed in fp32 and cast back before the weight, as transformers' LlamaRMSNorm; with unit_offset
// (Gemma) it scales by (1 + weight) in fp32 and casts after, as GemmaRMSNorm, and its weight starts at 0.
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps, const at::TensorOptions& options, bool unit_offset = false);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight;
  double eps;
  bool unit_offset;
};
TORCH_MODULE(RMSNorm);

// Token embeddings: weight [V, C]; forward gathers rows.
class EmbeddingImpl : public torch::nn::Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t dim, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& ids);  // ids: [B, T] -> [B, T, C]
  at::Tensor weight;
  // config.json's pad_token_id: as transformers' nn.Embedding(padding_idx), its row takes no gradient from the
  // lookup (it still does as a tied head). -1: none.
  int64_t padding_idx = -1;
  // Vocabulary-parallel (apply_tensor_parallel): weight holds rows [vocab_start, vocab_start + rows) of the whole.
  int64_t vocab_start = 0;
  TensorParallelComm* tp_comm = nullptr;
  bool tp_sequence_parallel = false;  // the output leaves cut along the sequence (reduce-scattered)
};
TORCH_MODULE(Embedding);

// What every attention layer of one forward pass shares.
struct AttentionInputs {
  at::Tensor cos, sin;  // [B, T, D] for this chunk's positions
  at::Tensor sliding_cos, sliding_sin;  // the sliding-window layers' own, where their RoPE differs (Gemma 3)
  // bool [B or 1, 1, T, S], true where query t may attend key s (S = cached + T keys). Undefined means the
  // plain causal pattern: is_causal for a prefill (T > 1, nothing cached), everything for one new token.
  at::Tensor full_mask;
  at::Tensor sliding_mask;  // the same for sliding-window layers
  KVCache* cache = nullptr;  // append this chunk's keys/values and attend over the whole cache
  int64_t past_length = 0;   // keys already in the cache before this chunk
  // Context parallelism: this rank holds a share of each row and attends over every rank's keys (no mask then).
  std::shared_ptr<const ContextParallelInputs> context;
};

class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const ModelConfig& config, int64_t layer_index, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x, const AttentionInputs& in);  // x: [B, T, C]
  // Tensor parallelism: this rank (of `size`) computes 1/size of the query heads and of the key/value heads, or
  // with fewer key/value heads than ranks the one its query heads share.
  void divide_heads(int size, int rank);
  Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};
  Linear qkv_proj{nullptr};  // Phi-3, InternLM2 (config.fused_qkv): q, k and v in one; q/k/v_proj are then null
  RMSNorm q_norm{nullptr}, k_norm{nullptr};

 private:
  int64_t layer_index_, num_heads_, num_kv_heads_, head_dim_, sliding_window_;
  int64_t projected_kv_heads_ = 0, first_kv_head_ = 0;  // k/v_proj's heads, and the first this rank attends with
  double scale_;    // of the scores
  double softcap_;  // of the scores (Gemma 2); 0: none
  bool sliding_rope_;  // this layer takes AttentionInputs::sliding_cos/sin
  bool rope_interleaved_;  // GLM-4: the rotated dimensions pair up adjacently
  bool qkv_grouped_;       // InternLM2: qkv_proj's rows grouped by key/value head
};
TORCH_MODULE(Attention);

class MLPImpl : public torch::nn::Module {
 public:
  MLPImpl(const ModelConfig& config, const at::TensorOptions& options);  // intermediate_size wide
  MLPImpl(const ModelConfig& config, int64_t intermediate_size, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x);  // down(act(gate(x)) * up(x)), act: config.hidden_act
  Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};
  Linear gate_up_proj{nullptr};  // Phi-3, GLM-4 (config.fused_gate_up): gate and up in one; gate/up_proj are then null

 private:
  bool gelu_tanh_;  // else silu
};
TORCH_MODULE(MLP);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const ModelConfig& config, int64_t layer_index, const at::TensorOptions& options);
  at::Tensor forward(const at::Tensor& x, const AttentionInputs& in);
  Attention self_attn{nullptr};  // null under latent attention
  std::shared_ptr<LatentAttentionImpl> latent_attn;  // DeepSeek's MLA, registered as "self_attn"; else null
  MLP mlp{nullptr};  // null on a sparse (mixture-of-experts) layer
  std::shared_ptr<SparseMoeBlockImpl> moe;  // registered as "mlp" (moe.h); null on a dense layer
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
  // Gemma 2/3, GLM-4 (config.sandwich_norms): around the MLP; post_attention_layernorm then normalises the attention's
  // output. Registered under config.sandwich_norm_names (GLM-4's file calls the norm before its MLP post_attention_layernorm).
  RMSNorm pre_feedforward_layernorm{nullptr}, post_feedforward_layernorm{nullptr};
};
TORCH_MODULE(DecoderLayer);

// "model": embeddings, layers, final norm.
class DecoderBodyImpl : public torch::nn::Module {
 public:
  DecoderBodyImpl(const ModelConfig& config, const at::TensorOptions& options);
  Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RMSNorm norm{nullptr};
};
TORCH_MODULE(DecoderBody);

// Pipeline parallelism (distributed/model_parallel_strategy.h): the part of the model one stage runs. A stage runs
// layers [first_layer, end_layer); the first stage starts from the embedding, a later one from `input` (the previous
// stage's output, received before each forward); the last stage ends with the final norm, an earlier one returns
// its last layer's output for the next stage.
struct PipelineStage {
  int64_t first_layer = 0, end_layer = 0;
  bool first = true, last = true;
  at::Tensor input;  // [B, T, C]: this micro-batch's activations from the previous stage (not on the first)
};

// Inputs to CausalLM::forward.
struct ForwardArgs {
  at::Tensor input_ids;       // [B, T] int64
  at::Tensor position_ids;    // [B, T] int64; default: past_length + arange(T), or from attention_mask
  at::Tensor attention_mask;  // [B, S] (1 real, 0 pad) over cached + new tokens; optional
  KVCache* cache = nullptr;   // optional; updated in place
  // [B, T] int64; optional (packing, no cache): a query attends only to keys of the same segment id, so
  // several samples packed into one row do not see each other (block-diagonal causal mask).
  at::Tensor segment_ids;
};

class CausalLMImpl : public torch::nn::Module {
 public:
  // Parameters are allocated uninitialised with `options` (dtype, device): load or init them next.
  explicit CausalLMImpl(ModelConfig config, const at::TensorOptions& options = {});

  // Final hidden states [B, T, C] (after the last norm); on a pipeline stage before the last, its output.
  at::Tensor forward_hidden(const ForwardArgs& args);
  // Logits [B, T, V] from hidden states [B, T, C], in the weights' dtype.
  at::Tensor logits(const at::Tensor& hidden);
  at::Tensor forward(const ForwardArgs& args) { return logits(forward_hidden(args)); }
  // logits(hidden).mean(-1) ([B, T], float32) without computing the logits: the output layer is linear, so the
  // mean over the vocabulary is hidden times the mean of its rows. For logged metrics (TRL's logits/chosen); an
  // adapter on lm_head is not included.
  at::Tensor vocab_mean_logits(const at::Tensor& hidden);

  // A cache sized for `batch` rows of up to `capacity` tokens, on the weights' device and dtype.
  KVCache make_cache(int64_t batch, int64_t capacity) const;
  // longrope (Phi-3): whether a forward whose furthest position is seq_len - 1 rotates with the long factors. A
  // cache filled in the other regime must be recomputed first (forward_hidden refuses it).
  bool long_rope(int64_t seq_len) const { return rope_.long_regime(seq_len); }

  // Sequence classification (reward models): score(hidden) = hidden score^T, [B, T, num_labels].
  at::Tensor scores(const at::Tensor& hidden) { return score(hidden); }
  bool is_sequence_classifier() const { return static_cast<bool>(score); }
  // Turns this causal LM into a *ForSequenceClassification model: lm_head goes, a score head of num_labels
  // outputs comes, initialised normal(0, initializer_range) from `seed` (as transformers initialises a new head),
  // and config.json becomes <Family>ForSequenceClassification with id2label, so saved folders load as one.
  // pad_token_id goes into config.json when it has none (transformers finds each row's last token by it).
  void make_sequence_classifier(int64_t num_labels, uint64_t seed, std::optional<int64_t> pad_token_id = std::nullopt);

  const ModelConfig& config() const { return config_; }
  // Activation checkpointing of every decoder layer (see checkpointing.h): when on, a forward pass in training
  // mode with grad enabled keeps only each layer's input and recomputes the layer in backward. Eval mode,
  // no-grad passes and KV-cache passes are unaffected. Default: off.
  void set_gradient_checkpointing(bool enabled) { gradient_checkpointing_ = enabled; }
  bool gradient_checkpointing() const { return gradient_checkpointing_; }
  c10::ScalarType dtype() const;
  // Where the model computes: the embedding's device, unless set_compute_device says otherwise (ZeRO-3 with
  // offload_param keeps some weights in CPU RAM between uses while the layers run on the GPU).
  c10::Device device() const;
  void set_compute_device(c10::Device device) { compute_device_ = device; }

  // The layer that produces the outputs (PEFT's output embeddings): lm_head, a sequence classifier's score, or null
  // when the head is the tied embedding.
  const LinearImpl* output_layer() const { return lm_head ? lm_head.get() : score ? score.get() : nullptr; }

  // Tensor parallelism (tensor_parallel.h): the group when the model is split, else null. logits() then gives this
  // rank's vocabulary slice, [vocab_start(), vocab_start() + V/size).
  TensorParallelComm* tensor_parallel() const { return tensor_parallel_.get(); }
  int64_t vocab_start() const { return model->embed_tokens->vocab_start; }
  void set_tensor_parallel(std::shared_ptr<TensorParallelComm> comm, bool sequence_parallel = false) {
    tensor_parallel_ = std::move(comm);
    sequence_parallel_ = sequence_parallel && tensor_parallel_;
  }
  // Megatron sequence parallelism (tensor_parallel.h): the layers' activations are cut along the sequence over the
  // tensor-parallel group; forward_hidden's last output is whole again, gathered so that its gradient is summed over
  // the group: the head (logits()) is then its only differentiable consumer. A sequence classifier's score head is
  // whole on every rank instead, so there the gather gives each rank its part of the gradient back, unsummed.
  bool sequence_parallel() const { return sequence_parallel_; }
  // Pipeline parallelism: forward_hidden runs this stage's part only (see PipelineStage); null: the whole model.
  PipelineStage* pipeline_stage() const { return pipeline_stage_.get(); }
  void set_pipeline_stage(std::shared_ptr<PipelineStage> stage) { pipeline_stage_ = std::move(stage); }
  // Context parallelism (context_parallel.h): the model runs on this rank's share of each row (input_ids and
  // position_ids as context_parallel_share cuts them) and its attention reaches the other ranks' keys. Training only.
  const ContextParallel* context_parallel() const { return context_parallel_.get(); }
  void set_context_parallel(std::shared_ptr<ContextParallel> cp) { context_parallel_ = std::move(cp); }
  // Parameters loaded shape-only, to be read from their folder once the model is split (checkpoint.h's
  // Placement::kDeferred); null when every parameter holds its values.
  DeferredWeights* deferred_weights() const { return deferred_weights_.get(); }
  void set_deferred_weights(std::shared_ptr<DeferredWeights> deferred) { deferred_weights_ = std::move(deferred); }

  DecoderBody model{nullptr};
  Linear lm_head{nullptr};  // null when tie_word_embeddings: logits use model.embed_tokens.weight
  Linear score{nullptr};    // sequence classifiers only (then no lm_head)

 private:
  // cap * tanh(logits / cap) with the config's final_logit_softcapping (Gemma 2); the logits as they are without.
  at::Tensor soft_capped(const at::Tensor& logits) const;

  ModelConfig config_;
  RotaryEmbedding rope_;
  std::optional<RotaryEmbedding> sliding_rope_;  // config.sliding_rope's
  bool gradient_checkpointing_ = false;
  std::optional<c10::Device> compute_device_;
  std::shared_ptr<TensorParallelComm> tensor_parallel_;
  bool sequence_parallel_ = false;
  std::shared_ptr<PipelineStage> pipeline_stage_;
  std::shared_ptr<ContextParallel> context_parallel_;
  std::shared_ptr<DeferredWeights> deferred_weights_;
};
TORCH_MODULE(CausalLM);

// A sequence classifier's outputs at each row's last real token (the rightmost 1 of attention_mask [B, T], so
// right or left padding): [B, num_labels], float32. transformers takes the rightmost token that is not the pad
// token, the same token unless a row's text itself holds pad tokens. Under context parallelism `args` and the mask
// are this rank's share of the rows, args.position_ids each token's index in its row (one sequence per row): the
// rank holding a row's last real token gives its score, summed over the group.
at::Tensor sequence_scores(CausalLM& model, const ForwardArgs& args, const at::Tensor& attention_mask);

// The parameter name of an untied LM head (what a reward model's score head replaces).
inline const char* const kLmHeadWeight = "lm_head.weight";

// Bytes held by quantized Linear weights (QuantizedWeight::bytes), and how many layers have one.
std::pair<int64_t, int64_t> quantized_bytes(const CausalLM& model);
// Moves quantized weights to `device` (model->to() moves the registered tensors only).
void move_quantized(CausalLM& model, c10::Device device);

// position_ids for a (left-)padded attention_mask [B, S]: cumsum - 1, pads set to 1 (as transformers'
// generate does), last T columns.
at::Tensor position_ids_from_mask(const at::Tensor& attention_mask, int64_t length);

}  // namespace swift::model
