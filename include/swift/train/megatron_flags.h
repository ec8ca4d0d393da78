// Megatron-LM's training flags, as ms-swift's `megatron sft|pt|rlhf` takes them, that have no transformers-style
// twin in training_flags: what each changes in the options, or why it changes nothing here (said in the log once
// the ranks are up, never silently). Flags that only spell another flag (--lr, --train_iters, --save, --clip_grad,
// ...) are aliases in training_flags instead. docs/megatron.md lists them all.
#pragma once

#include <string>
#include <vector>

#include "swift/cli/flags.h"
#include "swift/cli/problems.h"

namespace swift::train {

struct TrainingOptions;

std::vector<cli::FlagSpec> megatron_flags();

// Applies them to options read from the other flags (the learning rate, the schedule, the loop): called by
// training_options before the parallel layout, which reads --gradient_checkpointing.
void apply_megatron_flags(const cli::Flags& flags, TrainingOptions& options, cli::Problems& problems);

// The router flags set in `options` (--router_aux_loss_coef, --moe_aux_loss_coeff, --moe_expert_capacity_factor):
// what a dense model ignores and what swift rlhf refuses.
std::vector<std::string> router_flags_given(const TrainingOptions& options);

}  // namespace swift::train
