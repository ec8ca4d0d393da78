// GRPO's rollouts: the training loop's micro-batches are completions the policy generates for the dataset's
// prompts, scored by the reward functions and reward models, each with its group's advantage. Every generation batch
// (ms-swift 4.6's layout): per_device_train_batch_size x steps_per_generation x ranks completions, num_generations
// per prompt, consecutive; each rank generates its contiguous share with the policy's current weights (the same
// process, the same model, with the KV cache) and scores it. One sum over the ranks gives every rank the whole
// batch's rewards and lengths (and its completions, when dynamic sampling regroups them or rank 0 logs them), so
// every rank computes the same advantages: with --dynamic_sample after its equal-reward groups are replaced, with
// --kl_in_reward after beta x each completion's KL to the reference is taken out of its reward. The batch is then
// trained on steps_per_generation micro-batches at a time, num_iterations times.
#pragma once

#include <nlohmann/json.hpp>

#include <c10/core/ScalarType.h>

#include <filesystem>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "swift/data/train_data.h"
#include "swift/model/checkpoint.h"
#include "swift/model/decoder.h"
#include "swift/rlhf/rlhf_options.h"

namespace swift::distributed {
class ParallelStrategy;
}
namespace swift::templates {
class Template;
}
namespace swift::tokenizer {
class Tokenizer;
}

namespace swift::rlhf {

// The latest generation batch's figures (ms-swift's names, in metric_names() order), which the GRPO objective
// logs with every micro-batch trained on it.
struct RolloutFigures {
  std::vector<std::string> names;
  // Per generation batch (data::Example::rollout_round), the latest few: NaN where not measured in that batch (a
  // reward no row could be given).
  std::map<int64_t, std::vector<double>> by_round;
};
// The names of RolloutFigures for these reward functions (and the KL, taken in the rewards).
std::vector<std::string> rollout_figure_names(const std::vector<std::string>& reward_names, bool kl_in_reward);

struct RolloutSetup {
  GrpoOptions options;
  model::CausalLM policy{nullptr};
  const templates::Template* chat = nullptr;
  const tokenizer::Tokenizer* tokenizer = nullptr;
  distributed::ParallelStrategy* parallel = nullptr;
  std::vector<int64_t> stop_token_ids;  // a completion ends at one of them (kept as its last token, as ms-swift)
  int64_t per_device_batch = 1;         // completions per rank in one micro-batch
  int64_t accumulation = 1;             // micro-batches per optimizer step
  uint64_t seed = 42;
  std::optional<c10::ScalarType> autocast;  // the training pass's: generation and the kept log-probabilities too
  int64_t save_steps = 0;                   // to warn when checkpoints would fall inside a generation batch
  std::shared_ptr<RolloutFigures> figures;  // filled each generation batch
  // --kl_in_reward: the reference scoring the completions at generation, set when the objective is made (holding
  // null: the policy with its LoRA adapters off).
  std::shared_ptr<model::CausalLM> reference;
  model::LoadOptions reward_model_load;  // how --reward_model loads (device, dtype)
  // Where completions.jsonl goes (--log_completions): the run folder, known once the run has one.
  std::shared_ptr<std::filesystem::path> run_dir;
};

// The loop's data for GRPO: wraps the prompts' data (encoded prompts, data::Example::columns kept).
std::unique_ptr<data::TrainData> rollout_data(std::unique_ptr<data::TrainData> prompts, RolloutSetup setup);

}  // namespace swift::rlhf
