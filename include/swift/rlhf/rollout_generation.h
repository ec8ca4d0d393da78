// Sampling completions for the online methods (GRPO's rollouts, GKD's student turns) from the policy's current
// weights, in the training process: one batched call with the KV cache, each row stopping at its own stop token and
// drawing from its own seed, under the training pass's autocast, in eval mode (the policy's mode restored after).
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <optional>
#include <vector>

#include "swift/model/decoder.h"
#include "swift/model/generator.h"

namespace swift::rlhf {

struct GeneratedCompletion {
  std::vector<int64_t> tokens;  // the completion, its stop token kept when it ended on one (it carries loss)
  bool stopped = false;         // it ended on a stop token (else it reached max_new_tokens)
  // The tokens that are its text (the stop token left out, as ms-swift decodes a completion).
  std::vector<int64_t> text_tokens() const {
    return stopped ? std::vector<int64_t>(tokens.begin(), tokens.end() - 1) : tokens;
  }
};

// prompts: token ids; params.row_seeds: one seed per prompt (generation_seed).
std::vector<GeneratedCompletion> generate_completions(model::CausalLM& policy, const std::vector<std::vector<int64_t>>& prompts,
                                                      const model::SamplingParams& params,
                                                      std::optional<c10::ScalarType> autocast);

// The sampling settings of a method's options (GrpoOptions, GkdOptions: ms-swift's rollout flags), each row
// stopping at one of `stop_token_ids`; the rows' seeds are the caller's.
template <class Options>
model::SamplingParams rollout_sampling(const Options& o, const std::vector<int64_t>& stop_token_ids) {
  model::SamplingParams params;
  params.max_new_tokens = o.max_completion_length;
  params.temperature = o.temperature;
  params.top_p = o.top_p;
  params.top_k = o.top_k;
  params.min_p = o.min_p;
  params.repetition_penalty = o.repetition_penalty;
  params.stop_token_ids = stop_token_ids;
  return params;
}

// A completion's seed: the run's, its generation batch's index and its place in the whole batch (every rank's rows),
// mixed (splitmix64's finaliser), so that a resumed run, or another layout of ranks, draws the same completions.
uint64_t generation_seed(uint64_t seed, int64_t round, int64_t row);

}  // namespace swift::rlhf
