// The causal LM objective of sft and pt (see causal_lm_objective.h).
#include "swift/train/causal_lm_objective.h"

#include <ATen/ATen.h>

#include "swift/data/packing.h"
#include "swift/model/moe.h"
#include "swift/train/loss.h"

namespace swift::train {

model::ForwardArgs forward_args(const data::Batch& batch, c10::Device device) {
  model::ForwardArgs args;
  args.input_ids = batch.input_ids.to(device);
  if (batch.position_ids.defined()) args.position_ids = batch.position_ids.to(device);
  if (batch.segment_ids.defined()) args.segment_ids = batch.segment_ids.to(device);
  return args;
}

namespace {

class CausalLmObjective : public TrainingObjective {
 public:
  explicit CausalLmObjective(const CausalLmObjectiveOptions& options) : options_(options) {}
  data::Batch collate(const std::vector<const data::Example*>& items, int64_t pad_id) const override {
    if (!options_.padding_free || items.size() < 2) return data::collate(items, pad_id);
    const data::Example row = data::pack_row(items);
    return data::collate({&row}, pad_id);
  }
  double units(const data::Batch& batch) const override { return static_cast<double>(batch.label_tokens); }
  std::vector<std::string> metric_names() const override {
    std::vector<std::string> names{"loss", "token_acc"};
    if (aux_loss()) names.push_back("aux_loss");
    if (megatron_aux_loss()) names.push_back("load_balancing_loss");
    if (options_.mixture_of_experts) names.push_back("expert_load_max");
    if (capacity().drops()) names.push_back("expert_drop_rate");
    return names;
  }
  MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    std::vector<at::Tensor> routers;  // each sparse layer's router logits: the auxiliary loss, the experts' load
    const bool moe = options_.mixture_of_experts;  // set for models with sparse layers only
    const bool aux = aux_loss() && moe;
    if (moe) model::record_router_logits(policy, &routers);
    const at::Tensor hidden = policy->forward_hidden(forward_args(batch, policy->device()));
    if (moe) model::record_router_logits(policy, nullptr);  // not from a recomputation in the backward
    auto sums = causal_lm_loss_sums_from_hidden(hidden, batch.labels, [&](const at::Tensor& h) { return policy->logits(h); },
                                                VocabSplit{policy->tensor_parallel(), policy->vocab_start()},
                                                batch.labels_shifted);
    const auto tokens = static_cast<double>(sums.tokens);
    const at::Tensor loss = sums.loss_sum.detach().to(at::kDouble).reshape({1});
    at::Tensor metrics = at::cat({loss, at::tensor({tokens, static_cast<double>(sums.correct), tokens}, loss.options())});
    MicroBatchResult result{sums.loss_sum, metrics.view({2, 2})};
    const at::Tensor mask = batch.attention_mask.defined() ? batch.attention_mask.to(policy->device()) : at::Tensor();
    if (aux) {
      const at::Tensor aux_loss = model::load_balancing_loss(routers, policy->config().moe.experts_per_token, mask);
      result.unnormalised_loss = options_.router_aux_loss_coef * aux_loss;
      const at::Tensor logged = at::stack({aux_loss.detach().to(at::kDouble), at::ones({}, loss.options())}).view({1, 2});
      result.metrics = at::cat({result.metrics, logged.to(loss.device())});
    }
    if (moe && megatron_aux_loss()) {
      const at::Tensor layers = model::megatron_load_balancing_loss(routers, policy->config().moe.experts_per_token, mask);
      const at::Tensor& real = batch.attention_mask;  // on the host: its count needs no wait for the device
      const double tokens_here = real.defined() ? real.sum().item<double>() : static_cast<double>(batch.input_ids.numel());
      result.loss = result.loss + options_.moe_aux_loss_coeff * tokens_here * layers[0];
      const at::Tensor per_layer = (layers[0] / layers[1]).detach().to(at::kDouble);
      result.metrics = at::cat({result.metrics, at::stack({per_layer, at::ones_like(per_layer)}).view({1, 2}).to(loss.device())});
    }
    if (moe) {
      const at::Tensor load = model::expert_load_max(routers, policy->config().moe.experts_per_token, mask);
      result.metrics = at::cat({result.metrics, load.to(loss.device()).view({1, 2})});
    }
    if (moe && capacity().drops()) {
      const auto& c = policy->config().moe;
      const at::Tensor dropped = model::dropped_choices(routers, c.experts_per_token, c.norm_topk_prob, capacity(), mask);
      result.metrics = at::cat({result.metrics, dropped.to(loss.device()).view({1, 2})});
    }
    return result;
  }

 private:
  bool aux_loss() const { return options_.router_aux_loss_coef > 0; }
  bool megatron_aux_loss() const { return options_.moe_aux_loss_coeff > 0; }
  model::ExpertCapacity capacity() const { return {options_.expert_capacity_factor, options_.drop_by_position}; }
  CausalLmObjectiveOptions options_;
};

}  // namespace

std::unique_ptr<TrainingObjective> causal_lm_objective(const CausalLmObjectiveOptions& options) {
  return std::make_unique<CausalLmObjective>(options);
}

}  // namespace swift::train
