// Per-rank memory estimate and advice (see the header).
#include "swift/train/memory_estimate.h"

#include <algorithm>
#include <cstdio>

#include "swift/model/model_config.h"

namespace swift::train {

namespace {

// Activation bytes kept per token for one decoder layer without recomputation: the norm region (the two norms'
// outputs and the residual stream, ~4 hidden-sized vectors: whole on every tensor-parallel rank unless sequence
// parallelism cuts them), the tensor-parallel region (q, k, v, the attention output and its projection, ~6
// hidden-sized, and the MLP's gate, up, activation and product, ~4 intermediate-sized: split over TP).
double layer_bytes_per_token(const MemoryInputs& in) {
  const double t = std::max(1, in.tensor_split), s = in.sequence_parallel ? t : 1.0;
  const double h = static_cast<double>(in.hidden_size), i = static_cast<double>(in.intermediate_size);
  return static_cast<double>(in.activation_element_bytes) * (4.0 * h / s + (6.0 * h + 4.0 * i) / t);
}

// The scores an attention outside a fused kernel keeps for backward, per layer: each row's T x T capped scores and
// probabilities in the compute dtype and its fp32 softmax.
double materialised_scores_bytes(const MemoryInputs& in) {
  const double t = static_cast<double>(in.row_tokens);
  return static_cast<double>(in.rows_per_micro_batch) * static_cast<double>(in.materialised_score_heads) * t * t *
         (2.0 * static_cast<double>(in.activation_element_bytes) + 4.0);
}

double activations(const MemoryInputs& in, bool checkpointing) {
  const double tokens = static_cast<double>(in.tokens_per_micro_batch);
  const double per_layer = layer_bytes_per_token(in) * tokens + materialised_scores_bytes(in);
  // fp32 logits, their log-softmax and its gradient (the loss works in fp32 over the vocabulary, this rank's
  // slice of it under TP); an upper bound, since logits are computed only where a label is.
  const double logits = 3.0 * 4.0 * tokens * static_cast<double>(in.vocab_size) / std::max(1, in.tensor_split);
  if (!checkpointing) return per_layer * static_cast<double>(in.num_layers) + logits;
  // The layers' inputs are the residual stream: cut along the sequence under sequence parallelism.
  const double inputs = static_cast<double>(in.activation_element_bytes) * in.hidden_size * tokens * in.num_layers /
                        (in.sequence_parallel ? std::max(1, in.tensor_split) : 1);
  return inputs + per_layer + logits;  // the layer inputs, one layer recomputed at a time
}

}  // namespace

int64_t mlp_activation_width(const model::ModelConfig& c) {
  if (!c.is_moe() || c.num_hidden_layers <= 0) return c.intermediate_size;
  const int64_t sparse_width = c.moe.experts_per_token * c.moe.expert_intermediate_size + c.moe.shared_expert_intermediate_size;
  int64_t total = 0;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) total += c.sparse_layer(i) ? sparse_width : c.intermediate_size;
  return (total + c.num_hidden_layers - 1) / c.num_hidden_layers;
}

MemoryEstimate estimate_memory(const MemoryInputs& in) {
  MemoryEstimate e;
  const double world = std::max(1, in.world_size);
  e.weights = static_cast<double>(in.weight_bytes);
  if (in.zero_stage >= 3)  // each rank's share at rest (none on the device when offloaded), plus what is gathered
    e.weights = (in.params_offloaded ? 0.0 : e.weights / world) + static_cast<double>(in.outer_weight_bytes) +
                2.0 * static_cast<double>(in.layer_weight_bytes);
  // ZeRO-2 reduces each bucket to its owner as soon as backward completes it and drops the rest: a rank holds
  // its own share plus the (at most two) buckets in flight; otherwise every gradient.
  e.gradients = static_cast<double>(in.trainable_bytes);
  if (in.zero_stage >= 2)
    e.gradients = std::min(e.gradients, e.gradients / world + 2.0 * static_cast<double>(in.bucket_bytes));
  e.optimizer = 2.0 * static_cast<double>(in.trainable_bytes) * in.optimizer_state_ratio / (in.zero_stage >= 1 ? world : 1.0);
  if (in.optimizer_offloaded) e.optimizer = 0;  // in CPU RAM (with the fp32 masters), not on the device
  e.activations = activations(in, in.gradient_checkpointing);
  e.activations_other_mode = activations(in, !in.gradient_checkpointing);
  return e;
}

