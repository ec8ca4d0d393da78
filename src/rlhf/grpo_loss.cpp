// GRPO's policy loss (see grpo_loss.h).
#include "swift/rlhf/grpo_loss.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>

#include "swift/core/error.h"
#include "swift/model/tensor_parallel.h"

namespace swift::rlhf {

GrpoLossType parse_grpo_loss_type(const std::string& name) {
  if (name == "grpo") return GrpoLossType::kGrpo;
  if (name == "bnpo") return GrpoLossType::kBnpo;
  if (name == "dr_grpo") return GrpoLossType::kDrGrpo;
  if (name == "dapo") return GrpoLossType::kDapo;
  if (name == "cispo") return GrpoLossType::kCispo;
  if (name == "sapo") return GrpoLossType::kSapo;
  throw UsageError("--loss_type " + name + " is not a GRPO loss type", "use grpo (default), bnpo, dr_grpo, dapo, cispo or sapo");
}

ImportanceSampling parse_importance_sampling(const std::string& name) {
  if (name == "token") return ImportanceSampling::kToken;
  if (name == "sequence") return ImportanceSampling::kSequence;
  if (name == "sequence_token") return ImportanceSampling::kSequenceToken;
  throw UsageError("--importance_sampling_level " + name + " is not known",
                   "use token (default), sequence (GSPO) or sequence_token (GSPO-token)");
}

at::Tensor completion_mask(const at::Tensor& labels, bool labels_shifted) {
  const int64_t T = labels.size(1);
  return (labels_shifted ? labels : labels.narrow(1, 1, T - 1)).ne(-100);
}

at::Tensor token_logps_from_hidden(const at::Tensor& hidden, const at::Tensor& labels,
                                   const std::function<at::Tensor(const at::Tensor&)>& lm_head, double temperature,
                                   train::VocabSplit split, bool labels_shifted) {
  const int64_t B = hidden.size(0), T = hidden.size(1);
  const int64_t P = labels_shifted ? T : T - 1;
  const at::Tensor shifted = (labels_shifted ? labels : labels.narrow(1, 1, T - 1)).to(hidden.device());
  const at::Tensor mask = shifted.ne(-100);  // [B, P]
  // The logits only where a completion token is predicted: [N, V], divided by the sampling temperature.
  const at::Tensor logits = lm_head(hidden.narrow(1, 0, P).index({mask})).to(at::kFloat) / temperature;
  const at::Tensor targets = shifted.index({mask});
  const at::Tensor picked = split.comm ? -model::vocab_parallel_cross_entropy(logits, targets, split.vocab_start, *split.comm)
                                       : -at::cross_entropy_loss(logits, targets, {}, at::Reduction::None, -100);
  return at::zeros({B, P}, picked.options()).index_put({mask}, picked);
}

namespace {

at::Tensor value(const at::Tensor& t) { return t.detach().to(at::kDouble).reshape({}); }

}  // namespace

GrpoLossResult grpo_loss(const GrpoLossInputs& in, const GrpoLossConfig& c) {
  const at::Tensor mask = in.mask.to(at::kBool);
  const at::Tensor m = mask.to(in.logps.scalar_type());
  const at::Tensor old = in.old_logps.defined() ? in.old_logps.to(in.logps.scalar_type()) : in.logps.detach();
  // One per row, on every token of it (as ms-swift expands them, so that a row-level ratio's clip counts per token).
  const at::Tensor advantages = in.advantages.to(in.logps.scalar_type()).reshape({-1, 1}).expand_as(in.logps);
  const at::Tensor row_tokens = m.sum(-1).clamp_min(1.0);

  // The importance weights: per token, or one per row (GSPO: the mean log-ratio over the row's tokens), or the row's
  // weight with each token's gradient (GSPO-token).
  const at::Tensor log_ratio = in.logps - old;
  at::Tensor log_weights;
  if (c.importance_sampling == ImportanceSampling::kToken) {
    log_weights = log_ratio;
  } else {
    const at::Tensor row = ((log_ratio * m).sum(-1) / row_tokens).unsqueeze(-1);
    log_weights = c.importance_sampling == ImportanceSampling::kSequence
                      ? row
                      : in.logps - in.logps.detach() + row.detach();
  }
  at::Tensor ratio = at::exp(log_weights);

  at::Tensor per_token;
  if (c.loss_type == GrpoLossType::kCispo) {  // the ratio, capped at epsilon_high itself, weighs the log-probability
    per_token = -at::clamp_max(ratio, c.epsilon_high).detach() * advantages * in.logps;
  } else if (c.loss_type == GrpoLossType::kSapo) {  // a soft gate instead of the clip, sharper for negative advantages
    const at::Tensor positive = at::sigmoid(c.tau_pos * (ratio - 1)) * (4.0 / c.tau_pos);
    const at::Tensor negative = at::sigmoid(c.tau_neg * (ratio - 1)) * (4.0 / c.tau_neg);
    per_token = -at::where(advantages > 0, positive, negative) * advantages;
  } else {
    const at::Tensor clipped = at::clamp(ratio, 1 - c.epsilon_low, 1 + c.epsilon_high);
    if (c.delta) ratio = at::clamp_max(ratio, *c.delta);  // after the clipped term is formed, as ms-swift
    per_token = -at::min(ratio * advantages, clipped * advantages);
  }

  const at::Tensor tokens = m.sum().clamp_min(1.0);
  // A token mean of the micro-batch (ms-swift takes a plain mean when there is one position per row).
  const auto masked_mean = [&](const at::Tensor& x) { return x.size(-1) == 1 ? x.mean() : (x * m).sum() / tokens; };
  GrpoLossResult out;
  if (c.beta != 0) {  // k3, clamped as ms-swift clamps it
    TORCH_CHECK(in.ref_logps.defined(), "grpo_loss: beta != 0 needs the reference's log-probabilities");
    const at::Tensor d = at::clamp(in.ref_logps.to(in.logps.scalar_type()) - in.logps, -20, 20);
    const at::Tensor kl = at::clamp(at::exp(d) - d - 1, -10, 10);
    per_token = per_token + c.beta * kl;
    out.metrics.emplace_back("kl", value(masked_mean(kl)));
  }

  const int64_t rows = mask.size(0);
  switch (c.loss_type) {
    case GrpoLossType::kGrpo:
    case GrpoLossType::kSapo:
      out.loss = ((per_token * m).sum(-1) / row_tokens).mean();
      break;
    case GrpoLossType::kBnpo:
      out.loss = (per_token * m).sum() / tokens;
      break;
    case GrpoLossType::kDrGrpo:
      out.loss = (per_token * m).sum() / static_cast<double>(rows * c.max_completion_length);
      break;
    case GrpoLossType::kDapo:
    case GrpoLossType::kCispo:
      out.loss = (per_token * m).sum();
      break;
  }

  // How often the clip bit: tokens whose ratio left [1 - epsilon_low, 1 + epsilon_high] on the side that stops the
  // gradient (low with a negative advantage, high with a positive one).
  const at::Tensor r = ratio.detach();
  if (c.loss_type == GrpoLossType::kCispo) {
    out.metrics.emplace_back("cispo_clip_ratio", value(masked_mean(((r > c.epsilon_high) & (advantages > 0)).to(m.scalar_type()))));
  } else if (c.loss_type != GrpoLossType::kSapo) {
    const at::Tensor low = (r < 1 - c.epsilon_low) & (advantages < 0);
    const at::Tensor high = (r > 1 + c.epsilon_high) & (advantages > 0);
    out.metrics.emplace_back("clip_ratio/low_mean", value(masked_mean(low.to(m.scalar_type()))));
    out.metrics.emplace_back("clip_ratio/high_mean", value(masked_mean(high.to(m.scalar_type()))));
    out.metrics.emplace_back("clip_ratio/region_mean", value(masked_mean((low | high).to(m.scalar_type()))));
  }
  return out;
}

}  // namespace swift::rlhf
