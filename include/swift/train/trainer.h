// The training job every training command runs (src/train/trainer.cpp reads top-down): set up the ranks, build
// the model, build the data, the optimizer, resume, then loop { step; log; evaluate; save }. What differs between
// sft/pt and rlhf's methods comes in through TrainingHooks: the objective (how a micro-batch is collated, what its
// loss and metrics are) and optional changes to the rows and the model.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swift/data/training_data.h"
#include "swift/model/checkpoint.h"
#include "swift/model/decoder.h"
#include "swift/quant/quant_config.h"
#include "swift/train/objective.h"
#include "swift/train/training_options.h"

namespace swift::distributed {
class ParallelStrategy;
}
namespace swift::templates {
class Template;
}
namespace swift::tokenizer {
class Tokenizer;
}

namespace swift::train {

// What an online method's data (GRPO's rollouts) needs from the job: the policy it generates with, its template and
// tokenizer, the ranks, and the run folder (set once it exists, before the first step).
struct RolloutContext {
  const TrainingOptions& options;
  model::CausalLM policy;
  const templates::Template& chat;
  const tokenizer::Tokenizer& tokenizer;
  distributed::ParallelStrategy& parallel;
  std::shared_ptr<std::filesystem::path> run_dir;
};
using TrainDataFactory =
    std::function<std::unique_ptr<data::TrainData>(std::unique_ptr<data::TrainData> prompts, const RolloutContext&)>;

// What an objective may need from the job once the policy is built.
struct ObjectiveContext {
  const TrainingOptions& options;
  model::CausalLM policy;
  // How the policy was loaded (device, dtype; whole, without a placement plan): a reference model loads alike.
  model::LoadOptions load;
  std::optional<quant::QuantConfig> quantization;  // the policy's base is quantized so (QLoRA)
  bool parameters_sharded = false;  // the strategy keeps each parameter's values on one rank (ZeRO-3)
  // Splits a frozen model loaded beside the policy (a reference) as the policy is split (tensor parallelism).
  std::function<void(model::CausalLM&)> split_like_policy;
};
using ObjectiveFactory = std::function<std::unique_ptr<TrainingObjective>(const ObjectiveContext&)>;

// What a command changes in the loaded policy before LoRA is applied (rm: a score head replaces lm_head), and
// what that asks of the adapter: modules trained in full and saved with it, and PEFT's task_type.
struct ModelChange {
  std::vector<std::string> modules_to_save;
  std::string task_type;  // empty: CAUSAL_LM
};
using ModelPreparation = std::function<ModelChange(model::CausalLM& policy, int64_t pad_id)>;

struct TrainingHooks {
  ObjectiveFactory make_objective;
  data::RowPreparation prepare_rows;  // optional
  ModelPreparation prepare_model;     // optional
  // Parameters prepare_model removes (rm: lm_head.weight): with parameter sharding no rank reads them from the files.
  std::vector<std::string> removed_parameters;
  // Online methods: the micro-batches the loop trains on, made from the dataset's (GRPO: its prompts). Optional.
  TrainDataFactory make_train_data;
};

// Runs the job; returns the exit code.
int run_training(const TrainingOptions& options, const TrainingHooks& hooks);

}  // namespace swift::train
