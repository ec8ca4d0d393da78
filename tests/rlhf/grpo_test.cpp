// GRPO's pieces on hand-made inputs (the parity against ms-swift is grpo_parity_test.cpp): the loss on-policy, the
// advantages of a group that trains nothing, the built-in rewards' edge cases and their errors.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "swift/core/error.h"
#include "swift/rlhf/grpo_advantages.h"
#include "swift/rlhf/grpo_loss.h"
#include "swift/rlhf/reward_functions.h"

using namespace swift;

// On-policy (old = current) the ratio is 1: the grpo loss is minus the mean advantage, and each completion token's
// gradient is -A / (its row's tokens x rows); bnpo divides by the micro-batch's tokens instead.
TEST(GrpoLoss, OnPolicyTheLossIsMinusTheAdvantage) {
  const at::Tensor logps = at::log(at::tensor({0.5f, 0.25f, 0.1f, 0.2f, 0.3f, 0.4f})).view({2, 3}).requires_grad_();
  rlhf::GrpoLossInputs in;
  in.logps = logps;
  in.advantages = at::tensor({2.0f, -1.0f});
  in.mask = at::tensor({1, 1, 0, 1, 1, 1}).view({2, 3}).to(at::kBool);  // rows of 2 and 3 tokens
  rlhf::GrpoLossConfig config;
  config.beta = 0;
  auto out = rlhf::grpo_loss(in, config);
  EXPECT_NEAR(out.loss.item<double>(), -(2.0 - 1.0) / 2, 1e-6);
  out.loss.backward();
  const at::Tensor want = at::tensor({-2.0f / 4, -2.0f / 4, 0.0f, 1.0f / 6, 1.0f / 6, 1.0f / 6}).view({2, 3});
  EXPECT_TRUE(at::allclose(logps.grad(), want)) << logps.grad();
  config.loss_type = rlhf::GrpoLossType::kBnpo;
  EXPECT_NEAR(rlhf::grpo_loss(in, config).loss.item<double>(), -(2.0 * 2 - 1.0 * 3) / 5, 1e-6);
  config.loss_type = rlhf::GrpoLossType::kDrGrpo;
  config.max_completion_length = 4;
  EXPECT_NEAR(rlhf::grpo_loss(in, config).loss.item<double>(), -(2.0 * 2 - 1.0 * 3) / 8, 1e-6);
  // The KL to a reference equal to the policy is 0; the clip ratios are 0.
  config.beta = 0.5;
  in.ref_logps = logps.detach();
  out = rlhf::grpo_loss(in, config);
  ASSERT_EQ(out.metrics.front().first, "kl");
  EXPECT_EQ(out.metrics.front().second.item<double>(), 0.0);
  for (const auto& [name, v] : out.metrics) EXPECT_EQ(v.item<double>(), 0.0) << name;
}

TEST(GrpoLoss, UnknownNamesAreUsageErrors) {
  EXPECT_THROW(rlhf::parse_grpo_loss_type("ppo"), UsageError);
  EXPECT_THROW(rlhf::parse_importance_sampling("row"), UsageError);
  EXPECT_THROW(rlhf::parse_scale_rewards("yes"), UsageError);
  EXPECT_EQ(rlhf::parse_scale_rewards("true"), rlhf::RewardScaling::kGroup);  // ms-swift before 3.10
}

// A group whose completions all scored the same trains nothing: its advantages are 0; a missing reward counts 0.
TEST(GrpoAdvantages, AGroupOfEqualRewardsHasNoAdvantage) {
  const at::Tensor rewards = at::tensor({1.0f, 0.0f, 1.0f, 1.0f, 0.0f, std::nanf(""), 1.0f, 0.0f}).view({4, 2});
  const auto batch = rlhf::group_advantages(rewards, {1.0, 1.0}, 2, rlhf::AdvantageEstimator::kGrpo, rlhf::RewardScaling::kGroup);
  EXPECT_TRUE(at::equal(batch.rewards, at::tensor({1.0f, 2.0f, 0.0f, 1.0f})));
  EXPECT_EQ(batch.advantages[0].item<float>(), -batch.advantages[1].item<float>());
  EXPECT_LT(batch.advantages[0].item<float>(), 0.0f);
  const auto metrics = rlhf::reward_metrics(batch, rewards, {"A", "B"}, 2, rlhf::RewardScaling::kGroup);
  EXPECT_EQ(metrics[2].first, "frac_reward_zero_std");
  EXPECT_EQ(metrics[2].second, 0.0);
  const auto equal = rlhf::group_advantages(at::ones({4, 1}), {1.0}, 2, rlhf::AdvantageEstimator::kGrpo, rlhf::RewardScaling::kGroup);
  EXPECT_TRUE(at::equal(equal.advantages, at::zeros({4})));
}

