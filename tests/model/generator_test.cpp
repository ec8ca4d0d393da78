// The generation engine: greedy decoding equals step-by-step argmax over full recomputation, batched rows
// equal rows alone, seeded sampling repeats, filters behave as transformers' warpers, stops work, and
// scores/logprobs agree with log_softmax of the full forward pass.
#include <gtest/gtest.h>

#include <cmath>

#include <ATen/ATen.h>
#include <torch/utils.h>

#include "swift/core/error.h"
#include "swift/model/generator.h"
#include "swift/model/sampling.h"
#include "test_util.h"

using namespace swift;

namespace {

// Reference greedy decoding: no cache, whole sequence recomputed each step.
std::vector<int64_t> naive_greedy(model::CausalLM& m, std::vector<int64_t> ids, int64_t steps) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> out;
  for (int64_t s = 0; s < steps; ++s) {
    model::ForwardArgs args;
    args.input_ids = at::tensor(ids, at::kLong).view({1, -1});
    auto next = m->forward(args)[0][-1].argmax().item<int64_t>();
    out.push_back(next);
    ids.push_back(next);
  }
  return out;
}

}  // namespace

TEST(Generator, GreedyEqualsNaiveDecodingForEveryFamily) {
  for (const char* family : {"llama", "qwen2", "qwen3", "mistral", "gemma", "gemma2", "gemma3_text",
                                      "qwen2_moe", "qwen3_moe", "mixtral", "deepseek_v2",
                                      "deepseek_v3"}) {
    SCOPED_TRACE(family);
    auto m = test::random_model(test::tiny_config(family), 21);
    model::Generator gen(m);
    model::SamplingParams p;
    p.max_new_tokens = 10;
    std::vector<int64_t> prompt = {5, 17, 99, 3, 42, 8, 1};
    auto r = gen.generate({prompt}, p);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0].tokens, naive_greedy(m, prompt, 10));
    EXPECT_EQ(r[0].finish_reason, "length");
    EXPECT_EQ(r[0].prompt_tokens, 7);
  }
}

TEST(Generator, BatchedRowsEqualRowsAlone) {
  auto m = test::random_model(test::tiny_config("qwen3"), 22);
  model::Generator gen(m);
  model::SamplingParams p;
  p.max_new_tokens = 8;
  std::vector<std::vector<int64_t>> prompts = {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {10, 11}, {12, 13, 14, 15}};
  auto batched = gen.generate(prompts, p);
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(batched[i].tokens, gen.generate({prompts[i]}, p)[0].tokens) << i;
}

TEST(Generator, StopTokensAndSequencesEndRowsEarly) {
  auto m = test::random_model(test::tiny_config("llama"), 23);
  model::Generator gen(m);
  model::SamplingParams p;
  p.max_new_tokens = 12;
  std::vector<int64_t> prompt = {4, 8, 15, 16, 23, 42};
  auto free_run = gen.generate({prompt}, p)[0].tokens;
  ASSERT_EQ(free_run.size(), 12u);

  p.stop_token_ids = {free_run[3]};
  auto stopped = gen.generate({prompt, {7, 7, 7}}, p);
  // Stops at the first occurrence of that token, which is excluded from the output.
  const auto first = std::find(free_run.begin(), free_run.end(), free_run[3]) - free_run.begin();
  EXPECT_EQ(stopped[0].tokens, std::vector<int64_t>(free_run.begin(), free_run.begin() + first));
  EXPECT_EQ(stopped[0].finish_reason, "stop");

  p.stop_token_ids.clear();
  p.stop_sequences = {{free_run[4], free_run[5]}};
  auto seq = gen.generate({prompt}, p)[0];
  EXPECT_EQ(seq.finish_reason, "stop");
  EXPECT_LE(seq.tokens.size(), 4u);
}

