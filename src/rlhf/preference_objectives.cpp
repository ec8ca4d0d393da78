// The objectives of swift rlhf: what a micro-batch's forward passes are and which loss they feed.
#include "swift/rlhf/preference_objectives.h"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <deque>

#include "swift/core/error.h"
#include "swift/model/context_parallel.h"
#include "swift/model/param_sharding.h"
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

// `labels` are the batch's (or rows of them): shifted where the strategy padded or split the rows (sequence or
// context parallelism). Under context parallelism the sums are over every rank's share of each row.
rlhf::SequenceLogps score_hidden(model::CausalLM& m, const at::Tensor& hidden, const at::Tensor& labels,
                                 const data::Batch& batch, bool with_logit_means = false) {
  rlhf::SequenceLogps out = rlhf::sequence_logps_from_hidden(
      hidden, labels, [&](const at::Tensor& h) { return m->logits(h); }, with_logit_means, vocab_split(m),
      batch.labels_shifted);
  if (const model::ContextParallel* cp = m->context_parallel()) {
    out.logps = model::sum_over_context_parallel(out.logps, *cp->comm);
    torch::NoGradGuard no_grad;
    out.tokens = model::sum_over_context_parallel(out.tokens, *cp->comm);
    if (out.logit_means.defined()) out.logit_means = model::sum_over_context_parallel(out.logit_means, *cp->comm);
  }
  return out;
}

// The model inputs of rows [start, start + n) of a batch: their tokens, and their positions where the strategy
// gave them (context parallelism: each token's place in its whole row).
model::ForwardArgs rows_of_batch(const model::CausalLM& policy, const data::Batch& batch, int64_t start, int64_t n) {
  model::ForwardArgs args;
  args.input_ids = batch.input_ids.narrow(0, start, n).to(policy->device());
  if (batch.position_ids.defined()) args.position_ids = batch.position_ids.narrow(0, start, n).to(policy->device());
  return args;
}

// The frozen reference of DPO and KTO: the loaded reference model, or the policy with its adapters off. Its passes
// run without gradients before the policy's (train::run_frozen_passes), so that under pipeline parallelism they go
// through every stage; the last stage keeps each micro-batch's log-probabilities until compute() reads them.
class Reference {
 public:
  explicit Reference(model::CausalLM loaded) : loaded_(std::move(loaded)) {}
  int64_t weight_bytes() const {
    int64_t bytes = 0;  // 0 for none; under pipeline parallelism this stage's share
    if (loaded_)
      for (const auto& p : loaded_->parameters()) bytes += static_cast<int64_t>(model::holds_values(p) ? p.nbytes() : 0);
    return bytes;
  }
  at::Tensor hidden(model::CausalLM& policy, const model::ForwardArgs& args) {
    if (loaded_) return loaded_->forward_hidden(args);
    tuners::AdaptersDisabled base(policy);
    return policy->forward_hidden(args);
  }
  void keep(model::CausalLM& policy, const at::Tensor& hidden, const data::Batch& batch) {
    const at::Tensor labels = batch.labels.to(policy->device());
    if (loaded_) {
      kept_.push_back(score_hidden(loaded_, hidden, labels, batch));
      return;
    }
    tuners::AdaptersDisabled base(policy);  // an adapted head too
    kept_.push_back(score_hidden(policy, hidden, labels, batch));
  }
  // The oldest kept micro-batch's (micro-batches are computed in the order their frozen passes ran).
  rlhf::SequenceLogps next() {
    SWIFT_ASSERT(!kept_.empty(), "the reference's pass runs before the policy's (train::run_frozen_passes)");
    rlhf::SequenceLogps out = std::move(kept_.front());
    kept_.pop_front();
    return out;
  }

 private:
  model::CausalLM loaded_;
  std::deque<rlhf::SequenceLogps> kept_;
};

// Rows [start, start + n) of per-row log-probabilities.
rlhf::SequenceLogps rows_of(const rlhf::SequenceLogps& s, int64_t start, int64_t n) {
  rlhf::SequenceLogps out;
  out.logps = s.logps.narrow(0, start, n);
  out.tokens = s.tokens.narrow(0, start, n);
  if (s.logit_means.defined()) out.logit_means = s.logit_means.narrow(0, start, n);
  out.vocab_size = s.vocab_size;
  return out;
}

