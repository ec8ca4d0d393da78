// A run's checkpoints as ms-swift lays them out: checkpoint-<step>/ with the model (or the LoRA adapter), args.json
// and, unless --save_only_model, the optimizer state (one file, or one per rank when the strategy shards it), the
// RNG state and trainer_state.json. Written atomically (a crash mid-save never leaves a checkpoint that looks
// complete), never with NaN/inf weights, the newest --save_total_limit kept; and resuming from one exactly, each
// file it reads checked.
#pragma once

#include <c10/core/ScalarType.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "swift/data/train_data.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/train/adamw.h"
#include "swift/train/grad_scaler.h"
#include "swift/train/training_options.h"
#include "swift/tuners/lora.h"

namespace swift::train {

// What a checkpoint is made of.
struct CheckpointSource {
  model::CausalLM model;
  const tuners::LoraConfig* adapter = nullptr;  // LoRA: the adapter is saved; null: the whole model
  std::optional<c10::ScalarType> save_dtype;    // full checkpoints: --torch_dtype
  std::filesystem::path model_dir;              // the files a model folder carries besides weights come from here
  std::optional<quant::QuantConfig> base_quantization;  // QLoRA: how the base loads for --merge_lora's copy
  std::optional<c10::ScalarType> merged_dtype;           // --merge_lora's copy: --torch_dtype (default the base's)
  const nlohmann::json& args;                   // args.json
  const Optimizer& optimizer;
  const data::TrainData& data;
  const GradScaler* scaler = nullptr;
  int64_t global_micro_batch = 0;  // samples per micro-step (per-device batch x ranks), checked on resume
};

class Checkpoints {
 public:
  Checkpoints(std::filesystem::path run_dir, const LoopOptions& loop, distributed::ParallelStrategy& parallel);
  // Writes checkpoint-<step>: a collective, every rank calls it. Rank 0 writes the model and the state into a
  // temporary folder, every rank its optimizer shard when sharded, and once all have written rank 0 renames it.
  // The run's last checkpoint (`last_of_run`) is always a whole folder; the others, with --save_safetensors false
  // under model parallelism, each rank's part of the weights.
  void save(int64_t step, const CheckpointSource& source, bool last_of_run = false);
  // The newest checkpoint written, if any.
  std::optional<std::filesystem::path> last() const;

 private:
  void write_rank0_files(int64_t step, const CheckpointSource& source, const std::filesystem::path& out,
                         bool model_in_parts) const;
  // DataError when any weight is NaN or inf (on any rank): such a checkpoint is never written.
  void require_finite_weights(int64_t step, const model::CausalLM& model) const;
  std::filesystem::path run_dir_;
  const LoopOptions& loop_;
  distributed::ParallelStrategy& parallel_;
  std::deque<std::filesystem::path> saved_;
};

// --resume_from_checkpoint (unless --resume_only_model, or none given): the optimizer state (only this rank's
// parameters when sharded: the others are `parallel`'s trainable_elsewhere(); in this rank's tensor-parallel
// layout, whichever layout wrote it), the loss scale, the RNG and, unless
// --ignore_data_skip, the data position. Returns the step to start at (0 without resuming). DataError for a
// checkpoint without trainer state; UsageError when it is at or past `total_steps`.
int64_t resume_training(const LoopOptions& loop, int64_t total_steps, int64_t global_micro_batch, Optimizer& optimizer,
                        data::TrainData& data, GradScaler* scaler, const distributed::ParallelStrategy& parallel);

}  // namespace swift::train
