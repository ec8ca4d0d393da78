// The objectives of swift rlhf: what a micro-batch's forward passes are and which loss they feed.
#include "swift/rlhf/preference_objectives.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "swift/tuners/lora.h"

namespace swift::rlhf {

namespace {

// The loss, then the method's metrics, as the trainer reads them: still on the device.
train::MicroBatchResult result_of(const rlhf::PreferenceOutput& out) {
  const at::Tensor loss = out.loss.detach().to(at::kDouble).reshape({1});
  return {out.loss, at::cat({at::stack({loss[0], at::ones_like(loss[0])}).unsqueeze(0), out.stacked()})};
}

// Under tensor parallelism the logits are this rank's slice of the vocabulary.
train::VocabSplit vocab_split(const model::CausalLM& m) { return {m->tensor_parallel(), m->vocab_start()}; }

rlhf::SequenceLogps score(model::CausalLM& m, const model::ForwardArgs& args, const at::Tensor& labels,
                           bool with_logit_means = false) {
  return rlhf::sequence_logps_from_hidden(m->forward_hidden(args), labels,
                                           [&](const at::Tensor& h) { return m->logits(h); }, with_logit_means,
                                           vocab_split(m));
}

// The reference's log-probabilities (call without gradients): the loaded reference model, or the policy with its
// adapters off.
rlhf::SequenceLogps reference_logps(model::CausalLM& reference, model::CausalLM& policy,
                                     const model::ForwardArgs& args, const at::Tensor& labels) {
  if (reference) return score(reference, args, labels);
  tuners::AdaptersDisabled base(policy);
  return score(policy, args, labels);
}

// Rows [start, start + n) of per-row log-probabilities.
rlhf::SequenceLogps rows_of(const rlhf::SequenceLogps& s, int64_t start, int64_t n) {
  rlhf::SequenceLogps out;
  out.logps = s.logps.narrow(0, start, n);
  out.tokens = s.tokens.narrow(0, start, n);
  if (s.logit_means.defined()) out.logit_means = s.logit_means.narrow(0, start, n);
  out.vocab_size = s.vocab_size;
  return out;
}

// The bytes of a loaded reference model's parameters (0 for none: the policy with its adapters off).
int64_t weight_bytes(const model::CausalLM& m) {
  int64_t bytes = 0;
  if (m)
    for (const auto& p : m->parameters()) bytes += p.numel() * static_cast<int64_t>(p.element_size());
  return bytes;
}

// Objectives on pairs: [chosen..., rejected...] in one batch, the loss a mean over each micro-batch's pairs.
class PairBatchObjective : public train::TrainingObjective {
 public:
  data::Batch collate(const std::vector<const data::Example*>& items, int64_t pad_id) const override {
    return data::collate_pairs(items, pad_id);
  }
  double units(const data::Batch&) const override { return 1.0; }
  int64_t sequences_per_example() const override { return 2; }
};

class PairObjective : public PairBatchObjective {
 public:
  PairObjective(rlhf::PreferenceConfig config, model::CausalLM reference)
      : config_(std::move(config)), reference_(std::move(reference)) {}

  int64_t extra_weight_bytes() const override { return weight_bytes(reference_); }

  std::vector<std::string> metric_names() const override {
    std::vector<std::string> names = {"loss", "rewards/chosen", "rewards/rejected", "rewards/accuracies",
                                      "rewards/margins", "logps/chosen", "logps/rejected"};
    const bool dpo = config_.method == rlhf::PreferenceMethod::kDpo;
    if (dpo && config_.loss_type == "ipo") names.insert(names.end(), {"logps_mean/chosen", "logps_mean/rejected"});
    names.insert(names.end(), {"logits/chosen", "logits/rejected"});
    if (!dpo || config_.rpo_alpha) names.push_back("nll_loss");
    if (config_.method == rlhf::PreferenceMethod::kOrpo) names.insert(names.end(), {"log_odds_ratio", "log_odds_chosen"});
    return names;
  }

  train::MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    const bool all_positions = config_.needs_position_logit_means();
    model::ForwardArgs args;
    args.input_ids = batch.input_ids.to(policy->device());
    const at::Tensor labels = batch.labels.to(policy->device());  // once for the policy and the reference
    // Right padding: causal attention alone keeps real tokens from seeing pads. CPO and ORPO log the logits at
    // every position, pads included, so there the pads attend as in transformers (masked).
    if (all_positions) {
      args.attention_mask = batch.attention_mask.to(policy->device());
      // Positions count on through the pads, as transformers numbers them without position_ids.
      args.position_ids = at::arange(batch.input_ids.size(1), args.input_ids.options()).expand_as(args.input_ids);
    }
    const at::Tensor hidden = policy->forward_hidden(args);
    // DPO logs the logits' mean over the scored positions; CPO and ORPO over every position (below).
    const auto policy_logps = rlhf::sequence_logps_from_hidden(
        hidden, labels, [&](const at::Tensor& h) { return policy->logits(h); }, !all_positions, vocab_split(policy));
    at::Tensor position_means;
    std::optional<rlhf::SequenceLogps> reference;
    {
      torch::NoGradGuard no_grad;
      if (all_positions) position_means = policy->vocab_mean_logits(hidden.detach());
      if (config_.needs_reference()) reference = reference_logps(reference_, policy, args, labels);
    }
    return result_of(rlhf::preference_loss(config_, policy_logps, reference ? &*reference : nullptr, position_means));
  }

