// sft and pt's objective: the causal LM loss, a token mean over every label token of the step, logged with
// token_acc.
#pragma once

#include <memory>

#include "swift/train/objective.h"

namespace swift::train {

struct CausalLmObjectiveOptions {
  bool padding_free = false;  // --padding_free: each micro-batch's samples collated into one row (data::pack_row)
  // --router_aux_loss_coef (mixture-of-experts models; ms-swift's default 0: none): coef x the load-balancing loss
  // (model::load_balancing_loss) of each micro-batch is added to its loss unnormalised, as transformers adds it
  // (so the logged loss includes it), and the loss itself is logged as aux_loss (its mean per micro-batch).
  double router_aux_loss_coef = 0.0;
  // A mixture-of-experts model: each micro-batch's expert load (model::expert_load_max) is logged as
  // expert_load_max, its mean over the micro-batches and sparse layers (with --pp_size: the last stage's layers).
  bool mixture_of_experts = false;
};
std::unique_ptr<TrainingObjective> causal_lm_objective(const CausalLmObjectiveOptions& options = {});

// The model inputs of a training batch. Rows are right-padded, so causal attention alone already keeps every real
// token from seeing a pad (pads come after it); the padding mask is left out, which lets attention run its fused
// causal kernel instead of a masked one. Pad positions compute garbage that no label reads. Packed rows keep their
// segment ids and restarting positions.
model::ForwardArgs forward_args(const data::Batch& batch, c10::Device device);

}  // namespace swift::train