TEST(Generator, SeededSamplingRepeatsAndSeedsDiffer) {
  auto m = test::random_model(test::tiny_config("mistral"), 24);
  model::Generator gen(m);
  model::SamplingParams p;
  p.max_new_tokens = 16;
  p.temperature = 1.5;
  p.seed = 1;
  auto a = gen.generate({{1, 2, 3}}, p)[0].tokens;
  auto b = gen.generate({{1, 2, 3}}, p)[0].tokens;
  EXPECT_EQ(a, b);
  p.seed = 2;
  EXPECT_NE(a, gen.generate({{1, 2, 3}}, p)[0].tokens);
}

// With a seed per row each row draws alone: its tokens are the same in any batch and at any place in it (GRPO's
// completions, whatever ranks share a generation batch).
TEST(Generator, RowSeedsMakeARowsDrawsItsOwn) {
  auto m = test::random_model(test::tiny_config("mistral"), 24);
  model::Generator gen(m);
  model::SamplingParams p;
  p.max_new_tokens = 12;
  p.temperature = 1.5;
  p.row_seeds = {7, 8, 9};
  const auto together = gen.generate({{1, 2, 3}, {4, 5}, {1, 2, 3}}, p);
  EXPECT_NE(together[0].tokens, together[2].tokens) << "the same prompt, another seed";
  p.row_seeds = {9, 7};
  const auto reordered = gen.generate({{1, 2, 3}, {1, 2, 3}}, p);
  EXPECT_EQ(reordered[0].tokens, together[2].tokens);
  EXPECT_EQ(reordered[1].tokens, together[0].tokens);
  p.row_seeds = {8};
  EXPECT_EQ(gen.generate({{4, 5}}, p)[0].tokens, together[1].tokens);
  p.row_seeds = {1, 2};
  EXPECT_THROW(gen.generate({{1, 2, 3}}, p), UsageError) << "one seed per prompt";
}

namespace {
at::Tensor mask_of(std::vector<int64_t> bits) { return at::tensor(bits, at::kLong).to(at::kBool); }
}  // namespace

TEST(Sampling, FiltersMatchTransformersWarpers) {
  auto logits = at::log(at::tensor({0.5, 0.2, 0.15, 0.1, 0.05}, at::kFloat)).view({1, 5});
  model::SamplingParams p;
  p.temperature = 1.0;
  p.top_k = 2;
  auto kept = model::filter_logits(logits, p).isfinite();
  EXPECT_TRUE(at::equal(kept[0], mask_of({1, 1, 0, 0, 0})));
  p.top_k = 0;
  p.top_p = 0.8;  // keeps 0.5+0.2+0.15 (the smallest set reaching 0.8)
  kept = model::filter_logits(logits, p).isfinite();
  EXPECT_TRUE(at::equal(kept[0], mask_of({1, 1, 1, 0, 0})));
  p.top_p = 1.0;
  p.min_p = 0.3;  // threshold 0.15
  kept = model::filter_logits(logits, p).isfinite();
  EXPECT_TRUE(at::equal(kept[0], mask_of({1, 1, 1, 0, 0})));
  p.min_p = 0.0;
  p.temperature = 0.5;
  EXPECT_TRUE(at::allclose(model::filter_logits(logits, p), logits * 2));
}

TEST(Sampling, TinyTemperatureIsGreedyInsteadOfOverflowing) {
  auto logits = at::log(at::tensor({0.2, 0.5, 0.3}, at::kFloat)).view({1, 3});
  model::SamplingParams p;
  p.temperature = 1e-300;  // logits / 1e-300 would be +-inf and the softmax NaN
  EXPECT_TRUE(p.greedy());
  at::Generator gen = at::detail::createCPUGenerator(1);
  EXPECT_EQ(model::choose_tokens(model::filter_logits(logits, p), p, gen).item<int64_t>(), 1);
  p.temperature = 1e-4;
  EXPECT_FALSE(p.greedy());
}

