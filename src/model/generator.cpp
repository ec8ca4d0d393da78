// Batched generation with a KV cache: prefill the left-padded prompts, then decode one token per step.
#include "swift/model/generator.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/utils.h>

#include <algorithm>

#include "swift/core/error.h"

namespace swift::model {

std::vector<TokenLogprob> describe_logprobs(const at::Tensor& log_probs_in, const at::Tensor& tokens_in, int64_t top_k) {
  // Gather, rank and top-k where the [N, V] log-probabilities live; only the [N] and [N, k] results are copied
  // to the host (a prompt's log-probabilities over a large vocabulary are gigabytes), and read through accessors
  // rather than one .item() per number.
  const auto log_probs = log_probs_in.to(at::kFloat);
  const auto tokens = tokens_in.to(log_probs.device(), at::kLong);
  const auto chosen_values = log_probs.gather(1, tokens.unsqueeze(1)).squeeze(1);
  const auto rank_values = (log_probs > chosen_values.unsqueeze(1)).sum(1) + 1;
  const int64_t n = log_probs.size(0), k = top_k > 0 ? std::min<int64_t>(top_k, log_probs.size(1)) : 0;
  at::Tensor top_values, top_ids;
  if (k > 0) std::tie(top_values, top_ids) = log_probs.topk(k, 1);
  const auto ids = tokens.cpu(), chosen = chosen_values.cpu(), ranks = rank_values.to(at::kCPU, at::kLong);
  const auto ids_a = ids.accessor<int64_t, 1>();
  const auto chosen_a = chosen.accessor<float, 1>();
  const auto ranks_a = ranks.accessor<int64_t, 1>();
  const at::Tensor top_v = k > 0 ? top_values.cpu().contiguous() : at::Tensor();
  const at::Tensor top_i = k > 0 ? top_ids.cpu().contiguous() : at::Tensor();
  const float* top_v_p = k > 0 ? top_v.data_ptr<float>() : nullptr;
  const int64_t* top_i_p = k > 0 ? top_i.data_ptr<int64_t>() : nullptr;
  std::vector<TokenLogprob> out;
  out.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    TokenLogprob t{ids_a[i], static_cast<double>(chosen_a[i]), ranks_a[i], {}};
    for (int64_t j = 0; j < k; ++j)
      t.top.push_back({top_i_p[i * k + j], static_cast<double>(top_v_p[i * k + j])});
    out.push_back(std::move(t));
  }
  return out;
}

namespace {
bool ends_with(const std::vector<int64_t>& seq, const std::vector<int64_t>& suffix) {
  return !suffix.empty() && seq.size() >= suffix.size() && std::equal(suffix.rbegin(), suffix.rend(), seq.rbegin());
}
}  // namespace

