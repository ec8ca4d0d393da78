// Continuous batching: sequences decoded together (and joining mid-flight) equal the same sequences generated
// alone by model::Generator; cancellation, the queue bound and the ragged batch cache.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <map>

#include "swift/model/generator.h"
#include "swift/serve/batch_cache.h"
#include "swift/serve/scheduler.h"
#include "test_util.h"

using namespace swift;
using namespace std::chrono_literals;

namespace {

struct Outcome {
  std::vector<int64_t> tokens;  // without a stop token
  std::string finish_reason;
};

// Drains a stream until its `n` sequences finished; on_event sees every event first.
std::vector<Outcome> collect(serve::RequestStream& stream, size_t n,
                             const std::function<void(const serve::SequenceEvent&)>& on_event = {}) {
  std::vector<Outcome> out(n);
  size_t finished = 0;
  while (finished < n) {
    auto e = stream.next(5000ms);
    if (!e) {
      ADD_FAILURE() << "no event within 5 s";
      break;
    }
    if (on_event) on_event(*e);
    if (e->kind == serve::SequenceEvent::Kind::kToken && !e->is_stop) out[e->index].tokens.push_back(e->token);
    if (e->kind == serve::SequenceEvent::Kind::kFinished) {
      out[e->index].finish_reason = e->finish_reason;
      ++finished;
    }
  }
  return out;
}

serve::SequenceSpec spec(std::vector<int64_t> prompt, int64_t max_new_tokens) {
  serve::SequenceSpec s;
  s.prompt = std::move(prompt);
  s.params.max_new_tokens = max_new_tokens;
  return s;
}

}  // namespace

