// Completions sampled from the policy for the online methods (see rollout_generation.h).
#include "swift/rlhf/rollout_generation.h"

#include "swift/model/autocast.h"

namespace swift::rlhf {

std::vector<GeneratedCompletion> generate_completions(model::CausalLM& policy, const std::vector<std::vector<int64_t>>& prompts,
                                                      const model::SamplingParams& params,
                                                      std::optional<c10::ScalarType> autocast) {
  std::vector<int64_t> stop_token(prompts.size(), -1);
  const bool was_training = policy->is_training();
  policy->eval();
  model::Generator generator(policy);
  std::vector<model::GenerationResult> results;
  {
    model::AutocastScope scope(policy->device().type(), autocast);  // as the training pass computes
    results = generator.generate(prompts, params, [&](size_t row, int64_t token, bool is_stop) {
      if (is_stop) stop_token[row] = token;
    });
  }
  if (was_training) policy->train();
  std::vector<GeneratedCompletion> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    out[i].tokens = std::move(results[i].tokens);
    out[i].stopped = stop_token[i] >= 0;
    if (out[i].stopped) out[i].tokens.push_back(stop_token[i]);
  }
  return out;
}

uint64_t generation_seed(uint64_t seed, int64_t round, int64_t row) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(round + 1) + 0xbf58476d1ce4e5b9ULL * static_cast<uint64_t>(row + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace swift::rlhf