std::vector<std::string> memory_advice(const MemoryInputs& in, const MemoryEstimate& e, double available_bytes,
                                       bool lora) {
  std::vector<std::string> advice;
  if (available_bytes <= 0 || e.total() <= available_bytes) return advice;
  if (!in.gradient_checkpointing && e.activations_other_mode < e.activations)
    advice.push_back("--gradient_checkpointing true: activations " + format_bytes(e.activations) + " -> " +
                     format_bytes(e.activations_other_mode));
  if (in.world_size > 1 && in.zero_stage < 3) {  // what the next stages would save, from the same estimate
    const std::string ranks = " over the " + std::to_string(in.world_size) + " ranks (saves ";
    MemoryInputs z = in;
    z.zero_stage = 2;
    const double saved2 = e.total() - estimate_memory(z).total();
    if (in.zero_stage < 2 && saved2 > 0)
      advice.push_back("--deepspeed zero2: the AdamW state and the gradients split" + ranks + format_bytes(saved2) + ")");
    z.zero_stage = 3;
    const double saved3 = e.total() - estimate_memory(z).total();
    if (saved3 > std::max(0.0, saved2))
      advice.push_back("--deepspeed zero3: the weights split too" + ranks + format_bytes(saved3) + ")");
  }
  if (in.gpu && in.world_size > 1 && in.zero_stage == 3 && !in.params_offloaded) {
    MemoryInputs z = in;
    z.params_offloaded = z.optimizer_offloaded = true;
    advice.push_back("--deepspeed zero3_offload: the parameters and AdamW state at rest in CPU RAM (saves " +
                     format_bytes(e.total() - estimate_memory(z).total()) + ")");
  }
  if (lora && in.quantizable_params > 0) {
    const double saved = static_cast<double>(in.quantizable_bytes) - static_cast<double>(in.quantizable_params) * 4.13 / 8;
    if (saved > 0)
      advice.push_back("--train_type qlora: the frozen decoder weights in 4 bits (saves about " + format_bytes(saved) + ")");
  }
  if (!lora)
    advice.push_back("--train_type lora: gradients and optimizer state only for the adapter (saves about " +
                     format_bytes(e.gradients + e.optimizer) + ")");
  advice.push_back("a smaller --per_device_train_batch_size or --max_length (activations scale with both; keep "
                   "the global batch with --gradient_accumulation_steps)");
  if (in.world_size == 1) advice.push_back("more ranks (NPROC_PER_NODE) with --deepspeed zero2");
  return advice;
}

std::string describe_estimate(const MemoryInputs& in, const MemoryEstimate& e, double available_bytes,
                              const std::string& device_name, bool lora) {
  std::string out = "weights " + format_bytes(e.weights) + (in.params_offloaded ? " (gathered; at rest in CPU RAM)" : "") +
                    ", gradients " + format_bytes(e.gradients) +
                    ", " + in.optimizer_name + " state " + (in.optimizer_offloaded ? std::string("in CPU RAM") : format_bytes(e.optimizer)) +
                    ", activations " + format_bytes(e.activations) +
                    (in.gradient_checkpointing ? " (gradient checkpointing; " : " (no gradient checkpointing; ") +
                    format_bytes(e.activations_other_mode) + (in.gradient_checkpointing ? " without)" : " with)") +
                    " = " + format_bytes(e.total());
  if (available_bytes > 0) out += " of " + format_bytes(available_bytes) + " " + device_name;
  const auto advice = memory_advice(in, e, available_bytes, lora);
  if (!advice.empty()) {
    out += "\n  this will likely not fit; what would help:";
    for (const auto& a : advice) out += "\n  - " + a;
  }
  return out;
}

}  // namespace swift::train
