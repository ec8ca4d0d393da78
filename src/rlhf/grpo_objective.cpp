// GRPO's objective (see grpo_objective.h).
#include "swift/rlhf/grpo_objective.h"

#include <ATen/ATen.h>

#include <cmath>
#include <deque>

#include "swift/core/error.h"
#include "swift/data/batch.h"
#include "swift/train/causal_lm_objective.h"
#include "swift/tuners/lora.h"

namespace swift::rlhf {

namespace {

class GrpoObjective : public train::TrainingObjective {
 public:
  GrpoObjective(const GrpoOptions& options, model::CausalLM reference, std::shared_ptr<const RolloutFigures> figures,
                const std::vector<std::string>& reward_names)
      : o_(options), reference_(std::move(reference)), figures_(std::move(figures)),
        figure_names_(rollout_figure_names(reward_names, options.kl_in_reward)) {}

  data::Batch collate(const std::vector<const data::Example*>& items, int64_t pad_id) const override {
    return data::collate_rollouts(items, pad_id);
  }
  // A mean per micro-batch (grpo, bnpo, dr_grpo, sapo), or the token sums over the generation batch's tokens.
  double units(const data::Batch& batch) const override { return o_.loss.window_normalised() ? batch.loss_units : 1.0; }
  int64_t extra_weight_bytes() const override {
    int64_t bytes = 0;
    if (reference_)
      for (const auto& p : reference_->parameters()) bytes += static_cast<int64_t>(p.nbytes());
    return bytes;
  }

  std::vector<std::string> metric_names() const override {
    std::vector<std::string> names{"loss"};
    if (o_.loss.beta != 0) names.emplace_back("kl");
    if (o_.loss.loss_type == GrpoLossType::kCispo) names.emplace_back("cispo_clip_ratio");
    else if (o_.loss.loss_type != GrpoLossType::kSapo)
      names.insert(names.end(), {"clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean"});
    names.insert(names.end(), figure_names_.begin(), figure_names_.end());
    return names;
  }

  // The reference's log-probabilities, before the policy's pass (beta != 0).
  int frozen_passes() const override { return o_.loss.beta != 0 ? 1 : 0; }
  at::Tensor frozen_hidden(int, model::CausalLM& policy, const data::Batch& batch) override {
    const model::ForwardArgs args = train::forward_args(batch, policy->device());
    if (reference_) return reference_->forward_hidden(args);
    tuners::AdaptersDisabled base(policy);
    return policy->forward_hidden(args);
  }
  void keep_frozen(int, model::CausalLM& policy, const data::Batch& batch, const at::Tensor& hidden) override {
    model::CausalLM& scorer = reference_ ? reference_ : policy;
    std::optional<tuners::AdaptersDisabled> base;
    if (!reference_) base.emplace(policy);  // an adapted head too
    ref_logps_.push_back(token_logps_from_hidden(hidden, batch.labels, [&](const at::Tensor& h) { return scorer->logits(h); },
                                                 o_.temperature));
  }

  train::MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    const c10::Device device = policy->device();
    const at::Tensor hidden = policy->forward_hidden(train::forward_args(batch, device));
    GrpoLossInputs in;
    in.logps = token_logps_from_hidden(hidden, batch.labels, [&](const at::Tensor& h) { return policy->logits(h); }, o_.temperature);
    if (batch.old_logps.defined()) in.old_logps = batch.old_logps.to(device);
    if (o_.loss.beta != 0) {
      SWIFT_ASSERT(!ref_logps_.empty(), "the reference's pass runs before the policy's (train::run_frozen_passes)");
      in.ref_logps = ref_logps_.front();
      ref_logps_.pop_front();
    }
    in.advantages = batch.advantages.to(device);
    in.mask = completion_mask(batch.labels).to(device);
    if (o_.overlong_filter) in.mask = in.mask & batch.truncated.to(device).logical_not().unsqueeze(1);
    GrpoLossResult out = grpo_loss(in, o_.loss);
    // The logged loss: per micro-batch, or the token sum over the units (dapo, cispo) as the trainer divides it.
    const double units = this->units(batch);
    std::vector<at::Tensor> rows{at::stack({out.loss.detach().to(at::kDouble),
                                            at::scalar_tensor(units, at::kDouble).to(device)})};
    for (const auto& [name, value] : out.metrics) rows.push_back(at::stack({value.to(device), at::ones({}, value.options()).to(device)}));
    // The figures of the generation batch its rows came from, with every micro-batch trained on it (the same on
    // every rank).
    const auto found = figures_->by_round.find(batch.rollout_round);
    SWIFT_ASSERT(found != figures_->by_round.end(), "a micro-batch of a generation batch whose figures are gone");
    const std::vector<double>& values = found->second;
    for (size_t i = 0; i < figure_names_.size(); ++i) {
      const double v = i < values.size() ? values[i] : std::nan("");
      const bool measured = !std::isnan(v);
      rows.push_back(at::tensor({measured ? v : 0.0, measured ? 1.0 : 0.0}, at::TensorOptions().dtype(at::kDouble).device(device)));
    }
    return {out.loss, at::stack(rows), at::Tensor()};
  }

 private:
  GrpoOptions o_;
  model::CausalLM reference_;
  std::shared_ptr<const RolloutFigures> figures_;
  std::vector<std::string> figure_names_;
  std::deque<at::Tensor> ref_logps_;
};

}  // namespace

std::unique_ptr<train::TrainingObjective> grpo_objective(const GrpoOptions& options, model::CausalLM reference,
                                                         std::shared_ptr<const RolloutFigures> figures,
                                                         const std::vector<std::string>& reward_names) {
  return std::make_unique<GrpoObjective>(options, std::move(reference), std::move(figures), reward_names);
}

}  // namespace swift::rlhf
