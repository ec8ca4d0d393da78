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
  // --moe_aux_loss_coeff (Megatron's): coef x model::megatron_load_balancing_loss (layer by layer) x the micro-batch's
  // tokens is added to its loss sum, so that after the step's division by its label tokens each micro-batch weighs
  // by its tokens, as Megatron-Core with per-token loss (ms-swift's default) scales it; the logged loss stays the
  // LM loss, and the load-balancing loss per layer is logged as load_balancing_loss (as Megatron's log names it).
  double moe_aux_loss_coeff = 0.0;
  // --moe_expert_capacity_factor (0: dropless): the share of (token, choice) rows the experts dropped is logged as
  // expert_drop_rate. The model's layers drop them (model::set_expert_capacity); this only counts.
  double expert_capacity_factor = 0.0;
  bool drop_by_position = false;
  // A mixture-of-experts model's experts (0: a dense model). Each micro-batch's expert load (model::expert_load_max)
  // is logged as expert_load_max, its mean over the micro-batches and sparse layers, and the (token, choice) rows each
  // expert was routed (model::expert_tokens) as the list expert_tokens: per optimizer step over all ranks, the mean
  // of the sparse layers.
  int64_t num_experts = 0;
};
std::unique_ptr<TrainingObjective> causal_lm_objective(const CausalLmObjectiveOptions& options = {});

// The model inputs of a training batch. Rows are right-padded, so causal attention alone already keeps every real
// token from seeing a pad (pads come after it); the padding mask is left out, which lets attention run its fused
// causal kernel instead of a masked one. Pad positions compute garbage that no label reads. Packed rows keep their
// segment ids and restarting positions.
model::ForwardArgs forward_args(const data::Batch& batch, c10::Device device);

}  // namespace swift::train