TEST(RewardFunctions, FormatWantsThinkThenAnswerAndNothingAfter) {
  EXPECT_EQ(rlhf::format_reward("<think>a</think><answer>b</answer>"), 1.0);
  EXPECT_EQ(rlhf::format_reward("<think>a</think>b</think>\n\t <answer></answer>"), 1.0);
  EXPECT_EQ(rlhf::format_reward("<think>a</think>x<answer>b</answer>"), 0.0) << "text between the two";
  EXPECT_EQ(rlhf::format_reward("<think>a</think><answer>b</answer>\n"), 0.0) << "a trailing newline";
  EXPECT_EQ(rlhf::format_reward(" <think>a</think><answer>b</answer>"), 0.0) << "text before";
  EXPECT_EQ(rlhf::format_reward("<think>a<answer>b</answer>"), 0.0);
  EXPECT_EQ(rlhf::format_reward(""), 0.0);
}

TEST(RewardFunctions, LengthRewardsFollowTheirSchedules) {
  rlhf::RewardSettings s;
  s.cosine_max_len = 10;
  EXPECT_DOUBLE_EQ(rlhf::cosine_reward(true, 0, s), 1.0);
  EXPECT_DOUBLE_EQ(rlhf::cosine_reward(true, 10, s), 0.5);
  EXPECT_DOUBLE_EQ(rlhf::cosine_reward(false, 0, s), -0.5);
  EXPECT_NEAR(rlhf::cosine_reward(false, 10, s), 0.0, 1e-12);
  EXPECT_DOUBLE_EQ(rlhf::soft_overlong_reward(12, 20, 8), 0.0);
  EXPECT_DOUBLE_EQ(rlhf::soft_overlong_reward(16, 20, 8), -0.5);
  EXPECT_DOUBLE_EQ(rlhf::soft_overlong_reward(24, 20, 8), -1.5) << "no floor past the maximum";
  EXPECT_DOUBLE_EQ(rlhf::repetition_reward("a b a b a b", 2, -1.0), -(1 - 2.0 / 5));
  EXPECT_DOUBLE_EQ(rlhf::repetition_reward("a b", 3, -1.0), 0.0);
}

TEST(RewardFunctions, AccuracyComparesTheAnswers) {
  EXPECT_EQ(rlhf::accuracy_reward("<answer>1,250</answer>", "\\boxed{1250}"), 1.0);
  // Rounded to 6 decimals; a bare \dfrac read too (math_verify reads it only inside $...$).
  EXPECT_EQ(rlhf::accuracy_reward("<answer>\\dfrac{1}{3}</answer>", "0.333333"), 1.0);
  EXPECT_EQ(rlhf::accuracy_reward("<answer>12-5</answer>", "5"), 1.0) << "the minus between numbers is no sign";
  EXPECT_EQ(rlhf::accuracy_reward("<answer>" + std::string(5000, '7') + "</answer>", "7"), 0.0) << "no double holds it";
  EXPECT_EQ(rlhf::accuracy_reward("<answer>1/3</answer>", "0.3333"), 0.0);
  EXPECT_EQ(rlhf::accuracy_reward("I think it is 12", "12"), 0.0) << "untagged, unboxed, unstated: no answer";
  EXPECT_EQ(rlhf::accuracy_reward("so \\boxed{\\text{yes}}", "\\boxed{\\text{yes}}"), 1.0) << "equal text";
  EXPECT_EQ(rlhf::accuracy_reward("so \\boxed{\\text{no}}", "\\boxed{\\text{yes}}"), 0.0);
}

