// Preference-alignment losses (swift rlhf): DPO as ms-swift's DPOTrainer computes it, CPO/SimPO, ORPO and KTO as
// TRL's trainers do (under ms-swift), with the metrics they log under the same names.
// The formulas and where they come from: docs/rlhf.md.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swift/train/loss.h"

namespace swift::rlhf {

// Per-row sums over the label (completion) tokens of a [R, T] batch: position t predicts labels[t + 1].
struct SequenceLogps {
  at::Tensor logps;        // [R] float32: sum of log p(label); differentiable
  at::Tensor tokens;       // [R] float32: label tokens of the row
  at::Tensor logit_means;  // [R] float32, no grad: sum over the label positions of the logits' vocabulary mean
                           // (undefined unless asked for)
  int64_t vocab_size = 0;
};

// From the final hidden states [R, T, C] and unshifted labels [R, T] (-100: none), computing logits
// (`lm_head`: [N, C] -> [N, V]) only where a label is predicted. with_logit_means: also logit_means (the policy's
// DPO and KTO metrics; not the reference's). labels_shifted: labels[t] is already what position t predicts
// (data::Batch::labels_shifted: rows padded for sequence parallelism).
// Under tensor parallelism `lm_head` gives this rank's vocabulary slice ([N, V/size] from `split.vocab_start`,
// model/tensor_parallel.h) and the log-probabilities and means are taken over the whole vocabulary through the group.
SequenceLogps sequence_logps_from_hidden(const at::Tensor& hidden, const at::Tensor& labels,
                                         const std::function<at::Tensor(const at::Tensor&)>& lm_head,
                                         bool with_logit_means = false, train::VocabSplit split = {},
                                         bool labels_shifted = false);

enum class PreferenceMethod { kDpo, kCpo, kOrpo, kKto };

struct PreferenceConfig {
  PreferenceMethod method = PreferenceMethod::kDpo;
  // dpo: sigmoid, hinge, ipo, robust, exo_pair, sppo_hard, nca_pair, aot, aot_unpaired, apo_zero, apo_down,
  // discopop; cpo: sigmoid, hinge, ipo, simpo; kto: kto, apo_zero_unpaired; orpo: unused.
  std::string loss_type = "sigmoid";
  double beta = 0.1;
  double label_smoothing = 0.0;      // sigmoid (cDPO) and robust
  std::optional<double> rpo_alpha;   // dpo: + rpo_alpha * NLL of the chosen replies
  double cpo_alpha = 1.0;            // cpo: + cpo_alpha * NLL of the chosen replies
  double simpo_gamma = 1.0;          // cpo simpo: the target reward margin
  double discopop_tau = 0.05;        // dpo discopop: the temperature of its log-ratio modulation
  double desirable_weight = 1.0;     // kto: weight of the desirable replies' losses
  double undesirable_weight = 1.0;   // kto: weight of the undesirable replies' losses
  bool needs_reference() const { return method == PreferenceMethod::kDpo || method == PreferenceMethod::kKto; }
  // KTO's KL term scores each prompt with another row's reply (loss_type kto; apo_zero_unpaired has none).
  bool needs_kl_rows() const { return method == PreferenceMethod::kKto && loss_type == "kto"; }
  // CPO and ORPO log the logits' mean over every position of the batch (padding included, as TRL).
  bool needs_position_logit_means() const {
    return method == PreferenceMethod::kCpo || method == PreferenceMethod::kOrpo;
  }
};

// A logged value as a sum and what it is a mean over: a micro-batch's mean with count 1 (DPO, CPO, ORPO: the
// trainer averages them over micro-batches and ranks), or KTO's sums over the chosen/rejected replies with their
// counts (averaged over all replies of the logging window, as TRL).
// Both are 0-dim float64 tensors on the batch's device, read back together (PreferenceOutput::read).
struct PreferenceMetric {
  PreferenceMetric(std::string n, at::Tensor s, at::Tensor c = {})
      : name(std::move(n)), sum(std::move(s)), count(c.defined() ? std::move(c) : at::ones_like(sum)) {}
  std::string name;
  at::Tensor sum, count;
};

struct HostMetric {
  std::string name;
  double sum = 0, count = 0;
};

// The loss of one micro-batch (a mean over its pairs or replies, plus any NLL term) and its metrics in
// TRL/ms-swift's names.
struct PreferenceOutput {
  at::Tensor loss;
  std::vector<PreferenceMetric> metrics;
  // [n, 2] float64 on the device: each metric's (sum, count), in order.
  at::Tensor stacked() const;
  // The metrics on the host (one copy).
  std::vector<HostMetric> read() const;
};

// policy / reference: rows 0..B-1 chosen, B..2B-1 rejected (data::collate_pairs). `reference` is required for
// dpo and ignored otherwise. position_logit_means: [2B, T] vocabulary means of the logits at every position
// (CausalLM::vocab_mean_logits), required when config.needs_position_logit_means().
PreferenceOutput preference_loss(const PreferenceConfig& config, const SequenceLogps& policy,
                                 const SequenceLogps* reference, const at::Tensor& position_logit_means = {});

// KTO on B labelled replies: `policy`/`reference` score the replies ([B]), `policy_kl`/`reference_kl` the KL rows
// (each prompt with another row's reply; [B], without gradients; unused for apo_zero_unpaired). desirable: [B]
// bool. The loss is the weighted mean over the B replies.
PreferenceOutput kto_loss(const PreferenceConfig& config, const SequenceLogps& policy, const SequenceLogps& reference,
                          const SequenceLogps* policy_kl, const SequenceLogps* reference_kl, const at::Tensor& desirable);

// Reward modelling (the Bradley-Terry loss, as ms-swift's RewardTrainer): rewards [2B] of the chosen then the
// rejected sequences (the score head at each one's last token); margins [B] or undefined; a center coefficient
// adds c * mean((r_c + r_r)^2), logged as center_rewards_loss.
PreferenceOutput reward_model_loss(const at::Tensor& rewards, const at::Tensor& margins,
                                   std::optional<double> center_rewards_coefficient);

// Checks a config: known loss type for the method, beta > 0, label_smoothing in [0, 0.5). UsageError naming the flag.
void validate(const PreferenceConfig& config);

}  // namespace swift::rlhf