// A loss that is a mean over each micro-batch's rows: under context parallelism the row_shares ranks holding a row's
// shares each count 1/row_shares of the micro-batch.
class RowMeanObjective : public train::TrainingObjective {
 public:
  explicit RowMeanObjective(int row_shares) : row_shares_(row_shares) {}
  double units(const data::Batch&) const override { return 1.0 / row_shares_; }

 private:
  int row_shares_;
};

// Objectives on pairs: [chosen..., rejected...] in one batch, the loss a mean over each micro-batch's pairs.
class PairBatchObjective : public RowMeanObjective {
 public:
  explicit PairBatchObjective(int row_shares) : RowMeanObjective(row_shares) {}
  data::Batch collate(const std::vector<const data::Example*>& items, int64_t pad_id) const override {
    return data::collate_pairs(items, pad_id);
  }
  int64_t sequences_per_example() const override { return 2; }
};

class PairObjective : public PairBatchObjective {
 public:
  PairObjective(rlhf::PreferenceConfig config, model::CausalLM reference, int row_shares)
      : PairBatchObjective(row_shares), config_(std::move(config)), reference_(std::move(reference)) {}

  int64_t extra_weight_bytes() const override { return reference_.weight_bytes(); }

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

  // DPO's reference pass (CPO, SimPO and ORPO have none).
  int frozen_passes() const override { return config_.needs_reference() ? 1 : 0; }
  at::Tensor frozen_hidden(int, model::CausalLM& policy, const data::Batch& batch) override {
    return reference_.hidden(policy, inputs(policy, batch));
  }
  void keep_frozen(int, model::CausalLM& policy, const data::Batch& batch, const at::Tensor& hidden) override {
    reference_.keep(policy, hidden, batch);
  }
  train::StageResult stage_output(model::CausalLM& policy, const data::Batch& batch) override {
    return policy->forward_hidden(inputs(policy, batch));
  }

  train::MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    const bool all_positions = config_.needs_position_logit_means();
    const at::Tensor labels = batch.labels.to(policy->device());
    const at::Tensor hidden = policy->forward_hidden(inputs(policy, batch));
    // DPO logs the logits' mean over the scored positions; CPO and ORPO over every position (below).
    const auto policy_logps = score_hidden(policy, hidden, labels, batch, !all_positions);
    at::Tensor position_means;
    if (all_positions) {  // over the collated columns: the longest row's, not any the strategy padded on
      torch::NoGradGuard no_grad;
      const int64_t columns = batch.attention_mask.sum(1).max().item<int64_t>();
      position_means = policy->vocab_mean_logits(hidden.detach().narrow(1, 0, columns));
    }
    std::optional<rlhf::SequenceLogps> reference;
    if (config_.needs_reference()) reference = reference_.next();
    return result_of(rlhf::preference_loss(config_, policy_logps, reference ? &*reference : nullptr, position_means));
  }

 private:
  // The model inputs of a pair batch, the same for the policy and the reference. Right padding: causal attention
  // alone keeps real tokens from seeing pads. CPO and ORPO log the logits at every position, pads included, so there
  // the pads attend as in transformers (masked), their positions counting on through the pads as transformers
  // numbers them without position_ids.
  model::ForwardArgs inputs(const model::CausalLM& policy, const data::Batch& batch) const {
    model::ForwardArgs args = rows_of_batch(policy, batch, 0, batch.input_ids.size(0));
    if (config_.needs_position_logit_means()) {
      args.attention_mask = batch.attention_mask.to(policy->device());
      args.position_ids = at::arange(batch.input_ids.size(1), args.input_ids.options()).expand_as(args.input_ids);
    }
    return args;
  }

  rlhf::PreferenceConfig config_;
  Reference reference_;
};

// Rows 0..B-1 are the labelled replies, B..2B-1 (loss_type kto) their KL rows. Only the replies' pass keeps
// gradients; the reference (one pass over all rows) and the policy's pass over the KL rows are frozen passes.
class KtoObjective : public RowMeanObjective {
 public:
  KtoObjective(rlhf::PreferenceConfig config, model::CausalLM reference, int row_shares)
      : RowMeanObjective(row_shares), config_(std::move(config)), reference_(std::move(reference)) {}

  data::Batch collate(const std::vector<const data::Example*>& items, int64_t pad_id) const override {
    return config_.needs_kl_rows() ? data::collate_pairs(items, pad_id) : data::collate_labelled(items, pad_id);
  }
  int64_t extra_weight_bytes() const override { return reference_.weight_bytes(); }

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