TEST(RewardFunctions, ErrorsNameTheFlagOrTheColumn) {
  rlhf::RewardSettings s;
  EXPECT_THROW(rlhf::builtin_reward("bleu", s), UsageError);
  EXPECT_THROW(rlhf::builtin_reward("soft_overlong", s), UsageError) << "--soft_cache_length is required";
  s.soft_cache_length = 600;
  EXPECT_THROW(rlhf::builtin_reward("soft_overlong", s), UsageError) << "not below --soft_max_length";
  const nlohmann::json row = {{"problem", "1+1"}};
  try {
    rlhf::builtin_reward("accuracy", s)->score({{"<answer>2</answer>", 3, &row}});
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("solution"), std::string::npos) << e.what();
  }
}

// An external command: one JSON line per completion in (the row's columns, the completion and its token count), one
// reward per line out, the command kept running between batches; a batch it fails gets no rewards, the third failure
// in a row stops the run.
TEST(RewardFunctions, AnExternalCommandScoresJsonLines) {
  rlhf::RewardSettings s;
  s.reward_timeout = 2;
  const nlohmann::json row = {{"solution", "7"}};
  const std::vector<rlhf::ScoredCompletion> batch = {{"<answer>7</answer>", 5, &row}, {"no", 2, &row}};
  // Answers each line's token count.
  const auto tokens = rlhf::reward_function(
      "external:while read -r line; do echo \"$line\" | sed -E 's/.*\"completion_tokens\":([0-9]+).*/\\1/'; done", s);
  EXPECT_EQ(tokens->name(), "External") << "sh -c's first word is 'while'";
  for (int round = 0; round < 2; ++round) {  // the same process answers both batches
    const auto rewards = tokens->score(batch);
    ASSERT_EQ(rewards.size(), 2u);
    EXPECT_EQ(rewards[0], 5.0);
    EXPECT_EQ(rewards[1], 2.0);
  }
  const auto nulls = rlhf::reward_function("external:while read -r line; do echo null; done", s);
  EXPECT_FALSE(nulls->score(batch)[1].has_value()) << "null: no reward for that completion";
  EXPECT_EQ(rlhf::reward_function("external:python3 /opt/check_answer.py --strict", s)->name(), "check_answer");
  // A command that never answers: no rewards for two batches (warnings), the third stops the run.
  const auto silent = rlhf::reward_function("external:cat > /dev/null", s);
  for (int i = 0; i < 2; ++i) {
    const auto rewards = silent->score(batch);
    EXPECT_FALSE(rewards[0].has_value());
    EXPECT_FALSE(rewards[1].has_value());
  }
  try {
    silent->score(batch);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("failed 3 generation batches in a row"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--reward_timeout"), std::string::npos) << e.what();
  }
  // Words, or an early exit, are failures too.
  s.reward_timeout = 30;
  EXPECT_FALSE(rlhf::reward_function("external:while read -r l; do echo good; done", s)->score(batch)[0].has_value());
  EXPECT_FALSE(rlhf::reward_function("external:head -n 1 > /dev/null; echo 1", s)->score(batch)[0].has_value());
  EXPECT_THROW(rlhf::reward_function("external:", s), UsageError);
}

// An HTTP endpoint is named by its path's last part; one that cannot be reached costs the batch's rewards with a
// warning, and the third batch in a row stops the run.
TEST(RewardFunctions, AnHttpEndpointIsNamedByItsPathAndItsFailuresCount) {
  rlhf::RewardSettings s;
  s.reward_timeout = 2;
  EXPECT_EQ(rlhf::reward_function("http://127.0.0.1:8000/v1/check_answer?strict=1", s)->name(), "check_answer");
  EXPECT_EQ(rlhf::reward_function("https://scorer.example/", s)->name(), "Http");
  const nlohmann::json row = {{"solution", "7"}};
  const std::vector<rlhf::ScoredCompletion> batch = {{"<answer>7</answer>", 5, &row}};
  const auto down = rlhf::reward_function("http://127.0.0.1:1/score", s);  // port 1: nothing listens
  for (int i = 0; i < 2; ++i) EXPECT_FALSE(down->score(batch)[0].has_value());
  try {
    down->score(batch);
    FAIL() << "expected a DataError";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("the reward endpoint http://127.0.0.1:1/score failed 3 generation batches"),
              std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("the request failed"), std::string::npos) << e.what();
  }
}
