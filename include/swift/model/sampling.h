// Turning next-token logits into a choice: repetition penalty, temperature, top-k, top-p, min-p (applied in
// that order, as transformers' generate does), then greedy argmax or seeded multinomial sampling.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace swift::model {

struct SamplingParams {
  int64_t max_new_tokens = 512;
  double temperature = 0.0;        // < kGreedyTemperature (0 included): greedy. Default: greedy
  int64_t top_k = 0;               // 0: off
  double top_p = 1.0;              // 1: off
  double min_p = 0.0;              // 0: off
  double repetition_penalty = 1.0; // 1: off; > 1 discourages tokens already in the prompt or output
  uint64_t seed = 42;
  // One seed per prompt (Generator::generate): each row draws from its own generator, so its tokens do not depend
  // on the other rows of its batch (GRPO's completions, the same whatever ranks generate them). Empty: one
  // generator for the batch, seeded with `seed`.
  std::vector<uint64_t> row_seeds;
  std::vector<int64_t> stop_token_ids;               // eos ids: stop, token not part of the output
  std::vector<std::vector<int64_t>> stop_sequences;  // stop when the output ends with one; it is dropped
  bool logprobs = false;                             // log-probability of each chosen token
  int64_t top_logprobs = 0;                          // and this many alternatives per position

  // Below this temperature sampling is argmax in all but name, and dividing by it overflows the logits:
  // such temperatures are greedy (vLLM draws the line at the same 1e-5).
  static constexpr double kGreedyTemperature = 1e-5;
  bool greedy() const { return temperature < kGreedyTemperature; }
};

// Applies the repetition penalty in place: logits [B, V] float; seen[b] = token ids row b has seen.
void apply_repetition_penalty(at::Tensor& logits, const std::vector<std::vector<int64_t>>& seen, double penalty);

// Temperature, top-k, top-p and min-p filtering: logits [B, V] float -> filtered logits (-inf where removed).
at::Tensor filter_logits(const at::Tensor& logits, const SamplingParams& params);

// Picks one token per row: argmax when greedy, else a draw from softmax(filtered) with `generator` (CPU).
at::Tensor choose_tokens(const at::Tensor& filtered_logits, const SamplingParams& params, at::Generator& generator);
// The same with row b drawing from *row_generators[b].
at::Tensor choose_tokens(const at::Tensor& filtered_logits, const SamplingParams& params,
                         const std::vector<at::Generator*>& row_generators);

}  // namespace swift::model