std::vector<GenerationResult> Generator::generate(const std::vector<std::vector<int64_t>>& prompts,
                                                  const SamplingParams& params, const TokenCallback& on_token) {
  torch::NoGradGuard no_grad;
  const size_t n = prompts.size();
  std::vector<GenerationResult> results(n);
  if (n == 0) return results;
  size_t longest = 0;
  for (size_t i = 0; i < n; ++i) {
    SWIFT_CHECK(!prompts[i].empty(), UsageError, "prompt " + std::to_string(i) + " is empty",
                "give at least one token (a template adds a BOS or role header)");
    longest = std::max(longest, prompts[i].size());
    results[i].prompt_tokens = static_cast<int64_t>(prompts[i].size());
  }
  const int64_t vocab = model_->config().vocab_size;
  for (const auto& p : prompts)
    for (auto id : p)
      SWIFT_CHECK(id >= 0 && id < vocab, UsageError, "token id " + std::to_string(id) + " is outside the vocabulary",
                  "the model has " + std::to_string(vocab) + " tokens; check the tokenizer matches the model");
  const int64_t P = static_cast<int64_t>(longest);
  const auto device = model_->device();

  // Left-pad: real tokens end at the same column, so every row's next token is the last column.
  auto ids = at::zeros({static_cast<int64_t>(n), P}, at::kLong);
  auto mask = at::zeros({static_cast<int64_t>(n), P + params.max_new_tokens}, at::kLong);
  for (size_t i = 0; i < n; ++i) {
    const int64_t len = static_cast<int64_t>(prompts[i].size());
    ids[static_cast<int64_t>(i)].narrow(0, P - len, len).copy_(at::tensor(prompts[i], at::kLong));
    mask[static_cast<int64_t>(i)].narrow(0, P - len, len).fill_(1);
  }
  ids = ids.to(device);
  mask = mask.to(device);
  const int64_t capacity = P + std::max<int64_t>(params.max_new_tokens, 1);
  const bool longrope = model_->config().rope.type == "longrope";
  KVCache cache = model_->make_cache(static_cast<int64_t>(n), capacity);
  // Every column so far (prompt, then the chosen tokens), to recompute the cache when longrope changes regime.
  auto all_ids = at::zeros({static_cast<int64_t>(n), capacity}, ids.options());
  all_ids.narrow(1, 0, P).copy_(ids);
  at::Generator rng = at::make_generator<at::CPUGeneratorImpl>(params.seed);
  std::vector<at::Generator> row_rngs;  // params.row_seeds: one per prompt
  SWIFT_CHECK(params.row_seeds.empty() || params.row_seeds.size() == n, UsageError,
              "generate: " + std::to_string(params.row_seeds.size()) + " row seeds for " + std::to_string(n) + " prompts",
              "give one seed per prompt, or none");
  for (const uint64_t seed : params.row_seeds) row_rngs.push_back(at::make_generator<at::CPUGeneratorImpl>(seed));

  std::vector<size_t> active(n);  // batch row -> result index
  for (size_t i = 0; i < n; ++i) active[i] = i;
  std::vector<std::vector<int64_t>> seen(prompts);  // for the repetition penalty
  at::Tensor step_ids = ids;
  int64_t length = P;

  for (int64_t step = 0; step < params.max_new_tokens && !active.empty(); ++step) {
    if (longrope && cache.length > 0) {
      // longrope (Phi-3) past original_max_position_embeddings: every key is rotated anew with the long factors,
      // as transformers' Phi-3 drops its cache there. (A batch rotates by its furthest row: once that row finishes,
      // the others go back to the short factors, as each would alone.)
      const int64_t furthest = mask.narrow(1, 0, length).sum(1).max().item<int64_t>();  // this step's seq_len
      if (model_->long_rope(furthest) != cache.long_rope) {
        cache.length = 0;  // refilled in place from every column so far
        step_ids = all_ids.narrow(1, 0, length);
      }
    }
    ForwardArgs args;
    args.input_ids = step_ids;
    args.attention_mask = mask.narrow(1, 0, length);
    args.cache = &cache;
    auto hidden = model_->forward_hidden(args);
    auto logits = model_->logits(hidden.select(1, hidden.size(1) - 1)).to(at::kFloat);  // [b, V]

    std::vector<std::vector<int64_t>> seen_active;
    if (params.repetition_penalty != 1.0)
      for (size_t r : active) seen_active.push_back(seen[r]);
    // The raw logits stay untouched for logprobs; copy only when the penalty will edit them in place.
    auto processed = params.repetition_penalty != 1.0 ? logits.clone() : logits;
    apply_repetition_penalty(processed, seen_active, params.repetition_penalty);
    at::Tensor chosen;
    if (row_rngs.empty()) {
      chosen = choose_tokens(filter_logits(processed, params), params, rng);
    } else {
      std::vector<at::Generator*> generators;
      for (size_t r : active) generators.push_back(&row_rngs[r]);
      chosen = choose_tokens(filter_logits(processed, params), params, generators);
    }
    std::vector<TokenLogprob> details;
    if (params.logprobs) details = describe_logprobs(logits.log_softmax(-1), chosen, params.top_logprobs);
    auto chosen_cpu = chosen.to(at::kCPU);

    std::vector<int64_t> keep;
    for (size_t b = 0; b < active.size(); ++b) {
      const size_t r = active[b];
      const int64_t token = chosen_cpu[static_cast<int64_t>(b)].item<int64_t>();
      auto& res = results[r];
      if (params.logprobs) res.logprobs.push_back(details[b]);
      const bool is_stop = std::find(params.stop_token_ids.begin(), params.stop_token_ids.end(), token) !=
                           params.stop_token_ids.end();
      if (on_token) on_token(r, token, is_stop);
      if (is_stop) {
        res.finish_reason = "stop";
        continue;
      }
      res.tokens.push_back(token);
      seen[r].push_back(token);
      bool stopped = false;
      for (const auto& s : params.stop_sequences) {
        if (ends_with(res.tokens, s)) {
          res.tokens.resize(res.tokens.size() - s.size());
          res.finish_reason = "stop";
          stopped = true;
          break;
        }
      }
      if (!stopped) keep.push_back(static_cast<int64_t>(b));
    }
    ++length;
    if (keep.size() != active.size()) {  // drop finished rows from the batch and the cache
      std::vector<size_t> still;
      for (auto b : keep) still.push_back(active[static_cast<size_t>(b)]);
      active = std::move(still);
      if (active.empty()) break;
      auto rows = at::tensor(keep, at::kLong).to(device);
      cache.select_rows(rows);
      mask = mask.index_select(0, rows);
      all_ids = all_ids.index_select(0, rows);
      chosen = chosen.index_select(0, rows);
    }
    mask.select(1, length - 1).fill_(1);
    all_ids.select(1, length - 1).copy_(chosen);
    step_ids = chosen.view({-1, 1});
  }
  for (auto& r : results)
    if (r.finish_reason.empty()) r.finish_reason = "length";
  return results;
}

std::vector<TokenLogprob> Generator::score(const std::vector<int64_t>& ids, int64_t top_k) {
  torch::NoGradGuard no_grad;
  if (ids.size() < 2) return {};
  auto input = at::tensor(ids, at::kLong).view({1, -1}).to(model_->device());
  ForwardArgs args;
  args.input_ids = input;
  auto log_probs = model_->forward(args).squeeze(0).to(at::kFloat).log_softmax(-1);  // [T, V]
  const int64_t T = input.size(1);
  return describe_logprobs(log_probs.narrow(0, 0, T - 1), input.squeeze(0).narrow(0, 1, T - 1), top_k);
}

}  // namespace swift::model
