// Datasets built into the binary, so demos and tests run offline:
//   swift/self-cognition  "who are you?" questions answered with --model_name / --model_author (zh and en), as
//                         ms-swift's dataset of that name is used
//   swift/arithmetic      short sums and differences with checkable answers: a task a tiny model can learn
//   swift/self-cognition-preference  swift/self-cognition as preference pairs (swift rlhf): the answer with the
//                         given identity chosen, the same answer claiming to be ChatGPT by OpenAI rejected
//   swift/arithmetic-preference  single-digit sums and differences as preference pairs (swift rlhf): the right
//                         answer chosen, a near miss rejected (sft on it trains on the right answers)
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace swift::data {

struct BuiltinOptions {
  // --model_name / --model_author: one value for both languages, or two (Chinese first, then English, as ms-swift).
  std::vector<std::string> model_name;
  std::vector<std::string> model_author;
  uint64_t seed = 42;
};

// True for the names above.
bool is_builtin_dataset(const std::string& name);
// The rows of a built-in dataset (normalised messages). UsageError when self-cognition lacks --model_name or
// --model_author.
std::vector<nlohmann::json> builtin_dataset(const std::string& name, const BuiltinOptions& options);
// "swift/self-cognition, swift/arithmetic".
std::string builtin_dataset_names();

}  // namespace swift::data