  static constexpr int kReferencePass = 0;  // then (loss_type kto) the policy's pass over the KL rows
  int frozen_passes() const override { return config_.needs_kl_rows() ? 2 : 1; }
  at::Tensor frozen_hidden(int pass, model::CausalLM& policy, const data::Batch& batch) override {
    if (pass == kReferencePass) return reference_.hidden(policy, rows_of_batch(policy, batch, 0, batch.input_ids.size(0)));
    return policy->forward_hidden(rows_of_batch(policy, batch, replies(batch), replies(batch)));
  }
  void keep_frozen(int pass, model::CausalLM& policy, const data::Batch& batch, const at::Tensor& hidden) override {
    const at::Tensor labels = batch.labels.to(policy->device());
    if (pass == kReferencePass) reference_.keep(policy, hidden, batch);
    else policy_kl_.push_back(score_hidden(policy, hidden, labels.narrow(0, replies(batch), replies(batch)), batch));
  }
  train::StageResult stage_output(model::CausalLM& policy, const data::Batch& batch) override {
    return policy->forward_hidden(rows_of_batch(policy, batch, 0, replies(batch)));
  }

  train::MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    const int64_t B = replies(batch);
    const at::Tensor labels = batch.labels.to(policy->device()).narrow(0, 0, B);
    const at::Tensor hidden = policy->forward_hidden(rows_of_batch(policy, batch, 0, B));
    const auto policy_logps = score_hidden(policy, hidden, labels, batch, /*with_logit_means=*/true);
    const rlhf::SequenceLogps reference_all = reference_.next();
    const rlhf::SequenceLogps reference = rows_of(reference_all, 0, B);
    std::optional<rlhf::SequenceLogps> policy_kl, reference_kl;
    if (config_.needs_kl_rows()) {
      SWIFT_ASSERT(!policy_kl_.empty(), "the policy's pass over the KL rows runs before compute()");
      policy_kl = std::move(policy_kl_.front());
      policy_kl_.pop_front();
      reference_kl = rows_of(reference_all, B, B);
    }
    return result_of(rlhf::kto_loss(config_, policy_logps, reference, policy_kl ? &*policy_kl : nullptr,
                                     reference_kl ? &*reference_kl : nullptr, batch.desirable));
  }

 private:
  int64_t replies(const data::Batch& batch) const {
    return config_.needs_kl_rows() ? batch.input_ids.size(0) / 2 : batch.input_ids.size(0);
  }
  rlhf::PreferenceConfig config_;
  Reference reference_;
  std::deque<rlhf::SequenceLogps> policy_kl_;
};

class RewardModelObjective : public PairBatchObjective {
 public:
  RewardModelObjective(std::optional<double> center, int row_shares) : PairBatchObjective(row_shares), center_(center) {}
  std::vector<std::string> metric_names() const override {
    std::vector<std::string> names = {"loss", "rewards/chosen", "rewards/rejected", "rewards/accuracies",
                                      "rewards/margins"};
    if (center_) names.push_back("center_rewards_loss");
    return names;
  }
  train::MicroBatchResult compute(model::CausalLM& policy, const data::Batch& batch) override {
    const model::ForwardArgs args = rows_of_batch(policy, batch, 0, batch.input_ids.size(0));
    const at::Tensor rewards = model::sequence_scores(policy, args, batch.attention_mask).squeeze(-1);
    return result_of(rlhf::reward_model_loss(rewards, batch.margins, center_));
  }

 private:
  std::optional<double> center_;
};

}  // namespace

std::unique_ptr<train::TrainingObjective> pair_objective(const rlhf::PreferenceConfig& config, model::CausalLM reference,
                                                         int row_shares) {
  return std::make_unique<PairObjective>(config, std::move(reference), row_shares);
}

std::unique_ptr<train::TrainingObjective> kto_objective(const rlhf::PreferenceConfig& config, model::CausalLM reference,
                                                        int row_shares) {
  return std::make_unique<KtoObjective>(config, std::move(reference), row_shares);
}

std::unique_ptr<train::TrainingObjective> reward_model_objective(std::optional<double> center_rewards_coefficient,
                                                                int row_shares) {
  return std::make_unique<RewardModelObjective>(center_rewards_coefficient, row_shares);
}

}  // namespace swift::rlhf
