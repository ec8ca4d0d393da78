// GRPO's objective: each micro-batch of completions (grpo_rollout.h) scored by the policy at the sampling temperature,
// by the reference (the adapter switched off for LoRA, a frozen copy for full fine-tuning; none at beta 0) in a frozen
// pass before it, and trained with grpo_loss; it logs the loss's metrics and the generation batch's figures.
#pragma once

#include <memory>

#include "swift/rlhf/grpo_rollout.h"
#include "swift/train/objective.h"

namespace swift::rlhf {

// `reference`: null for the policy with its adapters off (or none at beta 0). `figures`: the rollouts' (shared).
// With --kl_in_reward the KL is in the advantages: pass options.loss.beta 0 (no KL term, no reference pass).
std::unique_ptr<train::TrainingObjective> grpo_objective(const GrpoOptions& options, model::CausalLM reference,
                                                         std::shared_ptr<const RolloutFigures> figures,
                                                         const std::vector<std::string>& reward_names);

}  // namespace swift::rlhf
