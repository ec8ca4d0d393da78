// The training job every training command shares (src/recipes/sft.cpp): flags -> run folder -> model (+ LoRA,
// QLoRA) -> data -> optimizer and schedule -> data-parallel/ZeRO loop -> logging, evaluation, checkpoints.
// What differs between sft/pt and rlhf's methods is the objective: how a micro-batch is collated and what its
// loss and logged metrics are.
#pragma once

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/model/checkpoint.h"
#include "swift/model/decoder.h"
#include "swift/train/sft_data.h"

namespace swift::recipes {

struct MicroBatchResult {
  // Divided by the step's normaliser (the units() of all its micro-batches on all ranks) before backward.
  at::Tensor loss;
  // [n, 2] float64, detached, on any device: each of metric_names()' (sum, count) in order. A logged value is the
  // ratio of the two summed over the logging window and the ranks: the loss per token is (summed loss, tokens), a
  // per-micro-batch mean is (value, 1). The trainer reads it in one copy after queueing the backward.
  at::Tensor metrics;
};

class TrainingObjective {
 public:
  virtual ~TrainingObjective() = default;
  // Examples -> one padded micro-batch.
  virtual train::Batch collate(const std::vector<const train::Example*>& items, int64_t pad_id) const = 0;
  // What the step's loss is a mean over, counted in this micro-batch: its label tokens (sft, a token mean over
  // the whole step), or 1 (preference losses: a mean over each micro-batch's pairs, then over micro-batches).
  virtual double units(const train::Batch& batch) const = 0;
  // Everything compute() reports, in the order it is logged ("loss" first: the loss curve reads it).
  virtual std::vector<std::string> metric_names() const = 0;
  // For the memory estimate: sequences per example that keep activations for the backward (pairs: 2), and the
  // bytes of any other model the objective holds (a loaded reference model).
  virtual int64_t sequences_per_example() const { return 1; }
  virtual int64_t extra_weight_bytes() const { return 0; }
  // Values logged next to them that are computed from them (KTO's rewards/margins); appended in place.
  virtual void derive_metrics(std::vector<std::pair<std::string, double>>& values) const { (void)values; }
  // The forward pass(es) of one micro-batch and its loss; runs under the job's autocast, with or without grad.
  virtual MicroBatchResult compute(model::CausalLM& policy, const train::Batch& batch) = 0;
};

// What an objective may need from the job once the policy is loaded.
struct ObjectiveContext {
  const cli::Flags& flags;
  model::CausalLM policy;
  bool lora = false;
  std::filesystem::path model_dir;
  model::LoadOptions load;  // how the policy was loaded (device, dtype, quantization): a reference model loads alike
  int zero_stage = 0;
};
using ObjectiveFactory = std::function<std::unique_ptr<TrainingObjective>(const ObjectiveContext&)>;
// Prepares the loaded, normalised rows (training, then validation; `what` names them for errors) before they are
// encoded (KTO pairs each reply with another row's for its KL term). Not called for --streaming.
using RowPreparation =
    std::function<void(std::vector<nlohmann::json>& rows, uint64_t data_seed, const std::string& what)>;

// What a command changes in the loaded policy before LoRA is applied (rm: a score head replaces lm_head), and
// what that asks of the adapter: modules trained in full and saved with it, and PEFT's task_type.
struct ModelChange {
  std::vector<std::string> modules_to_save;
  std::string task_type;  // empty: CAUSAL_LM
};
using ModelPreparation = std::function<ModelChange(model::CausalLM& policy, const cli::Flags& flags, int64_t pad_id)>;

struct TrainingHooks {
  ObjectiveFactory make_objective;
  RowPreparation prepare_rows;      // optional
  ModelPreparation prepare_model;   // optional
  // Parameters prepare_model removes (rm: lm_head.weight): under ZeRO-3 no rank reads them from the files.
  std::vector<std::string> removed_parameters;
};

// Runs a training command: parses `args` against `specs`, trains with the hooks' objective, returns the exit
// code. pretrain: pt's plain-text defaults.
int run_training(const std::string& command, const std::vector<cli::FlagSpec>& specs,
                 const std::vector<std::string>& args, bool pretrain, const TrainingHooks& hooks);

// sft/pt's flag table (the base of rlhf's).
std::vector<cli::FlagSpec> train_flags(bool pretrain);

}  // namespace swift::recipes
