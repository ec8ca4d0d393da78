// Which Megatron layout to train a model on a set of GPUs (`--plan_layout true`, a dry run that reads config.json
// only): every TP x CP x PP x DP split of the GPUs that the model allows, the busiest rank's memory under each, and
// the one recommended. The rules are Megatron-LM's and ms-swift's guidance for large models:
//   - the fewest ranks per model copy that fit: what is left is data parallelism, which costs one gradient exchange
//     per step;
//   - tensor parallelism first, and only within a node (it exchanges activations in every layer);
//   - then pipeline stages, which may span nodes (they exchange one activation per micro-batch and stage);
//   - context parallelism last, when long rows' activations are what does not fit;
//   - a mixture-of-experts model's experts split over the ranks of a stage (expert parallelism across TP, CP and
//     DP, Megatron's expert tensor parallel size 1: it adds no rank per model copy, but sends the tokens to their
//     experts in every sparse layer), the smallest split that fits; TP splits its dense part, not the experts.
// The estimate is train/memory_estimate.h's, per rank: the busiest stage's weights (the first stage's embedding,
// the last's head) over TP and its experts over EP, gradients, the AdamW state over the data group (the distributed
// optimizer), and the activations of up to PP micro-batches in flight (1F1B's first stage) of its layers for its
// share of each row.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "swift/model/model_config.h"
#include "swift/train/memory_estimate.h"
#include "swift/train/training_options.h"

namespace swift::train {

struct LayoutPlanInputs {
  model::ModelConfig config;
  int gpus = 1, gpus_per_node = 1;
  double gpu_bytes = 0;           // one GPU's memory
  double usable_share = 0.9;      // of it (the CUDA context, the allocator's slack)
  int64_t row_tokens = 2048;      // --max_length
  int64_t micro_batch = 1;        // --per_device_train_batch_size (Megatron's --micro_batch_size)
  int64_t micro_batches = 1;      // per step (--gradient_accumulation_steps): a first stage holds up to PP of them
  bool lora = false;
  int64_t lora_rank = 8;          // LoRA on every linear layer of the decoder
  int64_t base_element_bytes = 2; // LoRA's frozen base (--torch_dtype); full fine-tuning keeps fp32 master weights
  int64_t activation_element_bytes = 2;
  bool gradient_checkpointing = true;
  bool distributed_optimizer = true;
};

struct LayoutOption {
  int tp = 1, cp = 1, pp = 1, dp = 1;
  int ep = 1;  // of the tp x cp x dp ranks of a stage, those splitting the experts
  MemoryEstimate per_rank;  // the busiest rank's
  bool fits = false;
};

// Every layout the GPUs and the model allow (TP a divisor of the GPUs per node that the heads, MLP width and
// vocabulary divide; PP at most the layers; CP a power of two that leaves each rank at least 2 tokens of a row), in
// order of preference: fewer ranks per model copy first, then less CP, then fewer stages (more TP), then (a
// mixture-of-experts model: EP a divisor of the experts and of TP x CP x DP) a smaller expert split.
std::vector<LayoutOption> layout_options(const LayoutPlanInputs& in);

// The first option that fits; nullopt when none does.
std::optional<LayoutOption> recommended_layout(const std::vector<LayoutOption>& options);

// What --plan_layout prints: the inputs, the options (the recommended one and the others that fit first, up to
// `shown`), and the flags to pass, or what to change when nothing fits.
std::string describe_layout_plan(const LayoutPlanInputs& in, const std::vector<LayoutOption>& options, size_t shown = 8);

// `swift sft|pt --plan_layout true`: the plan for the command's model and settings on the GPUs its --plan_* flags
// (or this machine) give, logged; loads no weights and starts no ranks. A UsageError when the GPUs' count or memory
// is not known (a machine without a GPU needs --plan_gpus and --plan_gpu_memory).
void run_layout_plan(const TrainingOptions& options);

}  // namespace swift::train
