// GKD's objective: each micro-batch (gkd_rollout.h) scored by the teacher, without gradients, before the student, and
// trained on the generalised JSD between their next-token distributions at every reply token (gkd_loss.h), a mean
// over the micro-batch's reply tokens as ms-swift's GKDTrainer; plus --sft_alpha x the cross-entropy on batches of
// the dataset's replies.
#pragma once

#include <memory>

#include "swift/rlhf/gkd_rollout.h"
#include "swift/train/objective.h"

namespace swift::rlhf {

// `teacher`: a frozen model; null for the policy with its LoRA adapters off (the teacher is the base model).
std::unique_ptr<train::TrainingObjective> gkd_objective(const GkdOptions& options, model::CausalLM teacher,
                                                        std::shared_ptr<const GkdSources> sources);

}  // namespace swift::rlhf
