// What one rank will need before training starts, so a job that cannot fit says so (and what to change) in
// seconds instead of failing with out-of-memory minutes in. Estimates, not measurements: weights, gradients
// and AdamW state are exact byte counts; activations follow the usual per-token, per-layer count for a
// decoder with fused attention (no sequence-squared term, but for attention that materialises its scores) plus the
// fp32 logits, with gradient checkpointing
// keeping only each layer's input and one layer's activations at a time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "swift/core/bytes.h"

namespace swift::model {
struct ModelConfig;
}

namespace swift::train {

// The MLP width whose activations a token leaves, on average over the layers: intermediate_size on a dense layer; on
// a sparse one its top-k experts' widths and the shared expert's (what MemoryInputs::intermediate_size wants).
int64_t mlp_activation_width(const model::ModelConfig& config);

struct MemoryInputs {
  int64_t total_params = 0;         // every parameter
  int64_t trainable_params = 0;
  int64_t weight_bytes = 0;         // all parameters as loaded (their dtypes)
  int64_t trainable_bytes = 0;      // trainable parameters (gradients and each AdamW moment have this size)
  int64_t hidden_size = 0, intermediate_size = 0, num_layers = 0, vocab_size = 0;
  int64_t activation_element_bytes = 4;  // the compute dtype: 2 under bf16/fp16
  int64_t tokens_per_micro_batch = 0;    // per rank: per_device_train_batch_size x the longest row (or max_length)
  // Tensor parallelism: the attention/MLP widths and the vocabulary are split over `tensor_split` ranks (the sizes
  // above are the whole model's); the norms' and residual stream's activations too under sequence parallelism.
  int tensor_split = 1;
  bool sequence_parallel = false;
  int zero_stage = 0;
  int world_size = 1;
  int64_t bucket_bytes = 25ll << 20;  // the gradient exchange's bucket (ZeRO-2 holds about two of them)
  // The decoder layers' linear weights held in full precision: what 4-bit QLoRA would store in ~4.13 bits each
  // (0 when they are quantized already).
  int64_t quantizable_bytes = 0;
  bool optimizer_offloaded = false;  // ZeRO-Offload: the AdamW state (and fp32 masters) in CPU RAM, not on the GPU
  bool params_offloaded = false;     // ZeRO-3 offload_param: the parameters at rest in CPU RAM, not on the GPU
  bool gpu = false;                  // the device is a GPU (offloading to CPU RAM can help)
  // ZeRO-3 gathers the embeddings, final norm and head whole for each micro-batch, and a decoder layer (plus the
  // next, prefetched) while it runs: their bytes, beyond each rank's share at rest.
  int64_t outer_weight_bytes = 0, layer_weight_bytes = 0;
  int64_t quantizable_params = 0;
  bool gradient_checkpointing = true;
  // Attention that keeps its scores for backward, outside a fused kernel (Gemma 2's soft-capped attention): the
  // query heads on this rank, and the micro-batch's rows and their length. 0 heads: none.
  int64_t materialised_score_heads = 0;
  int64_t rows_per_micro_batch = 0, row_tokens = 0;
  // The optimizer's state against AdamW's two moments per trainable parameter (GaLore's low-rank state: less).
  double optimizer_state_ratio = 1.0;
  std::string optimizer_name = "AdamW";
};

struct MemoryEstimate {
  double weights = 0, gradients = 0, optimizer = 0;     // bytes
  double activations = 0, activations_other_mode = 0;  // with the chosen checkpointing, and with the other
  double total() const { return weights + gradients + optimizer + activations; }
};

MemoryEstimate estimate_memory(const MemoryInputs& in);

// "weights 14.2 GiB, gradients 0.1 GiB, ..." and, when available_bytes > 0 and the total exceeds it, what to
// change (each suggestion with what it would save), one per line.
std::string describe_estimate(const MemoryInputs& in, const MemoryEstimate& e, double available_bytes,
                              const std::string& device_name, bool lora);
// Suggestions only (empty when it fits or nothing is known about the device).
std::vector<std::string> memory_advice(const MemoryInputs& in, const MemoryEstimate& e, double available_bytes,
                                       bool lora);

}  // namespace swift::train
