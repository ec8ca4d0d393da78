// Logit processing and token choice, matching transformers' processors (RepetitionPenaltyLogitsProcessor,
// TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper, MinPLogitsWarper).
#include "swift/model/sampling.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <limits>

namespace swift::model {

void apply_repetition_penalty(at::Tensor& logits, const std::vector<std::vector<int64_t>>& seen, double penalty) {
  if (penalty == 1.0) return;
  for (size_t b = 0; b < seen.size(); ++b) {
    if (seen[b].empty()) continue;
    auto ids = std::get<0>(at::_unique(at::tensor(seen[b], at::kLong), /*sorted=*/false)).to(logits.device());
    auto row = logits[static_cast<int64_t>(b)];
    auto score = row.index_select(0, ids);
    // Negative logits grow more negative, positive ones shrink: either way the token becomes less likely.
    score = at::where(score < 0, score * penalty, score / penalty);
    row.index_copy_(0, ids, score);
  }
}

at::Tensor filter_logits(const at::Tensor& logits_in, const SamplingParams& p) {
  if (p.greedy()) return logits_in;
  const double neg_inf = -std::numeric_limits<double>::infinity();
  auto logits = logits_in / p.temperature;
  const int64_t vocab = logits.size(-1);
  if (p.top_k > 0 && p.top_k < vocab) {
    auto kth = std::get<0>(logits.topk(p.top_k, -1)).narrow(-1, p.top_k - 1, 1);
    logits = logits.masked_fill(logits < kth, neg_inf);
  }
  if (p.top_p < 1.0) {
    auto [sorted, order] = logits.sort(-1, /*descending=*/false);
    auto cumulative = sorted.softmax(-1).cumsum(-1);
    auto remove_sorted = cumulative <= (1 - p.top_p);
    remove_sorted.narrow(-1, vocab - 1, 1).fill_(false);  // always keep the most likely token
    auto remove = remove_sorted.scatter(-1, order, remove_sorted);
    logits = logits.masked_fill(remove, neg_inf);
  }
  if (p.min_p > 0.0) {
    auto probs = logits.softmax(-1);
    auto threshold = std::get<0>(probs.max(-1, /*keepdim=*/true)) * p.min_p;
    logits = logits.masked_fill(probs < threshold, neg_inf);
  }
  return logits;
}

namespace {

// One token per row of probs [B, V] (CPU, float32, rows summing to 1), by inverting the row's cumulative
// distribution at a uniform draw u [B, 1] (double): the first token whose cumulative mass exceeds u x the row's
// total. V additions per row, where at::multinomial's exponential race takes V logarithms (most of a sampled
// decode step on the CPU at a 150k vocabulary).
at::Tensor invert_cdf(const at::Tensor& probs, const at::Tensor& u) {
  const at::Tensor cdf = probs.to(at::kDouble).cumsum(-1);
  const at::Tensor total = cdf.narrow(-1, cdf.size(-1) - 1, 1);
  // Overflowed or NaN logits give no distribution to draw from: an error (as at::multinomial's), never a token.
  TORCH_CHECK((total.isfinite() & (total > 0)).all().item<bool>(),
              "sampling: the probabilities are not finite (the logits overflowed or are NaN)");
  // The first token whose cumulative mass exceeds the target has mass of its own (u < 1 keeps the target below the
  // total, so the search never runs past the last token with mass).
  return at::searchsorted(cdf, u * total, /*out_int32=*/false, /*right=*/true).squeeze(-1);
}

}  // namespace

at::Tensor choose_tokens(const at::Tensor& filtered, const SamplingParams& p, at::Generator& generator) {
  if (p.greedy()) return filtered.argmax(-1);
  // Sampling draws on the CPU so a seed gives the same tokens whatever the device.
  const auto probs = filtered.to(at::kFloat).softmax(-1).to(at::kCPU);
  const at::Tensor u = at::rand({probs.size(0), 1}, generator, at::TensorOptions().dtype(at::kDouble));
  return invert_cdf(probs, u).to(filtered.device());
}

at::Tensor choose_tokens(const at::Tensor& filtered, const SamplingParams& p, const std::vector<at::Generator*>& row_generators) {
  if (p.greedy()) return filtered.argmax(-1);
  TORCH_CHECK(static_cast<int64_t>(row_generators.size()) == filtered.size(0), "choose_tokens: one generator per row");
  const auto probs = filtered.to(at::kFloat).softmax(-1).to(at::kCPU);
  std::vector<at::Tensor> draws;
  for (int64_t b = 0; b < probs.size(0); ++b)
    draws.push_back(at::rand({1}, *row_generators[static_cast<size_t>(b)], at::TensorOptions().dtype(at::kDouble)));
  return invert_cdf(probs, at::stack(draws)).to(filtered.device());
}

}  // namespace swift::model
