// The training step (train/training_step.h) on one process, through the same strategy object the trainer uses:
// accumulated micro-batches update exactly as one large batch, the logged norm is the one before clipping and
// clipping scales the update, a float16 overflow skips the update and backs the scale off, and every micro-batch's
// metrics reach the window.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <map>

#include "swift/data/train_data.h"
#include "swift/distributed/parallel_strategy.h"
#include "swift/train/causal_lm_objective.h"
#include "swift/train/training_step.h"
#include "test_util.h"

using namespace swift;

namespace {

std::vector<data::Example> examples() { return test::half_prompt_examples({9, 5, 12, 7, 6, 10, 8, 11}); }

// One process, as the trainer makes it from options without ranks.
std::unique_ptr<distributed::ParallelStrategy> one_process() {
  const distributed::ParallelOptions options;  // no torchrun/Slurm environment
  return distributed::make_parallel_strategy(options, "cpu", "");
}

struct StepRig {
  model::CausalLM model{nullptr};
  std::unique_ptr<distributed::ParallelStrategy> parallel;
  std::unique_ptr<train::AdamW> optimizer;
  std::unique_ptr<train::TrainingObjective> objective = train::causal_lm_objective();
  std::unique_ptr<data::InMemoryData> data;
  std::optional<train::GradScaler> scaler;

  // A tiny Qwen2 model, every parameter trainable, AdamW over them; batches of `batch` examples.
  StepRig(int64_t batch, double epsilon = 1e-8) : model(test::random_model(test::tiny_config("qwen2"), 9)) {
    model->train();
    parallel = one_process();
    parallel->assign_ownership(model);
    train::AdamWGroup group{{}, 0.0};
    for (const auto& [name, p] : parallel->optimizer_parameters()) group.params.emplace_back(name, p);
    optimizer = std::make_unique<train::AdamW>(std::vector<train::AdamWGroup>{group}, train::AdamWHyper{0.9, 0.95, epsilon});
    data = std::make_unique<data::InMemoryData>(examples(), batch, /*seed=*/5);
  }

  train::StepResult step(int64_t micro_batches, double max_grad_norm, train::MetricWindow& window, double lr = 1e-2) {
    train::StepContext context{model, *objective, *parallel, *optimizer, scaler ? &*scaler : nullptr, std::nullopt,
                               max_grad_norm, /*pad_id=*/0};
    return train::train_step(context, *data, micro_batches, lr, /*first_step=*/true, window);
  }

  std::map<std::string, at::Tensor> weights() const {
    std::map<std::string, at::Tensor> out;
    for (const auto& item : model->named_parameters()) out[item.key()] = item.value().detach().clone();
    return out;
  }
};

double max_relative_difference(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
  double worst = 0;
  for (const auto& [name, t] : a)
    worst = std::max(worst, ((t - b.at(name)).norm() / (t.norm() + 1e-12)).item<double>());
  return worst;
}

}  // namespace

TEST(TrainStep, AccumulatedMicroBatchesUpdateAsOneLargeBatch) {
  StepRig split(/*batch=*/2), whole(/*batch=*/4);
  train::MetricWindow w1(split.objective->metric_names()), w2(whole.objective->metric_names());
  const auto a = split.step(/*micro_batches=*/2, 1.0, w1);
  const auto b = whole.step(/*micro_batches=*/1, 1.0, w2);
  EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-6 * b.grad_norm);
  // Adam's first step is about sign(g): gradient entries near zero, summed in another order, move their weights by
  // more than their rounding (4.6e-6 on an AMD EPYC, under 1e-6 on Intel), so the weights compare at 1e-5.
  EXPECT_LT(max_relative_difference(split.weights(), whole.weights()), 1e-5);
  // The loss logged is the token mean over the step either way.
  EXPECT_NEAR(w1.values().front().second, w2.values().front().second, 1e-6);
}

// --padding_free: each micro-batch in one unpadded row (segments keep the samples apart): the padded batch's
// gradient norm and loss.
TEST(TrainStep, PaddingFreeRowsTrainAsPaddedOnes) {
  StepRig padded(/*batch=*/4), flat(/*batch=*/4);
  flat.objective = train::causal_lm_objective({/*padding_free=*/true});
  std::vector<const data::Example*> items;
  const auto some = examples();
  for (size_t i = 0; i < 3; ++i) items.push_back(&some[i]);
  const data::Batch batch = flat.objective->collate(items, 0);
  EXPECT_EQ(batch.input_ids.size(0), 1);
  EXPECT_EQ(batch.input_ids.size(1), 9 + 5 + 12);  // no pad
  ASSERT_TRUE(batch.segment_ids.defined());
  EXPECT_EQ(batch.label_tokens, padded.objective->collate(items, 0).label_tokens);
  train::MetricWindow w1(padded.objective->metric_names()), w2(flat.objective->metric_names());
  const auto a = padded.step(/*micro_batches=*/2, 1.0, w1);
  const auto b = flat.step(/*micro_batches=*/2, 1.0, w2);
  EXPECT_NEAR(a.grad_norm, b.grad_norm, 1e-6 * a.grad_norm);
  EXPECT_NEAR(w1.values().front().second, w2.values().front().second, 1e-6);
}

