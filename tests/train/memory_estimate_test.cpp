// The per-rank memory estimate: exact byte counts for weights, gradients and AdamW state under each ZeRO stage,
// activations that shrink with gradient checkpointing, and advice only when the total does not fit.
#include "swift/train/memory_estimate.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace swift::train {
namespace {

MemoryInputs seven_b_full(int world, int zero_stage, bool checkpointing) {
  MemoryInputs in;
  in.total_params = in.trainable_params = 7'000'000'000;
  in.weight_bytes = in.trainable_bytes = 4 * in.total_params;  // fp32 master weights
  in.hidden_size = 4096;
  in.intermediate_size = 11008;
  in.num_layers = 32;
  in.vocab_size = 32000;
  in.activation_element_bytes = 2;
  in.tokens_per_micro_batch = 2048;
  in.world_size = world;
  in.zero_stage = zero_stage;
  in.gradient_checkpointing = checkpointing;
  return in;
}

TEST(MemoryEstimate, ZeroStagesDivideTheOptimizerState) {
  const auto ddp = estimate_memory(seven_b_full(8, 0, true));
  const auto z1 = estimate_memory(seven_b_full(8, 1, true));
  const auto z2 = estimate_memory(seven_b_full(8, 2, true));
  EXPECT_DOUBLE_EQ(ddp.weights, 28e9);
  EXPECT_DOUBLE_EQ(ddp.gradients, 28e9);
  EXPECT_DOUBLE_EQ(ddp.optimizer, 56e9);  // two fp32 moments
  EXPECT_DOUBLE_EQ(z1.optimizer, 7e9);
  EXPECT_DOUBLE_EQ(z1.gradients, 28e9);
  // ZeRO-2 reduces each bucket to its owner during the backward: its own eighth plus two 25 MiB buckets in flight.
  EXPECT_DOUBLE_EQ(z2.gradients, 3.5e9 + 2.0 * (25 << 20));
  EXPECT_DOUBLE_EQ(z2.optimizer, 7e9);
  EXPECT_DOUBLE_EQ(z2.weights, ddp.weights);  // parameters stay whole below ZeRO-3
  EXPECT_DOUBLE_EQ(estimate_memory(seven_b_full(8, 3, true)).weights, 3.5e9);
}

// ZeRO-3 holds its share at rest plus what it gathers whole: the outer parameters for a micro-batch and a layer
// and the prefetched next one. offload_param keeps the share (and offload_optimizer the AdamW state) off the GPU,
// and a GPU run of ZeRO-3 that does not fit is told so, with the saving.
TEST(MemoryEstimate, ZeroThreeCountsWhatItGathersAndOffloadKeepsTheRestOffTheGpu) {
  auto in = seven_b_full(8, 3, true);
  in.outer_weight_bytes = 1'000'000'000;
  in.layer_weight_bytes = 800'000'000;
  EXPECT_DOUBLE_EQ(estimate_memory(in).weights, 3.5e9 + 1e9 + 1.6e9);
  auto offloaded = in;
  offloaded.params_offloaded = offloaded.optimizer_offloaded = true;
  EXPECT_DOUBLE_EQ(estimate_memory(offloaded).weights, 1e9 + 1.6e9);
  EXPECT_DOUBLE_EQ(estimate_memory(offloaded).optimizer, 0);
  in.gpu = true;
  const auto advice = memory_advice(in, estimate_memory(in), 10.0 * (1ll << 30), false);
  EXPECT_TRUE(std::any_of(advice.begin(), advice.end(), [](const std::string& a) {
    return a.find("--deepspeed zero3_offload: the parameters and AdamW state at rest in CPU RAM (saves 9.8 GiB)") !=
           std::string::npos;
  })) << advice.front();
  offloaded.gpu = true;
  const auto none = memory_advice(offloaded, estimate_memory(offloaded), 1.0 * (1ll << 30), false);
  EXPECT_TRUE(std::none_of(none.begin(), none.end(), [](const std::string& a) { return a.find("zero3_offload") != std::string::npos; }));
}

TEST(MemoryEstimate, CheckpointingKeepsLayerInputsOnly) {
  const auto with = estimate_memory(seven_b_full(1, 0, true));
  const auto without = estimate_memory(seven_b_full(1, 0, false));
  EXPECT_LT(with.activations * 5, without.activations);
  EXPECT_DOUBLE_EQ(with.activations_other_mode, without.activations);
  EXPECT_DOUBLE_EQ(without.activations_other_mode, with.activations);
  // 32 layers x 2048 tokens x bf16 x (10 h + 4 i) plus fp32 logits three times.
  EXPECT_DOUBLE_EQ(without.activations, 32.0 * 2048 * 2 * (10.0 * 4096 + 4.0 * 11008) + 3.0 * 4 * 2048 * 32000);
}

// Tensor parallelism splits the attention/MLP activations (6 h + 4 i per token) and the logits over TP; the norm
// region (4 h: the norms' outputs and the residual stream) only under sequence parallelism, which also cuts the
// layer inputs that gradient checkpointing keeps.
TEST(MemoryEstimate, TensorParallelSplitsItsRegionAndSequenceParallelTheNorms) {
  auto tp = seven_b_full(8, 0, false);
  tp.tensor_split = 4;
  const double per_token_tp = 2 * (4.0 * 4096 + (6.0 * 4096 + 4.0 * 11008) / 4);
  EXPECT_DOUBLE_EQ(estimate_memory(tp).activations, 32.0 * 2048 * per_token_tp + 3.0 * 4 * 2048 * 32000 / 4);
  auto sp = tp;
  sp.sequence_parallel = true;
  const double per_token_sp = 2 * (4.0 * 4096 / 4 + (6.0 * 4096 + 4.0 * 11008) / 4);
  EXPECT_DOUBLE_EQ(estimate_memory(sp).activations, 32.0 * 2048 * per_token_sp + 3.0 * 4 * 2048 * 32000 / 4);
  sp.gradient_checkpointing = tp.gradient_checkpointing = true;
  const double inputs = 32.0 * 2048 * 2 * 4096;
  EXPECT_DOUBLE_EQ(estimate_memory(tp).activations - estimate_memory(sp).activations,
                   inputs * 3 / 4 + 2048 * 2 * 4.0 * 4096 * 3 / 4);
}

// Attention outside a fused kernel (Gemma 2's soft-capping) keeps each row's T x T scores: per layer, rows x heads x
// T^2 x (2 x 2 bytes of bf16 scores and probabilities + 4 of the fp32 softmax).
TEST(MemoryEstimate, MaterialisedAttentionScoresGrowWithTheSquareOfTheRow) {
  MemoryInputs in = seven_b_full(1, 0, /*checkpointing=*/true);
  const double fused = estimate_memory(in).activations;
  in.materialised_score_heads = 32;
  in.rows_per_micro_batch = 1;
  in.row_tokens = 2048;
  EXPECT_DOUBLE_EQ(estimate_memory(in).activations - fused, 32.0 * 2048 * 2048 * 8);
}

TEST(MemoryEstimate, AdviceOnlyWhenItDoesNotFit) {
  const auto in = seven_b_full(8, 0, false);
  const auto e = estimate_memory(in);
  EXPECT_TRUE(memory_advice(in, e, 1e12, false).empty());
  EXPECT_TRUE(memory_advice(in, e, 0, false).empty());  // unknown device: nothing to say
  const auto advice = memory_advice(in, e, 80.0 * (1ll << 30), false);
  ASSERT_GE(advice.size(), 4u);
  EXPECT_NE(advice[0].find("--gradient_checkpointing true"), std::string::npos);
  // 7B over 8 ranks: zero2 saves 7/8 of the AdamW state (49 GB) and of the gradients (24.5 GB less two buckets);
  // zero3 also 7/8 of the weights.
  EXPECT_NE(advice[1].find("--deepspeed zero2: the AdamW state and the gradients split over the 8 ranks (saves 68.4 GiB)"),
            std::string::npos) << advice[1];
  EXPECT_NE(advice[2].find("--deepspeed zero3: the weights split too over the 8 ranks (saves 91.2 GiB)"),
            std::string::npos) << advice[2];
  EXPECT_NE(advice[3].find("--train_type lora"), std::string::npos);
  // LoRA over a bf16 base whose decoder holds 6.5B parameters: QLoRA would keep them in ~4.13 bits.
  auto lora_in = seven_b_full(1, 0, true);
  lora_in.quantizable_params = 6'500'000'000;
  lora_in.quantizable_bytes = 13'000'000'000;
  const auto lora_advice = memory_advice(lora_in, estimate_memory(lora_in), 1e9, /*lora=*/true);
  ASSERT_FALSE(lora_advice.empty());
  EXPECT_TRUE(std::any_of(lora_advice.begin(), lora_advice.end(), [](const std::string& a) {
    return a.find("--train_type qlora: the frozen decoder weights in 4 bits (saves about 9.0 GiB)") != std::string::npos;
  })) << lora_advice.front();
  const std::string text = describe_estimate(in, e, 80.0 * (1ll << 30), "GPU memory", false);
  EXPECT_NE(text.find("of 80.0 GiB GPU memory"), std::string::npos) << text;
  EXPECT_NE(text.find("will likely not fit"), std::string::npos) << text;
  EXPECT_EQ(format_bytes(1.5 * (1 << 30)), "1.5 GiB");
  EXPECT_EQ(format_bytes(12.0 * (1 << 20)), "12.0 MiB");
}

}  // namespace
}  // namespace swift::train
