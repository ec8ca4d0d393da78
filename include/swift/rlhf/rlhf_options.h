// swift rlhf's own flag table and options: the training job's (with rlhf's defaults: --loss_scale by method, dropout
// off) and the method's (--rlhf_type, --beta, --loss_type, ...), parsed and validated together, every problem at
// once, before anything is loaded.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/rlhf/grpo_advantages.h"
#include "swift/rlhf/grpo_loss.h"
#include "swift/rlhf/preference_loss.h"
#include "swift/rlhf/reward_functions.h"
#include "swift/rlhf/reward_model_scorer.h"
#include "swift/train/training_options.h"

namespace swift::rlhf {

// GRPO (--rlhf_type grpo): the rollouts, the rewards and the loss, with ms-swift 4.6's flag names and defaults.
struct GrpoOptions {
  int64_t num_generations = 8;         // completions per prompt (a group)
  int64_t max_completion_length = 512;
  double temperature = 0.9;            // sampling, and the log-probabilities' temperature
  double top_p = 1.0, min_p = 0.0, repetition_penalty = 1.0;
  int64_t top_k = 0;                   // 0 (ms-swift's -1): off
  std::vector<std::string> reward_funcs;
  std::vector<RewardModelSpec> reward_models;  // --reward_model: scored after the functions, in this order
  std::vector<double> reward_weights;  // one per function, then per reward model; default all 1
  RewardSettings rewards;
  GrpoLossConfig loss;
  AdvantageEstimator advantage_estimator = AdvantageEstimator::kGrpo;
  RewardScaling scale_rewards = RewardScaling::kGroup;
  int64_t num_iterations = 1;          // updates on each generation batch
  int64_t steps_per_generation = 0;    // micro-batches a generation batch holds per rank (0: the accumulation steps)
  bool overlong_filter = false;        // completions that reached the limit train nothing
  bool log_completions = false;        // completions.jsonl in the run folder
  // beta x each completion's KL to the reference (at generation) comes out of its reward; the loss has no KL term.
  bool kl_in_reward = false;
  bool dynamic_sample = false;         // DAPO: groups whose rewards are all equal are replaced by resampled ones
  int64_t max_resample_times = 3;      // resampled generation batches at most, per generation batch
};

// GKD (on-policy distillation, ms-swift 4.6's GKDTrainer): each generation batch trains either on the dataset's
// replies or, with probability lmbda, on the student's own completions of the same prompts; the loss is the
// generalised JSD to --teacher_model's distribution at every reply token (gkd_loss.h).
struct GkdOptions {
  double lmbda = 0.5;                  // the share of generation batches the student answers itself
  double beta = 0.5;                   // 0: forward KL, 1: reverse KL, between: the JSD mixture
  double temperature = 0.9;            // sampling, and both distributions in the loss
  double sft_alpha = 0;                // + sft_alpha x the cross-entropy on the dataset's replies
  int64_t max_completion_length = 512;
  double top_p = 1.0, min_p = 0.0, repetition_penalty = 1.0;
  int64_t top_k = 0;
  int64_t steps_per_generation = 0;    // micro-batches a generation batch holds per rank (0: the accumulation steps)
  std::filesystem::path teacher_model;
};

// The names GRPO's rewards are logged under: the functions', then the reward models'.
std::vector<std::string> reward_names(const GrpoOptions& options);

struct RlhfOptions {
  train::TrainingOptions training;
  std::string rlhf_type = "dpo";  // dpo, cpo, simpo, orpo, kto, rm, grpo or gkd
  GrpoOptions grpo;               // grpo
  GkdOptions gkd;                 // gkd
  PreferenceConfig preference;    // the preference methods' settings (not rm)
  std::optional<double> center_rewards_coefficient;  // rm
  std::filesystem::path ref_model;  // --ref_model (dpo, kto; grpo's full fine-tuning)
  bool reward_model() const { return rlhf_type == "rm"; }
  bool online() const { return rlhf_type == "grpo"; }
  bool distillation() const { return rlhf_type == "gkd"; }
};

std::vector<cli::FlagSpec> rlhf_flags();

// The options of `flags` (parsed against rlhf_flags()); a UsageError listing every problem when there are any.
RlhfOptions rlhf_options(const cli::Flags& flags);

}  // namespace swift::rlhf
