// GRPO's policy loss on one micro-batch of completions, as ms-swift 4.6's GRPOTrainer computes it
// (_compute_loss_and_metrics): importance weights per token or per sequence (GSPO), the clipped surrogate with
// clip-higher (epsilon_low / epsilon_high) and the optional two-sided bound `delta`, CISPO and SAPO's surrogates,
// the k3 KL to the reference with ms-swift's clamps, and the loss types' reductions. docs/grpo.md has the formulas.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "swift/train/loss.h"

namespace swift::rlhf {

enum class GrpoLossType { kGrpo, kBnpo, kDrGrpo, kDapo, kCispo, kSapo };
enum class ImportanceSampling { kToken, kSequence, kSequenceToken };

// --loss_type / --importance_sampling_level names; UsageError naming the flag and the choices otherwise.
GrpoLossType parse_grpo_loss_type(const std::string& name);
ImportanceSampling parse_importance_sampling(const std::string& name);

struct GrpoLossConfig {
  GrpoLossType loss_type = GrpoLossType::kGrpo;  // ms-swift's default (TRL's would be dapo)
  ImportanceSampling importance_sampling = ImportanceSampling::kToken;
  double beta = 0.04;          // the KL term's weight; 0: no reference
  double epsilon_low = 0.2;    // --epsilon
  double epsilon_high = 0.2;   // --epsilon_high (default --epsilon)
  std::optional<double> delta; // --delta: the ratio's upper bound in the unclipped term (two-sided clipping)
  double tau_pos = 1.0, tau_neg = 1.05;  // sapo's gate temperatures
  int64_t max_completion_length = 512;   // dr_grpo's constant normaliser
  // dapo and cispo normalise by the tokens of the whole generation batch (every rank), as the trainer's units.
  bool window_normalised() const { return loss_type == GrpoLossType::kDapo || loss_type == GrpoLossType::kCispo; }
};

// Per-token log-probabilities of the labels at temperature `temperature` (the logits divided by it before the
// log-softmax, as ms-swift scores the policy, its old copy and the reference): from the final hidden states
// [B, T, C] and unshifted labels [B, T] (-100: no completion token), [B, T - 1] float32 (0 where no label; position t
// scores labels[t + 1]). `lm_head` maps [N, C] -> [N, V] (this rank's vocabulary slice under tensor parallelism:
// `split`). labels_shifted: labels[t] is already what position t predicts ([B, T]).
at::Tensor token_logps_from_hidden(const at::Tensor& hidden, const at::Tensor& labels,
                                   const std::function<at::Tensor(const at::Tensor&)>& lm_head, double temperature,
                                   train::VocabSplit split = {}, bool labels_shifted = false);
// The completion mask of the same layout: labels[t + 1] != -100 ([B, T - 1] bool; labels_shifted: [B, T]).
at::Tensor completion_mask(const at::Tensor& labels, bool labels_shifted = false);

struct GrpoLossInputs {
  at::Tensor logps;       // [B, L] the policy's, differentiable
  at::Tensor old_logps;   // [B, L] detached: the policy's when the completions were generated; undefined: logps
  at::Tensor ref_logps;   // [B, L] detached: the reference's; needed when beta != 0
  at::Tensor advantages;  // [B]
  at::Tensor mask;        // [B, L] bool: the completion tokens (overlong-filtered rows already off)
};

struct GrpoLossResult {
  // grpo, sapo: the mean over rows of each row's token mean; bnpo: the micro-batch's token mean; dr_grpo: the token
  // sum / (B x max_completion_length); dapo, cispo: the token sum (the trainer divides by the generation batch's
  // tokens).
  at::Tensor loss;
  // Detached float64 scalars, ms-swift's names: "kl" (beta != 0), "clip_ratio/low_mean", "clip_ratio/high_mean",
  // "clip_ratio/region_mean" (not cispo, sapo), "cispo_clip_ratio" (cispo): masked token means of this micro-batch.
  std::vector<std::pair<std::string, at::Tensor>> metrics;
};

GrpoLossResult grpo_loss(const GrpoLossInputs& in, const GrpoLossConfig& config);

}  // namespace swift::rlhf
