// The generation engine that infer, deploy and RL share: batched left-padded prompts, a preallocated KV
// cache, greedy or seeded sampling, stop conditions, per-token logprobs, and scoring of given sequences.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "swift/model/decoder.h"
#include "swift/model/sampling.h"

namespace swift::model {

struct TopLogprob {
  int64_t token;
  double logprob;
};

// One position: the token, its log-probability under the model (log_softmax of the raw logits, before any
// sampling filter, as OpenAI-compatible servers report), the top alternatives and the token's rank (1 = best).
struct TokenLogprob {
  int64_t token;
  double logprob;
  int64_t rank;
  std::vector<TopLogprob> top;
};

struct GenerationResult {
  std::vector<int64_t> tokens;        // generated ids, without the stop token / stop sequence
  std::string finish_reason;          // "stop" (eos or stop sequence) or "length"
  std::vector<TokenLogprob> logprobs; // one per generated token (incl. a stop token) when params.logprobs
  int64_t prompt_tokens = 0;
};

// Called as each token is chosen: (row, token). A stop token is reported too, with is_stop = true.
using TokenCallback = std::function<void(size_t row, int64_t token, bool is_stop)>;

class Generator {
 public:
  explicit Generator(CausalLM model) : model_(std::move(model)) {}

  // Generates for every prompt at once (left-padded into one batch). Rows that finish leave the batch.
  std::vector<GenerationResult> generate(const std::vector<std::vector<int64_t>>& prompts,
                                         const SamplingParams& params, const TokenCallback& on_token = {});

  // Scores a given sequence: for every token after the first, its logprob given the tokens before it, its
  // rank and the top_k alternatives. Size ids.size() - 1.
  std::vector<TokenLogprob> score(const std::vector<int64_t>& ids, int64_t top_k = 0);

  CausalLM& model() { return model_; }

 private:
  CausalLM model_;
};

// Logprob details for each row of log_probs [N, V] (fp32) and chosen tokens [N].
std::vector<TokenLogprob> describe_logprobs(const at::Tensor& log_probs, const at::Tensor& tokens, int64_t top_k);

}  // namespace swift::model
