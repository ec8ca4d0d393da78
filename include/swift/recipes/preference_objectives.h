// swift rlhf's objectives for the training job (recipes/trainer.h): pairs (dpo, cpo, simpo, orpo), labelled
// replies (kto) and reward models (rm). Formulas: train/preference_loss.h; docs/rlhf.md.
#pragma once

#include <memory>
#include <optional>

#include "swift/recipes/trainer.h"
#include "swift/train/preference_loss.h"

namespace swift::recipes {

// Chosen and rejected rows of a pair batch scored in one forward pass. `reference`: a loaded, frozen reference
// model, or null for the policy with its LoRA adapters switched off (used only when the method needs one).
std::unique_ptr<TrainingObjective> pair_objective(const train::PreferenceConfig& config, model::CausalLM reference);

// KTO on labelled replies and their KL rows; `reference` as above.
std::unique_ptr<TrainingObjective> kto_objective(const train::PreferenceConfig& config, model::CausalLM reference);

// A reward model: the score head at each sequence's last token, the Bradley-Terry loss on pairs.
std::unique_ptr<TrainingObjective> reward_model_objective(std::optional<double> center_rewards_coefficient);

}  // namespace swift::recipes
