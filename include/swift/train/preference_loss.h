// Preference-alignment losses on pairs scored in one forward pass (swift rlhf): DPO as ms-swift's DPOTrainer
// computes it, CPO/SimPO and ORPO as TRL's trainers do, with the metrics they log under the same names.
// The formulas and where they come from: docs/rlhf.md.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace swift::train {

// Per-row sums over the label (completion) tokens of a [R, T] batch: position t predicts labels[t + 1].
struct SequenceLogps {
  at::Tensor logps;        // [R] float32: sum of log p(label); differentiable
  at::Tensor tokens;       // [R] float32: label tokens of the row
  at::Tensor logit_means;  // [R] float32, no grad: sum over the label positions of the logits' vocabulary mean
};

// From the final hidden states [R, T, C] and unshifted labels [R, T] (-100: none), computing logits
// (`lm_head`: [N, C] -> [N, V]) only where a label is predicted.
SequenceLogps sequence_logps_from_hidden(const at::Tensor& hidden, const at::Tensor& labels,
                                         const std::function<at::Tensor(const at::Tensor&)>& lm_head);

enum class PreferenceMethod { kDpo, kCpo, kOrpo };

struct PreferenceConfig {
  PreferenceMethod method = PreferenceMethod::kDpo;
  // dpo: sigmoid, hinge, ipo, robust; cpo: sigmoid, hinge, ipo, simpo; orpo: unused.
  std::string loss_type = "sigmoid";
  double beta = 0.1;
  double label_smoothing = 0.0;      // sigmoid (cDPO) and robust
  std::optional<double> rpo_alpha;   // dpo: + rpo_alpha * NLL of the chosen replies
  double cpo_alpha = 1.0;            // cpo: + cpo_alpha * NLL of the chosen replies
  double simpo_gamma = 1.0;          // cpo simpo: the target reward margin
  bool needs_reference() const { return method == PreferenceMethod::kDpo; }
  // CPO and ORPO log the logits' mean over every position of the batch (padding included, as TRL).
  bool needs_position_logit_means() const { return method != PreferenceMethod::kDpo; }
};

// The loss of one micro-batch (a mean over its pairs, plus any NLL term) and its metrics in TRL/ms-swift's
// names, each this micro-batch's value (the trainer averages them over micro-batches and ranks).
struct PreferenceOutput {
  at::Tensor loss;
  std::vector<std::pair<std::string, double>> metrics;
};

// policy / reference: rows 0..B-1 chosen, B..2B-1 rejected (train::collate_pairs). `reference` is required for
// dpo and ignored otherwise. position_logit_means: [2B, T] vocabulary means of the logits at every position
// (CausalLM::vocab_mean_logits), required when config.needs_position_logit_means().
PreferenceOutput preference_loss(const PreferenceConfig& config, const SequenceLogps& policy,
                                 const SequenceLogps* reference, const at::Tensor& position_logit_means = {});

// Checks a config: known loss type for the method, beta > 0, label_smoothing in [0, 0.5). UsageError naming the flag.
void validate(const PreferenceConfig& config);

}  // namespace swift::train
