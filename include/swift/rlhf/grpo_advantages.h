// GRPO's advantages from the rewards of a generation batch, as ms-swift 4.6 computes them (rl_core/advantage.py):
// the reward functions' weighted sum (a missing reward, NaN, counts 0), compared within each group of
// num_generations completions of one prompt (consecutive rows), scaled by the group's or the batch's standard
// deviation; and the reward metrics ms-swift logs. Every rank computes them on the whole gathered batch.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace swift::rlhf {

enum class AdvantageEstimator { kGrpo, kRloo, kReinforcePlusPlus };
// group: each group's (unbiased) standard deviation; batch: the whole batch's; none: unscaled; gdpo: each reward
// function normalised within its groups, their weighted sum normalised over the batch.
enum class RewardScaling { kGroup, kBatch, kNone, kGdpo };

// --advantage_estimator / --scale_rewards names (also true/false for scale_rewards, as ms-swift before 3.10:
// group/none); UsageError naming the flag otherwise.
AdvantageEstimator parse_advantage_estimator(const std::string& name);
RewardScaling parse_scale_rewards(const std::string& name);

struct GroupAdvantages {
  at::Tensor rewards;     // [N] float32: the weighted sum of each row's rewards
  at::Tensor advantages;  // [N] float32
};

// rewards_per_func: [N, F] float32 (NaN: the function gave no reward for that row); weights: F values; N a
// multiple of num_generations. kl_penalty (--kl_in_reward): [N] beta x each completion's KL to the reference,
// taken out of the weighted sums before they are compared (and so out of `rewards` and the reward metrics); not
// with gdpo scaling (ms-swift turns kl_in_reward off there).
GroupAdvantages group_advantages(const at::Tensor& rewards_per_func, const std::vector<double>& weights,
                                 int64_t num_generations, AdvantageEstimator estimator, RewardScaling scaling,
                                 const at::Tensor& kl_penalty = at::Tensor());

// ms-swift's reward metrics of a generation batch, by name: reward (the mean), reward_std (the mean of the groups'
// standard deviations; with batch scaling the batch's), frac_reward_zero_std (the share of groups whose rewards are
// all equal: they train nothing), and rewards/<name>/mean and rewards/<name>/std for each function that scored a
// row (NaN rows left out).
std::vector<std::pair<std::string, double>> reward_metrics(const GroupAdvantages& batch, const at::Tensor& rewards_per_func,
                                                           const std::vector<std::string>& names, int64_t num_generations,
                                                           RewardScaling scaling);

}  // namespace swift::rlhf
