// What swift rlhf gives the training job (train/trainer.h): the objective of the method (the pair, KTO or reward
// model objective, with its reference model), KTO's KL rows, the reward model's score head, and dropout off, as
// ms-swift trains them (docs/rlhf.md).
#pragma once

#include "swift/rlhf/rlhf_options.h"
#include "swift/train/trainer.h"

namespace swift::rlhf {

// The hooks for `options` (which must outlive the training job).
train::TrainingHooks rlhf_hooks(const RlhfOptions& options);

}  // namespace swift::rlhf