TEST(TrainStep, LogsTheNormBeforeClippingAndScalesTheUpdate) {
  // With epsilon far above every gradient, Adam's first update is lr * g / epsilon: linear in the gradient, so the
  // clipping shows in the update (lr 1e4 makes it about 1e-2 g, well above float32's rounding of the weights).
  StepRig plain(2, /*epsilon=*/1e6), clipped(2, /*epsilon=*/1e6);
  const auto before = plain.weights();
  train::MetricWindow w1(plain.objective->metric_names()), w2(clipped.objective->metric_names());
  const auto unclipped = plain.step(2, /*max_grad_norm=*/0.0, w1, /*lr=*/1e4);  // 0: nothing clipped, the norm logged
  const double max_norm = unclipped.grad_norm / 4;
  const auto result = clipped.step(2, max_norm, w2, /*lr=*/1e4);
  EXPECT_NEAR(result.grad_norm, unclipped.grad_norm, 1e-6 * unclipped.grad_norm);  // the norm before clipping
  const auto after_plain = plain.weights(), after_clipped = clipped.weights();
  double full = 0, clipped_sq = 0;
  for (const auto& [name, w] : before) {
    full += (after_plain.at(name) - w).to(at::kDouble).pow(2).sum().item<double>();
    clipped_sq += (after_clipped.at(name) - w).to(at::kDouble).pow(2).sum().item<double>();
  }
  EXPECT_NEAR(std::sqrt(clipped_sq / full), max_norm / (unclipped.grad_norm + 1e-6), 1e-3);
}

TEST(TrainStep, Float16OverflowSkipsTheUpdateAndBacksTheScaleOff) {
  StepRig run(2);
  // A scale no float holds: the scaled loss and its gradients are not finite.
  run.scaler.emplace(train::GradScalerOptions{3e38, 2.0, 0.5, 2000});
  const auto before = run.weights();
  train::MetricWindow window(run.objective->metric_names());
  const auto result = run.step(2, 1.0, window);
  EXPECT_TRUE(result.skipped);
  EXPECT_EQ(max_relative_difference(before, run.weights()), 0.0);
  EXPECT_NEAR(run.scaler->current_scale() / 1.5e38, 1.0, 1e-6);  // halved (fp32 storage: 1e-6)
  for (const auto& p : run.parallel->trainable()) EXPECT_FALSE(p.grad().defined());  // dropped for the next step
}

TEST(TrainStep, EveryMicroBatchReachesTheWindow) {
  StepRig run(2);
  train::MetricWindow window(run.objective->metric_names());
  run.step(3, 1.0, window);
  const auto values = window.values();
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].first, "loss");
  EXPECT_GT(values[0].second, 0.0);
  EXPECT_EQ(values[1].first, "token_acc");
  EXPECT_GE(values[1].second, 0.0);
  EXPECT_LE(values[1].second, 1.0);
  // Three micro-batches of 2 drawn: the data moved on by 6 examples.
  EXPECT_EQ(run.data->state().at("position").get<int64_t>(), 6);
}

// A total (count -1 per micro-batch) is logged per optimizer step of the window; the other metrics are sum / count,
// and one nothing was counted for is left out.
TEST(MetricWindow, TotalsAreLoggedPerStep) {
  train::MetricWindow window({"loss", "routed", "absent"});
  const auto micro_batch = [](double loss, double tokens, double routed) {
    return at::tensor({loss, tokens, routed, -1.0, 0.0, 0.0}, at::kDouble).view({3, 2});
  };
  for (int i = 0; i < 4; ++i) window.add(micro_batch(2.0 * (i + 1), 4.0, 10.0 + i));  // 2 steps of 2 micro-batches
  const auto values = window.values(/*steps=*/2);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_DOUBLE_EQ(values[0].second, 20.0 / 16.0);
  EXPECT_EQ(values[1].first, "routed");
  EXPECT_DOUBLE_EQ(values[1].second, (10.0 + 11.0 + 12.0 + 13.0) / 2);
  EXPECT_DOUBLE_EQ(window.values()[1].second, 46.0) << "over the whole window (an evaluation)";
}
