// GRPO's advantages and reward metrics (see grpo_advantages.h).
#include "swift/rlhf/grpo_advantages.h"

#include <ATen/ATen.h>

#include "swift/core/error.h"

namespace swift::rlhf {

AdvantageEstimator parse_advantage_estimator(const std::string& name) {
  if (name == "grpo") return AdvantageEstimator::kGrpo;
  if (name == "rloo") return AdvantageEstimator::kRloo;
  if (name == "reinforce_plus_plus") return AdvantageEstimator::kReinforcePlusPlus;
  throw UsageError("--advantage_estimator " + name + " is not known", "use grpo (default), rloo or reinforce_plus_plus");
}

RewardScaling parse_scale_rewards(const std::string& name) {
  if (name == "group" || name == "true" || name == "True") return RewardScaling::kGroup;
  if (name == "batch") return RewardScaling::kBatch;
  if (name == "none" || name == "false" || name == "False") return RewardScaling::kNone;
  if (name == "gdpo") return RewardScaling::kGdpo;
  throw UsageError("--scale_rewards " + name + " is not known", "use group, batch, none or gdpo");
}

namespace {

// The unbiased standard deviation of each row of x [G, K] over its non-NaN entries (NaN with fewer than two).
at::Tensor nan_std(const at::Tensor& x) {
  const at::Tensor present = x.isnan().logical_not();
  const at::Tensor n = present.sum(1, /*keepdim=*/true).to(x.scalar_type());
  const at::Tensor mean = at::nanmean(x, 1, /*keepdim=*/true);
  const at::Tensor squares = at::where(present, (x - mean).pow(2), at::zeros_like(x)).sum(1, true);
  return (squares / (n - 1)).sqrt();
}

// Repeats each group's value [G] over its K rows: [G x K].
at::Tensor per_row(const at::Tensor& group_values, int64_t K) { return group_values.repeat_interleave(K); }

}  // namespace

GroupAdvantages group_advantages(const at::Tensor& rewards_per_func, const std::vector<double>& weights,
                                 int64_t num_generations, AdvantageEstimator estimator, RewardScaling scaling,
                                 const at::Tensor& kl_penalty) {
  const int64_t K = num_generations, N = rewards_per_func.size(0);
  TORCH_CHECK(K > 0 && N % K == 0, "group_advantages: ", N, " rows are not groups of ", K);
  TORCH_CHECK(static_cast<int64_t>(weights.size()) == rewards_per_func.size(1), "group_advantages: one weight per function");
  const at::Tensor R = rewards_per_func.to(at::kFloat);
  const at::Tensor w = at::tensor(std::vector<float>(weights.begin(), weights.end()), R.options());
  GroupAdvantages out;
  out.rewards = at::nansum(R * w.unsqueeze(0), 1);
  if (kl_penalty.defined()) {
    TORCH_CHECK(scaling != RewardScaling::kGdpo, "group_advantages: gdpo scaling takes no KL penalty");
    out.rewards = out.rewards - kl_penalty.to(out.rewards.options());
  }
  const at::Tensor grouped = out.rewards.view({-1, K});
  const at::Tensor group_mean = per_row(grouped.mean(1), K);
  const double k = static_cast<double>(K);
  at::Tensor advantages = estimator == AdvantageEstimator::kRloo && K > 1
                              ? out.rewards * (k / (k - 1)) - group_mean * (k / (k - 1))
                              : out.rewards - group_mean;
  const auto batch_std = [](const at::Tensor& x) { return x.numel() > 1 ? x.std().expand_as(x) : at::zeros_like(x); };
  const auto group_std = [&](const at::Tensor& x) { return K > 1 ? per_row(x.view({-1, K}).std(1), K) : at::zeros_like(x); };
  at::Tensor std;
  // gdpo: each function normalised within its groups, then the sum over the batch (REINFORCE++ ignores it, as
  // ms-swift: its advantages stay unscaled).
  if (scaling == RewardScaling::kGdpo && estimator != AdvantageEstimator::kReinforcePlusPlus) {
    at::Tensor summed = at::zeros({N}, R.options());
    for (int64_t f = 0; f < R.size(1); ++f) {
      const at::Tensor r = R.select(1, f).view({-1, K});
      const at::Tensor normalised = at::nan_to_num((r - at::nanmean(r, 1, true)) / (nan_std(r) + 1e-8), 0.0);
      summed = summed + weights[static_cast<size_t>(f)] * normalised.view({-1});
    }
    out.advantages = (summed - summed.mean()) / (summed.std() + 1e-8);
    return out;
  }
  // REINFORCE++ scales by the spread of the advantages, the others by the rewards'.
  const at::Tensor spread = estimator == AdvantageEstimator::kReinforcePlusPlus ? advantages : out.rewards;
  if (scaling == RewardScaling::kBatch) std = batch_std(spread);
  if (scaling == RewardScaling::kGroup) std = group_std(spread);
  out.advantages = std.defined() ? advantages / (std + 1e-4) : advantages;
  return out;
}

std::vector<std::pair<std::string, double>> reward_metrics(const GroupAdvantages& batch, const at::Tensor& rewards_per_func,
                                                           const std::vector<std::string>& names, int64_t num_generations,
                                                           RewardScaling scaling) {
  const int64_t K = num_generations;
  const at::Tensor grouped = batch.rewards.view({-1, K});
  std::vector<std::pair<std::string, double>> out;
  out.emplace_back("reward", grouped.mean(-1).mean().item<double>());
  double spread = 0;
  if (scaling == RewardScaling::kBatch) spread = batch.rewards.numel() > 1 ? batch.rewards.std().item<double>() : 0.0;
  else if (K > 1) spread = grouped.std(-1).mean().item<double>();
  out.emplace_back("reward_std", spread);
  const at::Tensor zero_std = K > 1 ? at::isclose(grouped.std(1), at::zeros({grouped.size(0)}, grouped.options()))
                                    : at::ones({grouped.size(0)}, grouped.options().dtype(at::kBool));
  out.emplace_back("frac_reward_zero_std", zero_std.to(at::kFloat).mean().item<double>());
  for (size_t f = 0; f < names.size(); ++f) {
    const at::Tensor column = rewards_per_func.select(1, static_cast<int64_t>(f)).to(at::kFloat);
    const at::Tensor scored = column.index({column.isnan().logical_not()});
    if (scored.numel() == 0) continue;  // no row of this batch is that function's task
    out.emplace_back("rewards/" + names[f] + "/mean", scored.mean().item<double>());
    out.emplace_back("rewards/" + names[f] + "/std", scored.numel() > 1 ? scored.std().item<double>() : 0.0);
  }
  return out;
}

}  // namespace swift::rlhf
