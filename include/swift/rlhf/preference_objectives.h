// swift rlhf's objectives for the training job (train/trainer.h): pairs (dpo, cpo, simpo, orpo), labelled
// replies (kto) and reward models (rm). Formulas: rlhf/preference_loss.h; docs/rlhf.md.
#pragma once

#include <memory>
#include <optional>

#include "swift/train/objective.h"
#include "swift/rlhf/preference_loss.h"

namespace swift::rlhf {

// Chosen and rejected rows of a pair batch scored in one forward pass. `reference`: a loaded, frozen reference
// model, or null for the policy with its LoRA adapters switched off (used only when the method needs one).
// `row_shares`: the ranks holding a share of each row (context parallelism): the per-row sums are taken over them,
// and each counts 1/row_shares of the micro-batch its loss is a mean over.
std::unique_ptr<train::TrainingObjective> pair_objective(const rlhf::PreferenceConfig& config, model::CausalLM reference,
                                                         int row_shares = 1);

// KTO on labelled replies and their KL rows; `reference` and `row_shares` as above.
std::unique_ptr<train::TrainingObjective> kto_objective(const rlhf::PreferenceConfig& config, model::CausalLM reference,
                                                        int row_shares = 1);

// A reward model: the score head at each sequence's last token, the Bradley-Terry loss on pairs. row_shares: the
// ranks sharing each row (context parallelism), each counting 1/row_shares of a micro-batch.
std::unique_ptr<train::TrainingObjective> reward_model_objective(std::optional<double> center_rewards_coefficient,
                                                                int row_shares = 1);

}  // namespace swift::rlhf
