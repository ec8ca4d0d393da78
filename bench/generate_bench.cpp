// Generation speed of the swift engine: prefill and decode tokens/s on a model folder, greedy, no early stop.
// Measured as bench/bench_generate.py measures transformers: prefill = a 1-token generate, decode = the
// extra time of an N-token generate over the 1-token one. Prints one JSON line.
//   swift_bench_generate --model DIR [--prompt_len 128] [--new_tokens 64] [--batch 1] [--threads N]
//                        [--dtype float32] [--repeat 3]
#include <ATen/ATen.h>
#include <torch/utils.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "swift/cli/flags.h"
#include "swift/core/device.h"
#include "swift/core/error.h"
#include "swift/model/checkpoint.h"
#include "swift/model/generator.h"

using namespace swift;

namespace {
double seconds_of(model::Generator& gen, const std::vector<std::vector<int64_t>>& prompts, int64_t new_tokens) {
  model::SamplingParams p;
  p.max_new_tokens = new_tokens;
  const auto start = std::chrono::steady_clock::now();
  auto results = gen.generate(prompts, p);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& r : results) SWIFT_ASSERT(static_cast<int64_t>(r.tokens.size()) == new_tokens, "early stop");
  return s;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    using cli::FlagType;
    const std::vector<cli::FlagSpec> specs = {
        {"model", FlagType::kString, "", "model folder"},
        {"prompt_len", FlagType::kInt, "128", "prompt tokens per row"},
        {"new_tokens", FlagType::kInt, "64", "generated tokens per row"},
        {"batch", FlagType::kInt, "1", "rows"},
        {"threads", FlagType::kInt, "0", "intra-op threads (0: OMP_NUM_THREADS, else cores)"},
        {"dtype", FlagType::kString, "float32", "weights' dtype"},
        {"repeat", FlagType::kInt, "3", "timed repetitions (the best is reported)"},
    };
    auto flags = cli::parse_flags("bench", specs, std::vector<std::string>(argv + 1, argv + argc));
    const int threads = configure_threads(static_cast<int>(flags.integer("threads")));
    model::LoadOptions load;
    load.dtype = parse_dtype(flags.str("dtype"));
    model::Generator gen(model::load_model(flags.str("model"), load));
    const int64_t P = flags.integer("prompt_len"), N = flags.integer("new_tokens"), B = flags.integer("batch");
    const int64_t vocab = gen.model()->config().vocab_size;
    std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(B));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < P; ++t) prompts[static_cast<size_t>(b)].push_back((b * 7919 + t * 104729) % vocab);
    seconds_of(gen, prompts, 2);  // warm-up
    double best_prefill = 1e30, best_total = 1e30;
    for (int64_t r = 0; r < flags.integer("repeat"); ++r) {
      best_prefill = std::min(best_prefill, seconds_of(gen, prompts, 1));
      best_total = std::min(best_total, seconds_of(gen, prompts, N));
    }
    const double decode = std::max(best_total - best_prefill, 1e-9);
    std::printf("{\"engine\": \"swift\", \"threads\": %d, \"prefill_tok_s\": %.1f, \"decode_tok_s\": %.2f, "
                "\"prefill_s\": %.4f, \"generate_s\": %.4f}\n",
                threads, static_cast<double>(B * P) / best_prefill, static_cast<double>(B * (N - 1)) / decode,
                best_prefill, best_total);
    return 0;
  } catch (const UserError& e) {
    std::fprintf(stderr, "error: %s\nhint: %s\n", e.what(), e.hint().c_str());
    return static_cast<int>(e.code());
  }
}
