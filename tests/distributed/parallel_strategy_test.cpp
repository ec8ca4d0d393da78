// The strategy one process trains with, as make_parallel_strategy gives it without a torchrun/Slurm environment:
// every trainable parameter its own, every sample its own, sums and shares that change nothing, clipping to the
// norm of all gradients, one optimizer file; and ZeRO asked of one process leaves it out.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "swift/distributed/gradient_norm.h"
#include "swift/distributed/parallel_strategy.h"
#include "test_util.h"

using namespace swift;

namespace {

std::unique_ptr<distributed::ParallelStrategy> one_process(const std::string& deepspeed = "") {
  distributed::ParallelOptions options;
  options.zero = distributed::parse_deepspeed(deepspeed);
  return distributed::make_parallel_strategy(options, "cpu", "");
}

}  // namespace

TEST(ParallelStrategy, OneProcessOwnsEverythingAndSharesNothing) {
  auto parallel = one_process();
  EXPECT_EQ(parallel->world_size(), 1);
  EXPECT_TRUE(parallel->main_rank());
  EXPECT_FALSE(parallel->computes_empty_slices());
  EXPECT_FALSE(parallel->shards_parameters());
  EXPECT_FALSE(parallel->shards_optimizer_state());
  EXPECT_EQ(parallel->local_range(5), (std::pair<size_t, size_t>{0, 5}));
  EXPECT_EQ(parallel->sum({1.5, 2.0}), (std::vector<double>{1.5, 2.0}));
  EXPECT_EQ(parallel->share("run_dir", "x"), "x");
  EXPECT_EQ(parallel->optimizer_state_file(), "optimizer.safetensors");
  EXPECT_FALSE(parallel->placement_plan({}));
  auto model = test::random_model(test::tiny_config("llama"), 1);
  model->model->embed_tokens->weight.set_requires_grad(false);
  parallel->assign_ownership(model);
  const size_t trainable = model->parameters().size() - 1;
  EXPECT_EQ(parallel->trainable().size(), trainable);
  EXPECT_EQ(parallel->optimizer_parameters().size(), trainable);
  EXPECT_TRUE(parallel->trainable_elsewhere().empty());
  EXPECT_EQ(parallel->footprint(model).zero_stage, 0);
}

TEST(ParallelStrategy, OneProcessTrainsWithoutZero) {
  auto parallel = one_process("zero3");
  EXPECT_FALSE(parallel->shards_parameters());
  auto model = test::random_model(test::tiny_config("qwen3"));
  EXPECT_EQ(parallel->footprint(model).zero_stage, 0);
}

TEST(ParallelStrategy, ClipsToTheNormOfAllGradients) {
  auto parallel = one_process();
  auto model = test::random_model(test::tiny_config("qwen2"), 2);
  parallel->assign_ownership(model);
  for (auto& p : parallel->trainable()) p.mutable_grad() = at::ones_like(p);
  const double norm = distributed::gradient_norm(parallel->trainable());
  bool overflow = false;
  EXPECT_NEAR(parallel->clip_gradients(/*max_norm=*/norm / 2, overflow), norm, 1e-6 * norm);  // before clipping
  EXPECT_NEAR(distributed::gradient_norm(parallel->trainable()), norm / 2, 1e-5 * norm);
  EXPECT_FALSE(overflow);
  EXPECT_NEAR(parallel->clip_gradients(/*max_norm=*/0, overflow), norm / 2, 1e-5 * norm);  // 0: only measured
  EXPECT_NEAR(distributed::gradient_norm(parallel->trainable()), norm / 2, 1e-5 * norm);
}