TEST(BatchCache, RelayoutKeepsEachRowsTokensRightAligned) {
  model::KVCache proto;
  proto.keys = {at::zeros({1, 2, 1, 4})};
  proto.values = {at::zeros({1, 2, 1, 4})};
  serve::BatchCache cache(proto, /*headroom=*/2);
  auto one_row = [](int64_t len, float base) {
    model::KVCache c;
    c.keys = {at::arange(len * 8, at::kFloat).view({1, 2, len, 4}) + base};
    c.values = {-c.keys[0]};
    c.length = len;
    return c;
  };
  auto a = one_row(3, 100), b = one_row(5, 200);
  cache.relayout({}, {&a, &b});
  ASSERT_EQ(cache.rows(), 2);
  EXPECT_EQ(cache.kv().length, 5);
  EXPECT_EQ(cache.kv().capacity(), 7);
  EXPECT_TRUE(cache.kv().keys[0][0].narrow(1, 2, 3).equal(a.keys[0][0]));
  EXPECT_TRUE(cache.kv().values[0][1].narrow(1, 0, 5).equal(b.values[0][0]));
  EXPECT_TRUE(cache.step_mask().equal(at::tensor({0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, at::kLong).view({2, 6})));
  EXPECT_TRUE(cache.step_positions().view({-1}).equal(at::tensor({3, 5}, at::kLong)));
  // Row b leaves: the columns only b needed go; row a's three tokens stay right-aligned.
  cache.relayout({0}, {});
  EXPECT_EQ(cache.kv().length, 3);
  EXPECT_TRUE(cache.kv().keys[0][0].narrow(1, 0, 3).equal(a.keys[0][0]));
}

// Also DeepSeek-V3, whose cache holds latents and RoPE keys of two different widths.
TEST(Scheduler, ConcurrentGreedySequencesEqualEachAlone) {
  for (const char* family : {"qwen3", "deepseek_v3"}) {
    SCOPED_TRACE(family);
    auto m = test::random_model(test::tiny_config(family), 31);
    model::Generator gen(m);
    std::vector<std::vector<int64_t>> prompts = {{1, 2, 3, 4, 5, 6, 7, 8, 9}, {10, 11}, {12, 13, 14, 15}, {99}, {5, 6, 7, 8, 9, 10, 11}};
    std::vector<std::vector<int64_t>> expected;
    model::SamplingParams p;
    for (size_t i = 0; i < prompts.size(); ++i) {
      p.max_new_tokens = 6 + static_cast<int64_t>(i);
      expected.push_back(gen.generate({prompts[i]}, p)[0].tokens);
    }
    serve::SchedulerOptions options;
    options.max_batch_size = 3;  // the rest wait and join as rows finish
    options.headroom = 2;        // forces re-layouts while decoding
    serve::Scheduler scheduler(m, options);
    std::vector<serve::SequenceSpec> specs;
    for (size_t i = 0; i < prompts.size(); ++i) specs.push_back(spec(prompts[i], 6 + static_cast<int64_t>(i)));
    auto stream = scheduler.submit(std::move(specs));
    ASSERT_TRUE(stream);
    auto got = collect(*stream, prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      EXPECT_EQ(got[i].tokens, expected[i]) << i;
      EXPECT_EQ(got[i].finish_reason, "length");
    }
    EXPECT_EQ(scheduler.stats().largest_batch, 3);
  }
}

TEST(Scheduler, ALateRequestJoinsTheRunningBatch) {
  auto m = test::random_model(test::tiny_config("llama"), 32);
  model::Generator gen(m);
  model::SamplingParams p;
  p.max_new_tokens = 40;
  const std::vector<int64_t> long_prompt = {3, 1, 4, 1, 5, 9, 2, 6}, late_prompt = {2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5};
  const auto long_alone = gen.generate({long_prompt}, p)[0].tokens;
  p.max_new_tokens = 5;
  const auto late_alone = gen.generate({late_prompt}, p)[0].tokens;

  serve::Scheduler scheduler(m, {});
  // The first sequence runs until it is cancelled, so the late one surely finds it running (a bounded first
  // sequence could finish before this thread reads its third token, however fast the machine).
  auto first = scheduler.submit({spec(long_prompt, 100000)});
  std::vector<Outcome> late;
  size_t long_seen = 0;
  auto got = collect(*first, 1, [&](const serve::SequenceEvent& e) {
    if (e.kind != serve::SequenceEvent::Kind::kToken || ++long_seen != 3) return;
    auto second = scheduler.submit({spec(late_prompt, 5)});
    late = collect(*second, 1);
    first->cancel();
  });
  ASSERT_EQ(late.size(), 1u);
  EXPECT_EQ(late[0].tokens, late_alone);
  // The first sequence's tokens, batched with the late one, equal it generated alone (as far as both go).
  const size_t common = std::min(got[0].tokens.size(), long_alone.size());
  EXPECT_GE(common, 8u);
  EXPECT_EQ(std::vector<int64_t>(got[0].tokens.begin(), got[0].tokens.begin() + static_cast<long>(common)),
            std::vector<int64_t>(long_alone.begin(), long_alone.begin() + static_cast<long>(common)));
  EXPECT_EQ(scheduler.stats().largest_batch, 2);  // joined, not queued behind the long one
}

TEST(Scheduler, CancelStopsASequenceAndTheQueueIsBounded) {
  auto m = test::random_model(test::tiny_config("qwen3"), 33);
  serve::SchedulerOptions options;
  options.max_batch_size = 1;
  options.max_waiting = 2;
  serve::Scheduler scheduler(m, options);
  EXPECT_FALSE(scheduler.submit({spec({1}, 2), spec({2}, 2), spec({3}, 2)}));  // 3 > max_waiting
  auto stream = scheduler.submit({spec({1, 2, 3}, 100000)});
  ASSERT_TRUE(stream);
  auto got = collect(*stream, 1, [&](const serve::SequenceEvent& e) {
    if (e.kind == serve::SequenceEvent::Kind::kToken) stream->cancel();
  });
  EXPECT_EQ(got[0].finish_reason, "abort");
  // The scheduler thread may decode a few more steps before it sees the cancel (how many depends on thread
  // timing), but the sequence must end long before its 100000-token budget.
  EXPECT_LT(got[0].tokens.size(), 1000u);
  // Ending one sequence early (a stop string matched upstream) reports "stop".
  auto s2 = scheduler.submit({spec({4, 5}, 100000)});
  auto got2 = collect(*s2, 1, [&](const serve::SequenceEvent& e) {
    if (e.kind == serve::SequenceEvent::Kind::kToken) s2->finish(0);
  });
  EXPECT_EQ(got2[0].finish_reason, "stop");
  scheduler.shutdown();
  EXPECT_FALSE(scheduler.submit({spec({1}, 1)}));
}

TEST(Scheduler, StopTokensLogprobsAndPromptLogprobs) {
  auto m = test::random_model(test::tiny_config("qwen3"), 34);
  model::Generator gen(m);
  model::SamplingParams p;
  p.max_new_tokens = 8;
  p.logprobs = true;
  p.top_logprobs = 2;
  const std::vector<int64_t> prompt = {9, 8, 7, 6};
  const auto alone = gen.generate({prompt}, p)[0];
  serve::Scheduler scheduler(m, {});
  auto s = spec(prompt, 8);
  s.params.logprobs = true;
  s.params.top_logprobs = 2;
  s.params.stop_token_ids = {alone.tokens.at(3)};  // stops at the 4th token
  s.prompt_logprobs = 1;
  std::vector<model::TokenLogprob> token_lps, prompt_lps;
  auto stream = scheduler.submit({s});
  auto got = collect(*stream, 1, [&](const serve::SequenceEvent& e) {
    if (e.logprob) token_lps.push_back(*e.logprob);
    if (e.kind == serve::SequenceEvent::Kind::kPromptLogprobs) prompt_lps = e.prompt_logprobs;
  });
  const auto first_stop = std::find(alone.tokens.begin(), alone.tokens.end(), alone.tokens[3]) - alone.tokens.begin();
  EXPECT_EQ(got[0].finish_reason, "stop");
  EXPECT_EQ(got[0].tokens, std::vector<int64_t>(alone.tokens.begin(), alone.tokens.begin() + first_stop));
  ASSERT_EQ(token_lps.size(), static_cast<size_t>(first_stop + 1));
  for (size_t i = 0; i < token_lps.size(); ++i) EXPECT_NEAR(token_lps[i].logprob, alone.logprobs[i].logprob, 1e-4);
  const auto scored = gen.score(prompt, 1);
  ASSERT_EQ(prompt_lps.size(), scored.size());
  for (size_t i = 0; i < scored.size(); ++i) EXPECT_NEAR(prompt_lps[i].logprob, scored[i].logprob, 1e-4);
}