 private:
  rlhf::PreferenceConfig config_;
  model::CausalLM reference_;
};

// Rows 0..B-1 are the labelled replies, B..2B-1 (loss_type kto) their KL rows. Only the replies' pass keeps
// gradients; the policy's KL pass and the reference (one pass over all rows) run without.
class KtoObjective : public train::TrainingObjective {
 public:
  KtoObjective(rlhf::PreferenceConfig config, model::CausalLM reference)
      : config_(std::move(config)), reference_(std::move(reference)) {}

  data::Batch collate(const std::vector<const data::Example*>& items, int64_t pad_id) const override {
    return config_.needs_kl_rows() ? data::collate_pairs(items, pad_id) : data::collate_labelled(items, pad_id);
  }
  double units(const data::Batch&) const override { return 1.0; }
  int64_t extra_weight_bytes() const override { return weight_bytes(reference_); }

  // rewards/margins is derived from the window's averages (derive_metrics), as TRL's log().
  std::vector<std::string> metric_names() const override {
    return {"loss", "kl", "rewards/chosen", "rewards/rejected", "logps/chosen", "logps/rejected", "logits/chosen",
            "logits/rejected"};
  }
  // Only when the window had replies of both kinds, as TRL.
  void derive_metrics(std::vector<std::pair<std::string, double>>& values) const override {
    std::optional<double> chosen, rejected;
    size_t after = values.size();
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i].first == "rewards/chosen") chosen = values[i].second;
      if (values[i].first == "rewards/rejected") {
        rejected = values[i].second;
        after = i + 1;
      }
    }
    if (chosen && rejected)
      values.insert(values.begin() + static_cast<std::ptrdiff_t>(after), {"rewards/margins", *chosen - *rejected});
  }

  train::MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    const bool kl_rows = config_.needs_kl_rows();
    const int64_t B = kl_rows ? batch.input_ids.size(0) / 2 : batch.input_ids.size(0);
    model::ForwardArgs all;
    all.input_ids = batch.input_ids.to(policy->device());
    const at::Tensor labels = batch.labels.to(policy->device());
    const auto rows = [&](int64_t start) {
      model::ForwardArgs args;
      args.input_ids = all.input_ids.narrow(0, start, B);
      return args;
    };
    const auto policy_logps = score(policy, rows(0), labels.narrow(0, 0, B), /*with_logit_means=*/true);
    std::optional<rlhf::SequenceLogps> policy_kl, reference_kl;
    rlhf::SequenceLogps reference;
    {
      torch::NoGradGuard no_grad;
      const auto reference_all = reference_logps(reference_, policy, all, labels);
      reference = rows_of(reference_all, 0, B);
      if (kl_rows) {
        policy_kl = score(policy, rows(B), labels.narrow(0, B, B));
        reference_kl = rows_of(reference_all, B, B);
      }
    }
    return result_of(rlhf::kto_loss(config_, policy_logps, reference, policy_kl ? &*policy_kl : nullptr,
                                     reference_kl ? &*reference_kl : nullptr, batch.desirable));
  }

 private:
  rlhf::PreferenceConfig config_;
  model::CausalLM reference_;
};

class RewardModelObjective : public PairBatchObjective {
 public:
  explicit RewardModelObjective(std::optional<double> center) : center_(center) {}
  std::vector<std::string> metric_names() const override {
    std::vector<std::string> names = {"loss", "rewards/chosen", "rewards/rejected", "rewards/accuracies",
                                      "rewards/margins"};
    if (center_) names.push_back("center_rewards_loss");
    return names;
  }
  train::MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    model::ForwardArgs args;
    args.input_ids = batch.input_ids.to(policy->device());
    const at::Tensor rewards = model::sequence_scores(policy, args, batch.attention_mask).squeeze(-1);
    return result_of(rlhf::reward_model_loss(rewards, batch.margins, center_));
  }

 private:
  std::optional<double> center_;
};

}  // namespace

std::unique_ptr<train::TrainingObjective> pair_objective(const rlhf::PreferenceConfig& config, model::CausalLM reference) {
  return std::make_unique<PairObjective>(config, std::move(reference));
}

std::unique_ptr<train::TrainingObjective> kto_objective(const rlhf::PreferenceConfig& config, model::CausalLM reference) {
  return std::make_unique<KtoObjective>(config, std::move(reference));
}

std::unique_ptr<train::TrainingObjective> reward_model_objective(std::optional<double> center_rewards_coefficient) {
  return std::make_unique<RewardModelObjective>(center_rewards_coefficient);
}

}  // namespace swift::rlhf