// A sampled token follows softmax(filtered): over many draws each token's share is its probability, a token
// filtered out (probability 0) is never drawn, and per-row generators draw alike.
TEST(Sampling, DrawsFollowTheDistribution) {
  const at::Tensor probs = at::tensor({0.1f, 0.0f, 0.6f, 0.25f, 0.05f});
  const at::Tensor logits = probs.log().unsqueeze(0).repeat({4000, 1});  // log 0 = -inf: filtered out
  model::SamplingParams p;
  p.temperature = 1.0;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  std::vector<at::Generator> own;
  std::vector<at::Generator*> rows;
  for (int64_t i = 0; i < 4000; ++i) own.push_back(at::make_generator<at::CPUGeneratorImpl>(100 + i));
  for (auto& g : own) rows.push_back(&g);
  for (const at::Tensor& drawn : {model::choose_tokens(logits, p, gen), model::choose_tokens(logits, p, rows)}) {
    const at::Tensor counts = at::bincount(drawn, {}, 5).to(at::kDouble) / 4000.0;
    EXPECT_EQ(counts[1].item<double>(), 0.0) << "a token of probability 0 was drawn";
    EXPECT_LT((counts - probs.to(at::kDouble)).abs().max().item<double>(), 0.03) << counts;
  }
}

// Logits that overflowed (NaN) give no distribution: an error the server turns into that row's failure, never a
// token.
TEST(Sampling, NanLogitsAreAnErrorNotAToken) {
  model::SamplingParams p;
  p.temperature = 1.0;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(7);
  const at::Tensor logits = at::tensor({0.5f, std::nanf(""), 1.0f}).unsqueeze(0);
  EXPECT_THROW(model::choose_tokens(logits, p, gen), c10::Error);
}

TEST(Sampling, RepetitionPenaltyAsTransformers) {
  auto logits = at::tensor({2.0, -2.0, 1.0}, at::kFloat).view({1, 3});
  model::apply_repetition_penalty(logits, {{0, 1, 1}}, 2.0);
  EXPECT_TRUE(at::allclose(logits, at::tensor({1.0, -4.0, 1.0}, at::kFloat).view({1, 3})));
}

TEST(Generator, LogprobsAndScoresMatchFullForward) {
  torch::NoGradGuard no_grad;
  auto m = test::random_model(test::tiny_config("qwen2"), 25);
  model::Generator gen(m);
  model::SamplingParams p;
  p.max_new_tokens = 5;
  p.logprobs = true;
  p.top_logprobs = 3;
  std::vector<int64_t> prompt = {9, 8, 7, 6};
  auto r = gen.generate({prompt}, p)[0];
  ASSERT_EQ(r.logprobs.size(), 5u);

  std::vector<int64_t> full = prompt;
  full.insert(full.end(), r.tokens.begin(), r.tokens.end());
  model::ForwardArgs args;
  args.input_ids = at::tensor(full, at::kLong).view({1, -1});
  auto log_probs = m->forward(args)[0].log_softmax(-1);
  for (size_t i = 0; i < 5; ++i) {
    const int64_t pos = static_cast<int64_t>(prompt.size() + i) - 1;
    EXPECT_NEAR(r.logprobs[i].logprob, log_probs[pos][r.tokens[i]].item<double>(), 1e-4);
    EXPECT_EQ(r.logprobs[i].rank, 1);  // greedy picks the best
    ASSERT_EQ(r.logprobs[i].top.size(), 3u);
    EXPECT_EQ(r.logprobs[i].top[0].token, r.tokens[i]);
  }

  auto scores = gen.score(full, 2);
  ASSERT_EQ(scores.size(), full.size() - 1);
  for (size_t t = 0; t + 1 < full.size(); ++t) {
    EXPECT_EQ(scores[t].token, full[t + 1]);
    EXPECT_NEAR(scores[t].logprob, log_probs[static_cast<int64_t>(t)][full[t + 1]].item<double>(), 1e-5);
    const int64_t rank = (log_probs[static_cast<int64_t>(t)] > log_probs[static_cast<int64_t>(t)][full[t + 1]]).sum().item<int64_t>() + 1;
    EXPECT_EQ(scores[t].rank, rank);
  }
}
