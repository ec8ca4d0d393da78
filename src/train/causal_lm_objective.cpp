// The causal LM objective of sft and pt (see causal_lm_objective.h).
#include "swift/train/causal_lm_objective.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "swift/data/packing.h"
#include "swift/model/context_parallel.h"
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
    if (mixture_of_experts()) names.push_back("expert_load_max");
    if (capacity().drops()) names.push_back("expert_drop_rate");
    // One row per expert, logged as the list expert_tokens (TrainingLog gathers "name/i" rows into lists).
    for (int64_t e = 0; e < options_.num_experts; ++e) names.push_back("expert_tokens/" + std::to_string(e));
    return names;
  }
  MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    // Each sparse layer's router logits (the auxiliary loss) and chosen experts (their load).
    std::vector<at::Tensor> routers, choices;
    const bool moe = mixture_of_experts();
    if (moe) model::record_router_logits(policy, &routers, &choices);
    const at::Tensor hidden = policy->forward_hidden(forward_args(batch, policy->device()));
    if (moe) model::record_router_logits(policy, nullptr);  // not from a recomputation in the backward
    auto sums = causal_lm_loss_sums_from_hidden(hidden, batch.labels, [&](const at::Tensor& h) { return policy->logits(h); },
                                                VocabSplit{policy->tensor_parallel(), policy->vocab_start()},
                                                batch.labels_shifted);
    const auto tokens = static_cast<double>(sums.tokens);
    const at::Tensor loss = sums.loss_sum.detach().to(at::kDouble).reshape({1});
    at::Tensor metrics = at::cat({loss, at::tensor({tokens, static_cast<double>(sums.correct), tokens}, loss.options())});
    MicroBatchResult result{sums.loss_sum, metrics.view({2, 2})};
    if (!moe) return result;
    const at::Tensor mask = batch.attention_mask.defined() ? batch.attention_mask.to(policy->device()) : at::Tensor();
    if (aux_loss()) {  // under context parallelism this rank's part, counting 1/shares of the micro-batch
      const at::Tensor aux_loss =
          model::load_balancing_loss(routers, policy->config().moe.experts_per_token, mask, over_row_shares(policy));
      result.unnormalised_loss = options_.router_aux_loss_coef * aux_loss;
      const at::Tensor logged =
          at::stack({aux_loss.detach().to(at::kDouble), at::full({}, 1.0 / row_shares(policy), loss.options())}).view({1, 2});
      result.metrics = at::cat({result.metrics, logged.to(loss.device())});
    }
    RouterTerms terms = router_terms(policy, routers, choices, batch, mask);
    if (terms.loss.defined()) result.loss = result.loss + terms.loss;
    result.metrics = at::cat({result.metrics, terms.metrics.to(loss.device())});
    return result;
  }

  // A pipeline stage before the last: its sparse layers' share of Megatron's load-balancing loss and of the
  // routers' figures (the last stage's compute() reports its own layers').
  StageResult stage_output(model::CausalLM& policy, const data::Batch& batch) override {
    if (!mixture_of_experts()) return TrainingObjective::stage_output(policy, batch);
    std::vector<at::Tensor> routers, choices;
    model::record_router_logits(policy, &routers, &choices);
    StageResult stage(policy->forward_hidden(forward_args(batch, policy->device())));
    model::record_router_logits(policy, nullptr);
    const at::Tensor mask = batch.attention_mask.defined() ? batch.attention_mask.to(policy->device()) : at::Tensor();
    RouterTerms terms = router_terms(policy, routers, choices, batch, mask);
    stage.loss = terms.loss;
    // The rows before them (loss, token_acc; transformers' aux_loss, refused under pipeline parallelism) are the
    // last stage's.
    const auto last_stage_rows = static_cast<int64_t>(metric_names().size()) - terms.metrics.size(0);
    stage.metrics = at::cat({at::zeros({last_stage_rows, 2}, terms.metrics.options()), terms.metrics});
    return stage;
  }

 private:
  // What this rank's sparse layers give for one forward: Megatron's load-balancing loss (a term of the loss sum,
  // before the step's division; undefined without --moe_aux_loss_coeff or sparse layers here), and the rows of
  // load_balancing_loss, expert_load_max and expert_drop_rate that are logged, each (sum over the layers, layers),
  // and of expert_tokens/e.
  // Under context parallelism the load-balancing loss is this rank's part (its tokens' probabilities against the
  // whole rows' counts), counting 1/shares of the layers; the experts' load is the whole rows'.
  struct RouterTerms {
    at::Tensor loss, metrics;
  };
  RouterTerms router_terms(model::CausalLM& policy, const std::vector<at::Tensor>& routers,
                           const std::vector<at::Tensor>& choices, const data::Batch& batch, const at::Tensor& mask) const {
    const auto& c = policy->config().moe;
    RouterTerms out;
    std::vector<at::Tensor> rows;
    if (megatron_aux_loss()) {
      const model::SumOverRowShares over_shares = over_row_shares(policy);
      const at::Tensor layers = model::megatron_load_balancing_loss(routers, c.experts_per_token, mask, over_shares);
      const at::Tensor& real = batch.attention_mask;  // on the host: its count needs no wait for the device
      // Under context parallelism the whole rows' count (a context-parallel batch has its mask).
      const double tokens = over_shares ? over_shares(mask.sum().to(at::kFloat)).item<double>()
                            : real.defined() ? real.sum().item<double>()
                                             : static_cast<double>(batch.input_ids.numel());
      if (!routers.empty()) out.loss = options_.moe_aux_loss_coeff * tokens * layers[0];
      const at::Tensor logged = layers.detach().to(at::kDouble);
      rows.push_back(at::stack({logged[0], logged[1] / row_shares(policy)}));
    }
    rows.push_back(model::expert_load_max(choices, c.num_experts, mask, over_row_shares(policy)));
    if (capacity().drops()) rows.push_back(model::dropped_choices(routers, c.experts_per_token, c.norm_topk_prob, capacity(), mask));
    for (auto& r : rows) r = r.to(rows.front().device());
    // The tokens each expert was routed, a total (count -1) per sparse layer of the model: each context-parallel
    // rank counts its own tokens (the data-parallel sum adds them), each stage its own layers (the stages' sum).
    const at::Tensor tokens = model::expert_tokens(choices, c.num_experts, mask) / static_cast<double>(sparse_layers(policy));
    out.metrics = at::cat({at::stack(rows), at::stack({tokens, at::full_like(tokens, -1.0)}, 1).to(rows.front().device())});
    return out;
  }
  // Context parallelism: the ranks holding shares of each row, and a token count's sum over them.
  static int row_shares(const model::CausalLM& policy) {
    const model::ContextParallel* cp = policy->context_parallel();
    return cp ? cp->comm->size() : 1;
  }
  static model::SumOverRowShares over_row_shares(const model::CausalLM& policy) {
    const model::ContextParallel* cp = policy->context_parallel();
    if (!cp) return {};
    return [comm = cp->comm](const at::Tensor& t) { return model::sum_over_context_parallel(t, *comm); };
  }
  bool mixture_of_experts() const { return options_.num_experts > 0; }
  static int64_t sparse_layers(const model::CausalLM& policy) {
    const auto& sparse = policy->config().moe.sparse_layers;
    return std::max<int64_t>(std::count(sparse.begin(), sparse.end(), true), 1);
  }
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
