// --plan_layout: the layouts offered for a model on a set of GPUs, their per-rank memory and the recommendation
// (fewest ranks per model copy that fit; TP within a node first, then PP, then CP).
#include <gtest/gtest.h>

#include <algorithm>

#include "swift/train/layout_plan.h"

using namespace swift;

namespace {

// Llama-3-70B's shape.
model::ModelConfig seventy_b() {
  model::ModelConfig c;
  c.hidden_size = 8192;
  c.intermediate_size = 28672;
  c.num_hidden_layers = 80;
  c.num_attention_heads = 64;
  c.num_key_value_heads = 8;
  c.head_dim = 128;
  c.vocab_size = 128256;
  return c;
}

train::LayoutPlanInputs cluster(double gib) {
  train::LayoutPlanInputs in;
  in.config = seventy_b();
  in.gpus = 32;
  in.gpus_per_node = 8;
  in.gpu_bytes = gib * (1ll << 30);
  in.row_tokens = 8192;
  in.micro_batches = 16;
  return in;
}

const train::LayoutOption& find(const std::vector<train::LayoutOption>& options, int tp, int cp, int pp) {
  for (const auto& o : options)
    if (o.tp == tp && o.cp == cp && o.pp == pp) return o;
  throw std::runtime_error("no such layout");
}

TEST(LayoutPlan, SeventyBOnFourNodesNeedsModelParallelismWithinTheRecommendation) {
  const auto in = cluster(80);
  const auto options = train::layout_options(in);
  const auto best = train::recommended_layout(options);
  ASSERT_TRUE(best.has_value());
  EXPECT_TRUE(best->fits);
  EXPECT_LE(best->tp, 8);  // tensor parallelism stays within a node
  EXPECT_EQ(best->tp * best->cp * best->pp * best->dp, 32);
  EXPECT_GT(best->tp * best->pp, 1);  // 70B does not fit one GPU's share
  for (const auto& o : options) {  // every smaller model-parallel group runs out of memory
    if (o.tp * o.cp * o.pp < best->tp * best->cp * best->pp) {
      EXPECT_FALSE(o.fits) << o.tp << " " << o.cp << " " << o.pp;
    }
  }
  EXPECT_NE(train::describe_layout_plan(in, options).find("recommended: --tp_size"), std::string::npos);
}

// Qwen3-30B-A3B's shape: 48 sparse layers of 128 experts (8 per token).
model::ModelConfig thirty_b_a3b() {
  model::ModelConfig c;
  c.hidden_size = 2048;
  c.intermediate_size = 6144;
  c.num_hidden_layers = 48;
  c.num_attention_heads = 32;
  c.num_key_value_heads = 4;
  c.head_dim = 128;
  c.qk_norm = true;
  c.vocab_size = 151936;
  c.moe.num_experts = 128;
  c.moe.experts_per_token = 8;
  c.moe.expert_intermediate_size = 768;
  c.moe.sparse_layers.assign(48, true);
  return c;
}

// A mixture-of-experts model: its experts split over the ranks of a pipeline stage (expert parallelism across TP, CP
// and DP, as Megatron with --expert_tensor_parallel_size 1) and its dense part by TP; each split holds 1/ep of the
// experts, and full fine-tuning of 30B on 8 GPUs of 80 GiB needs one.
TEST(LayoutPlan, MixtureOfExpertsSplitsItsExpertsOverTheRanksOfAStage) {
  train::LayoutPlanInputs in = cluster(80);
  in.config = thirty_b_a3b();
  in.gpus = 8;
  in.row_tokens = 4096;
  const auto options = train::layout_options(in);
  const train::LayoutOption* whole = nullptr;
  const train::LayoutOption* split = nullptr;
  const train::LayoutOption* with_tp = nullptr;
  for (const auto& o : options) {
    EXPECT_EQ(128 % o.ep, 0);
    EXPECT_EQ(o.tp * o.dp * o.cp % o.ep, 0);
    if (o.tp == 1 && o.cp == 1 && o.pp == 1 && o.ep == 1) whole = &o;
    if (o.tp == 1 && o.cp == 1 && o.pp == 1 && o.ep == 8) split = &o;
    if (o.tp == 2 && o.cp == 1 && o.pp == 1 && o.ep == 8) with_tp = &o;
  }
  ASSERT_TRUE(whole && split && with_tp);
  // 1.5B dense + 29B of experts, fp32 masters: 8 ranks hold 1.5B + 29B / 8; with TP 2 the dense part halves.
  const double experts = 48.0 * 128 * 3 * 2048 * 768, all = model::parameter_count(in.config), dense = all - experts;
  EXPECT_NEAR(split->per_rank.weights / whole->per_rank.weights, (dense + experts / 8) / all, 0.01);
  EXPECT_NEAR(with_tp->per_rank.weights / split->per_rank.weights, (dense / 2 + experts / 8) / (dense + experts / 8), 0.01);
  EXPECT_FALSE(whole->fits);
  const auto best = train::recommended_layout(options);
  ASSERT_TRUE(best.has_value());
  EXPECT_GT(best->ep, 1);
  EXPECT_NE(train::describe_layout_plan(in, options).find("--ep_size " + std::to_string(best->ep)), std::string::npos);
  // A token leaves the activations of its 8 experts of 768, not of one intermediate_size MLP.
  EXPECT_EQ(train::mlp_activation_width(in.config), 8 * 768);
  in.config.moe.sparse_layers[0] = false;  // one dense layer of 48: the average
  EXPECT_EQ(train::mlp_activation_width(in.config), (47 * 8 * 768 + 6144 + 47) / 48);
}

// Gemma 2's soft-capped attention has no context parallelism: no layout offers it.
TEST(LayoutPlan, NoContextParallelismForSoftCappedAttention) {
  train::LayoutPlanInputs in = cluster(80);
  in.config = thirty_b_a3b();
  in.config.moe = {};
  in.gpus = 8;
  in.row_tokens = 4096;
  auto has_cp = [](const std::vector<train::LayoutOption>& options) {
    return std::any_of(options.begin(), options.end(), [](const train::LayoutOption& o) { return o.cp > 1; });
  };
  EXPECT_TRUE(has_cp(train::layout_options(in)));
  in.config.attn_logit_softcapping = 50;
  EXPECT_FALSE(has_cp(train::layout_options(in)));
}

TEST(LayoutPlan, SplitsShrinkWhatTheySplit) {
  const auto options = train::layout_options(cluster(80));
  const auto& base = find(options, 2, 1, 1);
  EXPECT_LT(find(options, 4, 1, 1).per_rank.weights, base.per_rank.weights * 0.51);  // TP halves the weights
  EXPECT_LT(find(options, 2, 1, 2).per_rank.weights, base.per_rank.weights * 0.55);  // PP about halves them
  // CP halves each rank's tokens (and leaves the weights whole).
  EXPECT_NEAR(find(options, 2, 2, 1).per_rank.activations, base.per_rank.activations / 2, base.per_rank.activations * 0.01);
  EXPECT_EQ(find(options, 2, 2, 1).per_rank.weights, base.per_rank.weights);
}

TEST(LayoutPlan, OnlyTensorParallelSizesTheHeadsAllow) {
  auto in = cluster(80);
  in.config.num_attention_heads = 12;  // 3 and 6 would divide, but not the 8 GPUs per node
  in.config.num_key_value_heads = 4;
  for (const auto& o : train::layout_options(in)) {
    EXPECT_EQ(in.config.num_attention_heads % o.tp, 0);
    EXPECT_EQ(8 % o.tp, 0);
  }
}

TEST(LayoutPlan, SmallModelTrainsDataParallelAndTooLittleMemoryFitsNothing) {
  auto in = cluster(80);
  in.config.hidden_size = 512, in.config.intermediate_size = 1536, in.config.num_hidden_layers = 4;
  in.config.num_attention_heads = 8, in.config.num_key_value_heads = 8, in.config.head_dim = 64, in.config.vocab_size = 32000;
  in.row_tokens = 1024;
  const auto best = train::recommended_layout(train::layout_options(in));
  ASSERT_TRUE(best.has_value());
  EXPECT_EQ(best->tp * best->cp * best->pp, 1);
  EXPECT_EQ(best->dp, 32);
  const auto tiny = cluster(0.5);
  const auto none = train::layout_options(tiny);
  EXPECT_FALSE(train::recommended_layout(none).has_value());
  EXPECT_NE(train::describe_layout_plan(tiny, none).find("nothing fits"), std::string::npos);
}

}  // namespace
