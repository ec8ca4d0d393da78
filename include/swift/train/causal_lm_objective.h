// sft and pt's objective: the causal LM loss, a token mean over every label token of the step, logged with
// token_acc.
#pragma once

#include <memory>

#include "swift/train/objective.h"

namespace swift::train {

// `padding_free` (--padding_free): each micro-batch's samples collated into one row (data::pack_row).
std::unique_ptr<TrainingObjective> causal_lm_objective(bool padding_free = false);

// The model inputs of a training batch. Rows are right-padded, so causal attention alone already keeps every real
// token from seeing a pad (pads come after it); the padding mask is left out, which lets attention run its fused
// causal kernel instead of a masked one. Pad positions compute garbage that no label reads. Packed rows keep their
// segment ids and restarting positions.
model::ForwardArgs forward_args(const data::Batch& batch, c10::Device device);

}  // namespace swift::train
