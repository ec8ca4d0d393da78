// The reward functions built into ms-swift 4.6 (swift/rewards/orm.py) that --reward_funcs names: accuracy
// (MathAccuracy), format (Format), cosine (CosineReward), repetition (RepetitionPenalty) and soft_overlong
// (SoftOverlong), each scoring one decoded completion with its dataset row. docs/grpo.md says where accuracy's
// answer checking differs from math_verify's.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace swift::rlhf {

// ms-swift's settings of the built-ins (its flag names and defaults).
struct RewardSettings {
  double cosine_min_len_value_wrong = -0.5, cosine_max_len_value_wrong = 0.0;
  double cosine_min_len_value_correct = 1.0, cosine_max_len_value_correct = 0.5;
  int64_t cosine_max_len = 512;  // default: --max_completion_length
  int64_t repetition_n_grams = 3;
  double repetition_max_penalty = -1.0;
  int64_t soft_max_length = 512;  // default: --max_completion_length
  std::optional<int64_t> soft_cache_length;  // required by soft_overlong, below soft_max_length
  double reward_timeout = 300;  // seconds an external command has to answer a generation batch
};

// One completion to score: its decoded text (without the end-of-turn token), its token count and the dataset row it
// answers (its columns beyond the conversation: "solution", ...).
struct ScoredCompletion {
  std::string text;
  int64_t tokens = 0;
  const nlohmann::json* row = nullptr;
};

class RewardFunction {
 public:
  virtual ~RewardFunction() = default;
  // The name ms-swift logs it under (rewards/<name>/mean): its class name.
  virtual std::string name() const = 0;
  // One reward per completion; nullopt where the function has nothing to say about a row (counted as 0 in the
  // weighted sum, left out of its metrics). DataError naming the column when a row lacks one it needs.
  virtual std::vector<std::optional<double>> score(const std::vector<ScoredCompletion>& batch) const = 0;
};

// The built-in named `name` (accuracy, format, cosine, repetition, soft_overlong); UsageError naming --reward_funcs
// and the choices otherwise, or naming the setting that is missing or out of range.
std::unique_ptr<RewardFunction> builtin_reward(const std::string& name, const RewardSettings& settings);
// `external:COMMAND`: a reward function outside swift. COMMAND (run by /bin/sh, once, kept for the run) reads one
// JSON object per completion on stdin, a line each: the row's columns besides its conversation ("solution", ...),
// "completion" and "completion_tokens"; and writes one line per completion on stdout: its reward, or null. A batch
// the command does not answer within `timeout_s` (or answers with something else, or exits on) gets no rewards
// from it, with a warning, and the command is started again; the third such batch in a row stops the run
// (DataError). Named in the metrics by its program's file name (python3 check.py: check).
std::unique_ptr<RewardFunction> external_reward(const std::string& command, double timeout_s);
// `http://...` or `https://...`: a reward function behind an HTTP endpoint. Each generation batch is one POST of
// the same JSON lines (Content-Type application/x-ndjson); the response (2xx) is one reward or null per line, or a
// JSON array of them, in order. Failures (no answer within `timeout_s`, an error status, another count of answers)
// follow external_reward's policy. Named by its path's last part (http://host:8000/score: score).
std::unique_ptr<RewardFunction> http_reward(const std::string& url, double timeout_s);
// A built-in, `external:COMMAND` or an http(s):// endpoint.
std::unique_ptr<RewardFunction> reward_function(const std::string& name, const RewardSettings& settings);

// The functions themselves, for one completion.
// 1.0 when the text is <think>...</think>, whitespace, <answer>...</answer> and nothing after it, else 0.0.
double format_reward(const std::string& text);
// (1 - distinct word n-grams / n-grams) x max_penalty over the lowercased words; 0.0 below n words.
double repetition_reward(const std::string& text, int64_t n_grams, double max_penalty);
// The cosine schedule over the completion's length: from the short value at 0 tokens to the long one at max_len,
// with the correct or the wrong pair of values.
double cosine_reward(bool correct, int64_t tokens, const RewardSettings& settings);
// 0 up to soft_max_length - soft_cache_length tokens, then falling linearly to -1 at soft_max_length (DAPO).
double soft_overlong_reward(int64_t tokens, int64_t soft_max_length, int64_t soft_cache_length);
// 1.0 when the completion's answer (inside <answer>...</answer> when there is one, else a \boxed{} or "final answer
// is $...$") equals the solution's (its first \boxed{}, $...$, or the number it ends with), else 0.0; 0.0 when the
// solution holds no answer.
double accuracy_reward(const std::string& completion, const std::string& solution);

}  // namespace swift::rlhf
