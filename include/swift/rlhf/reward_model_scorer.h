// --reward_model: a sequence-classification model (a score head with one output, e.g. what swift rlhf --rlhf_type rm
// trains) scoring GRPO's completions, as ms-swift 4.6's DefaultRMPlugin does: each completion is appended to its
// prompt's conversation as the assistant's reply, the whole conversation is encoded by the reward model's own
// template as for training (its end of turn included, no truncation), and the reward is the score head's first
// output at the last token. Logged under the folder's name, as ms-swift (config._name_or_path's last part).
#pragma once

#include <c10/core/ScalarType.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "swift/model/checkpoint.h"
#include "swift/rlhf/reward_functions.h"

namespace swift::rlhf {

struct RewardModelSpec {
  std::filesystem::path dir;                  // --reward_model: a *ForSequenceClassification folder, or a base model
  std::vector<std::filesystem::path> adapters;  // --reward_adapters: LoRA adapters (an rm adapter carries the head)
  std::string template_name;                  // --reward_template ("": the folders' args.json, else the family's)
};

// The name the reward model's metrics carry: its folder's name.
std::string reward_model_name(const std::filesystem::path& dir);

// Loads the reward model (frozen, in eval mode; `load`: device and dtype), its tokenizer and template. UsageError
// when the folder (with its adapters) has no score head. batch_size: completions per forward pass.
std::unique_ptr<RewardFunction> reward_model_scorer(const RewardModelSpec& spec, model::LoadOptions load, int64_t batch_size);

}  // namespace swift::rlhf
